//! `ndcg`, `ndcg_cut_k`, and ranklab's `nDCG(dcg=exp-log2)@k`: normalized discounted cumulative
//! gain, trec_eval style.
//!
//! Gain is the judgment value itself (linear, not `2^rel - 1`) unless `ndcg` is given
//! `level=gain` parameters; only positive gains enter the ideal ranking. The discount of rank r
//! (1-based) is `log2(r + 1)`. The ideal ranking is every judgment of the query, largest gain
//! first, whether retrieved or not. The relevance level plays no part. Sums run in rank order
//! like trec_eval's.

use super::gain::{GainWalk, Gains};
use super::QueryView;

/// Discount of the document at 0-based position `i`.
#[inline]
pub(super) fn discount(i: usize) -> f64 {
    ((i + 2) as f64).log2()
}

/// DCG of the retrieved ranking, counting documents at positions `< cut`.
fn dcg(q: &QueryView<'_>, cut: usize) -> f64 {
    let mut sum = 0.0;
    for h in q.hits.iter().take_while(|h| h.rank < cut) {
        if h.rel > 0 {
            sum += h.rel as f64 / discount(h.rank);
        }
    }
    sum
}

/// DCG of the ideal ranking, counting positions `< cut`.
fn ideal_dcg(q: &QueryView<'_>, cut: usize) -> f64 {
    let mut sum = 0.0;
    for (i, &g) in q.judgments.ideal_gains.iter().take(cut).enumerate() {
        sum += g as f64 / discount(i);
    }
    sum
}

/// nDCG over the whole ranking; 0 when the query has no positive gain.
pub(super) fn ndcg(q: &QueryView<'_>) -> f64 {
    if !q.params.ndcg_gains.is_empty() {
        return ndcg_gains(q, &q.params.ndcg_gains);
    }
    let ideal = ideal_dcg(q, usize::MAX);
    if ideal > 0.0 {
        dcg(q, usize::MAX) / ideal
    } else {
        0.0
    }
}

/// nDCG with a custom gain table: every retrieved document with a non-zero gain counts
/// (negative gains too), the ideal takes the positive gains.
fn ndcg_gains(q: &QueryView<'_>, pairs: &[(i32, f64)]) -> f64 {
    let gains = Gains::new(pairs, q.judgments);
    let mut results = 0.0;
    for h in q.hits {
        let g = gains.gain(h.rel);
        if g != 0.0 {
            results += g / discount(h.rank);
        }
    }
    let mut ideal = 0.0;
    for (i, g) in gains.ideal().into_iter().enumerate() {
        ideal += g / discount(i);
    }
    if ideal > 0.0 {
        results / ideal
    } else {
        0.0
    }
}

/// nDCG at `k`: DCG of the top `k` over the DCG of the ideal top `k`.
pub(super) fn ndcg_at(q: &QueryView<'_>, k: usize) -> f64 {
    let ideal = ideal_dcg(q, k);
    if ideal > 0.0 {
        dcg(q, k) / ideal
    } else {
        0.0
    }
}

/// nDCG at `k` with exponential gain `2^rel - 1` (gdeval's and ir_measures'
/// `nDCG(dcg=exp-log2)@k`); ranklab's own, not trec_eval's.
pub(super) fn ndcg_exp_at(q: &QueryView<'_>, k: usize) -> f64 {
    let gain = |rel: i32| 2f64.powi(rel) - 1.0;
    let mut results = 0.0;
    for h in q.hits.iter().take_while(|h| h.rank < k) {
        if h.rel > 0 {
            results += gain(h.rel) / discount(h.rank);
        }
    }
    let mut ideal = 0.0;
    for (i, &g) in q.judgments.ideal_gains.iter().take(k).enumerate() {
        ideal += gain(g) / discount(i);
    }
    if ideal > 0.0 {
        results / ideal
    } else {
        0.0
    }
}

/// `ndcg_rel`: nDCG averaged over the positions of the documents with positive gain; each
/// positive-gain judgment not retrieved contributes the final DCG over the ideal DCG.
pub(super) fn ndcg_rel(q: &QueryView<'_>) -> f64 {
    let gains = Gains::new(&q.params.ndcg_rel_gains, q.judgments);
    let ideal = gains.ideal();
    let mut walk = GainWalk::new(q, &gains);
    let (mut results_dcg, mut ideal_dcg) = (0.0, 0.0);
    let (mut sum, mut num_rel_ret) = (0.0, 0usize);
    for i in 0..q.num_ret {
        let g = walk.at(i);
        if g != 0.0 {
            results_dcg += g / discount(i);
        }
        if let Some(&ig) = ideal.get(i) {
            ideal_dcg += ig / discount(i);
        }
        if g > 0.0 {
            sum += results_dcg / ideal_dcg;
            num_rel_ret += 1;
        }
    }
    for (i, &ig) in ideal.iter().enumerate().skip(q.num_ret) {
        ideal_dcg += ig / discount(i);
    }
    let num_rel = ideal.len();
    if ideal_dcg > 0.0 {
        sum += (num_rel as f64 - num_rel_ret as f64) * results_dcg / ideal_dcg;
    }
    if sum > 0.0 {
        sum / num_rel as f64
    } else {
        0.0
    }
}

/// `Rndcg`: nDCG averaged at the R-level boundaries, the positions where the ideal gain
/// changes (and at the end of the ranking), as trec_eval walks them.
pub(super) fn rndcg(q: &QueryView<'_>) -> f64 {
    if q.judgments.num_rel == 0 {
        return 0.0;
    }
    let gains = Gains::new(&q.params.rndcg_gains, q.judgments);
    let ideal = gains.ideal();
    let ideal_at = |i: usize| ideal.get(i).copied().unwrap_or(0.0);
    let mut walk = GainWalk::new(q, &gains);
    let (mut results_dcg, mut ideal_dcg) = (0.0, 0.0);
    let (mut sum, mut changes) = (0.0, 0usize);
    let mut ideal_gain = gains.top();
    let mut old_ideal = ideal_gain;
    let mut i = 0;
    while i < q.num_ret && ideal_gain > 0.0 {
        let g = walk.at(i);
        ideal_gain = ideal_at(i);
        if old_ideal != ideal_gain {
            if ideal_dcg > 0.0 {
                sum += results_dcg / ideal_dcg;
                changes += 1;
            }
            old_ideal = ideal_gain;
        }
        if g != 0.0 {
            results_dcg += g / discount(i);
        }
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / discount(i);
        }
        i += 1;
    }
    if i < q.num_ret {
        while i < q.num_ret {
            let g = walk.at(i);
            if g != 0.0 {
                results_dcg += g / discount(i);
            }
            i += 1;
        }
        if ideal_dcg > 0.0 {
            sum += results_dcg / ideal_dcg;
            changes += 1;
        }
    }
    while ideal_gain > 0.0 {
        ideal_gain = ideal_at(i);
        if old_ideal != ideal_gain {
            if ideal_dcg > 0.0 {
                sum += results_dcg / ideal_dcg;
                changes += 1;
            }
            old_ideal = ideal_gain;
        }
        if ideal_gain > 0.0 {
            ideal_dcg += ideal_gain / discount(i);
        }
        i += 1;
    }
    if changes == 0 {
        return 0.0;
    }
    sum / changes as f64
}
