#!/usr/bin/env bash
# ranklab's HTTP replay against wrk, at the same concurrency, against the same loopback endpoint
# (MiniSearch behind HTTP: examples/engines/minisearch/http.js) and the same body.
#   bench/http-throughput/run.sh [CONCURRENCY...]        (default: 1 4 16)
# Needs: wrk (apt-get install wrk), node, npm ci in examples/engines/minisearch, a release build.
# A suite of 5000 tasks with one query (so every body ranklab sends equals wrk's) is replayed with
# `ranklab run --dry-run`; ranklab prints the rate of its HTTP phase ("N requests in T s (R
# queries/s ...)"); wrk runs WRK_SECS (default 2) seconds, 1 thread at concurrency 1, else 2.
# Each round brackets every ranklab run between two wrk runs (wrk, [before, wrk,] ranklab, wrk)
# and divides its rate by the mean of the two, so a drift of the machine's speed during the round
# cancels; the wrk column is that mean. ROUNDS (default 5) rounds; the last row per concurrency is
# the median ratio; the load column is /proc/loadavg's 1-minute figure after the round.
# RANKLAB=/path/to/ranklab replays with that binary (default: target/release/ranklab).
# PIN=1 pins the engine (node) to CPU 0 and both clients (ranklab, wrk) to CPU 1 with taskset, so
# that the scheduler does not move them onto one core mid-round (much less noise on 2 cores).
# BEFORE=/path/to/another/ranklab adds that binary's rate to every round (e.g. main's build before
# a change, or a wrapper that sets RANKLAB_BENCH_HTTP_CLIENT=ureq), bracketed the same way (wrk,
# before, wrk, ranklab, wrk in odd rounds; ranklab first in even rounds, so that neither always
# runs second), its median ratio to wrk, and the two clients' ratio (before/ranklab) per round.
# With /usr/bin/time, the CPU each replay used (user + system, the whole process) per request.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
ranklab=${RANKLAB:-$root/target/release/ranklab}
work=$(mktemp -d)
server=
trap 'st=$?; { [ -n "$server" ] && kill "$server"; } 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"; exit $st' EXIT
# `exec`: $! is node itself, so the trap stops the server (not only a subshell around it).
fail() { echo "bench/http-throughput/run.sh: $*" >&2; exit 2; }
command -v wrk >/dev/null || fail "wrk is not installed (apt-get install wrk)"
[ -x "$ranklab" ] || fail "no $ranklab; build it first (cargo build --release -p ranklab)"
[ -d examples/engines/minisearch/node_modules ] ||
  fail "examples/engines/minisearch/node_modules is missing; run \`just engines\` (npm ci there) first"
engine_cpu=() client_cpu=()
if [ "${PIN:-}" = 1 ]; then
  command -v taskset >/dev/null || fail "PIN=1 needs taskset (util-linux)"
  engine_cpu=(taskset -c 0) client_cpu=(taskset -c 1)
fi
(cd examples/engines/minisearch && exec "${engine_cpu[@]}" node http.js "$root/corpora/docir" 0 >"$work/port" 2>"$work/server.err") &
server=$!
for _ in $(seq 100); do
  [ -s "$work/port" ] && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
port=$(head -n1 "$work/port" | tr -d '[:space:]')
# Never fall back to a default port: a missing port would aim both tools at port 80.
[[ "$port" =~ ^[0-9]+$ ]] ||
  fail "the MiniSearch HTTP server printed no port ($(kill -0 "$server" 2>/dev/null && echo 'still running after 10 s' || echo 'it exited')); its stderr: $(tail -n 5 "$work/server.err")"
