//! `tasks/<suite>/judgments.yaml`: the judgments given with `ranklab judge`, merged into the
//! suite's own on every load (see [`crate::suite::Suite::load`]).
//!
//! ```yaml
//! suite: "docir"
//! judgments:
//!   - { task: "T01", document: "pay-api-keys-v1", grade: 2, judge: "Ada", at: "2026-12-01T13:02:11Z", surfaced_by: ["dense", "fusion"] }
//! ```
//!
//! Grades are trec_eval's: 0 judged not relevant, 1..=3 relevant (graded). One judgment per
//! (task, document): a duplicate, an unknown task, a grade outside 0..=3, an empty judge, or a
//! document the suite file already judges is refused at its line. Unknown documents are refused
//! when the corpus is loaded ([`crate::suite::Suite::check_expected`]). The file is written
//! whole and atomically, one judgment per line, in the order they were given.
//!
//! Several judging sessions may write one suite's file (two judges, two browser tabs, two
//! `ranklab judge` processes): [`record`] writes one grade as one step among them, under an
//! advisory exclusive lock (`flock`) on the suite's folder, re-reading the file and merging the
//! grade into what is on disk, so no session's grades are lost to another's stale copy. A
//! (task, document) has one grade: a later grade of it, by any judge, replaces the earlier.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::Deserialize;

/// The file name beside `suite.yaml`.
pub const FILE: &str = "judgments.yaml";

/// Highest grade (trec_eval's graded relevance, 0..=3 here).
pub const MAX_GRADE: i32 = 3;

/// One judgment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgment {
    /// Task id.
    pub task: String,
    /// Document id.
    pub document: String,
    /// 0 (not relevant) ..= 3.
    pub grade: i32,
    /// Who judged.
    pub judge: String,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// The configurations whose top K surfaced the document (from the pool).
    pub surfaced_by: Vec<String>,
    /// 1-based line in the file (0 for a judgment not read from a file).
    pub line: usize,
}

/// A judgments file: the suite it belongs to and its judgments, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judgments {
    /// The file.
    pub path: PathBuf,
    /// Suite name.
    pub suite: String,
    /// The judgments.
    pub judgments: Vec<Judgment>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    suite: String,
    #[serde(default)]
    judgments: Vec<RawJudgment>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJudgment {
    task: String,
    document: String,
    grade: i64,
    judge: String,
    #[serde(default)]
    at: String,
    #[serde(default)]
    surfaced_by: Vec<String>,
}

impl Judgments {
    /// An empty file for `suite` at `path`.
    pub fn empty(path: &Path, suite: &str) -> Self {
        Judgments {
            path: path.to_path_buf(),
            suite: suite.to_string(),
            judgments: Vec::new(),
        }
    }

    /// Loads `path`, checking what can be checked without the suite: grades, judges, duplicates,
    /// and that `suite` is `suite_name`.
    pub fn load(path: &Path, suite_name: &str) -> Result<Self> {
        let (raw, text): (Raw, String) = crate::root::read_yaml(path)?;
        let lines = ranklab_engine::yaml::Lines::new(&text);
        let at = |line: usize| format!("{}:{line}", path.display());
        if raw.suite != suite_name {
            let line = lines.of("suite", &raw.suite);
            bail!(
                "{}: the judgments are for suite {:?}, but the suite beside them is {suite_name:?}; move the file to that suite's folder or fix `suite:`",
                at(line),
                raw.suite
            );
        }
        // The line of the i-th entry: the i-th `- ` line after `judgments:`.
        let entry_lines: Vec<usize> = text
            .lines()
            .enumerate()
            .skip_while(|(_, l)| !l.starts_with("judgments:"))
            .filter(|(_, l)| l.trim_start().starts_with("- "))
            .map(|(i, _)| i + 1)
            .collect();
        let mut out: Vec<Judgment> = Vec::with_capacity(raw.judgments.len());
        for (i, j) in raw.judgments.into_iter().enumerate() {
            let line = entry_lines.get(i).copied().unwrap_or(0);
            if !(0..=i64::from(MAX_GRADE)).contains(&j.grade) {
                bail!(
                    "{}: task {:?}, document {:?}: grade {} is outside 0..={MAX_GRADE} (0 not relevant, 1 relevant, 2 highly, 3 perfectly)",
                    at(line),
                    j.task,
                    j.document,
                    j.grade
                );
            }
            if j.judge.trim().is_empty() {
                bail!(
                    "{}: task {:?}, document {:?}: `judge` is empty; name who judged",
                    at(line),
                    j.task,
                    j.document
                );
            }
            if let Some(first) = out
                .iter()
                .find(|o| o.task == j.task && o.document == j.document)
            {
                bail!(
                    "{}: task {:?}, document {:?} is judged twice (first at line {}); remove one of the two",
                    at(line),
                    j.task,
                    j.document,
                    first.line
                );
            }
            out.push(Judgment {
                task: j.task,
                document: j.document,
                grade: j.grade as i32,
                judge: j.judge,
                at: j.at,
                surfaced_by: j.surfaced_by,
                line,
            });
        }
        Ok(Judgments {
            path: path.to_path_buf(),
            suite: raw.suite,
            judgments: out,
        })
    }

