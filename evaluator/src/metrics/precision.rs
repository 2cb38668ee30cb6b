//! `P_k` and `relative_P_k`: precision at a cutoff.

use super::QueryView;

/// Precision at `k`: relevant in the top `k` / `k`, even when fewer than `k` were retrieved.
pub(super) fn precision_at(q: &QueryView<'_>, k: usize) -> f64 {
    relevant_in_top(q, k) as f64 / k as f64
}

/// Relevant in the top `k` / min(`k`, relevant judgments): 1 is reachable at every cutoff.
pub(super) fn relative_precision_at(q: &QueryView<'_>, k: usize) -> f64 {
    let denom = k.min(q.judgments.num_rel);
    if denom == 0 {
        return 0.0;
    }
    relevant_in_top(q, k) as f64 / denom as f64
}

/// Relevant documents among the top `k`.
pub(super) fn relevant_in_top(q: &QueryView<'_>, k: usize) -> usize {
    q.relevant_hits().take_while(|h| h.rank < k).count()
}
