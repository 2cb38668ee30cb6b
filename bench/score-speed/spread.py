#!/usr/bin/env python3
"""Each int8 export's error against its float fold model, beside the pinned int8 L-12's
against its own dequantized weights, in logits and scaled by the float logits' spread on each
evaluation set (mean |Δ| / standard deviation of the float logits), with the per-pair scatter
left once the set's mean shift is removed and the Kendall tau between the int8 and float
logits. Same venv and oracle as eval_export.py (the pinned graph with every matrix and table
float, ONNX Runtime 1.32.0, one single-threaded session); raw spread-scifact.json.

    python spread.py BASE_DIR EVAL[,EVAL2..] FINETUNED_DIR KEY [KEY..] > spread-scifact.json

FINETUNED_DIR holds <KEY>.bin (the fold model) and <KEY>.int8/model.onnx (ranklab's export).
"""
import json
import sys

import numpy as np

import candidates as c, smoothquant as sq

base_dir, evals, fdir, keys = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4:]
tok = c.Tokenizer.from_file(base_dir + "/tokenizer.json"); tok.enable_truncation(512, strategy="longest_first"); tok.no_padding()
enc = lambda p: [tok.encode(x["query"], x["passage"]) for x in map(json.loads, open(p))]
ev = {p.split("/")[-1].rsplit(".", 1)[0]: enc(p) for p in evals}


def float_session(w):
    return c.session(sq.float_graph_with_inputs(base_dir + "/model.onnx", w)[0])


def tau(a, b):
    """Kendall's tau-a over every pair of pairs (ties count 0), by hand."""
    s = np.sign(a[:, None] - a[None, :]) * np.sign(b[:, None] - b[None, :])
    n = len(a)
    return float(s[np.triu_indices(n, 1)].sum() / (n * (n - 1) / 2))


def figures(f, q):
    d = q - f
    return {"mean": float(np.abs(d).mean()), "max": float(np.abs(d).max()),
            "float_sd": float(f.std()), "scaled_mean": float(np.abs(d).mean() / f.std()),
            "shift": float(d.mean()), "scatter": float(np.abs(d - d.mean()).mean()),
            "kendall_tau": tau(f, q)}


def judged(float_s, int8_s):
    return {k: figures(c.score(float_s, v), c.score(int8_s, v)) for k, v in ev.items()}


report = {"cpu_note": "ONNX Runtime's int8 kernels on the CPU that ran this (AVX-512 VNNI here)",
          "pinned_vs_own_dequantized": judged(float_session(c.dequantized_start(base_dir + "/model.onnx")),
                                               c.session(open(base_dir + "/model.onnx", "rb").read())),
          "exports_vs_fold_float": {}}
for key in keys:
    report["exports_vs_fold_float"][key] = judged(
        float_session(c.load_fold(f"{fdir}/{key}.bin")),
        c.session(open(f"{fdir}/{key}.int8/model.onnx", "rb").read()))
    print(key, file=sys.stderr, flush=True)
print(json.dumps(report, indent=1))
