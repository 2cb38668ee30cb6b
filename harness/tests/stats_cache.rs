//! The statistics cache (`harness/src/stats_cache.rs`) changes no byte of a report. Properties:
//! - reports written from an empty cache, and again from the cache that run filled, are the same
//!   bytes as with the cache off (`RANKLAB_STATS_CACHE=off`, every statistic computed: the
//!   oracle), and the warm run does not rewrite the file;
//! - the warm run's statistics do come from the file: a well-formed file whose values were all
//!   changed changes the report (so the equality above is not the cache going unread);
//! - a damaged file is named on stderr, not trusted (the reports equal the oracle's) and written
//!   again whole (the same bytes as the file the cold run wrote).
//!
//! The suite is a temporary copy of `tasks/docir` with BM25-only configurations (no model).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

mod common;

const EXPERIMENTS: &str = "experiment: lexical\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: bm25-k1b\n    retriever: bm25\n    bm25: { k1: 0.4, b: 0.2 }\n  - name: bm25-depth5\n    retriever: bm25\n    bm25: { k1: 2.0, b: 1.0 }\n";

fn bench(tmp: &Path, reports: &str, cache: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ranklab"));
    cmd.args(["bench", "--tasks", "tasks", "--reports", reports])
        .current_dir(tmp)
        .env("RANKLAB_CACHE", tmp.join("cache"));
    match cache {
        Some(v) => cmd.env("RANKLAB_STATS_CACHE", v),
        None => cmd.env_remove("RANKLAB_STATS_CACHE"),
    };
    let out = cmd.output().expect("run ranklab");
    assert!(
        out.status.success(),
        "bench into {reports}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stats_file(tmp: &Path) -> PathBuf {
    tmp.join("cache/stats/stats.bin")
}

/// The file with every record's two words replaced by `value`'s bits, checksum made right.
fn rewritten(file: &[u8], value: f64) -> Vec<u8> {
    let magic = b"ranklab stats cache 1\n".len();
    let mut body = file[..file.len() - 32].to_vec();
    for record in body[magic + 8..].chunks_exact_mut(48) {
        record[32..40].copy_from_slice(&value.to_bits().to_le_bytes());
        record[40..48].copy_from_slice(&value.to_bits().to_le_bytes());
    }
    let sum = Sha256::digest(&body);
    body.extend_from_slice(&sum);
    body
}

#[test]
fn reports_are_the_same_bytes_with_the_cache_without_it_and_from_a_damaged_one() {
    let tmp = tempfile::tempdir().unwrap();
    common::copy_suite(
        &tmp.path().join("tasks"),
        "docir",
        &[("experiments.yaml", EXPERIMENTS)],
        &[],
    );
    let t = tmp.path();
    bench(t, "off", Some("off"));
    assert!(
        !stats_file(t).exists(),
        "RANKLAB_STATS_CACHE=off wrote the cache"
    );
    let oracle = common::tree(&t.join("off"));
    assert!(
        oracle.keys().any(|k| k.ends_with("docir/lexical.md")),
        "{:?}",
        oracle.keys()
    );

    bench(t, "cold", None);
    let filled = std::fs::read(stats_file(t)).expect("the cold run writes the cache");
    assert!(filled.len() > 100, "no records: {} bytes", filled.len());
    bench(t, "warm", None);
    assert_eq!(
        std::fs::read(stats_file(t)).unwrap(),
        filled,
        "warm run rewrote it"
    );
    for run in ["cold", "warm"] {
        assert!(
            common::tree(&t.join(run)) == oracle,
            "reports/{run} differ from the reports computed without the cache"
        );
    }

    std::fs::write(stats_file(t), rewritten(&filled, 0.123_456)).unwrap();
    bench(t, "poisoned", None);
    assert!(
        common::tree(&t.join("poisoned")) != oracle,
        "values planted in a well-formed cache file did not reach the report: the cache is not read"
    );

    let mut damaged = filled.clone();
    damaged[filled.len() / 2] ^= 1;
    std::fs::write(stats_file(t), &damaged).unwrap();
    let out = bench(t, "damaged", None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("stats.bin") && err.contains("not trusted"),
        "stderr does not name the damaged file: {err}"
    );
    assert!(
        common::tree(&t.join("damaged")) == oracle,
        "damaged cache changed the reports"
    );
    assert_eq!(
        std::fs::read(stats_file(t)).unwrap(),
        filled,
        "not rebuilt whole"
    );
}
