//! `unj_k` (trec_eval: unjudged documents in the top k / k) and ranklab's `Judged@k`
//! (ir_measures: judged documents in the top k / k). A judgment of -1 or below (pooled, not
//! judged) counts as unjudged in both.

use super::QueryView;

fn judged_in_top(q: &QueryView<'_>, k: usize) -> usize {
    q.hits
        .iter()
        .take_while(|h| h.rank < k)
        .filter(|h| h.rel >= 0)
        .count()
}

pub(super) fn unjudged_at(q: &QueryView<'_>, k: usize) -> f64 {
    let unj = q.num_ret.min(k) - judged_in_top(q, k);
    unj as f64 / k as f64
}

pub(super) fn judged_at(q: &QueryView<'_>, k: usize) -> f64 {
    judged_in_top(q, k) as f64 / k as f64
}
