#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a large log in which the recorded samples of tests/data are sparse, for rankscope_parser_bench --log.

The bench's own log is the samples that mixed-log.list names, end to end: a third of its lines hold "NCCL". A long training log is mostly
the trainer's progress. This one holds one line of the samples in EVERY, in runs of RUN lines in their order (from
the start again when they run out), so that tracebacks and failure tables mostly stay whole, among lines of
background:

  trainer   what the bundled trainer prints at every step (from tests/data/logs/trainer-ok-rank*.out and .err: its
            "@rankscope" step and heartbeat events and "[rank 0] epoch 1/1 step 1/8 loss 2.2317 783 img/s"), the
            events' timestamps moved on as the log goes
  progress  a progress line as many training scripts print it: "[rank3]: epoch 0 step 123/5000 loss 0.4321 lr
            1.0e-04 throughput 1234.5 samples/s"

  sparse_log.py --kind trainer|progress [--every 200] [--run 50] [--size-mib 100] OUT
"""

import argparse
import pathlib
import random

DATA = pathlib.Path(__file__).resolve().parents[2] / "data"


def samples():
    """The lines of the recorded samples that mixed-log.list names, in its order, as the bench's own log has them."""
    lines = []
    listed = pathlib.Path(__file__).resolve().parent / "mixed-log.list"
    for entry in listed.read_text().splitlines():
        entry = entry.strip()
        if entry and not entry.startswith("#"):
            lines += (DATA / entry).read_bytes().splitlines()
    return lines


def trainer_lines():
    """What the trainer prints at every step: its step and heartbeat events, and its progress line."""
    lines = []
    for path in sorted((DATA / "logs").glob("trainer-ok-rank*")):
        lines += [line for line in path.read_bytes().splitlines()
                  if b'"type":"step"' in line or b'"type":"heartbeat"' in line or b"] epoch " in line]
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kind", choices=("trainer", "progress"), required=True)
    parser.add_argument("--every", type=int, default=200, help="one sample line in this many (default 200)")
    parser.add_argument("--run", type=int, default=50, help="sample lines that come together (default 50)")
    parser.add_argument("--size-mib", type=int, default=100)
    parser.add_argument("out")
    args = parser.parse_args()
    if args.every < 1:
        parser.error("--every must be at least 1")
    if args.run < 1:
        parser.error("--run must be at least 1")
    recorded = samples()
    background = trainer_lines()
    rng = random.Random(1)
    out = []
    size = 0
    index = 0
    taken = 0
    while size < args.size_mib * 1024 * 1024:
        if index % (args.every * args.run) < args.run:
            line = recorded[taken % len(recorded)]
            taken += 1
        elif args.kind == "trainer":
            # The events' times go on: a log of one job does not repeat a timestamp a million times.
            line = background[index % len(background)].replace(b"1795328", str(1795328 + index // 1000).encode())
        else:
            line = b"[rank%d]: epoch %d step %d/5000 loss %.4f lr %.1e throughput %.1f samples/s" % (
                rng.randrange(8), index // 400000, index % 5000, rng.random(), 1e-4, rng.uniform(900, 1300))
        out.append(line)
        size += len(line) + 1
        index += 1
    pathlib.Path(args.out).write_bytes(b"\n".join(out) + b"\n")
    print(f"{args.out}: {size / 1e6:.1f} MB, {index} lines, {taken} of them from the samples")


if __name__ == "__main__":
    main()
