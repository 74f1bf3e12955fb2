#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The desktop app's pipeline (issue 4), side by side with a plain file follower, in one run.

    tests/bench/run gui                      the full set (about 10 minutes; the ssh runs need root)
    tests/bench/run gui --quick              a 5 s smoke run of each configuration
    tests/bench/gui/gui_pipeline.py --seconds 60 --rate 5000 --ranks 16 --total-lines 10000000

Builds rankscope_gui_bench and rankscope_bench_emitter in the build directory (--build-dir, else
$RANKSCOPE_BUILD_DIR, else build/), then runs rankscope_gui_bench once per configuration (each in a process of
its own, so memory figures do not carry over):

  replay       16 ranks x 5,000 lines/s for 60 s into the real MainWindow, the app's own ticks
  replay-100   the same with every tick at 100 ms (session, run view, charts): the baseline of the ticks
  replay-10    the same with 10 ms ticks
  memory       the same load until 10 M lines in all, then RSS
  ssh-full     the replay load submitted over SSH to the 2 namespace nodes: latency under load
  ssh-light    2 ranks x 200 lines/s over SSH (a trainer-like rate): latency of the pipeline itself
  ssh-light-100 the same with 100 ms ticks
  ssh-light-10 the same with 10 ms ticks

and prints a markdown table. Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def run_bench(binary, args):
    cmd = [str(binary)] + args
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def ratio(ours, base):
    return f"{ours / base:.1f}x" if base and base > 0 else ""


def met(value, goal):
    return "yes" if value < goal else "**no**"


def replay_rows(name, r, base=None):
    f, idle = r["frame_ms"], r["frame_ms_idle"]
    lc, lt = r["latency_ms_chart"], r["latency_ms_tail"]
    # the ssh follower reads the events files only
    tail_lost = (f"{r['tail_log_lost']:.0f}, " if r["tail_log_lost"] >= 0 else "") + f"{r['tail_steps_lost']:.0f}"
    label = f"{name} ({r['mode']}, {r['ranks']} x {r['rate_per_rank']} lines/s, {r['lines_total']:,.0f} lines, " \
            (f"tick {r['tick_ms']} ms)" if r["tick_ms"] > 0 else "the app's ticks: 50 ms view, 100 ms logs)")
    rows = [
        f"| {label}: GUI frame p50 / p99 (ms) | {f['p50']} / {f['p99']} | idle {idle['p50']} / {idle['p99']} | "
        f"{ratio(f['p99'], idle['p99'])} | p99 < 33 | {met(f['p99'], 33)} |",
        f"| {label}: frames over 33 ms | {f['over']} of {f['n']} | {idle['over']} of {idle['n']} | | | |",
        f"| {label}: lines lost (log lines, step events) | {r['log_lost']:.0f}, {r['steps_lost']:.0f} | "
        f"{tail_lost} | | 0 | {'yes' if r['log_lost'] == 0 and r['steps_lost'] == 0 else '**no**'} |",
        f"| {label}: event `time` to chart p50 / p99 (ms) | {lc['p50']} / {lc['p99']} | "
        f"{r['tail']}: {lt['p50']} / {lt['p99']} | {ratio(lc['p99'], lt['p99'])} | p99 < 100 | {met(lc['p99'], 100)} |",
        f"| {label}: RSS at the end, peak (MiB) | {r['rss_mib_end']}, {r['rss_mib_hwm']} | idle {r['rss_mib_idle']} | "
        f"| < 300 | {met(r['rss_mib_hwm'], 300)} |",
        f"| {label}: achieved lines/s (wall {r['wall_s']} s) | {r['lines_per_s']:.0f} | | | | |",
    ]
    if base:
        rows.append(f"| {label}: vs the 100 ms tick, frame p99 / chart latency p99 (ms) | {f['p99']} / {lc['p99']} | "
                    f"{base['frame_ms']['p99']} / {base['latency_ms_chart']['p99']} | "
                    f"{ratio(f['p99'], base['frame_ms']['p99'])} / "
                    f"{ratio(lc['p99'], base['latency_ms_chart']['p99'])} | | |")
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=Path, default=Path(os.environ.get("RANKSCOPE_BUILD_DIR", ROOT / "build")))
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--rate", type=int, default=5000, help="lines/s per rank")
    p.add_argument("--ranks", type=int, default=16)
    p.add_argument("--total-lines", type=int, default=10_000_000, help="the memory run, all ranks together")
    p.add_argument("--quick", action="store_true", help="5 s runs, 1 M lines for memory")
    p.add_argument("--only", default="replay,replay-100,replay-10,memory,ssh-full,ssh-light,ssh-light-100,ssh-light-10",
                   help="comma-separated subset")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--json", type=Path, help="also write the raw results here")
    args = p.parse_args()
    if args.quick:
        args.seconds, args.total_lines = 5, 1_000_000

    build = args.build_dir.resolve()
    if not args.no_build:
        subprocess.run(["cmake", "--build", str(build), "--target", "rankscope_gui_bench", "rankscope_bench_emitter"],
                       check=True, stdout=subprocess.DEVNULL)
    binary = build / "tests" / "bin" / "rankscope_gui_bench"
    load = ["--ranks", str(args.ranks), "--rate", str(args.rate)]
    configs = {
        "replay": load + ["--seconds", str(args.seconds)],
        "replay-100": load + ["--seconds", str(args.seconds), "--tick-ms", "100"],
        "replay-10": load + ["--seconds", str(args.seconds), "--tick-ms", "10"],
        "memory": load + ["--total-lines", str(args.total_lines)],
        "ssh-full": ["--latency"] + load + ["--seconds", str(min(args.seconds, 30))],
        "ssh-light": ["--latency", "--ranks", "2", "--rate", "200", "--seconds", str(min(args.seconds, 30))],
        "ssh-light-100": ["--latency", "--ranks", "2", "--rate", "200", "--seconds", str(min(args.seconds, 30)),
                          "--tick-ms", "100"],
        "ssh-light-10": ["--latency", "--ranks", "2", "--rate", "200", "--seconds", str(min(args.seconds, 30)),
                         "--tick-ms", "10"],
    }
    only = args.only.split(",")
    if os.geteuid() != 0 and any(name.startswith("ssh") for name in only):
        print("not root: skipping the ssh configurations (network namespaces need root)", file=sys.stderr)
        only = [name for name in only if not name.startswith("ssh")]
    started = time.time()
    results = {name: run_bench(binary, configs[name]) for name in only}
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))

    print(f"Desktop app pipeline vs a plain follower of the same files ({time.time() - started:.0f} s in all)\n")
    print("| benchmark | ours | baseline | ratio | goal | met? |\n|---|---|---|---|---|---|")
    for name, result in results.items():
        base = {"replay": results.get("replay-100"), "replay-10": results.get("replay-100"),
                "ssh-light": results.get("ssh-light-100"), "ssh-light-10": results.get("ssh-light-100")}.get(name)
        print("\n".join(replay_rows(name, result, base)))


if __name__ == "__main__":
    main()
