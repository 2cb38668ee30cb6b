#!/usr/bin/env bash
# Speed and memory of `ranklab eval` against trec_eval's C code (through pytrec_eval) and ranx,
# on a seeded 7-million-line run in the shape of MS MARCO passage dev (6,980 queries x 1,000).
# Not part of CI: it installs Python packages in a venv under /tmp and takes a few minutes.
#
#   bench/eval-speed/run.sh                 # the comparison, 3 repetitions each
#   REPS=5 bench/eval-speed/run.sh
#   BIG=1 bench/eval-speed/run.sh           # also the ~1 GB grouped and interleaved runs (peak RSS)
#
# Environment: WORK (default /tmp/ranklab-evalspeed) for the generated files, VENV (default
# /tmp/ranklab-evalspeed-venv), REPS (default 3), SEED (default 42), RANKLAB_BIN (an already
# built release binary; default: `cargo build --release -p ranklab` and target/release/ranklab).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${WORK:-/tmp/ranklab-evalspeed}"
venv="${VENV:-/tmp/ranklab-evalspeed-venv}"
reps="${REPS:-3}"
seed="${SEED:-42}"

if [ ! -x /usr/bin/time ]; then
    echo "installing GNU time (apt-get)" >&2
    apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
if ! command -v hyperfine >/dev/null 2>&1; then
    (apt-get install -y -qq hyperfine >/dev/null 2>&1 || true)
fi
if [ ! -x "$venv/bin/python" ]; then
    echo "creating $venv with pytrec-eval-terrier and ranx" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q pytrec-eval-terrier ranx
fi

if [ -n "${RANKLAB_BIN:-}" ]; then
    bin="$RANKLAB_BIN"
else
    echo "building ranklab (release)" >&2
    (cd "$root" && cargo build --release -p ranklab --quiet)
    bin="$root/target/release/ranklab"
fi

mkdir -p "$work"
if [ ! -s "$work/run.trec" ] || [ ! -s "$work/qrels.txt" ]; then
    "$bin" synth-run --queries 6980 --depth 1000 --seed "$seed" \
        --out-run "$work/run.trec" --out-qrels "$work/qrels.txt"
fi

args=(--bin "$bin" --python "$venv/bin/python" --work "$work" --reps "$reps")
if [ "${BIG:-0}" = 1 ]; then
    args+=(--big --seed "$seed")
fi
python3 "$here/compare.py" "${args[@]}"
