//! Rolling validation: does re-tuning every time a merge lands beat keeping the weights?
//!
//! Folds: the distinct merge days up to the as-of date, in order, d_1 < ... < d_m. For each of
//! the last `n` pairs of consecutive days (d_i, d_{i+1}), the whole procedure of `ranklab tune`
//! (grid search, robust choice, keep-the-current-weights rule, finer search) is run on the
//! merges of the window of `window_days` days ending at d_i (inclusive), and the chosen weights
//! are scored on the merges of day d_{i+1}, which that tuning never saw. Every held-out merge
//! belongs to exactly one fold, so the held-out reciprocal ranks of "tune" and of "keep the
//! current weights" pair up merge by merge and the paired statistics of [`crate::stats`]
//! (bootstrap interval, sign-flip test) apply.
//!
//! Tuning *beats* keeping when the mean held-out difference is positive and the sign-flip
//! test's p is below [`crate::stats::ALPHA`]. Otherwise `ranklab tune` recommends not writing
//! and `--write` refuses a change of weights unless `--force`.

use chrono::NaiveDate;
use ranklab_engine::policy::Weights;

use super::grid::Grid;
use super::merges::Merge;
use super::robust::{choose, refine};
use super::scorer::MergeQuery;
use super::{best, search, Part, Problem};
use crate::stats;

/// Default number of folds.
pub(crate) const DEFAULT_FOLDS: usize = 8;

/// One fold.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fold {
    /// First day of the training window.
    pub from: NaiveDate,
    /// Last day of the training window (a merge day).
    pub cut: NaiveDate,
    /// Merges trained on.
    pub train: usize,
    /// The next merge day: the held-out merges' day.
    pub test_day: NaiveDate,
    /// Ids of the held-out merges.
    pub test: Vec<String>,
    /// The weights chosen on the training window (hundredths); None when no candidate passes.
    pub chosen: Option<[u16; 4]>,
    /// True when the procedure kept the current weights.
    pub kept: bool,
    /// Held-out reciprocal ranks under the chosen weights.
    pub tuned_rr: Vec<f64>,
    /// Held-out reciprocal ranks under the current weights.
    pub kept_rr: Vec<f64>,
}

/// The rolling validation.
#[derive(Debug, Clone)]
pub(crate) struct Rolling {
    /// Folds, oldest first.
    pub folds: Vec<Fold>,
    /// Tuned against kept over every held-out merge (None: no fold).
    pub stats: Option<stats::Paired>,
    /// Whether tuning beats keeping (see the module documentation).
    pub beats: bool,
}

fn rr(rank: Option<usize>) -> f64 {
    rank.map_or(0.0, |r| 1.0 / r as f64)
}

/// Runs the rolling validation over `pool` (oldest first) and its queries.
#[allow(clippy::too_many_arguments)]
pub(crate) fn rolling(
    problem: &Problem,
    grid: &Grid,
    pool: &[Merge],
    queries: &[MergeQuery],
    window_days: u32,
    folds: usize,
    eps: f64,
    current: &Weights,
) -> Rolling {
    let mut days: Vec<NaiveDate> = pool.iter().map(|m| m.merged).collect();
    days.dedup();
    let pairs: Vec<(NaiveDate, NaiveDate)> = days.windows(2).map(|w| (w[0], w[1])).collect();
    let start = pairs.len().saturating_sub(folds);
    let mut out = Vec::new();
    for &(cut, next) in &pairs[start..] {
        let from = cut
            .checked_sub_days(chrono::Days::new(u64::from(window_days)))
            .unwrap_or(NaiveDate::MIN);
        let train: Vec<MergeQuery> = pool
            .iter()
            .zip(queries)
            .filter(|(m, _)| m.merged >= from && m.merged <= cut)
            .map(|(_, q)| q.clone())
            .collect();
        let test: Vec<(&Merge, &MergeQuery)> = pool
            .iter()
            .zip(queries)
            .filter(|(m, _)| m.merged == next)
            .collect();
        let sub = problem.on(train);
        let scored = search(&sub, grid, &|_| {});
        let choice = choose(&sub, grid, &scored, Part::Window, eps, current).map(|mut c| {
            let coarse = best(&scored, Part::Window).expect("a candidate passes");
            refine(
                &sub,
                grid,
                Part::Window,
                eps,
                coarse.score.expect("passing").part(Part::Window),
                &mut c,
            );
            c
        });
        // No passing candidate: tuning has nothing to offer, it keeps the current weights.
        let tuned_w = choice.as_ref().map_or(*current, |c| c.weights);
        out.push(Fold {
            from,
            cut,
            train: sub.merges.len(),
            test_day: next,
            test: test.iter().map(|(m, _)| m.id.clone()).collect(),
            chosen: choice.as_ref().map(|c| c.hundredths),
            kept: choice.as_ref().is_none_or(|c| c.kept_current),
            tuned_rr: test.iter().map(|(_, q)| rr(q.rank(&tuned_w))).collect(),
            kept_rr: test.iter().map(|(_, q)| rr(q.rank(current))).collect(),
        });
    }
    let tuned: Vec<f64> = out.iter().flat_map(|f| f.tuned_rr.clone()).collect();
    let kept: Vec<f64> = out.iter().flat_map(|f| f.kept_rr.clone()).collect();
    let stats = stats::paired(&kept, &tuned, &stats::Options::default()).ok();
    let beats = stats
        .as_ref()
        .is_some_and(|s| s.delta > 0.0 && s.test.p < stats::ALPHA);
    Rolling {
        folds: out,
        stats,
        beats,
    }
}
