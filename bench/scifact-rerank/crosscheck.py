"""Checks ranklab's SciFact cross-encoder scores against an independent computation, and runs
the same model with float activations on a sample.

    python crosscheck.py verify  MODEL_DIR DATA_DIR REPORT_DIR [N]
        N random (query, document) rows of runs/bm25+ce.trec rescored with onnxruntime +
        HF tokenizers (same passage: title, newline, abstract; 512 tokens, longest-first
        truncation, no padding, one pair per run). Prints the largest absolute difference.
    python crosscheck.py float-activations MODEL_DIR DATA_DIR REPORT_DIR QUERIES WIDTH
        Rewrites the int8 graph so every MatMulInteger runs in float on the dequantized
        weights (no dynamic activation quantization), reranks BM25's top WIDTH of the first
        QUERIES queries with it and with ranklab's int8 scores, and prints nDCG@10 of BM25, int8
        and float-activation reranks on those queries.
"""
import collections
import json
import math
import random
import sys

import numpy as np
import onnx
import onnxruntime as ort
import tokenizers
from onnx import helper
from onnx import numpy_helper as nh


def load(data_dir, report_dir):
    corpus = {}
    for line in open(f"{data_dir}/corpus.jsonl"):
        d = json.loads(line)
        corpus[d["_id"]] = d["title"] + "\n" + d["text"]
    queries = {}
    for line in open(f"{data_dir}/queries.jsonl"):
        d = json.loads(line)
        queries[d["_id"]] = d["text"]
    qrels = collections.defaultdict(dict)
    for line in open(f"{report_dir}/qrels.txt"):
        q, _, doc, grade = line.split()
        qrels[q][doc] = int(grade)
    return corpus, queries, qrels


def read_run(path):
    run = collections.defaultdict(list)
    for line in open(path):
        q, _, doc, _, score, _ = line.split()
        run[q].append((doc, float(score)))
    return run


def session(model_bytes_or_path):
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(model_bytes_or_path, opts, providers=["CPUExecutionProvider"])


def scorer(model_dir, model):
    tok = tokenizers.Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(512)
    sess = session(model)

    def score(query, passage):
        e = tok.encode(query, passage)
        feed = {
            "input_ids": np.array([e.ids], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids], dtype=np.int64),
        }
        return float(sess.run(None, feed)[0][0][0])

    return score


def float_activation_model(path):
    """The int8 model with DynamicQuantizeLinear -> MatMulInteger replaced by a float MatMul on
    the dequantized weights; the following Cast and scale Mul still apply, so the MatMul's
    result is divided by the activation scale first."""
    m = onnx.load(path)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    consts = {n.output[0]: nh.to_array(n.attribute[0].t) for n in g.node if n.op_type == "Constant"}
    producer = {o: n for n in g.node for o in n.output}

    def array(name):
        return nh.to_array(inits[name]) if name in inits else consts[name]

    nodes, extra = [], []
    for k, n in enumerate(g.node):
        if n.op_type != "MatMulInteger":
            nodes.append(n)
            continue
        dql = producer[n.input[0]]
        assert dql.op_type == "DynamicQuantizeLinear", dql.op_type
        w = array(n.input[1]).astype(np.float32)
        if len(n.input) > 3 and n.input[3]:
            w = w - array(n.input[3]).astype(np.float32)
        extra.append(nh.from_array(w, f"float_w_{k}"))
        nodes.append(helper.make_node("MatMul", [dql.input[0], f"float_w_{k}"], [f"float_mm_{k}"]))
        nodes.append(helper.make_node("Div", [f"float_mm_{k}", dql.output[1]], [n.output[0]]))
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(extra)
    del g.value_info[:]
    return m.SerializeToString()


def ndcg10(ranking, rel):
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def main():
    mode, model_dir, data_dir, report_dir = sys.argv[1:5]
    corpus, queries, qrels = load(data_dir, report_dir)
    ce = read_run(f"{report_dir}/runs/bm25+ce.trec")
    if mode == "verify":
        n = int(sys.argv[5]) if len(sys.argv) > 5 else 100
        rows = [(q, d, s) for q, lst in sorted(ce.items()) for d, s in lst]
        random.seed(7)
        score = scorer(model_dir, f"{model_dir}/model.onnx")
        worst = max(abs(score(queries[q], corpus[d]) - s) for q, d, s in random.sample(rows, n))
        print(f"max |independent - ranklab| over {n} random pairs: {worst:.2e}")
    elif mode == "float-activations":
        nq, width = int(sys.argv[5]), int(sys.argv[6])
        bm25 = read_run(f"{report_dir}/runs/bm25.trec")
        score = scorer(model_dir, float_activation_model(f"{model_dir}/model.onnx"))
        sums = collections.Counter()
        qs = list(bm25)[:nq]
        for q in qs:
            docs = [d for d, _ in bm25[q]]
            head, rest = docs[:width], docs[width:]
            int8 = dict(ce[q])
            flt = {d: score(queries[q], corpus[d]) for d in head}
            sums["bm25"] += ndcg10(docs, qrels[q])
            sums["int8"] += ndcg10(sorted(head, key=lambda d: -int8[d]) + rest, qrels[q])
            sums["float-activations"] += ndcg10(sorted(head, key=lambda d: -flt[d]) + rest, qrels[q])
        print(f"{len(qs)} queries, BM25 top {width} reranked; nDCG@10:",
              ", ".join(f"{k} {v / len(qs):.4f}" for k, v in sums.items()))
    else:
        sys.exit(f"unknown mode {mode!r}; see the docstring")


if __name__ == "__main__":
    main()
