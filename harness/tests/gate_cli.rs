//! `ranklab gate` end to end, on the fixture under `tests/fixtures/gate/` (suite `fx`: BM25
//! under no policy, the legacy and the current wiring; one paired assertion), copied to a
//! temporary directory for each test. Properties checked:
//! - `--update` records the baseline's rows (each suite's baseline configuration, plus
//!   `--also`), and a gate on unchanged inputs passes (exit 0); a second `--update` writes the
//!   same bytes (stable order, four decimals);
//! - the gate can fail: zeroed penalties in the practice file make it exit 1, listing the
//!   offending rows and the broken paired assertion; an inflated baseline value fails its row;
//! - one-sided with tolerance: a rise passes and suggests `--update`, a drop within the row's
//!   tolerance passes;
//! - `$GITHUB_STEP_SUMMARY` gets the table appended;
//! - bad input exits 2 with file:line and prints nothing on stdout: a baseline naming an
//!   unknown suite; a missing baseline; `--also` naming an unknown configuration;
//! - a row naming a configuration or metric that no longer exists is gone: it fails (exit 1),
//!   named with its line; a changed corpus or changed tasks are gated under a banner (more in
//!   `gate_changes.rs`);
//! - `--update` writes nothing when a paired assertion fails;
//! - rows of a BEIR collection are skipped without `--beir` and measured with it.
//!
//! Where the gated values come from: MRR 0.8000 (current), 0.7000 (legacy), 0.6000 (bm25, and
//! current and legacy once the penalties are zeroed) and recall@5 1.0000 are not recorded from
//! the gate. `gated_values_are_the_means_of_the_ranks_in_the_run_files` derives each one from
//! the TREC runs `ranklab run` writes for the same fixture, with this file's own arithmetic
//! (1 / rank of the first expected document of `tasks/fx/suite.yaml`, mean over the five
//! tasks), so the gate's metric path and the written rankings must agree.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::{code, gate, stderr, stdout, FX_EXPECTED};

/// MRR of `current` on the fixture: ranks 1, 2, 1, 2, 1 (derived below).
const CURRENT_MRR: &str = "0.8000";
/// MRR of `legacy`: ranks 2, 2, 1, 2, 1 (derived below).
const LEGACY_MRR: &str = "0.7000";
/// MRR of plain `bm25`, and of `current` and `legacy` with every penalty zero: ranks 2, 2, 2, 2,
/// 1 (derived below).
const FIRST_STAGE_MRR: &str = "0.6000";

/// Per task of [`FX_EXPECTED`], the 1-based ranks (the run's rank column) of its expected
/// documents in `reports/fx/runs/<config>.trec` under `dir`.
fn ranks_in_run_file(dir: &Path, config: &str) -> Vec<Vec<usize>> {
    let text = std::fs::read_to_string(dir.join(format!("reports/fx/runs/{config}.trec"))).unwrap();
    FX_EXPECTED
        .iter()
        .map(|(task, docs)| {
            let mut ranks: Vec<usize> = text
                .lines()
                .map(|l| l.split_whitespace().collect::<Vec<_>>())
                .filter(|f| f[0] == *task && docs.contains(&f[2]))
                .map(|f| f[3].parse().unwrap())
                .collect();
            ranks.sort_unstable();
            ranks
        })
        .collect()
}

/// `ranklab run tasks/fx` in `dir` (writes `reports/fx/runs/*.trec`), then per configuration
/// the MRR and recall@5 of its run file, four decimals, computed here: reciprocal rank of the
/// first expected document (0 when absent), the share of expected documents at ranks 1..=5.
fn measured_from_run_files(dir: &Path, config: &str) -> (String, String, Vec<Vec<usize>>) {
    let o = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(dir)
        .args(["run", "tasks/fx"])
        .output()
        .unwrap();
    // 1: a paired assertion failed (zeroed penalties); the run files are written all the same.
    assert!(matches!(code(&o), 0 | 1), "{}", stderr(&o));
    let ranks = ranks_in_run_file(dir, config);
    let n = ranks.len() as f64;
    let mrr: f64 = ranks
        .iter()
        .map(|r| r.first().map_or(0.0, |&r| 1.0 / r as f64))
        .sum::<f64>()
        / n;
    let recall: f64 = ranks
        .iter()
        .zip(FX_EXPECTED)
        .map(|(r, (_, docs))| r.iter().filter(|&&r| r <= 5).count() as f64 / docs.len() as f64)
        .sum::<f64>()
        / n;
    (format!("{mrr:.4}"), format!("{recall:.4}"), ranks)
}

