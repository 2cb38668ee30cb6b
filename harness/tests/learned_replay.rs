//! `retriever: learned, model: FILE` replays the ranking the tuning's all-tasks model gives.
//!
//! Oracle, independent of the replay's feature and scoring code (`replay/features.rs`,
//! `ranklab_engine::learn`): the features are computed here by hand, as docs/tuning.md's
//! feature table defines them, from the committed BM25 and bge-small runs of
//! `tasks/docir/experiments.yaml` (`reports/docir/runs/bm25.trec`, `dense.trec`: default BM25
//! and bge-small at depth 100, the lists `tune-learned-lambdamart.yaml`'s `wsum` fuses) and the
//! corpus records; the model's score is computed by walking the model file's JSON trees here
//! (z-score with its normalization, then shrinkage times each tree's leaf, summed in order);
//! the ranking is score (as f32) descending, then document id descending.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ranklab_engine::corpus::{Corpus, History, Lifecycle};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A run file as task -> [(document id, score)] in file order.
fn read_run(path: &Path) -> BTreeMap<String, Vec<(String, f32)>> {
    let mut out: BTreeMap<String, Vec<(String, f32)>> = BTreeMap::new();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        out.entry(f[0].to_string())
            .or_default()
            .push((f[2].to_string(), f[4].parse().unwrap()));
    }
    out
}

/// (score, 1-based rank) of `id` in `list` cut at 100, else (the list's minimum, 101).
fn in_list(list: &[(String, f32)], id: &str) -> (f64, f64) {
    let cut = &list[..list.len().min(100)];
    match cut.iter().position(|(d, _)| d == id) {
        Some(i) => (f64::from(cut[i].1), (i + 1) as f64),
        None => (
            cut.iter()
                .map(|x| f64::from(x.1))
                .fold(f64::INFINITY, f64::min),
            101.0,
        ),
    }
}

/// The model's score of a raw row, walking the JSON by hand.
fn score(model: &Value, row: &[f64]) -> f64 {
    let mean = model["normalization"]["mean"].as_array().unwrap();
    let scale = model["normalization"]["scale"].as_array().unwrap();
    let x: Vec<f64> = row
        .iter()
        .enumerate()
        .map(|(i, v)| (v - mean[i].as_f64().unwrap()) / scale[i].as_f64().unwrap())
        .collect();
    let shrinkage = model["shrinkage"].as_f64().unwrap();
    let mut s = 0.0;
    for tree in model["trees"].as_array().unwrap() {
        let nodes = tree["nodes"].as_array().unwrap();
        let mut n = &nodes[0];
        while n.get("value").is_none() {
            let f = n["feature"].as_u64().unwrap() as usize;
            let next = if x[f] <= n["threshold"].as_f64().unwrap() {
                "left"
            } else {
                "right"
            };
            n = &nodes[n[next].as_u64().unwrap() as usize];
        }
        s += shrinkage * n["value"].as_f64().unwrap();
    }
    s
}

