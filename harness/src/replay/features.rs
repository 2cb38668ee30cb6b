//! The feature matrix of a learned ranker: one row per (task, candidate document), built from
//! what a replay produced.
//!
//! A task's candidates are the union of its first stages' lists (each cut at the
//! configuration's depth), in the ranking's tie order (document id descending). Feature names
//! as a tuning file's `learn.features` writes them, and the columns each adds:
//!
//! | name | columns |
//! |---|---|
//! | `bm25` | `bm25` (BM25 score), `bm25.rank` (1-based) |
//! | `dense` | `dense` (the bi-encoder's cosine), `dense.rank` |
//! | `lifecycle` | `lifecycle.active`, `lifecycle.superseded`, `lifecycle.deprecated` (one-hot) |
//! | `history` | `history.first-class`, `history.amendment`, `history.editorial-only` (one-hot), `history.versions` (lifecycle log entries + 1) |
//! | `age` | `age`: days between the record's `updated_at` and the newest `updated_at` of the corpus (0 without a date) |
//!
//! A document missing from a list gets that list's minimum score over its `depth` documents
//! and rank `depth + 1` (0 and `depth + 1` when the list is empty).

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use ranklab_engine::corpus::{Corpus, History, Lifecycle};
use ranklab_engine::learn::{Model, Query};
use ranklab_engine::ranking::{cmp_ranked, Hit};

use crate::replay::{ConfigRun, Ranked};

/// The feature names a tuning file may list.
pub(crate) const NAMES: [&str; 5] = ["bm25", "dense", "lifecycle", "history", "age"];

/// The columns of `names`, in order; `at` is the file:line for an error.
pub(crate) fn columns(names: &[String], at: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for n in names {
        let cols: Vec<&str> = match n.as_str() {
            "bm25" => vec!["bm25", "bm25.rank"],
            "dense" => vec!["dense", "dense.rank"],
            "lifecycle" => vec!["lifecycle.active", "lifecycle.superseded", "lifecycle.deprecated"],
            "history" => vec![
                "history.first-class",
                "history.amendment",
                "history.editorial-only",
                "history.versions",
            ],
            "age" => vec!["age"],
            "external" | "cross-encoder" | "colbert" => bail!("{at}: feature {n:?} is not computed by a learned tuning yet (it reads the bm25 and dense lists and the records); list some of {}", NAMES.join(", ")),
            _ => bail!("{at}: unknown feature {n:?}; write some of {}", NAMES.join(", ")),
        };
        if cols.iter().any(|c| out.iter().any(|o: &String| o == c)) {
            bail!("{at}: feature {n:?} is listed twice; list it once");
        }
        out.extend(cols.iter().map(|c| c.to_string()));
    }
    if out.is_empty() {
        bail!("{at}: `learn.features` lists no feature; write e.g. [bm25, dense]");
    }
    Ok(out)
}

/// One list's (score, rank) per document, and what a missing document gets.
struct ListIndex {
    at: BTreeMap<usize, (f64, f64)>,
    missing: (f64, f64),
}

fn index(list: &[Ranked], depth: usize) -> ListIndex {
    let cut = &list[..list.len().min(depth)];
    let at = cut
        .iter()
        .enumerate()
        .map(|(i, r)| (r.doc, (f64::from(r.score), (i + 1) as f64)))
        .collect();
    let min = cut
        .iter()
        .map(|r| f64::from(r.score))
        .min_by(f64::total_cmp)
        .unwrap_or(0.0);
    ListIndex {
        at,
        missing: (min, (depth + 1) as f64),
    }
}

/// The newest `updated_at` of the corpus (the reference of `age`).
pub(crate) fn newest(corpus: &Corpus) -> Option<chrono::NaiveDate> {
    corpus.docs.iter().filter_map(|d| d.updated_at).max()
}

/// The value of column `c` for document `doc`.
fn value(
    c: &str,
    doc: usize,
    corpus: &Corpus,
    lists: &[(&str, &ListIndex)],
    now: Option<chrono::NaiveDate>,
) -> f64 {
    let d = &corpus.docs[doc];
    let one = |b: bool| if b { 1.0 } else { 0.0 };
    for (name, l) in lists {
        let (score, rank) = l.at.get(&doc).copied().unwrap_or(l.missing);
        if c == *name {
            return score;
        }
        if c.strip_suffix(".rank") == Some(name) {
            return rank;
        }
    }
    match c {
        "lifecycle.active" => one(d.lifecycle == Lifecycle::Active),
        "lifecycle.superseded" => one(d.lifecycle == Lifecycle::Superseded),
        "lifecycle.deprecated" => one(d.lifecycle == Lifecycle::Deprecated),
        "history.first-class" => one(d.history == History::FirstClass),
        "history.amendment" => one(d.history == History::Amendment),
        "history.editorial-only" => one(d.history == History::EditorialOnly),
        "history.versions" => (d.lifecycle_log.len() + 1) as f64,
        "age" => match (now, d.updated_at) {
            (Some(n), Some(u)) => (n - u).num_days() as f64,
            _ => 0.0,
        },
        _ => unreachable!("columns are checked"),
    }
}

