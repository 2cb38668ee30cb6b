//! A replay's per-task values: the measures of a suite table ([`suite_measures`], at each task's
//! k) or of a fixed list ([`MeasureSet`]), evaluated on each configuration's ranked lists with
//! the evaluator's trec_eval conventions ([`crate::metrics::evaluate_ranking`]); and the rank of
//! each task's first relevant document. Reports, the gate, the corpus-size curves and tuning read
//! them (`report` re-exports them).

use std::collections::HashMap;

use ranklab_engine::corpus::Corpus;

use super::ConfigRun;
use crate::metrics::{evaluate_ranking, Measure};
use crate::suite::{Suite, Task};

/// The measures of a suite table, at cutoff `k`, with their column names.
pub fn suite_measures(k: usize) -> Vec<(Measure, String)> {
    vec![
        (Measure::Recall(k), format!("recall@{k}")),
        (Measure::RecipRank, "MRR".to_string()),
        (Measure::NdcgCut(k), format!("nDCG@{k}")),
        (Measure::P(k), format!("P@{k}")),
        (Measure::Success(1), "success@1".to_string()),
        (Measure::Map, "MAP".to_string()),
    ]
}

/// The measures of a report: a suite's (at each task's k) or a fixed list (BEIR collections).
#[derive(Debug, Clone)]
pub enum MeasureSet {
    /// [`suite_measures`] at each task's k; columns named at the suite's k.
    Suite,
    /// The same measures for every task.
    Fixed(Vec<(Measure, String)>),
}

impl MeasureSet {
    /// Column names for a suite with default cutoff `k`.
    pub fn names(&self, k: usize) -> Vec<String> {
        match self {
            MeasureSet::Suite => suite_measures(k).into_iter().map(|m| m.1).collect(),
            MeasureSet::Fixed(v) => v.iter().map(|m| m.1.clone()).collect(),
        }
    }
    /// The measures evaluated for `task`.
    pub fn for_task(&self, task: &Task) -> Vec<Measure> {
        match self {
            MeasureSet::Suite => suite_measures(task.k).into_iter().map(|m| m.0).collect(),
            MeasureSet::Fixed(v) => v.iter().map(|m| m.0).collect(),
        }
    }
}

/// Per-task values of the report's measures for one configuration: `[task][measure]`.
/// Suite measures are taken at each task's k (the suite's k unless the task overrides it).
pub fn per_task_values(
    corpus: &Corpus,
    suite: &Suite,
    run: &ConfigRun,
    set: &MeasureSet,
) -> Vec<Vec<f64>> {
    suite
        .tasks
        .iter()
        .zip(&run.per_task)
        .map(|(task, ranked)| {
            let ids: Vec<&str> = ranked.iter().map(|r| corpus.id(r.doc)).collect();
            let judged: HashMap<String, i32> =
                task.expected.iter().map(|(k, v)| (k.clone(), *v)).collect();
            evaluate_ranking(&set.for_task(task), &ids, &judged, 1)
        })
        .collect()
}

/// 1-based rank of the first relevant document of `task` in `ranked`, if retrieved.
pub fn first_relevant_rank(
    corpus: &Corpus,
    task: &Task,
    ranked: &[super::Ranked],
) -> Option<usize> {
    ranked
        .iter()
        .position(|r| task.expected.get(corpus.id(r.doc)).is_some_and(|&g| g >= 1))
        .map(|p| p + 1)
}
