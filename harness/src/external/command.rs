//! The command adapter: one long-lived child process per configuration per run, speaking JSON
//! lines.
//!
//! ranklab writes one request per line on the child's stdin,
//! `{"task": "T01", "query": "...", "k": 100}`, and reads one response per line on its stdout,
//! `{"task": "T01", "hits": [{"id": "doc-a", "score": 3.5}, ...]}` or
//! `{"task": "T01", "error": "message"}`. With `version: true` the first request is
//! `{"version": true}`, answered by `{"version": "..."}`. When every task is answered, ranklab
//! closes stdin and the child exits.
//!
//! Every answer line is read with a bound ([`MAX_ANSWER`]): a longer one, or output with no
//! newline within it, is an error, never buffered whole; a hit id over
//! [`ranklab_engine::input::MAX_ID_BYTES`] is refused. The version answer, an engine's
//! `error` and each kept stderr line are cut to their first [`super::ERROR_BYTES`] bytes.
//!
//! The child's stderr is kept (its last lines): an engine that is not found, exits early,
//! answers with a line that is not JSON or does not answer within `timeout_ms` is an error that
//! names the configuration, the task, the exit code and that tail.
//!
//! The child runs in a process group of its own, and that whole group is killed (SIGKILL) when
//! the engine is done with: after its last answer once the child has exited (or `timeout_ms`
//! after stdin was closed), on a timeout or any other failure, when ranklab leaves the run by
//! an error or a panic (the engine's `Drop`), and on SIGINT, SIGTERM, SIGHUP or SIGQUIT to ranklab (a signal
//! thread, started with the first engine, kills every running engine's group and then ends
//! ranklab as the signal would have). A process the engine left in the background (`sleep 100 &`)
//! therefore never outlives the run, and never holds ranklab on the pipes it inherited: every
//! read of the child's output waits at most `timeout_ms`, and the stderr tail at most a second
//! after the group is killed. A SIGKILL to ranklab itself (or another signal it does not catch)
//! leaves the group running. Writes of requests to the engine's stdin are not bounded by
//! `timeout_ms`: an engine that stops reading while over 64 KiB of requests wait blocks ranklab
//! until a signal.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex, Once};
use std::time::Duration;

use rustix::process::{kill_process_group, Pid, Signal};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::{request, Exchange};
use crate::engine_spec::{expand_env, EngineSpec};
use crate::suite::Task;

/// How many lines of the child's stderr are kept.
const STDERR_LINES: usize = 20;

/// The longest answer line read from an engine's stdout (one answer per line):
/// [`ranklab_engine::input::MAX_LINE_BYTES`]. A longer line, or one with no newline within it,
/// is an error; no more is ever buffered.
const MAX_ANSWER: usize = ranklab_engine::input::MAX_LINE_BYTES;

/// Reads one line of the engine's stderr, keeping its first [`super::ERROR_BYTES`] bytes and
/// skipping the rest of it (noted with its length); `None` at the end.
fn stderr_line(r: &mut impl BufRead) -> std::io::Result<Option<String>> {
    let mut kept = Vec::new();
    let mut total = 0usize;
    let mut ended = false;
    loop {
        let avail = r.fill_buf()?;
        if avail.is_empty() {
            if total == 0 {
                return Ok(None);
            }
            break;
        }
        let (take, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        let room = (super::ERROR_BYTES + 4).saturating_sub(kept.len());
        kept.extend_from_slice(&avail[..take.min(room)]);
        total += take;
        r.consume(take);
        if done {
            ended = true;
            break;
        }
    }
    // The line's length without its line end (LF or CRLF).
    let mut total = total - usize::from(ended);
    kept.truncate(total);
    if ended && kept.len() == total && kept.last() == Some(&b'\r') {
        kept.pop();
        total -= 1;
    }
    let text = String::from_utf8_lossy(&kept);
    Ok(Some(if total > super::ERROR_BYTES {
        format!(
            "{}… ({total} bytes in all)",
            ranklab_engine::input::prefix(&text, super::ERROR_BYTES)
        )
    } else {
        text.into_owned()
    }))
}

/// How long the stderr tail is waited for once the engine's group was killed (its pipes then
/// close at once; this bounds a process that left the group and still holds them).
const STDERR_WAIT: Duration = Duration::from_secs(1);

/// The process groups of the engines running now (the group id is the child's pid).
static GROUPS: Mutex<Vec<Pid>> = Mutex::new(Vec::new());

/// Starts, once, the thread that kills every running engine's group on SIGINT, SIGTERM, SIGHUP
/// (the terminal closed) or SIGQUIT, and then ends ranklab as that signal does by default. (The
/// engine runs in its own process group, so a terminal's signals no longer reach it directly.)
/// Before it ends ranklab it lets the atomic writes under way finish and starts no other
/// ([`ranklab_engine::atomic::quiesce`], at most 30 s): an interrupted `bench`, `gate --update`
/// or `judge` leaves no `.ranklab-*.tmp`, and every file and report directory is wholly old or
/// wholly new. Started by `cli::main` for every command, which does not end the process itself
/// once a signal has come ([`interrupted`]): a run whose last write the watcher waited for ends
/// by the signal too, not with exit 0.
pub fn watch_signals() {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT]) {
            Ok(mut signals) => {
                std::thread::spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
                        for g in groups().iter() {
                            let _ = kill_process_group(*g, Signal::KILL);
                        }
                        ranklab_engine::atomic::quiesce(std::time::Duration::from_secs(30));
                        let _ = signal_hook::low_level::emulate_default_handler(sig);
                    }
                });
            }
            Err(e) => eprintln!(
                "warning: cannot watch for SIGINT/SIGTERM/SIGHUP/SIGQUIT ({e}); an interrupted run may leave its engine processes running"
            ),
        }
    });
}

