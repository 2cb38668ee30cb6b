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
#   TREC_EVAL=wheel bench/eval-speed/run.sh       # also trec_eval's optimised C as the pytrec_eval
#                                                 # wheel compiled it, run from files by te_driver.c
#   TREC_EVAL=wheel,pyserini bench/eval-speed/run.sh  # both, side by side
#   RANX=1 bench/eval-speed/run.sh                # also ranx (slow: about a minute a run)
#   BIG=1 bench/eval-speed/run.sh                 # also the ~1 GB grouped and interleaved runs
#
# Environment: JSON (write the medians and ratios there), WORK (default /tmp/ranklab-evalspeed)
# for the generated files, VENV (default
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
if [ -n "${JSON:-}" ]; then
    args+=(--json "$JSON")    # e.g. JSON=bench/eval-speed/results.json
fi
if [ -n "${BASE_BIN:-}" ]; then
    args+=(--base-bin "$BASE_BIN")
fi
# TREC_EVAL: a comma-separated list of `wheel`, `pyserini` and paths of trec_eval binaries.
IFS=, read -r -a trec_evals <<< "${TREC_EVAL:-}"
for te in "${trec_evals[@]}"; do
    if [ "$te" = wheel ]; then
        # trec_eval's own functions from the wheel's extension (optimised), behind a command line
        # of ours (te_driver.c); the extension needs libpython's symbols, which te_driver loads.
        ext="$("$venv/bin/python" -c 'import pytrec_eval_ext; print(pytrec_eval_ext.__file__)')"
        libpy="$("$venv/bin/python" -c 'import os, sysconfig as s; print(os.path.join(s.get_config_var("LIBDIR"), s.get_config_var("LDLIBRARY")))')"
        mkdir -p "$root/target/trec-eval"
        gcc -O2 -Wall -o "$root/target/trec-eval/te_driver" "$here/te_driver.c" -ldl
        printf '#!/bin/sh\nTE_LIBPYTHON=%s exec %s %s "$@"\n' "$libpy" \
            "$root/target/trec-eval/te_driver" "$ext" > "$root/target/trec-eval/trec_eval-wheel"
        chmod +x "$root/target/trec-eval/trec_eval-wheel"
        args+=(--trec-eval "$root/target/trec-eval/trec_eval-wheel"
               --trec-eval-label "trec_eval's C, optimised (pytrec_eval wheel + te_driver.c)")
    elif [ "$te" = pyserini ]; then
        args+=(--trec-eval "$(bash "$here/fetch-trec-eval.sh")"
               --trec-eval-label "trec_eval 9.0.4 binary, -O0 (pyserini 1.6.0)")
    else
        args+=(--trec-eval "$te" --trec-eval-label "${TREC_EVAL_LABEL:-trec_eval 10.0 (C, -O2)}")
    fi
done
if [ "${RANX:-0}" = 1 ]; then
    args+=(--ranx)
fi
if [ "${BIG:-0}" = 1 ]; then
    args+=(--big --seed "$seed")
fi
python3 "$here/compare.py" "${args[@]}"
