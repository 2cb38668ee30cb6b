#!/usr/bin/env bash
# A fold model's int8 export against the pinned int8 L-12, in one run (engine/examples/int8_speed.rs):
# pairs/s of both, alternating which goes first, and both models' logit errors against float.
#   bash bench/score-speed/run-int8.sh FOLD.bin [ROUNDS] > bench/score-speed/int8-runN.json
# FOLD.bin: a fold model, e.g. $RANKLAB_CACHE/finetuned/<key>.bin. SciFact pairs: docs/speed.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 bench/score-speed/pairs.py "${SCIFACT:-../shared/data/scifact}" 3 > target/pairs48.jsonl
cargo run --release -q --example int8_speed -p ranklab-engine -- target/pairs48.jsonl "$1" "${2:-7}"
