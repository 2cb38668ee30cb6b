#!/usr/bin/env python3
"""GPTQ variants for the per-column int8 export of a fold model (issue 46 item 2, second round):
more and in-domain calibration, activation order, clipped scales, a few matrices kept float.

    python gptq.py PAIRS.jsonl CALIB[,CALIB2..] FOLD.bin BASE_DIR [ROUNDS] > gptq-<fold>-<calib>.json

PAIRS: the 48 evaluation pairs of run-int8.sh (pairs.py SCIFACT 3). CALIB: one or more JSON-lines
files of {"query", "passage"} pairs, concatenated in the order given (docs/speed.md names the
sets used: SciFact pairs that share no query and no abstract with PAIRS, docir training pairs).
Same venv and oracle as candidates.py and smoothquant.py (the graph with every matrix and table
float). Every variant is exporter 2's graph (per-column scales, uint8 tables, nodes unchanged)
with other integers and scales, except `+float-K` (env FLOAT_K=2,4; written but NOT yet run:
untested), which replaces the K matrices whose rounding alone costs most (measured on PAIRS'
first 16 pairs against the float graph) by float MatMul.

Variants (env VARIANTS=a,b limits them):
- gptq:            smoothquant.py's (input channels in order, scale max|w|/127 per column);
- gptq-act:        GPTQ with input channels in descending diag(H) order (ties: channel index);
- clip:            round to nearest with a clipped scale per column, c * max|w|/127, c from CLIP
                   minimizing the column's output error (w - q s)^T H (w - q s) on the calibration;
- clip-w:          the same search with H = I: the column's own squared rounding error, no calibration;
- clip-diag:       the same search with H's diagonal only (per input channel sum of x^2);
- gptq-clip:       the clipped scales, then GPTQ with input channels in order;
- gptq-act-clip:   the clipped scales, then GPTQ in activation order;
- sq-vo+gptq-act-clip: smoothquant.py's sq-vo (alpha env ALPHA, default 0.25) first.
H = sum over calibration tokens of x x^T of the matrix's float input (float32 products summed in
float64), 1% damping, blocks of 128. ROUNDS > 0: pairs/s of the pinned L-12 and every variant,
one single-threaded session each, the order rotated each round.
"""
import json
import os
import sys
import time

import numpy as np
from onnx import numpy_helper

import candidates as c
import smoothquant as sq

ONLY = os.environ.get("VARIANTS")
ALPHA = float(os.environ.get("ALPHA", "0.25"))
CLIP = [1.0, 0.97, 0.94, 0.91, 0.88, 0.85, 0.82, 0.79, 0.75, 0.7]
FLOAT_K = [int(k) for k in os.environ.get("FLOAT_K", "").split(",") if k]
DAMP = 0.01
BLOCK = 128


def feed_of(e):
    return {
        "input_ids": np.array([e.ids], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask], dtype=np.int64),
        "token_type_ids": np.array([e.type_ids], dtype=np.int64),
    }


def calibrate(base, w, encs):
    """Per param: (channel max |X_j|, H = sum X^T X) over every token of `encs`."""
    model, names = sq.float_graph_with_inputs(base, w)
    sess = c.session(model)
    xs = sorted(set(names.values()))
    amax = {x: 0.0 for x in xs}
    hess = {x: 0.0 for x in xs}
    for e in encs:
        for x, v in zip(xs, sess.run(xs, feed_of(e))):
            v = v.reshape(-1, v.shape[-1]).astype(np.float32)
            amax[x] = np.maximum(amax[x], np.abs(v).max(axis=0))
            hess[x] = hess[x] + (v.T @ v).astype(np.float64)
    return {p: (amax[x], hess[x]) for p, x in names.items()}


def clipped_scales(wt, h):
    """Per output row of wt [out, in]: the scale c*max|w|/127 (c in CLIP) of least output error."""
    absmax = np.abs(wt).max(axis=1).astype(np.float64)
    h32 = None if h is None else h.astype(np.float32)
    best_err, best = None, None
    for cc in CLIP:
        s = (cc * 2.0 * absmax / 254.0).astype(np.float32)
        s = np.where(s > 0, s, np.float32(1.0)).astype(np.float32)
        q = np.clip(np.round(wt / s[:, None]), -127, 127)
        r = (wt - q * s[:, None]).astype(np.float32)
        # summed left to right (cumsum), the order a plain loop in the Rust port reproduces
        e = np.cumsum((r if h32 is None else r @ h32).astype(np.float64) * r, axis=1)[:, -1]
        if best is None:
            best_err, best = e, s
        else:
            take = e < best_err
            best_err = np.where(take, e, best_err)
            best = np.where(take, s, best)
    return best.astype(np.float32)


