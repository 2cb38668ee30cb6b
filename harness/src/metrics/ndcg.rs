//! `ndcg` and `ndcg_cut_k`: normalized discounted cumulative gain, trec_eval style.
//!
//! Gain is the judgment value itself (linear, not `2^rel - 1`); only positive judgments gain.
//! The discount of rank r (1-based) is `log2(r + 1)`. The ideal ranking is every positive
//! judgment of the query, largest first, whether retrieved or not. The relevance level plays no
//! part (trec_eval uses the raw judgment as gain). Sums run in rank order like trec_eval's.

use super::QueryView;

/// Discount of the document at 0-based position `i`.
#[inline]
fn discount(i: usize) -> f64 {
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

/// nDCG over the whole ranking; 0 when the query has no positive judgment.
pub(super) fn ndcg(q: &QueryView<'_>) -> f64 {
    let ideal = ideal_dcg(q, usize::MAX);
    if ideal > 0.0 {
        dcg(q, usize::MAX) / ideal
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
