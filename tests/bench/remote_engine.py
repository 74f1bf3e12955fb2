#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The remote engine against OpenSSH, side by side in one run: launch latency, no-change redeploy, SFTP upload
throughput and telemetry latency.

    tests/bench/run remote --rounds 5
    tests/bench/remote_engine.py --rounds 5 --build-dir build-bench

Builds rankscope_remote_bench and rankscope-trainer in the build directory (--build-dir, else
$RANKSCOPE_BUILD_DIR, else build/), runs the program's subcommands with N rounds each (--rounds, else
$RANKSCOPE_BENCH_ROUNDS, else 5; each side alternates going first), and prints a markdown table of medians:
ours, the baseline, the ratio, the goal and whether it is met, then where the launch time goes. Needs root
(network namespaces, sshd). Standard library only.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_bench(binary, args, trainer):
    cmd = [str(binary)] + args + ["--trainer", str(trainer)]
    print("$ " + " ".join(cmd), file=sys.stderr, flush=True)
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


# Trainer start-up (last rank's process start to the start events) above this means c10d's TCPStore client
# found no server and waited before retrying: the two modes measured here are ~0.6 s and ~1.6 s.
RETRY_THRESHOLD_MS = 1100


def med(values):
    return f"{statistics.median(values):.0f} ms (n={len(values)})" if values else "none"


def fmt(value, digits=0):
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else str(value)


def row(name, ours, base, ratio, goal, met):
    met_text = "" if met is None else ("yes" if met else "**no**")
    return f"| {name} | {ours} | {base} | {ratio} | {goal} | {met_text} |"


def launch_rows(launch, label):
    ours = launch["engine_ms"]["median"]
    base = launch["ssh_loop_ms"]["median"]
    return [row(f"launch to every rank's start event, 2 nodes x 1 rank, {label} (ms)", fmt(ours), fmt(base),
                f"{ours / base:.2f}x", "< 2000", ours < 2000)]


def redeploy_rows(launch, label):
    included = launch["redeploy_connect_included_ms"]["median"]
    excluded = launch["redeploy_connect_excluded_ms"]["median"]
    check = launch["ssh_check_ms"]["median"]
    return [
        row(f"no-change redeploy, connect excluded, {label} (ms)", fmt(excluded, 1), "", "", "< 300", excluded < 300),
        row(f"no-change redeploy, connect + SFTP start included, {label} (ms)", fmt(included), fmt(check),
            f"{included / check:.2f}x", "< 300", included < 300),
    ]


def sftp_rows(sftp):
    rows = []
    for s in sftp["settings"]:
        ours = s["connect_upload_mib_s"]["median"]
        base = s["scp_mib_s"]["median"]
        name = (f"SFTP upload {sftp['size_mib']:.0f} MiB, ciphers {s['cipher_setting']} "
                f"(libssh: {s['libssh_negotiated']}; OpenSSH: {s['openssh_negotiated']}) (MiB/s)")
        rows.append(row(name, f"{ours:.0f} ({s['upload_mib_s']['median']:.0f} without connect)", f"{base:.0f}",
                        f"{ours / base:.2f}x", ">= 0.80x", ours / base >= 0.8))
    return rows


def telemetry_rows(tel):
    e, t = tel["engine_pooled"], tel["ssh_tail_pooled"]
    label = f"{tel['ranks']} ranks, {tel['steps']} steps, poll {tel['poll_interval_ms']} ms"
    return [
        row(f"telemetry latency p50, {label} (ms)", fmt(e["p50"], 1), fmt(t["p50"], 1),
            f"{e['p50'] / t['p50']:.2f}x" if t["p50"] else "", "", None),
        row(f"telemetry latency p99, {label} (ms)", fmt(e["p99"], 1), fmt(t["p99"], 1),
            f"{e['p99'] / t['p99']:.2f}x" if t["p99"] else "", "< 100", e["p99"] < 100),
    ]


