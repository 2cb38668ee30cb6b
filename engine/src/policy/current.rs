//! The current wiring: lifecycle and history read from the record at rank time and folded into
//! one [`FinalScore`]. `FinalScore` is the only number that orders the list; ties break on
//! recency (newer `updated_at` first; a record without a date counts as oldest), then on id
//! (descending, the total order of [`crate::ranking`]).

use std::cmp::Ordering;

use super::{normalized_scores, FinalScore, Weights};
use crate::corpus::{Corpus, Document, History, Lifecycle};
use crate::ranking::Hit;

/// `final = search_score - (lifecycle_penalty(lifecycle) + history_penalty(history))`.
pub fn rerank_cited_hits(
    search_score: f32,
    lifecycle: Lifecycle,
    history: History,
    weights: &Weights,
) -> FinalScore {
    FinalScore(
        search_score - (weights.lifecycle_penalty(lifecycle) + weights.history_penalty(history)),
    )
}

/// The tie-break after equal final scores: newer `updated_at` first, then id descending.
pub fn cmp_ties(a: &Document, b: &Document) -> Ordering {
    b.updated_at
        .cmp(&a.updated_at)
        .then_with(|| b.id.as_bytes().cmp(a.id.as_bytes()))
}

/// Re-ranks first-stage candidates (in first-stage order) under the current wiring; the
/// returned hits carry their final score. Reads each record's *current* lifecycle.
pub fn rank(corpus: &Corpus, candidates: &[Hit], weights: &Weights) -> Vec<Hit> {
    let norm = normalized_scores(candidates);
    let mut out: Vec<Hit> = candidates
        .iter()
        .zip(norm)
        .map(|(h, s)| {
            let d = &corpus.docs[h.doc];
            let f = rerank_cited_hits(s, d.lifecycle, d.history, weights);
            Hit {
                doc: h.doc,
                score: f.0,
                section: h.section,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        FinalScore(a.score)
            .cmp_desc(&FinalScore(b.score))
            .then_with(|| cmp_ties(&corpus.docs[a.doc], &corpus.docs[b.doc]))
    });
    out
}

#[cfg(test)]
mod tests {
    //! Oracle: scores computed by hand from the rule `final = normalized - (lifecycle + history
    //! penalty)`, with first-stage scores 9, 7, 5, 1 (normalized (s - 1) / 8 = 1, 0.75, 0.5, 0)
    //! and weights that are exact binary fractions, so every expected value is exact in f32.

    use super::*;
    use crate::policy::fixture::{corpus, doc, hits, ranked, W};

    #[test]
    fn penalties_come_off_the_normalized_score_and_ties_break_on_recency() {
        use crate::corpus::{History as H, Lifecycle as L};
        let c = corpus(vec![
            doc(
                "a",
                L::Deprecated,
                H::FirstClass,
                Some("2026-03-01"),
                &[],
                &[],
            ),
            doc("b", L::Active, H::Amendment, Some("2026-01-01"), &[], &[]),
            doc("c", L::Active, H::FirstClass, Some("2026-05-01"), &[], &[]),
            doc(
                "d",
                L::Superseded,
                H::EditorialOnly,
                Some("2026-09-01"),
                &[],
                &[],
            ),
        ]);
        let out = rank(&c, &hits(&[(0, 9.0), (1, 7.0), (2, 5.0), (3, 1.0)]), &W);
        // a: 1 - 0.5 = 0.5; b: 0.75 - 0.125 = 0.625; c: 0.5 - 0 = 0.5; d: 0 - 0.25 - 0.25 = -0.5.
        // a and c tie at 0.5: c is newer (May over March) and goes first, against the id order.
        assert_eq!(
            ranked(&c, &out),
            vec![("b", 0.625), ("c", 0.5), ("a", 0.5), ("d", -0.5)]
        );
    }

    #[test]
    fn equal_scores_and_dates_break_on_id_descending_and_no_date_counts_oldest() {
        use crate::corpus::{History as H, Lifecycle as L};
        let c = corpus(vec![
            doc("x", L::Active, H::FirstClass, Some("2026-02-02"), &[], &[]),
            doc("z", L::Active, H::FirstClass, Some("2026-02-02"), &[], &[]),
            doc("zz", L::Active, H::FirstClass, None, &[], &[]),
            doc("y", L::Active, H::FirstClass, Some("2026-02-02"), &[], &[]),
        ]);
        // Every score equal: all normalize to 1 (the flat case).
        let out = rank(&c, &hits(&[(0, 3.0), (1, 3.0), (2, 3.0), (3, 3.0)]), &W);
        assert_eq!(
            ranked(&c, &out),
            vec![("z", 1.0), ("y", 1.0), ("x", 1.0), ("zz", 1.0)]
        );
    }

    #[test]
    fn the_current_lifecycle_is_read_not_the_index_snapshot() {
        use crate::corpus::{History as H, Lifecycle as L};
        // Deprecated after its last update: the snapshot says active, the record says deprecated.
        let log = [("2026-03-01", L::Active), ("2026-07-01", L::Deprecated)];
        let c = corpus(vec![
            doc(
                "stale",
                L::Deprecated,
                H::FirstClass,
                Some("2026-03-01"),
                &[],
                &log,
            ),
            doc(
                "fresh",
                L::Active,
                H::FirstClass,
                Some("2026-07-01"),
                &[],
                &[],
            ),
        ]);
        // stale: 1 - 0.5 = 0.5; fresh: 0.75 (scores 9, 7, and a third candidate at 1).
        let c3 = corpus(
            c.docs
                .iter()
                .cloned()
                .chain([doc("other", L::Active, H::FirstClass, None, &[], &[])])
                .collect(),
        );
        let out = rank(&c3, &hits(&[(0, 9.0), (1, 7.0), (2, 1.0)]), &W);
        assert_eq!(
            ranked(&c3, &out),
            vec![("fresh", 0.75), ("stale", 0.5), ("other", 0.0)]
        );
        // With every weight zero the first stage alone decides.
        let out = rank(&c3, &hits(&[(0, 9.0), (1, 7.0), (2, 1.0)]), &Weights::ZERO);
        assert_eq!(
            ranked(&c3, &out),
            vec![("stale", 1.0), ("fresh", 0.75), ("other", 0.0)]
        );
    }
}