    /// Sets the judgment of (task, document): replaces an earlier one in place, else appends.
    pub fn set(&mut self, j: Judgment) {
        match self
            .judgments
            .iter_mut()
            .find(|o| o.task == j.task && o.document == j.document)
        {
            Some(o) => *o = Judgment { line: o.line, ..j },
            None => self.judgments.push(j),
        }
    }

    /// The file's text: one judgment per line, in order.
    pub fn to_yaml(&self) -> String {
        let q = |s: &str| serde_json::to_string(s).expect("a string serialises");
        let mut out = String::from(
            "# Judgments given with `ranklab judge` (grade 0 not relevant, 1 relevant, 2 highly, 3 perfectly);\n# every run merges them into the suite's judgments (qrels.txt included).\n",
        );
        let _ = writeln!(out, "suite: {}", q(&self.suite));
        if self.judgments.is_empty() {
            out.push_str("judgments: []\n");
            return out;
        }
        out.push_str("judgments:\n");
        for j in &self.judgments {
            let by: Vec<String> = j.surfaced_by.iter().map(|c| q(c)).collect();
            let _ = writeln!(
                out,
                "  - {{ task: {}, document: {}, grade: {}, judge: {}, at: {}, surfaced_by: [{}] }}",
                q(&j.task),
                q(&j.document),
                j.grade,
                q(&j.judge),
                q(&j.at),
                by.join(", ")
            );
        }
        out
    }

    /// The grade of (task, document), if judged.
    pub fn grade_of(&self, task: &str, document: &str) -> Option<i32> {
        self.judgments
            .iter()
            .find(|j| j.task == task && j.document == document)
            .map(|j| j.grade)
    }

    /// Judgments per judge, judge order: ("Ada", 2), ...
    pub fn by_judge(&self) -> Vec<(String, usize)> {
        let mut m = std::collections::BTreeMap::<&str, usize>::new();
        for j in &self.judgments {
            *m.entry(j.judge.as_str()).or_default() += 1;
        }
        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// Writes the judgment `j` to the judgments file `path` of suite `suite`, merged with what is
/// on disk now: under an advisory exclusive lock on the file's folder
/// ([`ranklab_engine::atomic::lock_dir`]; every writer of the file takes it), the file is read
/// again (absent: empty), `j` replaces the judgment of its (task, document) there or is
/// appended, and the whole file is written atomically before the lock is released. Returns the
/// file as written, other sessions' judgments included, and the judgment `j` replaced, if any.
/// A file that does not load is an error naming it, and nothing is written.
pub fn record(path: &Path, suite: &str, j: Judgment) -> Result<(Judgments, Option<Judgment>)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    // Held until the end of this function: read, merge and rename as one step.
    let _lock = ranklab_engine::atomic::lock_dir(dir)?;
    let mut on_disk = if path.exists() {
        Judgments::load(path, suite)?
    } else {
        Judgments::empty(path, suite)
    };
    let replaced = on_disk
        .judgments
        .iter()
        .find(|o| o.task == j.task && o.document == j.document)
        .cloned();
    on_disk.set(j);
    ranklab_engine::atomic::write(path, on_disk.to_yaml().as_bytes())?;
    // Read back, for the lines of what was written.
    Ok((Judgments::load(path, suite)?, replaced))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judgment(task: &str, doc: &str, grade: i32) -> Judgment {
        Judgment {
            task: task.into(),
            document: doc.into(),
            grade,
            judge: "Ada \"A\" L".into(),
            at: "2026-12-01T13:00:00Z".into(),
            surfaced_by: vec!["bm25".into(), "dense".into()],
            line: 0,
        }
    }

    #[test]
    fn the_written_file_reads_back_with_its_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        let mut j = Judgments::empty(&p, "s");
        j.set(judgment("T1", "a", 2));
        j.set(judgment("T2", "b", 0));
        j.set(judgment("T1", "a", 3)); // replaces, keeps its place
        std::fs::write(&p, j.to_yaml()).unwrap();
        let back = Judgments::load(&p, "s").unwrap();
        assert_eq!(back.judgments.len(), 2);
        assert_eq!(back.judgments[0].grade, 3);
        assert_eq!(back.judgments[0].judge, "Ada \"A\" L");
        // Two comment lines, `suite:`, `judgments:`, then one line each.
        assert_eq!(back.judgments[0].line, 5);
        assert_eq!(back.judgments[1].line, 6);
        assert_eq!(back.by_judge(), vec![("Ada \"A\" L".to_string(), 2)]);
    }

