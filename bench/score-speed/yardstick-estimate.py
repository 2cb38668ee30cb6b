#!/usr/bin/env python3
"""The pinned int8 L-12 against float weights it could have been quantized from.

No registry package holding the float cross-encoder/ms-marco-MiniLM-L-12-v2 was found, so
its "fair" error (int8 model vs the float original) cannot be measured. This estimates it:
a synthetic original is the pinned file's dequantized weights plus a uniform rounding residue
u ~ U(-1/2, 1/2) step on every int8 matrix entry and every uint8 embedding-table entry (the
entries at the ends of the range, which set the scale, are left on it), so that ONNX Runtime's
quantizer (per-tensor symmetric int8 for the matrices, asymmetric uint8 for the tables) maps
the synthetic original back onto the pinned file's exact integers and scales. Biases and
LayerNorm weights are the pinned file's own floats (they were never quantized).

    python yardstick-estimate.py PAIRS.jsonl MODEL_DIR [DRAWS] > yardstick-estimate.json

Uses bench/score-speed/candidates.py (read, not changed) for the graph rewrite (every matrix
and table float: the same oracle that gives the pinned model's 0.0863 / 0.4249), tokenization
(truncation 512, longest_first) and scoring (batch 1, one thread).
"""
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper
from tokenizers import Tokenizer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import candidates as c  # noqa: E402

TABLES = ("word", "position", "token_type")


def synthetic_original(base, start, rng):
    m = onnx.load(base)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    w = dict(start)
    check = {"matrices": 0, "entries_off_after_requantize": 0, "scale_rel_diff_max": 0.0, "table_entries_off": 0}
    for n in c.matmul_nodes(m.graph):
        b = n.input[1][: -len("_quantized")]
        q = inits[b + "_quantized"].astype(np.float32)
        s = np.float32(inits[b + "_scale"])
        u = rng.uniform(-0.5, 0.5, q.shape).astype(np.float32)
        u[np.abs(q) == 127] = 0.0
        wf = ((q + u) * s).astype(np.float32)  # [in, out]
        s2, q2 = c.sym_int8(wf)  # ONNX Runtime's per-tensor symmetric rule
        check["matrices"] += 1
        check["entries_off_after_requantize"] += int((q2 != q.astype(np.int8)).sum())
        check["scale_rel_diff_max"] = max(check["scale_rel_diff_max"], float(abs(s2 - s) / s))
        w[c.parameter_of(n.name) + ".weight"] = np.ascontiguousarray(wf.T)
    for t in TABLES:
        name = f"bert.embeddings.{t}_embeddings.weight"
        q = inits[name + "_quantized"].astype(np.float32)
        zp = np.float32(inits[name + "_zero_point"])
        s = np.float32(inits[name + "_scale"])
        u = rng.uniform(-0.5, 0.5, q.shape).astype(np.float32)
        u[(q == 0) | (q == 255)] = 0.0
        wf = ((q - zp + u) * s).astype(np.float32)
        qq = np.clip(np.round(wf / s) + zp, 0, 255).astype(np.uint8)
        check["table_entries_off"] += int((qq != q.astype(np.uint8)).sum())
        w[name] = wf
    return w, check


def main():
    pairs_path, model_dir = sys.argv[1:3]
    draws = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    base = model_dir + "/model.onnx"
    tok = Tokenizer.from_file(model_dir + "/tokenizer.json")
    tok.enable_truncation(512, strategy="longest_first")
    tok.no_padding()
    pairs = [json.loads(line) for line in open(pairs_path)]
    encs = [tok.encode(p["query"], p["passage"]) for p in pairs]
    every_float = lambda p: "float"  # noqa: E731
    t0 = time.time()
    start = c.dequantized_start(base)
    pinned = c.score(c.session(open(base, "rb").read()), encs)
    own_float = c.score(c.session(c.build(base, start, every_float, True)), encs)
    report = {
        "pairs": len(encs),
        "tokens_max": max(len(e.ids) for e in encs),
        "pinned_vs_own_dequantized_float": c.err(pinned, own_float),
        "draws": [],
    }
    rng = np.random.default_rng(46)
    for d in range(draws):
        w, check = synthetic_original(base, start, rng)
        syn = c.score(c.session(c.build(base, w, every_float, True)), encs)
        report["draws"].append({
            "draw": d,
            "pinned_int8_vs_synthetic_original": c.err(pinned, syn),
            "synthetic_original_vs_own_dequantized_float": c.err(syn, own_float),
            "requantize_check": check,
        })
        print(json.dumps(report["draws"][-1]), file=sys.stderr, flush=True)
    means = [r["pinned_int8_vs_synthetic_original"]["mean"] for r in report["draws"]]
    maxes = [r["pinned_int8_vs_synthetic_original"]["max"] for r in report["draws"]]
    report["summary"] = {
        "pinned_int8_vs_synthetic_original_mean": {"min": min(means), "median": float(np.median(means)), "max": max(means)},
        "pinned_int8_vs_synthetic_original_max": {"min": min(maxes), "median": float(np.median(maxes)), "max": max(maxes)},
    }
    report["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
