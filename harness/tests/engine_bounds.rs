//! External engines are bounded, and what is recorded of them holds no secret (issue 25, items 6
//! and 8), end to end through the built binary.
//!
//! Properties checked:
//! - a command engine that leaves a process in the background holding its pipes, and never
//!   answers, ends the run (exit 2, naming the timeout) and leaves neither process running; one
//!   that answers every task and leaves such a process behind ends the run with exit 0 and leaves
//!   nothing running either;
//! - SIGTERM or SIGINT to ranklab kills the engine's whole process group, and ranklab ends as the
//!   signal ends it;
//! - an HTTP engine's `429` with `Retry-After: 1` is retried once, no sooner than a second later
//!   by the server's own clock;
//! - a request the engine never answers holds back no other task: every other task reaches the
//!   engine while it is held (concurrency 2);
//! - an engine that echoes the `Authorization` header and the body puts neither secret into the
//!   recording, and `${NAME}` in a `body:` reaches the engine expanded; a command engine that
//!   echoes a value its `env` got from `${NAME}` puts it into no written file either;
//! - a hit id holding a control character is refused, naming the configuration and the task, and
//!   no run file of that configuration is written.
//!
//! No assertion is timed: waits are bounded by generous limits only so that a regression fails
//! instead of hanging the suite.

mod common;

use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a run may take before the test calls it hung.
const HUNG: Duration = Duration::from_secs(90);

/// A started ranklab whose stdout and stderr go to files in `dir`.
fn spawn_ranklab(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ranklab"));
    cmd.args(args)
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("ranklab.out")).unwrap())
        .stderr(std::fs::File::create(dir.join("ranklab.err")).unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("start ranklab")
}

/// Waits for `child` at most [`HUNG`]; a run still going then is killed, and the error says
/// so (the caller cleans up what the engine left, then fails).
fn wait_bounded(child: &mut std::process::Child, what: &str) -> Result<ExitStatus, String> {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Ok(s);
        }
        if start.elapsed() > HUNG {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{what}: ranklab still running after {HUNG:?} (hung)"
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs ranklab to its end (bounded); the exit status (or that it hung) and stderr.
fn try_run(
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Result<ExitStatus, String>, String) {
    let mut child = spawn_ranklab(dir, args, env);
    let status = wait_bounded(&mut child, &args.join(" "));
    let err = std::fs::read_to_string(dir.join("ranklab.err")).unwrap();
    (status, err)
}

/// [`try_run`], failing the test when ranklab hung.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (ExitStatus, String) {
    let (status, err) = try_run(dir, args, env);
    (status.unwrap_or_else(|e| panic!("{e}")), err)
}

/// Whether process `pid` is running (a zombie, dead but not yet reaped, is not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the command name's closing parenthesis.
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

/// Whether `pid` is gone, given some seconds to die after a SIGKILL was sent.
fn gone(pid: u32) -> bool {
    let start = Instant::now();
    while alive(pid) {
        if start.elapsed() > Duration::from_secs(30) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}

/// The pid in `path`, waiting (bounded) for the engine to write it.
fn read_pid(path: &Path) -> u32 {
    let start = Instant::now();
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if let Ok(p) = s.trim().parse() {
                return p;
            }
        }
        assert!(
            start.elapsed() < HUNG,
            "the engine never wrote {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills a process the test left behind (after the assertions, whatever they found).
fn cleanup(pids: &[u32]) {
    for p in pids {
        let _ = Command::new("kill")
            .args(["-KILL", &p.to_string()])
            .stderr(Stdio::null())
            .status();
    }
}

fn experiments(engine: &str) -> String {
    format!(
        "experiment: e\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: ext\n    engine: {engine}\n"
    )
}

/// A shell engine that starts a background `sleep` (it inherits the engine's stdout and
/// stderr), writes its own pid and the sleep's into `dir`, and then never answers.
fn hanging_engine(dir: &Path) -> String {
    format!(
        "#!/bin/sh\nsleep 3600 &\necho $! > '{d}/grandchild.pid'\necho $$ > '{d}/child.pid'\nexec sleep 3601\n",
        d = dir.display()
    )
}

#[test]
fn a_command_engine_whose_background_process_holds_its_pipes_ends_at_its_timeout_with_its_group() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    std::fs::write(dir.join("engine.sh"), hanging_engine(dir)).unwrap();
    std::fs::write(
        dir.join("tasks/p/experiments.yaml"),
        experiments("{ command: [sh, ../../engine.sh], timeout_ms: 1500 }"),
    )
    .unwrap();
    let (status, err) = try_run(dir, &["run", "tasks/p", "--reports", "reports"], &[]);
    let (child, grandchild) = (
        read_pid(&dir.join("child.pid")),
        read_pid(&dir.join("grandchild.pid")),
    );
    let (child_gone, grandchild_gone) = (gone(child), gone(grandchild));
    cleanup(&[child, grandchild]);
    let status = status.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("did not answer within 1500 ms"), "{err}");
    assert!(child_gone, "the engine process {child} is still running");
    assert!(
        grandchild_gone,
        "the engine's background process {grandchild} is still running"
    );
}

