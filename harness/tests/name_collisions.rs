//! Names that become file names are checked across a suite's experiments files before anything
//! runs (issue 25, "no silent overwrite"), each refusal paired with the variant that is allowed:
//!
//! - two experiments files with one `experiment:` name exit 2 naming both files and lines, and
//!   write nothing; two names write two reports;
//! - one configuration name with different settings in two files exits 2 naming both files and
//!   lines and the field that differs; with the same settings (also when one file spells out a
//!   default the other leaves out) both reports share one run file, byte-identical to the run
//!   of the configuration alone;
//! - an experiment whose files another one's files would overwrite (`e.stats` writes
//!   `e.stats.csv`, which `e` writes; `E` and `e` are one file on macOS) exits 2, as does one
//!   named like `ranklab tune`'s report; a name that writes other files is accepted;
//! - a paired file naming a configuration two experiments files define differently is refused
//!   by `ranklab check` (exit 2) instead of binding to the first;
//! - two suites of one name under `bench --tasks` exit 2 naming both suite files;
//! - a configuration two files share whose two replays differ (an engine answering differently
//!   from one start to the next) exits 2 with nothing written; under two names both runs are
//!   written, each with its own answer.
//!
//! The fixture is `tests/fixtures/bad_input` (BM25 only: no model is needed). Its
//! `tasks/p/experiments.yaml` is: line 1 `experiment: e`, line 4 `- name: bm25`.

mod common;

use std::path::Path;
use std::process::Output;

use common::ranklab_in as ranklab;

const RUN: &[&str] = &["run", "tasks/p", "--reports", "reports"];
const EXPERIMENTS: &str = "tasks/p/experiments.yaml";

fn write(dir: &Path, file: &str, text: &str) {
    std::fs::write(dir.join(file), text).unwrap();
}

/// Exit 2, stderr holding every one of `says`, no report written.
fn refused(dir: &Path, args: &[&str], says: &[&str]) {
    let out = ranklab(dir, args);
    let err = common::stderr(&out);
    assert_eq!(common::code(&out), 2, "{args:?}: {err}");
    for s in says {
        assert!(
            err.contains(s),
            "{args:?}: stderr does not say {s:?}:\n{err}"
        );
    }
    assert!(
        !dir.join("reports").exists(),
        "{args:?}: a refused run wrote reports/"
    );
}

fn accepted(dir: &Path, args: &[&str]) -> Output {
    let out = ranklab(dir, args);
    assert_eq!(common::code(&out), 0, "{args:?}: {}", common::stderr(&out));
    out
}

#[test]
fn two_experiments_files_of_one_experiment_name_are_refused_and_two_names_accepted() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let original = std::fs::read_to_string(dir.join(EXPERIMENTS)).unwrap();
    write(dir, "tasks/p/experiments-dup.yaml", &original);
    refused(
        dir,
        RUN,
        &[
            "tasks/p/experiments-dup.yaml:1",
            "tasks/p/experiments.yaml:1",
            "experiment name \"e\"",
        ],
    );
    // Another name: two reports, each its own files.
    write(
        dir,
        "tasks/p/experiments-dup.yaml",
        &original.replace("experiment: e", "experiment: e2"),
    );
    accepted(dir, RUN);
    for f in ["e.md", "e2.md", "e.json", "e2.json"] {
        assert!(dir.join("reports/p").join(f).is_file(), "{f} not written");
    }
}

/// A file named with `-x` is checked against the suite's other experiments files whose reports
/// are in the reports folder it writes to (attack pass, 2026-12-07: `run -x mine.yaml` with the
/// suite's experiment name replaced its reports and run files without a word). Another name
/// runs beside them; into a folder where the suite wrote nothing, the same file runs.
#[test]
fn a_named_file_is_checked_against_the_reports_beside_it() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    accepted(dir, RUN);
    let report = std::fs::read(dir.join("reports/p/e.md")).unwrap();
    // The suite's bm25 configuration, under the suite's experiment name.
    let mine =
        "experiment: e\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n";
    write(dir, "mine.yaml", mine);
    let named = [RUN, &["-x", "mine.yaml"]].concat();
    let out = ranklab(dir, &named);
    let err = common::stderr(&out);
    assert_eq!(common::code(&out), 2, "{err}");
    for says in [
        "mine.yaml:1",
        "tasks/p/experiments.yaml:1",
        "experiment name \"e\"",
    ] {
        assert!(err.contains(says), "{says:?}: {err}");
    }
    assert_eq!(std::fs::read(dir.join("reports/p/e.md")).unwrap(), report);
    accepted(
        dir,
        &[
            "run",
            "tasks/p",
            "--reports",
            "elsewhere",
            "-x",
            "mine.yaml",
        ],
    );
    write(
        dir,
        "mine.yaml",
        &mine.replace("experiment: e", "experiment: mine"),
    );
    accepted(dir, &named);
    assert!(dir.join("reports/p/mine.md").is_file());
    assert_eq!(std::fs::read(dir.join("reports/p/e.md")).unwrap(), report);
    accepted(dir, &[RUN, &["-x", EXPERIMENTS]].concat());
}

