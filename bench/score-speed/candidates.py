#!/usr/bin/env python3
"""Candidate int8 exports of a fold model, side by side: logit error against the fold model in
float and pairs/s, all through ONNX Runtime, on the same pairs as run-int8.sh.

    python candidates.py PAIRS.jsonl FOLD.bin BASE_DIR [ROUNDS] > candidates-<fold>.json

Needs onnx, onnxruntime 1.32.0, numpy, tokenizers (a venv of its own; docs/speed.md). Every
variant is the pinned L-12 graph (BASE_DIR/model.onnx) rewritten with the fold's weights:

- tensor:     today's export (per-tensor symmetric int8 scales re-derived from the fold's weights);
- channel:    one scale per output column (the scale initializer a [N] vector, broadcast by the
              graph's output Mul; zero point stays a scalar 0);
- tail-k:     channel, with the last k encoder layers' matrices, the pooler and the classifier as
              float MatMul nodes over float initializers (k = 0: pooler and classifier only);
- +emb:       the three embedding tables as float initializers instead of uint8 + DequantizeLinear;
- float:      every matrix and table float: the oracle (checked against the pinned int8 graph's
              own error, as the Rust example checks it against candle).

Error: |variant - float| max and mean over the pairs. Speed: every variant scored in turn on
one single-threaded session, batch 1 (as ranklab scores), the order rotated each round; pairs/s
per round, medians, and the ratio to the pinned L-12 in the same round.
"""
import json
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper
from tokenizers import Tokenizer


def pair_encoder(base_dir):
    """The base model's tokenizer as the scorer uses it: a JSON-lines file of {"query",
    "passage"} pairs -> their encodings."""
    tok = Tokenizer.from_file(base_dir + "/tokenizer.json")
    tok.enable_truncation(512, strategy="longest_first")
    tok.no_padding()
    return lambda path: [tok.encode(x["query"], x["passage"]) for x in map(json.loads, open(path))]


def set_name(path):
    """eval48 for .../eval48.jsonl."""
    return path.split("/")[-1].rsplit(".", 1)[0]


def load_fold(path):
    with open(path, "rb") as f:
        f.readline()
        header = json.loads(f.readline())
        body = f.read()
    out, off = {}, 0
    for name, dims in header["tensors"]:
        n = int(np.prod(dims))
        out[name] = np.frombuffer(body, "<f4", n, off).reshape(dims)
        off += 4 * n
    return out


def parameter_of(node_name):
    parts = [p for p in node_name.split("/") if p]
    keep = []
    for p in parts:
        if p.startswith("MatMul") or p.startswith("Gemm"):
            break
        keep.append(p)
    return ".".join(keep)


def sym_int8(w, axis=None):
    """Symmetric int8 as ONNX Runtime's quantizer: scale = max|w| / 127 (per tensor or per column)."""
    absmax = np.abs(w).max() if axis is None else np.abs(w).max(axis=0)
    scale = (2.0 * absmax.astype(np.float64) / 254.0).astype(np.float32)
    scale = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)
    q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return scale, q


class Rewriter:
    def __init__(self, base):
        self.m = onnx.load(base)
        self.g = self.m.graph
        self.inits = {i.name: i for i in self.g.initializer}

    def set_init(self, name, arr):
        t = numpy_helper.from_array(np.asarray(arr), name)
        if name in self.inits:
            self.inits[name].CopyFrom(t)
        else:
            self.g.initializer.append(t)
            self.inits[name] = self.g.initializer[-1]

    def consumers(self, name):
        return [n for n in self.g.node if name in n.input]

    def producer(self, name):
        return next((n for n in self.g.node if name in n.output), None)


def matmul_nodes(g):
    return [n for n in g.node if n.op_type == "MatMulInteger" and n.input[1].endswith("_quantized")]


