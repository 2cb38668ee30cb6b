//! The judging page's LLM hint, in a real browser (Debian's `chromium`, headless, over
//! WebDriver by `chromedriver`; `just setup` installs both; the browser is
//! `common/browser.rs`). Fixture: the bad_input suite `p` without epsilon, run and
//! pooled: item 0 is (T1, beta), item 1 is (T2, alpha) (checked in `judge_browser.rs`; the
//! count is checked here). An LLM graded both beforehand (beta 3, alpha 1). Properties:
//! - the hint is off by default: nothing of the LLM's grade is on the page, and a grade given
//!   so records `saw_llm: false`;
//! - with the toggle on, the page shows the LLM's grade, its expected grade and its judge, and
//!   the grade given records `saw_llm: true`;
//! - the person's grades replace the LLM's in `judgments:`; the LLM's move to `llm_grades:`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

mod common;
use common::browser::{wait_for, Browser, Running};

const LLM: &str = "llm:smollm2-135m-instruct@0123456789ab";

fn ranklab(dir: &Path, args: &[&str]) {
    let o = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "ranklab {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// The suite run and pooled, with an LLM's grades of both pooled documents.
fn pooled_with_llm_grades() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&common::fixture("bad_input"), dir.path());
    std::fs::remove_file(dir.path().join("corpus/epsilon.md")).unwrap();
    std::fs::remove_file(dir.path().join("tasks/p/paired.yaml")).unwrap();
    ranklab(dir.path(), &["run", "tasks/p", "--reports", "reports"]);
    ranklab(dir.path(), &["pool", "tasks/p", "--reports", "reports"]);
    std::fs::write(
        dir.path().join("tasks/p/judgments.yaml"),
        format!(
            "suite: p\njudgments:\n  - {{ task: T1, document: beta, grade: 3, judge: \"{LLM}\", expected: 2.7 }}\n  - {{ task: T2, document: alpha, grade: 1, judge: \"{LLM}\", expected: 1.1 }}\n"
        ),
    )
    .unwrap();
    dir
}

#[test]
fn the_llm_hint_is_off_by_default_and_whether_it_was_seen_is_recorded() {
    let dir = pooled_with_llm_grades();
    let mut judge = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["judge", "tasks/p", "--judge", "Blind Test"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(judge.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _judge = Running(judge);
    // LLM grades do not count as judged: both documents are still to judge.
    assert!(line.contains("2 documents to judge in 2 tasks"), "{line}");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .expect("the URL")
        .trim_end_matches('/')
        .to_string();

    let b = Browser::start();
    b.post("/url", json!({ "url": format!("{url}/") }));
    wait_for("the page's items", || {
        (b.script("return document.body.dataset.ready || ''") == json!("1")).then_some(())
    });
    assert_eq!(b.text("task"), "T1");
    assert_eq!(
        b.script("return document.getElementById('hint-toggle').checked"),
        json!(false)
    );
    assert_eq!(b.text("hint"), "");
    assert!(!b
        .script("return document.body.innerText")
        .as_str()
        .unwrap()
        .contains("LLM grade:"));
    b.press("2");
    wait_for("the first grade", || (b.text("left") == "1").then_some(()));
    assert_eq!(b.text("task"), "T2");
    b.click("#hint-toggle");
    assert_eq!(
        b.text("hint"),
        format!("LLM grade: 1 (expected 1.10) by {LLM}")
    );
    b.press("0");
    wait_for("the second grade", || (b.text("left") == "0").then_some(()));
    drop(b);

    let j = ranklab::judgments::Judgments::load(&dir.path().join("tasks/p/judgments.yaml"), "p")
        .unwrap();
    let got: Vec<(&str, &str, i32, &str, Option<bool>)> = j
        .judgments
        .iter()
        .map(|j| {
            (
                j.task.as_str(),
                j.document.as_str(),
                j.grade,
                j.judge.as_str(),
                j.saw_llm,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("T1", "beta", 2, "Blind Test", Some(false)),
            ("T2", "alpha", 0, "Blind Test", Some(true)),
        ]
    );
    let beside: Vec<(&str, i32)> = j
        .llm_grades
        .iter()
        .map(|g| (g.document.as_str(), g.grade))
        .collect();
    assert_eq!(beside, [("beta", 3), ("alpha", 1)]);
}