/// The good half: an engine that answers every task but leaves a background process behind.
#[test]
fn a_command_engine_that_answers_and_leaves_a_background_process_leaves_nothing_running() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let engine = format!(
        r#"import json, subprocess, sys
p = subprocess.Popen(["sleep", "3600"])
open("{d}/grandchild.pid", "w").write(str(p.pid))
for line in sys.stdin:
    req = json.loads(line)
    print(json.dumps({{"task": req["task"], "hits": [{{"id": "alpha", "score": 1.0}}]}}), flush=True)
"#,
        d = dir.display()
    );
    std::fs::write(dir.join("engine.py"), engine).unwrap();
    std::fs::write(
        dir.join("tasks/p/experiments.yaml"),
        experiments("{ command: [python3, ../../engine.py], timeout_ms: 20000 }"),
    )
    .unwrap();
    let (status, err) = run(dir, &["run", "tasks/p", "--reports", "reports"], &[]);
    let grandchild = read_pid(&dir.join("grandchild.pid"));
    let grandchild_gone = gone(grandchild);
    cleanup(&[grandchild]);
    assert!(status.success(), "{err}");
    let trec = std::fs::read_to_string(dir.join("reports/p/runs/ext.trec")).unwrap();
    assert_eq!(trec.lines().count(), 3, "one hit per task: {trec}");
    assert!(
        grandchild_gone,
        "the engine's background process {grandchild} outlived the run"
    );
}

#[test]
fn sigterm_or_sigint_to_ranklab_kills_the_engines_process_group() {
    for (signal, number) in [("TERM", 15), ("INT", 2)] {
        let tmp = common::fixture_copy("bad_input");
        let dir = tmp.path();
        std::fs::write(dir.join("engine.sh"), hanging_engine(dir)).unwrap();
        std::fs::write(
            dir.join("tasks/p/experiments.yaml"),
            experiments("{ command: [sh, ../../engine.sh], timeout_ms: 600000 }"),
        )
        .unwrap();
        let mut ranklab = spawn_ranklab(dir, &["run", "tasks/p", "--reports", "reports"], &[]);
        // Both processes exist once the engine wrote both pids.
        let (child, grandchild) = (
            read_pid(&dir.join("child.pid")),
            read_pid(&dir.join("grandchild.pid")),
        );
        Command::new("kill")
            .args([&format!("-{signal}"), &ranklab.id().to_string()])
            .status()
            .unwrap();
        let status = wait_bounded(&mut ranklab, signal);
        let (child_gone, grandchild_gone) = (gone(child), gone(grandchild));
        cleanup(&[child, grandchild]);
        let status = status.unwrap_or_else(|e| panic!("{e}"));
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(number),
            "SIG{signal}: ranklab ends as the signal ends it ({status})"
        );
        assert!(
            child_gone,
            "SIG{signal}: the engine {child} is still running"
        );
        assert!(
            grandchild_gone,
            "SIG{signal}: the engine's background process {grandchild} is still running"
        );
    }
}

/// A Python HTTP server on 127.0.0.1 for the tests below: `MODE` picks its behaviour; it
/// appends one JSON line per request to `LOG` (task, the server's clock, headers, body).
const HTTP_SERVER: &str = r#"
import http.server, json, sys, threading, time
mode, log = sys.argv[1], sys.argv[2]
lock = threading.Lock()
seen = []
arrived = threading.Condition(lock)
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, status, body, extra=()):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        for k, v in extra: self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        task = json.loads(raw)["task"]
        with lock:
            first = not seen
            seen.append(task)
            n = len(seen)
            arrived.notify_all()
            with open(log, "a") as f:
                f.write(json.dumps({"task": task, "t": time.monotonic(), "headers": dict(self.headers), "body": raw}) + "\n")
        ok = {"hits": {"hits": [{"_id": "alpha", "_score": 1.5}, {"_id": "beta", "_score": 0.5}]}}
        if mode == "retry-after" and first:
            return self.answer(429, "slow down", [("Retry-After", "1")])
        if mode == "stuck" and first:
            # Held until every other task has arrived (3 tasks in all), or 60 s.
            with lock:
                others = arrived.wait_for(lambda: len(set(seen)) >= 3, timeout=60)
            with open(log, "a") as f:
                f.write(json.dumps({"released": "after the others" if others else "on the limit"}) + "\n")
        if mode == "echo":
            ok["echo"] = {"authorization": self.headers.get("Authorization"), "body": raw}
            ok[self.headers.get("Authorization")] = "as a key"
        self.answer(200, ok)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// The server above, stopped on drop.
