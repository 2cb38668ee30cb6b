//! `rerank: { ..., interpolate: α }` (issue 44 item 1). Properties checked:
//! - the committed run of docir's `fusion+L12@20~0.5` (tasks/docir/experiments-interpolate.yaml,
//!   written by `ranklab bench --from-recording`) is, task by task, the hand sum
//!   0.5 · minmax(cross-encoder logit) + 0.5 · minmax(RRF score) over the top 20 of the fused
//!   list, computed here from two other committed runs (`fusion.trec`: the RRF scores;
//!   `fusion+L12@20.trec`: the same shortlist's logits), in score-descending, id-descending
//!   order, followed by the fused list below the shortlist (in its order);
//! - an α outside [0, 1] is refused at its file:line with exit 2.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

/// task -> [(doc, score)] in file order; a score is read as the f32 the run was written from
/// (its shortest decimal is not the f32's exact value, which ranklab normalizes).
fn run(name: &str) -> BTreeMap<String, Vec<(String, f64)>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../reports/docir/runs")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut out: BTreeMap<String, Vec<(String, f64)>> = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        out.entry(f[0].to_string())
            .or_default()
            .push((f[2].to_string(), f64::from(f[4].parse::<f32>().unwrap())));
    }
    out
}

fn minmax(v: &[f64]) -> Vec<f64> {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    v.iter()
        .map(|x| if hi > lo { (x - lo) / (hi - lo) } else { 0.0 })
        .collect()
}

#[test]
fn docir_interpolated_run_is_the_hand_sum_of_its_two_parts() {
    let fused = run("fusion.trec");
    let reranked = run("fusion+L12@20.trec");
    let got = run("fusion+L12@20~0.5.trec");
    assert_eq!(got.len(), fused.len());
    for (task, first) in &fused {
        let w = first.len().min(20);
        let head = &first[..w];
        // The plain rerank's first w lines are the same w documents, with their logits.
        let logit: BTreeMap<&str, f64> = reranked[task][..w]
            .iter()
            .map(|(d, s)| (d.as_str(), *s))
            .collect();
        let a = minmax(&head.iter().map(|(_, s)| *s).collect::<Vec<_>>());
        let b = minmax(
            &head
                .iter()
                .map(|(d, _)| logit[d.as_str()])
                .collect::<Vec<_>>(),
        );
        let mut want: Vec<(String, f64)> = head
            .iter()
            .enumerate()
            .map(|(i, (d, _))| (d.clone(), 0.5 * b[i] + 0.5 * a[i]))
            .collect();
        // Score descending (as the f32 the run holds), then id descending.
        want.sort_by(|x, y| {
            (y.1 as f32)
                .total_cmp(&(x.1 as f32))
                .then_with(|| y.0.as_bytes().cmp(x.0.as_bytes()))
        });
        want.extend(first[w..].iter().cloned());
        let g = &got[task];
        assert_eq!(g.len(), want.len(), "{task}");
        for (i, ((gd, gs), (wd, ws))) in g.iter().zip(&want).enumerate() {
            assert_eq!(gd, wd, "{task} rank {}", i + 1);
            // Below the shortlist the file's score is the run writer's (lowered to keep the
            // file in the replay's order, `report::run_file`): only the order is compared.
            if i < w {
                assert!((gs - ws).abs() < 1e-6, "{task} {gd}: {gs} vs {ws}");
            }
        }
    }
}

#[test]
fn alpha_outside_zero_one_is_refused_at_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.yaml");
    std::fs::write(
        &x,
        "experiment: x\nconfigurations:\n  - name: a\n    retriever: bm25\n  - name: b\n    retriever: bm25\n    rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 5, interpolate: 1.5 }\n",
    )
    .unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let o = common::ranklab(
        &root,
        &[
            "run",
            "tasks/docir",
            "-x",
            x.to_str().unwrap(),
            "--from-recording",
        ],
    );
    common::assert_bad_input(
        &o,
        &format!("{}:5:", x.display()),
        &["interpolate 1.5", "between 0 and 1"],
    );
}
