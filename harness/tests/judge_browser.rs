//! `ranklab judge` in a real browser (Debian's `chromium`, headless, driven over WebDriver by
//! `chromedriver` from `chromium-driver`; `just setup` installs both) and over plain HTTP: grading
//! by key and by clicking a grade button, a page on another origin failing to write, the
//! server's refusals (foreign `Origin`/`Referer`, no token, not JSON), two sessions on one suite
//! keeping both grades, a stalled client holding up no other, and the judgments changing the
//! next run's report.
//!
//! Fixture: the bad_input suite `p` without its record epsilon (3 tasks, 3 records, bm25 only:
//! no model needed). Its bm25
//! run (checked below, not assumed) has T1: alpha, beta; T2: beta, alpha; T3: gamma. The suite
//! judges T1 alpha, T2 beta, T3 gamma and beta, so the pool is T1 beta and T2 alpha, in that
//! order (tasks in suite order): item 0 is (T1, beta), item 1 is (T2, alpha).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

mod common;
use common::browser::{wait_for, Browser, Running};

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

/// How many documents the judging page says are left.
fn left(wd: &Browser) -> String {
    wd.text("left")
}

/// `ranklab judge tasks/p --judge NAME` in `dir` on a free port; its first stdout line (checked
/// to count `left` documents) names the URL, returned without a trailing slash.
fn start_judge(dir: &Path, name: &str, left: usize) -> (Running, String) {
    let mut judge = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["judge", "tasks/p", "--judge", name])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(judge.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let running = Running(judge);
    assert!(
        line.contains(&format!(
            "{left} documents to judge in {left} tasks, as {name}"
        )),
        "{line}"
    );
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .expect("the URL")
        .trim_end_matches('/')
        .to_string();
    (running, url)
}

fn text(wd: &Browser, id: &str) -> Value {
    Value::from(wd.text(id))
}

