#!/usr/bin/env bash
# A fold model's int8 export against the pinned int8 L-12, in one run (engine/examples/int8_speed.rs):
# pairs/s of both, alternating which goes first, and both models' logit errors against float.
#   bash bench/score-speed/run-int8.sh FOLD.bin [ROUNDS] > bench/score-speed/int8-runN.json
# FOLD.bin: a fold model, e.g. $RANKLAB_CACHE/finetuned/<key>.bin. SciFact pairs: docs/speed.md.
# The export's biases are corrected (exporter 3 on) on 64 other SciFact pairs (calA64: pairs 49-112
# of `pairs.py SCIFACT 33`, none of the 48 scored), as ranklab corrects them on a fold's training pairs.
set -euo pipefail
cd "$(dirname "$0")/../.."
S="${SCIFACT:-../shared/data/scifact}"
python3 bench/score-speed/pairs.py "$S" 3 > target/pairs48.jsonl
python3 bench/score-speed/pairs.py "$S" 33 | sed -n 49,112p > target/calA64.jsonl
CAL=target/calA64.jsonl cargo run --release -q --example int8_speed -p ranklab-engine -- target/pairs48.jsonl "$1" "${2:-7}"
