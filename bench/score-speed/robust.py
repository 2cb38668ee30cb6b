#!/usr/bin/env python3
"""Robustness of int8 exports of a fold model across disjoint calibration sets (issue 46 item 2,
third round): every variant is exporter 2's graph (per-column int8 matrices, uint8 tables, the
pinned file's nodes), only initializer values differ, so ONNX Runtime runs the same fused
operators at the same speed. Chosen on calibration data, judged on evaluation pairs that share no
query and no abstract with any calibration set.

    python robust.py FOLD.bin|start BASE_DIR EVAL[,EVAL2..] CAL[,CAL2..] OUT.json

EVAL, CAL: JSON-lines files of {"query", "passage"} (docs/speed.md names the sets: pairs.py
SCIFACT 33 cut into eval48, calA, calB, calC, eval96). OUT is rewritten after every variant, so
a stopped run keeps what it measured. Same venv and oracle as candidates.py (the graph with every
matrix and table float, ONNX Runtime 1.32.0, one single-threaded session).

Variants (env VARIANTS=a,b limits them; env H=0 skips the Hessians and the variants needing them;
env LC=0 skips judging +lc, whose shift is still recorded beside +ac; `X+lc` in VARIANTS asks
for X+lc and X+ac; env PINNED=0 skips scoring the pinned file):
- channel:        exporter 2 (scale max|w|/127 per output column, round to nearest); no calibration;
- +bc:            bias correction of every matrix from the calibration's mean float input mu:
                  bias += (W - W_q) mu, so each matmul's output keeps its float mean (its weights'
                  rounding no longer shifts it); W_q the dequantized integers;
- +lc:            logit correction: the classifier's bias += the median over the calibration pairs
                  of (float logit - this export's logit), the shift of least mean |error| on the
                  calibration; moves every logit by the same amount, so no ranking changes;
- +ac:            the same place, an affine map instead: logit -> gain * logit + delta, least
                  squares of the float logits on this export's over the calibration pairs (the
                  classifier's per-column scale times gain; monotone, so no ranking changes either);
- ratio:          per column the pinned file's step divided by the largest whole m that keeps the
                  column inside +-127 (the starting weights exactly on the grid, only the
                  fine-tuning's change rounded); tried 2026-12-07, far worse (docs/speed.md);
- clip:           gptq.py's clipped scales (per column, chosen on the calibration's H), rounded;
- gptq-clip:      gptq.py's clipped scales then GPTQ in order (1% damping, blocks of 128);
- gptq-clip-d10:  the same with 10% damping;
- pinned+lc, pinned+ac (FOLD `start` only): the pinned file itself with the same corrections,
                  the yardstick corrected as the exports are.
"""
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

import candidates as c
import gptq as gq
import smoothquant as sq

ONLY = os.environ.get("VARIANTS")
WANT_H = os.environ.get("H", "1") != "0"


def feed_of(e):
    return gq.feed_of(e)


def calibrate(sess, names, encs, want_h):
    """Per param: (mu = mean float input over every token, H = sum x x^T or None); float logits."""
    xs = sorted(set(names.values()))
    sums = {x: 0.0 for x in xs}
    hess = {x: 0.0 for x in xs}
    count = 0
    logits = []
    for e in encs:
        out = sess.run(["logits"] + xs, feed_of(e))
        logits.append(float(out[0][0][0]))
        for x, v in zip(xs, out[1:]):
            v = v.reshape(-1, v.shape[-1]).astype(np.float32)
            sums[x] = sums[x] + v.astype(np.float64).sum(axis=0)
            if want_h:
                hess[x] = hess[x] + (v.T @ v).astype(np.float64)
        count += len(e.ids)
    stats = {p: (sums[x] / count, hess[x] if want_h else None) for p, x in names.items()}
    return stats, np.array(logits)


PINNED = {}


def pinned_matrices(base):
    """{param: (scale, q [out, in] int8)}: the pinned file's per-tensor scale and integers."""
    m = onnx.load(base)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    out = {}
    for n in c.matmul_nodes(m.graph):
        b = n.input[1][: -len("_quantized")]
        out[c.parameter_of(n.name)] = (float(inits[b + "_scale"]), inits[b + "_quantized"].T.astype(np.int32))
    return out