#[test]
fn grading_by_a_key_press_and_a_button_click_in_chromium_writes_judgments_yaml() {
    let dir = pooled();
    let (_judge, url) = start_judge(dir.path(), "Browser Test", 2);
    let b = Browser::start();
    let wd = &b;
    wd.post("/url", json!({ "url": format!("{url}/") }));
    wait_for("the page's items", || {
        (wd.script("return document.body.dataset.ready || ''") == json!("1")).then_some(())
    });
    assert_eq!(left(wd), "2");
    assert_eq!(
        text(wd, "query"),
        json!("idempotency key for a replayed capture")
    );
    // Beside the title, the record's lifecycle, history and dates, as the fixture's front
    // matter gives them (corpus/beta.md: lifecycle active, no history: first-class by default,
    // updated_at 2026-04-01, one log entry 2026-04-01 active).
    assert_eq!(text(wd, "title"), json!("Refunds and disputes"));
    // The task's expected document (the suite: T1 expects alpha, whose title is in
    // corpus/alpha.md), and no LLM-hint toggle: this suite has no LLM grades.
    assert_eq!(
        text(wd, "expected"),
        json!("Idempotency keys for payment capture (alpha)")
    );
    assert_eq!(
        wd.script("return getComputedStyle(document.getElementById('hint-box')).display"),
        json!("none")
    );
    assert_eq!(text(wd, "lifecycle"), json!("active"));
    assert_eq!(text(wd, "history"), json!("first-class"));
    assert_eq!(text(wd, "updated"), json!("2026-04-01"));
    assert_eq!(text(wd, "log"), json!("2026-04-01 active"));
    wd.press("2");
    wait_for("the first grade", || (left(wd) == "1").then_some(()));
    assert_eq!(text(wd, "task"), json!("T2"));
    // corpus/alpha.md: active, first-class, updated_at 2026-03-14, no lifecycle log.
    assert_eq!(text(wd, "lifecycle"), json!("active"));
    assert_eq!(text(wd, "updated"), json!("2026-03-14"));
    assert_eq!(text(wd, "log"), json!("none"));
    // The second grade by a click on the button "0 not relevant", a real <button>.
    let found = wd.post(
        "/element",
        json!({ "using": "css selector", "value": "#grades button[data-g='0']" }),
    );
    let element = found["value"]["element-6066-11e4-a52e-4f735466cecf"]
        .as_str()
        .unwrap_or_else(|| panic!("no grade button 0: {found}"))
        .to_string();
    wd.post(&format!("/element/{element}/click"), json!({}));
    wait_for("the second grade", || (left(wd) == "0").then_some(()));
    drop(b);

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

/// A page served from another local port (another origin) tries every way a page can write to
/// the judging server: a "simple" no-cors `fetch` POST with a JSON text as `text/plain` (the
/// request is sent; only its answer is hidden), a JSON `fetch` (needs a CORS preflight), a
/// `fetch` of the page to read the token first, and a form POST (`enctype="text/plain"`, the
/// body shaped as JSON) that navigates to the server's answer. None writes: no judgments.yaml.
/// Before the server checked origins, the no-cors fetch and the form wrote grade 3.
#[test]
fn a_page_on_another_origin_cannot_write_a_grade_in_chromium() {
    let dir = pooled();
    let (_judge, url) = start_judge(dir.path(), "Victim", 2);
    let attack = format!(
        r#"<!doctype html><html><body><p>cute cats</p>
<form id="f" method="POST" action="{url}/judge" enctype="text/plain"><input name='{{"item":0,"grade":3,"x":"' value='"}}'></form>
<script>
const target = "{url}";
const body = JSON.stringify({{ item: 0, grade: 3 }});
const tries = [
  () => fetch(target + "/judge", {{ method: "POST", mode: "no-cors", headers: {{ "Content-Type": "text/plain" }}, body }}),
  () => fetch(target + "/judge", {{ method: "POST", headers: {{ "Content-Type": "application/json" }}, body }}),
  async () => {{
    const page = await (await fetch(target + "/")).text();
    const m = page.match(/ranklab-token" content="([0-9a-f]+)"/);
    return fetch(target + "/judge", {{ method: "POST", headers: {{ "Content-Type": "application/json", "X-Ranklab-Token": m ? m[1] : "" }}, body }});
  }},
];
(async () => {{
  const results = [];
  for (const t of tries) {{
    try {{ const r = await t(); results.push("answered " + r.status + " " + r.type); }}
    catch (e) {{ results.push("failed: " + e); }}
  }}
  document.body.dataset.results = JSON.stringify(results);
}})();
</script></body></html>"#
    );
    // The attacker's server: any request gets the page.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let attacker = format!(
        "http://127.0.0.1:{}/",
        listener.local_addr().unwrap().port()
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{attack}",
                attack.len()
            );
        }
    });
    let b = Browser::start();
    let wd = &b;
    wd.post("/url", json!({ "url": attacker }));
    let results = wait_for("the attack's fetches", || {
        wd.script("return document.body.dataset.results || null")
            .as_str()
            .map(str::to_string)
    });
    // The no-cors POST was sent and its answer hidden (opaque); the two others were stopped by
    // the browser (a CORS preflight nobody granted, a cross-origin read).
    assert!(
        results.contains("answered 0 opaque") && !results.contains("answered 200"),
        "{results}"
    );
    // The form POST: the browser navigates to the server's answer, the refusal.
    wd.script("document.getElementById('f').submit(); return null");
    let shown = wait_for("the form's answer", || {
        let at = wd.get("/url")["value"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (at == format!("{url}/judge"))
            .then(|| wd.script("return document.body.textContent"))
            .and_then(|v| v.as_str().map(str::to_string))
            .filter(|t| !t.is_empty())
    });
    assert!(
        shown.contains("is not this page's"),
        "the form POST was not refused for its origin: {shown}"
    );
    drop(b);
    assert!(
        !dir.path().join("tasks/p/judgments.yaml").exists(),
        "a page on another origin wrote judgments.yaml: {}",
        std::fs::read_to_string(dir.path().join("tasks/p/judgments.yaml")).unwrap_or_default()
    );
}

