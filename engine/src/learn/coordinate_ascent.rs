//! A linear ranker fitted by coordinate ascent on the target measure (Metzler & Croft 2007,
//! as RankLib implements it): from a start, each feature in turn (in a seeded order) is moved
//! by steps of growing size in both directions, the move that most raises the mean measure is
//! kept, the weights are normalized (absolute values summing to 1), and passes repeat until a
//! pass gains less than `tolerance`. Random restarts (seeded) begin elsewhere; the best model
//! over the restarts wins, the earlier one on a tie.

use serde::{Deserialize, Serialize};

use super::{linear, mean_measure, Query, Rng, Target};

/// Coordinate ascent's parameters (RankLib's defaults).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Starts: the first from uniform weights, the others from seeded random weights.
    pub restarts: usize,
    /// Steps tried per direction (the step doubles each time).
    pub steps: usize,
    /// The first step.
    pub step: f64,
    /// A pass that gains less than this ends the search.
    pub tolerance: f64,
    /// Most passes per start.
    pub passes: usize,
    /// Seed of the restarts and of the feature order.
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            restarts: 5,
            steps: 25,
            step: 0.05,
            tolerance: 0.001,
            passes: 25,
            seed: 42,
        }
    }
}

/// Divides `w` by the sum of its absolute values (left alone when that is 0).
fn normalize(w: &mut [f64]) {
    let s: f64 = w.iter().map(|x| x.abs()).sum();
    if s > 0.0 {
        for x in w.iter_mut() {
            *x /= s;
        }
    }
}

fn objective(target: Target, queries: &[Query], w: &[f64]) -> f64 {
    mean_measure(target, queries, |x| linear(w, x))
}

/// One line search along feature `f` from `w` (value `best`); returns the new value.
fn line_search(
    target: Target,
    queries: &[Query],
    w: &mut [f64],
    f: usize,
    best: f64,
    p: &Params,
) -> f64 {
    let origin = w[f];
    let (mut best, mut best_w) = (best, origin);
    for dir in [1.0, -1.0] {
        let mut step = p.step * dir;
        for _ in 0..p.steps {
            w[f] = origin + step;
            let v = objective(target, queries, w);
            if v > best {
                best = v;
                best_w = w[f];
            }
            step *= 2.0;
        }
    }
    w[f] = best_w;
    normalize(w);
    // Normalizing rescales every score by one positive factor: the ranking, and so the value,
    // is unchanged.
    best
}

/// Fits weights over `features` columns of `queries` (already normalized) for `target`.
pub fn fit(target: Target, queries: &[Query], features: usize, p: &Params) -> Vec<f64> {
    let mut rng = Rng::new(p.seed);
    let mut best: Option<(f64, Vec<f64>)> = None;
    for r in 0..p.restarts.max(1) {
        let mut w: Vec<f64> = if r == 0 {
            vec![1.0 / features as f64; features]
        } else {
            (0..features).map(|_| rng.unit()).collect()
        };
        normalize(&mut w);
        let mut value = objective(target, queries, &w);
        for _ in 0..p.passes {
            let before = value;
            for f in rng.permutation(features) {
                value = line_search(target, queries, &mut w, f, value, p);
            }
            if value - before < p.tolerance {
                break;
            }
        }
        if best.as_ref().is_none_or(|(b, _)| value > *b) {
            best = Some((value, w));
        }
    }
    best.map(|b| b.1).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::tests::query;
    use super::*;

    /// Two features, two queries, one relevant document each. By hand: query A's relevant row
    /// (1, 0) beats its other row (0, 3) iff w0 > 3·w1; query B's relevant row (0, 1) beats
    /// (0.2, 0) iff w1 > 0.2·w0, i.e. w0 < 5·w1. MRR is 1 exactly when 3 < w0/w1 < 5 (with
    /// w0, w1 > 0), and 0.75 at the uniform start (A fails). The fitted weights must land in
    /// that window, normalized.
    #[test]
    fn coordinate_ascent_finds_the_known_best_ratio_of_two_features() {
        let qs = vec![
            query(&[&[1.0, 0.0], &[0.0, 3.0]], &[1.0, 0.0]),
            query(&[&[0.0, 1.0], &[0.2, 0.0]], &[1.0, 0.0]),
        ];
        assert_eq!(objective(Target::Mrr(10), &qs, &[0.5, 0.5]), 0.75);
        let w = fit(Target::Mrr(10), &qs, 2, &Params::default());
        assert!((w[0].abs() + w[1].abs() - 1.0).abs() < 1e-12, "{w:?}");
        assert!(w[0] > 0.0 && w[1] > 0.0, "{w:?}");
        let ratio = w[0] / w[1];
        assert!(ratio > 3.0 && ratio < 5.0, "w0/w1 = {ratio}");
        assert_eq!(objective(Target::Mrr(10), &qs, &w), 1.0);
    }

    #[test]
    fn the_same_seed_fits_the_same_weights_to_the_bit() {
        let qs: Vec<Query> = (0..6)
            .map(|i| {
                let x = i as f64;
                query(
                    &[&[x, 1.0 - x, 0.3], &[1.0, x * 0.5, x], &[0.2, 0.1, 1.0 - x]],
                    &[(i % 3) as f64, ((i + 1) % 2) as f64, 1.0],
                )
            })
            .collect();
        let p = Params::default();
        let a = fit(Target::Ndcg(3), &qs, 3, &p);
        let b = fit(Target::Ndcg(3), &qs, 3, &p);
        assert_eq!(
            a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }
}
