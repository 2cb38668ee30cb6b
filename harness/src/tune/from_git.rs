//! Merges read from the corpus's own git history (`ranklab merges from-git`).
//!
//! A team records in each pull request the query someone will run after it, as a
//! `Query:` trailer of the merge commit's message (`git interpret-trailers` format; one trailer
//! per query, several allowed):
//!
//! ```text
//! Make continuous delivery the release ADR
//!
//! Query: how often do we release
//! Query: is there still a release train
//! ```
//!
//! For every commit touching the corpus folder (oldest first, `--since` on the committer date)
//! that carries at least one `Query:` trailer, every record it adds or modifies (deletions are
//! skipped) and leaves active gives one merge per query: id = the commit's first 12 hex digits
//! (with `-N` when the commit gives several entries), merged = the commit's committer date,
//! expected = the record's id. A record the commit leaves superseded or deprecated (its front
//! matter as of that commit) is never expected: a pull request that adds a record and marks the
//! old one superseded teaches the new one. `Query: text -> record-id` names the expected record
//! instead (any record of the corpus; the touched records are then not used for that query). Entries whose id is already in `merges.yaml` are skipped, new ones are appended
//! in commit order (then trailer order, then file name), and the result is checked like any
//! merges file before it replaces the old one atomically.
//!
//! Errors (exit 2, nothing written): the corpus folder is not inside a git repository; a commit
//! with a `Query:` trailer touches a file of the corpus folder that is not one of its records;
//! a `Query:` trailer is empty.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use chrono::NaiveDate;
use ranklab_engine::corpus::{Corpus, Lifecycle};

use super::merges::{parse_date, Merges};

/// One merge read from a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Id: the commit's first 12 hex digits, `-N` when the commit gives several entries.
    pub id: String,
    /// Committer date.
    pub merged: NaiveDate,
    /// The trailer's query.
    pub query: String,
    /// The record touched.
    pub expected: String,
}

/// What `from-git` did.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// Commits with at least one `Query:` trailer.
    pub commits: usize,
    /// Entries read from them.
    pub entries: Vec<Entry>,
    /// Of them, the ones appended (not already in the file).
    pub appended: Vec<Entry>,
    /// The merges file.
    pub path: PathBuf,
}

