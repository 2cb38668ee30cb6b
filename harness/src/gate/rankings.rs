//! The rankings a gated row rests on, apart from the values computed from them: per task, the
//! document ids in rank order. They are what lets the gate grade rankings and judgments apart
//! and say what moved:
//!
//! - `--update` keeps a copy of each gated suite configuration's rankings beside the baseline
//!   (`<baseline>.runs/<suite>/<configuration>.trec`, TREC run format, one file per
//!   configuration, scores `n - rank + 1` so that any TREC reader keeps the order);
//! - when the judgments changed since the baseline, the copy is scored under today's judgments
//!   ([`score`]): the row is graded against that value ("baseline under today's judgments"), so
//!   a judging session alone moves both sides equally and never fails the gate;
//! - for a failed or OKISH row, [`moved`] lists the tasks whose value changed between the
//!   copy and now, worst first: the first relevant document's rank before and after, the
//!   document now ranked above it that was not before, and the task's change.
//!
//! Nothing here knows where the two rankings come from: a replay of a suite, or (for a gate of
//! two run files) a TREC run read from disk.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use crate::report::MeasureSet;
use crate::suite::Suite;

/// One configuration's rankings: task id -> document ids, best first.
pub type Lists = BTreeMap<String, Vec<String>>;

/// How many moved tasks a row names before "and N more".
pub const MOVED_SHOWN: usize = 10;

/// The folder of the rankings kept with the baseline at `baseline`: `reports/baseline.json` ->
/// `reports/baseline.runs/`.
pub fn copy_dir(baseline: &Path) -> PathBuf {
    let stem = baseline
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "baseline".to_string());
    baseline.with_file_name(format!("{stem}.runs"))
}

/// The file of one configuration's kept rankings.
pub fn copy_file(baseline: &Path, suite: &str, configuration: &str) -> PathBuf {
    copy_dir(baseline)
        .join(suite)
        .join(format!("{configuration}.trec"))
}

/// The TREC run text of `lists` (tasks in id order, scores `n - rank + 1`).
pub fn to_trec(lists: &Lists, tag: &str) -> String {
    let mut s = String::new();
    for (task, ids) in lists {
        let n = ids.len();
        for (i, id) in ids.iter().enumerate() {
            crate::trec::write::push_run_line(&mut s, task, id, i + 1, (n - i) as f32, tag);
        }
    }
    s
}

/// Writes `lists` as the kept rankings of (suite, configuration) (atomically).
pub fn write_copy(baseline: &Path, suite: &str, configuration: &str, lists: &Lists) -> Result<()> {
    let path = copy_file(baseline, suite, configuration);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    crate::report::atomic::write(&path, to_trec(lists, configuration).as_bytes())
}

/// Reads a TREC run into per-task rankings (TREC order: score descending, then document id
/// descending, as trec_eval sorts). None when the file does not exist.
pub fn read_run(path: &Path) -> Result<Option<Lists>> {
    if !path.is_file() {
        return Ok(None);
    }
    let run = crate::trec::run::read_run(path)
        .with_context(|| format!("reading the kept rankings {}", path.display()))?;
    Ok(Some(
        run.iter()
            .map(|q| {
                (
                    q.qid.clone(),
                    q.ranked().into_iter().map(str::to_string).collect(),
                )
            })
            .collect(),
    ))
}

/// The value of metric `m` (an index into `measures.names(k)`) per task of `suite`, of the
/// rankings `lists` under the suite's judgments (a task with no ranking scores as an empty
/// list).
pub fn per_task(suite: &Suite, measures: &MeasureSet, m: usize, lists: &Lists) -> Vec<f64> {
    suite
        .tasks
        .iter()
        .map(|task| {
            let ids: Vec<&str> = lists
                .get(&task.id)
                .map(|l| l.iter().map(String::as_str).collect())
                .unwrap_or_default();
            let judged: std::collections::HashMap<String, i32> =
                task.expected.iter().map(|(k, v)| (k.clone(), *v)).collect();
            crate::metrics::evaluate_ranking(&measures.for_task(task), &ids, &judged, 1)
                .get(m)
                .copied()
                .unwrap_or(0.0)
        })
        .collect()
}

