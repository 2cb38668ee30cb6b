//! LEGACY wiring, kept on purpose: the old `rerank_cited_hits(query, hits)`.
//!
//! It is not dead code. It reproduces the bug of story 2 in `docs/` (a well-cited, stale how-to
//! outranks the decision record that deprecated it) so the paired tests can prove, forever, that
//! the legacy path shows the bug and the current path does not. Do not "fix" it.
//!
//! The legacy hit list comes from an index that reindexes a record only when its `updated_at`
//! changes: each hit's score was frozen at index time as the normalized first-stage score minus
//! the penalties of the record's *index snapshot* (its lifecycle as of `updated_at`, see
//! [`crate::corpus::Document::index_snapshot`]). The rerank then sees only the query and the hits:
//! it adds a citation boost ([`CITATION_BOOST`] per citing record, at most [`CITATION_CAP`]) and
//! sorts. A later lifecycle change that did not touch `updated_at` never reaches the score.

use super::{normalized_scores, Weights};
use crate::corpus::Corpus;
use crate::ranking::{sort_hits, Hit};

/// Boost per record that cites the hit.
pub const CITATION_BOOST: f32 = 0.05;
/// Largest total citation boost.
pub const CITATION_CAP: f32 = 0.25;

/// A hit as the legacy index returned it.
#[derive(Debug, Clone, PartialEq)]
pub struct CitedHit {
    /// Document index.
    pub doc: usize,
    /// The score frozen at index time (snapshot demotion baked in).
    pub indexed_score: f32,
    /// How many records cite it.
    pub citations: usize,
    /// Winning section.
    pub section: usize,
}

/// What the legacy index returns for first-stage candidates (in first-stage order).
pub fn index_hits(corpus: &Corpus, candidates: &[Hit], weights: &Weights) -> Vec<CitedHit> {
    let cites = corpus.citation_counts();
    candidates
        .iter()
        .zip(normalized_scores(candidates))
        .map(|(h, s)| {
            let d = &corpus.docs[h.doc];
            let frozen =
                weights.lifecycle_penalty(d.index_snapshot()) + weights.history_penalty(d.history);
            CitedHit {
                doc: h.doc,
                indexed_score: s - frozen,
                citations: cites[h.doc],
                section: h.section,
            }
        })
        .collect()
}

/// The legacy rerank: the query and the hits alone. Score = indexed score + citation boost;
/// ties by id descending.
pub fn rerank_cited_hits(_query: &str, hits: &[CitedHit], corpus: &Corpus) -> Vec<Hit> {
    let mut out: Vec<Hit> = hits
        .iter()
        .map(|h| Hit {
            doc: h.doc,
            score: h.indexed_score + (CITATION_BOOST * h.citations as f32).min(CITATION_CAP),
            section: h.section,
        })
        .collect();
    sort_hits(&mut out, |d| corpus.id(d));
    out
}

/// Convenience: index hits then rerank them, the whole legacy path.
pub fn rank(corpus: &Corpus, query: &str, candidates: &[Hit], weights: &Weights) -> Vec<Hit> {
    rerank_cited_hits(query, &index_hits(corpus, candidates, weights), corpus)
}

#[cfg(test)]
mod tests {
    //! Oracle: scores computed by hand from the legacy rule `indexed = normalized - penalties of
    //! the index snapshot; final = indexed + min(0.05 x citations, 0.25)`, first-stage scores
    //! 9, 7, 5, 1 (normalized 1, 0.75, 0.5, 0).

    use super::*;
    use crate::corpus::{History as H, Lifecycle as L};
    use crate::policy::fixture::{corpus, doc, hits, ranked, W};

    fn close(got: Vec<(&str, f32)>, want: &[(&str, f32)]) {
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, w) in got.iter().zip(want) {
            assert!(
                g.0 == w.0 && (g.1 - w.1).abs() < 1e-6,
                "{got:?} != {want:?}"
            );
        }
    }

    #[test]
    fn snapshot_penalties_and_the_capped_citation_boost() {
        let stale_log = [("2026-03-01", L::Active), ("2026-07-01", L::Deprecated)];
        let reindexed_log = [("2026-03-01", L::Active), ("2026-07-01", L::Deprecated)];
        let c = corpus(vec![
            // Deprecated after its last update: the snapshot says active, no penalty; cited by 6.
            doc(
                "a",
                L::Deprecated,
                H::FirstClass,
                Some("2026-03-01"),
                &["b"],
                &stale_log,
            ),
            doc(
                "b",
                L::Active,
                H::FirstClass,
                Some("2026-07-01"),
                &["a"],
                &[],
            ),
            // Deprecated and re-indexed on that day: the snapshot says deprecated.
            doc(
                "c",
                L::Deprecated,
                H::FirstClass,
                Some("2026-07-01"),
                &["a"],
                &reindexed_log,
            ),
            doc(
                "d",
                L::Active,
                H::Amendment,
                Some("2026-08-01"),
                &["a"],
                &[],
            ),
            doc("x1", L::Active, H::FirstClass, None, &["a", "d"], &[]),
            doc("x2", L::Active, H::FirstClass, None, &["a", "d"], &[]),
            doc("x3", L::Active, H::FirstClass, None, &["a"], &[]),
        ]);
        let first = hits(&[(0, 9.0), (1, 7.0), (2, 5.0), (3, 1.0)]);
        let indexed = index_hits(&c, &first, &W);
        let cites: Vec<usize> = indexed.iter().map(|h| h.citations).collect();
        assert_eq!(cites, vec![6, 1, 0, 2]);
        // a: 1 + min(0.30, 0.25) = 1.25; b: 0.75 + 0.05 = 0.80; c: 0.5 - 0.5 = 0;
        // d: 0 - 0.125 + 0.10 = -0.025.
        close(
            ranked(&c, &rank(&c, "q", &first, &W)),
            &[("a", 1.25), ("b", 0.80), ("c", 0.0), ("d", -0.025)],
        );
    }

    #[test]
    fn equal_legacy_scores_break_on_id_descending_without_recency() {
        let c = corpus(vec![
            doc(
                "old-z",
                L::Active,
                H::FirstClass,
                Some("2026-01-01"),
                &[],
                &[],
            ),
            doc(
                "new-a",
                L::Active,
                H::FirstClass,
                Some("2026-09-01"),
                &[],
                &[],
            ),
        ]);
        // Both normalize to 1 (flat), no citations: the id order alone, newer date ignored.
        let out = rank(&c, "q", &hits(&[(1, 2.0), (0, 2.0)]), &W);
        close(ranked(&c, &out), &[("old-z", 1.0), ("new-a", 1.0)]);
    }
}
