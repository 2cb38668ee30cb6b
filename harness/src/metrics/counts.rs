//! `num_ret`, `num_rel`, `num_rel_ret`: the counts trec_eval prints as integers and sums (rather
//! than averages) over queries.

use super::QueryView;

/// Documents retrieved for the query.
pub(super) fn num_ret(q: &QueryView<'_>) -> f64 {
    q.num_ret as f64
}

/// Relevant judgments of the query (judgment `>= rel_level`), retrieved or not.
pub(super) fn num_rel(q: &QueryView<'_>) -> f64 {
    q.judgments.num_rel as f64
}

/// Relevant documents retrieved, at any rank.
pub(super) fn num_rel_ret(q: &QueryView<'_>) -> f64 {
    q.relevant_hits().count() as f64
}