/// Set by the signal watcher when a signal came: it is ending the process.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether SIGINT, SIGTERM, SIGHUP or SIGQUIT came: the watcher ends the process as the signal
/// would once the writes under way are done; the caller should wait for that, not exit.
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

fn groups() -> std::sync::MutexGuard<'static, Vec<Pid>> {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running engine process.
struct Engine {
    name: String,
    argv: Vec<String>,
    child: Child,
    /// The child's process group, until it is killed.
    group: Option<Pid>,
    stdin: Option<ChildStdin>,
    lines: Receiver<std::io::Result<String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Disconnected when the stderr reader has read to the end.
    stderr_done: Receiver<()>,
    line_no: usize,
    timeout: Duration,
}

/// Starts the command of `spec` (cwd and relative program resolved against `base`).
fn start(name: &str, spec: &EngineSpec, base: &Path) -> Result<Engine> {
    let argv = spec.command.clone().unwrap_or_default();
    let cwd = match &spec.cwd {
        Some(c) => base.join(c),
        None => base.to_path_buf(),
    };
    if !cwd.is_dir() {
        bail!(
            "configuration {name:?}: engine cwd {} is not a directory",
            cwd.display()
        );
    }
    let program = if argv[0].contains('/') {
        cwd.join(&argv[0])
    } else {
        PathBuf::from(&argv[0])
    };
    let mut cmd = Command::new(&program);
    cmd.args(&argv[1..])
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for (k, v) in &spec.env {
        let v = expand_env(v).with_context(|| format!("configuration {name:?}: engine env {k}"))?;
        cmd.env(k, v);
    }
    watch_signals();
    // The group is registered before a signal can find it missing: the signal thread waits for
    // the lock held across the spawn.
    let mut running = groups();
    let mut child = cmd.spawn().with_context(|| {
        format!(
            "configuration {name:?}: cannot start engine command {:?} (in {}); check that it is installed and on PATH",
            argv.join(" "),
            cwd.display()
        )
    })?;
    let group = Pid::from_child(&child);
    running.push(group);
    drop(running);
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        let _ = kill_process_group(group, Signal::KILL);
        bail!("configuration {name:?}: the engine's pipes were not opened");
    };
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut buf = Vec::new();
        for line_no in 1.. {
            let line = match ranklab_engine::input::read_line(&mut r, &mut buf, MAX_ANSWER, line_no)
            {
                Ok(0) => break,
                Ok(_) => {
                    let l = buf.strip_suffix(b"\n").unwrap_or(&buf);
                    String::from_utf8(l.to_vec()).map_err(|_| {
                        std::io::Error::new(
                            std::io::ErrorKind::InvalidData,
                            format!("stdout line {line_no} is not UTF-8"),
                        )
                    })
                }
                Err(e) => Err(e),
            };
            let stop = line.is_err();
            if tx.send(line).is_err() || stop {
                break;
            }
        }
    });
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let keep = Arc::clone(&tail);
    let (done, stderr_done) = mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _done = done;
        let mut r = BufReader::new(stderr);
        while let Ok(Some(line)) = stderr_line(&mut r) {
            let mut t = keep.lock().unwrap_or_else(|e| e.into_inner());
            if t.len() == STDERR_LINES {
                t.pop_front();
            }
            t.push_back(line);
        }
    });
    Ok(Engine {
        name: name.to_string(),
        argv,
        stdin: child.stdin.take(),
        child,
        group: Some(group),
        lines,
        stderr: tail,
        stderr_done,
        line_no: 0,
        timeout: spec.timeout(),
    })
}

