//! `map`, `gm_map` and `map_cut_k`: (mean) average precision.

use super::QueryView;

/// Below this, trec_eval's geometric means clamp a value (`MIN_GEO_MEAN`).
pub(super) const MIN_GEO_MEAN: f64 = 0.00001;

/// Average precision: the sum of precision at the rank of each relevant retrieved document,
/// divided by all relevant judgments of the query (so relevant documents never retrieved count
/// as precision 0). 0 when nothing relevant was retrieved. Summed in rank order, as trec_eval
/// does, so the result is bit-for-bit trec_eval's.
pub(super) fn average_precision(q: &QueryView<'_>) -> f64 {
    average_precision_at(q, usize::MAX)
}

/// Average precision counting only relevant documents within the top `k` (`map_cut_k`).
pub(super) fn average_precision_at(q: &QueryView<'_>, k: usize) -> f64 {
    let mut rel_so_far = 0usize;
    let mut sum = 0.0;
    for h in q.relevant_hits().take_while(|h| h.rank < k) {
        rel_so_far += 1;
        sum += rel_so_far as f64 / (h.rank + 1) as f64;
    }
    if rel_so_far == 0 {
        return 0.0;
    }
    sum / q.judgments.num_rel as f64
}

/// `gm_map`'s per-query term: ln(max(AP, 0.00001)); the summary is exp of the mean.
pub(super) fn log_average_precision(q: &QueryView<'_>) -> f64 {
    average_precision(q).max(MIN_GEO_MEAN).ln()
}
