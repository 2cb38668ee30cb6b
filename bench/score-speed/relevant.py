"""Relevant SciFact pairs for robust.py's rel48: (query, abstract) pairs that the test qrels judge
relevant, from the test queries after the first SKIP (queries.jsonl order, as pairs.py), leaving
out every abstract of USED (the pairs.py file the other sets come from), until N pairs.

Usage: python3 bench/score-speed/relevant.py SCIFACT_DIR USED.jsonl [SKIP N] > rel48.jsonl
(docs/speed.md: SKIP 33, N 48, USED = pairs.py SCIFACT 33.)
"""
import json
import sys

root, used_path = sys.argv[1], sys.argv[2]
skip = int(sys.argv[3]) if len(sys.argv) > 3 else 33
n = int(sys.argv[4]) if len(sys.argv) > 4 else 48
with open(f"{root}/qrels/test.tsv") as f:
    lines = f.read().splitlines()[1:]
rel = {}
for line in lines:
    q, d, _ = line.split("\t")
    rel.setdefault(q, []).append(d)
with open(f"{root}/queries.jsonl") as f:
    queries = [q for q in map(json.loads, f) if q["_id"] in rel]
with open(f"{root}/corpus.jsonl") as f:
    docs = {d["_id"]: d for d in map(json.loads, f)}
with open(used_path) as f:
    used = {json.loads(line)["passage"] for line in f}
out = []
for q in queries[skip:]:
    for d in rel[q["_id"]]:
        passage = (docs[d]["title"] + " " + docs[d]["text"]).strip()
        if passage not in used and len(out) < n:
            out.append({"query": q["text"], "passage": passage})
    if len(out) >= n:
        break
for o in out:
    print(json.dumps(o))
