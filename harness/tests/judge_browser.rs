//! `ranklab judge` in a real browser (Debian's `chromium`, headless, driven over WebDriver by
//! `chromedriver` from `chromium-driver`; `.ci/run` installs both), and the judgments it writes
//! changing the next run's report.
//!
//! Fixture: the bad_input suite `p` without its record epsilon (3 tasks, 3 records, bm25 only:
//! no model needed). Its bm25
//! run (checked below, not assumed) has T1: alpha, beta; T2: beta, alpha; T3: gamma. The suite
//! judges T1 alpha, T2 beta, T3 gamma and beta, so the pool is T1 beta and T2 alpha, in that
//! order (tasks in suite order).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

fn ranklab(dir: &Path, args: &[&str]) -> std::process::Output {
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
    o
}

/// The suite copied to a temporary directory, run and pooled.
fn pooled() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&common::fixture("bad_input"), dir.path());
    // The three records alpha, beta, gamma only: epsilon (and the pair that needs it) belong to
    // the paired-check cases of bad_input.rs.
    std::fs::remove_file(dir.path().join("corpus/epsilon.md")).unwrap();
    std::fs::remove_file(dir.path().join("tasks/p/paired.yaml")).unwrap();
    ranklab(dir.path(), &["run", "tasks/p", "--reports", "reports"]);
    let run = std::fs::read_to_string(dir.path().join("reports/p/runs/bm25.trec")).unwrap();
    let ids: Vec<(&str, &str)> = run
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0], f[2])
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("T1", "alpha"),
            ("T1", "beta"),
            ("T2", "beta"),
            ("T2", "alpha"),
            ("T3", "gamma")
        ],
        "the fixture's run changed; recompute the expectations of this file"
    );
    ranklab(dir.path(), &["pool", "tasks/p", "--reports", "reports"]);
    dir
}

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `f` until it returns Some, for at most 30 s.
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// POSTs JSON, returns the JSON answer (ureq is built without its json feature).
fn post_json(url: &str, body: &Value) -> Value {
    let mut r = ureq::post(url)
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
}

struct WebDriver {
    base: String,
    session: String,
}

impl WebDriver {
    fn post(&self, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        post_json(&url, &body)
    }

    fn script(&self, js: &str) -> Value {
        self.post("/execute/sync", json!({ "script": js, "args": [] }))["value"].clone()
    }

    fn press(&self, key: &str) {
        self.post(
            "/actions",
            json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": [
                { "type": "keyDown", "value": key }, { "type": "keyUp", "value": key }
            ] }] }),
        );
    }

    fn left(&self) -> String {
        self.script("return document.getElementById('left').textContent")
            .as_str()
            .unwrap_or_default()
            .to_string()
    }
}

