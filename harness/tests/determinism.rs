//! Determinism of `ranklab bench`: on unchanged inputs it writes byte-identical report trees
//! (and prints the same tables)
//! - run after run, and
//! - whatever the number of threads (`RAYON_NUM_THREADS=1`, the default, and 3).
//!
//! The suites are temporary copies of `tasks/docir` and `tasks/brain` with BM25-only experiments
//! (two BM25 parameter sets; on brain also the legacy and current wirings with the committed
//! practice file), so no model is needed.

use std::path::Path;
use std::process::Command;

mod common;
use common::Tree;

/// `tasks/<suite>` with BM25-only experiments and the practice file.
fn copy_suite(tasks: &Path, name: &str, experiments: &str) {
    common::copy_suite(
        tasks,
        name,
        &[("experiments.yaml", experiments)],
        &["search-practice.yaml"],
    );
}

/// Runs `ranklab bench` into `reports` with `threads` (None: rayon's default); returns stdout.
fn bench(tmp: &Path, reports: &str, threads: Option<&str>) -> Vec<u8> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ranklab"));
    cmd.args(["bench", "--tasks", "tasks", "--reports", reports])
        .current_dir(tmp)
        .env("RANKLAB_CACHE", tmp.join("cache"))
        .env_remove("RAYON_NUM_THREADS");
    if let Some(n) = threads {
        cmd.env("RAYON_NUM_THREADS", n);
    }
    let out = cmd.output().expect("run ranklab");
    assert!(
        out.status.success(),
        "bench ({threads:?} threads): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The first difference between two trees, readably.
fn first_difference(a: &Tree, b: &Tree) -> Option<String> {
    if a.keys().ne(b.keys()) {
        return Some(format!(
            "file sets differ: {:?} vs {:?}",
            a.keys().collect::<Vec<_>>(),
            b.keys().collect::<Vec<_>>()
        ));
    }
    a.iter().find(|(k, v)| b[*k] != **v).map(|(k, v)| {
        let (x, y) = (String::from_utf8_lossy(v), String::from_utf8_lossy(&b[k]));
        let line = x
            .lines()
            .zip(y.lines())
            .position(|(p, q)| p != q)
            .unwrap_or(0);
        format!(
            "{} differs at line {}:\n  {}\n  {}",
            k.display(),
            line + 1,
            x.lines().nth(line).unwrap_or(""),
            y.lines().nth(line).unwrap_or("")
        )
    })
}

#[test]
fn bench_reports_are_byte_identical_across_runs_and_thread_counts() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    copy_suite(
        &tasks,
        "docir",
        "experiment: lexical\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: bm25-k1b\n    retriever: bm25\n    bm25: { k1: 1.2, b: 0.75 }\n    depth: 50\n",
    );
    copy_suite(
        &tasks,
        "brain",
        "experiment: wiring\nbaseline: legacy\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: legacy\n    retriever: bm25\n    wiring: legacy\n  - name: current\n    retriever: bm25\n    wiring: current\n",
    );

    let runs = [
        ("a", None),
        ("b", None),
        ("one-thread", Some("1")),
        ("three-threads", Some("3")),
    ];
    let mut first: Option<(Tree, Vec<u8>)> = None;
    for (reports, threads) in runs {
        let stdout = bench(tmp.path(), reports, threads);
        let t = common::tree(&tmp.path().join(reports));
        match &first {
            None => {
                assert!(
                    t.keys().any(|k| k.starts_with("docir"))
                        && t.keys().any(|k| k.starts_with("brain")),
                    "{:?}",
                    t.keys()
                );
                assert!(t.len() >= 16, "{:?}", t.keys());
                first = Some((t, stdout));
            }
            Some((t0, s0)) => {
                if let Some(d) = first_difference(t0, &t) {
                    panic!(
                        "reports/{reports} ({threads:?} threads) differs from the first run: {d}"
                    );
                }
                // The summary names the folder it wrote (`wrote a/docir/...`): the same but
                // for that folder's name.
                let same = String::from_utf8_lossy(s0).replace("wrote a/", "wrote R/")
                    == String::from_utf8_lossy(&stdout)
                        .replace(&format!("wrote {reports}/"), "wrote R/");
                assert!(same, "stdout of {reports} differs from the first run");
            }
        }
    }
}
