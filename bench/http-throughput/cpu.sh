#!/usr/bin/env bash
# CPU and context switches per request of ranklab's HTTP replay and of wrk on the same MiniSearch
# endpoint (perf stat of each whole client process; unlike the rates, little moved by load).
#   N=<tasks, default 3000> CS="1 16" R=<ranklab binary> bench/http-throughput/cpu.sh
# ranklab's figure includes the whole process (suite load, report): take the difference of two N.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd); R=${R:-$root/target/release/ranklab}; work=$(mktemp -d)
(cd $root/examples/engines/minisearch && exec node http.js "$root/corpora/docir" 0 >"$work/port" 2>"$work/err") & server=$!
trap 'kill $server 2>/dev/null; rm -rf $work' EXIT
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
port=$(head -n1 "$work/port" | tr -d '[:space:]')
query="implement idempotency keys on the payment capture endpoint"
mkdir -p "$work/tasks/s"
{ printf 'suite: s\ncorpus: %s/corpora/docir\nk: 5\ntasks:\n' "$root"
  N=${N:-3000}; for i in $(seq -w 1 $N); do printf '  - id: Q%s\n    query: %s\n    expected: pay-idempotency-v2\n' "$i" "$query"; done; } >"$work/tasks/s/suite.yaml"
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '{"q": "$query", "limit": 100}'
wrk.headers["Content-Type"] = "application/json"
LUA
for c in ${CS:-1 16}; do
cat >"$work/tasks/s/experiments.yaml" <<YAML
experiment: c$c
configurations:
  - name: http
    engine:
      http: { url: "http://127.0.0.1:$port/search", body: '{"q": "{{query}}", "limit": {{k}}}', hits: /results, id: /id, score: /score, concurrency: $c }
YAML
  rl=$(cd $work && perf stat -x, -e task-clock,context-switches "$R" run tasks/s --dry-run 2>&1 >/dev/null | grep -E "task-clock|context-switches|queries/s" | tr '\n' ' ')
  wk=$(perf stat -x, -e task-clock,context-switches wrk -t$(( c < 2 ? 1 : 2 )) -c$c -d2s -s "$work/post.lua" "http://127.0.0.1:$port/search" 2>&1 | grep -E "task-clock|context-switches|requests in" | tr '\n' ' ')
  echo "c=$c load=$(cut -d' ' -f1 /proc/loadavg)"; echo "  ranklab($N tasks): $rl"; echo "  wrk: $wk"
done
