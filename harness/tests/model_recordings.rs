//! Model outputs recorded beside the reports (`<reports>/<suite>/runs/models/`, written by
//! `run` and `bench`): a replay `--from-recording` takes the recorded vectors and scores before
//! computing anything, so the gate and the reports do not depend on this CPU's int8 kernels
//! (ONNX Runtime's differ between AVX2 and AVX-512 VNNI machines; see
//! `ranklab_engine::models::recorded`).
//!
//! The oracle is the vector cache of a fresh cache root: a model that ran leaves its vectors
//! there, a replay served by the recording leaves nothing.

use std::path::Path;
use std::process::Command;

mod common;
use common::{code, stderr, stdout};

fn repo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Vectors files (`*.emb`) under the cache root `cache`.
fn vector_files(cache: &Path) -> usize {
    std::fs::read_dir(cache.join("embeddings"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "emb"))
                .count()
        })
        .unwrap_or(0)
}

fn gate(dir: &Path, cache: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(dir)
        .args(["gate", "--from-recording"])
        .env("RANKLAB_CACHE", cache)
        .output()
        .expect("run ranklab")
}

#[test]
fn the_gate_from_the_recording_runs_no_model_and_without_it_the_model_runs() {
    // This repository's suites, baseline and recorded model outputs.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for sub in ["tasks", "corpora"] {
        common::copy_dir(&repo().join(sub), &d.join(sub));
    }
    for suite in ["docir", "brain"] {
        let models = Path::new("reports").join(suite).join("runs/models");
        assert!(
            repo().join(&models).is_dir(),
            "{} is committed",
            models.display()
        );
        common::copy_dir(&repo().join(&models), &d.join(&models));
    }
    std::fs::copy(
        repo().join("reports/baseline.json"),
        d.join("reports/baseline.json"),
    )
    .unwrap();

    // From the recording, with an empty vector cache: the baseline's values, no vector computed.
    let cold = tempfile::tempdir().unwrap();
    let cache = common::cache_with_shared_models(cold.path());
    let o = gate(d, &cache);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert_eq!(
        vector_files(&cache),
        0,
        "a vector was computed although the recording holds them all: {}",
        stderr(&o)
    );

    // The other half: without the recording the model embeds the sections here.
    for suite in ["docir", "brain"] {
        std::fs::remove_dir_all(d.join("reports").join(suite).join("runs/models")).unwrap();
    }
    let o = gate(d, &cache);
    assert!(matches!(code(&o), 0 | 1), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(vector_files(&cache), 1, "{}", stderr(&o));
}
