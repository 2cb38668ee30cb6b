#!/usr/bin/env python3
"""Time `ranklab eval` beside other evaluators on the same run and qrels, side by side.

Called by run.sh. Every tool runs REPS times under /usr/bin/time -v (wall seconds, peak RSS),
the tools interleaved so that machine load affects them alike; the Python tools also report
their load and evaluation time apart (evaluators.py). Prints a Markdown table with medians and
the ratios to ranklab (five measures, both cores), the machine's load average before and after,
checks that the tools agree on the averages, then hyperfine on the ranklab commands.

Tools: ranklab (the five measures on all cores, on one thread, and -m all_trec), optionally a
ranklab binary to compare with (--base-bin, e.g. main's before a change), trec_eval's C code
through pytrec_eval, optionally trec_eval binaries (--trec-eval, repeatable, each with its
--trec-eval-label; run.sh's TREC_EVAL=wheel,pyserini) and ranx (--ranx), and
`wc -l` on the run as the floor of reading the file.
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
FIVE = ["-m", "map", "-m", "recip_rank", "-m", "P.10", "-m", "ndcg_cut.10", "-m", "recall.100"]


def timed(cmd, env=None):
    """Runs cmd under /usr/bin/time -v; returns (stdout, wall seconds, peak RSS in MB)."""
    p = subprocess.run(["/usr/bin/time", "-v"] + cmd, capture_output=True, text=True,
                       env=None if env is None else {**os.environ, **env})
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", p.stderr).group(1)
    parts = [float(x) for x in wall.split(":")]
    seconds = sum(v * 60 ** i for i, v in enumerate(reversed(parts)))
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    return p.stdout, seconds, rss_kb / 1024


def parse_trec(out):
    """The `all` lines of ranklab's or trec_eval's output: {measure: value}."""
    means = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] == "all":
            try:
                means[f[0]] = float(f[2])
            except ValueError:
                pass
    return means


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--base-bin")
    ap.add_argument("--python", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--trec-eval", action="append", default=[])
    ap.add_argument("--trec-eval-label", action="append", default=[])
    ap.add_argument("--ranx", action="store_true")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--seed", default="42")
    ap.add_argument("--json", help="write the medians and ratios here as JSON")
    args = ap.parse_args()
    qrels = os.path.join(args.work, "qrels.txt")
    run = os.path.join(args.work, "run.trec")
    lines = sum(1 for _ in open(run, "rb"))
    size_mb = os.path.getsize(run) / 1e6
    print(f"run: {run} ({lines:,} lines, {size_mb:.0f} MB); qrels: {qrels}; "
          f"{os.cpu_count()} cores\n")

    one = {"RAYON_NUM_THREADS": "1"}
    py = [args.python, os.path.join(HERE, "evaluators.py")]
    # (name, command, environment, output kind)
    tools = [("ranklab eval, 5 measures", [args.bin, "eval"] + FIVE + [qrels, run], None, "trec")]
    tools.append(("ranklab eval, 5 measures, 1 thread", [args.bin, "eval"] + FIVE + [qrels, run],
                  one, "trec"))
    tools.append(("ranklab eval -m all_trec", [args.bin, "eval", "-m", "all_trec", qrels, run],
                  None, "trec"))
    if args.base_bin:
        tools.append(("ranklab before, 5 measures", [args.base_bin, "eval"] + FIVE + [qrels, run],
                      None, "trec"))
        tools.append(("ranklab before -m all_trec",
                      [args.base_bin, "eval", "-m", "all_trec", qrels, run], None, "trec"))
    labels = args.trec_eval_label + ["trec_eval 10.0 (C, -O2)"] * len(args.trec_eval)
    for te, label in zip(args.trec_eval, labels):
        tools.append((label, [te] + FIVE + [qrels, run], None, "trec"))
    tools.append(("trec_eval C via pytrec_eval", py + ["pytrec_eval", qrels, run], None, "json"))
    if args.ranx:
        tools.append(("ranx", py + ["ranx", qrels, run], None, "json"))
    tools.append(("wc -l", ["wc", "-l", run], None, None))

    load_before = os.getloadavg()
    results = {}
    for rep in range(args.reps):
        for name, cmd, env, kind in tools:
            out, wall, rss = timed(cmd, env)
            r = results.setdefault(name, {"wall": [], "rss": [], "load": [], "eval": []})
            r["wall"].append(wall)
            r["rss"].append(rss)
            if kind == "trec":
                r["means"] = parse_trec(out)
            elif kind == "json":
                j = json.loads(out)
                r["load"].append(j["load_s"])
                r["eval"].append(j["eval_s"])
                r["means"] = j["means"]
            print(f"  rep {rep + 1}: {name}: {wall:.2f} s, {rss:.0f} MB", file=sys.stderr)
    load_after = os.getloadavg()

    base = results["ranklab eval, 5 measures"]
    bw, bm = statistics.median(base["wall"]), statistics.median(base["rss"])
    print(f"median of {args.reps} runs each, interleaved; /usr/bin/time -v\n")
    print("| tool | wall s (median) | min | load s | evaluate s | peak RSS MB | time / ranklab | RSS / ranklab |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        w, m = statistics.median(r["wall"]), statistics.median(r["rss"])
        load = f"{statistics.median(r['load']):.2f}" if r["load"] else "-"
        ev = f"{statistics.median(r['eval']):.2f}" if r["eval"] else "-"
        print(f"| {name} | {w:.3f} | {min(r['wall']):.3f} | {load} | {ev} | {m:.1f} | "
              f"{w / bw:.2f}x | {m / bm:.2f}x |")
    te = results["trec_eval C via pytrec_eval"]
    print(f"\nranklab (5 measures, all cores) vs trec_eval's C evaluation alone (pytrec_eval's "
          f"evaluate(), without its Python loading): {statistics.median(te['eval']) / bw:.1f}x faster")
    for label in labels[:len(args.trec_eval)]:
        tw = statistics.median(results[label]["wall"])
        print(f"ranklab (5 measures, all cores) vs {label}: {tw / bw:.1f}x faster")
    if args.json:
        figures = {name: {"wall_s_median": statistics.median(r["wall"]), "wall_s_min": min(r["wall"]),
                          "peak_rss_mb": statistics.median(r["rss"]),
                          "ratio_to_ranklab": statistics.median(r["wall"]) / bw}
                   for name, r in results.items()}
        with open(args.json + ".partial", "w") as f:
            json.dump({"run_lines": lines, "reps": args.reps, "cores": os.cpu_count(),
                       "load_before": load_before, "load_after": load_after,
                       "tools": figures}, f, indent=1)
        os.replace(args.json + ".partial", args.json)
    print(f"machine load average (1, 5, 15 min) before: {load_before[0]:.2f} {load_before[1]:.2f} "
          f"{load_before[2]:.2f}; after: {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}")

    print("\naverages (must agree to 4 decimals between ranklab and trec_eval):")
    agreeing = [n for n in results if "means" in results[n] and "all_trec" not in n]
    print("| measure | " + " | ".join(agreeing) + " |")
    print("|---|" + "---|" * len(agreeing))
    for m in MEASURES:
        print(f"| {m} | " + " | ".join(f"{results[n]['means'][m]:.4f}" for n in agreeing) + " |")
    for n in agreeing:
        if n.startswith("ranx"):
            continue  # ranx computes some measures its own way; shown, not required to agree
        for m in MEASURES:
            if f"{base['means'][m]:.4f}" != f"{results[n]['means'][m]:.4f}":
                sys.exit(f"ranklab and {n} disagree on {m}")

    if shutil.which("hyperfine"):
        print("\nhyperfine -w1 -r5 -N:\n")
        cmds = [" ".join(c) for name, c, env, _ in tools if name.startswith("ranklab") and env is None]
        cmds.insert(1, "env RAYON_NUM_THREADS=1 " + " ".join([args.bin, "eval"] + FIVE + [qrels, run]))
        cmds.append(f"wc -l {run}")
        subprocess.run(["hyperfine", "-w1", "-r5", "-N", "--style", "basic"] + cmds, check=False)

    if args.big:
        big(args)


def big(args):
    """Peak memory of ranklab eval on ~1 GB runs, grouped by query and interleaved."""
    print("\n1 GB runs (memory bounded by qrels + a few chunks when grouped):")
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
        out, wall, rss = timed([args.bin, "eval"] + FIVE + [qrels, run])
        print(f"| {kind} | {lines:,} | {os.path.getsize(run) / 1e6:.0f} | {wall:.2f} | {rss:.0f} | "
              f"{'yes' if kind == 'interleaved' else 'no'} |")
        print(out, file=sys.stderr)


if __name__ == "__main__":
    main()