def ratio(wt, p):
    """Per column the pinned step divided by the largest whole m that keeps the pinned
    integers (times m) inside +-127: the starting weights sit on the grid exactly, and only the
    fine-tuning's change is rounded, on a grid m times finer than the pinned one."""
    s, _ = PINNED[p]
    w64 = wt.astype(np.float64)
    amax = np.abs(w64).max(axis=1)
    m = np.floor(127.0 / np.maximum(amax / s, 1e-12))
    # a column the fine-tuning pushed past the pinned range keeps exporter 2's scale
    scale64 = np.where(m >= 1, s / np.maximum(m, 1), amax / 127.0)
    q = np.clip(np.round(w64 / scale64[:, None]), -127, 127).astype(np.int8)
    return scale64.astype(np.float32), q


def quantized(w, stats, how):
    """{param: (scale [out] f32, q [out, in] int8)} for every matrix by `how`."""
    out = {}
    for _, params in sq.groups():
        for p in params:
            wt = w[p + ".weight"]
            h = None if stats is None else stats[p][1]
            if how == "ratio":
                out[p] = ratio(wt, p)
            elif how.startswith("gptq-clip"):
                damp = 0.1 if how == "gptq-clip-d10" else 0.01
                scale = gq.clipped_scales(wt, h)
                old, gq.DAMP = gq.DAMP, damp
                try:
                    out[p] = (scale, gq.gptq(wt, h, scale, False))
                finally:
                    gq.DAMP = old
            else:
                out[p] = gq.quantize(wt, h, how)
    return out


def bias_corrected(w, stats, qs):
    """Weights whose biases carry each matrix's rounding shift: b + (W - W_q) mu (f64, then f32)."""
    w2 = dict(w)
    for p, (scale, q) in qs.items():
        wt = w[p + ".weight"].astype(np.float64)
        dw = wt - q.astype(np.float64) * scale.astype(np.float64)[:, None]
        w2[p + ".bias"] = (w[p + ".bias"].astype(np.float64) + dw @ stats[p][0]).astype(np.float32)
    return w2


def export(base, w, qs):
    """Exporter 2's graph with `w`'s floats (biases, LayerNorms, tables) and `qs`'s matrices."""
    m = onnx.load_from_string(c.build(base, w, lambda p: "channel", False))
    inits = {i.name: i for i in m.graph.initializer}
    for n in c.matmul_nodes(m.graph):
        p = c.parameter_of(n.name)
        wbase = n.input[1][: -len("_quantized")]
        scale, q = qs[p]
        inits[wbase + "_quantized"].CopyFrom(numpy_helper.from_array(np.ascontiguousarray(q.T), wbase + "_quantized"))
        inits[wbase + "_scale"].CopyFrom(numpy_helper.from_array(scale, wbase + "_scale"))
    return m


def shifted(m, delta, gain=1.0):
    """`m` with logit -> gain * logit + delta, in the classifier's initializers (a copy): its
    per-column scale times gain, its bias times gain plus delta."""
    m2 = onnx.ModelProto()
    m2.CopyFrom(m)
    inits = {i.name: i for i in m2.graph.initializer}
    b = numpy_helper.to_array(inits["classifier.bias"]).astype(np.float64)
    new_b = (gain * b + delta).astype(np.float32)
    inits["classifier.bias"].CopyFrom(numpy_helper.from_array(new_b, "classifier.bias"))
    if gain != 1.0:
        s = numpy_helper.to_array(inits["classifier.weight_scale"]).astype(np.float64)
        new_s = (gain * s).astype(np.float32)
        inits["classifier.weight_scale"].CopyFrom(numpy_helper.from_array(new_s, "classifier.weight_scale"))
    return m2


def judged(scores, oracles):
    """Per evaluation set: mean / max |error| and the signed mean (how much is a shift)."""
    out = {}
    for name, o in oracles.items():
        s = scores[name]
        d = s - o
        out[name] = {"mean": float(np.abs(d).mean()), "max": float(np.abs(d).max()), "signed_mean": float(d.mean())}
    return out