fn git(dir: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .with_context(|| format!("cannot run git in {} (is git installed?)", dir.display()))?;
    if !out.status.success() {
        bail!(
            "git {} in {}: {}",
            args.join(" "),
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    String::from_utf8(out.stdout)
        .with_context(|| format!("git {}: output is not UTF-8", args.join(" ")))
}

/// Reads the entries of the history of `corpus`'s folder, oldest first.
pub(crate) fn read_history(
    corpus: &Corpus,
    since: Option<NaiveDate>,
) -> Result<(usize, Vec<Entry>)> {
    let dir = &corpus.root;
    require_work_tree(dir)?;
    // Records by canonical path.
    let mut records = HashMap::new();
    for d in &corpus.docs {
        let p = d.source.canonicalize().unwrap_or_else(|_| d.source.clone());
        records.insert(p, d.id.clone());
    }
    let since_arg = since.map(|d| format!("--since={d} 00:00:00"));
    let mut args = vec!["log", "--reverse", "--format=%H"];
    if let Some(s) = &since_arg {
        args.push(s);
    }
    args.extend(["--", "."]);
    let commits = git(dir, &args)?;
    let mut n_commits = 0;
    let mut out = Vec::new();
    for hash in commits.lines().filter(|l| !l.is_empty()) {
        let short = &hash[..hash.len().min(12)];
        let (date, subject, queries) = queries_of(dir, hash, short)?;
        if queries.is_empty() {
            continue;
        }
        n_commits += 1;
        let merged = parse_date(&date).with_context(|| {
            format!("commit {short}: git gave the committer date {date:?}, not YYYY-MM-DD")
        })?;
        let commit = || format!("{short} ({subject:?})");
        let touched = touched_records(dir, hash, &records, commit)?;
        // A record this commit leaves superseded or deprecated is never the answer it expects.
        let mut current = Vec::new();
        for (name, id) in &touched {
            if !retired_at(dir, hash, name)? {
                current.push(id.clone());
            }
        }
        let known: HashSet<&str> = records.values().map(String::as_str).collect();
        let mut pairs = Vec::new();
        for q in &queries {
            match &q.expected {
                Some(id) if !known.contains(id.as_str()) => bail!(
                    "commit {}: its trailer `Query: {} -> {id}` names {id}, which is not a record of the corpus {}; name the id of a record (its `id:` front-matter field), or drop `-> {id}` to expect every current record the commit touches",
                    commit(),
                    q.text,
                    dir.display()
                ),
                Some(id) => pairs.push((q.text.clone(), id.clone())),
                None => pairs.extend(current.iter().map(|id| (q.text.clone(), id.clone()))),
            }
        }
        let several = pairs.len() > 1;
        for (n, (query, expected)) in pairs.into_iter().enumerate() {
            out.push(Entry {
                id: if several {
                    format!("{short}-{}", n + 1)
                } else {
                    short.to_string()
                },
                merged,
                query,
                expected,
            });
        }
    }
    Ok((n_commits, out))
}

/// Refuses a corpus folder that is not inside a git work tree.
fn require_work_tree(dir: &Path) -> Result<()> {
    let inside = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--is-inside-work-tree"])
        .output()
        .with_context(|| format!("cannot run git in {} (is git installed?)", dir.display()))?;
    if !inside.status.success() || String::from_utf8_lossy(&inside.stdout).trim() != "true" {
        bail!(
            "{}: the corpus folder is not inside a git repository; `ranklab merges from-git` reads merges from the commits that touched it (run it in the repository that holds the corpus, or keep merges.yaml by hand)",
            dir.display()
        );
    }
    Ok(())
}

/// One `Query:` trailer: the query, and the record it names with `-> record-id` (else every
/// current record the commit touches is expected).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Trailer {
    text: String,
    expected: Option<String>,
}

/// Splits a trailer's value at its last ` -> `: `how do we do it now -> howto-x` names the record.
fn trailer(value: &str) -> Trailer {
    match value.rsplit_once("->") {
        Some((text, id))
            if !text.trim().is_empty()
                && !id.trim().is_empty()
                && !id.trim().contains(char::is_whitespace) =>
        {
            Trailer {
                text: text.trim().to_string(),
                expected: Some(id.trim().to_string()),
            }
        }
        _ => Trailer {
            text: value.to_string(),
            expected: None,
        },
    }
}

/// Whether the record file `name` (relative to `dir`) is superseded or deprecated as commit
/// `hash` leaves it (its front matter read from that commit, not from the work tree).
fn retired_at(dir: &Path, hash: &str, name: &str) -> Result<bool> {
    let blob = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["show", &format!("{hash}:./{name}")])
        .output()
        .with_context(|| format!("cannot run git in {} (is git installed?)", dir.display()))?;
    if !blob.status.success() {
        bail!(
            "git show {hash}:./{name} in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&blob.stderr).trim()
        );
    }
    let path = dir.join(name);
    let doc = ranklab_engine::corpus::markdown::parse_record(&path, &blob.stdout)
        .with_context(|| format!("{} as commit {hash} left it", path.display()))?;
    Ok(doc.lifecycle != Lifecycle::Active)
}

