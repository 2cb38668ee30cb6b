//! `P_k`: precision at cutoff k.

use super::QueryView;

/// Relevant documents in the top `k` divided by `k`. As in trec_eval, a ranking shorter than `k`
/// is padded with non-relevant documents: the denominator is always `k`.
pub(super) fn precision_at(q: &QueryView<'_>, k: usize) -> f64 {
    relevant_in_top(q, k) as f64 / k as f64
}

/// Relevant documents ranked within the top `k`.
pub(super) fn relevant_in_top(q: &QueryView<'_>, k: usize) -> usize {
    q.relevant_hits().take_while(|h| h.rank < k).count()
}
