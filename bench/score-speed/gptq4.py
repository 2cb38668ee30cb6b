#!/usr/bin/env python3
"""GPTQ's integers in exporter 4's graph (a prototype, not ranklab's exporter): each quantized
matrix of ranklab's export keeps its per-column scales, and its integers are chosen by GPTQ
(input channels in order, or with ACT=1 by descending diag(H); 1% damping, or DAMP; blocks of 128) against H = sum x x^T of the matrix's float
input over the calibration pairs; each bias moves by (W_export - W_gptq) mu (mu: the mean input
over the same pairs), so the mean correction the exporter made for its own integers holds for
the new ones ("gptq"); "gptq-own-bc": each bias the float model's plus (W - W_gptq) mu, mu
over the calibration pairs here (not the exporter's). Then the export and the GPTQ variant against the float fold model on every
evaluation set. Same venv and oracle as spread.py.

    python gptq4.py BASE_DIR CAL.jsonl EVAL[,EVAL2..] FINETUNED_DIR KEY [KEY..] > gptq4-scifact.json
"""
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

import candidates as c
import smoothquant as sq

DAMP, BLOCK = float(os.environ.get("DAMP", "0.01")), 128
ACT = os.environ.get("ACT") == "1"  # input channels in descending diag(H) order (ties: index)
base_dir, cal, evals, fdir, keys = sys.argv[1], sys.argv[2], sys.argv[3].split(","), sys.argv[4], sys.argv[5:]
enc, name = c.pair_encoder(base_dir), c.set_name
ev = {name(p): enc(p) for p in evals}
cal_encs = enc(cal)


def calibrate(w):
    """Per matrix input: (H = sum x x^T, sum x, tokens), float64."""
    model, names = sq.float_graph_with_inputs(base_dir + "/model.onnx", w)
    sess = c.session(model)
    xs = sorted(set(names.values()))
    acc = {x: [0.0, 0.0, 0] for x in xs}
    for e in cal_encs:
        feed = {"input_ids": np.array([e.ids], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids], dtype=np.int64)}
        for x, v in zip(xs, sess.run(xs, feed)):
            v = v.reshape(-1, v.shape[-1]).astype(np.float64)
            a = acc[x]
            a[0] = a[0] + v.T @ v; a[1] = a[1] + v.sum(axis=0); a[2] += v.shape[0]
    return {p: acc[x] for p, x in names.items()}


def gptq(wt, scale, hess):
    """int8 integers for torch-layout wt [out, in] with per-output scales `scale`."""
    if ACT:
        order = np.lexsort((np.arange(len(hess)), -np.diag(hess)))
        q = gptq_in_order(wt[:, order], scale, hess[np.ix_(order, order)])
        out = np.empty_like(q)
        out[:, order] = q
        return out
    return gptq_in_order(wt, scale, hess)


def gptq_in_order(wt, scale, hess):
    return sq.gptq(wt, hess, scale=scale, damp=DAMP, quotient=np.float64)[1]


def figures(f, q):
    d = q - f
    return {"mean": float(np.abs(d).mean()), "max": float(np.abs(d).max()), "shift": float(d.mean())}


report = {"calibration": name(cal), "damp": DAMP, "block": BLOCK, "act_order": ACT,
          "cpu_note": "ONNX Runtime's int8 kernels on the CPU that ran this (AVX-512 VNNI here)", "exports": {}}
for key in keys:
    t0 = time.time()
    w = c.load_fold(f"{fdir}/{key}.bin")
    export = onnx.load(f"{fdir}/{key}.int8/model.onnx")
    g = export.graph
    inits = {i.name: i for i in g.initializer}
    cal_of = calibrate(w)
    changed = 0
    own_bias = {}
    for n in g.node:
        if n.op_type not in ("MatMulInteger", "MatMulIntegerToFloat") or not n.input[1].endswith("_quantized"):
            continue
        param = c.parameter_of(n.name)
        wbase = n.input[1][: -len("_quantized")]
        old = numpy_helper.to_array(inits[wbase + "_quantized"])  # [in, out]
        scale = numpy_helper.to_array(inits[wbase + "_scale"]).astype(np.float32)
        h, sx, count = cal_of[param]
        q = gptq(w[param + ".weight"], scale, h)  # [out, in]
        mu = sx / count
        delta = ((old.T.astype(np.float64) - q.astype(np.float64)) * scale.astype(np.float64)[:, None]) @ mu
        bias = numpy_helper.to_array(inits[param + ".bias"]).astype(np.float64)
        inits[param + ".bias"].CopyFrom(numpy_helper.from_array((bias + delta).astype(np.float32), param + ".bias"))
        own = w[param + ".bias"].astype(np.float64) + (w[param + ".weight"].astype(np.float64) - q.astype(np.float64) * scale.astype(np.float64)[:, None]) @ mu
        own_bias[param + ".bias"] = own.astype(np.float32)
        inits[wbase + "_quantized"].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(q.T), wbase + "_quantized"))
        changed += 1
    fs = c.session(sq.float_graph_with_inputs(base_dir + "/model.onnx", w)[0])
    es = c.session(open(f"{fdir}/{key}.int8/model.onnx", "rb").read())
    gs = c.session(export.SerializeToString())
    for b, v in own_bias.items():
        inits[b].CopyFrom(numpy_helper.from_array(v, b))
    bs = c.session(export.SerializeToString())
    row = {"matrices": changed}
    for k, v in ev.items():
        f = c.score(fs, v)
        row[k] = {"export": figures(f, c.score(es, v)), "gptq": figures(f, c.score(gs, v)), "gptq-own-bc": figures(f, c.score(bs, v))}
    row["seconds"] = time.time() - t0
    report["exports"][key] = row
    print(key, json.dumps(row), file=sys.stderr, flush=True)
print(json.dumps(report, indent=1))
