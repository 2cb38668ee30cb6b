//! The penalty tuning as a tuning file (`split: time`), on the fixture under
//! `tests/fixtures/gate/` (suite `fx`, the one `tune_cli.rs` tunes with `--suite`):
//!
//! - paired: the file form and `ranklab tune --suite` over the same window and grid print the
//!   same report and write the same report files (and `--json OUT`) and practice file (the heat map's link names
//!   each form's own file, the one difference); the oracle for the file form is the `--suite`
//!   form, whose figures `tune_cli.rs` derives by hand. The other direction: the file's own
//!   window is what it tunes on (a file over a year's window does not print the 120-day
//!   report), so the pair cannot hold by ignoring the file;
//! - a bad `split:` value, and task folds beside `split: time`, are refused at the file's line,
//!   exit 2, nothing written.

use std::path::Path;

mod common;
use common::{assert_bad_input, code, ranklab, stderr, stdout};

/// The default grid of `--suite`, 0..=1 in steps of 0.05, written as a list.
fn grid() -> String {
    let v: Vec<String> = (0..=20)
        .map(|i| format!("{}", f64::from(i) * 0.05))
        .collect();
    format!("[{}]", v.join(", "))
}

/// Writes `tasks/fx/tune-p.yaml` with the window of `days` days up to 2026-11-30.
fn write_file(dir: &Path, days: u32, split: &str) -> &'static str {
    let g = grid();
    std::fs::write(
        dir.join("tasks/fx/tune-p.yaml"),
        format!("tune: p\nconfiguration: current\nmeasure: MRR\nsplit: {split}\nwindow_days: {days}\nas_of: 2026-11-30\nspace:\n  penalty.superseded: {g}\n  penalty.deprecated: {g}\n  penalty.amendment: {g}\n  penalty.editorial_only: {g}\n"),
    )
    .unwrap();
    "tasks/fx/tune-p.yaml"
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn the_file_form_and_the_suite_form_print_and_write_the_same_tuning() {
    let suite_form = common::fixture_copy("gate");
    let file_form = common::fixture_copy("gate");
    let a = ranklab(
        suite_form.path(),
        &[
            "tune",
            "--suite",
            "tasks/fx",
            "--as-of",
            "2026-11-30",
            "--window-days",
            "120",
            "--reports",
            "reports",
            "--write",
            "--keep",
        ],
    );
    assert_eq!(code(&a), 0, "{}", stderr(&a));
    let f = write_file(file_form.path(), 120, "time");
    let b = ranklab(
        file_form.path(),
        &["tune", f, "--write", "--keep", "--json", "out.json"],
    );
    assert_eq!(code(&b), 0, "{}", stderr(&b));

    let (sa, sb) = (stdout(&a), stdout(&b));
    assert!(sa.contains("(tuning.heatmap.svg)"), "{sa}");
    assert_eq!(
        sb,
        sa.replace("(tuning.heatmap.svg)", "(tune-p.heatmap.svg)")
    );
    let (ra, rb) = (
        suite_form.path().join("reports/fx"),
        file_form.path().join("reports/fx"),
    );
    for ext in ["csv", "json", "heatmap.svg"] {
        assert_eq!(
            read(&rb.join(format!("tune-p.{ext}"))),
            read(&ra.join(format!("tuning.{ext}"))),
            "{ext}"
        );
    }
    assert_eq!(
        read(&file_form.path().join("out.json")),
        read(&ra.join("tuning.json"))
    );
    let md = String::from_utf8(read(&rb.join("tune-p.md"))).unwrap();
    let md_suite = String::from_utf8(read(&ra.join("tuning.md"))).unwrap();
    assert_eq!(
        md,
        md_suite.replace("(tuning.heatmap.svg)", "(tune-p.heatmap.svg)")
    );
    let practice = "tasks/fx/search-practice.yaml";
    assert_eq!(
        read(&file_form.path().join(practice)),
        read(&suite_form.path().join(practice))
    );
    assert!(
        String::from_utf8(read(&file_form.path().join(practice)))
            .unwrap()
            .contains("kept the current weights"),
        "--write --keep reached the practice file"
    );

    // The other direction: the file's window is the one tuned (a year is not 120 days).
    let year = common::fixture_copy("gate");
    let f = write_file(year.path(), 365, "time");
    let c = ranklab(year.path(), &["tune", f]);
    assert_eq!(code(&c), 0, "{}", stderr(&c));
    let sc = stdout(&c);
    assert_ne!(
        sc.lines().next(),
        None,
        "the year-long file form printed nothing"
    );
    assert_ne!(
        sc.replace("(tune-p.heatmap.svg)", "(tuning.heatmap.svg)")
            .lines()
            .take(4)
            .collect::<Vec<_>>(),
        sa.lines().take(4).collect::<Vec<_>>()
    );
}

#[test]
fn a_bad_split_is_refused_at_its_line_and_nothing_is_written() {
    let dir = common::fixture_copy("gate");
    let f = write_file(dir.path(), 120, "weekly");
    let o = ranklab(dir.path(), &["tune", f, "--write", "--keep"]);
    assert_bad_input(
        &o,
        "tasks/fx/tune-p.yaml:4: split: \"weekly\" is not a split",
        &["`split: tasks`", "`split: time`"],
    );
    assert!(!dir.path().join("reports").exists());

    let text = std::fs::read_to_string(dir.path().join(f))
        .unwrap()
        .replace("split: weekly\n", "split: time\nfolds: 5\n");
    std::fs::write(dir.path().join(f), text).unwrap();
    let o = ranklab(dir.path(), &["tune", f]);
    assert_bad_input(
        &o,
        "tasks/fx/tune-p.yaml:5: `folds` does not apply to `split: time`",
        &[],
    );
    assert!(!dir.path().join("reports").exists());
}
