//! `ranklab judge`: a local page to judge the pooled documents of a suite (`pool.yaml`).
//!
//! The server listens on 127.0.0.1 only (a free port unless `--port`), serves one
//! self-contained page (no CDN, no external request: [`PAGE`]) and two JSON endpoints:
//! `GET /items` (the documents to judge, in pool order) and `POST /judge` with
//! `{"item": N, "grade": G}`. Every judgment is written at once to
//! `tasks/<suite>/judgments.yaml` with the grade, the judge, the time and the configurations
//! that surfaced the document, through [`crate::judgments::record`]: under a lock, merged with
//! what is on disk, atomically, so two judging sessions on one suite keep each other's grades.
//!
//! Only the page itself can write. A request whose `Host` is not this loopback address is
//! refused (a page on another site cannot reach it through DNS rebinding). A `POST` is refused
//! (403, nothing written) when an `Origin` or `Referer` header names anything but the page's own
//! origin (`http://127.0.0.1:PORT` or `http://localhost:PORT`), or when it lacks the session's
//! token: a random 256-bit value generated at start, embedded in the served page and sent back
//! by it in `X-Ranklab-Token`. Another origin cannot read the page (no CORS headers are ever
//! sent), so it cannot learn the token, and cannot send the header without a CORS preflight
//! that is never granted. A `POST` with neither `Origin` nor `Referer` is let through to the
//! token check: browsers send `Origin` on every cross-origin `POST`, so the missing headers come
//! from a non-browser client (curl, a privacy extension), which the token alone decides. A body
//! that is not `Content-Type: application/json` is refused with 415 (a cross-site form or a
//! "simple" `fetch` can only send `text/plain`, form or multipart bodies). Pages are sent with
//! `frame-ancestors 'none'` and `X-Frame-Options: DENY`, so another site cannot frame the page
//! and trick a click on a grade button.
//!
//! Each connection is served on its own thread. Its request head must arrive within
//! [`HEAD_DEADLINE`] and the whole request within [`REQUEST_DEADLINE`]; while it arrives the
//! connection holds no client slot (at most [`MAX_PENDING`] connections wait so), so idle or
//! slowloris connections cannot keep a real request out: only a complete request takes one of the
//! [`MAX_CLIENTS`] slots (more are told 503). A head over [`MAX_HEAD`] is answered 431, a body
//! over [`MAX_BODY`] 413; a connection that sends too slowly is closed and logged as such, one
//! that sends nothing is closed quietly. Grades are applied one at a time (a mutex over the session), and
//! written under the file lock.
//!
//! Each item shows the task's query, the document's title with its lifecycle (current state),
//! history and dates (`updated_at`, the lifecycle log), the section that matches the query best
//! (most distinct query words, the first such section on a tie), and its other sections.
//! Where an LLM graded the document (`ranklab judge --llm`), the page can show that grade as a
//! hint, behind a toggle that is off by default; a grade given records whether the hint was on
//! screen (`saw_llm`), so agreement can be measured on grades given blind.

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use ranklab_engine::corpus::Document;
use serde::{Deserialize, Serialize};

use crate::judgments::{Judgment, Judgments, MAX_GRADE};
use crate::suite::Suite;

pub(crate) mod endpoint;
pub(crate) mod llm;

/// The page: HTML, CSS and JavaScript in one file, nothing fetched from elsewhere. The server
/// puts the session's token in place of [`TOKEN_SLOT`].
pub(crate) const PAGE: &str = include_str!("page.html");

/// Where the page carries the token (a `<meta>` element's content).
const TOKEN_SLOT: &str = "{{RANKLAB_TOKEN}}";

/// The header every `POST` must carry the token in.
const TOKEN_HEADER: &str = "x-ranklab-token";

/// Connections served at once; more are answered 503 at once.
pub(crate) const MAX_CLIENTS: usize = 32;

/// The longest a client may take to send its whole request.
pub(crate) const REQUEST_DEADLINE: Duration = Duration::from_secs(30);

/// The longest a client may take to send its request head (request line and headers), counted
/// from the connection: an idle or slowloris connection is closed after it.
pub(crate) const HEAD_DEADLINE: Duration = Duration::from_secs(10);

/// Connections still sending their request at once (they hold no client slot); more are told
/// 503.
pub(crate) const MAX_PENDING: usize = 256;

