#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fashion-MNIST on 2 CPU ranks (Gloo): validation accuracy per epoch and the time to reach it.

    tests/bench/fashion_mnist_accuracy.py --epochs 8

Runs rankscope-trainer with --model cnn on Debian's dataset-fashion-mnist (60000 train, 10000 test),
each rank pinned to its own core, and prints a table of epoch, wall time, validation loss and accuracy
as the trainer's eval events report them (all-reduced over both ranks, every test sample counted once).
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EVENT_PREFIX = "@rankscope "


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", default="0.001")
    p.add_argument("--model", default="cnn")
    p.add_argument("--trainer", type=Path, default=ROOT / "build" / "bin" / "rankscope-trainer")
    p.add_argument("--target", type=float, default=0.92)
    args = p.parse_args()

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.time()
    procs = []
    for rank in range(2):
        cmd = ["taskset", "-c", str(rank), str(args.trainer), "--rank", str(rank), "--world-size", "2",
               "--init-method", f"tcp://127.0.0.1:{port}", "--threads", "1", "--dataset", "fashion-mnist",
               "--model", args.model, "--epochs", str(args.epochs), "--batch-size", str(args.batch), "--lr", args.lr,
               "--log-every", "0", "--events", "stdout"]
        # Only rank 0's events are read here; rank 1's go to /dev/null so that no pipe fills up and blocks it.
        procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, text=True))
    evals = []
    for line in procs[0].stdout:
        if line.startswith(EVENT_PREFIX):
            event = json.loads(line[len(EVENT_PREFIX):])
            if event["type"] == "eval":
                evals.append((time.time() - started, event))
                print(f"epoch {event['epoch']}: accuracy {event['val_accuracy']:.4f} after {evals[-1][0]:.0f} s",
                      file=sys.stderr, flush=True)
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            sys.exit(f"rankscope-trainer failed: {err}")

    print(f"\nFashion-MNIST, --model {args.model}, 2 CPU ranks (Gloo), batch {args.batch}/rank, lr {args.lr} "
          f"(x2 scaled), 1 thread/rank, pinned\n")
    print("| epoch | wall time (s) | val loss | val accuracy |")
    print("|---|---|---|---|")
    for wall, e in evals:
        print(f"| {e['epoch']} | {wall:.0f} | {e['val_loss']:.4f} | {e['val_accuracy']:.4f} |")
    reached = next((wall for wall, e in evals if e["val_accuracy"] >= args.target), None)
    best = max(e["val_accuracy"] for _, e in evals)
    print(f"\nbest accuracy {best:.4f}; " +
          (f"reached {args.target} after {reached:.0f} s" if reached else f"never reached {args.target}"))


if __name__ == "__main__":
    main()
