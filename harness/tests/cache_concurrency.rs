//! Two ranklab processes sharing one empty vector/score cache, started at the same time, both
//! finish with correct results (the same reports as a run on its own) and leave a valid cache:
//! a third run afterwards finds every vector and every cross-encoder score in it (no model work).
//! Real models; the model files are copied from the default cache (fetched if absent) so only the
//! vector and score caches start empty.

use std::path::Path;
use std::process::{Command, Output};

use ranklab_engine::models::ModelStore;

mod common;

fn ranklab(cache: &Path, reports: &Path) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut c = Command::new(env!("CARGO_BIN_EXE_ranklab"));
    // Only ranklab's own configurations: the external engines of experiments-engines.yaml need
    // their servers (tests/real_engines.rs covers them); this test is about the model caches.
    c.args([
        "run",
        "tasks/docir",
        "-x",
        "tasks/docir/experiments.yaml",
        "--reports",
    ])
    .arg(reports)
    .current_dir(root)
    .env("RANKLAB_CACHE", cache);
    c
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn two_processes_share_one_cache_and_leave_it_valid() {
    let store = ModelStore::open_default().unwrap();
    store.fetch_all(false).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    common::copy_dir(&store.root().join("models"), &cache.join("models"));
    common::copy_dir(&store.root().join("runtime"), &cache.join("runtime"));

    let (ra, rb, rc) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    let a = ranklab(&cache, &ra).spawn().unwrap();
    let b = ranklab(&cache, &rb).spawn().unwrap();
    let (ea, eb) = (
        ok(a.wait_with_output().unwrap()),
        ok(b.wait_with_output().unwrap()),
    );
    assert_eq!(
        common::tree(&ra.join("docir")),
        common::tree(&rb.join("docir")),
        "concurrent runs disagree"
    );

    // A third run: every vector and score comes from the cache the two left behind.
    let ec = ok(ranklab(&cache, &rc).output().unwrap());
    assert!(
        ec.contains("0 misses, 0 rebuilt"),
        "vectors recomputed:\n{ec}\n--- a:\n{ea}\n--- b:\n{eb}"
    );
    assert!(
        ec.contains("0 pairs scored") && ec.contains("0 rebuilt"),
        "pairs recomputed:\n{ec}"
    );
    assert_eq!(
        common::tree(&ra.join("docir")),
        common::tree(&rc.join("docir")),
        "cached run disagrees"
    );
}