#[test]
fn gated_values_are_the_means_of_the_ranks_in_the_run_files() {
    let dir = common::fixture_copy("gate");
    for (config, mrr) in [
        ("current", CURRENT_MRR),
        ("legacy", LEGACY_MRR),
        ("bm25", FIRST_STAGE_MRR),
    ] {
        let (m, r, ranks) = measured_from_run_files(dir.path(), config);
        assert_eq!(
            (m.as_str(), r.as_str()),
            (mrr, "1.0000"),
            "{config}: ranks {ranks:?}"
        );
    }
    // With every penalty zero neither wiring demotes anything: F1's deprecated how-to and F3's
    // editorial-only copy keep their first-stage lead, so both wirings rank like bm25.
    zero_penalties(dir.path());
    for config in ["current", "legacy"] {
        let (m, _, ranks) = measured_from_run_files(dir.path(), config);
        assert_eq!(
            m, FIRST_STAGE_MRR,
            "{config} under zero weights: ranks {ranks:?}"
        );
    }
}

/// A workdir with a recorded baseline (fx/legacy, the baseline configuration, and fx/current).
fn recorded() -> tempfile::TempDir {
    let dir = common::fixture_copy("gate");
    let o = gate(dir.path(), &["--update", "--also", "fx/current"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    dir
}

fn baseline(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("reports/baseline.json")).unwrap()
}

fn set_baseline(dir: &Path, text: &str) {
    std::fs::write(dir.join("reports/baseline.json"), text).unwrap();
}

fn zero_penalties(dir: &Path) {
    std::fs::write(
        dir.join("tasks/fx/search-practice.yaml"),
        "tuned: degraded on purpose\nweights:\n  superseded: 0\n  deprecated: 0\n  amendment: 0\n  editorial_only: 0\n",
    )
    .unwrap();
}

/// The 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).expect(needle) + 1
}

