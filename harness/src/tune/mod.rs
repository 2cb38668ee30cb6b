//! Tuning: the lifecycle/history penalty weights against recent merges, and (in [`cv`]) any
//! configuration parameter of a tuning file under task-fold cross-validation.
//!
//! - [`merges`]: the dated merges file, the window up to an as-of date, the train/held-out split;
//! - [`grid`]: the integer grid of weights (integer units of hundredths, rules enforced);
//! - [`scorer`]: first stage once per query, then a re-sort per candidate.
//!
//! [`search`] scores every grid point in parallel (rayon) and keeps the results in grid order, so
//! the outcome does not depend on the number of threads. Candidates are ordered by MRR, then
//! recall@k, then the smaller weights (total units, then the units of superseded, deprecated,
//! amendment, editorial_only): a total order with a unique best. MRR sums are compared after
//! rounding to 1e-9, so two rank vectors with mathematically equal MRR tie whatever the float
//! summation did. A candidate that breaks any paired assertion (under either wiring) is rejected.

pub(crate) mod assemble;
pub(crate) mod cv;
pub(crate) mod from_git;
pub(crate) mod grid;
mod heatmap;
pub(crate) use crate::suite::merges;
mod report;
pub(crate) mod robust;
pub(crate) mod rolling;
pub(crate) mod scorer;
pub(crate) mod session;

use std::cmp::Reverse;

use ranklab_engine::policy::Weights;
use rayon::prelude::*;

use grid::{Grid, Point};
use scorer::{MergeQuery, PairQuery, TaskQuery};

/// MRR and recall@k of one set of merges or tasks, with `run`'s definitions (trec_eval's
/// recip_rank and recall at k: relevant records in the top k over all relevant records).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Figures {
    /// Sum of reciprocal ranks, summed in merge order.
    pub rr_sum: f64,
    /// Queries whose first relevant record is in the top k (for a merge, its one expected
    /// record: then recall@k is this count over n).
    pub hits: u32,
    /// Sum of the queries' recall@k.
    pub recall_sum: f64,
    /// Number of queries.
    pub n: u32,
}

impl Figures {
    /// A merge: one expected record at `rank` (None: not retrieved).
    fn add(&mut self, rank: Option<usize>, k: usize) {
        let found = rank.is_some_and(|r| r <= k);
        self.add_query(rank, found, if found { 1.0 } else { 0.0 });
    }

    /// A query whose first relevant record is at `rank`, `found` when it is in the top k, and
    /// whose recall@k is `recall`.
    fn add_query(&mut self, rank: Option<usize>, found: bool, recall: f64) {
        self.n += 1;
        if let Some(r) = rank {
            self.rr_sum += 1.0 / r as f64;
        }
        if found {
            self.hits += 1;
        }
        self.recall_sum += recall;
    }
    /// Mean reciprocal rank (trec_eval's recip_rank, no cutoff); 0 with no merge.
    pub(crate) fn mrr(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.rr_sum / f64::from(self.n)
        }
    }
    /// Mean recall@k (`run`'s recall@k; for merges, one expected record each, the share found
    /// in the top k).
    pub(crate) fn recall(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.recall_sum / f64::from(self.n)
        }
    }
    /// The comparison key of the figures (higher is better): MRR sum rounded to 1e-9, hits.
    pub(crate) fn key(&self) -> (i64, u32) {
        ((self.rr_sum * 1e9).round() as i64, self.hits)
    }
}

/// Which merges a selection looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The whole window.
    Window,
    /// The older two thirds.
    Train,
}

/// The figures of one weight vector.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Score {
    /// Over the whole window.
    pub window: Figures,
    /// Over the older two thirds.
    pub train: Figures,
    /// Over the newest third.
    pub held_out: Figures,
}

impl Score {
    /// The figures of `part`.
    pub(crate) fn part(&self, part: Part) -> &Figures {
        match part {
            Part::Window => &self.window,
            Part::Train => &self.train,
        }
    }
}

/// Everything a candidate is scored on, precomputed.
#[derive(Debug, Clone)]
pub(crate) struct Problem {
    /// The window's merge queries, oldest first.
    pub merges: Vec<MergeQuery>,
    /// How many of them form the training part.
    pub train: usize,
    /// Every paired assertion.
    pub pairs: Vec<PairQuery>,
    /// The suite's own tasks (scored beside the merges, not tuned on).
    pub tasks: Vec<TaskQuery>,
    /// Cutoff of recall.
    pub k: usize,
}

impl Problem {
    /// Whether `w` meets every paired expectation.
    pub(crate) fn paired_ok(&self, w: &Weights) -> bool {
        self.pairs.iter().all(|p| p.passes(w))
    }

