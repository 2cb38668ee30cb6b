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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ranklab_engine::corpus::{Corpus, History, Lifecycle};
use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

type Run = BTreeMap<String, Vec<(String, f32)>>;

/// A run file as task -> [(document id, score)] in file order.
fn read_run(path: &Path) -> Run {
    let mut out: Run = BTreeMap::new();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        out.entry(f[0].to_string())
            .or_default()
            .push((f[2].to_string(), f[4].parse().unwrap()));
    }
    out
}

/// MiniSearch's recorded hits per task, inside the corpus, score descending then id
/// descending, at most 100.
fn engine_lists(path: &Path, corpus: &Corpus) -> Run {
    let text = std::fs::read_to_string(path).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let mut out = Run::new();
    for e in doc["exchanges"].as_array().unwrap() {
        let task = e["request"]["task"].as_str().unwrap().to_string();
        let mut hits: Vec<(String, f32)> = e["response"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let id = h["id"].as_str().unwrap().to_string();
                (id, h["score"].as_f64().unwrap() as f32)
            })
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        hits.truncate(100);
        hits.retain(|(id, _)| corpus.docs.iter().any(|d| &d.id == id));
        out.insert(task, hits);
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

/// The linear model's score of a raw row, from its JSON.
fn score(model: &Value, row: &[f64]) -> f64 {
    let f = |k: &str, i: usize| model["normalization"][k][i].as_f64().unwrap();
    let w = model["weights"].as_array().unwrap();
    let mut s = 0.0;
    for (i, x) in row.iter().enumerate() {
        s += w[i].as_f64().unwrap() * ((x - f("mean", i)) / f("scale", i));
    }
    s
}

/// The expected ranking of every task, computed by hand (see the module comment).
fn by_hand(root: &Path, model: &Value, corpus: &Corpus) -> Run {
    let bm25 = read_run(&root.join("reports/docir/runs/bm25.trec"));
    let dense = read_run(&root.join("reports/docir/runs/dense.trec"));
    let engine = engine_lists(
        &root.join("reports/docir/runs/minisearch.recording.json"),
        corpus,
    );
    let newest = corpus.docs.iter().filter_map(|d| d.updated_at).max();
    let one = |b: bool| if b { 1.0 } else { 0.0 };
    let mut out = Run::new();
    for (task, l) in &bm25 {
        let (s, e) = (&dense[task], &engine[task]);
        let ids: BTreeSet<&str> = l
            .iter()
            .chain(s)
            .chain(e)
            .map(|(d, _)| d.as_str())
            .collect();
        let mut want: Vec<(String, f32)> = ids
            .iter()
            .map(|&id| {
                let d = corpus.docs.iter().find(|d| d.id == id).unwrap();
                let (bs, br) = in_list(l, id);
                let (ds, dr) = in_list(s, id);
                let (es, er) = in_list(e, id);
                let age = match (newest, d.updated_at) {
                    (Some(n), Some(u)) => (n - u).num_days() as f64,
                    _ => 0.0,
                };
                let row = [
                    bs,
                    br,
                    ds,
                    dr,
                    es,
                    er,
                    one(d.lifecycle == Lifecycle::Active),
                    one(d.lifecycle == Lifecycle::Superseded),
                    one(d.lifecycle == Lifecycle::Deprecated),
                    one(d.history == History::FirstClass),
                    one(d.history == History::Amendment),
                    one(d.history == History::EditorialOnly),
                    (d.lifecycle_log.len() + 1) as f64,
                    age,
                ];
                (id.to_string(), score(model, &row) as f32)
            })
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        out.insert(task.clone(), want);
    }
    out
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
