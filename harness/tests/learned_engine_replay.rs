//! A learned model with the `external` feature replays as `retriever: learned` (with the
//! `engine:` it was trained with) to the ranking its tuning's all-tasks model gives, and to the
//! tuning's in-sample value; without the engine's recording it is refused, never ranked over an
//! empty list.
//!
//! Oracle, independent of the replay's feature and scoring code (`replay/features.rs`,
//! `ranklab_engine::learn`): the features are computed here as docs/tuning.md's feature table
//! defines them, from the committed BM25 and bge-small runs (`reports/docir/runs/bm25.trec`,
//! `dense.trec`: the lists `wsum-minisearch` fuses, default BM25 and bge-small at depth 100),
//! MiniSearch's raw recorded responses (`reports/docir/runs/minisearch.recording.json`: the
//! hits of each task, ordered here by score descending then id descending, scores as f32) and
//! the corpus records; the candidates are the union of the three lists; the model's score is
//! the z-scored row times the model file's weights, summed in feature order; the ranking is
//! score (as f32) descending, then document id descending. The in-sample MRR is the committed
//! tuning report's (`reports/docir/tune-learned-engine.json`), and the replayed run's MRR is
//! computed here from the suite's qrels.

mod common;
mod learned_hand;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use learned_hand::{read_run, Run};
use ranklab_engine::corpus::Corpus;
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The expected ranking of every task, computed by hand (see the module comment).
fn by_hand(root: &Path, model: &Value, corpus: &Corpus) -> Run {
    let bm25 = read_run(&root.join("reports/docir/runs/bm25.trec"));
    let dense = read_run(&root.join("reports/docir/runs/dense.trec"));
    let tasks = learned_hand::task_ids(&root.join("tasks/docir/suite.yaml"));
    let engine = learned_hand::engine_lists(
        &root.join("reports/docir/runs/minisearch.recording.json"),
        "/hits",
        &tasks,
        corpus,
    );
    learned_hand::learned(&bm25, &dense, &engine, model, corpus)
}

/// The experiments file of the test: `fusion` and `le`, the tuning's model with MiniSearch as
/// `experiments-engine-fusion.yaml` writes it (so its engine hash is the recording's).
fn experiments(dir: &Path, model: &Path) -> PathBuf {
    let body = format!(
        "experiment: le\nconfigurations:\n  - name: fusion\n    retriever: fusion\n  - name: le\n    retriever: learned\n    model: {}\n    engine:\n      command: [node, serve.js, ../../../corpora/docir]\n      cwd: ../../examples/engines/minisearch\n      version: true\n",
        model.display()
    );
    let path = dir.join("experiments-le.yaml");
    std::fs::write(&path, body).unwrap();
    path
}

/// `ranklab run tasks/docir -x EX --from-recording --reports REPORTS` from the repository.
fn run(root: &Path, ex: &Path, reports: &Path) -> std::process::Output {
    common::ranklab(
        root,
        &[
            "run",
            "tasks/docir",
            "-x",
            ex.to_str().unwrap(),
            "--from-recording",
            "--reports",
            reports.to_str().unwrap(),
        ],
    )
}