    /// The rank of each merge's expected record under `w`.
    pub(crate) fn ranks(&self, w: &Weights) -> Vec<Option<usize>> {
        self.merges.iter().map(|m| m.rank(w)).collect()
    }

    /// The figures of `w` on the suite's own tasks.
    pub(crate) fn task_figures(&self, w: &Weights) -> Figures {
        let mut f = Figures::default();
        for t in &self.tasks {
            let rank = t.rank(w);
            f.add_query(rank, rank.is_some_and(|r| r <= self.k), t.recall(w, self.k));
        }
        f
    }

    /// The same problem on a subset of the merges (all of them training), without the
    /// suite's tasks.
    pub(crate) fn on(&self, merges: Vec<MergeQuery>) -> Problem {
        Problem {
            train: merges.len(),
            merges,
            pairs: self.pairs.clone(),
            tasks: Vec::new(),
            k: self.k,
        }
    }

    /// The figures of `w`.
    pub(crate) fn score(&self, w: &Weights) -> Score {
        let mut s = Score::default();
        for (i, m) in self.merges.iter().enumerate() {
            let r = m.rank(w);
            s.window.add(r, self.k);
            if i < self.train {
                s.train.add(r, self.k);
            } else {
                s.held_out.add(r, self.k);
            }
        }
        s
    }
}

/// One scored grid point; `score` is None when the point breaks a paired assertion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scored {
    /// The point.
    pub point: Point,
    /// Its figures, if it passes every paired assertion.
    pub score: Option<Score>,
}

/// Scores every point of `grid` (rayon over chunks of points; the result is in grid order).
/// `progress` is called with the number of points done in each finished chunk.
pub(crate) fn search(
    problem: &Problem,
    grid: &Grid,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<Scored> {
    let points = grid.points();
    points
        .par_chunks(1024)
        .flat_map_iter(|chunk| {
            let out: Vec<Scored> = chunk
                .iter()
                .map(|&point| {
                    let w = grid.weights(point);
                    let score = problem.paired_ok(&w).then(|| problem.score(&w));
                    Scored { point, score }
                })
                .collect();
            progress(chunk.len() as u64);
            out
        })
        .collect()
}

/// The ordering of candidates on `part`: best first.
pub(crate) fn order_key(s: &Scored, part: Part) -> impl Ord {
    let f = s.score.map(|x| *x.part(part)).unwrap_or_default();
    let (rr, hits) = f.key();
    (Reverse(rr), Reverse(hits), s.point.total(), s.point)
}

/// The passing candidates ordered by `part`, best first.
pub(crate) fn ranking(scored: &[Scored], part: Part) -> Vec<Scored> {
    let mut ok: Vec<Scored> = scored
        .iter()
        .filter(|s| s.score.is_some())
        .copied()
        .collect();
    ok.par_sort_unstable_by_key(|s| order_key(s, part));
    ok
}

/// The best passing candidate on `part`.
pub(crate) fn best(scored: &[Scored], part: Part) -> Option<Scored> {
    scored
        .par_iter()
        .filter(|s| s.score.is_some())
        .min_by_key(|s| order_key(s, part))
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_average_over_merges() {
        let mut f = Figures::default();
        for r in [Some(1), Some(2), None, Some(6)] {
            f.add(r, 5);
        }
        assert_eq!(f.n, 4);
        assert_eq!(f.hits, 2);
        assert!((f.mrr() - (1.0 + 0.5 + 1.0 / 6.0) / 4.0).abs() < 1e-12);
        assert_eq!(f.recall(), 0.5);
    }

    #[test]
    fn equal_mrr_ties_break_on_smaller_weights() {
        // 1/2 + 1/6 and 1/3 + 1/3 are equal in exact arithmetic, not necessarily in floats.
        let mk = |ranks: [usize; 2], units: [u16; 4]| {
            let mut f = Figures::default();
            for r in ranks {
                f.add(Some(r), 5);
            }
            Scored {
                point: Point(units),
                score: Some(Score {
                    window: f,
                    train: f,
                    held_out: Figures::default(),
                }),
            }
        };
        let a = mk([2, 6], [0, 1, 0, 0]);
        let b = mk([3, 3], [0, 2, 0, 0]);
        let c = mk([3, 3], [1, 1, 0, 0]);
        let order = ranking(&[b, a, c], Part::Window);
        // a has fewer recall hits (rank 6 is outside the top 5): b and c first, equal MRR and
        // hits, then the smaller weights; c and b have the same total, c is lexicographically larger.
        assert_eq!(
            order.iter().map(|s| s.point).collect::<Vec<_>>(),
            [b.point, c.point, a.point]
        );
        assert_eq!(best(&[a, b, c], Part::Window).unwrap().point, b.point);
    }
}