/// The largest request head: 64 KiB (more is answered 431).
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// The largest request body: 64 KiB (a grade is a few dozen bytes; more is answered 413).
pub(crate) const MAX_BODY: usize = 64 * 1024;

/// One document to judge for one task.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Item {
    /// Task id.
    pub(crate) task: String,
    /// The task's query.
    pub(crate) query: String,
    /// Document id.
    pub(crate) document: String,
    /// Its title.
    pub(crate) title: String,
    /// Its lifecycle now (`active`, `superseded`, `deprecated`).
    pub(crate) lifecycle: &'static str,
    /// Its history (`first-class`, `amendment`, `editorial-only`).
    pub(crate) history: &'static str,
    /// When its text last changed (`updated_at`), if known.
    pub(crate) updated_at: Option<String>,
    /// The record that replaced it, if any.
    pub(crate) superseded_by: Option<String>,
    /// Its dated lifecycle transitions, oldest first.
    pub(crate) lifecycle_log: Vec<LogEntry>,
    /// The section that matches the query best: heading and body.
    pub(crate) matched: Section,
    /// The other sections, in document order.
    pub(crate) others: Vec<Section>,
    /// Configurations whose top K surfaced it.
    pub(crate) surfaced_by: Vec<String>,
    /// Its best rank among them.
    pub(crate) best_rank: usize,
    /// The grade a person gave in `judgments.yaml`, if any.
    pub(crate) grade: Option<i32>,
    /// An LLM's grade of it, if any: the page shows it as a hint when asked.
    pub(crate) llm: Option<Hint>,
    /// The task's expected documents (grade >= 1, suite order by id), so the judge sees what
    /// the task is after.
    pub(crate) expected: Vec<Expected>,
}

/// One of the task's expected documents, as the page shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Expected {
    /// Document id.
    pub(crate) id: String,
    /// Its title (the id when the corpus lacks it).
    pub(crate) title: String,
    /// Its grade.
    pub(crate) grade: i32,
}

/// The expected documents of `task` (grade >= 1) with their titles from `corpus`.
fn expected_of(
    task: &crate::suite::Task,
    corpus: &ranklab_engine::corpus::Corpus,
) -> Vec<Expected> {
    task.expected
        .iter()
        .filter(|(_, &g)| g >= 1)
        .map(|(id, &grade)| Expected {
            id: id.clone(),
            title: corpus
                .get(id)
                .map_or_else(|| id.clone(), |d| d.title.clone()),
            grade,
        })
        .collect()
}

/// An LLM's grade, as the page's hint shows it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub(crate) struct Hint {
    /// 0..=3.
    pub(crate) grade: i32,
    /// The expected grade, if given.
    pub(crate) expected: Option<f64>,
    /// `llm:<model>@<hash12>`.
    pub(crate) judge: String,
}

/// The hint of (task, document) in `j`.
fn hint_of(j: &Judgments, task: &str, document: &str) -> Option<Hint> {
    j.llm_grade_of(task, document).map(|g| Hint {
        grade: g.grade,
        expected: g.expected,
        judge: g.judge.clone(),
    })
}

/// One dated lifecycle transition, as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LogEntry {
    /// YYYY-MM-DD.
    pub(crate) date: String,
    /// The state entered.
    pub(crate) lifecycle: &'static str,
    /// The record that caused it, if any.
    pub(crate) by: Option<String>,
}

