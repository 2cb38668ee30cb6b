#!/usr/bin/env python3
"""One evaluation of the 5 measures by one Python evaluator, timed (run under /usr/bin/time -v
by run.sh for the peak memory). Prints one JSON object: tool, load_s (reading files into
Python objects, 0 when the evaluator reads the files itself), eval_s, and the 5 means.

Usage: one.py TOOL QRELS RUN   TOOL: treclab-files treclab-dicts pytrec_eval ir_measures ranx-first
      ranx-warm (the same call; the names only label the two cache states run.sh sets up)

ranx compiles its functions with numba on first use and caches the machine code on disk
(NUMBA_CACHE_DIR): run.sh times its first run in a fresh process with an empty cache directory,
and its warm run in a fresh process whose cache a previous run filled (the compiled code is then
loaded, not compiled). For treclab-dicts, "base_mb" is the process's RSS once the dicts are built,
before the call: peak RSS minus it is the evaluator's own memory.
"""
import json
import resource
import sys
import time

MEASURES = ["map", "recip_rank", "P.10", "ndcg_cut.10", "recall.100"]
NAMES = ["map", "recip_rank", "P_10", "ndcg_cut_10", "recall_100"]


def read_dicts(qrels_path, run_path):
    """The same dicts for every dict-based tool: pytrec_eval's own parsers (C++)."""
    import pytrec_eval

    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    return qrels, run


def rss_mb():
    """The process's current resident set size, MB (Linux: /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def main():
    tool, qrels_path, run_path = sys.argv[1:4]
    t0 = time.perf_counter()
    base = None
    if tool == "treclab-files":
        import treclab

        t1 = time.perf_counter()
        means = treclab.evaluate(qrels_path, run_path, MEASURES)
    elif tool == "treclab-dicts":
        import treclab

        qrels, run = read_dicts(qrels_path, run_path)
        base = rss_mb()
        t1 = time.perf_counter()
        means = treclab.evaluate(qrels, run, MEASURES)
    elif tool == "pytrec_eval":
        import pytrec_eval

        qrels, run = read_dicts(qrels_path, run_path)
        base = rss_mb()
        t1 = time.perf_counter()
        per_query = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES)).evaluate(run)
        means = {m: sum(q[m] for q in per_query.values()) / len(per_query) for m in NAMES}
    elif tool == "ir_measures":
        import ir_measures
        from ir_measures import AP, RR, P, nDCG, R

        qrels = list(ir_measures.read_trec_qrels(qrels_path))
        run = list(ir_measures.read_trec_run(run_path))
        t1 = time.perf_counter()
        agg = ir_measures.calc_aggregate([AP, RR, P @ 10, nDCG @ 10, R @ 100], qrels, run)
        means = dict(zip(NAMES, [agg[AP], agg[RR], agg[P @ 10], agg[nDCG @ 10], agg[R @ 100]]))
    elif tool in ("ranx-first", "ranx-warm"):
        from ranx import Qrels, Run, evaluate

        qrels = Qrels.from_file(qrels_path, kind="trec")
        run = Run.from_file(run_path, kind="trec")
        t1 = time.perf_counter()
        s = evaluate(qrels, run, ["map", "mrr", "precision@10", "ndcg@10", "recall@100"], make_comparable=True)
        means = dict(zip(NAMES, [float(s[k]) for k in ["map", "mrr", "precision@10", "ndcg@10", "recall@100"]]))
    else:
        raise SystemExit(f"unknown tool {tool}")
    t2 = time.perf_counter()
    means = {k: means[k] for k in NAMES}
    print(json.dumps({"tool": tool, "load_s": t1 - t0, "eval_s": t2 - t1, "base_mb": base, "means": means}))


if __name__ == "__main__":
    main()
