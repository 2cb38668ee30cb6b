//! Gradient-boosted regression trees with the LambdaMART objective (Burges 2010).
//!
//! Each round computes, per query, the lambda of every pair of rows whose grades differ: with
//! `ρ = 1 / (1 + e^(s_i − s_j))` (i the better-graded row) and `Δ` the absolute change of
//! the target (nDCG@k or RR@k) from swapping the two rows in the current ranking,
//! `λ_i += ρΔ`, `λ_j −= ρΔ`, and both hessians grow by `ρ(1 − ρ)Δ`. A regression tree
//! ([`super::tree`]) is fitted to the lambdas with Newton leaf values and added with the
//! shrinkage. Queries and pairs are visited in a fixed order on one thread.
//!
//! Written here rather than taken from a crate: of the Rust crates found (docs.rs search,
//! December 2026), `hessboost` (0.2, a young XGBoost reimplementation in f32 with many other
//! concerns) does LambdaMART but neither |ΔRR| lambdas nor f64 determinism across thread
//! counts is documented, and `rankit` has LambdaRank losses but no trees. This is ~200 lines.

use serde::{Deserialize, Serialize};

use super::tree::{self, Limits, Tree};
use super::{discount, ideal_dcg, order, Query, Target};

/// LambdaMART's parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Params {
    /// Number of trees.
    pub trees: usize,
    /// Each tree's output is multiplied by this.
    pub shrinkage: f64,
    /// Most leaves per tree.
    pub leaves: usize,
    /// Most depth per tree (0: only `leaves` limits it).
    pub depth: usize,
    /// Fewest rows in a leaf.
    pub min_leaf: usize,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            trees: 100,
            shrinkage: 0.1,
            leaves: 10,
            depth: 0,
            min_leaf: 5,
        }
    }
}

/// The change of reciprocal rank at k when the relevant row at `pi` swaps with the
/// irrelevant row at `pj` (1-based ranks), given the first and second relevant ranks.
fn delta_rr(pi: usize, pj: usize, first: usize, second: usize, k: usize) -> f64 {
    let rr = |p: usize| if p <= k { 1.0 / p as f64 } else { 0.0 };
    let after = if pi == first {
        pj.min(second)
    } else {
        first.min(pj)
    };
    (rr(after) - rr(first)).abs()
}

/// The lambdas and hessians of query `q` under `scores` (one per row).
pub fn lambdas(target: Target, q: &Query, scores: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = scores.len();
    let (mut lam, mut hess) = (vec![0.0; n], vec![0.0; n]);
    let ranked = order(scores, &q.tie);
    let mut pos = vec![0usize; n];
    for (i, &r) in ranked.iter().enumerate() {
        pos[r] = i + 1;
    }
    let idcg = match target {
        Target::Ndcg(k) => ideal_dcg(q, k),
        Target::Mrr(_) => 1.0,
    };
    if idcg <= 0.0 {
        return (lam, hess);
    }
    let relevant: Vec<usize> = ranked
        .iter()
        .map(|&r| pos[r])
        .filter(|&p| q.labels[ranked[p - 1]] > 0.0)
        .collect();
    let first = relevant.first().copied().unwrap_or(usize::MAX);
    let second = relevant.get(1).copied().unwrap_or(usize::MAX);
    for i in 0..n {
        for j in 0..n {
            if q.labels[i] <= q.labels[j] {
                continue;
            }
            let delta = match target {
                Target::Ndcg(k) => {
                    let dg = q.labels[i].max(0.0) - q.labels[j].max(0.0);
                    (dg * (discount(pos[i], k) - discount(pos[j], k))).abs() / idcg
                }
                Target::Mrr(k) if q.labels[j] <= 0.0 => delta_rr(pos[i], pos[j], first, second, k),
                Target::Mrr(_) => 0.0,
            };
            if delta == 0.0 {
                continue;
            }
            let rho = 1.0 / (1.0 + (scores[i] - scores[j]).exp());
            lam[i] += rho * delta;
            lam[j] -= rho * delta;
            let w = rho * (1.0 - rho) * delta;
            hess[i] += w;
            hess[j] += w;
        }
    }
    (lam, hess)
}