#[test]
fn a_learned_configuration_ranks_as_the_tunings_all_tasks_model() {
    let root = root();
    let model: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("tasks/docir/models/lambdamart.model.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(model["method"], "lambdamart");
    // The suite's copy is the model `ranklab tune` wrote, byte for byte.
    assert_eq!(
        std::fs::read(root.join("tasks/docir/models/lambdamart.model.json")).unwrap(),
        std::fs::read(root.join("reports/docir/tune-learned-lambdamart.model.json")).unwrap(),
        "tasks/docir/models/lambdamart.model.json is not the tuning's model"
    );
    let want_features = [
        "bm25",
        "bm25.rank",
        "dense",
        "dense.rank",
        "lifecycle.active",
        "lifecycle.superseded",
        "lifecycle.deprecated",
        "history.first-class",
        "history.amendment",
        "history.editorial-only",
        "history.versions",
        "age",
    ];
    assert_eq!(model["features"], serde_json::json!(want_features));

    // Replay the experiments file into a fresh report tree (recorded model outputs copied).
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("reports");
    common::copy_dir(
        &root.join("reports/docir/runs/models"),
        &reports.join("docir/runs/models"),
    );
    let o = common::ranklab(
        &root,
        &[
            "run",
            "tasks/docir",
            "-x",
            "tasks/docir/experiments-learned.yaml",
            "--from-recording",
            "--reports",
            reports.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let replayed = read_run(&reports.join("docir/runs/lambdamart.trec"));

    let bm25 = read_run(&root.join("reports/docir/runs/bm25.trec"));
    let dense = read_run(&root.join("reports/docir/runs/dense.trec"));
    let corpus = Corpus::load(&root.join("corpora/docir")).unwrap();
    let newest = corpus.docs.iter().filter_map(|d| d.updated_at).max();
    let one = |b: bool| if b { 1.0 } else { 0.0 };
    assert_eq!(replayed.len(), 35);
    for (task, got) in &replayed {
        let (l, s) = (&bm25[task], &dense[task]);
        let mut ids: Vec<&str> = l.iter().chain(s).map(|(d, _)| d.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut want: Vec<(String, f32)> = ids
            .iter()
            .map(|&id| {
                let d = corpus.docs.iter().find(|d| d.id == id).unwrap();
                let (bs, br) = in_list(l, id);
                let (ds, dr) = in_list(s, id);
                let age = match (newest, d.updated_at) {
                    (Some(n), Some(u)) => (n - u).num_days() as f64,
                    _ => 0.0,
                };
                let row = [
                    bs,
                    br,
                    ds,
                    dr,
                    one(d.lifecycle == Lifecycle::Active),
                    one(d.lifecycle == Lifecycle::Superseded),
                    one(d.lifecycle == Lifecycle::Deprecated),
                    one(d.history == History::FirstClass),
                    one(d.history == History::Amendment),
                    one(d.history == History::EditorialOnly),
                    (d.lifecycle_log.len() + 1) as f64,
                    age,
                ];
                (id.to_string(), score(&model, &row) as f32)
            })
            .collect();
        // Score descending, then document id descending (byte order).
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        assert_eq!(got, &want, "task {task}");
    }
}

/// A missing model file and one that is not a model: exit 2, the experiments file:line of the
/// configuration and the model file named, nothing written.
#[test]
fn a_bad_model_file_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    common::copy_suite(&tasks, "docir", &[], &[]);
    let body = "experiment: bad\nconfigurations:\n  - name: fusion\n    retriever: fusion\n  - name: lm\n    retriever: learned\n    model: lm.model.json\n";
    std::fs::write(tasks.join("docir/experiments-bad.yaml"), body).unwrap();
    let run = || {
        common::ranklab(
            dir.path(),
            &[
                "run",
                "tasks/docir",
                "-x",
                "tasks/docir/experiments-bad.yaml",
            ],
        )
    };
    let o = run();
    common::assert_bad_input(
        &o,
        "tasks/docir/experiments-bad.yaml:5:",
        &["model file tasks/docir/lm.model.json", "No such file"],
    );
    std::fs::write(tasks.join("docir/lm.model.json"), "{\"format\": \"x\"}").unwrap();
    let o = run();
    common::assert_bad_input(
        &o,
        "tasks/docir/experiments-bad.yaml:5:",
        &[
            "model file tasks/docir/lm.model.json",
            "not a learned model",
        ],
    );
    assert!(!dir.path().join("reports").exists());
}

/// (score, 1-based rank) of `id` among the first `width` lines of a reranked run (its shortlist,
/// best first, each line's score the model's), else (the shortlist's minimum, width + 1).
fn in_shortlist(list: &[(String, f32)], id: &str, width: usize) -> (f64, f64) {
    let cut = &list[..list.len().min(width)];
    match cut.iter().position(|(d, _)| d == id) {
        Some(i) => (f64::from(cut[i].1), (i + 1) as f64),
        None => (
            cut.iter()
                .map(|x| f64::from(x.1))
                .fold(f64::INFINITY, f64::min),
            (width + 1) as f64,
        ),
    }
}

/// A model using the `cross-encoder` and `colbert` features (the all-tasks model of
/// `tasks/docir/tune-learned-models.yaml`) replays as `retriever: learned` with
/// `shortlist: { width: 20, from: rrf }`. Oracle, besides the hand-walked trees above: the
/// model-feature columns read from the committed runs of the two rerank stages over the top 20
/// of RRF (`reports/docir/runs/fusion+L12@20.trec`, `fusion+colbert@20.trec`: their first 20
/// lines per task are the shortlist, by the model's score; a document below gets the
/// shortlist's minimum and rank 21, docs/tuning.md); and the replay's MRR against the committed
/// tuning report's in-sample MRR (`reports/docir/tune-learned-models.json`, 0.9857).
#[test]
fn a_learned_model_with_reranker_features_replays_to_the_tunings_in_sample_value() {
    let root = root();
    let model: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("tasks/docir/models/lambdamart-models.model.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(root.join("tasks/docir/models/lambdamart-models.model.json")).unwrap(),
        std::fs::read(root.join("reports/docir/tune-learned-models.model.json")).unwrap(),
        "tasks/docir/models/lambdamart-models.model.json is not the tuning's model"
    );
    let tail = [
        "cross-encoder",
        "cross-encoder.rank",
        "colbert",
        "colbert.rank",
    ];
    let features: Vec<&str> = model["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    assert_eq!(features.len(), 16);
    assert_eq!(&features[12..], tail);

    let dir = tempfile::tempdir().unwrap();
    let reports = replay_learned(&root, dir.path());
    let replayed = read_run(&reports.join("docir/runs/lambdamart-models.trec"));
    // The companions that scored the features are not reported.
    assert!(!reports
        .join("docir/runs/lambdamart-models~colbert.trec")
        .exists());

    let runs = root.join("reports/docir/runs");
    let (bm25, dense) = (
        read_run(&runs.join("bm25.trec")),
        read_run(&runs.join("dense.trec")),
    );
    let ce = read_run(&runs.join("fusion+L12@20.trec"));
    let colbert = read_run(&runs.join("fusion+colbert@20.trec"));
    let corpus = Corpus::load(&root.join("corpora/docir")).unwrap();
    let newest = corpus.docs.iter().filter_map(|d| d.updated_at).max();
    let judged = read_qrels(&root.join("tasks/docir/suite.yaml"));
    let mut rr_sum = 0.0;
    assert_eq!(replayed.len(), 35);
    for (task, got) in &replayed {
        let (l, s) = (&bm25[task], &dense[task]);
        let mut ids: Vec<&str> = l.iter().chain(s).map(|(d, _)| d.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut want: Vec<(String, f32)> = ids
            .iter()
            .map(|&id| {
                let d = corpus.docs.iter().find(|d| d.id == id).unwrap();
                let (bs, br) = in_list(l, id);
                let (ds, dr) = in_list(s, id);
                let (cs, cr) = in_shortlist(&ce[task], id, 20);
                let (ms, mr) = in_shortlist(&colbert[task], id, 20);
                let mut row = vec![bs, br, ds, dr];
                row.extend(record_columns(d, newest));
                row.extend([cs, cr, ms, mr]);
                (id.to_string(), score(&model, &row) as f32)
            })
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        assert_eq!(got, &want, "task {task}");
        let first = got.iter().position(|(d, _)| judged[task].contains(d));
        rr_sum += first.map_or(0.0, |i| 1.0 / (i + 1) as f64);
    }
    let tuning: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("reports/docir/tune-learned-models.json")).unwrap(),
    )
    .unwrap();
    let in_sample = tuning["in_sample"]["MRR"].as_f64().unwrap();
    assert!(
        (rr_sum / 35.0 - in_sample).abs() < 1e-12,
        "replayed MRR {} against the tuning's in-sample {in_sample}",
        rr_sum / 35.0
    );
}

/// Each task's relevant document ids, read from the suite file's `expected:` lists.
fn read_qrels(suite: &Path) -> BTreeMap<String, Vec<String>> {
    let v: Value = yaml_serde::from_str(&std::fs::read_to_string(suite).unwrap()).unwrap();
    let mut out = BTreeMap::new();
    for t in v["tasks"].as_array().unwrap() {
        let ids = match &t["expected"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(a) => a.iter().map(|x| x.as_str().unwrap().to_string()).collect(),
            other => panic!("expected: {other}"),
        };
        out.insert(t["id"].as_str().unwrap().to_string(), ids);
    }
    out
}

/// Replays `tasks/docir/experiments-learned.yaml` from the recorded model outputs into
/// `dir/reports`; returns that folder.
fn replay_learned(root: &Path, dir: &Path) -> PathBuf {
    let reports = dir.join("reports");
    common::copy_dir(
        &root.join("reports/docir/runs/models"),
        &reports.join("docir/runs/models"),
    );
    let o = common::ranklab(
        root,
        &[
            "run",
            "tasks/docir",
            "-x",
            "tasks/docir/experiments-learned.yaml",
            "--from-recording",
            "--reports",
            reports.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    reports
}

/// The record's columns by hand (docs/tuning.md): lifecycle and history one-hot, the number of
/// versions, and the age in days against the corpus's newest `updated_at`.
fn record_columns(
    d: &ranklab_engine::corpus::Document,
    newest: Option<chrono::NaiveDate>,
) -> [f64; 8] {
    let one = |b: bool| if b { 1.0 } else { 0.0 };
    let age = match (newest, d.updated_at) {
        (Some(n), Some(u)) => (n - u).num_days() as f64,
        _ => 0.0,
    };
    [
        one(d.lifecycle == Lifecycle::Active),
        one(d.lifecycle == Lifecycle::Superseded),
        one(d.lifecycle == Lifecycle::Deprecated),
        one(d.history == History::FirstClass),
        one(d.history == History::Amendment),
        one(d.history == History::EditorialOnly),
        (d.lifecycle_log.len() + 1) as f64,
        age,
    ]
}
