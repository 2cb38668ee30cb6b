//! `tasks/<suite>/judgments.yaml`: the judgments given with `ranklab judge` — by people on the
//! judging page, or by an LLM (`ranklab judge --llm`) — merged into the suite's own on every
//! load (see [`crate::suite::Suite::load`]).
//!
//! ```yaml
//! suite: "docir"
//! judgments:
//!   - { task: "T01", document: "pay-api-keys-v1", grade: 2, judge: "Ada", at: "2026-12-01T13:02:11Z", surfaced_by: ["dense", "fusion"] }
//!   - { task: "T02", document: "ops-runbook", grade: 1, judge: "llm:smollm2-135m-instruct@3f2a9c01b7de", at: "2026-12-02T09:00:00Z", expected: 1.38, surfaced_by: ["bm25"] }
//! llm_grades:
//!   - { task: "T01", document: "pay-api-keys-v1", grade: 3, judge: "llm:smollm2-135m-instruct@3f2a9c01b7de", at: "2026-12-02T09:00:00Z", expected: 2.61 }
//! ```
//!
//! Grades are trec_eval's: 0 judged not relevant, 1..=3 relevant (graded). `judgments:` holds
//! one grade per (task, document), the one that counts: a person's, or an LLM's (its judge
//! `llm:<model>@<first 12 hex digits of the prompt hash>`, [`LLM_PREFIX`]) where no person
//! judged. `llm_grades:` holds the LLM grades of (task, document)s a person judged (here or in
//! `suite.yaml`): kept beside the human grade for agreement only, never merged into the tasks.
//! Files written before LLM judgments existed read unchanged.
//!
//! Provenance rules ([`Judgments::set`]): a human grade is never overwritten by an LLM's (the
//! LLM's goes to `llm_grades:`); a human grade replaces an LLM grade of the same pair (which
//! moves to `llm_grades:`, for agreement); a later grade from the same kind of judge replaces
//! the earlier. A hand-edited file that gives both a human and an LLM grade of one pair in
//! `judgments:` loads with the human's winning and the pair listed in [`Judgments::conflicts`].
//!
//! Refused at their line: a duplicate (two human or two LLM grades of one pair in `judgments:`,
//! or one LLM's two grades of a pair in `llm_grades:`), an unknown task, a grade outside 0..=3,
//! an empty judge, a human judge in `llm_grades:`, an `expected` outside 0..=3, or a human
//! grade of a document the suite file already judges. Unknown documents are refused when the
//! corpus is loaded ([`crate::suite::Suite::check_expected`]). The file is written whole and
//! atomically, one judgment per line, in the order they were given.
//!
//! Several judging sessions may write one suite's file (two judges, two browser tabs, two
//! `ranklab judge` processes): [`record`] and [`record_all`] write as one step among them,
//! under an advisory exclusive lock (`flock`) on the suite's folder, re-reading the file and
//! merging into what is on disk, so no session's grades are lost to another's stale copy.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::Deserialize;

/// The file name beside `suite.yaml`.
pub const FILE: &str = "judgments.yaml";

/// Highest grade (trec_eval's graded relevance, 0..=3 here).
pub const MAX_GRADE: i32 = 3;

/// How an LLM's judge name begins: `llm:<model>@<prompt hash, 12 hex digits>`.
pub const LLM_PREFIX: &str = "llm:";

/// The judge name of an LLM judgment: `llm:<model>@<hash12>`.
pub fn llm_judge(model: &str, prompt_hash12: &str) -> String {
    format!("{LLM_PREFIX}{model}@{prompt_hash12}")
}

/// One judgment.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgment {
    /// Task id.
    pub task: String,
    /// Document id.
    pub document: String,
    /// 0 (not relevant) ..= 3.
    pub grade: i32,
    /// Who judged: a person's name, or `llm:<model>@<hash12>`.
    pub judge: String,
    /// When (RFC 3339, UTC).
    pub at: String,
    /// An LLM's expected grade (Σ g·p(g) over 0..=3); `grade` is its most probable grade.
    pub expected: Option<f64>,
    /// The configurations whose top K surfaced the document (from the pool).
    pub surfaced_by: Vec<String>,
    /// A person's grade given on the judging page where an LLM's grade was available: whether
    /// the person had it shown (the page's hint, off by default). None: no LLM grade to show.
    pub saw_llm: Option<bool>,
    /// 1-based line in the file (0 for a judgment not read from a file).
    pub line: usize,
}

