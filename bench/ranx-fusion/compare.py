"""ranklab's weighted-fusion grid against ranx 0.3.21's optimize_fusion, side by side (issue 44,
item 4). Run by run.sh from the project root in a scratch copy of the tree.

The same inputs for both: docir's committed BM25 and dense runs (reports/docir/runs/{bm25,dense}.trec,
the lists the `wsum` configuration fuses) and qrels (reports/docir/qrels.txt); min-max per task,
weighted sum, MRR. ranx: `optimize_fusion(norm="min-max", method="wsum", metric="mrr")` with its
default step 0.1, whose grid keeps only the weight pairs whose float sum is exactly 1.0. ranklab:
`ranklab tune` on a tuning file with one candidate per pair (its in-sample MRR over all 35 tasks),
so every value comes from ranklab's own fusion and measure code, and on the whole 11 x 11 grid
once, timed. Prints a JSON summary on stdout."""
import itertools, json, os, re, subprocess, tempfile, time

import numpy as np
from ranx import Qrels, Run, optimize_fusion
from ranx.fusion_optimization.optimize_weights import get_possible_weights, get_trial_configs

R = os.environ.get("RANKLAB_BIN", "target/release/ranklab")
qrels = Qrels.from_file("reports/docir/qrels.txt", kind="trec")
runs = [Run.from_file(f"reports/docir/runs/{n}.trec", kind="trec") for n in ("bm25", "dense")]

# ranx: its grid, its kept pairs, its report, its time.
grid = [float(round(x, 1)) for x in np.arange(0, 1.1, 0.1)]
all_pairs = [p for p in itertools.product(grid, grid) if abs(sum(p) - 1.0) < 1e-9]
kept = get_trial_configs(get_possible_weights(0.1), 2)
dropped = [p for p in all_pairs if tuple(p) not in {tuple(k) for k in kept}]
t0 = time.perf_counter()
best, report = optimize_fusion(qrels, runs, norm="min-max", method="wsum", metric="mrr",
                               return_optimization_report=True, show_progress=False)
ranx_s = time.perf_counter() - t0
# Again, warm: numba compiles ranx's kernels on the first call.
t0 = time.perf_counter()
optimize_fusion(qrels, runs, norm="min-max", method="wsum", metric="mrr", show_progress=False)
ranx_warm_s = time.perf_counter() - t0
# ranx's grid for three and four runs against the exact count of weight vectors in steps of
# 0.1 summing to 1 (integer compositions: C(10 + n - 1, n - 1)).
from math import comb
grid_loss = {n: {"valid": comb(10 + n - 1, n - 1),
                 "ranx_keeps": len(get_trial_configs(get_possible_weights(0.1), n))}
             for n in (2, 3, 4)}
ranx_scores = {tuple(float(w) for w in re.findall(r"\d+\.\d+|\d+", re.sub(r"np\.float64", "", c))): float(r["mrr"] if isinstance(r, dict) else r)
               for c, r in zip(report.configs, report.results)}


def tune(space, out):
    """`ranklab tune` of a tuning file over `space`; its JSON."""
    path = "tasks/docir/tune-ranx.yaml"
    with open(path, "w") as f:
        f.write("tune: ranx\nconfiguration: wsum\nmeasure: MRR\nfolds: 5\nspace:\n")
        for k, vs in space.items():
            f.write(f"  {k}: [{', '.join(repr(v) for v in vs)}]\n")
    t = time.perf_counter()
    p = subprocess.run([R, "tune", path, "--json", out], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit(f"ranklab tune {path}: exit {p.returncode}: {p.stderr[-2000:]}")
    return json.load(open(out)), time.perf_counter() - t


# ranklab: each pair of the sum-to-1 grid alone (its in-sample MRR over all tasks).
ours = {}
with tempfile.TemporaryDirectory() as d:
    for b, w in all_pairs:
        j, _ = tune({"fusion.weights.bm25": [b], "fusion.weights.dense": [w]}, f"{d}/o.json")
        ours[(b, w)] = j["in_sample"]["MRR"]
    full, ranklab_s = tune({"fusion.weights.bm25": grid, "fusion.weights.dense": grid}, f"{d}/f.json")

same = [p for p in ranx_scores if abs(ranx_scores[p] - ours[p]) <= 1e-9]
diff = {str(p): (ranx_scores[p], ours[p]) for p in ranx_scores if p not in same}
# ranx keeps the last best of its iteration order (`score >= best_score`).
ranx_best = tuple(float(w) for w in best["weights"])
top = max(ours[p] for p in ranx_scores)
ours_best = [p for p in ranx_scores if ours[p] == top]
print(json.dumps({
    "pairs_summing_to_1": len(all_pairs),
    "ranx_kept": len(kept),
    "ranx_dropped": [list(p) for p in dropped],
    "equal_mrr_on_ranx_grid": f"{len(same)} of {len(ranx_scores)}",
    "differing": diff,
    "ranx_best": list(ranx_best),
    "ranx_best_mrr": ranx_scores[ranx_best],
    "ranklab_best_on_ranx_grid": [list(p) for p in ours_best],
    "ranklab_best_mrr_on_ranx_grid": top,
    "ranklab_best_on_dropped_pairs": max((ours[p], list(p)) for p in dropped) if dropped else None,
    "ranx_grid_by_number_of_runs": grid_loss,
    "ranx_seconds_cold_11_candidates_in_sample": round(ranx_s, 3),
    "ranx_seconds_warm_11_candidates_in_sample": round(ranx_warm_s, 3),
    "ranklab_seconds_121_candidates_5_folds_whole_process_cold": round(ranklab_s, 3),
    "ranklab_in_sample_full_grid": full["in_sample"],
}, indent=1))
