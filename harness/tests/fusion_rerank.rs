//! Weighted fusion over a reranker's list (`weights: { bm25, dense, rerank }`, issue 44 item 1).
//! Properties checked:
//! - the committed run of docir's `wsum+L12@20` (tasks/docir/experiments-fusion-rerank.yaml,
//!   written by `ranklab run --from-recording`) is, task by task, the hand sum
//!   0.3 · minmax(BM25) + 0.5 · minmax(dense) + 0.2 · minmax(cross-encoder logit), computed here
//!   from three other committed runs (`bm25.trec`, `dense.trec`: each list's 100 scores;
//!   `fusion+L12@20.trec`: the logits of the top 20 of the RRF fusion, its first 20 lines), a
//!   document missing from a list at that list's minimum (0 after min-max), in
//!   score-descending, id-descending order, cut at 100;
//! - a `rerank` weight without a rerank stage, and an unknown list name, are refused at the
//!   configuration's file:line with exit 2 (the latter with "did you mean"), and so is a learned
//!   model with reranker features without its `shortlist:`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// task -> [(doc, score)] in file order, scores read as the f32 the run was written from.
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

/// doc -> min-max normalized score (a list of equal scores gives 0).
fn minmax(list: &[(String, f64)]) -> BTreeMap<String, f64> {
    let lo = list.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let hi = list.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    list.iter()
        .map(|(d, x)| (d.clone(), if hi > lo { (x - lo) / (hi - lo) } else { 0.0 }))
        .collect()
}

#[test]
fn docir_rerank_weighted_run_is_the_hand_sum_of_three_lists() {
    let (bm25, dense) = (run("bm25.trec"), run("dense.trec"));
    let reranked = run("fusion+L12@20.trec");
    let got = run("wsum+L12@20.trec");
    assert_eq!(got.len(), bm25.len());
    for (task, g) in &got {
        let b = minmax(&bm25[task]);
        let d = minmax(&dense[task]);
        let r = minmax(&reranked[task][..reranked[task].len().min(20)]);
        let docs: BTreeSet<&String> = b.keys().chain(d.keys()).chain(r.keys()).collect();
        let get = |m: &BTreeMap<String, f64>, x: &str| m.get(x).copied().unwrap_or(0.0);
        let mut want: Vec<(String, f64)> = docs
            .into_iter()
            .map(|x| {
                let s = 0.3 * get(&b, x) + 0.5 * get(&d, x) + 0.2 * get(&r, x);
                (x.clone(), s)
            })
            .collect();
        want.sort_by(|x, y| {
            (y.1 as f32)
                .total_cmp(&(x.1 as f32))
                .then_with(|| y.0.as_bytes().cmp(x.0.as_bytes()))
        });
        want.truncate(100);
        assert_eq!(g.len(), want.len(), "{task}");
        for (i, ((gd, gs), (wd, ws))) in g.iter().zip(&want).enumerate() {
            assert_eq!(gd, wd, "{task} rank {}", i + 1);
            assert!((gs - ws).abs() < 1e-5, "{task} {gd}: {gs} vs {ws}");
        }
    }
}

fn refused(configuration: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.yaml");
    std::fs::write(
        &x,
        format!(
            "experiment: x\nconfigurations:\n  - name: a\n    retriever: bm25\n{configuration}"
        ),
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
    assert_eq!(common::code(&o), 2, "{o:?}");
    common::stderr(&o).replace(&x.display().to_string(), "x.yaml")
}

#[test]
fn a_rerank_weight_needs_a_rerank_stage_and_unknown_lists_get_a_suggestion() {
    let e = refused("  - name: w\n    retriever: fusion\n    fusion: { method: weighted, weights: { bm25: 1, rerank: 1 } }\n");
    assert!(e.contains("x.yaml:5: fusion weight for \"rerank\""), "{e}");
    assert!(e.contains("add `rerank: {"), "{e}");
    let e = refused("  - name: w\n    retriever: fusion\n    fusion: { method: weighted, weights: { bm25: 1, rernak: 1 } }\n");
    assert!(e.contains("x.yaml:5: fusion weight for \"rernak\""), "{e}");
    assert!(e.contains("did you mean \"rerank\"?"), "{e}");
}

/// The committed docir model trained with the `cross-encoder` and `colbert` features
/// (`tune-learned-models.yaml`) is refused as `retriever: learned` without the shortlist those
/// features were scored over (`shortlist:`), at the configuration's line, with what to write,
/// rather than replayed over a guessed shortlist.
#[test]
fn a_model_with_model_features_is_refused_without_its_shortlist() {
    let model = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../reports/docir/tune-learned-models.model.json")
        .canonicalize()
        .unwrap();
    let e = refused(&format!(
        "  - name: m\n    retriever: learned\n    model: {}\n",
        model.display()
    ));
    assert!(e.contains("x.yaml:5:"), "{e}");
    assert!(
        e.contains("its model uses cross-encoder and colbert"),
        "{e}"
    );
    assert!(e.contains("`shortlist: { width: 20, from: rrf }`"), "{e}");
}
