#!/usr/bin/env python3
"""Alternating wall-clock comparison of shell commands on a machine whose speed drifts.

    python3 bench/warm-runs/ab.py N CMD_A CMD_B [CMD_C ...]

Runs each command once to warm the caches, then N rounds of A, B, C, ... in turn (so a drift of
the machine's speed falls on all of them alike), and prints per command the median, minimum and
quartiles of its wall times. Output of the commands is discarded; a command that fails stops
the comparison (exit 2).
"""
import statistics
import subprocess
import sys
import time


def run(cmd):
    r = subprocess.run(cmd, shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.stderr.write(f"ab.py: {cmd!r} exited {r.returncode}: {r.stderr.decode()[-500:]}\n")
        sys.exit(2)


def main():
    if len(sys.argv) < 4 or not sys.argv[1].isdigit():
        sys.stderr.write(__doc__)
        sys.exit(2)
    n, cmds = int(sys.argv[1]), sys.argv[2:]
    times = {c: [] for c in cmds}
    for c in cmds:
        run(c)
    for _ in range(n):
        for c in cmds:
            start = time.perf_counter()
            run(c)
            times[c].append(time.perf_counter() - start)
    for c in cmds:
        v = sorted(times[c])
        ms = lambda x: f"{x * 1000:7.1f}"
        print(f"median {ms(statistics.median(v))} ms  min {ms(v[0])}  q1 {ms(v[len(v) // 4])}"
              f"  q3 {ms(v[3 * len(v) // 4])}  {c}")


if __name__ == "__main__":
    main()