#[test]
fn update_records_the_gated_rows_and_a_gate_on_unchanged_inputs_passes() {
    let dir = recorded();
    let b = baseline(dir.path());
    // Each row ends with its configuration's fingerprint (16 hex digits): cut it off here.
    let rows: Vec<String> = b
        .lines()
        .filter(|l| l.contains("\"metric\""))
        .map(|l| {
            let at = l.find(", \"config\": \"").expect("a config fingerprint");
            let fp = &l[at + 13..at + 29];
            assert!(fp.bytes().all(|c| c.is_ascii_hexdigit()), "{l}");
            format!("{}{}", &l[..at], &l[at + 30..])
        })
        .collect();
    assert_eq!(
        rows,
        [
            r#"    { "suite": "fx", "configuration": "current", "metric": "MRR", "value": 0.8000, "tolerance": 0.0010 },"#,
            r#"    { "suite": "fx", "configuration": "current", "metric": "recall@5", "value": 1.0000, "tolerance": 0.0010 },"#,
            // The legacy wiring's rows must keep showing the bug: a rise fails them too.
            r#"    { "suite": "fx", "configuration": "legacy", "metric": "MRR", "value": 0.7000, "tolerance": 0.0010, "rise": "fails" },"#,
            r#"    { "suite": "fx", "configuration": "legacy", "metric": "recall@5", "value": 1.0000, "tolerance": 0.0010, "rise": "fails" }"#,
        ],
        "{b}"
    );
    assert!(
        b.contains(r#""fx": { "kind": "suite", "corpus_sha256": ""#),
        "{b}"
    );

    let o = gate(dir.path(), &[]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(&format!(
            "| fx | current | MRR | {CURRENT_MRR} | {CURRENT_MRR} | 0.0000 | 0.0010 | pass |"
        )),
        "{out}"
    );
    assert!(
        out.contains("| deprecated-after-index | current | 1 | 5 | holds | holds | pass |"),
        "{out}"
    );
    assert!(
        out.contains(
            "**PASS**: 4 row(s): 4 passed, 0 OKISH, 0 improved, 0 new, 0 skipped, 0 failed;"
        ),
        "{out}"
    );

    // Rows already gated stay gated without --also; the bytes do not change.
    let o = gate(dir.path(), &["--update"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(baseline(dir.path()), b);
}

/// An LLM's grade of a document nobody judged (it would make F1's second document relevant),
/// in the fixture's `judgments.yaml`.
fn add_llm_grade(dir: &Path) {
    std::fs::write(
        dir.join("tasks/fx/judgments.yaml"),
        "suite: fx\njudgments:\n  - { task: F1, document: adr-cache-redis, grade: 3, judge: \"llm:m@0123456789ab\", at: \"2026-12-02T10:00:00Z\", expected: 2.9 }\n",
    )
    .unwrap();
}

/// Paired: the gate's stdout on the recorded baseline, without and with an LLM's grade in
/// `judgments.yaml`; the gate ignores the grade, says so on stderr, and its verdict and output
/// are unchanged.
#[test]
fn the_gate_ignores_an_llm_grade_and_says_so() {
    let dir = recorded();
    let o = gate(dir.path(), &[]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let out = stdout(&o);
    add_llm_grade(dir.path());
    let with_llm = gate(dir.path(), &[]);
    assert_eq!(code(&with_llm), 0, "{}", stderr(&with_llm));
    assert_eq!(stdout(&with_llm), out);
    assert!(
        stderr(&with_llm).contains(
            "the gate ignores its 1 LLM grade (the baseline rows rest on people's grades only"
        ),
        "{}",
        stderr(&with_llm)
    );
}

#[test]
fn an_update_with_llm_grades_records_them_and_an_update_without_drops_them() {
    let dir = recorded();
    let b = baseline(dir.path());
    add_llm_grade(dir.path());
    // Recorded with the LLM's grades (`--update --judgments all`): the baseline says so, and
    // every later gate takes them. Paired: the suite hash with the grade differs from the one
    // without it, so a gate that ignored it would see changed judgments and print a banner.
    // (With it, F1 has a second relevant document outside both wirings' top 5: recall@5 drops
    // from 1 to 0.9, a regression the update must be told to accept.)
    let o = gate(
        dir.path(),
        &[
            "--update",
            "--judgments",
            "all",
            "--accept-regressions",
            "LLM grades",
        ],
    );
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let with = baseline(dir.path());
    assert!(with.contains("\"llm_grades\": true"), "{with}");
    assert_ne!(with, b);
    let o = gate(dir.path(), &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the gate takes its 1 LLM grade beside people's"),
        "{}",
        stderr(&o)
    );
    assert!(
        !stdout(&o).contains("changed since the baseline"),
        "{}",
        stdout(&o)
    );
    // Back to people's grades only: the entry loses the flag, recall@5 is 1 again (a rise
    // the legacy row, which must keep showing its bug, refuses unless accepted).
    let o = gate(
        dir.path(),
        &[
            "--update",
            "--judgments",
            "human",
            "--accept-regressions",
            "people's grades only",
        ],
    );
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(!baseline(dir.path()).contains("llm_grades"));
    assert!(stderr(&o).contains("the gate ignores its 1 LLM grade"));
    // Without --update, --judgments is refused: a gate takes what its baseline was recorded on.
    let o = gate(dir.path(), &["--judgments", "all"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
}

#[test]
fn zeroed_penalties_make_the_gate_exit_1_listing_the_offending_rows() {
    let dir = recorded();
    zero_penalties(dir.path());
    let o = gate(dir.path(), &[]);
    let out = stdout(&o);
    assert_eq!(code(&o), 1, "{out}{}", stderr(&o));
    let regressions = out
        .split("Regressions:")
        .nth(1)
        .expect("a regressions table");
    assert!(
        regressions
            .contains(&format!("| fx | current | MRR | {CURRENT_MRR} | {FIRST_STAGE_MRR} | -0.2000 | 0.0010 | REGRESSION |")),
        "{out}"
    );
    assert!(
        regressions
            .contains(&format!("| fx | legacy | MRR | {LEGACY_MRR} | {FIRST_STAGE_MRR} | -0.1000 | 0.0010 | REGRESSION |")),
        "{out}"
    );
    assert!(
        !regressions.contains("recall@5"),
        "unchanged rows are not listed as regressions: {out}"
    );
    assert!(
        out.contains("| deprecated-after-index | current | 2 | 1 | holds | inverted | FAIL |"),
        "{out}"
    );
    assert!(
        out.contains("**FAIL**: 4 row(s): 2 passed, 0 OKISH, 0 improved, 0 new, 0 skipped, 2 failed; 1 paired assertion(s) hold, 1 failed."),
        "{out}"
    );
    // The practice file is part of both wirings' configuration: the banner names them.
    assert!(
        out.contains("configuration current changed")
            && out.contains("configuration legacy changed"),
        "{out}"
    );
}

#[test]
fn a_degraded_configuration_fails_the_gate() {
    // The shipped configuration loses its wiring: same name, no policy.
    let dir = recorded();
    let ex = dir.path().join("tasks/fx/experiments.yaml");
    let text = std::fs::read_to_string(&ex)
        .unwrap()
        .replace("    wiring: current\n", "");
    std::fs::write(&ex, text).unwrap();
    let o = gate(dir.path(), &[]);
    assert_eq!(code(&o), 1, "{}{}", stdout(&o), stderr(&o));
    assert!(
        stdout(&o)
            .contains(&format!("| fx | current | MRR | {CURRENT_MRR} | {FIRST_STAGE_MRR} | -0.2000 | 0.0010 | REGRESSION |")),
        "{}",
        stdout(&o)
    );
}

#[test]
fn an_inflated_baseline_fails_only_its_row() {
    let dir = recorded();
    let b = baseline(dir.path()).replace(
        r#""legacy", "metric": "MRR", "value": 0.7000"#,
        r#""legacy", "metric": "MRR", "value": 0.7500"#,
    );
    set_baseline(dir.path(), &b);
    let o = gate(dir.path(), &[]);
    let out = stdout(&o);
    assert_eq!(code(&o), 1, "{out}");
    assert!(
        out.contains("| fx | legacy | MRR | 0.7500 | 0.7000 | -0.0500 | 0.0010 | REGRESSION |"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "| fx | current | MRR | {CURRENT_MRR} | {CURRENT_MRR} | 0.0000 | 0.0010 | pass |"
        )),
        "{out}"
    );
    assert!(
        out.contains(
            "**FAIL**: 4 row(s): 3 passed, 0 OKISH, 0 improved, 0 new, 0 skipped, 1 failed;"
        ),
        "{out}"
    );
}

#[test]
fn a_rise_passes_and_suggests_update_and_a_drop_within_tolerance_passes() {
    let dir = recorded();
    let b = baseline(dir.path())
        .replace(
            r#""current", "metric": "MRR", "value": 0.8000"#,
            r#""current", "metric": "MRR", "value": 0.7000"#,
        )
        .replace(
            r#""legacy", "metric": "MRR", "value": 0.7000, "tolerance": 0.0010"#,
            r#""legacy", "metric": "MRR", "value": 0.7200, "tolerance": 0.0200"#,
        );
    set_baseline(dir.path(), &b);
    let o = gate(dir.path(), &[]);
    let out = stdout(&o);
    assert_eq!(code(&o), 0, "{out}");
    assert!(out.contains("| fx | current | MRR | 0.7000 | 0.8000 | +0.1000 | 0.0010 | pass (improved; record with --update) |"), "{out}");
    assert!(
        out.contains(
            "| fx | legacy | MRR | 0.7200 | 0.7000 | -0.0200 | 0.0200 | pass (within tolerance) |"
        ),
        "{out}"
    );
    assert!(
        out.contains("record them with `ranklab gate --update`"),
        "{out}"
    );

    // --update records the rise and keeps the hand-set tolerance.
    let o = gate(dir.path(), &["--update"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let b = baseline(dir.path());
    assert!(
        b.contains(r#""current", "metric": "MRR", "value": 0.8000, "tolerance": 0.0010"#),
        "{b}"
    );
    assert!(
        b.contains(r#""legacy", "metric": "MRR", "value": 0.7000, "tolerance": 0.0200"#),
        "{b}"
    );
}

#[test]
fn the_table_is_appended_to_the_github_step_summary() {
    let dir = recorded();
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "# earlier step\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(dir.path())
        .arg("gate")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = std::fs::read_to_string(&summary).unwrap();
    assert!(
        text.starts_with("# earlier step\n## ranklab gate\n"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "| fx | current | MRR | {CURRENT_MRR} | {CURRENT_MRR} | 0.0000 | 0.0010 | pass |"
        )),
        "{text}"
    );
}

/// Exit 2, nothing on stdout, and stderr starting with `error: <path>:<line>:` and holding `needles`.
fn assert_bad_input(o: &Output, file_line: &str, needles: &[&str]) {
    common::assert_bad_input(o, &format!("{file_line}:"), needles);
}

#[test]
fn a_row_whose_configuration_or_metric_is_gone_fails_naming_its_line() {
    let dir = recorded();
    let good = baseline(dir.path());

    let b = good.replace(
        r#""configuration": "legacy", "metric": "MRR""#,
        r#""configuration": "legacyy", "metric": "MRR""#,
    );
    set_baseline(dir.path(), &b);
    let line = line_of(&b, "legacyy");
    let o = gate(dir.path(), &[]);
    let out = stdout(&o);
    assert_eq!(code(&o), 1, "{out}{}", stderr(&o));
    let gone = out
        .lines()
        .find(|l| l.starts_with("| fx | legacyy | MRR |"))
        .expect("the gone row in the table");
    for needle in [
        "FAIL (gone)",
        "no configuration \"legacyy\"",
        "bm25, legacy, current",
        &format!("baseline line {line}"),
    ] {
        assert!(gone.contains(needle), "{needle:?} not in {gone}");
    }
    // legacy's MRR row, the baseline configuration's default, is now a new row.
    assert!(
        out.contains("New rows (not in the baseline, not gated yet): fx/legacy/MRR."),
        "{out}"
    );

    let b = good.replace(
        r#""metric": "MRR", "value": 0.8000"#,
        r#""metric": "mrr", "value": 0.8000"#,
    );
    set_baseline(dir.path(), &b);
    let line = line_of(&b, "\"mrr\"");
    let o = gate(dir.path(), &[]);
    assert_eq!(code(&o), 1);
    assert!(
        stdout(&o).contains("no metric \"mrr\" (metrics: recall@5, MRR")
            && stdout(&o).contains(&format!("baseline line {line}")),
        "{}",
        stdout(&o)
    );
    // --update refuses to drop it silently (exit 2: a refused write) ...
    let o = gate(dir.path(), &["--update"]);
    assert_eq!(code(&o), 2);
    assert!(
        stdout(&o).contains("- regressed row: fx/current/mrr (FAIL (gone))"),
        "{}",
        stdout(&o)
    );
    assert_eq!(baseline(dir.path()), b);
    // ... and drops it when told why.
    let o = gate(
        dir.path(),
        &["--update", "--accept-regressions", "metric renamed"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("Gone, dropped from the baseline: fx/current/mrr."));
    assert!(!baseline(dir.path()).contains("\"mrr\""));
}

#[test]
fn a_baseline_naming_an_unknown_suite_is_an_error_at_its_line() {
    let dir = recorded();
    let b = baseline(dir.path()).replace(r#""suites": {"#, &format!("\"suites\": {{\n    \"gone\": {{ \"kind\": \"suite\", \"corpus_sha256\": \"{0}\", \"suite_sha256\": \"{0}\" }},", "0".repeat(64)));
    set_baseline(dir.path(), &b);
    let line = line_of(&b, "\"gone\"");
    assert_bad_input(
        &gate(dir.path(), &[]),
        &format!("reports/baseline.json:{line}"),
        &["suite \"gone\"", "suites: fx"],
    );
}

#[test]
fn a_changed_corpus_is_gated_under_a_banner_and_update_records_it() {
    let dir = recorded();
    let before = baseline(dir.path());
    let doc = dir.path().join("corpus/runbook-backup.md");
    let text = std::fs::read_to_string(&doc).unwrap() + "Backups are encrypted at rest.\n";
    std::fs::write(&doc, text).unwrap();
    let o = gate(dir.path(), &[]);
    let out = stdout(&o);
    // One more sentence in F3's answer moves no rank: every row passes.
    assert_eq!(code(&o), 0, "{out}{}", stderr(&o));
    assert!(
        out.contains("> **inputs changed since the baseline: fx: corpus ")
            && out.contains(", 1 record edited (runbook-backup)**"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "| fx | current | MRR | {CURRENT_MRR} | {CURRENT_MRR} | 0.0000 | 0.0010 | pass |"
        )),
        "{out}"
    );
    assert_eq!(baseline(dir.path()), before, "a gate writes nothing");
    let o = gate(dir.path(), &["--update"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_ne!(
        baseline(dir.path()),
        before,
        "the new corpus hash is recorded"
    );
    let o = gate(dir.path(), &[]);
    assert_eq!(code(&o), 0);
    assert!(!stdout(&o).contains("inputs changed"), "{}", stdout(&o));
}

#[test]
fn changed_tasks_are_gated_under_a_banner_too() {
    let dir = recorded();
    let suite = dir.path().join("tasks/fx/suite.yaml");
    let text = std::fs::read_to_string(&suite)
        .unwrap()
        .replace("query: on-call policy", "query: on-call policy escalation");
    std::fs::write(&suite, text).unwrap();
    let o = gate(dir.path(), &[]);
    assert!(code(&o) == 0 || code(&o) == 1, "{}", stderr(&o));
    assert!(
        stdout(&o).contains("inputs changed since the baseline: fx: 1 task(s) changed (F4)"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn a_missing_baseline_and_an_unknown_also_are_errors() {
    let dir = common::fixture_copy("gate");
    let o = gate(dir.path(), &[]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("no baseline file; record one with `ranklab gate --update`"),
        "{}",
        stderr(&o)
    );

    let o = gate(dir.path(), &["--update", "--also", "fx/nope"]);
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("suite \"fx\" has no configuration \"nope\""),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("reports/baseline.json").exists());

    // --also only makes sense with --update.
    assert_eq!(code(&gate(dir.path(), &["--also", "fx/current"])), 2);
}

#[test]
fn update_writes_nothing_when_a_paired_assertion_fails() {
    let dir = recorded();
    let before = baseline(dir.path());
    zero_penalties(dir.path());
    let o = gate(dir.path(), &["--update"]);
    assert_eq!(code(&o), 2, "a refused write: {}", stdout(&o));
    assert!(
        stdout(&o).contains("the baseline was not updated"),
        "{}",
        stdout(&o)
    );
    assert_eq!(baseline(dir.path()), before);
    // A failed paired assertion is not in the baseline: no reason makes --update accept it.
    let o = gate(
        dir.path(),
        &["--update", "--accept-regressions", "zeroed on purpose"],
    );
    assert_eq!(code(&o), 2, "a refused write: {}", stdout(&o));
    assert!(
        stdout(&o).contains("1 paired assertion(s) failed: a paired assertion is never accepted"),
        "{}",
        stdout(&o)
    );
    assert_eq!(baseline(dir.path()), before);
}

#[test]
fn beir_rows_are_skipped_without_beir_and_measured_with_it() {
    let dir = recorded();
    let h = "0".repeat(64);
    let b = baseline(dir.path())
        .replace(r#""suites": {"#, &format!("\"suites\": {{\n    \"tinybeir\": {{ \"kind\": \"beir\", \"corpus_sha256\": \"{h}\", \"suite_sha256\": \"{h}\" }},"))
        .replace(r#""rows": ["#, "\"rows\": [\n    { \"suite\": \"tinybeir\", \"configuration\": \"bm25\", \"metric\": \"nDCG@10\", \"value\": 0.9000, \"tolerance\": 0.0010 },");
    set_baseline(dir.path(), &b);
    let o = gate(dir.path(), &[]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("| tinybeir | bm25 | nDCG@10 | 0.9000 | - | - | 0.0010 | skipped (collection not given; pass --beir DIR) |"), "{}", stdout(&o));

    // With the collection, its fingerprint is compared (the zeros above are not its hashes):
    // the banner says so, and the row is measured all the same ...
    let o = gate(dir.path(), &["--beir", "beir/tinybeir"]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("inputs changed since the baseline: tinybeir: corpus 00000000 → "),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("| tinybeir | bm25 | nDCG@10 | 0.9000 | 1.0000 |"));

    // ... and with the real hashes it is measured: BM25 finds d1 first for q1 and d2, d4 for q2.
    let mut fixed = baseline(dir.path());
    let corpus_hash = {
        let c = ranklab_engine::corpus::Corpus::load(&dir.path().join("beir/tinybeir")).unwrap();
        c.content_hash()
    };
    let subject =
        ranklab::gate::Subject::from_beir(&dir.path().join("beir/tinybeir"), "test").unwrap();
    let suite_hash = ranklab::gate::suite_hash(&subject.suite);
    assert_eq!(subject.entry().corpus_sha256, corpus_hash);
    fixed = fixed.replacen(
        &format!("\"corpus_sha256\": \"{h}\", \"suite_sha256\": \"{h}\""),
        &format!("\"corpus_sha256\": \"{corpus_hash}\", \"suite_sha256\": \"{suite_hash}\""),
        1,
    );
    set_baseline(dir.path(), &fixed);
    let o = gate(dir.path(), &["--beir", "beir/tinybeir"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    assert!(stdout(&o).contains("| tinybeir | bm25 | nDCG@10 | 0.9000 | 1.0000 | +0.1000 | 0.0010 | pass (improved; record with --update) |"), "{}", stdout(&o));
}
