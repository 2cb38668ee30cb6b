#!/usr/bin/env python3
"""Empirical bias correction through the quantized activations (a prototype, not ranklab's
exporter): an export's biases moved, one stage at a time in the graph's order (sq.groups():
q/k/v, attention output, FFN in, FFN out per layer, then pooler and classifier), by that
stage's mean output under ONNX Runtime's int8 graph (with every earlier stage corrected) minus
the float fold model's, over the tokens of the calibration pairs; then the export against the
float fold model, before and after each pass. (Correcting every stage at once from one pass
diverged: 0.15 -> 0.43 -> 0.31 -> 2.10 mean on eval48 over three passes.) Same venv as robust.py.

    python ebc.py BASE_DIR FOLD.bin EXPORT.onnx CAL.jsonl EVAL[,EVAL2..] PASSES > OUT.json
"""
import json, sys, time
import numpy as np, onnx
from onnx import helper, numpy_helper
import candidates as c, smoothquant as sq, robust as r

base_dir, fold, export, cal, evals, passes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5].split(","), int(sys.argv[6])
base = base_dir + "/model.onnx"
tok = c.Tokenizer.from_file(base_dir + "/tokenizer.json"); tok.enable_truncation(512, strategy="longest_first"); tok.no_padding()
enc = lambda p: [tok.encode(x["query"], x["passage"]) for x in map(json.loads, open(p))]
ev = {p.split("/")[-1].rsplit(".", 1)[0]: enc(p) for p in evals}
cal_encs = enc(cal)

E = onnx.load(export)
g = E.graph
cons = {}
for n in g.node:
    for i in n.input:
        cons.setdefault(i, []).append(n)
T = {}  # param -> linear output tensor (before the bias)
for n in c.matmul_nodes(g):
    cast = cons[n.output[0]][0]
    mul = cons[cast.output[0]][0]
    T[c.parameter_of(n.name)] = mul.output[0]
inits = {i.name: i for i in g.initializer}
assert all(p + ".bias" in inits for p in T), [p for p in T if p + ".bias" not in inits]

def with_outputs(model, names):
    m = onnx.ModelProto(); m.CopyFrom(model)
    for x in names:
        m.graph.output.append(helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, None))
    return m.SerializeToString()

def means(model_bytes, encs, ps=None):
    s = c.session(model_bytes)
    ps = sorted(T) if ps is None else ps
    names = [T[p] for p in ps]
    sums, counts = {}, {}
    for e in encs:
        feed = {"input_ids": np.array([e.ids], dtype=np.int64), "attention_mask": np.array([e.attention_mask], dtype=np.int64), "token_type_ids": np.array([e.type_ids], dtype=np.int64)}
        for p, v in zip(ps, s.run(names, feed)):
            v = v.reshape(-1, v.shape[-1]).astype(np.float64)
            sums[p] = sums.get(p, 0) + v.sum(axis=0); counts[p] = counts.get(p, 0) + v.shape[0]
    return {p: sums[p] / counts[p] for p in ps}

w = c.load_fold(fold)
F = onnx.load_from_string(c.build(base, w, lambda p: "float", True))
t = time.perf_counter()
mf = means(with_outputs(F, [T[p] for p in sorted(T)]), cal_encs)
fs = c.session(F.SerializeToString())
orc = {k: c.score(fs, v) for k, v in ev.items()}
report = {"fold": fold.split("/")[-1], "calibration": cal.split("/")[-1], "passes": {}}
def judge(model, label):
    es = c.session(model.SerializeToString())
    report["passes"][label] = r.judged({k: c.score(es, v) for k, v in ev.items()}, orc)
    print(label, json.dumps(report["passes"][label]), file=sys.stderr, flush=True)
judge(E, "export")
stages = [ps for _, ps in sq.groups()]
for k in range(passes):
    for ps in stages:
        me = means(with_outputs(E, [T[p] for p in ps]), cal_encs, ps)
        for p in ps:
            b = numpy_helper.to_array(inits[p + ".bias"]).astype(np.float64)
            nb = (b - (me[p] - mf[p])).astype(np.float32)
            inits[p + ".bias"].CopyFrom(numpy_helper.from_array(nb, p + ".bias"))
    judge(E, f"sequential{k+1}")
report["seconds"] = time.perf_counter() - t
print(json.dumps(report))