/// A section as the page shows it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Section {
    /// Heading.
    pub(crate) heading: String,
    /// Body text.
    pub(crate) body: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolFile {
    suite: String,
    #[allow(dead_code)]
    depth: usize,
    #[allow(dead_code)]
    configurations: Vec<String>,
    #[serde(default)]
    tasks: Vec<PoolTask>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolTask {
    id: String,
    query: String,
    #[serde(default)]
    documents: Vec<PoolDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolDoc {
    id: String,
    best_rank: usize,
    configurations: Vec<String>,
}

/// A judging session: the items and the judgments file they are written to.
pub(crate) struct Session {
    /// The items, pool order.
    pub(crate) items: Vec<Item>,
    /// The judgments file, as written so far.
    pub(crate) judgments: Judgments,
    /// Who judges.
    pub(crate) judge: String,
}

impl Session {
    /// Loads the suite's pool and judgments. Items: the pooled documents the suite file does not
    /// judge (those judged in `judgments.yaml` come with their grade).
    pub(crate) fn load(suite_path: &Path, judge: String) -> Result<Session> {
        let suite = Suite::load(suite_path)?;
        let corpus = suite.load_corpus()?;
        let pool_path = suite.dir().join("pool.yaml");
        if !pool_path.is_file() {
            bail!(
                "{}: no judging sheet; run `ranklab pool {}` first (after `ranklab run`)",
                pool_path.display(),
                suite.dir().display()
            );
        }
        let (pool, _): (PoolFile, String) = crate::suite::read_yaml(&pool_path)?;
        if pool.suite != suite.name {
            bail!(
                "{}:1: the pool is for suite {:?}, not {:?}; run `ranklab pool {}` again",
                pool_path.display(),
                pool.suite,
                suite.name,
                suite.dir().display()
            );
        }
        let judgments_path = suite.judging_dir().join(crate::judgments::FILE);
        let judgments = suite
            .judgments
            .clone()
            .unwrap_or_else(|| Judgments::empty(&judgments_path, &suite.name));
        let given = |task: &str, doc: &str| judgments.human_grade_of(task, doc);
        let mut items = Vec::new();
        for pt in &pool.tasks {
            let Some(task) = suite.tasks.iter().find(|t| t.id == pt.id) else {
                bail!(
                    "{}: task {:?} is not in {}; run `ranklab pool {}` again",
                    pool_path.display(),
                    pt.id,
                    suite.path.display(),
                    suite.dir().display()
                );
            };
            for d in &pt.documents {
                let grade = given(&pt.id, &d.id);
                if grade.is_none() && task.expected.contains_key(&d.id) {
                    continue; // judged in the suite file since the pool was made
                }
                let Some(doc) = corpus.get(&d.id) else {
                    bail!(
                        "{}: task {:?}: document {:?} is not in the corpus {}; run `ranklab pool {}` again",
                        pool_path.display(),
                        pt.id,
                        d.id,
                        suite.corpus_path.display(),
                        suite.dir().display()
                    );
                };
                let (matched, others) = sections(doc, &pt.query);
                items.push(Item {
                    task: pt.id.clone(),
                    query: pt.query.clone(),
                    document: d.id.clone(),
                    title: doc.title.clone(),
                    lifecycle: doc.lifecycle.as_str(),
                    history: doc.history.as_str(),
                    updated_at: doc.updated_at.map(|d| d.to_string()),
                    superseded_by: doc.superseded_by.clone(),
                    lifecycle_log: doc
                        .lifecycle_log
                        .iter()
                        .map(|e| LogEntry {
                            date: e.date.to_string(),
                            lifecycle: e.lifecycle.as_str(),
                            by: e.by.clone(),
                        })
                        .collect(),
                    matched,
                    others,
                    surfaced_by: d.configurations.clone(),
                    best_rank: d.best_rank,
                    grade,
                    llm: hint_of(&judgments, &pt.id, &d.id),
                    expected: expected_of(task, &corpus),
                });
            }
        }
        Ok(Session {
            items,
            judgments,
            judge,
        })
    }

    /// Items without a grade.
    pub(crate) fn left(&self) -> usize {
        self.items.iter().filter(|i| i.grade.is_none()).count()
    }

    /// Grades item `n`: records it in the judgments file ([`crate::judgments::record`]: under
    /// the lock, merged with what other sessions wrote, atomically) and takes the file as
    /// written as this session's view, so grades given elsewhere show here too. `saw_llm`:
    /// the page showed the item's LLM grade (recorded when the item has one). Returns the
    /// judgment it replaced, if any.
    pub(crate) fn grade(
        &mut self,
        n: usize,
        grade: i32,
        saw_llm: bool,
    ) -> Result<Option<Judgment>> {
        if !(0..=MAX_GRADE).contains(&grade) {
            bail!("grade {grade} is outside 0..={MAX_GRADE}");
        }
        let Some(item) = self.items.get(n) else {
            bail!("no item {n}");
        };
        let (written, replaced) = crate::judgments::record(
            &self.judgments.path,
            &self.judgments.suite,
            Judgment {
                task: item.task.clone(),
                document: item.document.clone(),
                grade,
                judge: self.judge.clone(),
                at: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                expected: None,
                surfaced_by: item.surfaced_by.clone(),
                saw_llm: item.llm.as_ref().map(|_| saw_llm),
                line: 0,
            },
        )?;
        self.take(written);
        Ok(replaced)
    }

    /// Reads the judgments file again (another session may have written it), when it exists.
    fn refresh(&mut self) -> Result<()> {
        if self.judgments.path.exists() {
            let j = Judgments::load(&self.judgments.path, &self.judgments.suite)?;
            self.take(j);
        }
        Ok(())
    }

    /// Takes `j` as the judgments file: every item's grade from it.
    fn take(&mut self, j: Judgments) {
        for it in &mut self.items {
            it.grade = j.human_grade_of(&it.task, &it.document);
            it.llm = hint_of(&j, &it.task, &it.document);
        }
        self.judgments = j;
    }

    /// Every item's grade, item order.
    fn grades(&self) -> Vec<Option<i32>> {
        self.items.iter().map(|i| i.grade).collect()
    }
}

/// Lowercased alphanumeric words of at least two characters.
fn words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect()
}

/// The section with the most distinct query words (the first on a tie), and the others.
fn sections(doc: &Document, query: &str) -> (Section, Vec<Section>) {
    let q = words(query);
    let mut best = 0;
    let mut best_n = 0;
    for (i, s) in doc.sections.iter().enumerate() {
        let w = words(&format!("{} {}", s.heading, s.body));
        let n = q.intersection(&w).count();
        if n > best_n {
            best = i;
            best_n = n;
        }
    }
    let mut all: Vec<Section> = doc
        .sections
        .iter()
        .map(|s| Section {
            heading: s.heading.clone(),
            body: s.body.trim().to_string(),
        })
        .collect();
    if all.is_empty() {
        return (
            Section {
                heading: doc.title.clone(),
                body: String::new(),
            },
            Vec::new(),
        );
    }
    let matched = all.remove(best);
    (matched, all)
}

/// Binds 127.0.0.1:`port` (0: a free port).
pub(crate) fn bind(port: u16) -> Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", port)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            anyhow::anyhow!(
                "127.0.0.1:{port} is already in use; pass another --port, or --port 0 for a free one"
            )
        } else {
            anyhow::anyhow!("cannot listen on 127.0.0.1:{port}: {e}")
        }
    })
}