def build(base, weights, layer_mode, emb_float):
    """layer_mode(param) -> 'tensor' | 'channel' | 'float'."""
    r = Rewriter(base)
    g = r.g
    drop = set()
    new_nodes = []
    for n in matmul_nodes(g):
        param = parameter_of(n.name)
        w = np.ascontiguousarray(weights[param + ".weight"].T)  # [in, out]
        wbase = n.input[1][: -len("_quantized")]
        mode = layer_mode(param)
        if mode in ("tensor", "channel"):
            s, q = sym_int8(w, None if mode == "tensor" else 0)
            r.set_init(wbase + "_quantized", q)
            r.set_init(wbase + "_scale", s)
            continue
        # float: MatMul(x, W) replaces MatMulInteger -> Cast -> Mul(output scale)
        dql = r.producer(n.input[0])
        x = dql.input[0]
        cast = r.consumers(n.output[0])[0]
        mul = r.consumers(cast.output[0])[0]
        scales_mul = r.producer(mul.input[1])
        fname = param + ".weight_float"
        r.set_init(fname, w)
        new_nodes.append((mul, helper.make_node("MatMul", [x, fname], [mul.output[0]], name=n.name + "_float")))
        drop.update([n.name, cast.name, scales_mul.name])
        for init in (wbase + "_quantized", wbase + "_scale", wbase + "_zero_point"):
            drop_init(r, init)
    if emb_float:
        for table in ("word", "position", "token_type"):
            name = f"bert.embeddings.{table}_embeddings.weight"
            gather = next(n for n in g.node if n.op_type == "Gather" and n.input[0] == name + "_quantized")
            dq = r.consumers(gather.output[0])[0]
            r.set_init(name + "_float", weights[name])
            gather.input[0] = name + "_float"
            gather.output[0] = dq.output[0]
            drop.add(dq.name)
            for init in dq.input[1:] + [name + "_quantized"]:
                drop_init(r, init)
    else:
        for table in ("word", "position", "token_type"):
            name = f"bert.embeddings.{table}_embeddings.weight"
            w = weights[name]
            lo, hi = min(w.min(), 0.0), max(w.max(), 0.0)
            scale = np.float32((float(hi) - float(lo)) / 255.0)
            zp = np.uint8(np.clip(np.round(-float(lo) / float(scale)), 0, 255))
            q = np.clip(np.round(w / scale) + np.float32(zp), 0, 255).astype(np.uint8)
            r.set_init(name + "_quantized", q)
            r.set_init(name + "_scale", scale)
            r.set_init(name + "_zero_point", zp)
    # floats: LayerNorm, biases
    for init in list(g.initializer):
        if init.data_type == onnx.TensorProto.FLOAT and init.name in weights and not init.name.endswith("_scale"):
            r.set_init(init.name, weights[init.name])
    nodes = []
    repl = {old.name: new for old, new in new_nodes}
    for n in g.node:
        if n.name in repl:
            nodes.append(repl[n.name])
        elif n.name not in drop:
            nodes.append(n)
    # drop dead DynamicQuantizeLinear nodes (all their consumers floated)
    used = {i for n in nodes for i in n.input} | {o.name for o in g.output}
    nodes = [n for n in nodes if n.op_type != "DynamicQuantizeLinear" or any(o in used for o in n.output)]
    used = {i for n in nodes for i in n.input}
    nodes = [n for n in nodes if n.op_type != "Mul" or not n.name.endswith("_quant_scales_mul") or n.output[0] in used]
    copies = []
    for n in nodes:
        c = onnx.NodeProto()
        c.CopyFrom(n)
        copies.append(c)
    del g.node[:]
    g.node.extend(copies)
    return r.m.SerializeToString()


def drop_init(r, name):
    if name in r.inits:
        r.g.initializer.remove(r.inits.pop(name))


def dequantized_start(base):
    m = onnx.load(base)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    w = {}
    for n in matmul_nodes(m.graph):
        b = n.input[1][: -len("_quantized")]
        q = inits[b + "_quantized"].astype(np.float32)
        w[parameter_of(n.name) + ".weight"] = (q * inits[b + "_scale"]).T.astype(np.float32)
    for table in ("word", "position", "token_type"):
        name = f"bert.embeddings.{table}_embeddings.weight"
        q = inits[name + "_quantized"].astype(np.float32) - inits[name + "_zero_point"].astype(np.float32)
        w[name] = (q * inits[name + "_scale"]).astype(np.float32)
    for k, v in inits.items():
        if v.dtype == np.float32 and (k.startswith("bert.") or k.startswith("classifier.")) and not k.endswith("_scale"):
            w[k] = v
    return w


