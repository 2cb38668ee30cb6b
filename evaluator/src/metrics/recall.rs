//! `recall_k`: recall at cutoff k.

use super::precision::relevant_in_top;
use super::QueryView;

/// Relevant documents in the top `k` divided by all relevant judgments of the query (trec_eval:
/// the denominator is not capped at `k`, so recall@5 of a query with 10 relevant documents is at
/// most 0.5). 0 for a query without relevant judgments.
pub(super) fn recall_at(q: &QueryView<'_>, k: usize) -> f64 {
    if q.judgments.num_rel == 0 {
        return 0.0;
    }
    relevant_in_top(q, k) as f64 / q.judgments.num_rel as f64
}
