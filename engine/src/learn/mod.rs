//! Learning to rank over a feature matrix per (task, document): a linear model fitted by
//! coordinate ascent on the target measure ([`coordinate_ascent`], RankLib's method) and
//! gradient-boosted regression trees with the LambdaMART objective ([`lambdamart`], trees in
//! [`tree`]).
//!
//! Guarantees: training is a pure function of the data, the parameters and the seed. Every
//! sort has a total order (score descending with `total_cmp`, then the document's tie key
//! ascending, then its row); every sum runs over rows in a fixed order on one thread; so a
//! model and its JSON file are byte-identical on rerun, whatever the machine's thread count.
//!
//! The measures here are the ones trained on: nDCG@k with trec_eval's linear gain (the grade)
//! and 1/log2(rank + 1) discount, its ideal over every judged grade of the task (including
//! documents the candidates miss), and reciprocal rank of the first document graded above 0.

pub mod coordinate_ascent;
pub mod lambdamart;
pub mod tree;

use serde::{Deserialize, Serialize};

/// One task's candidates: a row of features per document, its grade, and its tie key.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// `features[row][feature]`.
    pub features: Vec<Vec<f64>>,
    /// The grade of each row (0 when unjudged).
    pub labels: Vec<f64>,
    /// Tie key of each row: among equal scores the smaller key ranks first.
    pub tie: Vec<u32>,
    /// Every grade the task's judgments hold above 0 (the ideal ranking's gains), whether or
    /// not a candidate carries it.
    pub ideal: Vec<f64>,
}

/// The measure trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Target {
    /// nDCG cut at k.
    Ndcg(usize),
    /// Reciprocal rank cut at k.
    Mrr(usize),
}

/// Rows of `scores` in ranking order: score descending (`total_cmp`), then tie key, then row.
pub fn order(scores: &[f64], tie: &[u32]) -> Vec<usize> {
    let mut rows: Vec<usize> = (0..scores.len()).collect();
    rows.sort_unstable_by(|&a, &b| {
        scores[b]
            .total_cmp(&scores[a])
            .then(tie[a].cmp(&tie[b]))
            .then(a.cmp(&b))
    });
    rows
}

/// 1 / log2(rank + 1) for a 1-based rank within the cut, 0 beyond it.
pub(crate) fn discount(rank: usize, k: usize) -> f64 {
    if rank == 0 || rank > k {
        0.0
    } else {
        1.0 / ((rank + 1) as f64).log2()
    }
}

/// The ideal DCG at k of a query (its judged grades sorted descending).
pub(crate) fn ideal_dcg(q: &Query, k: usize) -> f64 {
    let mut g = q.ideal.clone();
    g.sort_unstable_by(|a, b| b.total_cmp(a));
    g.iter()
        .enumerate()
        .map(|(i, &x)| x * discount(i + 1, k))
        .sum()
}

/// The target measure of query `q` ranked by `scores`.
pub fn evaluate(target: Target, q: &Query, scores: &[f64]) -> f64 {
    let ranked = order(scores, &q.tie);
    match target {
        Target::Ndcg(k) => {
            let ideal = ideal_dcg(q, k);
            if ideal <= 0.0 {
                return 0.0;
            }
            let dcg: f64 = ranked
                .iter()
                .enumerate()
                .map(|(i, &r)| q.labels[r].max(0.0) * discount(i + 1, k))
                .sum();
            dcg / ideal
        }
        Target::Mrr(k) => ranked
            .iter()
            .take(k)
            .position(|&r| q.labels[r] > 0.0)
            .map_or(0.0, |i| 1.0 / (i + 1) as f64),
    }
}

/// The mean of the target over `queries` scored by `score` (summed in query order).
pub fn mean_measure(target: Target, queries: &[Query], score: impl Fn(&[f64]) -> f64) -> f64 {
    if queries.is_empty() {
        return 0.0;
    }
    let mut sum = 0.0;
    for q in queries {
        let s: Vec<f64> = q.features.iter().map(|f| score(f)).collect();
        sum += evaluate(target, q, &s);
    }
    sum / queries.len() as f64
}

/// Per-feature z-score normalization fitted on the training rows (a constant feature keeps
/// scale 1), stored in the model so that a replay normalizes exactly as training did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Normalization {
    /// Mean of each feature over the training rows.
    pub mean: Vec<f64>,
    /// Standard deviation of each feature (1 when it is 0).
    pub scale: Vec<f64>,
}

