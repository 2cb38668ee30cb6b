#!/usr/bin/env bash
# Cold model work on a small SciFact subset, ranklab against Python onnxruntime in the same
# hyperfine call (interleaved by hyperfine's rounds), never touching the shared model cache's
# embeddings or scores. Not part of CI.
#
#   bench/warm-runs/cold.sh
#
# The subset: SciFact's first 300 documents, the 21 test queries judged on them, their qrels.
# - embedding: `ranklab beir SUBSET --configs dense` with an empty embedding cache (300
#   documents + 21 queries = 321 texts through bge-small-en-v1.5 int8, batch 1, one
#   single-threaded session per core), against cold_onnx.py embed in two processes;
# - cross-encoding: `ranklab beir SUBSET --configs bm25,bm25+ce@15` with an empty score cache
#   (21 x 15 = 315 pairs through ms-marco-MiniLM-L-12-v2 int8, batch 1), against cold_onnx.py
#   score in two processes on the same pairs (taken from ranklab's bm25 run).
# Both sides are whole processes (model sessions loaded, texts tokenized, one run per text);
# ranklab's also reads the subset and writes its report (a few ms warm). A temporary
# RANKLAB_CACHE holds copies of the models and runtime; hyperfine's --prepare empties its
# embeddings/ and scores/ before every ranklab run. cold_onnx.py check then counts how many of
# the 315 Python logits have the bits of ranklab's scores.
# Environment: RANKLAB (default target/release/ranklab), VENV (default target/onnx-venv),
# RUNS (default 3), RANKLAB_SHARED_DATA.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
rl="${RANKLAB:-$root/target/release/ranklab}"
venv="${VENV:-$root/target/onnx-venv}"
runs="${RUNS:-3}"
data="${RANKLAB_SHARED_DATA:-$root/../shared/data}/scifact"
shared_cache="${XDG_CACHE_HOME:-$HOME/.cache}/ranklab"
work="$(mktemp -d /tmp/ranklab-cold.XXXXXX)"
trap 'rm -rf "$work"' EXIT
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q onnxruntime tokenizers numpy
fi
py="$venv/bin/python"
sub="$work/scifact300"
mkdir -p "$sub/qrels" "$work/cache"
cp -r "$shared_cache/models" "$shared_cache/runtime" "$work/cache/"
"$py" - "$data" "$sub" <<'PY'
import json, sys
src, dst = sys.argv[1:3]
lines = open(f"{src}/corpus.jsonl").readlines()[:300]
ids = {json.loads(l)["_id"] for l in lines}
open(f"{dst}/corpus.jsonl", "w").writelines(lines)
q = open(f"{src}/qrels/test.tsv").readlines()
kept = [l for l in q[1:] if l.split("\t")[1] in ids]
open(f"{dst}/qrels/test.tsv", "w").writelines([q[0]] + kept)
qids = {l.split("\t")[0] for l in kept}
qs = [l for l in open(f"{src}/queries.jsonl") if json.loads(l)["_id"] in qids]
open(f"{dst}/queries.jsonl", "w").writelines(qs)
docs = [json.loads(l) for l in lines]
instr = "Represent this sentence for searching relevant passages: "
with open(f"{dst}/../embed.jsonl", "w") as f:
    for d in docs:
        f.write(json.dumps({"text": d["title"] + "\n" + d["text"]}) + "\n")
    for l in qs:
        f.write(json.dumps({"text": instr + json.loads(l)["text"]}) + "\n")
PY
export RANKLAB_CACHE="$work/cache"
bge="$work/cache/models/bge-small-en-v1.5"
ce="$work/cache/models/ms-marco-MiniLM-L-12-v2"
# The pairs: ranklab's bm25 top 15 per query (a warm, model-free run), with ranklab's scores
# from one cold bm25+ce@15 run for the bit check.
if ! "$rl" beir "$sub" --configs bm25,bm25+ce@15 --reports "$work/rep" >/dev/null 2>"$work/beir.err"; then
    echo "cold.sh: ranklab beir $sub --configs bm25,bm25+ce@15 failed:" >&2
    cat "$work/beir.err" >&2
    exit 1
fi
"$py" - "$sub" "$work/rep/scifact300/runs" "$work/score.jsonl" <<'PY'
import json, sys
sub, runs, out = sys.argv[1:4]
docs = {}
for l in open(f"{sub}/corpus.jsonl"):
    d = json.loads(l)
    docs[d["_id"]] = d["title"] + "\n" + d["text"]
qs = {json.loads(l)["_id"]: json.loads(l)["text"] for l in open(f"{sub}/queries.jsonl")}
ce = {}
for l in open(f"{runs}/bm25+ce@15.trec"):
    q, _, d, rank, score, _ = l.split()
    if int(rank) <= 15:
        ce[(q, d)] = float(score)
with open(out, "w") as f:
    for (q, d), s in ce.items():
        f.write(json.dumps({"query": qs[q], "passage": docs[d], "score": s}) + "\n")
PY
echo "texts to embed: $(wc -l < "$work/embed.jsonl"); pairs to score: $(wc -l < "$work/score.jsonl")"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
hyperfine -N --runs "$runs" --export-markdown "$work/embed.md" \
    --prepare "rm -rf $work/cache/embeddings $work/cache/scores" \
    -n "ranklab dense (cold)" "$rl beir $sub --configs dense --reports $work/rep-d" \
    --prepare true \
    -n "python onnxruntime, 2 processes" \
    "sh -c '$py $here/cold_onnx.py embed $bge $work/embed.jsonl 0 2 & $py $here/cold_onnx.py embed $bge $work/embed.jsonl 1 2 & wait'"
hyperfine -N --runs "$runs" --export-markdown "$work/score.md" \
    --prepare "rm -rf $work/cache/embeddings $work/cache/scores" \
    -n "ranklab bm25+ce@15 (cold)" "$rl beir $sub --configs bm25,bm25+ce@15 --reports $work/rep-c" \
    --prepare true \
    -n "python onnxruntime, 2 processes" \
    "sh -c '$py $here/cold_onnx.py score $ce $work/score.jsonl 0 2 & $py $here/cold_onnx.py score $ce $work/score.jsonl 1 2 & wait'"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
cat "$work/embed.md" "$work/score.md"
"$py" "$here/cold_onnx.py" check "$ce" "$work/score.jsonl"
