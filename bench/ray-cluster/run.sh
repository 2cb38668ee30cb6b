#!/usr/bin/env bash
# Records/s of cold bi-encoder work (bge-small-en-v1.5 int8, one text per run) on the first N
# SciFact abstracts: a local `ranklab beir --configs dense` (all cores) beside the same run with
# --cluster on a Ray cluster on this machine with 1 and with 2 worker nodes of one CPU each (the
# head node has no CPU, so it runs no shard). Each run starts from an empty vector cache (models
# shared read-only from the default cache). Not in CI. Usage:
#   bench/ray-cluster/run.sh [N=400] [SHARD=64]   (RANKLAB=binary, RANKLAB_RAY_PYTHON=python with ray)
# Needs target/ray-venv (see harness/ray/requirements.txt) and a release build.
# The cluster is the tests' (harness/tests/ray/cluster.py: every node on 127.0.0.1 and every
# socket bound to it; `ray start` would listen on every interface), driven over a pipe: started
# with 1 worker node, then `add` for the second; closing the pipe stops it.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-400}
SHARD=${2:-64}
BIN=${RANKLAB:-$(pwd)/target/release/ranklab}
export RANKLAB_RAY_PYTHON=${RANKLAB_RAY_PYTHON:-$(pwd)/target/ray-venv/bin/python}
DATA=${RANKLAB_SHARED_DATA:-$(pwd)/../shared/data}/scifact
SRC_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/ranklab
W=$(mktemp -d /tmp/rlbXXXX)
cleanup() {
  # Closing the script's stdin stops the cluster (bounded) and removes its directory.
  if [ -n "${CL_PID:-}" ]; then exec {CL_IN}>&-; wait "$CL_PID" 2>/dev/null || true; fi
  rm -rf "$W"
}
trap cleanup EXIT

mkdir -p "$W/coll/qrels"
head -n "$N" "$DATA/corpus.jsonl" > "$W/coll/corpus.jsonl"
python3 - "$W/coll" <<'PY'
import json, sys
d = sys.argv[1]
ids = [json.loads(l)["_id"] for l in open(f"{d}/corpus.jsonl")]
with open(f"{d}/queries.jsonl", "w") as q, open(f"{d}/qrels/test.tsv", "w") as r:
    r.write("query-id\tcorpus-id\tscore\n")
    q.write(json.dumps({"_id": "q1", "text": "cerebral white matter"}) + "\n")
    r.write(f"q1\t{ids[0]}\t1\n")
PY
fresh() { rm -rf "$W/cache"; mkdir -p "$W/cache"; ln -s "$SRC_CACHE/models" "$W/cache/models"; ln -s "$SRC_CACHE/runtime" "$W/cache/runtime"; }
run() { # label, extra args
  fresh
  local t0 t1
  t0=$(date +%s.%N)
  RANKLAB_CACHE="$W/cache" "$BIN" beir "$W/coll" --configs dense --depth 10 --reports "$W/reports" "${@:2}" >/dev/null 2>"$W/err"
  t1=$(date +%s.%N)
  local secs; secs=$(python3 -c "print(round($t1-$t0,1))")
  echo "$1: $((N + 1)) texts, wall ${secs} s, $(python3 -c "print(round(($N+1)/($t1-$t0),1))") texts/s (whole command); $(grep -o '[0-9]* shards ([0-9]* retried), .*' "$W/err" || echo 'local')"
}
run "local (all cores)"
mkfifo "$W/cl.in" "$W/cl.out"
"${RANKLAB_RAY_PYTHON}" harness/tests/ray/cluster.py "$W/ray" 1 <"$W/cl.in" >"$W/cl.out" 2>"$W/cluster.log" &
CL_PID=$!
exec {CL_IN}>"$W/cl.in"
exec {CL_OUT}<"$W/cl.out"
reply() { local l; while IFS= read -r l <&"$CL_OUT"; do case "$l" in '{'*) echo "$l"; return 0;; esac; done; cat "$W/cluster.log" >&2; exit 1; }
ADDR=$(reply | python3 -c 'import json,sys; print(json.load(sys.stdin)["client"])')
run "cluster, 1 worker node x 1 CPU" --cluster "$ADDR" --shard-records "$SHARD"
echo add >&"$CL_IN"; reply >/dev/null
run "cluster, 2 worker nodes x 1 CPU" --cluster "$ADDR" --shard-records "$SHARD"
run "cluster, 2 worker nodes x 1 CPU, shards of 8" --cluster "$ADDR" --shard-records 8
