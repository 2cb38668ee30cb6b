#!/usr/bin/env python3
"""SmoothQuant-style scaling and GPTQ-style rounding for a per-column int8 export (issue 46
item 2): logit error against the float model on the 48 evaluation pairs, calibrated on other
SciFact pairs.

    python smoothquant.py PAIRS.jsonl CALIB.jsonl FOLD.bin|start BASE_DIR [ROUNDS] > smoothquant-<fold>.json

PAIRS: the 48 pairs of run-int8.sh (pairs.py SCIFACT 3). CALIB: pairs that share no query and no
abstract with them (lines 49-80 of pairs.py SCIFACT 5: queries 4 and 5, abstracts 48-79 of the
stride). FOLD `start`: the pinned model's own dequantized weights (does smoothing cut its 0.086?).
Same venv and oracle as candidates.py (every matrix and table float). All int8 variants keep the
embedding tables uint8 as exporter 2 does. Variants:

- channel:       exporter 2 (one scale per output column, round to nearest);
- sq-vo:         smoothing only where it folds into initializers: the attention-output matmul's
                 input channel j is the V projection's output column j (attention is linear in V),
                 so W_o row j *= s_j and V's weight column j and bias j /= s_j. Graph nodes unchanged.
- sq-all:        sq-vo, plus every other matmul's input smoothed through one new `Mul` node in front
                 of its DynamicQuantizeLinear (Q/K/V share one; FFN-in; FFN-out; pooler; classifier).
                 BERT is post-LN: a LayerNorm's output is also the residual branch, so its 1/s
                 cannot fold into gamma and beta; FFN-out's input is GELU's output (nonlinear).
                 Adds 12 * 3 + 2 = 38 Mul nodes (elementwise over [T, 768] or [T, 3072]).
- gptq:          channel, with each matrix's integers chosen by GPTQ (H = X^T X of its float input on
                 the calibration pairs, 1% damping, blocks of 128, the same per-column scales);
- sq-vo+gptq, sq-all+gptq: both.
s_j = max|X_j|^a / max|W_j|^(1-a), a = 0.5 (env ALPHA), over the matmuls sharing that input; env
VARIANTS=a,b limits the variants (the report then holds only those).
ROUNDS > 0: pairs/s of the pinned L-12, channel and sq-all, one single-threaded session each,
the order rotated each round.
"""
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

import candidates as c

ALPHA = float(os.environ.get("ALPHA", "0.5"))
ONLY = os.environ.get("VARIANTS")
DAMP = 0.01
BLOCK = 128


def groups():
    """(input key, [params consuming it]) for every quantized matmul input."""
    out = []
    for layer in range(12):
        p = f"bert.encoder.layer.{layer}."
        out.append((p + "qkv", [p + "attention.self." + x for x in ("query", "key", "value")]))
        out.append((p + "ctx", [p + "attention.output.dense"]))
        out.append((p + "ffn_in", [p + "intermediate.dense"]))
        out.append((p + "ffn_out", [p + "output.dense"]))
    out.append(("pooler", ["bert.pooler.dense"]))
    out.append(("classifier", ["classifier"]))
    return out


def float_graph_with_inputs(base, w):
    """The all-float graph of `w` with every matmul's input as an extra output: {param: name}."""
    m = onnx.load_from_string(c.build(base, w, lambda p: "float", True))
    names = {}
    for n in m.graph.node:
        if n.op_type == "MatMul" and n.name.endswith("_float"):
            names[c.parameter_of(n.name[: -len("_float")])] = n.input[0]
    for x in sorted(set(names.values())):
        m.graph.output.append(helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, None))
    return m.SerializeToString(), names


def calibrate(base, w, encs):
    """Per param: channel max |X_j| and H = sum X^T X (f64) over every token of `encs`."""
    model, names = float_graph_with_inputs(base, w)
    sess = c.session(model)
    xs = sorted(set(names.values()))
    amax = {x: None for x in xs}
    hess = {x: None for x in xs}
    for e in encs:
        feed = {
            "input_ids": np.array([e.ids], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids], dtype=np.int64),
        }
        for x, v in zip(xs, sess.run(xs, feed)):
            v = v.reshape(-1, v.shape[-1]).astype(np.float64)
            a = np.abs(v).max(axis=0)
            h = v.T @ v
            amax[x] = a if amax[x] is None else np.maximum(amax[x], a)
            hess[x] = h if hess[x] is None else hess[x] + h
    return {p: (amax[x], hess[x]) for p, x in names.items()}, names


def smooth(w, calib, which):
    """Scaled copy of torch-layout weights ([out, in]) and {param: s} of the smoothed inputs."""
    w = {k: np.array(v, dtype=np.float32, copy=True) for k, v in w.items()}
    svec = {}
    for key, params in groups():
        if key.endswith("ctx") or which == "all":
            amax = calib[params[0]][0]
            wmax = np.max([np.abs(w[p + ".weight"]).max(axis=0) for p in params], axis=0)
            s = np.power(np.maximum(amax, 1e-5), ALPHA) / np.power(np.maximum(wmax, 1e-5), 1 - ALPHA)
            s = s.astype(np.float32)
            for p in params:
                w[p + ".weight"] = (w[p + ".weight"] * s[None, :]).astype(np.float32)
                svec[p] = s
            if key.endswith("ctx"):
                v = key[: -len("ctx")] + "attention.self.value"
                w[v + ".weight"] = (w[v + ".weight"] / s[:, None]).astype(np.float32)
                w[v + ".bias"] = (w[v + ".bias"] / s).astype(np.float32)
    return w, svec