/// A commit's committer date (as git gives it), subject and `Query:` trailers, in order; an
/// empty trailer is an error.
fn queries_of(dir: &Path, hash: &str, short: &str) -> Result<(String, String, Vec<Trailer>)> {
    let meta = git(
        dir,
        &[
            "show",
            "-s",
            "--format=%cs%x00%s%x00%(trailers:key=Query,unfold=true)",
            hash,
        ],
    )?;
    let mut parts = meta.splitn(3, '\0');
    let (date, subject, trailers) = (
        parts.next().unwrap_or_default().trim(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let mut queries = Vec::new();
    for line in trailers.lines().filter(|l| !l.trim().is_empty()) {
        let value = line.split_once(':').map_or("", |(_, v)| v).trim();
        if value.is_empty() {
            bail!(
                "commit {short} ({subject:?}): its `Query:` trailer is empty; write the query someone runs after the change, e.g. `Query: how often do we release` (amend the commit message, or remove the empty trailer)"
            );
        }
        queries.push(trailer(value));
    }
    Ok((date.to_string(), subject.to_string(), queries))
}

/// The records a commit adds or modifies (deletions skipped), as (file name, record id) sorted;
/// a file of the folder that is not a record is an error naming the commit (`commit`).
fn touched_records(
    dir: &Path,
    hash: &str,
    records: &HashMap<PathBuf, String>,
    commit: impl Fn() -> String,
) -> Result<Vec<(String, String)>> {
    let changed = git(
        dir,
        &[
            "diff-tree",
            "--root",
            "--no-commit-id",
            "-r",
            "--relative",
            "--name-status",
            "--no-renames",
            hash,
        ],
    )?;
    let mut touched = Vec::new();
    for line in changed.lines() {
        let Some((status, name)) = line.split_once('\t') else {
            continue;
        };
        if status.starts_with('D') {
            continue;
        }
        let path = dir.join(name);
        let canon = path.canonicalize().unwrap_or_else(|_| path.clone());
        match records.get(&canon) {
            Some(id) => touched.push((name.to_string(), id.clone())),
            None => bail!(
                "commit {} has a `Query:` trailer but touches {}, which is not a record of the corpus {} (a record is a `*.md` file with front matter that the corpus loads); move the change to its own commit without a `Query:` trailer",
                commit(),
                path.display(),
                dir.display()
            ),
        }
    }
    touched.sort();
    Ok(touched)
}

/// A YAML double-quoted scalar.
fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Reads the history and appends the new entries to `merges_path` (created when missing).
pub(crate) fn from_git(
    corpus: &Corpus,
    merges_path: &Path,
    since: Option<NaiveDate>,
) -> Result<Outcome> {
    let (commits, entries) = read_history(corpus, since)?;
    let existing = if merges_path.exists() {
        Some(Merges::load(merges_path, corpus)?)
    } else {
        None
    };
    let known: HashSet<&str> = existing
        .iter()
        .flat_map(|m| m.merges.iter().map(|x| x.id.as_str()))
        .collect();
    let appended: Vec<Entry> = entries
        .iter()
        .filter(|e| !known.contains(e.id.as_str()))
        .cloned()
        .collect();
    if !appended.is_empty() {
        let mut text = if existing.is_some() {
            std::fs::read_to_string(merges_path).with_context(|| {
                format!(
                    "cannot read {}{}",
                    merges_path.display(),
                    crate::root::tried(merges_path)
                )
            })?
        } else {
            "# Merges read from the corpus's git history by `ranklab merges from-git` (Query: trailers).\nmerges:\n".to_string()
        };
        let indent = text
            .lines()
            .find_map(|l| {
                let t = l.trim_start();
                t.starts_with("- id:")
                    .then(|| l[..l.len() - t.len()].to_string())
            })
            .unwrap_or_else(|| "  ".to_string());
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        for e in &appended {
            text.push_str(&format!(
                "{indent}- id: {}\n{indent}  merged: {}\n{indent}  query: {}\n{indent}  expected: {}\n",
                quoted(&e.id),
                e.merged,
                quoted(&e.query),
                quoted(&e.expected)
            ));
        }
        // Check the result like any merges file before it replaces the old one.
        let tmp = tempfile::tempdir().context("cannot create a temporary directory")?;
        let probe = tmp.path().join("merges.yaml");
        std::fs::write(&probe, &text).context("cannot write a temporary file")?;
        let back = Merges::load(&probe, corpus).with_context(|| {
            format!(
                "internal error: the merges appended to {} do not read back; nothing was written",
                merges_path.display()
            )
        })?;
        if back.merges.len() != known.len() + appended.len() {
            bail!(
                "internal error: the merges appended to {} do not read back; nothing was written",
                merges_path.display()
            );
        }
        crate::report::atomic::write(merges_path, text.as_bytes())?;
    }
    Ok(Outcome {
        commits,
        entries,
        appended,
        path: merges_path.to_path_buf(),
    })
}