def main():
    fold_path, base_dir, eval_paths, cal_paths, out_path = sys.argv[1:6]
    base = base_dir + "/model.onnx"
    tok = c.Tokenizer.from_file(base_dir + "/tokenizer.json")
    tok.enable_truncation(512, strategy="longest_first")
    tok.no_padding()
    enc = lambda path: [tok.encode(p["query"], p["passage"]) for p in map(json.loads, open(path))]
    label = lambda path: path.split("/")[-1].rsplit(".", 1)[0]
    evals = {label(p): enc(p) for p in eval_paths.split(",")}
    cals = {label(p): enc(p) for p in cal_paths.split(",")}
    w = c.dequantized_start(base) if fold_path == "start" else c.load_fold(fold_path)
    fmodel, names = sq.float_graph_with_inputs(base, w)
    fsess = c.session(fmodel)
    oracles = {k: c.score(fsess, v) for k, v in evals.items()}
    report = {"fold_model": fold_path.split("/")[-1], "evaluation": {k: len(v) for k, v in evals.items()},
              "calibration": {k: len(v) for k, v in cals.items()}, "hessians": WANT_H,
              "pinned_int8_vs_this_float": {}, "variants": {}}
    if os.environ.get("PINNED", "1") != "0":
        pinned = c.session(open(base, "rb").read())
        report["pinned_int8_vs_this_float"] = judged({k: c.score(pinned, v) for k, v in evals.items()}, oracles)
    want = lambda v: not ONLY or v in ONLY.split(",")

    def save():
        with open(out_path, "w") as f:
            json.dump(report, f, indent=1)

    def record(name, model, calib=None):
        t = time.perf_counter()
        sess = c.session(model.SerializeToString())
        entry = judged({k: c.score(sess, v) for k, v in evals.items()}, oracles)
        entry["score_s"] = time.perf_counter() - t
        if calib is not None:
            entry.update(calib)
        report["variants"][name] = entry
        print(name, json.dumps({k: entry[k] for k in evals}), file=sys.stderr, flush=True)
        save()
        return sess

    def with_lc(name, model, cal_encs, cal_logits):
        """`model` shifted by the median calibration error, recorded as name+lc."""
        s = c.score(c.session(model.SerializeToString()), cal_encs)
        d = cal_logits - s
        delta = float(np.median(d))
        calib = {"calibration_error_before": {"mean": float(np.abs(d).mean()), "max": float(np.abs(d).max())},
                 "shift": delta, "shift_mean": float(d.mean())}
        how, at = name.split("@")
        if os.environ.get("LC", "1") != "0":
            record(f"{how}+lc@{at}", shifted(model, delta), calib)
        # +ac: least squares float ~ gain * export + delta on the calibration pairs (f64 sums)
        n = len(s)
        sx, sy = float(np.sum(s, dtype=np.float64)), float(np.sum(cal_logits, dtype=np.float64))
        sxx = float(np.sum(s.astype(np.float64) ** 2))
        sxy = float(np.sum(s.astype(np.float64) * cal_logits.astype(np.float64)))
        gain = (n * sxy - sx * sy) / (n * sxx - sx * sx)
        delta2 = (sy - gain * sx) / n
        calib.update({"gain": gain, "delta": delta2})
        record(f"{how}+ac@{at}", shifted(model, delta2, gain), calib)

    PINNED.update(pinned_matrices(base))
    if want("channel"):
        record("channel", export(base, w, quantized(w, None, "channel")))
    if want("ratio"):
        record("ratio", export(base, w, quantized(w, None, "ratio")))
    for cname, cal_encs in cals.items():
        t = time.perf_counter()
        stats, cal_logits = calibrate(fsess, names, cal_encs, WANT_H)
        report.setdefault("calibrate_s", {})[cname] = time.perf_counter() - t
        print("calibrated", cname, report["calibrate_s"][cname], file=sys.stderr, flush=True)
        if fold_path == "start" and want("pinned+lc"):
            # the yardstick with the same correction: the pinned file, shifted on this calibration
            with_lc(f"pinned@{cname}", onnx.load(base), cal_encs, cal_logits)
        hows = ["channel", "ratio"] + (["clip", "gptq-clip", "gptq-clip-d10"] if WANT_H else [])
        for how in hows:
            if not any(want(v) for v in (how, how + "+lc", how + "+bc", how + "+bc+lc")):
                continue
            qs = quantized(w, stats, how)
            plain = export(base, w, qs)
            if how not in ("channel", "ratio") and want(how):
                record(f"{how}@{cname}", plain)
            if want(how + "+lc"):
                with_lc(f"{how}@{cname}", plain, cal_encs, cal_logits)
            if want(how + "+bc") or want(how + "+bc+lc"):
                bc = export(base, bias_corrected(w, stats, qs), qs)
                if want(how + "+bc"):
                    record(f"{how}+bc@{cname}", bc)
                if want(how + "+bc+lc"):
                    with_lc(f"{how}+bc@{cname}", bc, cal_encs, cal_logits)
    save()


if __name__ == "__main__":
    main()
