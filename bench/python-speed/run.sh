#!/usr/bin/env bash
# treclab (ranklab's Python package) beside pytrec_eval, ir_measures (default provider) and
# ranx (first run and warm), on the 7-million-line run of bench/eval-speed (6,980 queries x 1,000,
# `ranklab synth-run --seed 42`): the 5 measures map, recip_rank, P_10, ndcg_cut_10,
# recall_100, from files and from in-memory dicts; wall time and peak RSS of each process
# (/usr/bin/time -v), REPS runs each, interleaved; the medians, and whether every tool's means
# agree with treclab's to 4 decimals. Not part of CI (a benchmark, not a timed test).
#
# ranx compiles with numba on first use and caches the code on disk: "ranx-first" runs in a
# fresh process with an empty NUMBA_CACHE_DIR (numba compiles), "ranx-warm" in a fresh process
# whose NUMBA_CACHE_DIR an untimed run filled (numba loads the compiled code).
#
#   bench/python-speed/run.sh                     # builds the wheel into a venv under target/
#   RANX=0 bench/python-speed/run.sh              # without ranx (its first run is long)
#
# Environment: WORK (default /tmp/ranklab-evalspeed, shared with bench/eval-speed), VENV
# (default target/python-bench-venv), REPS (default 3), RANKLAB_BIN (a release binary for
# synth-run; default: cargo build --release -p ranklab).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${WORK:-/tmp/ranklab-evalspeed}"
venv="${VENV:-$root/target/python-bench-venv}"
reps="${REPS:-3}"
target="${CARGO_TARGET_DIR:-$root/target}"

[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time >/dev/null; }
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q maturin==1.16.0 pytrec-eval-terrier==0.5.11 ir-measures==0.4.3
if [ "${RANX:-1}" = 1 ]; then "$venv/bin/pip" install -q ranx==0.3.21; fi
(cd "$root/python" && "$venv/bin/maturin" build --release -q -o "$target/bench-wheels")
"$venv/bin/pip" install -q --force-reinstall --no-deps "$target"/bench-wheels/treclab-*.whl

bin="${RANKLAB_BIN:-}"
if [ -z "$bin" ]; then
    (cd "$root" && cargo build --release -q -p ranklab)
    bin="$target/release/ranklab"
fi
mkdir -p "$work"
if [ ! -s "$work/run.trec" ] || [ ! -s "$work/qrels.txt" ]; then
    "$bin" synth-run --queries 6980 --depth 1000 --seed 42 --out-run "$work/run.trec" --out-qrels "$work/qrels.txt"
fi

tools=(treclab-files treclab-dicts pytrec_eval ir_measures)
if [ "${RANX:-1}" = 1 ]; then
    tools+=(ranx-first ranx-warm)
    # The warm runs' numba cache, filled once by an untimed run.
    rm -rf "$work/numba-warm"
    NUMBA_CACHE_DIR="$work/numba-warm" "$venv/bin/python" "$here/one.py" ranx-warm "$work/qrels.txt" "$work/run.trec" > /dev/null
fi
out="$work/python-speed.jsonl"
: > "$out"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for rep in $(seq "$reps"); do
    for tool in "${tools[@]}"; do
        case "$tool" in
            ranx-first) rm -rf "$work/numba-first"; cache="$work/numba-first" ;;
            *) cache="$work/numba-warm" ;;
        esac
        NUMBA_CACHE_DIR="$cache" /usr/bin/time -v -o "$work/time.txt" "$venv/bin/python" "$here/one.py" "$tool" "$work/qrels.txt" "$work/run.trec" > "$work/one.json"
        wall=$(grep "Elapsed (wall clock)" "$work/time.txt" | awk '{print $NF}')
        rss=$(grep "Maximum resident set size" "$work/time.txt" | awk '{print $NF}')
        python3 - "$work/one.json" "$wall" "$rss" "$rep" >> "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m, s = sys.argv[2].rsplit(":", 1)
d.update(wall_s=float(m) * 60 + float(s) if ":" in sys.argv[2] else float(s), rss_mb=int(sys.argv[3]) / 1024, rep=int(sys.argv[4]))
print(json.dumps(d))
PY
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ref = next(r["means"] for r in rows if r["tool"] == "treclab-files")
print("| tool | wall s | load s | evaluate s | peak RSS MB | RSS after load MB | means = treclab's to 4 decimals |")
print("|---|---|---|---|---|---|---|")
for tool in dict.fromkeys(r["tool"] for r in rows):
    rs = [r for r in rows if r["tool"] == tool]
    med = lambda k: statistics.median(r[k] for r in rs)
    same = all(round(r["means"][k], 4) == round(ref[k], 4) for r in rs for k in ref)
    diff = "" if same else " (" + ", ".join(f"{k} {rs[0]['means'][k]:.5f} vs {ref[k]:.5f}" for k in ref if round(rs[0]["means"][k], 4) != round(ref[k], 4)) + ")"
    base = f"{med('base_mb'):.0f}" if rs[0].get("base_mb") is not None else ""
    print(f"| {tool} | {med('wall_s'):.2f} | {med('load_s'):.2f} | {med('eval_s'):.2f} | {med('rss_mb'):.0f} | {base} | {'yes' if same else 'no' + diff} |")
    for r in rs:
        print(f"<!-- {tool} rep {r['rep']}: wall {r['wall_s']:.2f} s, evaluate {r['eval_s']:.3f} s, peak {r['rss_mb']:.0f} MB -->")
PY
