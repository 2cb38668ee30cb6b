//! A real browser for the page tests: Debian's `chromium`, headless, driven over WebDriver by
//! `chromedriver` from `chromium-driver` (`just setup` installs both), with the small process
//! and polling helpers those tests share.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A child process killed (and waited for) when dropped.
pub struct Running(pub Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port free on 127.0.0.1 at the time of the call.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Polls `f` until it returns Some, for at most 30 s (a bound on a hang, not a timing claim).
pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
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
pub fn post_json(url: &str, body: &Value) -> Value {
    let mut r = ureq::post(url)
        .header("Content-Type", "application/json")
        .send(body.to_string())
        .unwrap_or_else(|e| panic!("POST {url}: {e}"));
    serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
}

/// chromedriver on a free port with a headless chromium session (1280×860, logging the console
/// and DevTools' network events); the session, the driver and the profile end when dropped.
pub struct Browser {
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
    pub fn start() -> Browser {
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
                "goog:loggingPrefs": { "browser": "ALL", "performance": "ALL" },
                "goog:chromeOptions": {
                    "binary": "/usr/bin/chromium",
                    "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                             "--disable-dev-shm-usage", "--window-size=1280,860",
                             format!("--user-data-dir={}", profile.path().display())]
                }
            } } }),
        );
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {created}"))
            .to_string();
        Browser {
            base,
            session,
            _driver: driver,
            _profile: profile,
        }
    }

    pub fn post(&self, path: &str, body: Value) -> Value {
        post_json(
            &format!("{}/session/{}{path}", self.base, self.session),
            &body,
        )
    }

    pub fn get(&self, path: &str) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut r = ureq::get(&url)
            .call()
            .unwrap_or_else(|e| panic!("GET {url}: {e}"));
        serde_json::from_str(&r.body_mut().read_to_string().unwrap()).unwrap()
    }

    pub fn open(&self, url: &str) {
        self.post("/url", json!({ "url": url }));
    }

    pub fn script(&self, js: &str) -> Value {
        self.post("/execute/sync", json!({ "script": js, "args": [] }))["value"].clone()
    }

    /// The text of the element with this id ("" when it has none).
    pub fn text(&self, id: &str) -> String {
        self.script(&format!(
            "return document.getElementById('{id}').textContent"
        ))
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    pub fn press(&self, key: &str) {
        self.post(
            "/actions",
            json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": [
                { "type": "keyDown", "value": key }, { "type": "keyUp", "value": key }
            ] }] }),
        );
    }

    pub fn click(&self, css: &str) {
        let found = self.post("/element", json!({ "using": "css selector", "value": css }));
        let element = found["value"]["element-6066-11e4-a52e-4f735466cecf"]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_string();
        self.post(&format!("/element/{element}/click"), json!({}));
    }

    /// The log of `kind` (`browser`: the console; `performance`: DevTools events) since the last
    /// call.
    pub fn log(&self, kind: &str) -> Vec<Value> {
        self.post("/se/log", json!({ "type": kind }))["value"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Saves a screenshot to `$RANKLAB_SCREENSHOTS/NAME.png` when that is set.
    pub fn screenshot(&self, name: &str) {
        let Ok(dir) = std::env::var("RANKLAB_SCREENSHOTS") else {
            return;
        };
        let v = self.get("/screenshot");
        let png = base64_decode(v["value"].as_str().unwrap());
        std::fs::write(Path::new(&dir).join(format!("{name}.png")), png).unwrap();
    }
}

/// Standard base64 (RFC 4648 §4, `=` padding), as WebDriver sends screenshots.
fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = s
        .bytes()
        .filter(|&c| c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &c)| n | u32::from(value(c)) << (18 - 6 * i));
        out.extend(n.to_be_bytes()[1..chunk.len()].iter());
    }
    out
}
