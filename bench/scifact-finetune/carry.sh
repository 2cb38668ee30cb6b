#!/usr/bin/env bash
# Carries `just beir-finetune`'s finished work between machines through this folder (carry/):
# the run is hours on 2 cores (docs/beir.md), longer than some machines live.
#
#   carry.sh keep    cache -> carry/: every fold model's head (<key>.head: the model file's first
#                    two lines, its training record without its 133 MB of weights) and the score
#                    files of SciFact's rerankers (the fold models', ms-marco-MiniLM-L-12-v2's,
#                    answerai-colbert-small-v1's), as they are in the cache.
#   carry.sh bring   carry/ -> cache: each file the cache does not have yet (a cache's own file
#                    is never overwritten).
#
# Nothing is trusted on the way: ranklab checks every score record (its sha256) and every head
# (its format and model key) when it reads them, and a fold whose weights did not come along is
# trained again from the same pairs and settings (the same key, the same weights, bit for bit)
# on the first pair that is not in its score file.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
carry="$here/carry"
cache="${RANKLAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ranklab}"
case "${1:-}" in
  keep)
    mkdir -p "$carry/finetuned" "$carry/scores"
    for bin in "$cache"/finetuned/*.bin; do
      [ -e "$bin" ] || continue
      head -n 2 "$bin" > "$carry/finetuned/$(basename "$bin" .bin).head"
    done
    # A score file starts with "RLCACHE1", a u32 header length and the JSON header that names
    # its identity.
    python3 - "$cache/scores" "$carry/scores" <<'PY'
import json, os, shutil, struct, sys
src, dst = sys.argv[1], sys.argv[2]
kept = 0
for name in sorted(os.listdir(src)) if os.path.isdir(src) else []:
    if not name.endswith(".ce"):
        continue
    with open(os.path.join(src, name), "rb") as f:
        if f.read(8) != b"RLCACHE1":
            continue
        (n,) = struct.unpack("<I", f.read(4))
        identity = json.loads(f.read(n)).get("identity", "")
    if identity.startswith("finetuned:") or "ms-marco-MiniLM-L-12-v2" in identity or "answerai-colbert-small-v1" in identity:
        shutil.copyfile(os.path.join(src, name), os.path.join(dst, name))
        kept += 1
print(f"kept {kept} score files in {dst}")
PY
    ;;
  bring)
    for kind in finetuned scores; do
      mkdir -p "$cache/$kind"
      for f in "$carry/$kind"/*; do
        [ -e "$f" ] || continue
        [ -e "$cache/$kind/$(basename "$f")" ] || cp "$f" "$cache/$kind/"
      done
    done
    ;;
  *)
    echo "usage: $0 keep|bring" >&2
    exit 2
    ;;
esac