def print_details(results):
    for key, launch in results.items():
        if not key.startswith("launch"):
            continue
        print(f"\nLaunch milestones, login shell {launch['login_shell']} (ms since the command, medians):\n")
        print("| engine | ms |  | ssh loop | ms |\n|---|---|---|---|---|")
        engine = sorted(launch["engine_milestones_ms"].items())
        ssh = sorted(launch["ssh_loop_milestones_ms"].items())
        for i in range(max(len(engine), len(ssh))):
            e = engine[i] if i < len(engine) else ("", "")
            s = ssh[i] if i < len(ssh) else ("", "")
            print(f"| {e[0][2:]} | {fmt(e[1])} |  | {s[0][2:]} | {fmt(s[1])} |")
        print(f"\n`ssh node true`: {launch['ssh_true_ms']['median']:.0f} ms. The trainer on this machine: "
              f"`--help` {launch['trainer_help_ms']['median']:.0f} ms, a world of 1 to its start event "
              f"{launch['trainer_solo_start_ms']['median']:.0f} ms, a world of 2 started together "
              f"{launch['trainer_pair_together_start_ms']['median']:.0f} ms, with rank 0 started 100 ms first "
              f"{launch['trainer_pair_rank0_first_start_ms']['median']:.0f} ms (medians).")
        # The trainer's start-up is bimodal: about 0.6 s when rank 0's TCPStore listens before rank 1 connects,
        # about 1 s more when rank 1 comes first and c10d's client waits before it retries.
        for side, key in (("engine", "engine"), ("ssh loop", "ssh_loop")):
            totals = launch[f"{key}_ms"]["values"]
            startups = launch[f"{key}_trainer_startup_ms"]
            leads = launch[f"{key}_master_lead_ms"]
            fast = [t for t, s in zip(totals, startups) if s < RETRY_THRESHOLD_MS]
            slow = [t for t, s in zip(totals, startups) if s >= RETRY_THRESHOLD_MS]
            print(f"{side}: launch median {med(fast)} in rounds without the rendezvous retry, {med(slow)} with it; "
                  "per round: " + ", ".join(f"{t:.0f} ms (trainer start-up {s:.0f}, rank 0 lead {lead:+.0f})"
                                            for t, s, lead in zip(totals, startups, leads)))
        calls = ", ".join(f"{c['call'].split(' ')[0]} {c['ms']}" for c in launch["redeploy_calls_last_round"])
        print(f"Node worker calls of one redeploy (ms): {calls}")
    if "telemetry" in results:
        tel = results["telemetry"]
        print(f"\nTelemetry: {tel['events_per_s']['median']:.0f} events/s, "
              f"{tel['events_per_batch']['median']:.1f} events per `events` signal; per-round p99 engine "
              f"{tel['engine_p99_ms']['values']} ms, ssh tail -F {tel['ssh_tail_p99_ms']['values']} ms.")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=int(os.environ.get("RANKSCOPE_BENCH_ROUNDS", "5")))
    p.add_argument("--build-dir", type=Path, default=Path(os.environ.get("RANKSCOPE_BUILD_DIR", ROOT / "build")))
    p.add_argument("--only", default="launch,sftp,telemetry", help="comma-separated subset")
    p.add_argument("--lean-shell", default="/bin/sh",
                   help="also run launch with this login shell on the nodes ('' to skip)")
    p.add_argument("--steps", type=int, default=2000, help="telemetry: steps per run")
    p.add_argument("--size-mib", type=int, default=256, help="sftp: file size")
    p.add_argument("--no-build", action="store_true")
    p.add_argument("--json", type=Path, help="also write the raw results here")
    args = p.parse_args()
    if os.geteuid() != 0:
        sys.exit("tests/bench/remote_engine.py: needs root (network namespaces and sshd)")

    build = args.build_dir.resolve()
    if not args.no_build:
        subprocess.run(["cmake", "--build", str(build), "--target", "rankscope_remote_bench", "rankscope-trainer"],
                       check=True, stdout=subprocess.DEVNULL)
    binary = build / "tests" / "bin" / "rankscope_remote_bench"
    trainer = build / "bin" / "rankscope-trainer"
    only = set(args.only.split(","))
    rounds = ["--rounds", str(args.rounds)]
    results = {}
    started = time.time()
    if "launch" in only:
        results["launch"] = run_bench(binary, ["launch"] + rounds, trainer)
        if args.lean_shell:
            results["launch_lean"] = run_bench(binary, ["launch", "--login-shell", args.lean_shell] + rounds, trainer)
    if "sftp" in only:
        results["sftp"] = run_bench(binary, ["sftp", "--size-mib", str(args.size_mib)] + rounds, trainer)
    if "telemetry" in only:
        results["telemetry"] = run_bench(binary, ["telemetry", "--steps", str(args.steps)] + rounds, trainer)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))

    print(f"Remote engine vs OpenSSH, medians of {args.rounds} interleaved rounds ({time.time() - started:.0f} s "
          "in all)\n")
    print("| benchmark | ours | baseline | ratio | goal | met? |\n|---|---|---|---|---|---|")
    for key, label in (("launch", "root's login shell"), ("launch_lean", "lean login shell")):
        if key in results:
            launch_rows_ = launch_rows(results[key], f"{label} {results[key]['login_shell']}")
            print("\n".join(launch_rows_))
    for key, label in (("launch", "root's login shell"), ("launch_lean", "lean login shell")):
        if key in results:
            print("\n".join(redeploy_rows(results[key], f"{label} {results[key]['login_shell']}")))
    if "sftp" in results:
        print("\n".join(sftp_rows(results["sftp"])))
    if "telemetry" in results:
        print("\n".join(telemetry_rows(results["telemetry"])))
    print_details(results)


if __name__ == "__main__":
    main()