#[test]
fn one_configuration_name_with_two_settings_is_refused_and_with_one_shares_its_run() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    // The run of bm25 alone (the oracle for the shared run below).
    std::fs::write(
        dir.join(EXPERIMENTS),
        "experiment: e\nconfigurations:\n  - name: bm25\n    retriever: bm25\n",
    )
    .unwrap();
    accepted(dir, RUN);
    let alone = std::fs::read(dir.join("reports/p/runs/bm25.trec")).unwrap();
    std::fs::remove_dir_all(dir.join("reports")).unwrap();
    write(
        dir,
        EXPERIMENTS,
        "experiment: e\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: current\n    retriever: bm25\n    wiring: current\n",
    );

    // Different BM25 parameters under the name bm25 (line 6 of the second file).
    write(
        dir,
        "tasks/p/experiments-alt.yaml",
        "experiment: alt\nconfigurations:\n  - name: other\n    retriever: bm25\n  - name: bm25\n    retriever: bm25\n    bm25: { k1: 1.2, b: 0.75 }\n",
    );
    refused(
        dir,
        RUN,
        &[
            "tasks/p/experiments-alt.yaml:5",
            "tasks/p/experiments.yaml:4",
            "configuration \"bm25\"",
            "different settings (bm25)",
        ],
    );
    // `ranklab check` of the fixture's paired file (configuration: bm25) is refused as well:
    // it would otherwise bind to whichever file came first.
    refused(
        dir,
        &["check", "tasks/p/paired.yaml"],
        &[
            "tasks/p/experiments-alt.yaml:5",
            "tasks/p/experiments.yaml:4",
        ],
    );

    // The same settings, one of them spelling out the defaults (depth 100, k1 0.9, b 0.4).
    write(
        dir,
        "tasks/p/experiments-alt.yaml",
        "experiment: alt\nconfigurations:\n  - name: other\n    retriever: bm25\n    bm25: { k1: 1.2, b: 0.75 }\n  - name: bm25\n    retriever: bm25\n    depth: 100\n    bm25: { k1: 0.9, b: 0.4 }\n",
    );
    accepted(dir, RUN);
    let runs: Vec<String> = std::fs::read_dir(dir.join("reports/p/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("bm25"))
        .collect();
    assert_eq!(runs, ["bm25.trec"]);
    assert!(
        std::fs::read(dir.join("reports/p/runs/bm25.trec")).unwrap() == alone,
        "the shared run file differs from the run of bm25 alone"
    );
    for stem in ["e", "alt"] {
        let md = std::fs::read_to_string(dir.join(format!("reports/p/{stem}.md"))).unwrap();
        assert!(md.contains("| bm25"), "{stem}.md does not show bm25");
    }
    // The gate loads the suite as `run` does: what `run` accepts, the gate measures (it once
    // compared the two definitions without their defaults and exited 2 here).
    let update = ranklab(
        dir,
        &[
            "gate",
            "--tasks",
            "tasks",
            "--baseline",
            "baseline.json",
            "--update",
        ],
    );
    assert_eq!(common::code(&update), 0, "{}", common::stderr(&update));
    let gate = ranklab(
        dir,
        &["gate", "--tasks", "tasks", "--baseline", "baseline.json"],
    );
    assert_eq!(common::code(&gate), 0, "{}", common::stderr(&gate));
}

#[test]
fn an_experiment_writing_another_ones_file_is_refused_and_a_distinct_name_accepted() {
    let body = |name: &str| {
        format!("experiment: {name}\nconfigurations:\n  - name: bm25\n    retriever: bm25\n")
    };
    for (second, says) in [
        ("e.stats", "writes reports/<suite>/e.stats.csv, which"),
        ("e.tasks", "writes reports/<suite>/e.tasks.csv, which"),
        (
            "E",
            "names that differ only in case are one file on macOS and Windows",
        ),
        (
            "tuning",
            "writes reports/<suite>/tuning.md, which `ranklab tune` writes too",
        ),
    ] {
        let tmp = common::fixture_copy("bad_input");
        let dir = tmp.path();
        write(dir, "tasks/p/experiments-2.yaml", &body(second));
        refused(
            dir,
            RUN,
            &[
                says,
                &format!("experiment {second:?}"),
                "tasks/p/experiments-2.yaml:1",
            ],
        );
    }
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    write(dir, "tasks/p/experiments-2.yaml", &body("e-stats"));
    accepted(dir, RUN);
    for f in ["e.stats.csv", "e-stats.stats.csv", "e-stats.csv", "e.csv"] {
        assert!(dir.join("reports/p").join(f).is_file(), "{f} not written");
    }
}

#[test]
fn two_configuration_names_differing_only_in_case_are_refused() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    write(
        dir,
        EXPERIMENTS,
        "experiment: e\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: BM25\n    retriever: bm25\n    bm25: { k1: 1.2, b: 0.75 }\n",
    );
    refused(
        dir,
        RUN,
        &["runs/bm25.trec", "configuration \"BM25\"", "only in case"],
    );
}