impl Engine {
    /// Kills the child's whole process group (the child and whatever it started) and reaps the
    /// child; its pipes close with it.
    fn kill_group(&mut self) {
        if let Some(g) = self.group.take() {
            let _ = kill_process_group(g, Signal::KILL);
            groups().retain(|x| *x != g);
        }
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// The last lines of the child's stderr, indented, or a note that it wrote none. Called
    /// once the group is killed: the reader is given up to [`STDERR_WAIT`] to drain.
    fn stderr_tail(&mut self) -> String {
        let _ = self.stderr_done.recv_timeout(STDERR_WAIT);
        let t = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        if t.is_empty() {
            "; it wrote nothing on stderr".to_string()
        } else {
            format!(
                "; last lines of its stderr:\n    {}",
                t.iter().cloned().collect::<Vec<_>>().join("\n    ")
            )
        }
    }

    /// The exit status once the child has exited (waits up to a second).
    fn exit_status(&mut self) -> String {
        for _ in 0..100 {
            if let Ok(Some(s)) = self.child.try_wait() {
                return match s.code() {
                    Some(c) => format!("exited with code {c}"),
                    None => format!("was killed ({s})"),
                };
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        "closed its stdout".to_string()
    }

    fn fail(&mut self, task: &str, what: String) -> anyhow::Error {
        // A child that closed its stdout is usually exiting: give it a second to say how.
        let exited = match self.child.try_wait() {
            Ok(Some(_)) => true,
            _ if what.starts_with("stopped") => (0..100).any(|_| {
                std::thread::sleep(Duration::from_millis(10));
                matches!(self.child.try_wait(), Ok(Some(_)))
            }),
            _ => false,
        };
        let status = match exited {
            true => self.exit_status(),
            false => {
                self.kill_group();
                "ranklab stopped it".to_string()
            }
        };
        // Whatever the child left running goes with it.
        self.kill_group();
        let tail = self.stderr_tail();
        anyhow::anyhow!(
            "configuration {:?}, task {task}: engine {:?} {what} ({status}){tail}",
            self.name,
            self.argv.join(" "),
        )
    }

    /// Sends one request line and reads one response line.
    fn ask(&mut self, task: &str, req: &Value) -> Result<Value> {
        let mut line = req.to_string();
        line.push('\n');
        let sent = match self.stdin.as_mut() {
            Some(w) => w.write_all(line.as_bytes()).and_then(|()| w.flush()),
            None => Ok(()),
        };
        if let Err(e) = sent {
            let status = self.exit_status();
            self.kill_group();
            let tail = self.stderr_tail();
            bail!(
                "configuration {:?}, task {task}: engine {:?} {status} before reading the request ({e}){tail}",
                self.name,
                self.argv.join(" ")
            );
        }
        let got = match self.lines.recv_timeout(self.timeout) {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => return Err(self.fail(task, format!("wrote unreadable output ({e})"))),
            Err(RecvTimeoutError::Timeout) => {
                return Err(self.fail(
                    task,
                    format!(
                        "did not answer within {} ms (raise `timeout_ms`, or check that it answers each line as soon as it reads it and flushes stdout); it was stopped",
                        self.timeout.as_millis()
                    ),
                ))
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(self.fail(task, "stopped before answering".to_string()))
            }
        };
        self.line_no += 1;
        let text = got.trim_end_matches('\r');
        match serde_json::from_str::<Value>(text) {
            Ok(v) => Ok(v),
            Err(e) => {
                let hint = if text.contains("NaN") || text.contains("Infinity") {
                    " (NaN and Infinity are not JSON: scores must be finite numbers)"
                } else {
                    ""
                };
                let msg = e.to_string();
                let msg = msg.split(" at line ").next().unwrap_or(&msg);
                let what = format!(
                    "answered with stdout line {} that is not JSON (column {}: {msg}){hint}: {}",
                    self.line_no,
                    e.column(),
                    super::cut(text, 200)
                );
                Err(self.fail(task, what))
            }
        }
    }

    /// Closes stdin and waits for the child to exit (at most the timeout), then kills its
    /// group: what it left in the background goes too.
    fn finish(mut self) -> Result<()> {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + self.timeout;
        while self.child.try_wait()?.is_none() && std::time::Instant::now() <= deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill_group();
        Ok(())
    }
}

impl Drop for Engine {
    /// On every way out of a run (an error, a panic), the engine's group is killed.
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Asks the engine every task, in suite order; returns the exchanges and the engine's version.
pub fn run(
    name: &str,
    spec: &EngineSpec,
    base: &Path,
    tasks: &[Task],
    k: usize,
) -> Result<(Vec<Exchange>, Option<String>)> {
    let mut engine = start(name, spec, base)?;
    let version = if spec.version {
        let v = engine.ask("(version)", &serde_json::json!({ "version": true }))?;
        match v.get("version").and_then(Value::as_str) {
            Some(s) => Some(super::cut(s, super::ERROR_BYTES)),
            None => bail!(
                "configuration {name:?}: the engine answered the version request with {}; expected {{\"version\": \"...\"}}",
                super::snippet(&v)
            ),
        }
    } else {
        None
    };
    let pb = crate::progress::rate_bar(tasks.len() as u64, name);
    let mut out = Vec::with_capacity(tasks.len());
    for t in tasks {
        let req = request(t, k);
        let response = engine.ask(&t.id, &req)?;
        if let Some(other) = response.get("task").and_then(Value::as_str) {
            if other != t.id {
                let what = format!(
                    "answered request {:?} with a response for task {other:?}; answer each request in order, with its own task id",
                    t.id
                );
                return Err(engine.fail(&t.id, what));
            }
        }
        out.push(Exchange {
            task: t.id.clone(),
            request: req,
            response,
        });
        pb.inc(1);
    }
    pb.finish_and_clear();
    engine.finish()?;
    Ok((out, version))
}
