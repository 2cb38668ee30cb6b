"""An independent ColBERT scorer for engine/tests/colbert_python.rs.

Same model file as ranklab (answerai-colbert-small-v1 int8 ONNX, the 384-d hidden states: the
package's graph has no projection layer), run by Python onnxruntime and the `tokenizers`
package, the recipe written from the model card / colbert-ai, not from ranklab's code:
query `[CLS] [unused0] q [SEP]` + `[MASK]` to 32 (attention 0 on the masks, their vectors kept),
passage `[CLS] [unused1] p [SEP]` cut to 300 tokens, the passage's punctuation vectors dropped,
rows L2-normalised, score = sum over query rows of the max dot product over passage rows.
Each text is run alone (batch 1) on a single-threaded session.

usage: reference.py MODEL_DIR PAIRS_JSON OUT_JSON
PAIRS_JSON: [{"query": str, "passage": str}, ...]; OUT_JSON: [{"score", "query_ids", "passage_ids"}, ...]
"""
import json
import string
import sys

import numpy as np
import onnxruntime
from tokenizers import Tokenizer

model_dir, pairs_path, out_path = sys.argv[1:4]

opts = onnxruntime.SessionOptions()
opts.intra_op_num_threads = 1
opts.inter_op_num_threads = 1
session = onnxruntime.InferenceSession(
    f"{model_dir}/model.onnx", opts, providers=["CPUExecutionProvider"]
)
tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
tok.no_padding()
tok.no_truncation()

vocab = tok.get_vocab()
cls_id, sep_id, mask_id = vocab["[CLS]"], vocab["[SEP]"], vocab["[MASK]"]
q_marker, d_marker = vocab["[unused0]"], vocab["[unused1]"]
punctuation = {vocab[c] for c in string.punctuation if c in vocab}
QUERY_LEN, DOC_LEN = 32, 300


def hidden(ids, mask):
    ids = np.asarray([ids], dtype=np.int64)
    feed = {
        "input_ids": ids,
        "attention_mask": np.asarray([mask], dtype=np.int64),
        "token_type_ids": np.zeros_like(ids),
    }
    return session.run(["last_hidden_state"], feed)[0][0]


def normalise(m):
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def query_ids(text):
    body = tok.encode(text, add_special_tokens=False).ids[: QUERY_LEN - 3]
    ids = [cls_id, q_marker, *body, sep_id]
    mask = [1] * len(ids) + [0] * (QUERY_LEN - len(ids))
    ids = ids + [mask_id] * (QUERY_LEN - len(ids))
    return ids, mask


def passage_ids(text):
    body = tok.encode(text, add_special_tokens=False).ids[: DOC_LEN - 3]
    return [cls_id, d_marker, *body, sep_id]


pairs = json.load(open(pairs_path))
queries, passages = {}, {}
out = []
for p in pairs:
    q, d = p["query"], p["passage"]
    if q not in queries:
        ids, mask = query_ids(q)
        queries[q] = (ids, normalise(hidden(ids, mask)))
    if d not in passages:
        ids = passage_ids(d)
        h = hidden(ids, [1] * len(ids))
        keep = np.array([i not in punctuation for i in ids])
        passages[d] = (ids, normalise(h[keep]))
    qi, qv = queries[q]
    di, dv = passages[d]
    score = float((qv @ dv.T).max(axis=1).sum())
    out.append({"score": score, "query_ids": qi, "passage_ids": di})
json.dump(out, open(out_path, "w"))
