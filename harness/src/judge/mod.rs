//! `ranklab judge`: a local page to judge the pooled documents of a suite (`pool.yaml`).
//!
//! The server listens on 127.0.0.1 only (a free port unless `--port`), serves one
//! self-contained page (no CDN, no external request: [`PAGE`]) and two JSON endpoints:
//! `GET /items` (the documents to judge, in pool order) and `POST /judge` with
//! `{"item": N, "grade": G}`. Every judgment is written at once, atomically, to
//! `tasks/<suite>/judgments.yaml` ([`crate::judgments`]) with the grade, the judge, the time and
//! the configurations that surfaced the document. Requests are handled one at a time, so the
//! file is never written by two at once. A request whose `Host` is not this loopback address is
//! refused (a page on another site cannot reach it through DNS rebinding).
//!
//! Each item shows the task's query, the document's title, the section that matches the query
//! best (most distinct query words, the first such section on a tie), and its other sections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Document;
use serde::{Deserialize, Serialize};

use crate::judgments::{Judgment, Judgments, MAX_GRADE};
use crate::suite::Suite;

/// The page: HTML, CSS and JavaScript in one file, nothing fetched from elsewhere.
pub(crate) const PAGE: &str = include_str!("page.html");

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
    /// The section that matches the query best: heading and body.
    pub(crate) matched: Section,
    /// The other sections, in document order.
    pub(crate) others: Vec<Section>,
    /// Configurations whose top K surfaced it.
    pub(crate) surfaced_by: Vec<String>,
    /// Its best rank among them.
    pub(crate) best_rank: usize,
    /// The grade given in `judgments.yaml`, if any.
    pub(crate) grade: Option<i32>,
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
        let judgments_path = suite.dir().join(crate::judgments::FILE);
        let judgments = suite
            .judgments
            .clone()
            .unwrap_or_else(|| Judgments::empty(&judgments_path, &suite.name));
        let given = |task: &str, doc: &str| {
            judgments
                .judgments
                .iter()
                .find(|j| j.task == task && j.document == doc)
                .map(|j| j.grade)
        };
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
                    matched,
                    others,
                    surfaced_by: d.configurations.clone(),
                    best_rank: d.best_rank,
                    grade,
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

    /// Grades item `n` and writes the judgments file (atomically).
    pub(crate) fn grade(&mut self, n: usize, grade: i32) -> Result<()> {
        if !(0..=MAX_GRADE).contains(&grade) {
            bail!("grade {grade} is outside 0..={MAX_GRADE}");
        }
        let Some(item) = self.items.get_mut(n) else {
            bail!("no item {n}");
        };
        item.grade = Some(grade);
        self.judgments.set(Judgment {
            task: item.task.clone(),
            document: item.document.clone(),
            grade,
            judge: self.judge.clone(),
            at: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
            surfaced_by: item.surfaced_by.clone(),
            line: 0,
        });
        crate::report::atomic::write(&self.judgments.path, self.judgments.to_yaml().as_bytes())
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

/// Serves `session` on `listener` until the process is stopped.
pub(crate) fn serve(listener: TcpListener, mut session: Session) -> Result<()> {
    let port = listener.local_addr()?.port();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        if let Err(e) = handle(stream, &mut session, port) {
            eprintln!("judge: {e:#}");
        }
    }
    Ok(())
}

struct Request {
    method: String,
    path: String,
    host: String,
    body: Vec<u8>,
}

fn read_request(stream: &TcpStream) -> Result<Request> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut r = BufReader::new(stream.take(1 << 20));
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut host = String::new();
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let v = v.trim();
            if k.eq_ignore_ascii_case("host") {
                host = v.to_string();
            } else if k.eq_ignore_ascii_case("content-length") {
                length = v.parse().context("Content-Length")?;
            }
        }
    }
    if length > 1 << 16 {
        bail!("request body of {length} bytes refused");
    }
    let mut body = vec![0; length];
    r.read_exact(&mut body)?;
    Ok(Request {
        method,
        path,
        host,
        body,
    })
}

fn respond(mut stream: &TcpStream, status: &str, kind: &str, body: &[u8]) -> Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
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
}

fn handle(stream: TcpStream, s: &mut Session, port: u16) -> Result<()> {
    let req = read_request(&stream)?;
    let allowed = [format!("127.0.0.1:{port}"), format!("localhost:{port}")];
    if !allowed.contains(&req.host) {
        return respond(
            &stream,
            "403 Forbidden",
            "text/plain",
            b"ranklab judge answers on 127.0.0.1 only",
        );
    }
    let json = "application/json";
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/") => respond(
            &stream,
            "200 OK",
            "text/html; charset=utf-8",
            PAGE.as_bytes(),
        ),
        ("GET", "/items") => {
            let body = serde_json::to_vec(&Items {
                judge: &s.judge,
                file: crate::report::shown(&s.judgments.path),
                items: &s.items,
                left: s.left(),
            })?;
            respond(&stream, "200 OK", json, &body)
        }
        ("POST", "/judge") => {
            let g: Grade = match serde_json::from_slice(&req.body) {
                Ok(g) => g,
                Err(e) => {
                    let msg = format!("{{\"error\": {}}}", serde_json::to_string(&e.to_string())?);
                    return respond(&stream, "400 Bad Request", json, msg.as_bytes());
                }
            };
            match s.grade(g.item, g.grade) {
                Ok(()) => {
                    let it = &s.items[g.item];
                    eprintln!(
                        "judge: {} {} graded {} ({} left)",
                        it.task,
                        it.document,
                        g.grade,
                        s.left()
                    );
                    let body = format!("{{\"left\": {}}}", s.left());
                    respond(&stream, "200 OK", json, body.as_bytes())
                }
                Err(e) => {
                    let msg = format!(
                        "{{\"error\": {}}}",
                        serde_json::to_string(&format!("{e:#}"))?
                    );
                    respond(&stream, "400 Bad Request", json, msg.as_bytes())
                }
            }
        }
        _ => respond(&stream, "404 Not Found", "text/plain", b"not found"),
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
mod formats_reference {
    /// docs/formats.md names every field of the pool file (read from the serde types).
    #[test]
    fn formats_md_names_every_field() {
        let reference = include_str!("../../../docs/formats.md");
        ranklab_engine::yaml::shape::documented::<super::PoolFile>(reference, "Pool", &[]).unwrap();
    }
}
