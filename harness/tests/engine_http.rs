//! An HTTP engine in engine fusion and in the `external` learned feature (issue 44): MiniSearch
//! behind HTTP (`examples/engines/minisearch/http.js`), started here on 127.0.0.1 and stopped
//! here, recorded once (`ranklab run --record`), then replayed from its recording with the
//! engine stopped. Properties checked:
//! - the replayed weighted fusion `wsum-http` (0.3 BM25 + 0.4 dense + 0.3 the engine, min-max)
//!   is, task by task, the hand sum of the replay's BM25 and dense runs and the engine's raw
//!   HTTP responses kept in its recording (`/body/results`, read with serde_json);
//! - the replayed `le-http` (`retriever: learned` with docir's `tune-learned-engine` model and
//!   the HTTP engine as its `engine:`) is the model computed by hand over the same lists;
//! - the recordings keep the URL's `${RANKLAB_MS_PORT}`, never the port it stood for.
//!
//! Oracle: `learned_hand` (hand computations from docs/tuning.md and docs/formats.md), over
//! run files and recorded responses; not the replay's fusion or feature code. Needs `npm ci` in
//! examples/engines/minisearch (`just engines` does; .ci/run too).

mod common;
mod learned_hand;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use learned_hand::{engine_lists, read_run, weighted_sum};
use ranklab_engine::corpus::Corpus;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// MiniSearch behind HTTP, stopped on drop (its own child, by handle).
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `node http.js CORPUS 0` and returns it with the port it printed.
fn start() -> (Server, String) {
    let dir = root().join("examples/engines/minisearch");
    assert!(
        dir.join("node_modules").is_dir(),
        "{}: run `npm ci` there first (`just engines` does; .ci/run too)",
        dir.display()
    );
    let corpus = std::path::absolute(root().join("corpora/docir")).unwrap();
    let mut child = Command::new("node")
        .arg("http.js")
        .arg(&corpus)
        .arg("0")
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    let mut port = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    (Server(child), port.trim().to_string())
}

const HTTP: &str = r#"{ url: "http://127.0.0.1:${RANKLAB_MS_PORT}/search", body: '{"q": "{{query}}", "limit": {{k}}}', hits: /results, id: /id, score: /score }"#;

/// `ranklab run tasks/docir -x EX --reports R MODE` from the repository, with the port.
fn run(ex: &Path, reports: &Path, mode: &str, port: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(root())
        .args(["run", "tasks/docir", "-x"])
        .arg(ex)
        .arg("--reports")
        .arg(reports)
        .arg(mode)
        .env("RANKLAB_MS_PORT", port)
        .output()
        .expect("run ranklab")
}

#[test]
fn an_http_engine_fuses_and_feeds_a_learned_model_from_its_recording() {
    let root = root();
    let model_path = root.join("reports/docir/tune-learned-engine.model.json");
    let dir = tempfile::tempdir().unwrap();
    let ex = dir.path().join("experiments-http.yaml");
    let body = format!(
        "experiment: http\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: dense\n    retriever: dense\n    embedder: bge-small-en-v1.5\n  - name: wsum-http\n    retriever: fusion\n    engine:\n      http: {HTTP}\n    fusion: {{ method: weighted, normalize: minmax, weights: {{ bm25: 0.3, dense: 0.4, engine: 0.3 }} }}\n  - name: le-http\n    retriever: learned\n    model: {}\n    engine:\n      http: {HTTP}\n",
        model_path.display()
    );
    std::fs::write(&ex, body).unwrap();
    let reports = dir.path().join("reports");
    let runs = reports.join("docir/runs");
    common::copy_dir(
        &root.join("reports/docir/runs/models"),
        &runs.join("models"),
    );

    let (server, port) = start();
    let o = run(&ex, &reports, "--record", &port);
    assert!(o.status.success(), "{}", common::stderr(&o));
    drop(server);
    for f in ["wsum-http.trec", "le-http.trec", "bm25.trec", "dense.trec"] {
        std::fs::remove_file(runs.join(f)).unwrap();
    }
    // The engine is stopped: every list below is read from the recordings.
    let o = run(&ex, &reports, "--from-recording", "1");
    assert!(o.status.success(), "{}", common::stderr(&o));

    let corpus = Corpus::load(&root.join("corpora/docir")).unwrap();
    let tasks = learned_hand::task_ids(&root.join("tasks/docir/suite.yaml"));
    let (bm25, dense) = (
        read_run(&runs.join("bm25.trec")),
        read_run(&runs.join("dense.trec")),
    );
    for name in ["wsum-http", "le-http"] {
        let text = std::fs::read_to_string(runs.join(format!("{name}.recording.json"))).unwrap();
        assert!(
            text.contains("127.0.0.1:${RANKLAB_MS_PORT}/search"),
            "{name}"
        );
        assert!(!text.contains(&format!("127.0.0.1:{port}")), "{name}");
    }

    let engine = engine_lists(
        &runs.join("wsum-http.recording.json"),
        "/body/results",
        &tasks,
        &corpus,
    );
    let got = read_run(&runs.join("wsum-http.trec"));
    assert_eq!(got.len(), tasks.len());
    for (task, g) in &got {
        let want = weighted_sum([&bm25[task], &dense[task], &engine[task]], [0.3, 0.4, 0.3]);
        assert_eq!(g.len(), want.len(), "{task}");
        for (i, ((gd, gs), (wd, ws))) in g.iter().zip(&want).enumerate() {
            assert_eq!(gd, wd, "{task} rank {}", i + 1);
            assert!(
                (f64::from(*gs) - ws).abs() < 1e-5,
                "{task} {gd}: {gs} vs {ws}"
            );
        }
    }

    let model: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&model_path).unwrap()).unwrap();
    let engine = engine_lists(
        &runs.join("le-http.recording.json"),
        "/body/results",
        &tasks,
        &corpus,
    );
    let want = learned_hand::learned(&bm25, &dense, &engine, &model, &corpus);
    let got = read_run(&runs.join("le-http.trec"));
    assert_eq!(got.len(), tasks.len());
    for (task, g) in &got {
        assert_eq!(g, &want[task], "task {task}");
    }
}
