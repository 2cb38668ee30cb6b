//! One task of a suite file: its id, query, judged documents and cutoff, and the checks a task
//! must pass when it is read.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use super::MAX_K;

/// One task: a query and its judged documents.
#[derive(Debug, Clone)]
pub struct Task {
    /// Task id (unique in the suite).
    pub id: String,
    /// The query text.
    pub query: String,
    /// Expected documents and their grades (>= 1 is relevant).
    pub expected: BTreeMap<String, i32>,
    /// Cutoff for this task.
    pub k: usize,
    /// Free text.
    pub note: Option<String>,
    /// Line of the task in the suite file.
    pub line: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTask {
    pub(super) id: String,
    query: String,
    expected: Expected,
    /// Documents judged not relevant (grade 0): judged, so not counted as unjudged.
    #[serde(default)]
    not_relevant: Vec<String>,
    k: Option<usize>,
    note: Option<String>,
}

impl RawTask {
    /// Checks one task of the suite file (`at`: its place, `file:line`) and resolves its
    /// judgments and cutoff (`default_k`: the suite's).
    pub(super) fn check(self, default_k: usize, line: usize, at: &str) -> Result<Task> {
        if self.id.is_empty() || self.id.chars().any(|c| c.is_whitespace() || c.is_control()) {
            bail!(
                "{}: task id {:?} must be non-empty, without white space or control characters (it is the query id of the TREC runs)",
                at,
                self.id
            );
        }
        if self.query.trim().is_empty() {
            bail!("{}: task {:?} has an empty query", at, self.id);
        }
        let mut expected: BTreeMap<String, i32> = match self.expected {
            Expected::One(id) => [(id, 1)].into(),
            Expected::Many(ids) => ids.into_iter().map(|id| (id, 1)).collect(),
            Expected::Graded(m) => m,
        };
        let mut not_relevant = std::collections::BTreeSet::new();
        for id in self.not_relevant {
            if !not_relevant.insert(id.clone()) {
                bail!(
                    "{}: task {:?} lists {id:?} twice in `not_relevant`; list it once",
                    at,
                    self.id
                );
            }
            if expected.insert(id.clone(), 0).is_some() {
                bail!(
                    "{}: task {:?} lists {id:?} both in `expected` and in `not_relevant`; a document has one judgment",
                    at,
                    self.id
                );
            }
        }
        if !expected.values().any(|&g| g >= 1) {
            bail!(
                "{}: task {:?} expects no relevant document (give at least one id with grade >= 1)",
                at,
                self.id
            );
        }
        let k = self.k.unwrap_or(default_k);
        check_k(k).with_context(|| format!("{}: task {:?}", at, self.id))?;
        Ok(Task {
            id: self.id,
            query: self.query,
            expected,
            k,
            note: self.note,
            line,
        })
    }
}

/// `expected`: one id, a list of ids, or a map id -> grade.
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "`expected` must be an id, a list of ids, or a map of id to integer grade (quote ids that look like numbers)"
)]
enum Expected {
    One(String),
    Many(Vec<String>),
    Graded(BTreeMap<String, i32>),
}

pub(super) fn check_k(k: usize) -> Result<()> {
    if k == 0 {
        bail!("k = 0: the cutoff must be at least 1");
    }
    if k > MAX_K {
        bail!("k = {k} is larger than {MAX_K}; use a cutoff no larger than the run depth");
    }
    Ok(())
}
