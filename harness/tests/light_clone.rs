//! The BEIR run files stay out of the repository (issue 31, item 6): `just beir` writes
//! `reports/beir/<collection>/runs/*.trec` (depth 1000; SciFact's five are 56 MB), `.gitignore`
//! keeps them out, and none is tracked, while the BEIR reports themselves and the small suites'
//! runs (`reports/docir/runs/`, which tests and docs read) stay committed, and so do the BEIR
//! model-output recordings (`reports/beir/<collection>/runs/models/`, issue 41: the gate replays
//! them so that its verdict does not depend on the CPU). The oracle is git
//! itself (`git ls-files`, `git check-ignore --no-index`), run on this checkout; outside a git
//! checkout (a source package) there is nothing to check and the test says so.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the workspace root")
        .to_path_buf()
}

fn git(args: &[&str]) -> std::process::Output {
    Command::new("git")
        .current_dir(root())
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git")
}

/// True when git ignores `path` by the repository's rules, tracked or not.
fn ignored(path: &str) -> bool {
    let out = git(&["check-ignore", "--no-index", "-q", path]);
    match out.status.code() {
        Some(0) => true,
        Some(1) => false,
        _ => panic!(
            "git check-ignore {path}: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn beir_runs_are_ignored_and_untracked_while_reports_and_suite_runs_are_committed() {
    if !git(&["rev-parse", "--git-dir"]).status.success() {
        eprintln!("skipped: {} is not a git checkout", root().display());
        return;
    }
    let out = git(&["ls-files", "-z", "--", "reports"]);
    assert!(out.status.success(), "git ls-files failed");
    let tracked: Vec<String> = String::from_utf8(out.stdout)
        .expect("UTF-8 paths")
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    // The listing is not vacuous: the SciFact report and the docir suite's runs are in it.
    for committed in [
        "reports/beir/scifact/scifact.md",
        "reports/beir/scifact/qrels.txt",
        "reports/docir/runs/fusion.trec",
    ] {
        assert!(
            tracked.iter().any(|p| p == committed),
            "{committed} is not tracked"
        );
    }
    assert!(
        tracked
            .iter()
            .any(|p| p.starts_with("reports/beir/scifact/runs/models/")),
        "SciFact's model-output recording is not tracked (the BEIR gate would compute vectors)"
    );
    let beir_runs: Vec<&String> = tracked
        .iter()
        .filter(|p| {
            p.starts_with("reports/beir/") && p.contains("/runs/") && !p.contains("/runs/models/")
        })
        .collect();
    assert!(
        beir_runs.is_empty(),
        "BEIR run files are committed (`just beir` regenerates them; .gitignore keeps them out): {beir_runs:?}"
    );
    for path in [
        "reports/beir/scifact/runs/bm25.trec",
        "reports/beir/scifact/runs/bm25+ce@20.trec",
        "reports/beir/nfcorpus/runs/dense.trec",
    ] {
        assert!(ignored(path), "{path} is not ignored by .gitignore");
    }
    for path in [
        "reports/beir/scifact/scifact.md",
        "reports/beir/scifact/qrels.txt",
        "reports/docir/runs/fusion.trec",
        "reports/beir/scifact/runs/models/x.emb",
    ] {
        assert!(!ignored(path), "{path} is ignored; it should be committed");
    }
}
