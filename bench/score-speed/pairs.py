"""Pairs for engine/examples/score_speed.rs: SciFact (query, abstract) pairs of the lengths a
SciFact rerank scores. The first N test queries (qrels/test.tsv order of queries.jsonl), each
against 16 abstracts (title and text) taken at a stride of 37 through corpus.jsonl.

Usage: python3 bench/score-speed/pairs.py SCIFACT_DIR QUERIES > PAIRS   (docs/speed.md: 3 -> 48 pairs)
"""
import json
import sys

root, n = sys.argv[1], int(sys.argv[2])
with open(f"{root}/qrels/test.tsv") as f:
    test = {line.split("\t")[0] for line in f.read().splitlines()[1:]}
with open(f"{root}/queries.jsonl") as f:
    queries = [q for q in map(json.loads, f) if q["_id"] in test][:n]
with open(f"{root}/corpus.jsonl") as f:
    docs = [json.loads(line) for line in f]
for i, q in enumerate(queries):
    for j in range(16):
        d = docs[(i * 16 + j) * 37 % len(docs)]
        passage = (d["title"] + " " + d["text"]).strip()
        print(json.dumps({"query": q["text"], "passage": passage}))
