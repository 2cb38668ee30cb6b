//! ranklab's `ERR@k`: expected reciprocal rank (Chapelle et al., CIKM 2009) as gdeval and
//! ir_measures compute it: the probability that the user stops at rank r is
//! R_r · Π_{i<r} (1 - R_i) with R = (2^g - 1) / 2^4 (gdeval's maximum grade 4; negative
//! grades count 0). Not a trec_eval measure.

use super::QueryView;

pub(super) fn err_at(q: &QueryView<'_>, k: usize) -> f64 {
    let max = 2f64.powi(4);
    let mut not_stopped = 1.0;
    let mut sum = 0.0;
    for h in q.hits.iter().take_while(|h| h.rank < k) {
        if h.rel <= 0 {
            continue;
        }
        let r = (2f64.powi(h.rel) - 1.0) / max;
        sum += not_stopped * r / (h.rank + 1) as f64;
        not_stopped *= 1.0 - r;
    }
    sum
}
