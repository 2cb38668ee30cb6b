#!/usr/bin/env python3
"""Load and evaluate one TREC run with a Python evaluator, timing load and evaluation apart.

Usage: evaluators.py {pytrec_eval|ranx} QRELS RUN

Prints one JSON object: {"tool", "load_s", "eval_s", "num_q", "means": {measure: mean}}.
The measures are map, recip_rank, P_10, ndcg_cut_10, recall_100 (trec_eval names), averaged
over the queries of the qrels that the run has (the run has them all here).
Run by compare.py under /usr/bin/time -v; not part of CI.
"""
import json
import sys
import time


def pytrec(qrels_path, run_path):
    import pytrec_eval

    t0 = time.perf_counter()
    with open(qrels_path) as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    t1 = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(
        qrels, {"map", "recip_rank", "P.10", "ndcg_cut.10", "recall.100"}
    )
    per_query = evaluator.evaluate(run)
    t2 = time.perf_counter()
    names = ["map", "recip_rank", "P_10", "ndcg_cut_10", "recall_100"]
    n = len(per_query)
    means = {m: sum(q[m] for q in per_query.values()) / n for m in names}
    return t1 - t0, t2 - t1, n, means


def ranx_eval(qrels_path, run_path):
    from ranx import Qrels, Run, evaluate

    t0 = time.perf_counter()
    qrels = Qrels.from_file(qrels_path, kind="trec")
    run = Run.from_file(run_path, kind="trec")
    t1 = time.perf_counter()
    names = {
        "map": "map",
        "recip_rank": "mrr",
        "P_10": "precision@10",
        "ndcg_cut_10": "ndcg@10",
        "recall_100": "recall@100",
    }
    scores = evaluate(qrels, run, list(names.values()), make_comparable=True)
    t2 = time.perf_counter()
    means = {k: float(scores[v]) for k, v in names.items()}
    return t1 - t0, t2 - t1, len(qrels.keys()), means


def main():
    tool, qrels_path, run_path = sys.argv[1:4]
    fn = {"pytrec_eval": pytrec, "ranx": ranx_eval}[tool]
    load_s, eval_s, n, means = fn(qrels_path, run_path)
    print(json.dumps({"tool": tool, "load_s": load_s, "eval_s": eval_s, "num_q": n, "means": means}))


if __name__ == "__main__":
    main()