def gptq(wt, hess, scale, act_order):
    """Integers for wt [out, in] with per-row `scale`: GPTQ over the input axis."""
    n = wt.shape[1]
    perm = np.argsort(-np.diag(hess), kind="stable") if act_order else np.arange(n)
    wq = wt.astype(np.float64)[:, perm].copy()
    h = hess[np.ix_(perm, perm)].copy()
    dead = np.diag(h) == 0
    h[dead, dead] = 1.0
    wq[:, dead] = 0.0
    h[np.diag_indices_from(h)] += DAMP * np.mean(np.diag(h))
    hinv = np.linalg.cholesky(np.linalg.inv(h)).T
    s64 = scale.astype(np.float64)
    q = np.zeros(wq.shape, dtype=np.int8)
    for i1 in range(0, n, BLOCK):
        i2 = min(i1 + BLOCK, n)
        w1 = wq[:, i1:i2].copy()
        e1 = np.zeros_like(w1)
        h1 = hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            col = w1[:, i]
            qi = np.clip(np.round((col / s64).astype(np.float32)), -127, 127)
            q[:, i1 + i] = qi.astype(np.int8)
            err = (col - qi * s64) / h1[i, i]
            w1[:, i:] -= np.outer(err, h1[i, i:])
            e1[:, i] = err
        wq[:, i2:] -= e1 @ hinv[i1:i2, i2:]
    out = np.zeros_like(q)
    out[:, perm] = q
    return out


def quantize(wt, h, how):
    """(scale [out], q [out, in]) of one torch-layout matrix by `how`."""
    if how == "clip-w":
        scale = clipped_scales(wt, None)
    elif how == "clip-diag":
        scale = clipped_scales(wt, np.diag(np.diag(h)))
    elif "clip" in how:
        scale = clipped_scales(wt, h)
    else:
        scale, _ = c.sym_int8(np.ascontiguousarray(wt.T), 0)
    if "gptq" in how:
        return scale, gptq(wt, h, scale, "act" in how)
    return scale, np.clip(np.round(wt / scale[:, None]), -127, 127).astype(np.int8)


def export(base, w, calib, how, svec=None, floats=()):
    """Exporter-2 graph of `w` with every matrix quantized by `how`; `floats` params float."""
    floats = set(floats)
    mode = lambda p: "float" if p in floats else "channel"
    m = c.onnx.load_from_string(c.build(base, w, mode, False))
    inits = {i.name: i for i in m.graph.initializer}
    for n in c.matmul_nodes(m.graph):
        param = c.parameter_of(n.name)
        wbase = n.input[1][: -len("_quantized")]
        h = calib[param][1]
        if svec and param in svec:
            h = h / np.outer(svec[param], svec[param]).astype(np.float64)
        scale, q = quantize(w[param + ".weight"], h, how)
        inits[wbase + "_quantized"].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(q.T), wbase + "_quantized"))
        inits[wbase + "_scale"].CopyFrom(numpy_helper.from_array(scale, wbase + "_scale"))
    return m.SerializeToString()


def sensitivity(base, w, calib, how, encs, oracle):
    """Per matrix: mean |logit - float| on `encs` with that matrix alone quantized by `how`."""
    params = [p for _, ps in sq.groups() for p in ps]
    out = {}
    for p in params:
        model = export_one(base, w, calib, how, p)
        out[p] = c.err(c.score(c.session(model), encs), oracle)["mean"]
        print("sens", p, out[p], file=sys.stderr, flush=True)
    return out


