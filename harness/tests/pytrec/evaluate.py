#!/usr/bin/env python3
"""The oracle side of harness/tests/pytrec_random.rs: trec_eval's C code (pytrec-eval-terrier).

Usage: evaluate.py MANIFEST.json OUT.json

MANIFEST lists cases {"name", "qrels", "run"} and configurations {"name", "level", "complete",
"max_docs"}. For every case and configuration this writes the per-query values pytrec_eval
computes for every measure it supports, applying trec_eval's own rules for what pytrec_eval
leaves to its caller:
- -M N: the run cut to each query's first N documents in trec_eval's order (score descending,
  then docno descending);
- -c: every qrels query the run lacks is evaluated, as trec_eval 10.0 does, on a ranking of one
  unjudged document, and num_ret, utility, unj_* and rbp_resid of it are then zeroed.
The summary (means, sums, geometric means) is left to the Rust side.
"""
import json
import sys

import pytrec_eval

BOGUS = "ceci_nest_pas_un_docno"


def read_qrels(path):
    qrels = {}
    with open(path) as f:
        for line in f:
            q, _, d, r = line.split()
            qrels.setdefault(q, {})[d] = int(r)
    return qrels


def read_run(path):
    run = {}
    with open(path) as f:
        for line in f:
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
    return run


def cut(run, n):
    out = {}
    for q, docs in run.items():
        by_id = sorted(docs.items(), key=lambda x: x[0].encode(), reverse=True)
        ranked = sorted(by_id, key=lambda x: -x[1])
        out[q] = dict(ranked[:n])
    return out


def main():
    manifest = json.load(open(sys.argv[1]))
    measures = set(pytrec_eval.supported_measures) - {"relstring"}
    out = {}
    for case in manifest["cases"]:
        qrels = read_qrels(case["qrels"])
        run = read_run(case["run"])
        per_config = {}
        for cfg in manifest["configs"]:
            r = cut(run, cfg["max_docs"]) if cfg["max_docs"] else dict(run)
            missing = []
            if cfg["complete"]:
                missing = [q for q in qrels if q not in r]
                for q in missing:
                    r[q] = {BOGUS: 1.0}
            ev = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=cfg["level"])
            res = ev.evaluate(r)
            for q in missing:
                for m in list(res[q]):
                    if m in ("num_ret", "utility", "rbp_resid") or m.startswith("unj"):
                        res[q][m] = 0.0
            per_config[cfg["name"]] = res
        out[case["name"]] = per_config
    json.dump(
        {"version": pytrec_eval.__version__ if hasattr(pytrec_eval, "__version__") else "?",
         "results": out},
        open(sys.argv[2], "w"),
    )


main()
