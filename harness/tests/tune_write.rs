//! `ranklab tune FILE --write` for a `rerank.interpolate` tuning, a weighted fusion that weighs
//! its rerank stage, one of two rerankers (`rerankers:`) and learned tunings (with and without reranker features), on a
//! copy of docir (its experiments files and recorded model outputs):
//!
//! - when the out-of-fold gain over the shipped configuration is detectable, `--write` adds
//!   `experiments-tune-<name>.yaml` (and, for a learned tuning, the model beside the suite,
//!   `models/tune-<name>.model.json`, byte for byte the model the tuning wrote to reports/);
//!   the oracle that the written configuration is the one tuned on all tasks: replayed by
//!   `ranklab run` (the replay, another code path than the tuning's fast path), it reaches the
//!   in-sample value the tuning's JSON reports;
//! - when the gain is not detectable, `--write` says so, exits 2 and writes no experiments file
//!   and no model beside the suite (the report is written);
//! - a tuning of a configuration with `engine:` (MiniSearch, `experiments-engine-fusion.yaml`)
//!   writes the engine as the experiments file writes it, so the written configuration
//!   replays from MiniSearch's committed recording (found by the engine's hash) to the
//!   tuning's in-sample value: the weighted fusion (`tune-engine-fusion.yaml`, against
//!   `fusion+smollm2@20`, since against `fusion` its gain is not detectable) and the learned
//!   model with the `external` feature (`tune-learned-engine.yaml`, p 0.0216 against `fusion`
//!   in reports/docir/tune-learned-engine.md).
//!
//! Detectable here: the interpolation, the fusion weighing its rerank stage
//! (`tune-fusion-rerank.yaml`), the fusion of two rerankers (`tune-rerankers-fusion.yaml`) and the learned ranker with the reranker features
//! (`tune-learned-models.yaml`) against `fusion+smollm2@20` (MRR 0.2081 in
//! reports/docir/retrieval.md), and docir's LambdaMART against `fusion` (p 0.0057 in
//! reports/docir/tune-learned-lambdamart.md); not detectable: the interpolation against
//! `fusion` (p 0.41, tune-interpolate.md) and coordinate ascent against `fusion` (p 0.0594,
//! tune-learned-ca.md).

use std::path::Path;

mod common;
use common::{code, ranklab, stderr};

