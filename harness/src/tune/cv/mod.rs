//! `ranklab tune FILE`: tune a configuration's parameters under task-fold cross-validation.
//!
//! The tuning file ([`file`]) names a configuration of the suite, a measure, a number of folds
//! and a grid. The configuration's lists are computed once ([`lists`]), every candidate is
//! scored on every task by re-weighting them, and then, per fold ([`folds`]), the candidate is
//! chosen on the other folds' tasks only by the plateau rule ([`plateau`]) and the fold's
//! held-out tasks are scored with it. The out-of-fold value of a task is therefore always
//! that of a candidate chosen without it. [`session`] compares the out-of-fold values with the
//! shipped configuration's and writes the report ([`render`]). A tuning of `rerank.interpolate`
//! ([`interp`]) re-weights a rerank stage's shortlist scores the same way. A file with
//! `split: time` ([`penalty`]) tunes the lifecycle/history penalty weights on dated merges
//! through [`crate::tune::session`], the implementation `ranklab tune --suite` runs.

pub(crate) use crate::replay::features;
pub(crate) mod file;
pub(crate) mod folds;
pub(crate) mod interp;
pub(crate) mod learned;
pub(crate) mod lists;
pub(crate) mod penalty;
pub(crate) mod plateau;
pub(crate) mod render;
pub(crate) mod session;
pub(crate) mod write;

use folds::Fold;

/// The result of the cross-validation over a scored grid.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CrossValidation {
    /// Per fold, the candidate chosen on its training tasks.
    pub chosen: Vec<usize>,
    /// Per fold, the chosen candidate's mean over its training tasks (in-sample for the fold).
    pub train_value: Vec<f64>,
    /// Per task, its value under its own fold's chosen candidate.
    pub out_of_fold: Vec<f64>,
    /// The candidate chosen on every task (what `--write` ships).
    pub all: usize,
    /// Its mean over every task (in-sample).
    pub all_value: f64,
}

/// The mean of each candidate over `tasks` (`values[candidate * n + task]`).
fn means(values: &[f64], n: usize, tasks: &[usize]) -> Vec<f64> {
    values
        .chunks(n)
        .map(|row| tasks.iter().map(|&t| row[t]).sum::<f64>() / tasks.len().max(1) as f64)
        .collect()
}

/// Cross-validates a grid of `sizes` whose value of candidate `c` on task `t` is
/// `values[c * n + t]` (`n` tasks): each fold's choice sees only its training tasks' values.
pub(crate) fn cross_validate(
    sizes: &[usize],
    values: &[f64],
    n: usize,
    folds: &[Fold],
    epsilon: f64,
) -> CrossValidation {
    let mut out = CrossValidation {
        chosen: Vec::new(),
        train_value: Vec::new(),
        out_of_fold: vec![f64::NAN; n],
        all: 0,
        all_value: 0.0,
    };
    for f in folds {
        let objective = means(values, n, &f.train);
        let c = plateau::choose(sizes, &objective, epsilon);
        out.chosen.push(c);
        out.train_value.push(objective[c]);
        for &t in &f.held_out {
            out.out_of_fold[t] = values[c * n + t];
        }
    }
    let everyone: Vec<usize> = (0..n).collect();
    let objective = means(values, n, &everyone);
    out.all = plateau::choose(sizes, &objective, epsilon);
    out.all_value = objective[out.all];
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grid of 3 candidates on 6 tasks: tasks 0..=3 score 1 under candidate 0 (0 under the
    /// others), tasks 4 and 5 score 100 under candidate 2. By hand: trained on 0..=3 the means
    /// are [1, 0, 0] -> 0; trained on all six [4/6, 0, 200/6] -> 2. The fold holding out {4, 5}
    /// chooses 0 exactly when it never reads tasks 4 and 5.
    #[test]
    fn a_fold_never_reads_its_held_out_tasks() {
        let n = 6;
        let mut values = vec![0.0; 3 * n];
        values[..4].fill(1.0); // candidate 0 on tasks 0..=3
        values[2 * n + 4] = 100.0;
        values[2 * n + 5] = 100.0;
        let folds = vec![
            Fold {
                held_out: vec![4, 5],
                train: vec![0, 1, 2, 3],
            },
            Fold {
                held_out: vec![0, 1, 2, 3],
                train: vec![4, 5],
            },
        ];
        let cv = cross_validate(&[3], &values, n, &folds, 0.0);
        assert_eq!(cv.chosen, [0, 2]);
        // Held-out tasks 4 and 5 scored with candidate 0 (value 0); tasks 0..=3 with 2 (0).
        assert_eq!(cv.out_of_fold, [0.0; 6]);
        assert_eq!(cv.all, 2);
        assert!((cv.all_value - 200.0 / 6.0).abs() < 1e-12);
        assert_eq!(cv.train_value, [1.0, 100.0]);
    }

    /// Every task's out-of-fold value is its value under its own fold's choice (the property
    /// the acceptance check reads back from the JSON), on the real fold split.
    #[test]
    fn out_of_fold_is_each_task_under_its_folds_choice() {
        let n = 20;
        let sizes = [4];
        let values: Vec<f64> = (0..4 * n)
            .map(|i| ((i * 7919) % 13) as f64 / 13.0)
            .collect();
        let folds = folds::split(n, 5, 42);
        let cv = cross_validate(&sizes, &values, n, &folds, 0.001);
        for (f, &c) in folds.iter().zip(&cv.chosen) {
            for &t in &f.held_out {
                assert_eq!(cv.out_of_fold[t], values[c * n + t]);
            }
        }
    }
}