/// What every connection's thread shares.
struct Server {
    /// The session; grades are applied one at a time.
    session: Mutex<Session>,
    /// The origins the page is served from: `http://127.0.0.1:PORT`, `http://localhost:PORT`.
    origins: [String; 2],
    /// `Host` values this server answers: `127.0.0.1:PORT`, `localhost:PORT`.
    hosts: [String; 2],
    /// The session's token, hex.
    token: String,
    /// The page with the token in it.
    page: String,
}

/// A fresh random token: 32 bytes from the operating system's generator (through `rand`'s
/// thread generator, a CSPRNG seeded from it), as hex.
fn new_token() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Frees a connection slot when dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves `session` on `listener` until the process is stopped: one thread per connection.
/// A connection waits for its request under a deadline without holding a client slot (at most
/// [`MAX_PENDING`] such); only a complete request takes one of the [`MAX_CLIENTS`] slots.
pub(crate) fn serve(listener: TcpListener, session: Session) -> Result<()> {
    let port = listener.local_addr()?.port();
    let token = new_token();
    let server = Arc::new(Server {
        session: Mutex::new(session),
        origins: [
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
        ],
        hosts: [format!("127.0.0.1:{port}"), format!("localhost:{port}")],
        page: PAGE.replace(TOKEN_SLOT, &token),
        token,
    });
    let active = Arc::new(AtomicUsize::new(0));
    let pending = Arc::new(AtomicUsize::new(0));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let Some(waiting) = Slot::take(&pending, MAX_PENDING) else {
            busy(&stream);
            continue;
        };
        let server = Arc::clone(&server);
        let active = Arc::clone(&active);
        let spawned = std::thread::Builder::new()
            .name("judge-client".into())
            .spawn(move || {
                let peer = stream
                    .peer_addr()
                    .map_or_else(|_| "a client".to_string(), |a| a.to_string());
                let req = read_request(&stream);
                drop(waiting);
                let req = match req {
                    Ok(r) => r,
                    Err(refused) => return refused.answer(&stream, &peer),
                };
                let Some(_slot) = Slot::take(&active, MAX_CLIENTS) else {
                    busy(&stream);
                    return;
                };
                if let Err(e) = handle(&stream, &server, &req, &peer) {
                    eprintln!("judge: request from {peer}: {e:#}");
                }
            });
        if let Err(e) = spawned {
            eprintln!("judge: cannot start a thread for a connection: {e}");
        }
    }
    Ok(())
}