struct Server {
    child: std::process::Child,
    port: String,
}

impl Server {
    fn start(mode: &str, log: &Path) -> Server {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .args(["-c", HTTP_SERVER, mode])
            .arg(log)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the HTTP server");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        Server {
            child,
            port: line.trim().to_string(),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn log_lines(log: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn http_engine(port: &str, extra: &str) -> String {
    format!(
        "{{ http: {{ url: \"http://127.0.0.1:{port}/search\", body: '{{\"q\": \"{{{{query}}}}\", \"task\": \"{{{{task}}}}\"}}', preset: opensearch{extra} }} }}"
    )
}

#[test]
fn retry_after_on_a_429_is_honoured_by_the_servers_clock() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let log = dir.join("server.log");
    let server = Server::start("retry-after", &log);
    std::fs::write(
        dir.join("tasks/p/experiments.yaml"),
        experiments(&http_engine(&server.port, ", concurrency: 1, retries: 3")),
    )
    .unwrap();
    let (status, err) = run(dir, &["run", "tasks/p", "--reports", "reports"], &[]);
    assert!(status.success(), "{err}");
    let lines = log_lines(&log);
    // 3 tasks, the first asked twice: once answered 429, once after the wait.
    assert_eq!(lines.len(), 4, "{lines:?}");
    let first = &lines[0];
    let again: Vec<_> = lines[1..]
        .iter()
        .filter(|l| l["task"] == first["task"])
        .collect();
    assert_eq!(again.len(), 1, "the 429 task is asked once more: {lines:?}");
    let waited = again[0]["t"].as_f64().unwrap() - first["t"].as_f64().unwrap();
    assert!(
        waited >= 1.0,
        "the retry came {waited:.3} s after the 429 that said Retry-After: 1"
    );
    assert!(err.contains("Retry-After: 1"), "said on stderr: {err}");
    assert_eq!(err.matches("Retry-After").count(), 1, "said once: {err}");
}

#[test]
fn a_request_the_engine_never_answers_holds_back_no_other_task() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let log = dir.join("server.log");
    let server = Server::start("stuck", &log);
    std::fs::write(
        dir.join("tasks/p/experiments.yaml"),
        experiments(
            &http_engine(&server.port, ", concurrency: 2, retries: 0")
                .replace("} }", "}, timeout_ms: 120000 }"),
        ),
    )
    .unwrap();
    let (status, err) = run(dir, &["run", "tasks/p", "--reports", "reports"], &[]);
    assert!(status.success(), "{err}");
    let released: Vec<_> = log_lines(&log)
        .into_iter()
        .filter_map(|l| l.get("released").cloned())
        .collect();
    assert_eq!(
        released,
        vec![serde_json::json!("after the others")],
        "while the first request was held, every other task reached the engine"
    );
}

#[test]
fn secrets_an_engine_echoes_stay_out_of_the_recording_and_a_body_name_is_expanded() {
    const TOKEN: &str = "tok-9f2c-SECRET-bearer";
    const BODY_KEY: &str = "bodykey-77e1-SECRET";
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let log = dir.join("server.log");
    let server = Server::start("echo", &log);
    let engine = format!(
        "{{ http: {{ url: \"http://127.0.0.1:{}/search\", headers: {{ Authorization: \"Bearer ${{RANKLAB_TEST_TOKEN}}\" }}, body: '{{\"q\": \"{{{{query}}}}\", \"task\": \"{{{{task}}}}\", \"key\": \"${{RANKLAB_TEST_BODY_KEY}}\"}}', preset: opensearch }} }}",
        server.port
    );
    std::fs::write(dir.join("tasks/p/experiments.yaml"), experiments(&engine)).unwrap();
    let env = [
        ("RANKLAB_TEST_TOKEN", TOKEN),
        ("RANKLAB_TEST_BODY_KEY", BODY_KEY),
    ];
    let (status, err) = run(
        dir,
        &["run", "tasks/p", "--reports", "reports", "--record"],
        &env,
    );
    assert!(status.success(), "{err}");
    // The engine got both values expanded (the body's as its JSON field).
    let lines = log_lines(&log);
    assert_eq!(lines.len(), 3, "{lines:?}");
    for l in &lines {
        assert_eq!(l["headers"]["Authorization"], format!("Bearer {TOKEN}"));
        let body: serde_json::Value = serde_json::from_str(l["body"].as_str().unwrap()).unwrap();
        assert_eq!(body["key"], BODY_KEY, "{body}");
    }
    // It echoed both back; neither reaches a written file.
    let rec = std::fs::read(dir.join("reports/p/runs/ext.recording.json")).unwrap();
    let text = String::from_utf8_lossy(&rec);
    assert!(text.contains("\"echo\""), "the echo is recorded: {text}");
    for (name, secret) in env {
        for (path, bytes) in common::tree(&dir.join("reports")) {
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{name}'s value is in {}", path.display());
        }
    }
    assert!(text.contains("${RANKLAB_TEST_TOKEN}") || text.contains("[redacted]"));
    assert!(text.contains("${RANKLAB_TEST_BODY_KEY}"), "{text}");
    // The recording replays with no engine and no secret.
    drop(server);
    let (status, err) = run(
        dir,
        &[
            "run",
            "tasks/p",
            "--reports",
            "replayed",
            "--recordings",
            "reports",
            "--from-recording",
        ],
        &[],
    );
    assert!(status.success(), "{err}");
    assert_eq!(
        std::fs::read(dir.join("replayed/p/runs/ext.trec")).unwrap(),
        std::fs::read(dir.join("reports/p/runs/ext.trec")).unwrap()
    );
}

/// The command adapter: an engine that echoes the value its `env` got from `${NAME}` puts it
/// into no written file; the recording has `${NAME}` in its place.
#[test]
fn a_secret_a_command_engine_echoes_stays_out_of_the_recording() {
    const TOKEN: &str = "cmd-token-31d7-SECRET";
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    std::fs::write(
        dir.join("engine.py"),
        "import json, os, sys\nfor line in sys.stdin:\n    req = json.loads(line)\n    print(json.dumps({\"task\": req[\"task\"], \"hits\": [{\"id\": \"alpha\", \"score\": 1.0}], \"debug\": \"token=\" + os.environ[\"TOKEN\"]}), flush=True)\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tasks/p/experiments.yaml"),
        experiments(
            "{ command: [python3, ../../engine.py], env: { TOKEN: \"${RANKLAB_TEST_CMD_TOKEN}\" } }",
        ),
    )
    .unwrap();
    let (status, err) = run(
        dir,
        &["run", "tasks/p", "--reports", "reports", "--record"],
        &[("RANKLAB_TEST_CMD_TOKEN", TOKEN)],
    );
    assert!(status.success(), "{err}");
    let rec = std::fs::read_to_string(dir.join("reports/p/runs/ext.recording.json")).unwrap();
    assert!(
        rec.contains("token=${RANKLAB_TEST_CMD_TOKEN}"),
        "the echo is recorded with the name in place of the value: {rec}"
    );
    for (path, bytes) in common::tree(&dir.join("reports")) {
        let found = bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes());
        assert!(!found, "the token is in {}", path.display());
    }
}

