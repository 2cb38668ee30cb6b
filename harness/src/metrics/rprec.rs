//! `Rprec`: R-precision.

use super::QueryView;

/// Precision after R documents, R = the query's relevant judgments. As in trec_eval, when fewer
/// than R documents were retrieved only those are looked at, still divided by R.
pub(super) fn r_precision(q: &QueryView<'_>) -> f64 {
    let r = q.judgments.num_rel;
    let look_at = r.min(q.num_ret);
    if look_at == 0 {
        return 0.0;
    }
    let rel = q.relevant_hits().take_while(|h| h.rank < look_at).count();
    rel as f64 / r as f64
}
