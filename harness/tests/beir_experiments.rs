//! `ranklab beir DIR --experiments FILE` replays an experiments file's configurations over a
//! BEIR collection: what `ranklab tune FILE --write` wrote beside a tuning over the collection.
//!
//! Oracle: the committed tuning report of `bench/scifact-tune/tune-fusion-ce.yaml`
//! (`reports/beir/scifact/tune-fusion-ce.json`): its in-sample nDCG@10 (the weights chosen on
//! all 300 queries) and the configuration as written, computed by the tuning's fast path, not
//! by the replay `ranklab beir` runs. The written file is
//! `bench/scifact-tune/experiments-tune-fusion-ce.yaml` (`--write` on that tuning, committed).
//! Needs SciFact (`$RANKLAB_SHARED_DATA/scifact`, else `../shared/data/scifact`) and its
//! int8 cross-encoder scores over BM25's top 100 in the score cache (without them the replay
//! scores 29,966 pairs, about 40 minutes on 2 cores).

mod common;

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

// Ignored by `just test`: on an empty cache (CI) it would score 29,966 pairs (about 40 minutes),
// and with another CPU's int8 kernels than the tuning's (AVX2 against AVX-512 VNNI) other
// logits. Run it where the tuning's scores are in the cache: `bash
// bench/scifact-finetune/carry.sh bring`, then `cargo test --release -p ranklab --test
// beir_experiments -- --ignored`.
#[test]
#[ignore = "needs SciFact's int8 cross-encoder scores in the cache (bench/scifact-finetune/carry.sh bring)"]
fn beir_replays_the_tuned_experiments_file_to_the_tunings_in_sample_value() {
    let data = common::trec_eval_data().join("../scifact");
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("beir");
    let o = common::ranklab(
        &repo(),
        &[
            "beir",
            data.to_str().unwrap(),
            "--experiments",
            "bench/scifact-tune/experiments-tune-fusion-ce.yaml",
            "--reports",
            reports.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", common::stderr(&o));
    let tuning = json(&repo().join("reports/beir/scifact/tune-fusion-ce.json"));
    let report = json(&reports.join("scifact/tuned-fusion-ce.json"));
    let value = |name: &str| {
        report["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["configuration"] == name || r["configuration"] == format!("{name} (baseline)")
            })
            .unwrap_or_else(|| panic!("no row {name} in the report"))["nDCG@10"]
            .as_f64()
            .unwrap()
    };
    let in_sample = tuning["in_sample"]["nDCG@10"].as_f64().unwrap();
    let as_written = tuning["in_sample"]["as_written"].as_f64().unwrap();
    // The report rounds to 4 places.
    assert!((value("fusion-weighted-tuned") - in_sample).abs() < 5e-5);
    assert!((value("fusion-weighted") - as_written).abs() < 5e-5);
}

/// Flags that shape `--configs`' configurations are refused beside `--experiments`: exit 2,
/// the file named, nothing written.
#[test]
fn beir_refuses_bm25_flags_beside_an_experiments_file() {
    let dir = tempfile::tempdir().unwrap();
    let reports = dir.path().join("beir");
    let o = common::ranklab(
        &repo(),
        &[
            "beir",
            common::fixture("gate/beir/tinybeir").to_str().unwrap(),
            "--experiments",
            "bench/scifact-tune/experiments-tune-fusion-ce.yaml",
            "--k1",
            "1.2",
            "--reports",
            reports.to_str().unwrap(),
        ],
    );
    assert_eq!(common::code(&o), 2, "{}", common::stderr(&o));
    assert!(
        common::stderr(&o).contains(
            "experiments-tune-fusion-ce.yaml: its configurations run as written; remove --k1"
        ),
        "{}",
        common::stderr(&o)
    );
    assert!(!reports.exists());
}