#[test]
fn a_learned_model_with_the_external_feature_replays_to_its_in_sample_value() {
    let root = root();
    let model_path = root.join("reports/docir/tune-learned-engine.model.json");
    let model: Value =
        serde_json::from_str(&std::fs::read_to_string(&model_path).unwrap()).unwrap();
    assert_eq!(model["method"], "coordinate-ascent");
    assert_eq!(model["features"][4], "external");
    assert_eq!(model["features"][5], "external.rank");
    assert_eq!(model["features"].as_array().unwrap().len(), 14);

    let dir = tempfile::tempdir().unwrap();
    let ex = experiments(dir.path(), &model_path);
    let reports = dir.path().join("reports");
    let runs = reports.join("docir/runs");
    common::copy_dir(
        &root.join("reports/docir/runs/models"),
        &runs.join("models"),
    );
    std::fs::copy(
        root.join("reports/docir/runs/minisearch.recording.json"),
        runs.join("minisearch.recording.json"),
    )
    .unwrap();
    let o = run(&root, &ex, &reports);
    assert!(o.status.success(), "{}", common::stderr(&o));
    let replayed = read_run(&runs.join("le.trec"));

    let corpus = Corpus::load(&root.join("corpora/docir")).unwrap();
    let want = by_hand(&root, &model, &corpus);
    assert_eq!(replayed.len(), 35);
    for (task, got) in &replayed {
        assert_eq!(got, &want[task], "task {task}");
    }

    // MRR of the replayed run against the suite's qrels (grade > 0 relevant) is the tuning's
    // in-sample value of its all-tasks model.
    let qrels = std::fs::read_to_string(reports.join("docir/qrels.txt")).unwrap();
    let mut relevant: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for line in qrels.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f[3].parse::<i32>().unwrap() > 0 {
            relevant.entry(f[0]).or_default().insert(f[2]);
        }
    }
    let rr: Vec<f64> = replayed
        .iter()
        .map(|(t, list)| {
            list.iter()
                .position(|(d, _)| relevant[t.as_str()].contains(d.as_str()))
                .map_or(0.0, |i| 1.0 / (i + 1) as f64)
        })
        .collect();
    let mrr = rr.iter().sum::<f64>() / rr.len() as f64;
    let tuned: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("reports/docir/tune-learned-engine.json")).unwrap(),
    )
    .unwrap();
    let in_sample = tuned["in_sample"]["MRR"].as_f64().unwrap();
    assert!(
        (mrr - in_sample).abs() < 1e-12,
        "replayed MRR {mrr}, tuning's in-sample {in_sample}"
    );
}

/// Without a recording of the engine (none of its hash in the report tree) the replay is
/// refused: exit 2, the configuration and the hash named, no report written.
#[test]
fn a_learned_model_with_the_external_feature_needs_the_engines_recording() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let ex = experiments(
        dir.path(),
        &root.join("reports/docir/tune-learned-engine.model.json"),
    );
    let reports = dir.path().join("reports");
    common::copy_dir(
        &root.join("reports/docir/runs/models"),
        &reports.join("docir/runs/models"),
    );
    let o = run(&root, &ex, &reports);
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(
        err.contains("configuration \"le\": no recording")
            && err.contains("has its engine hash 291a911c161f"),
        "{err}"
    );
    assert!(!reports.join("docir/le.md").exists());
    assert!(!reports.join("docir/runs/le.trec").exists());
}

/// A model with the `external` feature and no `engine:` beside it is refused at load, with the
/// configuration's line and what to add.
#[test]
fn a_learned_model_with_the_external_feature_and_no_engine_is_refused() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let body = format!(
        "experiment: le\nconfigurations:\n  - name: fusion\n    retriever: fusion\n  - name: le\n    retriever: learned\n    model: {}\n",
        root.join("reports/docir/tune-learned-engine.model.json")
            .display()
    );
    let ex = dir.path().join("experiments-le.yaml");
    std::fs::write(&ex, body).unwrap();
    let o = run(&root, &ex, &dir.path().join("reports"));
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(
        err.contains("experiments-le.yaml:5:")
            && err.contains("add the engine it was trained with"),
        "{err}"
    );
}

/// `engine:` beside `retriever: learned` with a rerank stage is refused at load (the rerank would
/// reorder the engine's list before the model reads it as its feature), with the line.
#[test]
fn a_learned_model_with_an_engine_takes_no_rerank_stage() {
    let root = root();
    let dir = tempfile::tempdir().unwrap();
    let model = root.join("reports/docir/tune-learned-engine.model.json");
    let ex = experiments(dir.path(), &model);
    let body = std::fs::read_to_string(&ex).unwrap()
        + "    rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 20 }\n";
    std::fs::write(&ex, body).unwrap();
    let o = run(&root, &ex, &dir.path().join("reports"));
    assert_eq!(o.status.code(), Some(2), "{}", common::stderr(&o));
    let err = common::stderr(&o);
    assert!(
        err.contains("experiments-le.yaml:5:") && err.contains("takes no `rerank:` or `wiring:`"),
        "{err}"
    );
}