impl Slot {
    /// One of `max` slots counted by `count`, if one is free.
    fn take(count: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        if count.fetch_add(1, Ordering::SeqCst) >= max {
            count.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(Slot(Arc::clone(count)))
    }
}

/// Answers 503 at once (more connections than slots).
fn busy(stream: &TcpStream) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = respond(
        stream,
        "503 Service Unavailable",
        "text/plain",
        b"too many connections at once; try again",
    );
}

struct Request {
    method: String,
    path: String,
    /// Headers, names lowercased, in order (a repeated header appears more than once).
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    /// Every value of header `name` (lowercase).
    fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.headers
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Why a request was not read: each is answered (or not) and logged by [`Refused::answer`].
#[derive(Debug)]
enum Refused {
    /// Nothing arrived before the head deadline (an idle connection): closed quietly.
    Idle,
    /// The request did not arrive in time; `what` is the part that was late.
    Slow { what: &'static str, limit: Duration },
    /// The head is larger than [`MAX_HEAD`].
    HeadTooLarge,
    /// A `Content-Length` over [`MAX_BODY`].
    BodyTooLarge(u64),
    /// A malformed head or a read error.
    Bad(String),
}

impl Refused {
    /// Answers the client where HTTP has an answer (431, 413, 400), then logs one clear line.
    fn answer(self, stream: &TcpStream, peer: &str) {
        let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
        let (status, msg) = match self {
            Refused::Idle => return,
            Refused::Slow { what, limit } => {
                eprintln!(
                    "judge: request from {peer}: {what} did not arrive within {} s (a client sending too slowly, or a stalled one); the connection was closed",
                    limit.as_secs()
                );
                return;
            }
            Refused::HeadTooLarge => (
                "431 Request Header Fields Too Large",
                format!("the request head is over {MAX_HEAD} bytes"),
            ),
            Refused::BodyTooLarge(n) => (
                "413 Content Too Large",
                format!("a request body of {n} bytes is over the limit of {MAX_BODY} bytes"),
            ),
            Refused::Bad(m) => ("400 Bad Request", m),
        };
        eprintln!("judge: request from {peer} refused ({status}): {msg}");
        if respond(stream, status, "application/json", &error_json(&msg)).is_ok() {
            // The client may still be sending its body: stop writing, then read and drop what it
            // sends (briefly, boundedly) so that closing does not reset the answer away.
            let _ = stream.shutdown(std::net::Shutdown::Write);
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            let mut sink = [0u8; 16 * 1024];
            let mut s = stream;
            let mut drained = 0usize;
            while drained < 32 << 20 {
                match s.read(&mut sink) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => drained += n,
                }
            }
        }
    }
}

/// Reads from a stream with one deadline for everything read: each read may wait only for the
/// time left, so a client that trickles bytes cannot hold its connection past the deadline.
struct Deadline<'a> {
    stream: &'a TcpStream,
    until: Instant,
    /// Bytes read so far.
    got: usize,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let late = || std::io::Error::new(std::io::ErrorKind::TimedOut, "deadline");
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late());
        }
        self.stream.set_read_timeout(Some(left))?;
        let mut s = self.stream;
        match s.read(buf) {
            Ok(n) => {
                self.got += n;
                Ok(n)
            }
            // A read timeout is EAGAIN ("Resource temporarily unavailable") on Unix.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Err(late())
            }
            Err(e) => Err(e),
        }
    }
}

