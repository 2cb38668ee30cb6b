//! `num_ret`, `num_rel`, `num_rel_ret`, `num_nonrel_judged_ret`: counts, summed (not averaged)
//! over queries.

use super::QueryView;

/// Documents retrieved.
pub(super) fn num_ret(q: &QueryView<'_>) -> f64 {
    q.num_ret as f64
}

/// Relevant judgments of the query, retrieved or not.
pub(super) fn num_rel(q: &QueryView<'_>) -> f64 {
    q.judgments.num_rel as f64
}

/// Relevant documents retrieved.
pub(super) fn num_rel_ret(q: &QueryView<'_>) -> f64 {
    q.relevant_hits().count() as f64
}

/// Retrieved documents judged (judgment >= 0) but below the relevance level.
pub(super) fn num_nonrel_judged_ret(q: &QueryView<'_>) -> f64 {
    q.hits
        .iter()
        .filter(|h| h.rel >= 0 && h.rel < q.rel_level)
        .count() as f64
}
