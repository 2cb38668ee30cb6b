#!/usr/bin/env python3
"""Time `ranklab eval`, trec_eval's C code (pytrec_eval) and ranx on the same run and qrels.

Called by run.sh. Each tool runs REPS times under /usr/bin/time -v (wall seconds, peak RSS);
the Python tools also report their load and evaluation time apart (evaluators.py). Prints a
Markdown table with medians and the ratios to ranklab, checks that the tools agree on the
averages, and with --big measures ranklab's peak memory on ~1 GB grouped and interleaved runs.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MEASURES = ["map", "recip_rank", "P_10", "ndcg_cut_10", "recall_100"]


def timed(cmd):
    """Runs cmd under /usr/bin/time -v; returns (stdout, wall seconds, peak RSS in MB)."""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", p.stderr).group(1)
    parts = [float(x) for x in wall.split(":")]
    seconds = sum(v * 60 ** i for i, v in enumerate(reversed(parts)))
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    return p.stdout, seconds, rss_kb / 1024


def ranklab_cmd(args, qrels, run):
    return [args.bin, "eval", "-m", "map", "-m", "recip_rank", "-m", "P.10", "-m", "ndcg_cut.10",
            "-m", "recall.100", qrels, run]


def parse_ranklab(out):
    return {l.split()[0]: float(l.split()[2]) for l in out.splitlines()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--python", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--seed", default="42")
    args = ap.parse_args()
    qrels = os.path.join(args.work, "qrels.txt")
    run = os.path.join(args.work, "run.trec")
    lines = sum(1 for _ in open(run, "rb"))
    size_mb = os.path.getsize(run) / 1e6
    print(f"run: {run} ({lines:,} lines, {size_mb:.0f} MB); qrels: {qrels}\n")

    tools = {
        "ranklab eval": lambda: ranklab_cmd(args, qrels, run),
        "trec_eval C (pytrec_eval)": lambda: [args.python, os.path.join(HERE, "evaluators.py"),
                                              "pytrec_eval", qrels, run],
        "ranx": lambda: [args.python, os.path.join(HERE, "evaluators.py"), "ranx", qrels, run],
    }
    results = {}
    for rep in range(args.reps):
        # Interleave the tools so that machine load affects them alike.
        for name, cmd in tools.items():
            out, wall, rss = timed(cmd())
            r = results.setdefault(name, {"wall": [], "rss": [], "load": [], "eval": []})
            r["wall"].append(wall)
            r["rss"].append(rss)
            if name == "ranklab eval":
                r["means"] = parse_ranklab(out)
            else:
                j = json.loads(out)
                r["load"].append(j["load_s"])
                r["eval"].append(j["eval_s"])
                r["means"] = j["means"]
            print(f"  rep {rep + 1}: {name}: {wall:.2f} s, {rss:.0f} MB", file=sys.stderr)

    base = results["ranklab eval"]
    bw, bm = statistics.median(base["wall"]), statistics.median(base["rss"])
    print("| tool | wall s (median) | min | load s | evaluate s | peak RSS MB | time / ranklab | RSS / ranklab |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        w, m = statistics.median(r["wall"]), statistics.median(r["rss"])
        load = f"{statistics.median(r['load']):.2f}" if r["load"] else "-"
        ev = f"{statistics.median(r['eval']):.2f}" if r["eval"] else "-"
        print(f"| {name} | {w:.2f} | {min(r['wall']):.2f} | {load} | {ev} | {m:.0f} | {w / bw:.1f}x | {m / bm:.1f}x |")
    te = results["trec_eval C (pytrec_eval)"]
    print(f"\nranklab vs trec_eval's C evaluation alone (pytrec_eval's evaluate(), without its Python "
          f"loading): {statistics.median(te['eval']) / bw:.1f}x faster")
    print(f"reps: {args.reps}; machine load average now: {os.getloadavg()[0]:.1f}")

    print("\naverages (must agree to 4 decimals between ranklab and trec_eval):")
    print("| measure | " + " | ".join(results) + " |")
    print("|---|" + "---|" * len(results))
    for m in MEASURES:
        print(f"| {m} | " + " | ".join(f"{r['means'][m]:.4f}" for r in results.values()) + " |")
    for m in MEASURES:
        if f"{base['means'][m]:.4f}" != f"{te['means'][m]:.4f}":
            sys.exit(f"ranklab and trec_eval disagree on {m}")

    if shutil.which("hyperfine"):
        print("\nhyperfine (ranklab eval):", file=sys.stderr)
        subprocess.run(["hyperfine", "--warmup", "1", "--runs", "5", "-N",
                        " ".join(ranklab_cmd(args, qrels, run))], check=False)

    if args.big:
        big(args)


def big(args):
    """Peak memory of ranklab eval on ~1 GB runs, grouped by query and interleaved."""
    print("\n1 GB runs (issue 8: memory bounded by qrels + one query when grouped):")
    print("| run | lines | MB | wall s | peak RSS MB | interleaved fallback |")
    print("|---|---|---|---|---|---|")
    for kind in ["grouped", "interleaved"]:
        run = os.path.join(args.work, f"big-{kind}.trec")
        qrels = os.path.join(args.work, "big-qrels.txt")
        if not os.path.exists(run):
            cmd = [args.bin, "synth-run", "--queries", "27000", "--depth", "1000", "--seed", args.seed,
                   "--out-run", run, "--out-qrels", qrels]
            if kind == "interleaved":
                cmd.append("--interleave")
            subprocess.run(cmd, check=True)
        lines = sum(1 for _ in open(run, "rb"))
        out, wall, rss = timed(ranklab_cmd(args, qrels, run))
        print(f"| {kind} | {lines:,} | {os.path.getsize(run) / 1e6:.0f} | {wall:.2f} | {rss:.0f} | "
              f"{'yes' if kind == 'interleaved' else 'no'} |")
        print(out, file=sys.stderr)


if __name__ == "__main__":
    main()