/// Reads a request: its head within [`HEAD_DEADLINE`] and at most [`MAX_HEAD`] bytes, then a
/// body of at most [`MAX_BODY`] bytes, the whole within [`REQUEST_DEADLINE`].
fn read_request(stream: &TcpStream) -> Result<Request, Refused> {
    let start = Instant::now();
    let mut r = BufReader::new(Deadline {
        stream,
        until: start + HEAD_DEADLINE,
        got: 0,
    });
    let io = |r: &BufReader<Deadline<'_>>, e: std::io::Error, what: &'static str, limit| {
        if e.kind() == std::io::ErrorKind::TimedOut {
            if r.get_ref().got == 0 {
                Refused::Idle
            } else {
                Refused::Slow { what, limit }
            }
        } else {
            Refused::Bad(format!("reading the request: {e}"))
        }
    };
    let mut head = Vec::new();
    let mut line = Vec::new();
    let mut lines = Vec::new();
    loop {
        let left = MAX_HEAD.saturating_sub(head.len());
        match ranklab_engine::input::read_line(&mut r, &mut line, left, 1) {
            Ok(0) if head.is_empty() => return Err(Refused::Idle),
            Ok(0) => {
                return Err(Refused::Bad(
                    "the connection closed within the request head".into(),
                ))
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
                return Err(Refused::HeadTooLarge)
            }
            Err(e) => return Err(io(&r, e, "the request head", HEAD_DEADLINE)),
        }
        head.extend_from_slice(&line);
        if line == b"\r\n" || line == b"\n" {
            break;
        }
        lines.push(String::from_utf8_lossy(&line).trim_end().to_string());
    }
    let mut parts = lines
        .first()
        .map(|l| l.split_whitespace())
        .into_iter()
        .flatten();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    let mut length = 0u64;
    for h in lines.iter().skip(1) {
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_string());
            if k == "content-length" {
                length = v
                    .parse()
                    .map_err(|_| Refused::Bad(format!("Content-Length {v:?} is not a number")))?;
            }
            headers.push((k, v));
        }
    }
    if length > MAX_BODY as u64 {
        return Err(Refused::BodyTooLarge(length));
    }
    r.get_mut().until = start + REQUEST_DEADLINE;
    let mut body = vec![0; length as usize];
    r.read_exact(&mut body)
        .map_err(|e| io(&r, e, "the request body", REQUEST_DEADLINE))?;
    Ok(Request {
        method,
        path,
        headers,
        body,
    })
}

fn respond(mut stream: &TcpStream, status: &str, kind: &str, body: &[u8]) -> Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nContent-Security-Policy: frame-ancestors 'none'\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;
    Ok(())
}

#[derive(Serialize)]
struct Items<'a> {
    judge: &'a str,
    file: String,
    items: &'a [Item],
    left: usize,
}

#[derive(Deserialize)]
struct Grade {
    item: usize,
    grade: i32,
    /// Whether the page showed the item's LLM grade (absent: no).
    #[serde(default)]
    saw_llm: bool,
}

