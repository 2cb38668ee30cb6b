#!/usr/bin/env bash
# ranklab's weighted-fusion tuning grid against ranx 0.3.21's optimize_fusion on docir's committed
# runs (issue 44, item 4): per pair of weights the MRR of both, the pairs ranx drops, both bests,
# and the time of both in the same run. Needs a built ranklab (cargo build --release -p ranklab).
# ranx is pinned in a venv under target/ (as the pytrec_eval check's). Works in a scratch copy of
# the tree, so the committed reports are left as they are. Writes bench/ranx-fusion/results.json.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
V=target/ranx-venv
if [ ! -x "$V/bin/python" ] || ! "$V/bin/python" -c 'import ranx' 2>/dev/null; then
  python3 -m venv "$V"
  "$V/bin/pip" install -q ranx==0.3.21
fi
S=$(mktemp -d)
trap 'rm -rf "$S"' EXIT
cp -r tasks corpora reports "$S/"
(cd "$S" && RANKLAB_BIN="$ROOT/target/release/ranklab" "$ROOT/$V/bin/python" "$ROOT/bench/ranx-fusion/compare.py") \
  > bench/ranx-fusion/results.json
cat bench/ranx-fusion/results.json
