#!/usr/bin/env bash
# Judged pairs per second (issue 29's speed goal): `ranklab judge --llm smollm2-135m-instruct`
# (SmolLM2 in-process, candle) against `ranklab judge --llm-endpoint` to the same GGUF behind
# llama-cpp-python's server, both on 2 threads, on the same pairs, each with a cold grade cache,
# one after the other on the same machine. The pairs: the first QUERIES (default 30) judged
# queries of a BEIR collection (default SciFact), their qrels pairs and the unjudged top-1
# document of BM25 (ranklab beir --configs bm25, ranklab pool --depth 1), graded with
# --also-judged. Prints each side's pairs/s and their ratio (in-process / server).
# Run by `just judge-speed`; needs target/release/ranklab, the model store and the llama venv.
set -euo pipefail
R="$PWD/target/release/ranklab"
PY="${RANKLAB_LLAMA_PYTHON:-$PWD/target/llama-venv/bin/python}"
DATA="$(cd "${1:-../shared/data/scifact}" && pwd)"
QUERIES="${QUERIES:-30}"
STORE="${RANKLAB_CACHE:-$HOME/.cache/ranklab}"
tmp="$(mktemp -d)"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
name="$(basename "$DATA")"
sub="$tmp/$name"
mkdir -p "$sub/qrels"
ln -s "$DATA/corpus.jsonl" "$sub/corpus.jsonl"
python3 - "$DATA" "$sub" "$QUERIES" <<'PY'
import json, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(f"{src}/qrels/test.tsv").read().splitlines()
keep, out = [], [lines[0]]
for l in lines[1:]:
    q = l.split("\t")[0]
    if q not in keep:
        if len(keep) == n:
            continue
        keep.append(q)
    out.append(l)
open(f"{dst}/qrels/test.tsv", "w").write("\n".join(out) + "\n")
with open(f"{dst}/queries.jsonl", "w") as f:
    for l in open(f"{src}/queries.jsonl"):
        if json.loads(l)["_id"] in keep:
            f.write(l)
PY
cache() {
  mkdir -p "$tmp/$1"
  ln -s "$STORE/models" "$tmp/$1/models"
  ln -s "$STORE/runtime" "$tmp/$1/runtime"
  echo "$tmp/$1"
}
RANKLAB_CACHE="$(cache runs)" "$R" beir "$sub" --configs bm25 --reports "$tmp/reports" > /dev/null
"$R" pool "$sub" --reports "$tmp/reports" --depth 1 > /dev/null
gguf="$(ls "$STORE"/models/smollm2-135m-instruct/*.gguf)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
"$PY" -m llama_cpp.server --model "$gguf" --host 127.0.0.1 --port "$port" --n_threads 2 \
  --n_ctx 4096 --logits_all true --model_alias smollm2 --verbose false > "$tmp/server.log" 2>&1 &
server=$!
until curl -sf "http://127.0.0.1:$port/v1/models" > /dev/null; do
  kill -0 "$server" 2>/dev/null || { cat "$tmp/server.log"; exit 1; }
  sleep 0.5
done
curl -sf "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
  -d '{"prompt": "hi", "max_tokens": 1}' > /dev/null
rate() { # label, cache, judge args...
  local label="$1" c="$2"; shift 2
  rm -f "$tmp/reports/$name/judgments.yaml"
  local t0 t1 n
  t0=$(date +%s.%N)
  RANKLAB_CACHE="$c" "$R" judge "$sub" --reports "$tmp/reports" --also-judged "$@" 2> "$tmp/err" > /dev/null
  t1=$(date +%s.%N)
  n=$(grep -o '[0-9]* pairs graded' "$tmp/err" | grep -o '^[0-9]*')
  python3 -c "print(f'$label: {$n} pairs in {$t1-$t0:.1f} s, {$n/($t1-$t0):.3f} pairs/s')" >&2
  python3 -c "print($n/($t1-$t0))"
}
inproc=$(rate "in-process (candle, 2 threads)" "$(cache a)" --llm smollm2-135m-instruct)
server_rate=$(rate "llama.cpp server (2 threads)" "$(cache b)" --llm-endpoint "http://127.0.0.1:$port/v1" --llm-model smollm2 --llm-top-logprobs 100)
python3 -c "print(f'in-process / server = {$inproc/$server_rate:.2f}')"
