#!/usr/bin/env python3
"""Where a per-column int8 export's error comes from: the weights' rounding alone against the
activations' quantization, for the starting weights and for a fold model.

    python decompose.py PAIRS.jsonl FOLD.bin BASE_DIR > decompose-<fold>.json

For each model (the pinned file dequantized, the fold): |logit - float| max and mean of
(1) the all-float graph over the weights rounded per column and dequantized (weight rounding
alone, activations float) and (2) the per-column int8 graph with float embedding tables
(weight rounding and the activations' dynamic uint8 quantization). Same venv, pairs and
oracle as candidates.py.
"""
import json
import sys

import numpy as np

import candidates as c


def rounded(w):
    out = dict(w)
    for k, v in w.items():
        if k.endswith(".weight") and v.ndim == 2 and "embeddings" not in k:
            s, q = c.sym_int8(np.ascontiguousarray(v.T), 0)
            out[k] = (q.astype(np.float32) * s).T.astype(np.float32)
    return out


def main():
    pairs_path, fold_path, base_dir = sys.argv[1:4]
    base = base_dir + "/model.onnx"
    tok = c.Tokenizer.from_file(base_dir + "/tokenizer.json")
    tok.enable_truncation(512, strategy="longest_first")
    tok.no_padding()
    encs = [tok.encode(p["query"], p["passage"]) for p in map(json.loads, open(pairs_path))]
    report = {"fold_model": fold_path.split("/")[-1], "pairs": len(encs)}
    for name, w in [("start", c.dequantized_start(base)), ("fold", c.load_fold(fold_path))]:
        f = c.score(c.session(c.build(base, w, lambda p: "float", True)), encs)
        r = c.score(c.session(c.build(base, rounded(w), lambda p: "float", True)), encs)
        a = c.score(c.session(c.build(base, w, lambda p: "channel", True)), encs)
        report[name] = {
            "weights_rounded_per_column_float_activations": c.err(r, f),
            "per_column_int8_tables_float": c.err(a, f),
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