#[test]
fn bench_refuses_two_suites_of_one_name_and_accepts_two_names() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    common::copy_dir(&dir.join("tasks/p"), &dir.join("tasks/q"));
    let bench = &["bench", "--tasks", "tasks", "--reports", "reports"];
    refused(
        dir,
        bench,
        &[
            "tasks/q/suite.yaml:1",
            "tasks/p/suite.yaml:1",
            "suite name \"p\"",
        ],
    );
    let suite = std::fs::read_to_string(dir.join("tasks/q/suite.yaml")).unwrap();
    write(
        dir,
        "tasks/q/suite.yaml",
        &suite.replace("suite: p", "suite: q"),
    );
    // q's paired file names its own suite file, so both suites are whole.
    accepted(dir, bench);
    assert!(dir.join("reports/p/e.md").is_file() && dir.join("reports/q/e.md").is_file());
}

/// An engine whose answer alternates from one start to the next: `alpha` above `beta` on even
/// starts, below on odd ones (a counter file beside it).
const ALTERNATING: &str = r#"n=$(cat count 2>/dev/null || echo 0); echo $((n + 1)) > count
while read -r line; do
  t=$(printf '%s' "$line" | sed 's/.*"task":"\([^"]*\)".*/\1/')
  if [ $((n % 2)) -eq 0 ]; then a=2; b=1; else a=1; b=2; fi
  printf '{"task":"%s","hits":[{"id":"alpha","score":%s},{"id":"beta","score":%s}]}\n' "$t" $a $b
done
"#;

#[test]
fn a_shared_configuration_whose_two_replays_differ_writes_nothing_and_an_unshared_one_runs() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    write(dir, "tasks/p/engine.sh", ALTERNATING);
    // The fixture's paired file names `bm25`, which these experiments files replace: a paired
    // file that cannot be checked stops the run (exit_codes.rs), so it goes too.
    std::fs::remove_file(dir.join("tasks/p/paired.yaml")).unwrap();
    let ex = |name: &str, config: &str| {
        format!("experiment: {name}\nconfigurations:\n  - name: {config}\n    engine: {{ command: [sh, engine.sh] }}\n")
    };
    // One name, the same settings in both files (experiments-2.yaml sorts first): allowed at
    // load, but the two replays (one engine start each) rank differently, so the two reports
    // cannot share runs/alt.trec.
    write(dir, EXPERIMENTS, &ex("e", "alt"));
    write(dir, "tasks/p/experiments-2.yaml", &ex("e2", "alt"));
    refused(
        dir,
        RUN,
        &[
            "experiments \"e2\" and \"e\" both write reports/<suite>/runs/alt.trec with different contents",
            "nothing was written",
        ],
    );
    // Two names: two run files, the engine's two answers (alpha first in one, beta in the other).
    write(dir, "tasks/p/experiments-2.yaml", &ex("e2", "alt2"));
    accepted(dir, RUN);
    let first = |c: &str| {
        let run = std::fs::read_to_string(dir.join(format!("reports/p/runs/{c}.trec"))).unwrap();
        run.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .nth(2)
            .unwrap()
            .to_string()
    };
    let mut firsts = [first("alt"), first("alt2")];
    firsts.sort();
    assert_eq!(firsts, ["alpha", "beta"]);
}
