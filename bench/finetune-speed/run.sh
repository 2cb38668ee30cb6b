#!/usr/bin/env bash
# Fine-tuning speed (issue 27's speed item): training pairs per second and time per epoch of
# ranklab's fine-tuning (the default trainer, engine/examples/finetune_speed.rs; RANKLAB_TRAINER=3
# for trainer 3) against PyTorch on the same pairs from the same starting weights, with the same
# settings, on 2 threads, cold and warm:
#   - pairs.py: 140 docir pairs (35 tasks x 1 positive + 3 seeded negatives), pairs.jsonl
#   - export_dequantized: the dequantized ms-marco-MiniLM-L-12-v2 as a HuggingFace folder;
#     verify_export.py checks PyTorch's logits on 5 pairs equal candle's float forward (1e-3)
#   - one epoch each, one trainer after the other (never at the same time), each in its own
#     process: run 1 cold (from process start: model load included), run 2 warm (same process):
#       ranklab (hand: the default trainer; or trainer 3, "candle, fused"), RAYON_NUM_THREADS=2
#       sentence-transformers CrossEncoder.fit, torch.set_num_threads(2)
#       a plain PyTorch loop fed ranklab's exact batches, torch.set_num_threads(2)
#   - a table: trainer, run, pairs, seconds, pairs/s, ratio ranklab/torch; results.json (the
#     figures the acceptance check reads). ROUNDS (default 1) alternates ranklab and the loop;
#     ST=0 leaves CrossEncoder.fit out.
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
run() { # NAME COMMAND...: one trainer's runs, its JSON lines (with the 1-minute load average at
  # its start, load1_before) appended to runs.jsonl
  local name="$1" load
  shift
  load="$(cut -d' ' -f1 /proc/loadavg)"
  echo "== $name: $(uptime)" | tee -a "$OUT/load.txt" >&2
  (cd "$OUT" && "$@") 2> "$OUT/$name.log" |
    python3 -c 'import json, sys
for l in sys.stdin:
    print(json.dumps({**json.loads(l), "load1_before": float(sys.argv[1])}) if l.startswith("{\"") else l, end="" if not l.startswith("{\"") else "\n", flush=True)' "$load" |
    tee -a "$OUT/runs.jsonl"
}
# ROUNDS rounds of ranklab then the like-for-like PyTorch loop, one after the other (other jobs
# on a shared machine move both; alternating spreads that over both); CrossEncoder.fit once.
for round in $(seq 1 "${ROUNDS:-1}"); do
  run "ranklab-$round" "$ROOT/target/release/examples/finetune_speed" "$OUT/pairs.jsonl" "$RUNS"
  run "loop-$round" "$PY" "$HERE/torch_train.py" "$OUT/model" "$OUT/pairs.jsonl" --trainer loop --runs "$RUNS" --threads 2
done
if [ "${ST:-1}" = 1 ]; then
  run st "$PY" "$HERE/torch_train.py" "$OUT/model" "$OUT/pairs.jsonl" --trainer st --runs "$RUNS" --threads 2
fi
echo "== end: $(uptime)" | tee -a "$OUT/load.txt" >&2

# results.json: for each of ranklab and the like-for-like loop, its warm run started at the lowest
# load average (the one most nearly alone), with every row kept beside it.
python3 - "$OUT/runs.jsonl" "$OUT/results.json" "ROUNDS=${ROUNDS:-1} RUNS=$RUNS bash bench/finetune-speed/run.sh" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"')]
def best(prefix):
    warm = [r for r in rows if r["trainer"].startswith(prefix) and r["run"] == "warm"]
    return min(warm, key=lambda r: r["load1_before"])
ours, torch = best("ranklab"), best("PyTorch loop")
out = {
    "ranklab_pairs_per_s": round(ours["pairs_per_s_train"], 3),
    "torch_pairs_per_s": round(torch["pairs_per_s_train"], 3),
    "ratio": round(ours["pairs_per_s_train"] / torch["pairs_per_s_train"], 3),
    "ranklab_peak_rss_mb": round(ours["peak_rss_mb"]),
    "torch_peak_rss_mb": round(torch["peak_rss_mb"]),
    "ranklab_load1_before": ours["load1_before"],
    "torch_load1_before": torch["load1_before"],
    "ranklab_cpu_s_per_pair": round(ours["train_cpu_s"] / ours["pairs"], 3),
    "torch_cpu_s_per_pair": round(torch["train_cpu_s"] / torch["pairs"], 3),
    "what": "warm epoch of the 140 docir pairs, 2 threads: ranklab's trainer against the PyTorch loop fed ranklab's batches; each the warm run started at the lowest 1-minute load average",
    "command": sys.argv[3],
    "rows": rows,
}
json.dump(out, open(sys.argv[2], "w"), indent=1)
print(json.dumps({k: v for k, v in out.items() if k != "rows"}, indent=1))
PY

python3 - "$OUT/runs.jsonl" <<'PY' | tee "$OUT/table.md"
import json, sys
# Only the result rows: transformers' Trainer prints a Python dict of its own on stdout.
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith('{"')]
ours = {r["run"]: r for r in rows if r["trainer"].startswith("ranklab")}
print("| trainer | run | pairs | load s | epoch s | total s | pairs/s (epoch) | pairs/s (total) | ranklab/torch (pairs/s, epoch) | ranklab/torch (pairs/s, total) | epoch CPU s | CPU s/pair (epoch) | peak RSS MB | load before |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for r in rows:
    o = ours.get(r["run"])
    if r["trainer"].startswith("ranklab") or o is None:
        ratio = ("", "")
    else:
        ratio = (f"{o['pairs_per_s_train'] / r['pairs_per_s_train']:.2f}",
                 f"{o['pairs_per_s_total'] / r['pairs_per_s_total']:.2f}")
    print(f"| {r['trainer']} | {r['run']} | {r['pairs']} | {r['load_s']:.1f} | {r['train_s']:.1f} | "
          f"{r['total_s']:.1f} | {r['pairs_per_s_train']:.3f} | {r['pairs_per_s_total']:.3f} | {ratio[0]} | {ratio[1]} | "
          f"{r['train_cpu_s']:.1f} | {r['train_cpu_s'] / r['pairs']:.2f} | {r.get('peak_rss_mb', float('nan')):.0f} | {r.get('load1_before', '')} |")
PY
