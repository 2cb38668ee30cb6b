#!/usr/bin/env bash
# Speed and memory of `ranklab eval` beside trec_eval's C code (through pytrec_eval), `wc -l`
# and, when given, an older ranklab binary, a trec_eval 10.0 binary and ranx, on a seeded
# 7-million-line run in the shape of MS MARCO passage dev (6,980 queries x 1,000). Not part of
# CI. Results of a run on this project's machine: results.md.
#
#   bench/eval-speed/run.sh                       # the comparison, 5 repetitions each
#   BASE_BIN=/tmp/ranklab-main bench/eval-speed/run.sh   # also an older build, side by side
#   TREC_EVAL=/path/to/trec_eval bench/eval-speed/run.sh # also trec_eval 10.0 built with -O2
#   TREC_EVAL=pyserini bench/eval-speed/run.sh    # also the trec_eval 9.0.4 binary (-O0) in PyPI's
#                                                 # pyserini 1.6.0 (fetch-trec-eval.sh says why)
#   RANX=1 bench/eval-speed/run.sh                # also ranx (slow: about a minute a run)
#   BIG=1 bench/eval-speed/run.sh                 # also the ~1 GB grouped and interleaved runs
#
# Environment: WORK (default /tmp/ranklab-evalspeed) for the generated files, VENV (default
# target/pytrec-venv, the venv `just pytrec` makes, with pytrec-eval-terrier 0.5.11), REPS
# (default 5), SEED (default 42), RANKLAB_BIN (an already built release binary; default:
# `cargo build --release -p ranklab` and target/release/ranklab).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${WORK:-/tmp/ranklab-evalspeed}"
venv="${VENV:-$root/target/pytrec-venv}"
reps="${REPS:-5}"
seed="${SEED:-42}"

if [ ! -x /usr/bin/time ]; then
    echo "installing GNU time (apt-get)" >&2
    apt-get update -qq && apt-get install -y -qq time >/dev/null
fi
if ! command -v hyperfine >/dev/null 2>&1; then
    (apt-get install -y -qq hyperfine >/dev/null 2>&1 || true)
fi
if [ ! -x "$venv/bin/python" ]; then
    echo "creating $venv" >&2
    python3 -m venv "$venv"
fi
"$venv/bin/python" -c 'import pytrec_eval' 2>/dev/null || "$venv/bin/pip" install -q pytrec-eval-terrier==0.5.11
if [ "${RANX:-0}" = 1 ]; then
    "$venv/bin/python" -c 'import ranx' 2>/dev/null || "$venv/bin/pip" install -q ranx
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
if [ -n "${BASE_BIN:-}" ]; then
    args+=(--base-bin "$BASE_BIN")
fi
if [ "${TREC_EVAL:-}" = pyserini ]; then
    args+=(--trec-eval "$(bash "$here/fetch-trec-eval.sh")"
           --trec-eval-label "trec_eval 9.0.4 (pyserini's binary, GCC 4.1, -O0)")
elif [ -n "${TREC_EVAL:-}" ]; then
    args+=(--trec-eval "$TREC_EVAL" --trec-eval-label "${TREC_EVAL_LABEL:-trec_eval 10.0 (C, -O2)}")
fi
if [ "${RANX:-0}" = 1 ]; then
    args+=(--ranx)
fi
if [ "${BIG:-0}" = 1 ]; then
    args+=(--big --seed "$seed")
fi
python3 "$here/compare.py" "${args[@]}"