impl Judgment {
    /// Whether an LLM gave it (its judge begins with [`LLM_PREFIX`]).
    pub fn is_llm(&self) -> bool {
        self.judge.starts_with(LLM_PREFIX)
    }

    fn same_pair(&self, o: &Judgment) -> bool {
        self.task == o.task && self.document == o.document
    }
}

/// An LLM grade given in `judgments:` for a (task, document) a person also judged (in the
/// same list or in `suite.yaml`): the person's grade counts, the LLM's is kept for agreement.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    /// The LLM's judgment (its `line` in `judgments.yaml`).
    pub llm: Judgment,
    /// The human grade that wins.
    pub human_grade: i32,
    /// Where the human grade is: `judgments.yaml:LINE` or `suite.yaml`.
    pub human_at: String,
}

/// Which of `judgments.yaml`'s grades the tasks take (`--judgments human|all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Selection {
    /// People's grades only (the default: LLM grades change nothing unless asked for).
    #[default]
    Human,
    /// People's grades, and LLM grades where no person judged.
    All,
}

/// How many of a suite's judgments are people's and how many an LLM's
/// ([`crate::suite::Suite::judgment_counts`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JudgmentCounts {
    /// Grades given by people (`suite.yaml` and `judgments.yaml`) merged into the tasks.
    pub human: usize,
    /// LLM grades merged into the tasks (0 unless loaded with [`Selection::All`]).
    pub llm: usize,
    /// LLM grades of unjudged documents in `judgments.yaml` that the selection left out.
    pub llm_left_out: usize,
}

/// What [`Judgments::set`] did with a judgment.
#[derive(Debug, Clone, PartialEq)]
pub enum Placed {
    /// Appended to `judgments:`.
    Added,
    /// Replaced this grade in `judgments:` (same kind of judge, or a person over an LLM; an
    /// LLM grade replaced by a person's also moved to `llm_grades:`).
    Replaced(Judgment),
    /// An LLM grade of a pair a person judged: kept in `llm_grades:` only.
    Beside,
}

/// A judgments file: the suite it belongs to and its judgments, in file order.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgments {
    /// The file.
    pub path: PathBuf,
    /// Suite name.
    pub suite: String,
    /// The grades that count (`judgments:`), one per (task, document). In a suite's copy
    /// ([`crate::suite::Suite::judgments`]), only those merged into its tasks.
    pub judgments: Vec<Judgment>,
    /// LLM grades beside a human grade (`llm_grades:`), for agreement only.
    pub llm_grades: Vec<Judgment>,
    /// LLM grades of `judgments:` that a suite loaded with [`Selection::Human`] left out.
    pub unselected: Vec<Judgment>,
    /// LLM grades in `judgments:` overruled by a human grade (also in `llm_grades`).
    pub conflicts: Vec<Conflict>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    suite: String,
    #[serde(default)]
    judgments: Vec<RawJudgment>,
    #[serde(default)]
    llm_grades: Vec<RawJudgment>,
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
    expected: Option<f64>,
    #[serde(default)]
    surfaced_by: Vec<String>,
    #[serde(default)]
    saw_llm: Option<bool>,
}

/// The 1-based lines of the entries (`- ` lines) of the top-level list `key:` in `text`.
fn entry_lines(text: &str, key: &str) -> Vec<usize> {
    let head = format!("{key}:");
    text.lines()
        .enumerate()
        .skip_while(|(_, l)| !l.starts_with(&head))
        .skip(1)
        .take_while(|(_, l)| l.is_empty() || l.starts_with([' ', '-', '#']))
        .filter(|(_, l)| l.trim_start().starts_with("- "))
        .map(|(i, _)| i + 1)
        .collect()
}

