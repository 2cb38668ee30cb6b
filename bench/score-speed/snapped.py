#!/usr/bin/env python3
"""An int8 export against its own dequantized weights: the export's integers times their
scales, its tables dequantized and its float initializers (the corrected biases) as the float
model, the oracle machinery of eval_export.py. Asks whether defining a fold model as its
export's weights (snapping the fine-tuned weights to the export's grid) would leave only the
activations' quantization error, as the pinned file's own 0.086 does. Same venv as robust.py.

    python snapped.py BASE_DIR EXPORT.onnx EVAL[,EVAL2..]     # EXPORT = BASE_DIR/model.onnx: the pinned file
"""
import json
import sys

import candidates as c, smoothquant as sq, robust as r
base_dir, export, evals = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
tok = c.Tokenizer.from_file(base_dir + "/tokenizer.json"); tok.enable_truncation(512, strategy="longest_first"); tok.no_padding()
enc = lambda p: [tok.encode(x["query"], x["passage"]) for x in map(json.loads, open(p))]
ev = {p.split("/")[-1].rsplit(".", 1)[0]: enc(p) for p in evals}
w = c.dequantized_start(export)
fm, _ = sq.float_graph_with_inputs(base_dir + "/model.onnx", w)
fs = c.session(fm)
orc = {k: c.score(fs, v) for k, v in ev.items()}
es = c.session(open(export, "rb").read())
print(json.dumps(r.judged({k: c.score(es, v) for k, v in ev.items()}, orc)))