/// One task's rows: its candidates (document indices, in row order) and the [`Query`].
pub(crate) struct TaskRows {
    /// The candidate of each row.
    pub docs: Vec<usize>,
    /// The section each candidate is shown with (its BM25 section, else its dense one).
    pub sections: Vec<usize>,
    /// Features, grades, tie keys.
    pub query: Query,
}

/// Every task's rows from the replayed `bm25` and `dense` runs (suite order); `grades[t]`
/// maps a document id to its grade.
pub(crate) fn build(
    columns: &[String],
    bm25: &ConfigRun,
    dense: &ConfigRun,
    corpus: &Corpus,
    depth: usize,
    grades: &[BTreeMap<String, i32>],
) -> Vec<TaskRows> {
    let now = newest(corpus);
    bm25.per_task
        .iter()
        .zip(&dense.per_task)
        .zip(grades)
        .map(|((l, s), g)| task_rows(columns, l, s, corpus, depth, g, now))
        .collect()
}

/// One task's rows from its BM25 list `l` and dense list `s` (each cut at `depth`); `g` maps a
/// document id to its grade (empty when scoring, not training); `now` is [`newest`]. The one
/// feature computation both `ranklab tune` and the replay of `retriever: learned` use.
pub(crate) fn task_rows(
    columns: &[String],
    l: &[Ranked],
    s: &[Ranked],
    corpus: &Corpus,
    depth: usize,
    g: &BTreeMap<String, i32>,
    now: Option<chrono::NaiveDate>,
) -> TaskRows {
    let id_rank = corpus.id_rank();
    let (li, si) = (index(l, depth), index(s, depth));
    let mut section: BTreeMap<usize, usize> = BTreeMap::new();
    for r in s[..s.len().min(depth)]
        .iter()
        .chain(&l[..l.len().min(depth)])
    {
        section.insert(r.doc, r.section);
    }
    let mut docs: Vec<usize> = section.keys().copied().collect();
    // Tie order of the rankings: document id descending.
    docs.sort_unstable_by(|a, b| id_rank[*b].cmp(&id_rank[*a]));
    let lists = [("bm25", &li), ("dense", &si)];
    let features = docs
        .iter()
        .map(|&d| {
            columns
                .iter()
                .map(|c| value(c, d, corpus, &lists, now))
                .collect()
        })
        .collect();
    let labels = docs
        .iter()
        .map(|&d| f64::from(g.get(corpus.id(d)).copied().unwrap_or(0).max(0)))
        .collect();
    TaskRows {
        sections: docs.iter().map(|d| section[d]).collect(),
        query: Query {
            features,
            labels,
            tie: docs.iter().map(|&d| u32::MAX - id_rank[d]).collect(),
            ideal: g
                .values()
                .filter(|&&x| x > 0)
                .map(|&x| f64::from(x))
                .collect(),
        },
        docs,
    }
}

/// A task's ranking under `model` (score descending, then document id descending), cut at
/// `depth`: what `ranklab tune` measures and what `retriever: learned` replays.
pub(crate) fn rank(model: &Model, rows: &TaskRows, depth: usize, corpus: &Corpus) -> Vec<Hit> {
    let mut hits: Vec<Hit> = rows
        .docs
        .iter()
        .zip(&rows.sections)
        .zip(&rows.query.features)
        .map(|((&doc, &section), x)| Hit {
            doc,
            score: model.score(x) as f32,
            section,
        })
        .collect();
    let id_rank = corpus.id_rank();
    hits.sort_unstable_by(|a, b| cmp_ranked(a, b, id_rank));
    hits.truncate(depth);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The columns a model file may name (checked when an experiments file is read) are exactly
    /// those the feature names give here, in the order of docs/tuning.md's table.
    #[test]
    fn the_suite_checks_model_columns_against_these() {
        let all: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
        assert_eq!(
            columns(&all, "x").unwrap(),
            crate::suite::learned::KNOWN_COLUMNS.to_vec()
        );
    }
}
