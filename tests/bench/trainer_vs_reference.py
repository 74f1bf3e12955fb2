#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""rankscope-trainer against the reference PyTorch DDP script, side by side in one run.

Same model (CIFAR ResNet18), batch per rank, intra-op threads, rank count and data shape; each rank
pinned to its own core (rank r on core r). Configurations are interleaved round by round so that
machine noise hits all of them alike; the report gives medians over rounds and the ratios.

    tests/bench/trainer_vs_reference.py --rounds 3 --steps 10 --warmup 2

Images per second is computed the same way for both: every rank's timed steps (end of one step to the
end of the next, data included), the mean over ranks of their summed step time, and
batch * world_size * steps / that mean. Standard library only; the reference runs under /usr/bin/python3
(Debian's torch).
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENT_PREFIX = "@rankscope "


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_reference(args, world):
    cmd = ["taskset", "-c", ",".join(str(c) for c in range(world)), args.python, str(args.reference),
           "--world-size", str(world), "--threads", "1", "--batch", str(args.batch), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--pin"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=3600).stdout
    result = json.loads(out.strip().splitlines()[-1])
    return result["images_per_sec"], result["step_ms_median"]


def run_trainer(args, world, env_extra):
    port = free_port()
    env = dict(os.environ, **env_extra)
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        for rank in range(world):
            cmd = ["taskset", "-c", str(rank), str(args.trainer), "--rank", str(rank), "--world-size", str(world),
                   "--init-method", f"tcp://127.0.0.1:{port}", "--threads", "1", "--model", "resnet18",
                   "--batch-size", str(args.batch), "--max-steps", str(args.steps + args.warmup),
                   "--synthetic-samples", str(args.batch * world * (args.steps + args.warmup)), "--no-eval",
                   "--replica-check-every", "0", "--log-every", "0", "--events", f"{tmp}/rank{{rank}}.events"]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env))
        step_ms = []
        for rank, p in enumerate(procs):
            _, err = p.communicate(timeout=3600)
            if p.returncode != 0:
                sys.exit(f"rankscope-trainer failed ({p.returncode}):\n{err}")
            lines = Path(f"{tmp}/rank{rank}.events").read_text().splitlines()
            steps = [json.loads(line[len(EVENT_PREFIX):]) for line in lines if line.startswith(EVENT_PREFIX)]
            step_ms.append([e["step_ms"] for e in steps if e["type"] == "step" and e["step"] > args.warmup])
    mean_rank_s = statistics.mean(sum(ms) for ms in step_ms) / 1000.0
    images = args.batch * world * len(step_ms[0])
    return images / mean_rank_s, statistics.median(step_ms[0])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--worlds", default="1,2")
    p.add_argument("--trainer", type=Path, default=ROOT / "build" / "bin" / "rankscope-trainer")
    p.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "bench" / "ddp_reference.py")
    p.add_argument("--python", default="/usr/bin/python3")
    p.add_argument("--no-malloc-ab", action="store_true", help="skip the variant without malloc tuning")
    p.add_argument("--json", type=Path, help="also write raw results here")
    args = p.parse_args()
    if not args.reference.exists():
        sys.exit(f"reference script not found: {args.reference}")

    variants = [("reference (python DDP)", lambda w: run_reference(args, w)),
                ("rankscope-trainer", lambda w: run_trainer(args, w, {}))]
    if not args.no_malloc_ab:
        variants.append(("rankscope-trainer, glibc malloc defaults",
                         lambda w: run_trainer(args, w, {"RANKSCOPE_MALLOC_TUNING": "0"})))
    worlds = [int(w) for w in args.worlds.split(",")]
    results = {(name, w): [] for name, _ in variants for w in worlds}
    started = time.time()
    for r in range(args.rounds):
        for w in worlds:
            for name, fn in variants:
                ips, step = fn(w)
                results[(name, w)].append((ips, step))
                print(f"round {r + 1}/{args.rounds} world {w} {name}: {ips:.1f} img/s, median step {step:.0f} ms",
                      file=sys.stderr, flush=True)

    med = {k: statistics.median(v[0] for v in vals) for k, vals in results.items()}
    ref = variants[0][0]
    print(f"\nResNet18 (CIFAR), batch {args.batch}/rank, 1 thread/rank, pinned, {args.steps} timed steps after "
          f"{args.warmup} warm-up, median of {args.rounds} rounds ({time.time() - started:.0f} s in all)\n")
    print("| implementation | ranks | images/s (median) | vs reference | scaling 1->2 (of linear) |")
    print("|---|---|---|---|---|")
    for name, _ in variants:
        for w in worlds:
            scaling = ""
            if w == 2 and (name, 1) in med:
                scaling = f"{med[(name, 2)] / (2 * med[(name, 1)]):.3f}"
            print(f"| {name} | {w} | {med[(name, w)]:.1f} | {med[(name, w)] / med[(ref, w)]:.3f}x | {scaling} |")
    if args.json:
        args.json.write_text(json.dumps({f"{k[0]}|{k[1]}": v for k, v in results.items()}, indent=1))


if __name__ == "__main__":
    main()
