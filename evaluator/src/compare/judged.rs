//! Judged@k of a comparison (`ranklab compare`): per run, the mean over the paired queries of
//! Judged@k (ir_measures' `Judged@k`: documents of the top k, in trec_eval's order, with a
//! judgment of any grade in the qrels, divided by k) and the unjudged documents of its top k,
//! summed over the queries (trec_eval's `unj` × k). A query missing from a run (`-c`) has
//! neither. The warning of the reading is the suite reports' ([`judged_warning`]).

use crate::table::{Column, Table};
use anyhow::Result;

use super::Comparison;
use crate::metrics::Measure;
use crate::stats;
use crate::trec::Evaluation;
use crate::warranty::{judged_columns, judged_warning, JudgedCount, JUDGED_MARGIN};

/// The measures evaluated beside the compared ones, in this order.
pub(super) fn measures(k: usize) -> [Measure; 2] {
    [Measure::Judged(k), Measure::Unj(k)]
}

/// One run's judgments in its top k.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Judgments {
    /// Mean Judged@k over the paired queries.
    pub judged: f64,
    /// Unjudged documents in the top k, summed over the paired queries.
    pub unjudged: usize,
}

impl Judgments {
    /// From an evaluation whose values hold [`measures`] at `at` and `at + 1`.
    pub(super) fn of(e: &Evaluation, at: usize, k: usize) -> Judgments {
        let judged: Vec<f64> = e.per_query.iter().map(|q| q.values[at]).collect();
        let unjudged = e
            .per_query
            .iter()
            .map(|q| (q.values[at + 1] * k as f64).round() as usize)
            .sum();
        Judgments {
            judged: stats::mean(&judged),
            unjudged,
        }
    }
}

impl Comparison {
    /// The warning of the reading when a run's Judged@k is below the baseline's by more than
    /// [`JUDGED_MARGIN`].
    pub fn judged_reading(&self) -> Option<String> {
        let k = self.plan.judged_k;
        let count = |r: usize| JudgedCount {
            name: &self.plan.runs[r].0,
            judged: self.judged[r].judged,
            unjudged: self.judged[r].unjudged,
            loses: self.paired.iter().any(|row| {
                row[r]
                    .as_ref()
                    .is_some_and(|p| p.delta < -stats::TIE_EPSILON)
            }),
        };
        let others: Vec<JudgedCount<'_>> = (1..self.plan.runs.len()).map(count).collect();
        judged_warning(
            &count(0),
            &others,
            k,
            self.queries(),
            "queries",
            " — judge them before trusting Δ (for a suite's runs, `ranklab pool tasks/<suite>` collects them)",
        )
    }

    /// Per run: Judged@k and unjudged@k.
    pub fn judged_table(&self) -> Result<Table> {
        let runs: Vec<String> = self.plan.runs.iter().map(|(l, _)| l.clone()).collect();
        let mut cols = vec![Column::new("run", runs)];
        cols.extend(judged_columns(
            self.plan.judged_k,
            self.judged.iter().map(|j| (j.judged, j.unjudged)),
        ));
        Table::new(cols)
    }

    /// The note under the Markdown table.
    pub fn judged_note(&self) -> String {
        let k = self.plan.judged_k;
        format!(
            "Judged@{k}: documents of the top {k} (trec_eval's order) with a judgment of any grade in the qrels, divided by {k}, mean over the {} queries (ir_measures' Judged@k; trec_eval's unj counts the complement); unjudged@{k}: documents of the top {k} without one, summed over the queries; an unjudged document counts as not relevant. The reading warns when a run's Judged@{k} is more than {JUDGED_MARGIN} below the baseline's (`--judged-at K` sets k).\n",
            self.queries()
        )
    }
}