#[test]
fn a_hit_id_with_a_control_character_is_refused_naming_configuration_and_task() {
    for (label, id) in [
        ("NUL", "alpha\\u0000x"),
        ("DEL", "alpha\\u007fx"),
        ("ESC", "\\u001b[31malpha"),
    ] {
        let tmp = common::fixture_copy("bad_input");
        let dir = tmp.path();
        let engine = format!(
            r#"import json, sys
for line in sys.stdin:
    req = json.loads(line)
    bad = req["task"] == "T2"
    hits = [{{"id": "beta", "score": 2.0}}, {{"id": json.loads(r'"{id}"') if bad else "alpha", "score": 1.0}}]
    print(json.dumps({{"task": req["task"], "hits": hits}}), flush=True)
"#
        );
        std::fs::write(dir.join("engine.py"), engine).unwrap();
        std::fs::write(
            dir.join("tasks/p/experiments.yaml"),
            experiments("{ command: [python3, ../../engine.py] }")
                .replace("name: ext", "name: ctl"),
        )
        .unwrap();
        let (status, err) = run(dir, &["run", "tasks/p", "--reports", "reports"], &[]);
        assert_eq!(status.code(), Some(2), "{label}: {err}");
        assert!(
            err.contains("configuration \"ctl\"")
                && err.contains("task T2")
                && err.contains("control character"),
            "{label}: {err}"
        );
        assert!(
            !dir.join("reports/p/runs/ctl.trec").exists(),
            "{label}: a run file was written"
        );
    }
    // The good half: the same engine with printable ids runs.
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    std::fs::write(
        dir.join("engine.py"),
        "import json, sys\nfor line in sys.stdin:\n    req = json.loads(line)\n    print(json.dumps({\"task\": req[\"task\"], \"hits\": [{\"id\": \"alpha\", \"score\": 1.0}]}), flush=True)\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tasks/p/experiments.yaml"),
        experiments("{ command: [python3, ../../engine.py] }").replace("name: ext", "name: ctl"),
    )
    .unwrap();
    let (status, err) = run(dir, &["run", "tasks/p", "--reports", "reports"], &[]);
    assert!(status.success(), "{err}");
}
