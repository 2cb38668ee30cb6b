#!/usr/bin/env bash
# Records/s of cold bi-encoder work (bge-small-en-v1.5 int8, one text per run) on the first N
# SciFact abstracts: a local `ranklab beir --configs dense` (all cores) beside the same run with
# --cluster on a Ray cluster on this machine with 1 and with 2 worker nodes of one CPU each (the
# head node has no CPU, so it runs no shard). Each run starts from an empty vector cache (models
# shared read-only from the default cache). Not in CI. Usage:
#   bench/ray-cluster/run.sh [N=400] [SHARD=64]
# Needs target/ray-venv (see harness/ray/requirements.txt) and a release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-400}
SHARD=${2:-64}
BIN=$(pwd)/target/release/ranklab
RAY=$(pwd)/target/ray-venv/bin/ray
export RANKLAB_RAY_PYTHON=$(pwd)/target/ray-venv/bin/python
DATA=${RANKLAB_SHARED_DATA:-$(pwd)/../shared/data}/scifact
SRC_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/ranklab
W=$(mktemp -d /tmp/rlbXXXX)
RAYPIDS=()
cleanup() {
  # Only this script's Ray processes: those naming its temp dir, and the client server of its GCS.
  for sig in TERM KILL; do
    for p in /proc/[0-9]*; do
      c=$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null || true)
      case "$c" in *"$W"*|*"ray.util.client.server"*":$GCS "*) kill -$sig "${p#/proc/}" 2>/dev/null || true;; esac
    done
    sleep 1
  done
  rm -rf "$W"
}
trap cleanup EXIT
fp() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
GCS=$(fp); CLIENT=$(fp)

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
node() { RAY_USAGE_STATS_ENABLED=0 "$RAY" start --temp-dir="$W/ray" --node-ip-address=127.0.0.1 \
  --object-store-memory=100000000 --disable-usage-stats --dashboard-agent-listen-port=$(fp) \
  --dashboard-agent-grpc-port=$(fp) --metrics-export-port=$(fp) --runtime-env-agent-port=$(fp) "$@" >/dev/null; }
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
node --head --num-cpus=0 --include-dashboard=false --port=$GCS --ray-client-server-port=$CLIENT
node --address=127.0.0.1:$GCS --num-cpus=1
run "cluster, 1 worker node x 1 CPU" --cluster ray://127.0.0.1:$CLIENT --shard-records "$SHARD"
node --address=127.0.0.1:$GCS --num-cpus=1
run "cluster, 2 worker nodes x 1 CPU" --cluster ray://127.0.0.1:$CLIENT --shard-records "$SHARD"
run "cluster, 2 worker nodes x 1 CPU, shards of 8" --cluster ray://127.0.0.1:$CLIENT --shard-records 8