    /// Two sessions that loaded the file before either wrote (each holds a stale, empty copy)
    /// each record a different grade: both are on disk. Writing from the stale copy, as the
    /// judging page did before, keeps only the second.
    #[test]
    fn two_sessions_with_stale_copies_keep_both_grades() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        let (_, replaced) = record(&p, "s", judgment("T1", "a", 2)).unwrap();
        assert_eq!(replaced, None);
        let (written, replaced) = record(&p, "s", judgment("T2", "b", 1)).unwrap();
        assert_eq!(replaced, None);
        let back = Judgments::load(&p, "s").unwrap();
        assert_eq!(back.judgments, written.judgments);
        let got: Vec<(&str, &str, i32)> = back
            .judgments
            .iter()
            .map(|j| (j.task.as_str(), j.document.as_str(), j.grade))
            .collect();
        assert_eq!(got, [("T1", "a", 2), ("T2", "b", 1)]);
        // A later grade of the same (task, document), by another judge, replaces the earlier
        // and says which it replaced; the other judgment stays.
        let mut by_bo = judgment("T1", "a", 0);
        by_bo.judge = "Bo".into();
        let (written, replaced) = record(&p, "s", by_bo).unwrap();
        assert_eq!(replaced.map(|r| r.grade), Some(2));
        assert_eq!(written.grade_of("T1", "a"), Some(0));
        assert_eq!(written.grade_of("T2", "b"), Some(1));
        assert_eq!(Judgments::load(&p, "s").unwrap().judgments.len(), 2);
    }

    /// Many writers at once (threads; the lock is per open file description, so the same as
    /// processes), each recording its own documents: every grade is on disk at the end.
    #[test]
    fn concurrent_writers_lose_no_grade() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        std::thread::scope(|s| {
            for w in 0..4 {
                let p = &p;
                s.spawn(move || {
                    for i in 0..10 {
                        record(p, "s", judgment("T1", &format!("w{w}-{i}"), 1)).unwrap();
                    }
                });
            }
        });
        assert_eq!(Judgments::load(&p, "s").unwrap().judgments.len(), 40);
    }

    /// A broken file on disk is an error naming it, and is left as it was.
    #[test]
    fn a_broken_file_on_disk_is_named_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        let broken = "suite: s\njudgments:\n  - { task: T1, document: a, grade: 9, judge: A }\n";
        std::fs::write(&p, broken).unwrap();
        let e = format!("{:#}", record(&p, "s", judgment("T2", "b", 1)).unwrap_err());
        assert!(e.contains(&format!("{}:3:", p.display())), "{e}");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), broken);
    }

    #[test]
    fn refuses_a_grade_outside_the_scale_a_duplicate_and_another_suite() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        let line = |g: &str, d: &str| {
            format!("  - {{ task: T1, document: {d}, grade: {g}, judge: A, at: x }}\n")
        };
        std::fs::write(&p, format!("suite: s\njudgments:\n{}", line("4", "a"))).unwrap();
        let e = Judgments::load(&p, "s").unwrap_err().to_string();
        assert!(e.contains(":3:") && e.contains("outside 0..=3"), "{e}");
        std::fs::write(
            &p,
            format!("suite: s\njudgments:\n{}{}", line("1", "a"), line("0", "a")),
        )
        .unwrap();
        let e = Judgments::load(&p, "s").unwrap_err().to_string();
        assert!(e.contains(":4:") && e.contains("first at line 3"), "{e}");
        let e = Judgments::load(&p, "t").unwrap_err().to_string();
        assert!(e.contains(":1:") && e.contains("suite \"s\""), "{e}");
    }
}

#[cfg(test)]
mod formats_reference {
    /// docs/formats.md names every field of the judgments file (read from the serde types).
    #[test]
    fn formats_md_names_every_field() {
        let reference = include_str!("../../docs/formats.md");
        ranklab_engine::yaml::shape::documented::<super::Raw>(reference, "Judgments", &[]).unwrap();
    }
}
