#!/usr/bin/env bash
# The microbenchmarks of what-would.md, side by side: this CPU's FMA peak and clock, then the
# matrix products of one training step with gemm as ranklab configures it (x86-v4 off), gemm
# with x86-v4 on, train46's kernel and PyTorch/MKL, on 1 and 2 threads, alternating, ROUNDS
# times, `uptime` before each. JSON lines to stdout. From the repository root:
#     bash bench/finetune-speed/kernels/kernels.sh > bench/finetune-speed/raw/kernels.jsonl
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
py=${TORCH_PYTHON:-/work/torchvenv/bin/python}
off=$root/target/kernel-rates
v4=$root/target/kernel-rates-v4
(cd "$here" && cargo build --release --offline --target-dir "$off" >&2 \
   && cargo build --release --offline --features v4 --target-dir "$v4" >&2)
load() { echo "{\"what\":\"load\",\"step\":\"$1\",\"uptime\":\"$(uptime | sed 's/^ *//')\"}"; }
load peak; nice "$off/release/ranklab-kernel-rates" peak
for round in $(seq "${ROUNDS:-1}"); do
  for t in 1 2; do
    load "round $round, gemm off, $t"; RAYON_NUM_THREADS=$t nice "$off/release/ranklab-kernel-rates" gemm "$t"
    load "round $round, gemm v4, $t"; RAYON_NUM_THREADS=$t nice "$v4/release/ranklab-kernel-rates" gemm "$t"
    load "round $round, torch, $t"; OMP_NUM_THREADS=$t MKL_NUM_THREADS=$t nice "$py" "$here/torch_gemm.py" "$t"
  done
done