/// The mean of [`per_task`] over the suite's tasks: what a row's value is.
pub fn score(suite: &Suite, measures: &MeasureSet, m: usize, lists: &Lists) -> f64 {
    let v = per_task(suite, measures, m, lists);
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// One task whose value moved between two rankings of a configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Moved {
    /// Task id.
    pub task: String,
    /// Its query (empty for a gate of two run files: a TREC run does not carry it).
    pub query: String,
    /// 1-based rank of its first relevant document in the baseline's ranking (None: not ranked).
    pub before: Option<usize>,
    /// ... and now.
    pub after: Option<usize>,
    /// The highest document now ranked above the first relevant one that was not above it in
    /// the baseline's ranking (None when nothing overtook it).
    pub overtaken_by: Option<String>,
    /// The task's value now minus its value in the baseline's ranking (the row's metric).
    pub delta: f64,
}

/// 1-based rank of the first document of `ids` graded relevant (>= 1) for the task.
fn first_relevant(ids: &[String], expected: &BTreeMap<String, i32>) -> Option<usize> {
    first_relevant_by(ids, |d| expected.get(d).is_some_and(|&g| g >= 1))
}

/// 1-based rank of the first document of `ids` that `relevant` accepts.
pub fn first_relevant_by(ids: &[String], relevant: impl Fn(&str) -> bool) -> Option<usize> {
    ids.iter().position(|d| relevant(d)).map(|p| p + 1)
}

/// The highest document of `after` ranked above its first relevant one (rank `ra`; all of it
/// when none) that was not above the first relevant one of `before` (rank `rb`): what took the
/// relevant document's place. None when nothing new came above it.
pub fn overtaken_by(
    before: &[String],
    after: &[String],
    rb: Option<usize>,
    ra: Option<usize>,
) -> Option<String> {
    let above_before: BTreeSet<&str> = before
        .iter()
        .take(rb.map_or(before.len(), |r| r - 1))
        .map(String::as_str)
        .collect();
    after
        .iter()
        .take(ra.map_or(after.len(), |r| r - 1))
        .find(|d| !above_before.contains(d.as_str()))
        .cloned()
}

/// The tasks whose metric `m` differs between `before` and `after` (both under the suite's
/// judgments now), worst first (largest drop; ties by task id), every one of them.
pub fn moved(
    suite: &Suite,
    measures: &MeasureSet,
    m: usize,
    before: &Lists,
    after: &Lists,
) -> Vec<Moved> {
    let was = per_task(suite, measures, m, before);
    let now = per_task(suite, measures, m, after);
    let empty = Vec::new();
    let mut out: Vec<Moved> = suite
        .tasks
        .iter()
        .zip(was.iter().zip(&now))
        .filter(|(_, (w, n))| (*n - *w).abs() > 1e-12)
        .map(|(t, (w, n))| {
            let (b, a) = (
                before.get(&t.id).unwrap_or(&empty),
                after.get(&t.id).unwrap_or(&empty),
            );
            let (rb, ra) = (
                first_relevant(b, &t.expected),
                first_relevant(a, &t.expected),
            );
            Moved {
                task: t.id.clone(),
                query: t.query.clone(),
                before: rb,
                after: ra,
                overtaken_by: overtaken_by(b, a, rb, ra),
                delta: n - w,
            }
        })
        .collect();
    out.sort_by(|x, y| {
        x.delta
            .total_cmp(&y.delta)
            .then_with(|| x.task.cmp(&y.task))
    });
    out
}

/// A moved task as one Markdown list item.
pub fn moved_line(m: &Moved) -> String {
    let rank = |r: Option<usize>| r.map_or("not ranked".to_string(), |r| r.to_string());
    let by = m
        .overtaken_by
        .as_deref()
        .map_or(String::new(), |d| format!(", overtaken by `{d}`"));
    let query = if m.query.is_empty() {
        String::new()
    } else {
        format!(" \"{}\"", m.query)
    };
    format!(
        "{}{query}: first relevant {} → {}{by}; Δ {:+.4}",
        m.task,
        rank(m.before),
        rank(m.after),
        m.delta
    )
}