/// One HTTP/1.1 request over a fresh connection, written as given; the status and the body of
/// the answer. The read timeout only keeps a broken server from hanging the test.
fn http(url: &str, request: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A POST /judge with `headers` (each `Name: value`) and `body`.
fn post(url: &str, headers: &[String], body: &str) -> (u16, String) {
    let host = url.trim_start_matches("http://");
    let mut req = format!("POST /judge HTTP/1.1\r\nHost: {host}\r\n");
    for h in headers {
        req.push_str(h);
        req.push_str("\r\n");
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    http(url, &req)
}

/// The token the served page carries.
fn page_token(url: &str) -> String {
    let host = url.trim_start_matches("http://");
    let (status, page) = http(
        url,
        &format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(status, 200);
    let start = page
        .find("name=\"ranklab-token\" content=\"")
        .expect("a token meta")
        + 30;
    let token = page[start..].split('"').next().unwrap().to_string();
    assert_eq!(token.len(), 64, "{token}");
    token
}

fn judgments_text(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join("tasks/p/judgments.yaml")).ok()
}

/// (task, document, grade, judge) of every judgment on disk.
fn on_disk(dir: &Path) -> Vec<(String, String, i32, String)> {
    ranklab::judgments::Judgments::load(&dir.join("tasks/p/judgments.yaml"), "p")
        .unwrap()
        .judgments
        .into_iter()
        .map(|j| (j.task, j.document, j.grade, j.judge))
        .collect()
}

fn row(t: &str, d: &str, g: i32, j: &str) -> (String, String, i32, String) {
    (t.into(), d.into(), g, j.into())
}

#[test]
fn a_foreign_origin_or_referer_is_refused_and_the_pages_own_origin_accepted() {
    let dir = pooled();
    let (_judge, url) = start_judge(dir.path(), "Ada", 2);
    let port = url.rsplit(':').next().unwrap();
    let token = format!("X-Ranklab-Token: {}", page_token(&url));
    let json = "Content-Type: application/json".to_string();
    let grade = r#"{"item":0,"grade":3}"#;
    for foreign in [
        "Origin: http://evil.example".to_string(),
        "Origin: null".to_string(),
        format!(
            "Origin: http://127.0.0.1:{}",
            port.parse::<u16>().unwrap() ^ 1
        ),
        "Referer: http://evil.example/judge".to_string(),
        format!("Referer: http://127.0.0.1:{port}.evil.example/"),
    ] {
        let (status, body) = post(&url, &[foreign.clone(), token.clone(), json.clone()], grade);
        assert_eq!(status, 403, "{foreign}: {body}");
        assert_eq!(judgments_text(dir.path()), None, "{foreign} wrote");
    }
    // The page's own origin (and its localhost name), with the token, writes.
    let (status, body) = post(
        &url,
        &[
            format!("Origin: http://127.0.0.1:{port}"),
            format!("Referer: http://127.0.0.1:{port}/"),
            token.clone(),
            json.clone(),
        ],
        grade,
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(
        &url,
        &[
            format!("Origin: http://localhost:{port}"),
            token.clone(),
            json.clone(),
        ],
        r#"{"item":1,"grade":1}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        on_disk(dir.path()),
        [row("T1", "beta", 3, "Ada"), row("T2", "alpha", 1, "Ada")]
    );
}

#[test]
fn a_post_without_the_token_or_not_json_is_refused_and_with_both_accepted() {
    let dir = pooled();
    let (_judge, url) = start_judge(dir.path(), "Ada", 2);
    let port = url.rsplit(':').next().unwrap();
    let own = format!("Origin: http://127.0.0.1:{port}");
    let token = page_token(&url);
    let with = format!("X-Ranklab-Token: {token}");
    let json = "Content-Type: application/json".to_string();
    let grade = r#"{"item":0,"grade":2}"#;
    let cases: [(Vec<String>, u16); 6] = [
        (vec![own.clone(), json.clone()], 403),
        (vec![json.clone()], 403),
        (
            vec![
                own.clone(),
                format!("X-Ranklab-Token: {}", "0".repeat(64)),
                json.clone(),
            ],
            403,
        ),
        (
            vec![own.clone(), with.clone(), with.clone(), json.clone()],
            403,
        ),
        (
            vec![own.clone(), with.clone(), "Content-Type: text/plain".into()],
            415,
        ),
        (vec![own.clone(), with.clone()], 415),
    ];
    for (headers, want) in cases {
        let (status, body) = post(&url, &headers, grade);
        assert_eq!(status, want, "{headers:?}: {body}");
        assert_eq!(judgments_text(dir.path()), None, "{headers:?} wrote");
    }
    // Token and JSON (with a charset parameter), no Origin or Referer (curl): written.
    let (status, body) = post(
        &url,
        &[with, "Content-Type: application/json; charset=utf-8".into()],
        grade,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(on_disk(dir.path()), [row("T1", "beta", 2, "Ada")]);
}

/// Two `ranklab judge` processes on one suite, both started before either wrote: each grades a
/// different document, and both grades are on disk; the second's answer shows the first's
/// grade. Before the file was merged under a lock, the second wrote its own copy and the first
/// grade was lost.
#[test]
fn two_judging_sessions_on_one_suite_keep_both_grades() {
    let dir = pooled();
    let (_a, url_a) = start_judge(dir.path(), "Ada", 2);
    let (_b, url_b) = start_judge(dir.path(), "Bo", 2);
    let headers = |url: &str| {
        let port = url.rsplit(':').next().unwrap();
        vec![
            format!("Origin: http://127.0.0.1:{port}"),
            format!("X-Ranklab-Token: {}", page_token(url)),
            "Content-Type: application/json".to_string(),
        ]
    };
    let (status, body) = post(&url_a, &headers(&url_a), r#"{"item":0,"grade":2}"#);
    assert_eq!(status, 200, "{body}");
    let (status, body) = post(&url_b, &headers(&url_b), r#"{"item":1,"grade":0}"#);
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer, json!({ "left": 0, "grades": [2, 0] }));
    assert_eq!(
        on_disk(dir.path()),
        [row("T1", "beta", 2, "Ada"), row("T2", "alpha", 0, "Bo")]
    );
}

/// A client that sends half a request and stalls holds up no other: another client's request
/// is answered while the stalled connection is still open and unanswered. A server that serves
/// one connection at a time answers the second only after giving up on the first (closing it).
#[test]
fn a_stalled_client_does_not_hold_up_another() {
    let dir = pooled();
    let (_judge, url) = start_judge(dir.path(), "Ada", 2);
    let host = url.trim_start_matches("http://");
    let mut stalled = TcpStream::connect(host).unwrap();
    stalled
        .write_all(format!("POST /judge HTTP/1.1\r\nHost: {host}\r\nContent-Le").as_bytes())
        .unwrap();
    let (status, body) = http(
        &url,
        &format!("GET /items HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    );
    assert_eq!(status, 200, "{body}");
    let items: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(items["left"], json!(2));
    // Each item carries its task's expected documents (suite.yaml: T1 expects alpha, T2 beta;
    // titles from the fixture's front matter).
    assert_eq!(
        items["items"][0]["expected"],
        json!([{ "id": "alpha", "title": "Idempotency keys for payment capture", "grade": 1 }])
    );
    assert_eq!(
        items["items"][1]["expected"],
        json!([{ "id": "beta", "title": "Refunds and disputes", "grade": 1 }])
    );
    stalled.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    match stalled.read(&mut buf) {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!(
            "the stalled connection was closed or answered before the other was served: {other:?}"
        ),
    }
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
