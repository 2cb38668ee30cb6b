//! `recip_rank` (trec_eval) and `recip_rank_cut_k` (RR@k, ranklab's own).

use super::QueryView;

/// 1 / rank of the first relevant document, looking at the whole ranking (trec_eval has no
/// cutoff here); 0 when no relevant document was retrieved.
pub(super) fn reciprocal_rank(q: &QueryView<'_>) -> f64 {
    match q.relevant_hits().next() {
        Some(h) => 1.0 / (h.rank + 1) as f64,
        None => 0.0,
    }
}

/// RR@k: like [`reciprocal_rank`] but 0 when the first relevant document is below rank `k`
/// (MS MARCO's "MRR@10"). Not a trec_eval measure.
pub(super) fn reciprocal_rank_at(q: &QueryView<'_>, k: usize) -> f64 {
    match q.relevant_hits().next() {
        Some(h) if h.rank < k => 1.0 / (h.rank + 1) as f64,
        _ => 0.0,
    }
}
