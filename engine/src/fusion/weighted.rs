//! Weighted fusion: a weighted sum of normalized scores, beside reciprocal rank fusion.
//!
//! Each list is cut to `depth` hits first and normalized on its own (per task, over those hits):
//! - `minmax`: `(s − min) / (max − min)`, 0 for every hit when `max = min`;
//! - `zscore`: `(s − mean) / sd`, `sd` the population standard deviation, 0 when `sd = 0`;
//! - `rank`: `1 − (r − 1) / n`, `r` the 1-based rank with equal scores sharing the best one
//!   (as in RRF) and `n` the list's length, so the first hit gets 1 and the last `1/n` or more.
//!
//! A document missing from a list gets that list's minimum normalized value (0 under `minmax`),
//! as if it were the list's last hit; an empty list gives 0. The fused score is
//! `Σ_lists weight · value`, added up in f64 in list order and stored as f32, and the result is in
//! the total order of [`crate::ranking`] (score descending, then id descending). A fused hit keeps
//! the section of the list that ranked it highest (the earlier list on equal positions), as RRF's
//! does. Scores are normalized once per list ([`Normalized`]) so that many weight vectors can be
//! tried on the same lists ([`combine`]) without normalizing again.

use serde::{Deserialize, Serialize};

use crate::ranking::{cmp_ranked, Hit};

/// How a list's scores are put on one scale before they are weighted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Normalize {
    /// `(s − min) / (max − min)`.
    Minmax,
    /// `(s − mean) / sd` (population sd).
    Zscore,
    /// `1 − (rank − 1) / n`.
    Rank,
}

impl Normalize {
    /// The name written in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            Normalize::Minmax => "minmax",
            Normalize::Zscore => "zscore",
            Normalize::Rank => "rank",
        }
    }
}

/// One list's normalized values.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// `(doc, value, section)` per hit, in the list's order.
    pub hits: Vec<(usize, f64, usize)>,
    /// The value of a document missing from the list (the smallest value, 0 when empty).
    pub floor: f64,
}

/// The first `depth` hits of `list` (in ranking order), normalized by `how`.
pub fn normalize(list: &[Hit], depth: usize, how: Normalize) -> Normalized {
    let list = &list[..list.len().min(depth)];
    if list.is_empty() {
        return Normalized {
            hits: Vec::new(),
            floor: 0.0,
        };
    }
    let s: Vec<f64> = list.iter().map(|h| h.score as f64).collect();
    let n = s.len() as f64;
    let values: Vec<f64> = match how {
        Normalize::Minmax => {
            let lo = s.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            s.iter()
                .map(|&x| if hi > lo { (x - lo) / (hi - lo) } else { 0.0 })
                .collect()
        }
        Normalize::Zscore => {
            let mean = s.iter().sum::<f64>() / n;
            let sd = (s.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n).sqrt();
            s.iter()
                .map(|&x| if sd > 0.0 { (x - mean) / sd } else { 0.0 })
                .collect()
        }
        Normalize::Rank => {
            let mut rank = 0usize;
            (0..s.len())
                .map(|i| {
                    if i == 0 || s[i] != s[i - 1] {
                        rank = i + 1;
                    }
                    1.0 - (rank as f64 - 1.0) / n
                })
                .collect()
        }
    };
    let floor = values.iter().copied().fold(f64::INFINITY, f64::min);
    Normalized {
        hits: list
            .iter()
            .zip(values)
            .map(|(h, v)| (h.doc, v, h.section))
            .collect(),
        floor,
    }
}

/// Every document of `lists` (in order of first appearance, lists in order) with, per list, its
/// value (the list's floor when absent) and the section of its best position.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Document ordinals.
    pub docs: Vec<usize>,
    /// `values[l][j]`: list `l`'s value of `docs[j]`.
    pub values: Vec<Vec<f64>>,
    /// The section each document keeps.
    pub sections: Vec<usize>,
}

/// The [`Table`] of normalized lists; `n_docs` bounds the document ordinals.
pub fn table(lists: &[&Normalized], n_docs: usize) -> Table {
    // doc -> (slot, best position)
    let mut slot: Vec<(usize, usize)> = vec![(usize::MAX, usize::MAX); n_docs];
    let mut docs = Vec::new();
    let mut sections = Vec::new();
    for list in lists {
        for (pos, &(doc, _, section)) in list.hits.iter().enumerate() {
            let e = &mut slot[doc];
            if e.0 == usize::MAX {
                *e = (docs.len(), pos);
                docs.push(doc);
                sections.push(section);
            } else if pos < e.1 {
                e.1 = pos;
                sections[e.0] = section;
            }
        }
    }
    let values = lists
        .iter()
        .map(|list| {
            let mut v = vec![list.floor; docs.len()];
            for &(doc, value, _) in &list.hits {
                v[slot[doc].0] = value;
            }
            v
        })
        .collect();
    Table {
        docs,
        values,
        sections,
    }
}

/// The fused ranking of `table` under `weights` (one per list), in the total order.
pub fn combine(table: &Table, weights: &[f64], id_rank: &[u32]) -> Vec<Hit> {
    let mut hits: Vec<Hit> = (0..table.docs.len())
        .map(|j| {
            let mut sum = 0.0f64;
            for (values, w) in table.values.iter().zip(weights) {
                sum += w * values[j];
            }
            Hit {
                doc: table.docs[j],
                score: sum as f32,
                section: table.sections[j],
            }
        })
        .collect();
    hits.sort_unstable_by(|a, b| cmp_ranked(a, b, id_rank));
    hits
}

