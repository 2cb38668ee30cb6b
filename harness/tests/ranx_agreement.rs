//! ranklab's weighted-fusion tuning against ranx 0.3.21's `optimize_fusion` (issue 44 item 4),
//! on docir's committed BM25 and dense runs and qrels, min-max, weighted sum, MRR. Properties:
//! - on every weight pair of ranx's 0.1-step grid (the pairs it keeps), ranklab's in-sample MRR
//!   (`ranklab tune` with that one candidate, all 35 tasks) equals ranx's to 1e-9, and
//!   ranklab's best pair of that grid is ranx's `optimize_fusion` best;
//! - the weight vectors ranx drops, for 2, 3 and 4 runs, are exactly those of the 0.1-step
//!   compositions of 1 whose float sum (left to right, as Python's `sum`) is not `== 1.0`:
//!   the oracle is that sum computed here, against ranx's own `get_trial_configs`.
//!
//! ranx runs from the pinned venv `target/ranx-venv` (made by `bench/ranx-fusion/run.sh`, or
//! `just ranx`); without it the test prints why and passes without checking anything.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The venv's python when ranx imports there.
fn ranx_python() -> Option<PathBuf> {
    let py = root().join("target/ranx-venv/bin/python");
    let ok = Command::new(&py)
        .args(["-c", "import ranx"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

const RANX: &str = r#"
import json, re
from ranx import Qrels, Run, optimize_fusion
from ranx.fusion_optimization.optimize_weights import get_possible_weights, get_trial_configs
qrels = Qrels.from_file("reports/docir/qrels.txt", kind="trec")
runs = [Run.from_file(f"reports/docir/runs/{n}.trec", kind="trec") for n in ("bm25", "dense")]
best, report = optimize_fusion(qrels, runs, norm="min-max", method="wsum", metric="mrr",
                               return_optimization_report=True, show_progress=False)
kept = {n: [[float(w) for w in c] for c in get_trial_configs(get_possible_weights(0.1), n)]
        for n in (2, 3, 4)}
# A config is printed as text, e.g. "(np.float64(0.2), np.float64(0.8))".
def weights(c):
    return [float(w) for w in re.findall(r"\d+\.\d+|\d+", re.sub(r"np\.float64", "", str(c)))]
scores = [[weights(c), float(r["mrr"] if isinstance(r, dict) else r)]
          for c, r in zip(report.configs, report.results)]
print(json.dumps({"best": [float(w) for w in best["weights"]], "scores": scores, "kept": kept}))
"#;

/// The 0.1-step weight vectors of `n` runs summing to 1 (as tenths), in product order.
fn compositions(n: usize) -> Vec<Vec<u32>> {
    let mut out = vec![vec![]];
    for _ in 0..n {
        out = out
            .into_iter()
            .flat_map(|v: Vec<u32>| {
                (0..=10).map(move |k| {
                    let mut v = v.clone();
                    v.push(k);
                    v
                })
            })
            .collect();
    }
    out.retain(|v| v.iter().sum::<u32>() == 10);
    out
}

/// Python's `sum` of the weights ranx builds (`round(x, 1)`: the double nearest k/10).
fn float_sum(v: &[u32]) -> f64 {
    v.iter().fold(0.0, |s, &k| s + k as f64 / 10.0)
}

/// ranklab's in-sample MRR of weighted fusion (bm25 `b`, dense `d`) in the scratch tree.
fn ranklab_mrr(dir: &Path, b: f64, d: f64) -> f64 {
    let file = dir.join("tasks/docir/tune-ranx.yaml");
    std::fs::write(
        &file,
        format!("tune: ranx\nconfiguration: wsum\nmeasure: MRR\nfolds: 5\nspace:\n  fusion.weights.bm25: [{b:?}]\n  fusion.weights.dense: [{d:?}]\n"),
    )
    .unwrap();
    let out = dir.join("o.json");
    let o = common::ranklab(
        dir,
        &[
            "tune",
            "tasks/docir/tune-ranx.yaml",
            "--json",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    j["in_sample"]["MRR"].as_f64().unwrap()
}

#[test]
fn ranx_optimize_fusion_agrees_and_drops_only_float_sums() {
    let Some(py) = ranx_python() else {
        eprintln!("skipped: target/ranx-venv has no ranx 0.3.21 (make it with `bash bench/ranx-fusion/run.sh` or `just ranx`)");
        return;
    };
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    for d in ["tasks", "corpora", "reports/docir"] {
        common::copy_dir(&root().join(d), &dir.join(d));
    }
    let o = Command::new(&py)
        .current_dir(dir)
        .args(["-c", RANX])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ranx: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();

    // Dropped vectors: ranx's kept list against the float-sum oracle.
    for n in [2usize, 3, 4] {
        let kept: Vec<Vec<u32>> = ranx["kept"][n.to_string()]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                c.as_array()
                    .unwrap()
                    .iter()
                    .map(|w| (w.as_f64().unwrap() * 10.0).round() as u32)
                    .collect()
            })
            .collect();
        let want: Vec<Vec<u32>> = compositions(n)
            .into_iter()
            .filter(|v| float_sum(v) == 1.0)
            .collect();
        assert_eq!(kept, want, "{n} runs");
    }
    assert_eq!(
        compositions(3).len()
            - compositions(3)
                .iter()
                .filter(|v| float_sum(v) == 1.0)
                .count(),
        4
    );
    assert_eq!(
        compositions(4).len()
            - compositions(4)
                .iter()
                .filter(|v| float_sum(v) == 1.0)
                .count(),
        30
    );

    // Equal MRR on ranx's grid, and the same best.
    let mut ours = Vec::new();
    for s in ranx["scores"].as_array().unwrap() {
        let (b, d) = (s[0][0].as_f64().unwrap(), s[0][1].as_f64().unwrap());
        let theirs = s[1].as_f64().unwrap();
        let mine = ranklab_mrr(dir, b, d);
        assert!(
            (mine - theirs).abs() < 1e-9,
            "({b}, {d}): ranklab {mine}, ranx {theirs}"
        );
        ours.push(((b, d), mine));
    }
    assert_eq!(ours.len(), 11);
    let top = ours.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    let best: Vec<(f64, f64)> = ours.iter().filter(|x| x.1 == top).map(|x| x.0).collect();
    let rb = &ranx["best"];
    assert_eq!(best, [(rb[0].as_f64().unwrap(), rb[1].as_f64().unwrap())]);
}
