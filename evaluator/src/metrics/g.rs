//! `G` and `binG`: trec_eval's experimental gain measures (2008).
//!
//! `binG`: the mean over relevant judgments of 1 / log2(2 + non-relevant retrieved above).
//! `G`: each retrieved document contributes gain / log2(2 + ideal cost so far - gain so far),
//! where the ideal cost adds max(ideal gain, 1) per position; normalized by the ideal's total
//! gain.

use super::gain::{GainWalk, Gains};
use super::QueryView;

pub(super) fn bin_g(q: &QueryView<'_>) -> f64 {
    let mut rel_so_far = 0usize;
    let mut sum = 0.0;
    for h in q.relevant_hits() {
        rel_so_far += 1;
        sum += 1.0 / ((3 + h.rank - rel_so_far) as f64).log2();
    }
    if rel_so_far == 0 {
        return 0.0;
    }
    sum / q.judgments.num_rel as f64
}

pub(super) fn g(q: &QueryView<'_>) -> f64 {
    let gains = Gains::new(&q.params.g_gains, q.judgments);
    let ideal = gains.ideal();
    let mut walk = GainWalk::new(q, &gains);
    let (mut sum_results, mut sum_cost, mut results_g) = (0.0, 0.0, 0.0);
    for i in 0..q.num_ret {
        let g = walk.at(i);
        sum_results += g;
        sum_cost += ideal.get(i).copied().unwrap_or(0.0).max(1.0);
        if g != 0.0 {
            results_g += g / (2.0 + sum_cost - sum_results).log2();
        }
    }
    let sum_ideal: f64 = ideal.iter().sum();
    if sum_ideal > 0.0 {
        results_g / sum_ideal
    } else {
        0.0
    }
}
