#!/usr/bin/env bash
# Does a fold model train to the same bits on an AVX2 CPU as on this one? Runs
# engine/examples/finetune_bits (one training step from the pinned ms-marco-MiniLM-L-12-v2, then
# the trained model's float scores) natively and under `qemu-x86_64 -cpu Haswell` (user-mode
# emulation of an AVX2 CPU without AVX-512: gemm and the hand trainer's kernels read the emulated
# CPUID and take their AVX2 paths), for trainer 3 and the hand trainer, and compares the weights'
# hash, the epoch loss and the score bits. Needs Debian's qemu-user. The emulation does every
# float operation in software, so the step is small: N pairs truncated to MAX_LEN tokens (the
# products keep their widths: 384, 1,152, 1,536; only the rows are fewer).
# Usage: bench/finetune-speed/bits-avx2.sh [N [MAX_LEN]]   (default 2 pairs of 32 tokens:
# about 10 minutes per trainer under the emulation)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
n=${1:-2}
len=${2:-32}
out=${OUT:-$root/target/finetune-bits-avx2}
mkdir -p "$out"
command -v qemu-x86_64 >/dev/null || {
  echo "bits-avx2.sh: needs qemu-x86_64 (apt-get install qemu-user)" >&2
  exit 2
}
bin=$root/target/release/examples/finetune_bits
(cd "$root" && cargo build --release -q -p ranklab-engine --example finetune_bits)
test -s "$out/pairs.jsonl" || python3 "$here/pairs.py" "$root/tasks/docir/suite.yaml" "$out/pairs.jsonl"
: > "$out/bits.jsonl"
for trainer in hand 3; do
  for cpu in native avx2; do
    run=("$bin" "$out/pairs.jsonl" "$n" "$len")
    [ "$cpu" = avx2 ] && run=(qemu-x86_64 -cpu Haswell "${run[@]}")
    line=$(RAYON_NUM_THREADS=2 RANKLAB_TRAINER=$trainer "${run[@]}" 2> "$out/$trainer-$cpu.err")
    echo "$line" | python3 -c 'import json,sys; r=json.load(sys.stdin); r["cpu"]=sys.argv[1]; print(json.dumps(r))' "$cpu" >> "$out/bits.jsonl"
  done
done
python3 - "$out/bits.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bad = 0
for t in ("hand", "3"):
    nat = next(r for r in rows if r["trainer"] == t and r["cpu"] == "native")
    emu = next(r for r in rows if r["trainer"] == t and r["cpu"] == "avx2")
    same = all(nat[k] == emu[k] for k in ("weights_fnv", "epoch_loss", "score_bits"))
    bad += not same
    print(f"trainer {t}: native {nat['weights_fnv']} loss {nat['epoch_loss']!r} scores {nat['score_bits']}")
    print(f"trainer {t}: AVX2   {emu['weights_fnv']} loss {emu['epoch_loss']!r} scores {emu['score_bits']}")
    print(f"trainer {t}: {'the same bits' if same else 'DIFFERENT bits'}")
sys.exit(1 if bad else 0)
PY
