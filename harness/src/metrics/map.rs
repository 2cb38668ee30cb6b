//! `map`: (mean) average precision.

use super::QueryView;

/// Average precision: the sum of precision at the rank of each relevant retrieved document,
/// divided by all relevant judgments of the query (so relevant documents never retrieved count
/// as precision 0). 0 when nothing relevant was retrieved. Summed in rank order, as trec_eval
/// does, so the result is bit-for-bit trec_eval's.
pub(super) fn average_precision(q: &QueryView<'_>) -> f64 {
    let mut rel_so_far = 0usize;
    let mut sum = 0.0;
    for h in q.relevant_hits() {
        rel_so_far += 1;
        sum += rel_so_far as f64 / (h.rank + 1) as f64;
    }
    if rel_so_far == 0 {
        return 0.0;
    }
    sum / q.judgments.num_rel as f64
}
