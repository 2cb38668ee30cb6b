#!/usr/bin/env bash
# The cost of a corpus-size curve (issue 28): a warm five-size SciFact curve
# (`beir --corpus-sizes 500,1000,2000,3500,all`) against five separate warm runs of one size each,
# side by side, same binary, same caches, same machine, alternating, REPS times each; medians.
# The goal: the curve costs about its largest point alone (<= 1.3x), not the sum of the points.
# Usage: bash bench/scale-speed/run.sh [SCIFACT_DIR]   (RANKLAB=<binary>, REPS=<n>, default 5;
# CONFIGS=<list>, default bm25,dense,fusion,bm25+ce: without bm25+ce when its 50,727 pairs are
# not in the cache, which `just scale` fills in about 35 min)
set -euo pipefail
dir=${1:-../shared/data/scifact}
R=${RANKLAB:-target/release/ranklab}
reps=${REPS:-5}
configs=${CONFIGS:-bm25,dense,fusion,bm25+ce}
sizes=(500 1000 2000 3500 all)
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
secs() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>"$out/err" || { cat "$out/err" >&2; exit 1; }; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
run() { "$R" beir "$dir" --configs "$configs" --reports "$out/r" --corpus-sizes "$1"; }
# One untimed curve first: every vector and score in the cache (the cold work is `just scale`'s).
run "$(IFS=,; echo "${sizes[*]}")" >/dev/null 2>"$out/warm"
grep -q "0 model loads\|0 model load(s)" "$out/warm" || { echo "not warm: $(tail -3 "$out/warm")" >&2; }
for ((i = 0; i < reps; i++)); do
  echo "curve $(secs run "$(IFS=,; echo "${sizes[*]}")")"
  for s in "${sizes[@]}"; do echo "single-$s $(secs run "$s")"; done
done > "$out/times"
python3 - "$out/times" "${sizes[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
sizes = sys.argv[2:]
med = lambda k: statistics.median(int(v) for n, v in rows if n == k)
curve = med("curve")
single = {s: med(f"single-{s}") for s in sizes}
total = sum(single.values())
print(f"| run | median ms |\n|---|---:|\n| curve, {len(sizes)} sizes | {curve:.0f} |")
for s in sizes:
    print(f"| one size: {s} | {single[s]:.0f} |")
print(f"| the {len(sizes)} single runs together | {total:.0f} |\n")
print(f"curve / largest alone ({sizes[-1]}): {curve / single[sizes[-1]]:.2f}x (goal <= 1.3x); "
      f"curve / the single runs together: {curve / total:.2f}x")
PY
