#!/usr/bin/env bash
# Why BM25 top-100 reranked by the int8 ms-marco-MiniLM-L-12-v2 does not beat BM25 on SciFact:
# the measurements behind docs/beir.md's SciFact figures. Not part of CI.
#
#   bench/scifact-rerank/run.sh
#
# Needs `just beir` to have run (reports/beir/scifact with runs/bm25.trec and bm25+ce.trec) and
# the model in the ranklab cache. Installs onnxruntime, tokenizers, onnx and numpy in a venv
# under /tmp. Environment: VENV (default /tmp/ranklab-scifact-venv), QUERIES (default 37),
# WIDTH (default 20), RANKLAB_SHARED_DATA, RANKLAB_CACHE.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${VENV:-/tmp/ranklab-scifact-venv}"
data="${RANKLAB_SHARED_DATA:-$root/../shared/data}/scifact"
cache="${RANKLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ranklab}"
model="$cache/models/ms-marco-MiniLM-L-12-v2"
report="$root/reports/beir/scifact"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q onnxruntime tokenizers onnx numpy
fi
rl="$root/target/release/ranklab"
[ -x "$rl" ] || cargo build --release -q -p ranklab --manifest-path "$root/Cargo.toml"
echo "== shortlist width (cached scores, no model work)"
for w in 5 10 20 30 50 100; do
    printf 'bm25+ce@%-4s ' "$w"
    (cd "$root" && "$rl" beir "$data" --configs "bm25,bm25+ce,bm25+ce@$w" --reports "/tmp/ranklab-scifact-w$w" >/dev/null 2>&1)
    grep -m1 -F "| bm25+ce@$w |" "/tmp/ranklab-scifact-w$w/beir/scifact/scifact.md" | cut -d'|' -f3
done
echo "== independent recomputation"
"$venv/bin/python" "$here/crosscheck.py" verify "$model" "$data" "$report" 100
echo "== float activations"
"$venv/bin/python" "$here/crosscheck.py" float-activations "$model" "$data" "$report" "${QUERIES:-37}" "${WIDTH:-20}"