/// Equal strings, compared in time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Why a `POST` is refused, if it is: (status, message). Checked in this order: a foreign
/// `Origin` or `Referer` (403), a missing or wrong token (403), a body that is not JSON (415).
fn refusal(req: &Request, server: &Server) -> Option<(&'static str, String)> {
    const FORBIDDEN: &str = "403 Forbidden";
    let own = &server.origins;
    for origin in req.all("origin") {
        if !own.iter().any(|o| o == origin) {
            return Some((
                FORBIDDEN,
                format!(
                    "Origin {origin:?} is not this page's ({}); ranklab judge takes grades only from its own page",
                    own[0]
                ),
            ));
        }
    }
    for referer in req.all("referer") {
        let ours = own.iter().any(|o| {
            referer == o
                || referer
                    .strip_prefix(o.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        });
        if !ours {
            return Some((
                FORBIDDEN,
                format!(
                    "Referer {referer:?} is not this page ({}); ranklab judge takes grades only from its own page",
                    own[0]
                ),
            ));
        }
    }
    let tokens: Vec<&str> = req.all(TOKEN_HEADER).collect();
    if tokens.len() != 1 || !same_secret(tokens[0], &server.token) {
        return Some((
            FORBIDDEN,
            "no valid X-Ranklab-Token: grades are taken only from the page this server serves; reload it (a restarted server has a new token)".to_string(),
        ));
    }
    let kinds: Vec<String> = req
        .all("content-type")
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .collect();
    if kinds != ["application/json"] {
        return Some((
            "415 Unsupported Media Type",
            format!(
                "Content-Type {:?} refused: send the grade as application/json",
                req.all("content-type").collect::<Vec<_>>().join(", ")
            ),
        ));
    }
    None
}

fn error_json(message: &str) -> Vec<u8> {
    serde_json::json!({ "error": message })
        .to_string()
        .into_bytes()
}

fn handle(stream: &TcpStream, server: &Server, req: &Request, peer: &str) -> Result<()> {
    stream.set_write_timeout(Some(REQUEST_DEADLINE))?;
    let hosts: Vec<&str> = req.all("host").collect();
    if hosts.len() != 1 || !server.hosts.iter().any(|h| h == hosts[0]) {
        return respond(
            stream,
            "403 Forbidden",
            "text/plain",
            b"ranklab judge answers on 127.0.0.1 only",
        );
    }
    let json = "application/json";
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/") => respond(
            stream,
            "200 OK",
            "text/html; charset=utf-8",
            server.page.as_bytes(),
        ),
        ("GET", "/items") => {
            let mut s = server.session.lock().unwrap_or_else(|p| p.into_inner());
            if let Err(e) = s.refresh() {
                let msg = format!("{e:#}");
                eprintln!("judge: {msg}");
                return respond(stream, "500 Internal Server Error", json, &error_json(&msg));
            }
            let body = serde_json::to_vec(&Items {
                judge: &s.judge,
                file: crate::report::shown(&s.judgments.path),
                items: &s.items,
                left: s.left(),
            })?;
            drop(s);
            respond(stream, "200 OK", json, &body)
        }
        ("POST", "/judge") => {
            if let Some((status, msg)) = refusal(req, server) {
                eprintln!("judge: refused a POST /judge from {peer} ({status}): {msg}");
                return respond(stream, status, json, &error_json(&msg));
            }
            let g: Grade = match serde_json::from_slice(&req.body) {
                Ok(g) => g,
                Err(e) => {
                    return respond(stream, "400 Bad Request", json, &error_json(&e.to_string()));
                }
            };
            let mut s = server.session.lock().unwrap_or_else(|p| p.into_inner());
            match s.grade(g.item, g.grade, g.saw_llm) {
                Ok(replaced) => {
                    let it = &s.items[g.item];
                    let was = match replaced {
                        Some(r) if r.judge != s.judge || r.grade != g.grade => {
                            format!(", replacing grade {} by {}", r.grade, r.judge)
                        }
                        _ => String::new(),
                    };
                    eprintln!(
                        "judge: {} {} graded {}{was} ({} left)",
                        it.task,
                        it.document,
                        g.grade,
                        s.left()
                    );
                    let body =
                        serde_json::json!({ "left": s.left(), "grades": s.grades() }).to_string();
                    drop(s);
                    respond(stream, "200 OK", json, body.as_bytes())
                }
                Err(e) => {
                    drop(s);
                    let msg = format!("{e:#}");
                    eprintln!("judge: not saved: {msg}");
                    respond(stream, "400 Bad Request", json, &error_json(&msg))
                }
            }
        }
        _ => respond(stream, "404 Not Found", "text/plain", b"not found"),
    }
}

/// The judge's name: `--judge`, else `git config user.name` run in `dir`.
pub(crate) fn judge_name(given: Option<String>, dir: &Path) -> Result<String> {
    if let Some(j) = given {
        if j.trim().is_empty() {
            bail!("--judge is empty; name who judges, e.g. --judge \"Ada Lovelace\"");
        }
        return Ok(j);
    }
    let out = std::process::Command::new("git")
        .args(["config", "user.name"])
        .current_dir(dir)
        .output();
    match out {
        Ok(o) if o.status.success() && !o.stdout.trim_ascii().is_empty() => {
            Ok(String::from_utf8_lossy(o.stdout.trim_ascii()).into_owned())
        }
        _ => bail!("no --judge given and no `git config user.name`; pass --judge NAME"),
    }
}

#[cfg(test)]
mod tests {
    /// The page carries the token slot exactly once, where the page's script reads it.
    #[test]
    fn the_page_has_one_token_slot_in_its_meta_element() {
        assert_eq!(super::PAGE.matches(super::TOKEN_SLOT).count(), 1);
        assert!(super::PAGE.contains(&format!(
            "<meta name=\"ranklab-token\" content=\"{}\">",
            super::TOKEN_SLOT
        )));
    }

    /// Two tokens differ and are 64 hex digits (32 random bytes).
    #[test]
    fn tokens_are_fresh_hex() {
        let (a, b) = (super::new_token(), super::new_token());
        assert_ne!(a, b);
        assert!(
            a.len() == 64 && a.bytes().all(|c| c.is_ascii_hexdigit()),
            "{a}"
        );
    }
}

#[cfg(test)]
mod formats_reference {
    /// docs/formats.md names every field of the pool file (read from the serde types).
    #[test]
    fn formats_md_names_every_field() {
        let reference = include_str!("../../../docs/formats.md");
        ranklab_engine::yaml::shape::documented::<super::PoolFile>(reference, "Pool", &[]).unwrap();
    }
}
