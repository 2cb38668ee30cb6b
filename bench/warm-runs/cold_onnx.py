"""The Python side of the cold model comparison: the same texts through the same model files
with onnxruntime + tokenizers, batch 1, one intra-op thread per process, the items split over
WORKERS processes by index (i % WORKERS == worker), as ranklab spreads them over one
single-threaded session per core.

Usage:
  python cold_onnx.py embed  MODEL_DIR ITEMS.jsonl WORKER WORKERS   # items: {"text": ...}
  python cold_onnx.py score  MODEL_DIR ITEMS.jsonl WORKER WORKERS   # items: {"query", "passage"}
  python cold_onnx.py check  MODEL_DIR ITEMS.jsonl                  # items carry ranklab's "score"

embed: CLS pooling, L2 norm (bge-small-en-v1.5's settings in ranklab's manifest); score: the
logit. Truncation at 512 tokens, no padding (batch 1). `check` scores every pair in one process
and counts the pairs whose float32 logit has the same bits as the score in ranklab's run file.
"""

import json
import sys

import numpy as np
import onnxruntime as ort
import tokenizers


def session(model_dir):
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    return ort.InferenceSession(f"{model_dir}/model.onnx", opts, providers=["CPUExecutionProvider"])


def tokenizer(model_dir):
    tok = tokenizers.Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(512)
    return tok


def feed(sess, e):
    names = {i.name for i in sess.get_inputs()}
    f = {
        "input_ids": np.array([e.ids], dtype=np.int64),
        "attention_mask": np.array([e.attention_mask], dtype=np.int64),
    }
    if "token_type_ids" in names:
        f["token_type_ids"] = np.array([e.type_ids], dtype=np.int64)
    return f


def main():
    mode, model_dir, items_path = sys.argv[1:4]
    items = [json.loads(line) for line in open(items_path)]
    if mode == "check":
        worker, workers = 0, 1
    else:
        worker, workers = int(sys.argv[4]), int(sys.argv[5])
    sess, tok = session(model_dir), tokenizer(model_dir)
    same = done = 0
    for i, item in enumerate(items):
        if i % workers != worker:
            continue
        if mode == "embed":
            out = sess.run(None, feed(sess, tok.encode(item["text"])))[0]
            v = out[0][0]
            v = v / np.linalg.norm(v)
        else:
            e = tok.encode(item["query"], item["passage"])
            logit = np.float32(sess.run(None, feed(sess, e))[0][0][0])
            if mode == "check":
                same += int(logit == np.float32(item["score"]))
        done += 1
    if mode == "check":
        print(f"{same} of {done} logits have the bits of ranklab's run file")


if __name__ == "__main__":
    main()
