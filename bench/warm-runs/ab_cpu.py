#!/usr/bin/env python3
"""Alternating CPU and wall comparison of ranklab builds on a warm `bench --from-recording`.

    python3 bench/warm-runs/ab_cpu.py N BIN_A BIN_B [BIN_C ...]      (from the repository root)

Runs each binary once to warm, then N rounds of A, B, C ... in turn, each under
`perf stat -e task-clock,duration_time`, and prints per binary the medians of CPU (task-clock)
and wall, with their ratios to the first binary (a drift of a loaded machine's speed falls on
all alike; CPU is less disturbed by load than wall). Each binary renders into its own temporary
tree (`--reports <tmp>/<n> --recordings reports`); with INPLACE=1 it runs `bench
--from-recording` in place instead (reports unchanged: nothing rewritten). Needs `perf`.
A run that fails stops the comparison (exit 2).
"""
import os
import statistics
import subprocess
import sys
import tempfile


def command(b, i, tmp):
    if os.environ.get("INPLACE") == "1":
        return [b, "bench", "--from-recording"]
    return [b, "bench", "--from-recording", "--reports", f"{tmp}/{i}", "--recordings", "reports"]


def run(cmd, tmp):
    stat = f"{tmp}/stat.txt"
    r = subprocess.run(["perf", "stat", "-x,", "-e", "task-clock,duration_time", "-o", stat] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode:
        sys.stderr.write(f"ab_cpu.py: {cmd!r} exited {r.returncode}: {r.stderr.decode()[-500:]}\n")
        sys.exit(2)
    got = {}
    for line in open(stat):
        f = line.strip().split(",")
        if len(f) > 2 and f[2] in ("task-clock", "duration_time"):
            got[f[2]] = float(f[0])
    return got["task-clock"] / 1e3, got["duration_time"] / 1e9  # ms, ns -> s


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.stderr.write(__doc__)
        sys.exit(2)
    n, bins = int(sys.argv[1]), sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        for i, b in enumerate(bins):
            run(command(b, i, tmp), tmp)
        cpu, wall = [[] for _ in bins], [[] for _ in bins]
        for _ in range(n):
            for i, b in enumerate(bins):
                c, w = run(command(b, i, tmp), tmp)
                cpu[i].append(c)
                wall[i].append(w)
    c0, w0 = statistics.median(cpu[0]), statistics.median(wall[0])
    for i, b in enumerate(bins):
        c, w = statistics.median(cpu[i]), statistics.median(wall[i])
        print(f"cpu {c:.3f} s ({c / c0:.3f})  wall {w:.3f} s ({w / w0:.3f})  min wall {min(wall[i]):.3f}  {b}")
    print("load average after:", " ".join(open("/proc/loadavg").read().split()[:3]))


if __name__ == "__main__":
    main()
