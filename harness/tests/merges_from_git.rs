//! `ranklab merges from-git` on a real git repository built in a temporary directory (the
//! `bad_input` fixture: corpus/ with records alpha, beta, gamma, epsilon; tasks/p with two
//! hand-kept merges). Commits are made with fixed committer dates; the oracle is the list of entries
//! written by hand from the commits made here (their hashes read back with `git rev-parse`).
//! Properties checked:
//! - a commit with one `Query:` trailer touching one record gives one entry (id = the first 12
//!   hex digits of the commit, merged = the committer date, expected = the record);
//! - a commit with two trailers touching two records, one of them superseded (gamma, in the
//!   fixture's front matter), gives two entries `-1`, `-2` expecting the active one only;
//!   commits without a trailer, commits outside the corpus folder and deleted records give
//!   nothing;
//! - a commit that adds a record and marks the old one superseded expects only the new record
//!   (issue 41); `Query: text -> record-id` expects the named record whatever the commit
//!   touches, and an unknown id there is refused naming the commit;
//! - entries are appended after the hand-kept merges, which stay byte for byte; a second run
//!   appends nothing and leaves the file unchanged; `--since` keeps later commits only;
//! - bad input exits 2, prints nothing on stdout and leaves merges.yaml unchanged: an empty
//!   `Query:` trailer, a trailer on a commit touching a file that is not a record, a corpus that
//!   is not in a git repository.

use std::path::Path;
use std::process::{Command, Output};

mod common;

fn git(dir: &Path, args: &[&str], date: &str) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.org")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.org")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", date)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn head(dir: &Path) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim()[..12].to_string()
}

fn append(dir: &Path, file: &str, line: &str) {
    let p = dir.join(file);
    let mut text = std::fs::read_to_string(&p).unwrap();
    text.push_str(line);
    text.push('\n');
    std::fs::write(p, text).unwrap();
}

fn commit(dir: &Path, message: &str, date: &str) -> String {
    git(dir, &["add", "-A"], date);
    git(dir, &["commit", "-q", "-m", message], date);
    head(dir)
}

fn from_git(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["merges", "from-git", "tasks/p"];
    args.extend_from_slice(extra);
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run ranklab")
}

fn merges(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("tasks/p/merges.yaml")).unwrap()
}

/// The fixture under git: an initial commit without trailers, then the commits of the test.
fn repo() -> (tempfile::TempDir, Vec<String>) {
    let dir = common::fixture_copy("bad_input");
    let d = dir.path();
    git(
        d,
        &["init", "-q", "-b", "main"],
        "2026-01-01T12:00:00+00:00",
    );
    commit(d, "Initial import", "2026-01-01T12:00:00+00:00");
    append(
        d,
        "corpus/beta.md",
        "Refunds go through the acquirer's refund API.",
    );
    let c1 = commit(
        d,
        "Refund how-to\n\nExplain the refund API.\n\nQuery: refund a capture\n",
        "2026-06-02T09:30:00+00:00",
    );
    append(d, "corpus/gamma.md", "Retries back off exponentially.");
    append(d, "corpus/alpha.md", "Keys are scoped per merchant.");
    let c2 = commit(
        d,
        "Retry and keys\n\nQuery: retry the acquirer\nQuery: idempotency key scope\n",
        "2026-07-01T23:10:00+00:00",
    );
    // A trailer on a commit outside the corpus folder: not a merge of the corpus.
    append(d, "tasks/p/suite.yaml", "# note");
    commit(
        d,
        "Suite note\n\nQuery: not a corpus change\n",
        "2026-07-05T10:00:00+00:00",
    );
    // A corpus change without a trailer: nothing.
    append(d, "corpus/gamma.md", "More on retries.");
    commit(d, "Retry detail", "2026-07-06T10:00:00+00:00");
    (dir, vec![c1, c2])
}

#[test]
fn commits_with_query_trailers_become_merge_entries_appended_once() {
    let (dir, c) = repo();
    let d = dir.path();
    let before = merges(d);
    let o = from_git(d, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(
        out.starts_with("merges from-git: 2 commits with Query: trailers, 3 entries, 3 new appended to tasks/p/merges.yaml"),
        "{out}"
    );
    let expected = format!(
        "  - id: \"{a}\"\n    merged: 2026-06-02\n    query: \"refund a capture\"\n    expected: \"beta\"\n\
         \x20 - id: \"{b}-1\"\n    merged: 2026-07-01\n    query: \"retry the acquirer\"\n    expected: \"alpha\"\n\
         \x20 - id: \"{b}-2\"\n    merged: 2026-07-01\n    query: \"idempotency key scope\"\n    expected: \"alpha\"\n",
        a = c[0],
        b = c[1]
    );
    let after = merges(d);
    assert_eq!(after, format!("{before}{expected}"));

    // Again: nothing new, the file is unchanged.
    let o = from_git(d, &[]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .contains("3 entries, 0 new appended"));
    assert_eq!(merges(d), after);

    // The file reads back as merges: tune accepts it (its window holds the new entries).
    let t = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(d)
        .args([
            "tune",
            "--suite",
            "tasks/p",
            "--as-of",
            "2026-11-30",
            "--window-days",
            "365",
            "--max-units",
            "2",
        ])
        .output()
        .unwrap();
    let tout = String::from_utf8_lossy(&t.stdout);
    assert_eq!(
        t.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&t.stderr)
    );
    assert!(tout.contains("5 of 5 merged in the window"), "{tout}");
}

