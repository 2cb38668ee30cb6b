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
