#!/usr/bin/env bash
# Warm runs, before and after, in the same hyperfine call (issue 19's goals). Not part of CI.
#
#   BEFORE=/tmp/rl-before/ranklab bench/warm-runs/run.sh
#
# BEFORE: the binary to compare with (e.g. main at 6f1f3ea built into /tmp/rl-before); AFTER
# (default target/release/ranklab). Every model vector and cross-encoder score must already
# be in the cache (~/.cache/ranklab or RANKLAB_CACHE): these are warm runs, no model loads.
# Reports go to a temporary tree (the committed reports/ are only read, as recordings).
# Rows: `bench --from-recording` (docir + brain); `beir scifact` with bm25,dense,fusion and
# with dense alone, each at the default depth 1000 and at --depth 100 (the depth of the
# issue's goals); `beir scifact --configs bm25 --depth 100` beside the Python bm25s package's
# whole process (bench/bm25-scifact/bm25s_scifact.py, venv in target/bm25s-venv).
# hyperfine prints mean wall time and mean user/system CPU; the load average is printed
# before and after each row. Environment: RUNS (default 10), WARMUP (default 2).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
before="${BEFORE:?set BEFORE to the binary to compare with}"
after="${AFTER:-$root/target/release/ranklab}"
runs="${RUNS:-10}"
warmup="${WARMUP:-2}"
export RANKLAB_SHARED_DATA="${RANKLAB_SHARED_DATA:-$root/../shared/data}"
data="$RANKLAB_SHARED_DATA/scifact"
venv="${VENV:-$root/target/bm25s-venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q bm25s PyStemmer
fi
tmp="$(mktemp -d /tmp/ranklab-warm.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
cd "$root"
load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }
row() { # name, arguments after the binary
    local name="$1"; shift
    echo "== $name"; load
    hyperfine -N --warmup "$warmup" --runs "$runs" \
        -n before "$before $* --reports $tmp/before" \
        -n after "$after $* --reports $tmp/after" 2>&1 | grep -vE '^ *$'
    load
}
row "ranklab bench --from-recording" bench --from-recording --recordings "$root/reports"
row "beir scifact bm25,dense,fusion (depth 1000)" beir "$data" --configs bm25,dense,fusion
row "beir scifact bm25,dense,fusion --depth 100" beir "$data" --configs bm25,dense,fusion --depth 100
row "beir scifact dense (depth 1000)" beir "$data" --configs dense
row "beir scifact dense --depth 100" beir "$data" --configs dense --depth 100
echo "== BM25 of the 300 SciFact queries, whole process: ranklab (index + search + report) vs bm25s (index + search)"
load
hyperfine -N --warmup "$warmup" --runs "$runs" \
    -n "ranklab before" "$before beir $data --configs bm25 --depth 100 --reports $tmp/before" \
    -n "ranklab after" "$after beir $data --configs bm25 --depth 100 --reports $tmp/after" \
    -n "bm25s $("$venv/bin/python" -c 'import bm25s; print(bm25s.__version__)')" \
    "$venv/bin/python $root/bench/bm25-scifact/bm25s_scifact.py $data" 2>&1 | grep -vE '^ *$'
load
echo "== bm25s's own split (index; tokenize + retrieve 300 queries, top 100, one thread), 3 runs"
for _ in 1 2 3; do "$venv/bin/python" "$root/bench/bm25-scifact/bm25s_scifact.py" "$data"; done
diff -r "$tmp/before" "$tmp/after" && echo "reports: before and after identical"
