#!/usr/bin/env python3
"""An int8 export as ranklab wrote it (`<cache>/finetuned/<key>.int8/model.onnx`) against its
fold model's float logits, on evaluation pairs: the oracle of robust.py (the pinned graph with
every matrix and table float, ONNX Runtime 1.32.0, one single-threaded session), the same
mean / max / signed mean. Same venv as robust.py.

    python eval_export.py FOLD.bin BASE_DIR EXPORT.onnx EVAL[,EVAL2..]
    python eval_export.py own BASE_DIR EXPORT.onnx EVAL[,EVAL2..]

`own` for FOLD.bin: the export against its own dequantized weights (its integers times their
scales, its tables dequantized, its float initializers), as the pinned file's own error is
measured (EXPORT = BASE_DIR/model.onnx gives that yardstick); raw snapped-scifact.json.
"""
import json
import sys

import candidates as c, smoothquant as sq, robust as r
fold, base_dir, export, evals = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
tok = c.Tokenizer.from_file(base_dir + "/tokenizer.json"); tok.enable_truncation(512, strategy="longest_first"); tok.no_padding()
enc = lambda p: [tok.encode(x["query"], x["passage"]) for x in map(json.loads, open(p))]
ev = {p.split("/")[-1].rsplit(".",1)[0]: enc(p) for p in evals}
w = c.dequantized_start(export) if fold == "own" else c.load_fold(fold)
fm, _ = sq.float_graph_with_inputs(base_dir + "/model.onnx", w)
fs = c.session(fm)
orc = {k: c.score(fs, v) for k, v in ev.items()}
es = c.session(open(export, "rb").read())
print(json.dumps(r.judged({k: c.score(es, v) for k, v in ev.items()}, orc)))