def session(model_bytes):
    o = ort.SessionOptions()
    o.intra_op_num_threads = 1
    o.inter_op_num_threads = 1
    return ort.InferenceSession(model_bytes, o, providers=["CPUExecutionProvider"])


def score(sess, encs):
    out = []
    for e in encs:
        feed = {
            "input_ids": np.array([e.ids], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids], dtype=np.int64),
        }
        out.append(float(sess.run(["logits"], feed)[0][0][0]))
    return np.array(out)


def err(a, b):
    d = np.abs(a - b)
    return {"max": float(d.max()), "mean": float(d.mean())}


def main():
    pairs_path, fold_path, base_dir = sys.argv[1:4]
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    only = sys.argv[5].split(",") if len(sys.argv) > 5 else None
    base = base_dir + "/model.onnx"
    tok = Tokenizer.from_file(base_dir + "/tokenizer.json")
    tok.enable_truncation(512, strategy="longest_first")
    tok.no_padding()
    pairs = [json.loads(line) for line in open(pairs_path)]
    encs = [tok.encode(p["query"], p["passage"]) for p in pairs]
    fold = load_fold(fold_path)
    start = dequantized_start(base)
    every = lambda mode: (lambda p: mode)

    def tail(k, inner="channel"):
        def mode(p):
            if p.startswith("bert.pooler") or p.startswith("classifier"):
                return "float"
            if p.startswith("bert.encoder.layer."):
                return "float" if int(p.split(".")[3]) >= 12 - k else inner
            return inner
        return mode

    variants = {
        "tensor": (every("tensor"), False),
        "channel": (every("channel"), False),
        "channel+emb": (every("channel"), True),
    }
    variants["tail-0"] = (tail(0), False)
    for k in (0, 1, 2, 3, 4, 6):
        variants[f"tail-{k}+emb"] = (tail(k), True)
    variants["tensor,tail-2+emb"] = (tail(2, "tensor"), True)
    if only:
        variants = {k: v for k, v in variants.items() if k in only}
    float_fold = score(session(build(base, fold, every("float"), True)), encs)
    float_start = score(session(build(base, start, every("float"), True)), encs)
    pinned = session(open(base, "rb").read())
    pinned_scores = score(pinned, encs)
    sessions = {"pinned": pinned}
    report = {
        "pairs": len(encs),
        "fold_model": fold_path.split("/")[-1],
        "pinned_vs_own_float": err(pinned_scores, float_start),
        "fold_float_vs_start_float": err(float_fold, float_start),
        "variants": {},
    }
    for name, (mode, emb) in variants.items():
        b = build(base, fold, mode, emb)
        sessions[name] = session(b)
        s = score(sessions[name], encs)
        report["variants"][name] = {
            "vs_fold_float": err(s, float_fold),
            "vs_pinned_int8": err(s, pinned_scores),
            "bytes": len(b),
        }
    names = list(sessions)
    speeds = {n: [] for n in names}
    for rnd in range(rounds):
        order = names[rnd % len(names):] + names[: rnd % len(names)]
        if rnd % 2:
            order = order[::-1]
        for n in order:
            t = time.perf_counter()
            score(sessions[n], encs)
            speeds[n].append(len(encs) / (time.perf_counter() - t))
    for n in names:
        ratios = [a / b for a, b in zip(speeds[n], speeds["pinned"])]
        entry = {"pairs_per_s": speeds[n], "median_pairs_per_s": float(np.median(speeds[n])),
                 "median_ratio_to_pinned": float(np.median(ratios))}
        if n == "pinned":
            report["pinned"] = entry
        else:
            report["variants"][n].update(entry)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
