//! `success_k`: whether anything relevant made the top k.

use super::QueryView;

/// 1 when a relevant document is ranked within the top `k`, else 0.
pub(super) fn success_at(q: &QueryView<'_>, k: usize) -> f64 {
    match q.relevant_hits().next() {
        Some(h) if h.rank < k => 1.0,
        _ => 0.0,
    }
}