query="implement idempotency keys on the payment capture endpoint"
mkdir -p "$work/tasks/s"
{
  printf 'suite: s\ncorpus: %s/corpora/docir\nk: 5\ntasks:\n' "$root"
  for i in $(seq -w 0 4999); do
    printf '  - id: Q%s\n    query: %s\n    expected: pay-idempotency-v2\n' "$i" "$query"
  done
} >"$work/tasks/s/suite.yaml"
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"q": "$query", "limit": 100}'
wrk.headers["Content-Type"] = "application/json"
LUA
rounds=${ROUNDS:-5}
before=${BEFORE:-}
[ -z "$before" ] || [ -x "$before" ] || fail "BEFORE=$before is not an executable"
timed=()
[ -x /usr/bin/time ] && timed=(/usr/bin/time -f '%U %S' -o "$work/cpu")
# A replay's rate (queries/s); with /usr/bin/time, its CPU microseconds per request in $work/us.
rate() {
  (cd "$work" && "${timed[@]}" "${client_cpu[@]}" "$1" run tasks/s --dry-run 2>&1 >/dev/null | sed -n 's/.*(\([0-9]*\) queries\/s.*/\1/p')
  if [ ${#timed[@]} -gt 0 ]; then tail -n1 "$work/cpu" | awk '{printf "%.0f", ($1 + $2) * 1e6 / 5000}' >"$work/us"; else echo - >"$work/us"; fi
}
if [ -n "$before" ]; then
  printf '| concurrency | round | before queries/s | ranklab queries/s | wrk requests/s | before/wrk | ratio | before/ranklab | CPU us/request before, ranklab | load (1 min) |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n'
else
  printf '| concurrency | round | ranklab queries/s | wrk requests/s | ratio | load (1 min) |\n|---:|---:|---:|---:|---:|---:|\n'
fi
wrk_secs=${WRK_SECS:-2}
wrk_rate() { "${client_cpu[@]}" wrk -t"$(( $1 < 2 ? 1 : 2 ))" -c"$1" -d"${wrk_secs}s" -s "$work/post.lua" "http://127.0.0.1:$port/search" | sed -n 's/Requests\/sec: *\([0-9.]*\)/\1/p'; }
median() { printf '%s\n' "$@" | sort -g | sed -n "$(( (rounds + 1) / 2 ))p"; }
for c in "${@:-1 4 16}"; do
  for c1 in $c; do
    cat >"$work/tasks/s/experiments.yaml" <<YAML
experiment: c$c1
configurations:
  - name: http
    engine:
      http: { url: "http://127.0.0.1:$port/search", body: '{"q": "{{query}}", "limit": {{k}}}', hits: /results, id: /id, score: /score, concurrency: $c1 }
YAML
    ratios=()
    bratios=()
    pairs=()
    for round in $(seq "$rounds"); do
      w0=$(wrk_rate "$c1")
      if [ -n "$before" ]; then
        # Odd rounds: wrk, before, wrk, ranklab, wrk; even rounds: ranklab first.
        if (( round % 2 )); then
          b=$(rate "$before"); bus=$(cat "$work/us")
          wb=$(wrk_rate "$c1")
          r=$(rate "$ranklab"); rus=$(cat "$work/us")
          w1=$(wrk_rate "$c1")
          bratio=$(echo "2 * $b / ($w0 + $wb)" | bc -l)
          w=$(echo "($wb + $w1) / 2" | bc -l)
        else
          r=$(rate "$ranklab"); rus=$(cat "$work/us")
          wb=$(wrk_rate "$c1")
          b=$(rate "$before"); bus=$(cat "$work/us")
          w1=$(wrk_rate "$c1")
          bratio=$(echo "2 * $b / ($wb + $w1)" | bc -l)
          w=$(echo "($w0 + $wb) / 2" | bc -l)
        fi
        bratios+=("$bratio")
        pair=$(echo "$b / $r" | bc -l)
        pairs+=("$pair")
      else
        r=$(rate "$ranklab")
        w1=$(wrk_rate "$c1")
        w=$(echo "($w0 + $w1) / 2" | bc -l)
      fi
      ratio=$(echo "$r / $w" | bc -l)
      ratios+=("$ratio")
      if [ -n "$before" ]; then
        printf '| %s | %s | %s | %s | %.0f | %.2f | %.2f | %.2f | %s, %s | %s |\n' "$c1" "$round" "$b" "$r" "$w" "$bratio" "$ratio" "$pair" "$bus" "$rus" "$(cut -d' ' -f1 /proc/loadavg)"
      else
        printf '| %s | %s | %s | %.0f | %.2f | %s |\n' "$c1" "$round" "$r" "$w" "$ratio" "$(cut -d' ' -f1 /proc/loadavg)"
      fi
    done
    if [ -n "$before" ]; then
      printf '| %s | median | | | | %.2f | %.2f | %.2f | | |\n' "$c1" "$(median "${bratios[@]}")" "$(median "${ratios[@]}")" "$(median "${pairs[@]}")"
    else
      printf '| %s | median | | | %.2f | |\n' "$c1" "$(median "${ratios[@]}")"
    fi
  done
done
