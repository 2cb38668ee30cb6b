#!/usr/bin/env python3
"""Would one gain and one offset on the final logit (folded into the classifier) bring an int8
export's logits within the goal? Each export's logits against its float fold model's, before
and after `a * int8 + b`, with (a, b) fitted by least squares two ways: on the calibration
pairs (what an exporter could do) and on the evaluation sets themselves (an oracle, the best
any affine correction of the logit could reach on them). Same venv and oracle as spread.py
(the pinned graph with the fold's weights, every matrix float; ONNX Runtime 1.32.0, one
single-threaded session).

    python affine.py BASE_DIR CAL.jsonl EVAL[,EVAL2..] FINETUNED_DIR KEY [KEY..] > affine-scifact.json

FINETUNED_DIR holds <KEY>.bin (the fold model) and <KEY>.int8/model.onnx (ranklab's export).
"""
import json
import sys

import numpy as np

import candidates as c, smoothquant as sq

base_dir, cal, evals, fdir, keys = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4], sys.argv[5:]
enc, name = c.pair_encoder(base_dir), c.set_name
ev = {name(p): enc(p) for p in evals}
cal_encs = enc(cal)


def err(f, q):
    d = np.abs(q - f)
    return {"mean": float(d.mean()), "max": float(d.max())}


report = {"calibration": name(cal), "cpu_note": "ONNX Runtime's int8 kernels on the CPU that ran this (AVX-512 VNNI here)", "exports": {}}
for key in keys:
    fs = c.session(sq.float_graph_with_inputs(base_dir + "/model.onnx", c.load_fold(f"{fdir}/{key}.bin"))[0])
    qs = c.session(open(f"{fdir}/{key}.int8/model.onnx", "rb").read())
    logits = {k: (np.array(c.score(fs, v)), np.array(c.score(qs, v))) for k, v in ev.items()}
    cf, cq = np.array(c.score(fs, cal_encs)), np.array(c.score(qs, cal_encs))
    fits = {"calibration": np.polyfit(cq, cf, 1),
            "oracle": np.polyfit(np.concatenate([q for _, q in logits.values()]),
                                 np.concatenate([f for f, _ in logits.values()]), 1)}
    row = {"fits": {k: {"a": float(a), "b": float(b)} for k, (a, b) in fits.items()}}
    for k, (f, q) in logits.items():
        row[k] = {"export": err(f, q), **{w: err(f, a * q + b) for w, (a, b) in fits.items()}}
    report["exports"][key] = row
    print(key, file=sys.stderr, flush=True)
print(json.dumps(report, indent=1))
