//! Interpolation of a reranker with the first stage over a shortlist: a reranker that keeps the
//! first stage's evidence instead of throwing it away.
//!
//! Over the shortlist's `w` hits (the first `w` of the first-stage list), both the first-stage
//! scores and the reranker's scores are normalized on their own by one [`Normalize`] (over those
//! `w` hits only, as [`super::weighted::normalize`] does over a list), and each hit scores
//! `α · reranker + (1 − α) · first stage`, added up in f64 (reranker first) and stored as f32.
//! The shortlist is then in the total order of [`crate::ranking`] (score descending, then id
//! descending). `α = 1` orders the shortlist by the reranker alone (its ties broken by id rather
//! than by first-stage position), `α = 0` by the first stage alone. Documents below the shortlist
//! are not touched here: the caller keeps them after it, in first-stage order.

use super::weighted::{combine, normalize, table, Normalize};
use crate::ranking::{cmp_ranked, Hit};

/// One hit of an interpolated shortlist.
#[derive(Debug, Clone, PartialEq)]
pub struct Interpolated {
    /// The first-stage hit with `score` replaced by the interpolated score.
    pub hit: Hit,
    /// The reranker's raw score of the hit.
    pub rerank_score: f32,
}

/// The shortlist `head` (first-stage hits, in first-stage order) with the reranker's scores
/// `rerank` (`rerank[i]` belongs to `head[i]`), interpolated with weight `alpha` on the
/// reranker, in the total order. `id_rank` as in [`cmp_ranked`].
pub fn interpolate(
    head: &[Hit],
    rerank: &[f32],
    alpha: f64,
    how: Normalize,
    id_rank: &[u32],
) -> Vec<Interpolated> {
    assert_eq!(head.len(), rerank.len(), "one reranker score per hit");
    let w = head.len();
    let first = normalize(head, w, how);
    // The reranker's list in its own ranking order (what `rank` normalization counts on).
    let mut by_rerank: Vec<Hit> = head
        .iter()
        .zip(rerank)
        .map(|(h, &s)| Hit {
            doc: h.doc,
            score: s,
            section: h.section,
        })
        .collect();
    by_rerank.sort_by(|a, b| cmp_ranked(a, b, id_rank));
    let second = normalize(&by_rerank, w, how);
    let n_docs = head.iter().map(|h| h.doc + 1).max().unwrap_or(0);
    let fused = combine(
        &table(&[&second, &first], n_docs),
        &[alpha, 1.0 - alpha],
        id_rank,
    );
    fused
        .into_iter()
        .map(|hit| {
            let i = head
                .iter()
                .position(|h| h.doc == hit.doc)
                .expect("a fused document comes from the shortlist");
            Interpolated {
                hit: Hit {
                    section: head[i].section,
                    ..hit
                },
                rerank_score: rerank[i],
            }
        })
        .collect()
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

    const RANKS: [u32; 4] = [0, 1, 2, 3];

    fn order(v: &[Interpolated]) -> Vec<(usize, f32, f32)> {
        v.iter()
            .map(|i| (i.hit.doc, i.hit.score, i.rerank_score))
            .collect()
    }

    /// By hand. First stage d0 10, d1 6, d2 2 -> minmax 1, 0.5, 0. Reranker logits d0 −5,
    /// d1 1, d2 −1 -> minmax (x + 5) / 6: 0, 1, 4/6.
    /// α = 0.5: d0 0.5·0 + 0.5·1 = 0.5, d1 0.5 + 0.25 = 0.75, d2 1/3 + 0 = 0.3333 -> d1 d0 d2.
    /// α = 0.8: d0 0.2, d1 0.8 + 0.1 = 0.9, d2 0.5333 -> d1 d2 d0.
    #[test]
    fn minmax_interpolation_by_hand() {
        let head = [hit(0, 10.0), hit(1, 6.0), hit(2, 2.0)];
        let logits = [-5.0, 1.0, -1.0];
        let half = interpolate(&head, &logits, 0.5, Normalize::Minmax, &RANKS);
        assert_eq!(
            order(&half),
            [
                (1, 0.75, 1.0),
                (0, 0.5, -5.0),
                (2, (1.0f64 / 3.0) as f32, -1.0)
            ]
        );
        let more = interpolate(&head, &logits, 0.8, Normalize::Minmax, &RANKS);
        let docs: Vec<usize> = more.iter().map(|i| i.hit.doc).collect();
        assert_eq!(docs, [1, 2, 0]);
        assert!((more[1].hit.score as f64 - (0.8 * 4.0 / 6.0)).abs() < 1e-6);
        assert!((more[2].hit.score - 0.2).abs() < 1e-6);
        // Sections stay the first stage's.
        assert_eq!(more[0].hit.section, 10);
    }

    /// α = 0 is the first stage's order, α = 1 the reranker's; equal scores break on the id,
    /// descending (d3 before d2).
    #[test]
    fn the_ends_and_ties() {
        let head = [hit(0, 4.0), hit(1, 3.0), hit(2, 2.0), hit(3, 1.0)];
        let logits = [0.0, 2.0, 5.0, 5.0];
        let first = interpolate(&head, &logits, 0.0, Normalize::Minmax, &RANKS);
        assert_eq!(
            first.iter().map(|i| i.hit.doc).collect::<Vec<_>>(),
            [0, 1, 2, 3]
        );
        let second = interpolate(&head, &logits, 1.0, Normalize::Minmax, &RANKS);
        assert_eq!(
            second.iter().map(|i| i.hit.doc).collect::<Vec<_>>(),
            [3, 2, 1, 0]
        );
    }

    /// `rank` normalization over the shortlist, by hand: first stage ranks d0 1, d1 2, d2 3 ->
    /// 1, 2/3, 1/3; reranker d2 > d1 > d0 -> d2 1, d1 2/3, d0 1/3. α = 0.25:
    /// d0 0.25/3 + 0.75 = 0.8333, d1 2/3, d2 0.25 + 0.25 = 0.5.
    #[test]
    fn rank_normalization_by_hand() {
        let head = [hit(0, 9.0), hit(1, 8.0), hit(2, 7.0)];
        let v = interpolate(&head, &[1.0, 2.0, 3.0], 0.25, Normalize::Rank, &RANKS);
        let want = [
            (0, 0.25 / 3.0 + 0.75),
            (1, 0.25 * 2.0 / 3.0 + 0.75 * 2.0 / 3.0),
            (2, 0.25 + 0.75 / 3.0),
        ];
        assert_eq!(v.len(), 3);
        for (i, (doc, score)) in v.iter().zip(want) {
            assert_eq!(i.hit.doc, doc);
            assert!(
                (i.hit.score as f64 - score).abs() < 1e-6,
                "{doc}: {}",
                i.hit.score
            );
        }
    }
}
