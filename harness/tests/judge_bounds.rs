//! `ranklab judge` is bounded (issue 42, cases 7 and 8), through the built binary on the
//! `bad_input` suite with a hand-written pool. Properties:
//! - the judging page: 50 idle connections (more than the 32 client slots) do not keep a real
//!   `GET /items` out, it is answered 200; a `POST` with a 70 KB or a 10 MB body gets an HTTP
//!   answer, 413; a connection that sends half a request head and stalls is closed and logged as
//!   a client sending too slowly, never as "os error 11";
//! - `--llm-endpoint` against a server that drips a byte a second ends (exit 2) with the timeout
//!   `--llm-timeout-ms` set and the retries `--llm-retries` set, naming the endpoint.
//!
//! No assertion is timed: reads wait at most generous limits so that a regression fails
//! instead of hanging.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const POOL: &str = "suite: p\ndepth: 2\nconfigurations: [a]\ntasks:\n  - id: T1\n    query: idempotency key for a replayed capture\n    documents:\n      - { id: beta, best_rank: 1, configurations: [a] }\n      - { id: gamma, best_rank: 2, configurations: [a] }\n";

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn pooled() -> tempfile::TempDir {
    let tmp = common::fixture_copy("bad_input");
    std::fs::write(tmp.path().join("tasks/p/pool.yaml"), POOL).unwrap();
    tmp
}

/// `ranklab judge tasks/p` in `dir`, stderr to `dir/judge.err`; the server's `host:port`.
fn start_judge(dir: &Path) -> (Running, String) {
    let mut judge = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["judge", "tasks/p", "--judge", "Ada"])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(dir.join("judge.err")).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(judge.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let running = Running(judge);
    let host = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .trim_end_matches('/')
        .to_string();
    (running, host)
}

/// Sends `head` and `body` (what of the body the server reads) and returns the status line of
/// the answer, or what went wrong.
fn exchange(host: &str, head: &str, body: &[u8]) -> Result<String, String> {
    let mut s = TcpStream::connect(host).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.set_write_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(head.as_bytes()).map_err(|e| e.to_string())?;
    // The server may answer and stop reading before the body is all sent.
    let _ = s.write_all(body);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    match text.lines().next() {
        Some(l) if l.starts_with("HTTP/1.1 ") => Ok(l.to_string()),
        _ => Err(format!("no HTTP answer (got {} bytes)", answer.len())),
    }
}

#[test]
fn idle_connections_do_not_keep_a_real_request_out() {
    let tmp = pooled();
    let (_judge, host) = start_judge(tmp.path());
    let idle: Vec<TcpStream> = (0..50)
        .map(|_| TcpStream::connect(&host).unwrap())
        .collect();
    // Give the server time to accept every idle connection (it answers in accept order).
    std::thread::sleep(Duration::from_millis(500));
    let got = exchange(
        &host,
        &format!("GET /items HTTP/1.1\r\nHost: {host}\r\n\r\n"),
        b"",
    );
    assert_eq!(got.as_deref(), Ok("HTTP/1.1 200 OK"));
    drop(idle);
}

#[test]
fn a_large_post_body_is_answered_413() {
    let tmp = pooled();
    let (_judge, host) = start_judge(tmp.path());
    for size in [70_000usize, 10_000_000] {
        let head = format!(
            "POST /judge HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
        );
        let got = exchange(&host, &head, &vec![b' '; size]);
        assert_eq!(
            got.as_deref(),
            Ok("HTTP/1.1 413 Content Too Large"),
            "a body of {size} bytes"
        );
    }
    // The good half: a small body reaches the checks (no token here: 403).
    let body = br#"{"item": 0, "grade": 1}"#;
    let head = format!(
        "POST /judge HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    assert_eq!(
        exchange(&host, &head, body).as_deref(),
        Ok("HTTP/1.1 403 Forbidden")
    );
}

#[test]
fn a_slowloris_connection_is_closed_and_logged_as_such() {
    let tmp = pooled();
    let (_judge, host) = start_judge(tmp.path());
    let mut s = TcpStream::connect(&host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(format!("GET /items HTTP/1.1\r\nHost: {host}\r\nX-A: ").as_bytes())
        .unwrap();
    // The server closes the connection at its head deadline: the read ends (0 bytes).
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    assert_eq!(n, 0, "{:?}", String::from_utf8_lossy(&buf[..n]));
    // The log line is written as the connection is closed; wait for it (bounded).
    let start = Instant::now();
    let err = loop {
        let err = std::fs::read_to_string(tmp.path().join("judge.err")).unwrap();
        if err.contains("did not arrive") || start.elapsed() > Duration::from_secs(30) {
            break err;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        err.contains("the request head did not arrive within 10 s (a client sending too slowly"),
        "{err}"
    );
    assert!(!err.contains("os error 11"), "{err}");
}

#[test]
fn a_dripping_llm_endpoint_fails_at_the_deadline_with_the_retries_given() {
    let tmp = pooled();
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = std::sync::Arc::clone(&accepted);
    // Each connection: the request is read, then a response head trickles a byte a second.
    std::thread::spawn(move || {
        for conn in server.incoming() {
            let Ok(mut conn) = conn else { continue };
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut buf = [0u8; 65536];
                let _ = conn.read(&mut buf);
                for b in b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
                    .iter()
                    .cycle()
                {
                    if conn.write_all(&[*b]).is_err() {
                        return;
                    }
                    std::thread::sleep(Duration::from_secs(1));
                }
            });
        }
    });
    let url = format!("http://127.0.0.1:{port}/v1");
    let mut judge = Running(
        Command::new(env!("CARGO_BIN_EXE_ranklab"))
            .args([
                "judge",
                "tasks/p",
                "--llm-endpoint",
                &url,
                "--llm-model",
                "m",
                "--llm-timeout-ms",
                "1500",
                "--llm-retries",
                "1",
            ])
            .current_dir(tmp.path())
            .env("RANKLAB_CACHE", tmp.path().join("cache"))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(tmp.path().join("llm.err")).unwrap())
            .spawn()
            .unwrap(),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(s) = judge.0.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > Duration::from_secs(120) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let err = std::fs::read_to_string(tmp.path().join("llm.err")).unwrap();
    let status = status.unwrap_or_else(|| panic!("still running after 120 s: {err}"));
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("judge endpoint {url}")) && err.contains("timed out after 1500 ms"),
        "{err}"
    );
    // One attempt and one retry for the first pair, which stops the run.
    assert_eq!(
        accepted.load(std::sync::atomic::Ordering::SeqCst),
        2,
        "{err}"
    );
}

/// Issue 42 case 9 for the judge: a `--llm-endpoint` holding CR LF (which would add a header or
/// rewrite the request line) is refused before any connection, exit 2, naming the option; the
/// oracle for "no connection" is a listener on the URL's port that counts what it accepts.
#[test]
fn an_llm_endpoint_with_cr_lf_is_refused_before_any_connection() {
    let tmp = pooled();
    let server = TcpListener::bind("127.0.0.1:0").unwrap();
    server.set_nonblocking(true).unwrap();
    let port = server.local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/v1 HTTP/1.1\r\nX-Injected: 1\r\n");
    let out = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args([
            "judge",
            "tasks/p",
            "--llm-endpoint",
            &url,
            "--llm-model",
            "m",
        ])
        .current_dir(tmp.path())
        .env("RANKLAB_CACHE", tmp.path().join("cache"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--llm-endpoint") && err.contains("U+000D"),
        "{err}"
    );
    assert!(
        server.accept().is_err(),
        "the judge connected to the endpoint"
    );
}
