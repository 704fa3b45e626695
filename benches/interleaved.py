#!/usr/bin/env python3
"""Wall-clock comparison of commands on a noisy machine: runs are interleaved so every command
sees the same drift of the host's speed, and medians are reported.

  benches/interleaved.py ROUNDS 'OURS' 'REFERENCE'
      each round runs OURS three times, REFERENCE once, OURS twice; prints both medians and the
      ratio (the form used in PERF.md against perf2bolt, whose runs take half a minute).
  benches/interleaved.py --ab RUNS 'A' 'B' ['C' ...]
      alternates A, B, ... RUNS times; prints each command's median wall and CPU time (the form
      used for the A/B steps in PERF.md).
"""
import os
import statistics
import subprocess
import sys
import time


def run(cmd):
    started, before = time.time(), os.times()
    subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return time.time() - started, cpu


def ab(runs, cmds):
    results = {c: [] for c in cmds}
    for _ in range(runs):
        for c in cmds:
            results[c].append(run(c))
    for c in cmds:
        walls = [w for w, _ in results[c]]
        cpus = [u for _, u in results[c]]
        print(f"median wall {statistics.median(walls):.3f}s min {min(walls):.3f}s  "
              f"median cpu {statistics.median(cpus):.3f}s  :: {c}")


def ratio(rounds, ours, reference):
    mine, theirs = [], []
    for _ in range(rounds):
        mine += [run(ours)[0] for _ in range(3)]
        theirs.append(run(reference)[0])
        mine += [run(ours)[0] for _ in range(2)]
    print("ours", " ".join(f"{x:.3f}" for x in mine))
    print("reference", " ".join(f"{x:.2f}" for x in theirs))
    m, r = statistics.median(mine), statistics.median(theirs)
    print(f"median ours {m:.3f}s  reference {r:.2f}s  ratio {r / m:.1f}x")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--ab":
        ab(int(args[1]), args[2:])
    elif len(args) == 3:
        ratio(int(args[0]), args[1], args[2])
    else:
        sys.exit(__doc__)
