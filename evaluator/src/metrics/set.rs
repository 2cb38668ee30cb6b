//! The set measures: the ranking read as an unordered set of `num_ret` documents.
//! `set_P`, `set_relative_P`, `set_recall`, `set_map` (relevant retrieved² / (retrieved ·
//! relevant)), `set_F`, `utility`.

use super::QueryView;

fn rel_ret(q: &QueryView<'_>) -> usize {
    q.relevant_hits().count()
}

/// Relevant retrieved / retrieved.
pub(super) fn set_p(q: &QueryView<'_>) -> f64 {
    if q.num_ret == 0 {
        return 0.0;
    }
    rel_ret(q) as f64 / q.num_ret as f64
}

/// Relevant retrieved / min(retrieved, relevant).
pub(super) fn set_relative_p(q: &QueryView<'_>) -> f64 {
    let denom = q.num_ret.min(q.judgments.num_rel);
    if denom == 0 {
        return 0.0;
    }
    rel_ret(q) as f64 / denom as f64
}

/// Relevant retrieved / relevant.
pub(super) fn set_recall(q: &QueryView<'_>) -> f64 {
    if q.judgments.num_rel == 0 {
        return 0.0;
    }
    rel_ret(q) as f64 / q.judgments.num_rel as f64
}

/// Relevant retrieved² / (retrieved · relevant), 0 when either is 0. Equal to set_P · set_recall
/// in exact arithmetic, but computed as trec_eval 10.0 computes it (one division of the two
/// products, `m_set_map.c`), so that the last printed digit agrees: 7 of 8 relevant in 20
/// retrieved is 49 / 160 = 0.30625, whose nearest double lies above the tie and prints 0.3063,
/// where 0.35 · 0.875 lands just below it and prints 0.3062.
pub(super) fn set_map(q: &QueryView<'_>) -> f64 {
    let rel = q.judgments.num_rel;
    if q.num_ret == 0 || rel == 0 {
        return 0.0;
    }
    let rr = rel_ret(q) as f64;
    (rr * rr) / (q.num_ret as f64 * rel as f64)
}

/// (β² + 1) · P · R / (β² · P + R), 0 when nothing relevant was retrieved.
pub(super) fn set_f(q: &QueryView<'_>) -> f64 {
    let (p, r) = (set_p(q), set_recall(q));
    let b2 = q.params.set_f_beta * q.params.set_f_beta;
    if p + r == 0.0 {
        return 0.0;
    }
    (b2 + 1.0) * p * r / (b2 * p + r)
}

/// a·rel_ret + b·nonrel_ret + c·rel_not_ret + d·nonrel_not_ret (trec_eval's defaults 1, -1,
/// 0, 0; nonrel_not_ret needs `-N`).
pub(super) fn utility(q: &QueryView<'_>) -> f64 {
    let [a, b, c, d] = q.params.utility;
    let rr = rel_ret(q) as f64;
    let ret = q.num_ret as f64;
    let rel = q.judgments.num_rel as f64;
    a * rr
        + b * (ret - rr)
        + c * (rel - rr)
        + d * (q.params.num_docs_in_coll as f64 - ret - rel + rr)
}
