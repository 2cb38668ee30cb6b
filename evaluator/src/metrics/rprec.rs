//! `Rprec` and `Rprec_mult_x`: precision after R (a multiple of R) documents, R = the number of
//! relevant judgments.

use super::precision::relevant_in_top;
use super::QueryView;

/// Precision after R documents; when fewer than R were retrieved, relevant retrieved / R.
pub(super) fn r_precision(q: &QueryView<'_>) -> f64 {
    let r = q.judgments.num_rel;
    let look_at = r.min(q.num_ret);
    if look_at == 0 {
        return 0.0;
    }
    let rel = q.relevant_hits().take_while(|h| h.rank < look_at).count();
    rel as f64 / r as f64
}

/// Precision after `(long)(mult · R + 0.9)` documents (trec_eval's rounding), counting missing
/// documents beyond the ranking as non-relevant. 0 when that cutoff is 0.
pub(super) fn r_precision_mult(q: &QueryView<'_>, mult: f64) -> f64 {
    let cut = (mult * q.judgments.num_rel as f64 + 0.9) as i64;
    if cut <= 0 {
        return 0.0;
    }
    let cut = cut as usize;
    relevant_in_top(q, cut) as f64 / cut as f64
}