/// Weighted fusion of ranked lists (each in ranking order), one weight per list.
pub fn weighted_ranked(
    lists: &[&[Hit]],
    weights: &[f64],
    how: Normalize,
    depth: usize,
    id_rank: &[u32],
) -> Vec<Hit> {
    let normalized: Vec<Normalized> = lists.iter().map(|l| normalize(l, depth, how)).collect();
    let refs: Vec<&Normalized> = normalized.iter().collect();
    combine(&table(&refs, id_rank.len()), weights, id_rank)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(doc: usize, score: f32) -> Hit {
        Hit {
            doc,
            score,
            section: doc * 10,
        }
    }

    /// Ids d0..d4 are in byte order, so each document's id rank is its ordinal.
    const RANKS: [u32; 5] = [0, 1, 2, 3, 4];

    #[test]
    fn minmax_by_hand() {
        // scores 5, 3, 1: (5-1)/4 = 1, (3-1)/4 = 0.5, 0.
        let n = normalize(
            &[hit(0, 5.0), hit(1, 3.0), hit(2, 1.0)],
            100,
            Normalize::Minmax,
        );
        let v: Vec<f64> = n.hits.iter().map(|h| h.1).collect();
        assert_eq!(v, [1.0, 0.5, 0.0]);
        assert_eq!(n.floor, 0.0);
        // One hit, or equal scores: max = min, every value 0.
        let n = normalize(&[hit(0, 2.0), hit(1, 2.0)], 100, Normalize::Minmax);
        assert_eq!(n.hits.iter().map(|h| h.1).collect::<Vec<_>>(), [0.0, 0.0]);
    }

    #[test]
    fn zscore_by_hand() {
        // scores 4, 2, 0: mean 2, population sd sqrt(8/3) = 1.632993; values ±1.224745, 0.
        let n = normalize(
            &[hit(0, 4.0), hit(1, 2.0), hit(2, 0.0)],
            100,
            Normalize::Zscore,
        );
        let sd = (8.0f64 / 3.0).sqrt();
        assert!((n.hits[0].1 - 2.0 / sd).abs() < 1e-12);
        assert_eq!(n.hits[1].1, 0.0);
        assert!((n.hits[2].1 + 1.224_744_871).abs() < 1e-9);
        assert!((n.floor + 1.224_744_871).abs() < 1e-9);
    }

    #[test]
    fn rank_by_hand_with_shared_ranks() {
        // scores 9, 7, 7, 1 (n = 4): ranks 1, 2, 2, 4 -> 1, 0.75, 0.75, 0.25.
        let l = [hit(0, 9.0), hit(1, 7.0), hit(2, 7.0), hit(3, 1.0)];
        let n = normalize(&l, 100, Normalize::Rank);
        let v: Vec<f64> = n.hits.iter().map(|h| h.1).collect();
        assert_eq!(v, [1.0, 0.75, 0.75, 0.25]);
        assert_eq!(n.floor, 0.25);
    }

    #[test]
    fn depth_cuts_before_normalizing() {
        // Only 5 and 3 take part: 3 is now the minimum.
        let n = normalize(
            &[hit(0, 5.0), hit(1, 3.0), hit(2, 1.0)],
            2,
            Normalize::Minmax,
        );
        assert_eq!(n.hits.len(), 2);
        assert_eq!(n.hits[1].1, 0.0);
    }

    #[test]
    fn weighted_sum_by_hand_missing_gets_the_minimum() {
        // lexical: d0 10, d1 6, d2 2      -> minmax 1, 0.5, 0      (d3 missing -> 0)
        // semantic: d3 0.9, d1 0.5, d0 0.1 -> minmax 1, 0.5, 0     (d2 missing -> 0)
        // 0.3·lex + 0.7·sem: d0 0.3, d1 0.15 + 0.35 = 0.5, d2 0, d3 0.7.
        let lex = [hit(0, 10.0), hit(1, 6.0), hit(2, 2.0)];
        let sem = [hit(3, 0.9), hit(1, 0.5), hit(0, 0.1)];
        let f = weighted_ranked(&[&lex, &sem], &[0.3, 0.7], Normalize::Minmax, 100, &RANKS);
        let got: Vec<(usize, f32)> = f.iter().map(|h| (h.doc, h.score)).collect();
        assert_eq!(got, [(3, 0.7), (1, 0.5), (0, 0.3), (2, 0.0)]);
        // Sections: d1 is 2nd in both lists, the earlier (lexical) one's section is kept.
        assert_eq!(f[1].section, 10);
        assert_eq!(f[0].section, 30);
    }

    #[test]
    fn ties_break_on_id_descending() {
        // Equal weights over mirrored lists: d0 and d1 both score 0.5 + 0 ... = 0.5; d1 first.
        let a = [hit(0, 2.0), hit(1, 1.0)];
        let b = [hit(1, 2.0), hit(0, 1.0)];
        let f = weighted_ranked(&[&a, &b], &[1.0, 1.0], Normalize::Minmax, 100, &RANKS);
        assert_eq!(f[0].score, f[1].score);
        assert_eq!((f[0].doc, f[1].doc), (1, 0));
    }

    #[test]
    fn zero_weights_keep_every_document_at_zero() {
        let a = [hit(0, 2.0), hit(4, 1.0)];
        let f = weighted_ranked(&[&a], &[0.0], Normalize::Minmax, 100, &RANKS);
        assert_eq!(f.iter().map(|h| h.doc).collect::<Vec<_>>(), [4, 0]);
    }
}
