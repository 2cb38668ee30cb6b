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
