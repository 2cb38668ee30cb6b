//! The judging page's LLM hint, in a real browser (Debian's `chromium`, headless, over
//! WebDriver by `chromedriver`; `just setup` installs both; the helpers are those of
//! `judge_browser.rs`, trimmed). Fixture: the bad_input suite `p` without epsilon, run and
//! pooled: item 0 is (T1, beta), item 1 is (T2, alpha) (checked in `judge_browser.rs`; the
//! count is checked here). An LLM graded both beforehand (beta 3, alpha 1). Properties:
//! - the hint is off by default: nothing of the LLM's grade is on the page, and a grade given
//!   so records `saw_llm: false`;
//! - with the toggle on, the page shows the LLM's grade, its expected grade and its judge, and
//!   the grade given records `saw_llm: true`;
//! - the person's grades replace the LLM's in `judgments:`; the LLM's move to `llm_grades:`.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

mod common;

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

/// Polls `f` until it returns Some, for at most 30 s (a bound on a hang, not a timing claim).
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

fn post_json(url: &str, body: &Value) -> Value {
    let mut r = ureq::post(url)
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
}

struct Browser {
    base: String,
    session: String,
    _driver: Running,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = ureq::delete(&format!("{}/session/{}", self.base, self.session)).call();
    }
}

impl Browser {
    fn start() -> Browser {
        let port = free_port();
        let profile = tempfile::tempdir().unwrap();
        let driver = Running(
            Command::new("chromedriver")
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("chromedriver (Debian's chromium-driver; just setup installs it)"),
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
        let session = created["value"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        Browser {
            base,
            session,
            _driver: driver,
            _profile: profile,
        }
    }

    fn post(&self, path: &str, body: Value) -> Value {
        post_json(
            &format!("{}/session/{}{path}", self.base, self.session),
            &body,
        )
    }

    fn script(&self, js: &str) -> Value {
        self.post("/execute/sync", json!({ "script": js, "args": [] }))["value"].clone()
    }

    fn text(&self, id: &str) -> String {
        self.script(&format!(
            "return document.getElementById('{id}').textContent"
        ))
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    fn press(&self, key: &str) {
        self.post(
            "/actions",
            json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": [
                { "type": "keyDown", "value": key }, { "type": "keyUp", "value": key }
            ] }] }),
        );
    }

    fn click(&self, css: &str) {
        let found = self.post("/element", json!({ "using": "css selector", "value": css }));
        let element = found["value"]["element-6066-11e4-a52e-4f735466cecf"]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_string();
        self.post(&format!("/element/{element}/click"), json!({}));
    }
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