def export_one(base, w, calib, how, param):
    """The float graph with only `param` quantized (by `how`)."""
    mode = lambda p: "channel" if p == param else "float"
    m = c.onnx.load_from_string(c.build(base, w, mode, True))
    inits = {i.name: i for i in m.graph.initializer}
    for n in c.matmul_nodes(m.graph):
        wbase = n.input[1][: -len("_quantized")]
        scale, q = quantize(w[param + ".weight"], calib[param][1], how)
        inits[wbase + "_quantized"].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(q.T), wbase + "_quantized"))
        inits[wbase + "_scale"].CopyFrom(numpy_helper.from_array(scale, wbase + "_scale"))
    return m.SerializeToString()


def variants(w, calib):
    """name -> (weights, how, svec, floats)."""
    out = {
        "gptq": (w, "gptq", None),
        "gptq-act": (w, "gptq-act", None),
        "clip": (w, "clip", None),
        "clip-w": (w, "clip-w", None),
        "clip-diag": (w, "clip-diag", None),
        "gptq-clip": (w, "gptq-clip", None),
        "gptq-act-clip": (w, "gptq-act-clip", None),
    }
    if not ONLY or "sq-vo+gptq-act-clip" in ONLY.split(","):
        sq.ALPHA = ALPHA
        ws, svec = sq.smooth(w, calib, "vo")
        out["sq-vo+gptq-act-clip"] = (ws, "gptq-act-clip", svec)
    return {k: v for k, v in out.items() if not ONLY or k in ONLY.split(",")}


def main():
    pairs_path, calib_paths, fold_path, base_dir = sys.argv[1:5]
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    base = base_dir + "/model.onnx"
    tok = c.Tokenizer.from_file(base_dir + "/tokenizer.json")
    tok.enable_truncation(512, strategy="longest_first")
    tok.no_padding()
    enc = lambda path: [tok.encode(p["query"], p["passage"]) for p in map(json.loads, open(path))]
    encs = enc(pairs_path)
    cal = [e for path in calib_paths.split(",") for e in enc(path)]
    w = c.dequantized_start(base) if fold_path == "start" else c.load_fold(fold_path)
    oracle = c.score(c.session(c.build(base, w, lambda p: "float", True)), encs)
    t = time.perf_counter()
    calib = calibrate(base, w, cal)
    report = {"fold_model": fold_path.split("/")[-1], "pairs": len(encs), "calibration": calib_paths,
              "calibration_pairs": len(cal), "calibration_tokens": sum(len(e.ids) for e in cal),
              "calibrate_s": time.perf_counter() - t, "alpha": ALPHA, "clip_grid": CLIP,
              "gptq_damp": DAMP, "gptq_block": BLOCK, "variants": {}}
    print("calibrated", report["calibrate_s"], file=sys.stderr, flush=True)
    sessions = {"pinned": c.session(open(base, "rb").read())}
    for name, (ws, how, svec) in variants(w, calib).items():
        t = time.perf_counter()
        model = export(base, ws, calib, how, svec)
        built = time.perf_counter() - t
        sessions[name] = c.session(model)
        report["variants"][name] = {"vs_float": c.err(c.score(sessions[name], encs), oracle),
                                    "build_s": built, "bytes": len(model)}
        print(name, report["variants"][name], file=sys.stderr, flush=True)
    if FLOAT_K:
        how = os.environ.get("FLOAT_HOW", "gptq-act-clip")
        sens = sensitivity(base, w, calib, how, encs[:16], oracle[:16])
        report["sensitivity_" + how] = sens
        ranked = sorted(sens, key=lambda p: (-sens[p], p))
        for k in FLOAT_K:
            name = f"{how}+float-{k}"
            model = export(base, w, calib, how, None, ranked[:k])
            sessions[name] = c.session(model)
            report["variants"][name] = {"vs_float": c.err(c.score(sessions[name], encs), oracle),
                                        "float": ranked[:k], "bytes": len(model)}
            print(name, report["variants"][name], file=sys.stderr, flush=True)
    if rounds:
        report["pairs_per_s"] = speeds(sessions, encs, rounds)
    print(json.dumps(report, indent=1))


def speeds(sessions, encs, rounds):
    names = list(sessions)
    out = {n: [] for n in names}
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[: rnd % len(names)]
        for n in order:
            t = time.perf_counter()
            c.score(sessions[n], encs)
            out[n].append(len(encs) / (time.perf_counter() - t))
    return out


if __name__ == "__main__":
    main()
