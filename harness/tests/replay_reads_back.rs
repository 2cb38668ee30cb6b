//! Properties of `ranklab run` on the committed suites, with BM25 (no model needed):
//! - the run files it writes, read back by `ranklab eval` (trec_eval's order: score descending,
//!   then docno descending), give every task the same first-relevant rank the replay reported,
//!   including under the current wiring, whose recency tie-break is not trec_eval's;
//! - a second run on unchanged inputs writes byte-identical reports;
//! - a bad suite leaves the previous report untouched and exits 2.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn ranklab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run ranklab")
}

fn experiments(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("experiments.yaml");
    std::fs::write(&p, body).unwrap();
    p
}

/// task -> rank column per configuration, from `<experiment>.tasks.csv`.
fn reported_ranks(csv: &Path) -> BTreeMap<(String, String), Option<usize>> {
    let text = std::fs::read_to_string(csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let mut out = BTreeMap::new();
    for l in lines {
        let f: Vec<&str> = l.split(',').collect();
        for (i, config) in header.iter().enumerate().skip(2) {
            out.insert((f[0].to_string(), config.to_string()), f[i].parse().ok());
        }
    }
    out
}

fn check_reads_back(suite: &str, exp_body: &str, configs: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let ex = experiments(tmp.path(), exp_body);
    let reports = tmp.path().join("reports");
    let out = ranklab(&[
        "run",
        &format!("tasks/{suite}"),
        "-x",
        ex.to_str().unwrap(),
        "--reports",
        reports.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dir = reports.join(suite);
    let ranks = reported_ranks(&dir.join("readback.tasks.csv"));
    for config in configs {
        let run = dir.join("runs").join(format!("{config}.trec"));
        let out = ranklab(&[
            "eval",
            "-q",
            "-c",
            "-m",
            "recip_rank",
            dir.join("qrels.txt").to_str().unwrap(),
            run.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut checked = 0;
        for line in text.lines() {
            let f: Vec<&str> = line.split('\t').collect();
            if f[0].trim() != "recip_rank" || f[1] == "all" {
                continue;
            }
            let rr: f64 = f[2].parse().unwrap();
            let rank = ranks[&(f[1].to_string(), config.to_string())];
            let expected = rank.map_or(0.0, |r| 1.0 / r as f64);
            assert!(
                (rr - expected).abs() < 5e-5,
                "{suite}/{config} task {}: eval says {rr}, replay rank {rank:?}",
                f[1]
            );
            checked += 1;
        }
        assert!(checked >= 15, "only {checked} tasks checked");
    }
}

#[test]
fn eval_of_written_runs_agrees_with_replay_ranks() {
    check_reads_back("docir", "experiment: readback\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: bm25-k1b\n    retriever: bm25\n    bm25: {k1: 1.2, b: 0.75}\n", &["bm25", "bm25-k1b"]);
}

#[test]
fn eval_agrees_under_the_current_wirings_recency_tie_break() {
    let practice = root().join("tasks/brain/search-practice.yaml");
    let body = format!(
        "experiment: readback\nconfigurations:\n  - name: legacy\n    retriever: bm25\n    wiring: legacy\n    practice: {p}\n  - name: current\n    retriever: bm25\n    wiring: current\n    practice: {p}\n",
        p = practice.display()
    );
    check_reads_back("brain", &body, &["legacy", "current"]);
}

#[test]
fn second_run_is_byte_identical() {
    let tmp = tempfile::tempdir().unwrap();
    let ex = experiments(
        tmp.path(),
        "experiment: det\nconfigurations:\n  - name: bm25\n    retriever: bm25\n",
    );
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    for r in [&a, &b] {
        let out = ranklab(&[
            "run",
            "tasks/docir",
            "-x",
            ex.to_str().unwrap(),
            "--reports",
            r.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (sa, sb) = (common::tree(&a), common::tree(&b));
    assert!(sa.len() >= 5, "{:?}", sa.keys());
    assert_eq!(sa, sb);
}

#[test]
fn bad_suite_exits_2_and_keeps_the_previous_report() {
    let tmp = tempfile::tempdir().unwrap();
    let ex = experiments(
        tmp.path(),
        "experiment: keep\nconfigurations:\n  - name: bm25\n    retriever: bm25\n",
    );
    let reports = tmp.path().join("reports");
    let out = ranklab(&[
        "run",
        "tasks/docir",
        "-x",
        ex.to_str().unwrap(),
        "--reports",
        reports.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let md = reports.join("docir/keep.md");
    let before = std::fs::read(&md).unwrap();
    // A suite whose task expects a document that does not exist.
    let suite_dir = tmp.path().join("suite");
    std::fs::create_dir_all(&suite_dir).unwrap();
    let corpus = root().join("corpora/docir");
    std::fs::write(
        suite_dir.join("suite.yaml"),
        format!("suite: docir\ncorpus: {}\nk: 5\ntasks:\n  - id: T1\n    query: refunds\n    expected: no-such-doc\n", corpus.display()),
    )
    .unwrap();
    let out = ranklab(&[
        "run",
        suite_dir.to_str().unwrap(),
        "-x",
        ex.to_str().unwrap(),
        "--reports",
        reports.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("suite.yaml:7") && err.contains("no-such-doc"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(std::fs::read(&md).unwrap(), before);
}