/// Checks one raw entry (`at`: `file:line`) and makes it a [`Judgment`].
fn checked(j: RawJudgment, line: usize, at: &str) -> Result<Judgment> {
    let what = format!("{at}: task {:?}, document {:?}", j.task, j.document);
    if !(0..=i64::from(MAX_GRADE)).contains(&j.grade) {
        bail!(
            "{what}: grade {} is outside 0..={MAX_GRADE} (0 not relevant, 1 relevant, 2 highly, 3 perfectly)",
            j.grade
        );
    }
    if j.judge.trim().is_empty() {
        bail!("{what}: `judge` is empty; name who judged");
    }
    if let Some(e) = j.expected {
        if !(0.0..=f64::from(MAX_GRADE)).contains(&e) {
            bail!("{what}: `expected` {e} is outside 0..={MAX_GRADE}; it is an expected grade");
        }
    }
    Ok(Judgment {
        task: j.task,
        document: j.document,
        grade: j.grade as i32,
        judge: j.judge,
        at: j.at,
        expected: j.expected,
        surfaced_by: j.surfaced_by,
        saw_llm: j.saw_llm,
        line,
    })
}

impl Judgments {
    /// An empty file for `suite` at `path`.
    pub fn empty(path: &Path, suite: &str) -> Self {
        Judgments {
            path: path.to_path_buf(),
            suite: suite.to_string(),
            judgments: Vec::new(),
            llm_grades: Vec::new(),
            unselected: Vec::new(),
            conflicts: Vec::new(),
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
        let mut out = Judgments::empty(path, &raw.suite);
        let main_lines = entry_lines(&text, "judgments");
        for (i, j) in raw.judgments.into_iter().enumerate() {
            let line = main_lines.get(i).copied().unwrap_or(0);
            out.load_main(checked(j, line, &at(line))?)?;
        }
        let beside_lines = entry_lines(&text, "llm_grades");
        for (i, j) in raw.llm_grades.into_iter().enumerate() {
            let line = beside_lines.get(i).copied().unwrap_or(0);
            let j = checked(j, line, &at(line))?;
            if !j.is_llm() {
                bail!(
                    "{}: task {:?}, document {:?}: judge {:?} in `llm_grades:`, which holds LLM grades only (judge `llm:<model>@<hash>`); move a person's grade to `judgments:`",
                    at(line), j.task, j.document, j.judge
                );
            }
            if let Some(first) = out.beside_of(&j) {
                bail!(
                    "{}: task {:?}, document {:?} is graded twice by {:?} in `llm_grades:` (first at line {}); remove one of the two",
                    at(line), j.task, j.document, j.judge, first.line
                );
            }
            out.llm_grades.push(j);
        }
        Ok(out)
    }

    /// Takes one entry of `judgments:` as read: a duplicate of the same kind is an error; a
    /// human and an LLM grade of one pair is a conflict the human wins.
    fn load_main(&mut self, j: Judgment) -> Result<()> {
        let Some(i) = self.judgments.iter().position(|o| o.same_pair(&j)) else {
            self.judgments.push(j);
            return Ok(());
        };
        let first = self.judgments[i].clone();
        if first.is_llm() == j.is_llm() {
            bail!(
                "{}:{}: task {:?}, document {:?} is judged twice (first at line {}); remove one of the two",
                self.path.display(), j.line, j.task, j.document, first.line
            );
        }
        let (human, llm) = if j.is_llm() { (first, j) } else { (j, first) };
        self.judgments[i] = human.clone();
        self.conflicts.push(Conflict {
            llm: llm.clone(),
            human_grade: human.grade,
            human_at: format!("{}:{}", self.path.display(), human.line),
        });
        self.put_beside(llm);
        Ok(())
    }

    /// The `llm_grades:` entry of `j`'s pair by `j`'s judge.
    fn beside_of(&self, j: &Judgment) -> Option<&Judgment> {
        self.llm_grades
            .iter()
            .find(|o| o.same_pair(j) && o.judge == j.judge)
    }

    /// Puts the LLM grade `j` in `llm_grades:`, replacing its judge's earlier grade of the pair.
    fn put_beside(&mut self, j: Judgment) {
        match self
            .llm_grades
            .iter_mut()
            .find(|o| o.same_pair(&j) && o.judge == j.judge)
        {
            Some(o) => *o = Judgment { line: o.line, ..j },
            None => self.llm_grades.push(j),
        }
    }

    /// Sets the judgment of (task, document) under the provenance rules (see the module):
    /// `human_elsewhere` says a person judged the pair outside this file (`suite.yaml`).
    pub fn set(&mut self, j: Judgment, human_elsewhere: bool) -> Placed {
        let existing = self.judgments.iter().position(|o| o.same_pair(&j));
        if j.is_llm() && (human_elsewhere || existing.is_some_and(|i| !self.judgments[i].is_llm()))
        {
            self.put_beside(j);
            return Placed::Beside;
        }
        let Some(i) = existing else {
            self.judgments.push(j);
            return Placed::Added;
        };
        let line = self.judgments[i].line;
        let old = std::mem::replace(&mut self.judgments[i], Judgment { line, ..j });
        if old.is_llm() && !self.judgments[i].is_llm() {
            self.put_beside(old.clone());
        }
        Placed::Replaced(old)
    }

    /// Keeps in `judgments` only what `selection` merges; LLM grades left out go to
    /// `unselected`.
    pub fn select(mut self, selection: Selection) -> Self {
        if selection == Selection::Human {
            let (llm, human): (Vec<_>, Vec<_>) =
                self.judgments.into_iter().partition(Judgment::is_llm);
            self.judgments = human;
            self.unselected = llm;
        }
        self
    }

    /// The file's text: one judgment per line, in order (`judgments:` then `llm_grades:`).
    pub fn to_yaml(&self) -> String {
        let mut out = String::from(
            "# Judgments given with `ranklab judge` (grade 0 not relevant, 1 relevant, 2 highly, 3 perfectly);\n# every run merges them into the suite's judgments (qrels.txt included); a judge `llm:` is an LLM.\n",
        );
        let _ = writeln!(out, "suite: {}", quoted(&self.suite));
        let main: Vec<&Judgment> = self.judgments.iter().chain(&self.unselected).collect();
        if main.is_empty() {
            out.push_str("judgments: []\n");
        } else {
            out.push_str("judgments:\n");
            for j in main {
                write_entry(&mut out, j);
            }
        }
        if !self.llm_grades.is_empty() {
            out.push_str(
                "# LLM grades of documents a person judged: for agreement only, never merged.\nllm_grades:\n",
            );
            for j in &self.llm_grades {
                write_entry(&mut out, j);
            }
        }
        out
    }

    /// The grade of (task, document) that counts, if judged.
    pub fn grade_of(&self, task: &str, document: &str) -> Option<i32> {
        self.find(task, document).map(|j| j.grade)
    }

    /// The judgment of (task, document) in `judgments:`, if any.
    pub fn find(&self, task: &str, document: &str) -> Option<&Judgment> {
        self.judgments
            .iter()
            .chain(&self.unselected)
            .find(|j| j.task == task && j.document == document)
    }

    /// A person's grade of (task, document) in this file, if any.
    pub fn human_grade_of(&self, task: &str, document: &str) -> Option<i32> {
        self.find(task, document)
            .filter(|j| !j.is_llm())
            .map(|j| j.grade)
    }

    /// Every LLM grade in the file: those that count or would (`judgments:`) and those beside
    /// a human grade (`llm_grades:`).
    pub fn all_llm(&self) -> impl Iterator<Item = &Judgment> {
        self.judgments
            .iter()
            .chain(&self.unselected)
            .filter(|j| j.is_llm())
            .chain(&self.llm_grades)
    }

    /// An LLM's grade of (task, document), if any: the one in `judgments:`, else the first in
    /// `llm_grades:`.
    pub fn llm_grade_of(&self, task: &str, document: &str) -> Option<&Judgment> {
        self.find(task, document)
            .filter(|j| j.is_llm())
            .or_else(|| {
                self.llm_grades
                    .iter()
                    .find(|j| j.task == task && j.document == document)
            })
    }

    /// Judgments per judge, judge order: ("Ada", 2), ... (of `judgments`: what was merged).
    pub fn by_judge(&self) -> Vec<(String, usize)> {
        let mut m = std::collections::BTreeMap::<&str, usize>::new();
        for j in &self.judgments {
            *m.entry(j.judge.as_str()).or_default() += 1;
        }
        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

fn write_entry(out: &mut String, j: &Judgment) {
    let by: Vec<String> = j.surfaced_by.iter().map(|c| quoted(c)).collect();
    let expected = j
        .expected
        .map_or(String::new(), |e| format!(", expected: {e}"));
    let saw = j
        .saw_llm
        .map_or(String::new(), |s| format!(", saw_llm: {s}"));
    let _ = writeln!(
        out,
        "  - {{ task: {}, document: {}, grade: {}, judge: {}, at: {}{expected}, surfaced_by: [{}]{saw} }}",
        quoted(&j.task),
        quoted(&j.document),
        j.grade,
        quoted(&j.judge),
        quoted(&j.at),
        by.join(", ")
    );
}

/// Writes the judgment `j` to the judgments file `path` of suite `suite`, merged with what is
/// on disk now (see [`record_all`]). Returns the file as written, other sessions' judgments
/// included, and the judgment `j` replaced in `judgments:`, if any.
pub fn record(path: &Path, suite: &str, j: Judgment) -> Result<(Judgments, Option<Judgment>)> {
    let (written, placed) = record_all(path, suite, vec![j], &|_, _| false)?;
    let replaced = match placed.into_iter().next() {
        Some(Placed::Replaced(old)) => Some(old),
        _ => None,
    };
    Ok((written, replaced))
}

/// Writes the judgments `js` to the judgments file `path` of suite `suite` as one step: under
/// an advisory exclusive lock on the file's folder ([`ranklab_engine::atomic::lock_dir`];
/// every writer of the file takes it), the file is read again (absent: empty), each judgment
/// is set by the provenance rules ([`Judgments::set`]; `human_elsewhere(task, document)`: a
/// person judged the pair in `suite.yaml`), and the whole file is written atomically before
/// the lock is released. Returns the file as written and what became of each judgment. A file
/// that does not load is an error naming it, and nothing is written.
pub fn record_all(
    path: &Path,
    suite: &str,
    js: Vec<Judgment>,
    human_elsewhere: &dyn Fn(&str, &str) -> bool,
) -> Result<(Judgments, Vec<Placed>)> {
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
    let placed = js
        .into_iter()
        .map(|j| {
            let elsewhere = human_elsewhere(&j.task, &j.document);
            on_disk.set(j, elsewhere)
        })
        .collect();
    ranklab_engine::atomic::write(path, on_disk.to_yaml().as_bytes())?;
    // Read back, for the lines of what was written.
    Ok((Judgments::load(path, suite)?, placed))
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
            expected: None,
            surfaced_by: vec!["bm25".into(), "dense".into()],
            saw_llm: None,
            line: 0,
        }
    }

    #[test]
    fn the_written_file_reads_back_with_its_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        let mut j = Judgments::empty(&p, "s");
        j.set(judgment("T1", "a", 2), false);
        j.set(judgment("T2", "b", 0), false);
        j.set(judgment("T1", "a", 3), false); // replaces, keeps its place
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

    fn by_llm(task: &str, doc: &str, grade: i32) -> Judgment {
        Judgment {
            judge: llm_judge("smollm2-135m-instruct", "0123456789ab"),
            expected: Some(f64::from(grade) * 0.5 + 0.25),
            ..judgment(task, doc, grade)
        }
    }

    /// A person's grade on disk; an LLM grades the same pair, then a pair the suite file
    /// judges: neither LLM grade counts, both are kept beside for agreement, and the person's
    /// grade is the one on disk after a reload.
    #[test]
    fn an_llm_write_never_overwrites_a_human_grade() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        record(&p, "s", judgment("T1", "a", 2)).unwrap();
        let in_suite = |t: &str, d: &str| (t, d) == ("T1", "z");
        let (written, placed) = record_all(
            &p,
            "s",
            vec![by_llm("T1", "a", 0), by_llm("T1", "z", 1)],
            &in_suite,
        )
        .unwrap();
        assert_eq!(placed, [Placed::Beside, Placed::Beside]);
        let back = Judgments::load(&p, "s").unwrap();
        assert_eq!(back, written);
        assert_eq!(back.judgments.len(), 1);
        assert_eq!(back.grade_of("T1", "a"), Some(2));
        assert_eq!(back.judgments[0].judge, "Ada \"A\" L");
        assert_eq!(back.grade_of("T1", "z"), None);
        let beside: Vec<(&str, i32, Option<f64>)> = back
            .llm_grades
            .iter()
            .map(|j| (j.document.as_str(), j.grade, j.expected))
            .collect();
        assert_eq!(beside, [("a", 0, Some(0.25)), ("z", 1, Some(0.75))]);
        // The same LLM grading again replaces its own grade beside, adds none.
        record_all(&p, "s", vec![by_llm("T1", "a", 3)], &in_suite).unwrap();
        let back = Judgments::load(&p, "s").unwrap();
        assert_eq!(back.grade_of("T1", "a"), Some(2));
        assert_eq!(back.llm_grades.len(), 2);
        assert_eq!(back.llm_grades[0].grade, 3);
    }