/// A row's moved tasks as a Markdown section: the heading, the first [`MOVED_SHOWN`] worst
/// first, and how many more.
pub fn push_moved_list(md: &mut String, heading: &str, moved: &[Moved]) {
    use std::fmt::Write as _;
    let _ = writeln!(md, "\n### What moved: {heading}\n");
    for m in moved.iter().take(MOVED_SHOWN) {
        let _ = writeln!(md, "- {}", moved_line(m));
    }
    if moved.len() > MOVED_SHOWN {
        let _ = writeln!(md, "- and {} more", moved.len() - MOVED_SHOWN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Task;

    fn task(id: &str, expected: &[&str]) -> Task {
        Task {
            id: id.into(),
            query: format!("query of {id}"),
            expected: expected.iter().map(|d| (d.to_string(), 1)).collect(),
            k: 5,
            note: None,
            line: 1,
        }
    }

    fn lists(rows: &[(&str, &[&str])]) -> Lists {
        rows.iter()
            .map(|(t, ids)| (t.to_string(), ids.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    fn suite(tasks: Vec<Task>) -> Suite {
        Suite {
            name: "s".into(),
            description: String::new(),
            path: "s.yaml".into(),
            corpus_path: "c".into(),
            k: 5,
            tasks,
            judgments: None,
            judging: None,
        }
    }

    /// Hand-computed: MRR (the metric after recall@5 in a suite's measures) of T1 falls from
    /// 1 (a at rank 1) to 1/3 (x, y above a), T2 stays 1/2; worst first, the overtaking
    /// document is x (new above a), T2 not listed.
    #[test]
    fn a_task_pushed_down_is_named_with_the_document_that_overtook_it() {
        let s = suite(vec![task("T1", &["a"]), task("T2", &["b"])]);
        let m = MeasureSet::Suite
            .names(5)
            .iter()
            .position(|n| n == "MRR")
            .unwrap();
        let before = lists(&[("T1", &["a", "x", "y"]), ("T2", &["z", "b"])]);
        let after = lists(&[("T1", &["x", "y", "a"]), ("T2", &["z", "b"])]);
        let mv = moved(&s, &MeasureSet::Suite, m, &before, &after);
        assert_eq!(mv.len(), 1, "{mv:?}");
        assert_eq!(mv[0].task, "T1");
        assert_eq!((mv[0].before, mv[0].after), (Some(1), Some(3)));
        assert_eq!(mv[0].overtaken_by.as_deref(), Some("x"));
        assert!((mv[0].delta - (1.0 / 3.0 - 1.0)).abs() < 1e-12);
        assert!((score(&s, &MeasureSet::Suite, m, &before) - 0.75).abs() < 1e-12);
    }

    /// Hand-made lists: the baseline had the relevant `r` at rank 2 under `a`; the new list puts
    /// `x` (new) and `a` above it: `x` took its place. Gone from the new list: what came above
    /// where it was. Nothing new above it: nothing.
    #[test]
    fn overtaken_by_is_the_new_document_above_the_first_relevant() {
        let v = |ids: &[&str]| -> Vec<String> { ids.iter().map(|s| s.to_string()).collect() };
        let rel = |d: &str| d == "r";
        let (old, new) = (v(&["a", "r", "b"]), v(&["x", "a", "r"]));
        let (rb, ra) = (first_relevant_by(&old, rel), first_relevant_by(&new, rel));
        assert_eq!((rb, ra), (Some(2), Some(3)));
        assert_eq!(overtaken_by(&old, &new, rb, ra).as_deref(), Some("x"));
        let (old, new) = (v(&["a", "r"]), v(&["a", "y", "z"]));
        let rb = first_relevant_by(&old, rel);
        assert_eq!(overtaken_by(&old, &new, rb, None).as_deref(), Some("y"));
        let same = v(&["a", "r"]);
        assert_eq!(overtaken_by(&same, &same, Some(2), Some(2)), None);
    }

    /// A ranking written and read back is the same ranking (TREC order from the scores).
    #[test]
    fn kept_rankings_read_back_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("baseline.json");
        let l = lists(&[("T1", &["b", "a", "c"]), ("T2", &["z"])]);
        write_copy(&base, "s", "fusion", &l).unwrap();
        assert!(dir.path().join("baseline.runs/s/fusion.trec").is_file());
        let back = read_run(&copy_file(&base, "s", "fusion")).unwrap().unwrap();
        assert_eq!(back, l);
    }
}
