#!/usr/bin/env python3
"""Why ranx's map differs from trec_eval's on the 7-million-line run: ranx again, on the same
run with its ties broken trec_eval's way (each score replaced by the document's position in
trec_eval's order: score descending, then document id descending). If ranx then gives
trec_eval's map, the difference is tie-breaking alone.

Usage (in run.sh's venv): ranx_ties.py QRELS RUN
"""
import sys

import pytrec_eval
import treclab
from ranx import Qrels, Run, evaluate

qp, rp = sys.argv[1:3]
with open(qp) as f:
    q = pytrec_eval.parse_qrel(f)
with open(rp) as f:
    r = pytrec_eval.parse_run(f)
t = treclab.evaluate(q, r, ["map"])["map"]
a = float(evaluate(Qrels(q), Run(r), "map", make_comparable=True))
# trec_eval's order: score descending, then document id descending; a strictly decreasing score.
r2 = {
    qid: {d: float(len(docs) - i) for i, (d, _) in enumerate(sorted(docs.items(), key=lambda x: (x[1], x[0]), reverse=True))}
    for qid, docs in r.items()
}
b = float(evaluate(Qrels(q), Run(r2), "map", make_comparable=True))
t2 = treclab.evaluate(q, r2, ["map"])["map"]
print(f"treclab {t:.5f}  ranx {a:.5f}  ranx with ties broken as trec_eval {b:.5f}  treclab on that run {t2:.5f}")