def gptq(wt, hess, scale=None, damp=None, quotient=np.float32):
    """Integers for a torch-layout matrix [out, in]: GPTQ over the input axis, per-row scales
    (`scale`, or exporter 2's max|w|/127); each quotient w/scale rounded as `quotient` (float32
    here, float64 for gptq4.py); `damp` defaults to DAMP."""
    if scale is None:
        scale, _ = c.sym_int8(np.ascontiguousarray(wt.T), 0)  # one per output row, as exporter 2
    damp = DAMP if damp is None else damp
    scale64 = scale.astype(np.float64)
    wq = wt.astype(np.float64).copy()
    h = hess.copy()
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    wq[:, dead] = 0.0
    h[np.diag_indices_from(h)] += damp * np.mean(np.diag(h))
    hinv = np.linalg.cholesky(np.linalg.inv(h)).T  # upper
    q = np.zeros(wq.shape, dtype=np.int8)
    n = wq.shape[1]
    for i1 in range(0, n, BLOCK):
        i2 = min(i1 + BLOCK, n)
        w1 = wq[:, i1:i2].copy()
        e1 = np.zeros_like(w1)
        h1 = hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            col = w1[:, i]
            qi = np.clip(np.round((col / scale64).astype(quotient)), -127, 127)
            q[:, i1 + i] = qi.astype(np.int8)
            err = (col - qi * scale64) / h1[i, i]
            w1[:, i:] -= np.outer(err, h1[i, i:])
            e1[:, i] = err
        wq[:, i2:] -= e1 @ hinv[i1:i2, i2:]
    return scale, q


def export(base, w, svec, calib, use_gptq):
    """Exporter-2 graph of `w` (already smoothed), Mul nodes for `svec`'s non-folded inputs."""
    m = onnx.load_from_string(c.build(base, w, lambda p: "channel", False))
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    dql_of = {}
    for n in c.matmul_nodes(g):
        param = c.parameter_of(n.name)
        wbase = n.input[1][: -len("_quantized")]
        if use_gptq:
            s = svec.get(param)
            h = calib[param][1]
            if s is not None:
                h = h / np.outer(s, s).astype(np.float64)
            scale, q = gptq(w[param + ".weight"], h)
            inits[wbase + "_quantized"].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(q.T), wbase + "_quantized"))
            inits[wbase + "_scale"].CopyFrom(numpy_helper.from_array(scale, wbase + "_scale"))
        if param in svec and not param.endswith("attention.output.dense"):
            dql_of[n.input[0]] = svec[param]
    nodes = []
    for n in g.node:
        if n.op_type == "DynamicQuantizeLinear" and n.output[0] in dql_of:
            inv = (np.float32(1.0) / dql_of[n.output[0]]).astype(np.float32)
            name = n.name + "_smooth"
            g.initializer.append(numpy_helper.from_array(inv, name + "_inv"))
            nodes.append(helper.make_node("Mul", [n.input[0], name + "_inv"], [name + "_out"], name=name))
            n.input[0] = name + "_out"
        nodes.append(n)
    copies = []
    for n in nodes:
        k = onnx.NodeProto()
        k.CopyFrom(n)
        copies.append(k)
    del g.node[:]
    g.node.extend(copies)
    return m.SerializeToString()


def main():
    pairs_path, calib_path, fold_path, base_dir = sys.argv[1:5]
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    base = base_dir + "/model.onnx"
    tok = c.Tokenizer.from_file(base_dir + "/tokenizer.json")
    tok.enable_truncation(512, strategy="longest_first")
    tok.no_padding()
    enc = lambda path: [tok.encode(p["query"], p["passage"]) for p in map(json.loads, open(path))]
    encs, cal = enc(pairs_path), enc(calib_path)
    w = c.dequantized_start(base) if fold_path == "start" else c.load_fold(fold_path)
    oracle = c.score(c.session(c.build(base, w, lambda p: "float", True)), encs)
    calib, _ = calibrate(base, w, cal)
    report = {"fold_model": fold_path.split("/")[-1], "pairs": len(encs), "calibration_pairs": len(cal),
              "alpha": ALPHA, "gptq_damp": DAMP, "gptq_block": BLOCK, "variants": {}}
    pinned = c.session(open(base, "rb").read())
    report["pinned_int8_vs_this_float"] = c.err(c.score(pinned, encs), oracle)
    sessions = {"pinned": pinned}
    for name, which, use_gptq in [("channel", None, False), ("sq-vo", "vo", False), ("sq-all", "all", False),
                                  ("gptq", None, True), ("sq-vo+gptq", "vo", True), ("sq-all+gptq", "all", True)]:
        if ONLY and name not in ONLY.split(","):
            continue
        t = time.perf_counter()
        ws, svec = smooth(w, calib, which) if which else (w, {})
        model = export(base, ws, svec, calib, use_gptq)
        built = time.perf_counter() - t
        sess = c.session(model)
        report["variants"][name] = {"vs_float": c.err(c.score(sess, encs), oracle), "build_s": built,
                                    "bytes": len(model)}
        print(name, report["variants"][name], file=sys.stderr, flush=True)
        if name in ("channel", "sq-all"):
            sessions[name] = sess
    speeds = {n: [] for n in sessions}
    names = list(sessions)
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[: rnd % len(names)]
        for n in order:
            t = time.perf_counter()
            c.score(sessions[n], encs)
            speeds[n].append(len(encs) / (time.perf_counter() - t))
    if rounds:
        report["pairs_per_s"] = speeds
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
