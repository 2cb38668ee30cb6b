#!/usr/bin/env bash
# Fine-tuning speed (issue 27's speed item): training pairs per second and time per epoch of
# ranklab's fine-tuning (candle, engine/examples/finetune_speed.rs) against PyTorch on the same
# pairs from the same starting weights, with the same settings, on 2 threads, cold and warm:
#   - pairs.py: 140 docir pairs (35 tasks x 1 positive + 3 seeded negatives), pairs.jsonl
#   - export_dequantized: the dequantized ms-marco-MiniLM-L-12-v2 as a HuggingFace folder;
#     verify_export.py checks PyTorch's logits on 5 pairs equal candle's float forward (1e-3)
#   - one epoch each, one trainer after the other (never at the same time), each in its own
#     process: run 1 cold (from process start: model load included), run 2 warm (same process):
#       ranklab (candle), RAYON_NUM_THREADS=2
#       sentence-transformers CrossEncoder.fit, torch.set_num_threads(2)
#       a plain PyTorch loop fed ranklab's exact batches, torch.set_num_threads(2)
#   - a table: trainer, run, pairs, seconds, pairs/s, ratio ranklab/torch.
# Needs a venv with torch, sentence-transformers, datasets and accelerate (TORCH_PYTHON, default
# /work/torchvenv/bin/python) and the model store (ranklab fetches the model on first use).
# Outputs go to OUT (default target/finetune-speed). Run from the repository root:
#   bash bench/finetune-speed/run.sh
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
HERE="$ROOT/bench/finetune-speed"
PY="${TORCH_PYTHON:-/work/torchvenv/bin/python}"
OUT="$(mkdir -p "${OUT:-target/finetune-speed}" && cd "${OUT:-target/finetune-speed}" && pwd)"
RUNS="${RUNS:-2}"
export RAYON_NUM_THREADS=2 OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1

python3 "$HERE/pairs.py" tasks/docir/suite.yaml "$OUT/pairs.jsonl"
cargo build --release --example finetune_speed --example export_dequantized -p ranklab-engine
./target/release/examples/export_dequantized "$OUT/model" "$OUT/pairs.jsonl" 5 256
"$PY" "$HERE/verify_export.py" "$OUT/model" 2> >(grep -v "Loading weights" >&2) | tee "$OUT/verify.txt"

: > "$OUT/runs.jsonl"
: > "$OUT/load.txt"
run() { # NAME COMMAND...: one trainer's runs, its JSON lines appended to runs.jsonl
  local name="$1"
  shift
  echo "== $name: $(uptime)" | tee -a "$OUT/load.txt" >&2
  (cd "$OUT" && "$@") 2> "$OUT/$name.log" | tee -a "$OUT/runs.jsonl"
}
run ranklab "$ROOT/target/release/examples/finetune_speed" "$OUT/pairs.jsonl" "$RUNS"
run st "$PY" "$HERE/torch_train.py" "$OUT/model" "$OUT/pairs.jsonl" --trainer st --runs "$RUNS" --threads 2
run loop "$PY" "$HERE/torch_train.py" "$OUT/model" "$OUT/pairs.jsonl" --trainer loop --runs "$RUNS" --threads 2
echo "== end: $(uptime)" | tee -a "$OUT/load.txt" >&2

python3 - "$OUT/runs.jsonl" <<'PY' | tee "$OUT/table.md"
import json, sys
# Only the result rows: transformers' Trainer prints a Python dict of its own on stdout.
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"')]
ours = {r["run"]: r for r in rows if r["trainer"].startswith("ranklab")}
print("| trainer | run | pairs | load s | epoch s | total s | pairs/s (epoch) | pairs/s (total) | ranklab/torch (pairs/s, epoch) | ranklab/torch (pairs/s, total) | epoch CPU s | CPU s/pair (epoch) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    o = ours.get(r["run"])
    if r["trainer"].startswith("ranklab") or o is None:
        ratio = ("", "")
    else:
        ratio = (f"{o['pairs_per_s_train'] / r['pairs_per_s_train']:.2f}",
                 f"{o['pairs_per_s_total'] / r['pairs_per_s_total']:.2f}")
    print(f"| {r['trainer']} | {r['run']} | {r['pairs']} | {r['load_s']:.1f} | {r['train_s']:.1f} | "
          f"{r['total_s']:.1f} | {r['pairs_per_s_train']:.3f} | {r['pairs_per_s_total']:.3f} | {ratio[0]} | {ratio[1]} | "
          f"{r['train_cpu_s']:.1f} | {r['train_cpu_s'] / r['pairs']:.2f} |")
PY