fn repo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A scratch root holding docir's suite, its experiments files named here, and the recorded
/// model outputs; `tuning` is written as `tasks/docir/tune-x.yaml`.
fn scratch(tuning: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        "experiments.yaml",
        "experiments-interpolate.yaml",
        "experiments-fusion-weights.yaml",
        "experiments-fusion-rerank.yaml",
        "experiments-engine-fusion.yaml",
    ];
    let bodies: Vec<(&str, String)> = files
        .iter()
        .map(|f| {
            let body = std::fs::read_to_string(repo().join("tasks/docir").join(f)).unwrap();
            (*f, body)
        })
        .collect();
    let refs: Vec<(&str, &str)> = bodies.iter().map(|(f, b)| (*f, b.as_str())).collect();
    common::copy_suite(&dir.path().join("tasks"), "docir", &refs, &[]);
    common::copy_dir(
        &repo().join("reports/docir/runs/models"),
        &dir.path().join("reports/docir/runs/models"),
    );
    // MiniSearch's recording, which `wsum-minisearch` and every configuration written with its
    // engine replay from (found by the engine's hash).
    std::fs::copy(
        repo().join("reports/docir/runs/minisearch.recording.json"),
        dir.path()
            .join("reports/docir/runs/minisearch.recording.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join("tasks/docir/tune-x.yaml"), tuning).unwrap();
    dir
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Tunes, writes, then replays the written experiments file and returns (the tuning's in-sample
/// value, the replayed value of `tuned`).
fn write_and_replay(dir: &Path, tuned: &str) -> (f64, f64) {
    let o = ranklab(dir, &["tune", "tasks/docir/tune-x.yaml", "--write"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let written = dir.join("tasks/docir/experiments-tune-x.yaml");
    let text = std::fs::read_to_string(&written).unwrap();
    assert!(
        text.contains("Tuned by `ranklab tune tasks/docir/tune-x.yaml`"),
        "{text}"
    );
    let o = ranklab(
        dir,
        &[
            "run",
            "tasks/docir",
            "-x",
            "tasks/docir/experiments-tune-x.yaml",
            "--from-recording",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let in_sample = json(&dir.join("reports/docir/tune-x.json"))["in_sample"]["MRR"]
        .as_f64()
        .unwrap();
    let run = json(&dir.join("reports/docir/tuned-x.json"));
    let row = run["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["configuration"] == tuned)
        .unwrap_or_else(|| panic!("no row {tuned} in {run}"));
    (in_sample, row["MRR"].as_f64().unwrap())
}

/// `tuning` written (`--write`) in a scratch copy of the repository and replayed: asserts the
/// written configuration `tuned` replays to the tuning's in-sample MRR, and returns the scratch
/// directory with the experiments file written.
fn written_replays(tuning: &str, tuned: &str) -> (tempfile::TempDir, String) {
    let dir = scratch(tuning);
    let (in_sample, replayed) = write_and_replay(dir.path(), tuned);
    assert!(
        (in_sample - replayed).abs() < 5e-5,
        "{in_sample} vs {replayed}"
    );
    let text =
        std::fs::read_to_string(dir.path().join("tasks/docir/experiments-tune-x.yaml")).unwrap();
    (dir, text)
}

/// Runs `--write` on a tuning whose gain is not detectable: exit 2, nothing beside the suite.
fn assert_refused(dir: &Path) {
    let o = ranklab(dir, &["tune", "tasks/docir/tune-x.yaml", "--write"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o)
            .contains("--write refused: the out-of-fold gain over \"fusion\" is not detectable"),
        "{}",
        stderr(&o)
    );
    assert!(!dir.join("tasks/docir/experiments-tune-x.yaml").exists());
    assert!(!dir.join("tasks/docir/models").exists());
    assert!(dir.join("reports/docir/tune-x.md").is_file());
}

const INTERP: &str = "tune: x\nconfiguration: fusion+L12@20~0.5\nmeasure: MRR\nfolds: 5\nseed: 42\nspace:\n  rerank.interpolate: [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]\n";

#[test]
fn write_adds_the_interpolation_chosen_on_all_tasks_only_when_detectable() {
    let (dir, text) = written_replays(
        &format!("{INTERP}shipped: fusion+smollm2@20\n"),
        "fusion+L12@20~0.5-tuned",
    );
    let chosen = json(&dir.path().join("reports/docir/tune-x.json"))["in_sample"]["chosen"]
        ["rerank.interpolate"]
        .as_f64()
        .unwrap();
    assert!(text.contains(&format!("interpolate: {chosen}")), "{text}");

    let dir = scratch(INTERP);
    assert_refused(dir.path());
}

#[test]
fn write_adds_the_learned_model_beside_the_suite_only_when_detectable() {
    let lm = std::fs::read_to_string(repo().join("tasks/docir/tune-learned-lambdamart.yaml"))
        .unwrap()
        .replace("tune: learned-lambdamart", "tune: x");
    let (dir, _) = written_replays(&lm, "wsum-learned");
    assert_eq!(
        std::fs::read(dir.path().join("tasks/docir/models/tune-x.model.json")).unwrap(),
        std::fs::read(dir.path().join("reports/docir/tune-x.model.json")).unwrap()
    );

    let ca = std::fs::read_to_string(repo().join("tasks/docir/tune-learned-ca.yaml"))
        .unwrap()
        .replace("tune: learned-ca", "tune: x");
    let dir = scratch(&ca);
    assert_refused(dir.path());
}

/// The tuning file `tasks/docir/<file>` renamed `x` and compared with `shipped`.
fn tuning(file: &str, shipped: &str) -> String {
    let text = std::fs::read_to_string(repo().join("tasks/docir").join(file)).unwrap();
    let body: Vec<String> = text
        .lines()
        .map(|l| match l.starts_with("tune:") {
            true => "tune: x".to_string(),
            false => l.to_string(),
        })
        .collect();
    format!("{}\nshipped: {shipped}\n", body.join("\n"))
}

/// A weighted fusion that weighs its rerank stage (BM25, bge-small and the L-12 over RRF's top
/// 20): the written configuration carries the rerank stage and the list its shortlist is cut
/// from, and replays to the tuning's in-sample MRR with the weights chosen on all tasks.
#[test]
fn write_adds_a_fusion_that_weighs_its_rerank_stage() {
    let (dir, text) = written_replays(
        &tuning("tune-fusion-rerank.yaml", "fusion+smollm2@20"),
        "wsum+L12@20-tuned",
    );
    let chosen = &json(&dir.path().join("reports/docir/tune-x.json"))["in_sample"]["chosen"];
    let w = |l: &str| chosen[format!("fusion.weights.{l}")].as_f64().unwrap();
    let line = format!(
        "weights: {{ bm25: {}, dense: {}, rerank: {} }}, shortlist_from: rrf",
        w("bm25"),
        w("dense"),
        w("rerank")
    );
    assert!(text.contains(&line), "{line} not in {text}");
    assert!(
        text.contains("rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 20 }"),
        "{text}"
    );
    // The report no longer sends the reader to copy the weights by hand.
    let md = std::fs::read_to_string(dir.path().join("reports/docir/tune-x.md")).unwrap();
    assert!(md.contains("`--write` adds it."), "{md}");
}

/// A weighted fusion of two rerankers over one shortlist (`rerankers:` cross-encoder and
/// ColBERT over RRF's top 20): the written configuration names both models under `rerankers:`
/// with the weights chosen on all tasks, and replays to the tuning's in-sample MRR.
#[test]
fn write_adds_a_fusion_of_two_rerankers() {
    let (dir, text) = written_replays(
        &tuning("tune-rerankers-fusion.yaml", "fusion+smollm2@20"),
        "wsum+L12+colbert@20-tuned",
    );
    let chosen = &json(&dir.path().join("reports/docir/tune-x.json"))["in_sample"]["chosen"];
    let w = |l: &str| chosen[format!("fusion.weights.{l}")].as_f64().unwrap();
    let line = format!(
        "weights: {{ bm25: {}, dense: {}, cross-encoder: {}, colbert: {} }}, shortlist_from: rrf, rerankers: {{ cross-encoder: {{ model: ms-marco-MiniLM-L-12-v2, shortlist: 20 }}, colbert: {{ model: answerai-colbert-small-v1, shortlist: 20 }} }}",
        w("bm25"),
        w("dense"),
        w("cross-encoder"),
        w("colbert")
    );
    assert!(text.contains(&line), "{line} not in {text}");
}

/// A learned model with the cross-encoder and ColBERT features: the written `retriever:
/// learned` configuration names the shortlist they were scored over and replays to the
/// tuning's in-sample MRR.
#[test]
fn write_adds_a_learned_model_with_reranker_features() {
    let (_dir, text) = written_replays(
        &tuning("tune-learned-models.yaml", "fusion+smollm2@20"),
        "wsum+L12@20-learned",
    );
    assert!(
        text.contains("shortlist: { width: 20, from: rrf }"),
        "{text}"
    );
}

/// The `engine:` block of `wsum-minisearch` as `experiments-engine-fusion.yaml` writes it (its
/// flow mapping, written back in block style by `--write`).
const MINISEARCH_BLOCK: &str = "    engine:\n      command:\n      - node\n      - serve.js\n      - ../../../corpora/docir\n      cwd: ../../examples/engines/minisearch\n      version: true\n";

/// A weighted fusion weighing MiniSearch's list: the written configurations carry the engine
/// as written and replay (from MiniSearch's recording, by hash) to the tuning's in-sample MRR.
#[test]
fn write_adds_a_fusion_that_weighs_an_engine() {
    let (dir, text) = written_replays(
        &tuning("tune-engine-fusion.yaml", "fusion+smollm2@20"),
        "wsum-minisearch-tuned",
    );
    assert_eq!(text.matches(MINISEARCH_BLOCK).count(), 2, "{text}");
    let chosen = &json(&dir.path().join("reports/docir/tune-x.json"))["in_sample"]["chosen"];
    let w = |l: &str| chosen[format!("fusion.weights.{l}")].as_f64().unwrap();
    let line = format!(
        "weights: {{ bm25: {}, dense: {}, engine: {} }}",
        w("bm25"),
        w("dense"),
        w("engine")
    );
    assert!(text.contains(&line), "{line} not in {text}");
}

/// A learned model with the `external` feature: the written `retriever: learned` configuration
/// carries MiniSearch as written and replays to the tuning's in-sample MRR.
#[test]
fn write_adds_a_learned_model_with_the_external_feature() {
    let (dir, text) = written_replays(
        &tuning("tune-learned-engine.yaml", "fusion"),
        "wsum-minisearch-learned",
    );
    let learned = text
        .split("  - name: wsum-minisearch-learned\n")
        .nth(1)
        .unwrap();
    assert!(learned.contains(MINISEARCH_BLOCK), "{text}");
    assert_eq!(
        std::fs::read(dir.path().join("tasks/docir/models/tune-x.model.json")).unwrap(),
        std::fs::read(dir.path().join("reports/docir/tune-x.model.json")).unwrap()
    );
}