#[test]
fn grading_two_documents_by_key_presses_in_chromium_writes_judgments_yaml() {
    let dir = pooled();
    // ranklab judge on a free port; its first stdout line names the URL.
    let mut judge = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["judge", "tasks/p", "--judge", "Browser Test"])
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
    assert!(
        line.contains("2 documents to judge in 2 tasks, as Browser Test"),
        "{line}"
    );
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .expect("the URL")
        .to_string();

    let port = free_port();
    let profile = tempfile::tempdir().unwrap();
    let driver = Running(
        Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver (Debian's chromium-driver; .ci/run installs it)"),
    );
    let base = format!("http://127.0.0.1:{port}");
    wait_for("chromedriver", || {
        ureq::get(&format!("{base}/status")).call().ok()
    });
    let created = post_json(
        &format!("{base}/session"),
        &json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": "/usr/bin/chromium",
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage",
                         format!("--user-data-dir={}", profile.path().display())]
            }
        } } }),
    );
    let wd = WebDriver {
        base: base.clone(),
        session: created["value"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string(),
    };
    wd.post("/url", json!({ "url": url }));
    wait_for("the page's items", || {
        (wd.script("return document.body.dataset.ready || ''") == json!("1")).then_some(())
    });
    assert_eq!(wd.left(), "2");
    assert_eq!(
        wd.script("return document.getElementById('query').textContent"),
        json!("idempotency key for a replayed capture")
    );
    wd.press("2");
    wait_for("the first grade", || (wd.left() == "1").then_some(()));
    assert_eq!(
        wd.script("return document.getElementById('task').textContent"),
        json!("T2")
    );
    wd.press("0");
    wait_for("the second grade", || (wd.left() == "0").then_some(()));
    let _ = ureq::delete(&format!("{base}/session/{}", wd.session)).call();
    drop(driver);

    let j = ranklab::judgments::Judgments::load(&dir.path().join("tasks/p/judgments.yaml"), "p")
        .unwrap();
    let got: Vec<(&str, &str, i32, &str, Vec<&str>)> = j
        .judgments
        .iter()
        .map(|j| {
            (
                j.task.as_str(),
                j.document.as_str(),
                j.grade,
                j.judge.as_str(),
                j.surfaced_by.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("T1", "beta", 2, "Browser Test", vec!["bm25", "current"]),
            ("T2", "alpha", 0, "Browser Test", vec!["bm25", "current"]),
        ]
    );
    assert!(j
        .judgments
        .iter()
        .all(|j| j.at.ends_with('Z') && j.at.len() == 20));
}

fn reading(report: &str) -> &str {
    report
        .lines()
        .find(|l| l.starts_with("**Reading:**"))
        .expect("a reading")
}

fn cell(report: &str, row: &str, col: &str) -> String {
    let header: Vec<&str> = report
        .lines()
        .find(|l| l.starts_with("| configuration |"))
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    let i = header.iter().position(|h| *h == col).unwrap();
    let line = report
        .lines()
        .find(|l| l.starts_with(&format!("| {row} ")))
        .unwrap();
    line.split('|').map(str::trim).nth(i).unwrap().to_string()
}

#[test]
fn a_judgment_changes_the_next_reports_reading_and_qrels() {
    let dir = pooled();
    let report = || std::fs::read_to_string(dir.path().join("reports/p/e.md")).unwrap();
    let before = report();
    // By hand: Judged@5 is judged/k per task, mean over tasks (T3 has k = 3). Before: T1 1/5
    // (alpha), T2 1/5 (beta), T3 1/3 (gamma): 0.2444; unjudged 2 (T1 beta, T2 alpha); 1 - 0.2444
    // is 76% unjudged.
    assert_eq!(cell(&before, "bm25 (baseline)", "Judged@5"), "0.2444");
    assert_eq!(cell(&before, "bm25 (baseline)", "unjudged@5"), "2");
    assert!(
        reading(&before)
            .contains("Only expected documents are judged: 76% of every top 5 is unjudged"),
        "{}",
        reading(&before)
    );
    assert!(!before.contains("given with `ranklab judge`"));

    std::fs::write(
        dir.path().join("tasks/p/judgments.yaml"),
        "suite: p\njudgments:\n  - { task: T1, document: beta, grade: 2, judge: Ada, at: \"2026-12-01T10:00:00Z\", surfaced_by: [bm25] }\n  - { task: T2, document: alpha, grade: 0, judge: Ada, at: \"2026-12-01T10:00:05Z\", surfaced_by: [bm25] }\n",
    )
    .unwrap();
    ranklab(dir.path(), &["run", "tasks/p", "--reports", "reports"]);
    let after = report();
    // After: T1 2/5, T2 2/5, T3 1/3: 0.3778; nothing unjudged; a grade-0 judgment exists, so the
    // "only expected documents" sentence is gone; T1's recall@5 stays 1 (alpha and beta both
    // retrieved), its nDCG changes with beta's grade 2.
    assert_eq!(cell(&after, "bm25 (baseline)", "Judged@5"), "0.3778");
    assert_eq!(cell(&after, "bm25 (baseline)", "unjudged@5"), "0");
    assert!(
        !reading(&after).contains("Only expected documents are judged"),
        "{}",
        reading(&after)
    );
    assert_ne!(reading(&before), reading(&after));
    assert!(
        after.contains("Judgments: 4 in `tasks/p/suite.yaml`, 2 given with `ranklab judge` (Ada 2) in `tasks/p/judgments.yaml`."),
        "{after}"
    );
    let qrels = std::fs::read_to_string(dir.path().join("reports/p/qrels.txt")).unwrap();
    assert!(
        qrels.contains("T1 0 beta 2\n") && qrels.contains("T2 0 alpha 0\n"),
        "{qrels}"
    );
    // The pool now has nothing left, and judge says so and exits 0.
    ranklab(dir.path(), &["pool", "tasks/p", "--reports", "reports"]);
    let o = ranklab(dir.path(), &["judge", "tasks/p", "--judge", "Ada"]);
    assert!(
        String::from_utf8_lossy(&o.stdout).starts_with("Nothing to judge"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}

#[test]
fn a_port_in_use_is_refused_naming_it() {
    let dir = pooled();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let o = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["judge", "tasks/p", "--judge", "Ada", "--port", &port])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("127.0.0.1:{port} is already in use")) && err.contains("--port 0"),
        "{err}"
    );
    assert!(!dir.path().join("tasks/p/judgments.yaml").exists());
}