/// Trains the trees on `queries` (already normalized) with `features` columns.
pub fn fit(target: Target, queries: &[Query], features: usize, p: &Params) -> Vec<Tree> {
    let rows: Vec<Vec<f64>> = queries.iter().flat_map(|q| q.features.clone()).collect();
    let sorted = tree::presort(&rows, features);
    let limits = Limits {
        leaves: p.leaves,
        depth: p.depth,
        min_leaf: p.min_leaf,
    };
    let mut scores = vec![0.0; rows.len()];
    let mut trees = Vec::with_capacity(p.trees);
    for _ in 0..p.trees {
        let (mut grad, mut hess) = (
            Vec::with_capacity(rows.len()),
            Vec::with_capacity(rows.len()),
        );
        let mut at = 0;
        for q in queries {
            let n = q.labels.len();
            let (l, h) = lambdas(target, q, &scores[at..at + n]);
            grad.extend(l);
            hess.extend(h);
            at += n;
        }
        let t = tree::fit(&rows, &sorted, &grad, &hess, limits);
        for (s, x) in scores.iter_mut().zip(&rows) {
            *s += p.shrinkage * t.predict(x);
        }
        trees.push(t);
    }
    trees
}

#[cfg(test)]
mod tests {
    use super::super::tests::query;
    use super::super::{evaluate, mean_measure};
    use super::*;

    /// Grades [2, 0, 1], every score 0, so the ranking is rows 0, 1, 2 (tie key) and ρ = ½.
    /// By hand (ideal DCG@3 = 2 + 1/log2 3 = 2.630930):
    /// Δ(0,1) = 2·(1 − 1/log2 3)/2.630930 = 0.280563; Δ(0,2) = 1·(1 − ½)/2.630930 = 0.190047;
    /// Δ(2,1) = 1·|½ − 1/log2 3|/2.630930 = 0.049766.
    /// λ0 = ½(0.280563 + 0.190047) = 0.235305; λ1 = −½(0.280563 + 0.049766) = −0.165164;
    /// λ2 = ½(0.049766 − 0.190047) = −0.070141; hessians ¼ of the Δ sums: 0.117652,
    /// 0.082582, 0.059953.
    #[test]
    fn lambdas_of_a_three_document_query_match_the_hand_computation() {
        let q = query(&[&[0.0], &[0.0], &[0.0]], &[2.0, 0.0, 1.0]);
        let (l, h) = lambdas(Target::Ndcg(3), &q, &[0.0; 3]);
        let want_l = [0.235_304_7, -0.165_164_1, -0.070_140_7];
        let want_h = [0.117_652_4, 0.082_582_0, 0.059_953_1];
        for i in 0..3 {
            assert!((l[i] - want_l[i]).abs() < 1e-6, "λ{i} {}", l[i]);
            assert!((h[i] - want_h[i]).abs() < 1e-6, "h{i} {}", h[i]);
        }
        // Lambdas are a zero-sum exchange between pairs.
        assert!(l.iter().sum::<f64>().abs() < 1e-12);
    }

    /// RR with the relevant row at rank 3 of 3, every score 0: swapping it with rank 1 moves
    /// RR from 1/3 to 1 (Δ = 2/3), with rank 2 to 1/2 (Δ = 1/6). λ2 = ½(2/3 + 1/6) = 5/12.
    #[test]
    fn rr_lambdas_match_the_hand_computation() {
        let q = query(&[&[0.0], &[0.0], &[0.0]], &[0.0, 0.0, 1.0]);
        let (l, _) = lambdas(Target::Mrr(10), &q, &[0.0; 3]);
        assert!((l[2] - 5.0 / 12.0).abs() < 1e-12, "{l:?}");
        assert!((l[0] + 1.0 / 3.0).abs() < 1e-12 && (l[1] + 1.0 / 12.0).abs() < 1e-12);
    }

    /// On data whose grade is a step function of feature 1 (feature 0 is noise), the trees
    /// must rank every query perfectly (nDCG 1), and training twice gives the same trees.
    #[test]
    fn lambdamart_learns_a_step_and_repeats_itself() {
        let qs: Vec<Query> = (0..20)
            .map(|i| {
                let rows: Vec<Vec<f64>> = (0..6)
                    .map(|d| {
                        vec![
                            ((i * 7 + d * 3) % 5) as f64,
                            (d as f64) * 0.1 + i as f64 * 0.001,
                        ]
                    })
                    .collect();
                let refs: Vec<&[f64]> = rows.iter().map(|r| r.as_slice()).collect();
                let labels: Vec<f64> = (0..6)
                    .map(|d| if d >= 4 { (d - 3) as f64 } else { 0.0 })
                    .collect();
                query(&refs, &labels)
            })
            .collect();
        let p = Params {
            trees: 20,
            min_leaf: 1,
            ..Params::default()
        };
        let t = fit(Target::Ndcg(5), &qs, 2, &p);
        let score = |x: &[f64]| t.iter().map(|t| 0.1 * t.predict(x)).sum::<f64>();
        assert_eq!(mean_measure(Target::Ndcg(5), &qs, score), 1.0);
        assert!(
            evaluate(Target::Ndcg(5), &qs[0], &[0.0; 6]) < 1.0,
            "untrained order is not ideal"
        );
        assert_eq!(fit(Target::Ndcg(5), &qs, 2, &p), t);
    }
}