impl Normalization {
    /// Fitted on every row of `queries` (summed in query, row order).
    pub fn fit(queries: &[Query], features: usize) -> Normalization {
        let mut n = 0usize;
        let mut sum = vec![0.0; features];
        for row in queries.iter().flat_map(|q| &q.features) {
            n += 1;
            for (s, x) in sum.iter_mut().zip(row) {
                *s += x;
            }
        }
        let mean: Vec<f64> = sum.iter().map(|s| s / n.max(1) as f64).collect();
        let mut sq = vec![0.0; features];
        for row in queries.iter().flat_map(|q| &q.features) {
            for ((s, x), m) in sq.iter_mut().zip(row).zip(&mean) {
                *s += (x - m) * (x - m);
            }
        }
        let scale = sq
            .iter()
            .map(|s| {
                let sd = (s / n.max(1) as f64).sqrt();
                if sd > 0.0 {
                    sd
                } else {
                    1.0
                }
            })
            .collect();
        Normalization { mean, scale }
    }

    /// `row` normalized.
    pub fn apply(&self, row: &[f64]) -> Vec<f64> {
        row.iter()
            .zip(&self.mean)
            .zip(&self.scale)
            .map(|((x, m), s)| (x - m) / s)
            .collect()
    }

    /// Every row of `queries` normalized.
    pub fn apply_all(&self, queries: &[Query]) -> Vec<Query> {
        queries
            .iter()
            .map(|q| Query {
                features: q.features.iter().map(|r| self.apply(r)).collect(),
                ..q.clone()
            })
            .collect()
    }
}

/// What a model computes from a normalized row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "method")]
pub enum Scorer {
    /// `Σ weight · feature`.
    CoordinateAscent {
        /// One weight per feature (their absolute values sum to 1).
        weights: Vec<f64>,
    },
    /// `Σ shrinkage · tree(row)`.
    Lambdamart {
        /// Each tree's output is multiplied by this.
        shrinkage: f64,
        /// The trees, in training order.
        trees: Vec<tree::Tree>,
    },
}

/// A trained model: the feature names it reads, their normalization, and its scorer. This is
/// the JSON model file `retriever: learned, model: FILE` reads (docs/formats.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Always `ranklab-learned-model/1`.
    pub format: String,
    /// Feature names, in column order.
    pub features: Vec<String>,
    /// The measure it was trained on.
    pub target: Target,
    /// Applied to a row before scoring.
    pub normalization: Normalization,
    /// The scorer.
    #[serde(flatten)]
    pub scorer: Scorer,
}

/// The model file format tag.
pub const FORMAT: &str = "ranklab-learned-model/1";

impl Model {
    /// The score of a raw (not yet normalized) row.
    pub fn score(&self, row: &[f64]) -> f64 {
        let x = self.normalization.apply(row);
        match &self.scorer {
            Scorer::CoordinateAscent { weights } => linear(weights, &x),
            Scorer::Lambdamart { shrinkage, trees } => {
                let mut s = 0.0;
                for t in trees {
                    s += shrinkage * t.predict(&x);
                }
                s
            }
        }
    }

    /// The model as JSON (pretty, a newline at the end): byte-identical for equal models.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a model serializes") + "\n"
    }
}

/// `Σ w·x` in feature order.
pub(crate) fn linear(w: &[f64], x: &[f64]) -> f64 {
    let mut s = 0.0;
    for (a, b) in w.iter().zip(x) {
        s += a * b;
    }
    s
}

/// A small seeded generator (splitmix64): the same seed gives the same stream everywhere.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// `0..n` shuffled (Fisher–Yates).
    pub(crate) fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (self.next_u64() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
        v
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A query of rows `f`, grades `labels`, tie keys by row, ideal from its own grades.
    pub(crate) fn query(f: &[&[f64]], labels: &[f64]) -> Query {
        Query {
            features: f.iter().map(|r| r.to_vec()).collect(),
            labels: labels.to_vec(),
            tie: (0..labels.len() as u32).collect(),
            ideal: labels.iter().copied().filter(|&g| g > 0.0).collect(),
        }
    }

    /// By hand: grades [2, 0, 1] ranked as rows 0, 1, 2: DCG = 2/1 + 0 + 1/2 = 2.5; ideal
    /// 2/1 + 1/log2(3) = 2.630930; nDCG@3 = 0.950234. RR = 1. Scores [0, 1, 0]: row 1 first,
    /// then rows 0 and 2 by tie key: RR = 1/2.
    #[test]
    fn measures_match_a_hand_computation() {
        let q = query(&[&[0.0], &[0.0], &[0.0]], &[2.0, 0.0, 1.0]);
        let v = evaluate(Target::Ndcg(3), &q, &[0.0, 0.0, 0.0]);
        assert!((v - 2.5 / (2.0 + 1.0 / 3f64.log2())).abs() < 1e-12, "{v}");
        assert!((v - 0.950_234).abs() < 1e-6);
        assert_eq!(evaluate(Target::Mrr(10), &q, &[0.0, 0.0, 0.0]), 1.0);
        assert_eq!(evaluate(Target::Mrr(10), &q, &[0.0, 1.0, 0.0]), 0.5);
        assert_eq!(evaluate(Target::Mrr(1), &q, &[0.0, 1.0, 0.0]), 0.0);
    }
}
