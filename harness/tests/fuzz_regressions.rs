//! Replays every committed fuzz input through the checks the fuzz targets run (the same file,
//! `fuzz/src/lib.rs`, included here), so CI covers what fuzzing found without fuzzing:
//! - `fuzz/regressions/<target>/`: each input that once crashed or broke a check (named after
//!   the bug it pins), plus hand-made tricky inputs;
//! - `fuzz/corpus/<target>/`: the seed corpora.
//!
//! Each input must pass its target's checks: no panic, errors name the file, accepted input
//! obeys the format's rules. A failure names the input file.

use std::path::{Path, PathBuf};

#[allow(dead_code, unexpected_cfgs)]
#[path = "../../fuzz/src/lib.rs"]
mod checks;

fn inputs(target: &str) -> Vec<PathBuf> {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
    let mut out = Vec::new();
    for kind in ["regressions", "corpus"] {
        if let Ok(entries) = std::fs::read_dir(fuzz.join(kind).join(target)) {
            out.extend(entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()));
        }
    }
    out.sort();
    out
}

fn replay(target: &str, check: impl Fn(&[u8])) {
    let inputs = inputs(target);
    assert!(!inputs.is_empty(), "no committed input for {target}");
    let mut failed = Vec::new();
    for p in &inputs {
        let bytes = std::fs::read(p).unwrap();
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&bytes))).is_err() {
            failed.push(p.display().to_string());
        }
    }
    assert!(
        failed.is_empty(),
        "{target}: {} of {} inputs fail:\n{}",
        failed.len(),
        inputs.len(),
        failed.join("\n")
    );
}

#[test]
fn trec_run_and_qrels_inputs() {
    replay("trec", checks::trec);
}

#[test]
fn front_matter_inputs() {
    replay("front_matter", checks::front_matter);
}

#[test]
fn suite_yaml_inputs() {
    let dir = tempfile::tempdir().unwrap();
    replay("suite_yaml", |b| checks::suite_yaml(b, dir.path()));
}

#[test]
fn beir_inputs() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("qrels")).unwrap();
    replay("beir", |b| checks::beir(b, dir.path()));
}

#[test]
fn http_response_inputs() {
    replay("http_response", checks::http_response);
}
