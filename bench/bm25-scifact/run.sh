#!/usr/bin/env bash
# ranklab's BM25 retrieval of SciFact's 300 test queries (top 100) against the Python `bm25s`
# package, in the same run on the same machine. Not part of CI.
#
#   bench/bm25-scifact/run.sh
#
# ranklab side: the criterion group `bm25_scifact` of harness/benches/bm25.rs (index build; the
# 300 queries by top-k selection; the same by the previous full sort). bm25s side:
# bm25s_scifact.py three times (index; tokenize + retrieve the 300 queries, one thread).
# Installs bm25s and PyStemmer in a venv under /tmp. Environment: VENV (default
# /tmp/ranklab-bm25s-venv), RANKLAB_SHARED_DATA.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${VENV:-/tmp/ranklab-bm25s-venv}"
export RANKLAB_SHARED_DATA="${RANKLAB_SHARED_DATA:-$root/../shared/data}"
data="$RANKLAB_SHARED_DATA/scifact"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q bm25s PyStemmer
fi
echo "== ranklab (criterion, bm25_scifact)"
(cd "$root" && cargo bench -q -p ranklab --bench bm25 -- bm25_scifact 2>&1 | grep -E '^bm25_scifact|time:')
echo "== bm25s $("$venv/bin/python" -c 'import bm25s; print(bm25s.__version__)')"
for _ in 1 2 3; do "$venv/bin/python" "$here/bm25s_scifact.py" "$data"; done