    /// An LLM grade counts where nobody judged; a person's later grade replaces it, and the
    /// LLM's moves beside it (for agreement) instead of vanishing.
    #[test]
    fn a_later_human_grade_replaces_an_llm_one() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        let (_, placed) = record_all(&p, "s", vec![by_llm("T2", "b", 1)], &|_, _| false).unwrap();
        assert_eq!(placed, [Placed::Added]);
        assert!(Judgments::load(&p, "s").unwrap().judgments[0].is_llm());
        let (written, replaced) = record(&p, "s", judgment("T2", "b", 3)).unwrap();
        assert_eq!(replaced.map(|r| (r.grade, r.is_llm())), Some((1, true)));
        assert_eq!(written.grade_of("T2", "b"), Some(3));
        assert_eq!(written.human_grade_of("T2", "b"), Some(3));
        assert_eq!(written.llm_grades.len(), 1);
        assert_eq!(written.llm_grades[0].grade, 1);
        // And an LLM grading the pair again cannot take it back.
        record_all(&p, "s", vec![by_llm("T2", "b", 0)], &|_, _| false).unwrap();
        assert_eq!(
            Judgments::load(&p, "s").unwrap().grade_of("T2", "b"),
            Some(3)
        );
    }

    /// A hand-edited file with an LLM and a person's grade of one pair in `judgments:` loads
    /// with the person's grade counting and the conflict listed with both lines.
    #[test]
    fn a_conflict_in_the_file_is_won_by_the_human_and_listed() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        let text = "suite: s\njudgments:\n  - { task: T1, document: a, grade: 0, judge: \"llm:m@0123456789ab\", expected: 0.4 }\n  - { task: T1, document: a, grade: 2, judge: Ada }\n";
        std::fs::write(&p, text).unwrap();
        let j = Judgments::load(&p, "s").unwrap();
        assert_eq!(j.grade_of("T1", "a"), Some(2));
        assert_eq!(j.judgments.len(), 1);
        assert_eq!(j.conflicts.len(), 1);
        let c = &j.conflicts[0];
        assert_eq!((c.llm.line, c.llm.grade, c.human_grade), (3, 0, 2));
        assert_eq!(c.human_at, format!("{}:4", p.display()));
        assert_eq!(j.llm_grades.len(), 1);
    }

    #[test]
    fn selecting_human_grades_leaves_llm_ones_out() {
        let mut j = Judgments::empty(Path::new("j.yaml"), "s");
        j.set(judgment("T1", "a", 2), false);
        j.set(by_llm("T1", "b", 1), false);
        let all = j.clone().select(Selection::All);
        assert_eq!(all.judgments.len(), 2);
        let human = j.select(Selection::Human);
        assert_eq!(human.judgments.len(), 1);
        assert_eq!(human.unselected.len(), 1);
        assert_eq!(human.by_judge(), [("Ada \"A\" L".to_string(), 1)]);
        // Written out, nothing is lost.
        assert_eq!(human.to_yaml().matches("llm:").count(), 2);
    }

    #[test]
    fn a_person_in_llm_grades_and_an_expected_grade_off_the_scale_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(FILE);
        let t = "suite: s\njudgments: []\nllm_grades:\n  - { task: T1, document: a, grade: 1, judge: Ada }\n";
        std::fs::write(&p, t).unwrap();
        let e = Judgments::load(&p, "s").unwrap_err().to_string();
        assert!(e.contains(":4:") && e.contains("LLM grades only"), "{e}");
        let t = "suite: s\njudgments:\n  - { task: T1, document: a, grade: 1, judge: \"llm:m@x\", expected: 3.5 }\n";
        std::fs::write(&p, t).unwrap();
        let e = Judgments::load(&p, "s").unwrap_err().to_string();
        assert!(e.contains(":3:") && e.contains("`expected` 3.5"), "{e}");
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