#[test]
fn since_keeps_the_later_commits_only() {
    let (dir, c) = repo();
    let d = dir.path();
    let o = from_git(d, &["--since", "2026-06-15"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let after = merges(d);
    assert!(!after.contains(&c[0]), "{after}");
    assert!(after.contains(&format!("{}-2", c[1])), "{after}");
}

fn assert_refused(dir: &Path, needles: &[&str]) {
    let before = merges(dir);
    let o = from_git(dir, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(o.stdout.is_empty());
    for n in needles {
        assert!(err.contains(n), "{n:?} not in {err}");
    }
    assert_eq!(merges(dir), before, "nothing written");
}

#[test]
fn an_empty_query_trailer_is_refused() {
    let (dir, _) = repo();
    let d = dir.path();
    append(d, "corpus/beta.md", "One more line.");
    let c = commit(
        d,
        "Beta\n\nQuery: refund a capture\nQuery:\n",
        "2026-08-01T10:00:00+00:00",
    );
    assert_refused(d, &[&format!("commit {c}"), "`Query:` trailer is empty"]);
}

#[test]
fn a_trailer_on_a_commit_touching_a_non_record_is_refused() {
    let (dir, _) = repo();
    let d = dir.path();
    std::fs::write(d.join("corpus/notes.txt"), "scratch\n").unwrap();
    let c = commit(
        d,
        "Notes\n\nQuery: where are the notes\n",
        "2026-08-01T10:00:00+00:00",
    );
    assert_refused(
        d,
        &[
            &format!("commit {c}"),
            "corpus/notes.txt",
            "is not a record",
        ],
    );
}

#[test]
fn a_corpus_outside_a_git_repository_is_refused() {
    let dir = common::fixture_copy("bad_input");
    // Make sure no enclosing repository is found (the temporary directory's parents).
    let o = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(dir.path())
        .args(["merges", "from-git", "tasks/p"])
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("not inside a git repository"), "{err}");
    assert!(o.stdout.is_empty());
}

#[test]
fn a_supersede_commit_expects_only_the_new_record() {
    let (dir, _) = repo();
    let d = dir.path();
    // The pull request of issue 41: a new record, and alpha marked superseded by it.
    std::fs::write(
        d.join("corpus/zeta.md"),
        "---\nid: zeta\ntitle: Idempotency keys now\nlifecycle: active\nupdated_at: 2026-08-01\ntopic: payments\n---\n# Idempotency keys now\nKeys are scoped per account.\n",
    )
    .unwrap();
    let p = d.join("corpus/alpha.md");
    let text = std::fs::read_to_string(&p).unwrap().replace(
        "lifecycle: active",
        "lifecycle: superseded\nsuperseded_by: zeta",
    );
    std::fs::write(&p, text).unwrap();
    let c = commit(
        d,
        "Supersede alpha\n\nQuery: idempotency keys today\n",
        "2026-08-01T10:00:00+00:00",
    );
    let o = from_git(d, &["--since", "2026-08-01"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let after = merges(d);
    let expected = format!(
        "  - id: \"{c}\"\n    merged: 2026-08-01\n    query: \"idempotency keys today\"\n    expected: \"zeta\"\n"
    );
    assert!(after.ends_with(&expected), "{after}");
    assert!(!after.contains("expected: \"alpha\"\n"), "{after}");
}

#[test]
fn a_trailer_naming_its_record_expects_that_record() {
    let (dir, _) = repo();
    let d = dir.path();
    append(d, "corpus/alpha.md", "See beta for refunds.");
    append(d, "corpus/beta.md", "Partial refunds too.");
    let c = commit(
        d,
        "Cross links\n\nQuery: partial refund -> beta\nQuery: key scope\n",
        "2026-08-02T10:00:00+00:00",
    );
    let o = from_git(d, &["--since", "2026-08-02"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Oracle by hand: the named query expects beta only; the plain one every active record
    // touched (alpha, beta), in file-name order.
    let expected = format!(
        "  - id: \"{c}-1\"\n    merged: 2026-08-02\n    query: \"partial refund\"\n    expected: \"beta\"\n\
         \x20 - id: \"{c}-2\"\n    merged: 2026-08-02\n    query: \"key scope\"\n    expected: \"alpha\"\n\
         \x20 - id: \"{c}-3\"\n    merged: 2026-08-02\n    query: \"key scope\"\n    expected: \"beta\"\n"
    );
    let after = merges(d);
    assert!(after.ends_with(&expected), "{after}");
}

#[test]
fn a_trailer_naming_an_unknown_record_is_refused() {
    let (dir, _) = repo();
    let d = dir.path();
    append(d, "corpus/beta.md", "One more line.");
    let c = commit(
        d,
        "Beta\n\nQuery: refund a capture -> betta\n",
        "2026-08-01T10:00:00+00:00",
    );
    assert_refused(d, &[&format!("commit {c}"), "names betta", "not a record"]);
}
