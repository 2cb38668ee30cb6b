//! `ranklab pool`, end to end through the binary, on the small `bad_input` suite (documents
//! alpha, beta, gamma; T1 expects alpha, T2 beta, T3 gamma and beta) with two hand-written runs.
//! Properties checked:
//! - the sheet lists, per task in suite order, exactly the unjudged documents of each run's top K,
//!   ordered by how many configurations surfaced them, then best rank (hand-derived below);
//! - the one-line summary counts tasks, documents and documents per configuration;
//! - a suite with no runs yet exits 2, says to run it first, and writes nothing;
//! - `--configs b` pools b's run only (hand-derived below); a name without a run exits 2
//!   listing the runs there are, and writes nothing.

mod common;
use common::ranklab;

/// The fixture with the two runs of the tests.
fn with_runs() -> tempfile::TempDir {
    let tmp = common::fixture_copy("bad_input");
    let runs = tmp.path().join("reports/p/runs");
    std::fs::create_dir_all(&runs).unwrap();
    // a: T1 beta alpha gamma; T2 alpha beta; T3 gamma alpha.
    std::fs::write(
        runs.join("a.trec"),
        "T1 Q0 beta 1 3 a\nT1 Q0 alpha 2 2 a\nT1 Q0 gamma 3 1 a\nT2 Q0 alpha 1 2 a\nT2 Q0 beta 2 1 a\nT3 Q0 gamma 1 2 a\nT3 Q0 alpha 2 1 a\n",
    )
    .unwrap();
    // b: T1 gamma beta alpha; T2 beta.
    std::fs::write(
        runs.join("b.trec"),
        "T1 Q0 gamma 1 3 b\nT1 Q0 beta 2 2 b\nT1 Q0 alpha 3 1 b\nT2 Q0 beta 1 1 b\n",
    )
    .unwrap();
    tmp
}

#[test]
fn pools_unjudged_documents_of_every_run_in_order() {
    let tmp = with_runs();
    let out = ranklab(tmp.path(), &["pool", "tasks/p", "--depth", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Top 2, unjudged: T1 a: beta(1); b: gamma(1), beta(2) -> beta [a, b] first, then gamma [b].
    // T2 a: alpha(1). T3 a: alpha(2).
    let sheet = std::fs::read_to_string(tmp.path().join("tasks/p/pool.yaml")).unwrap();
    let docs: Vec<&str> = sheet
        .lines()
        .filter(|l| l.trim_start().starts_with("- { id:") || l.trim_start().starts_with("- id:"))
        .map(str::trim)
        .collect();
    assert_eq!(
        docs,
        [
            "- id: \"T1\"",
            "- { id: \"beta\", best_rank: 1, configurations: [\"a\", \"b\"] }",
            "- { id: \"gamma\", best_rank: 1, configurations: [\"b\"] }",
            "- id: \"T2\"",
            "- { id: \"alpha\", best_rank: 1, configurations: [\"a\"] }",
            "- id: \"T3\"",
            "- { id: \"alpha\", best_rank: 2, configurations: [\"a\"] }",
        ],
        "{sheet}"
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        stdout.trim(),
        "tasks/p/pool.yaml: 3 tasks, 4 documents to judge (top 2 of 2 configurations); per configuration: a 3, b 2"
    );
}

#[test]
fn pool_without_runs_says_to_run_first() {
    let tmp = common::fixture_copy("bad_input");
    let out = ranklab(tmp.path(), &["pool", "tasks/p"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no runs yet") && err.contains("ranklab run"),
        "{err}"
    );
    assert!(!tmp.path().join("tasks/p/pool.yaml").exists());
}

#[test]
fn configs_limits_the_pool_to_the_named_runs() {
    let tmp = with_runs();
    let out = ranklab(
        tmp.path(),
        &["pool", "tasks/p", "--depth", "2", "--configs", "b"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // b's top 2, unjudged: T1 gamma(1), beta(2) (T1 expects alpha); T2 beta is expected.
    let sheet = std::fs::read_to_string(tmp.path().join("tasks/p/pool.yaml")).unwrap();
    let docs: Vec<&str> = sheet
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("- { id:"))
        .collect();
    assert_eq!(
        docs,
        [
            "- { id: \"gamma\", best_rank: 1, configurations: [\"b\"] }",
            "- { id: \"beta\", best_rank: 2, configurations: [\"b\"] }",
        ],
        "{sheet}"
    );
    assert!(
        sheet.contains("configurations: [\"b\"]\n") || !sheet.contains("\"a\""),
        "{sheet}"
    );

    let before = std::fs::read(tmp.path().join("tasks/p/pool.yaml")).unwrap();
    let out = ranklab(tmp.path(), &["pool", "tasks/p", "--configs", "b,nope"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--configs nope") && err.contains("the runs there are: a, b"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(tmp.path().join("tasks/p/pool.yaml")).unwrap(),
        before,
        "nothing written"
    );
}
