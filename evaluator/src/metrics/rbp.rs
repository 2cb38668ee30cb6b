//! `rbp` and `rbp_resid`: rank-biased precision (Moffat & Zobel, TOIS 2008), trec_eval's form,
//! and ranklab's ir_measures-style `RBP(p=…)`.
//!
//! rbp = (1 - p) · Σ gain(rank i) · p^i with gains rescaled into [0, 1] when some lie outside
//! (trec_eval's default p = 0.9, ir_measures' 0.8). rbp_resid is the most RBP could still grow if
//! every unjudged retrieved document were relevant and the ranking went on with relevant
//! documents: p^n + (1 - p) · Σ_{unjudged i} p^i (p fixed at 0.9), 0 when all are judged.

use super::gain::{GainWalk, Gains};
use super::QueryView;

/// trec_eval's `rbp` at persistence `p` with the gains of `rbp`'s parameters.
pub(super) fn rbp(q: &QueryView<'_>, p: f64) -> f64 {
    let mut gains = Gains::new(&q.params.rbp_gains, q.judgments);
    gains.normalize_unit();
    let mut walk = GainWalk::new(q, &gains);
    let (mut sum, mut cur_p) = (0.0, 1.0);
    for i in 0..q.num_ret {
        let g = walk.at(i);
        if g != 0.0 {
            sum += g * cur_p;
        }
        cur_p *= p;
    }
    (1.0 - p) * sum
}

/// ir_measures' RBP: binary gain (relevant at the level), persistence `p`.
pub(super) fn rbp_binary(q: &QueryView<'_>, p: f64) -> f64 {
    let mut sum = 0.0;
    for h in q.relevant_hits() {
        sum += p.powi(h.rank as i32);
    }
    (1.0 - p) * sum
}

pub(super) fn rbp_resid(q: &QueryView<'_>) -> f64 {
    let p = 0.9;
    let mut next = 0usize;
    let (mut unjudged, mut sum, mut cur_p) = (0usize, 0.0, 1.0);
    for i in 0..q.num_ret {
        while next < q.hits.len() && q.hits[next].rank < i {
            next += 1;
        }
        let judged = matches!(q.hits.get(next), Some(h) if h.rank == i && h.rel >= 0);
        if !judged {
            unjudged += 1;
            sum += cur_p;
        }
        cur_p *= p;
    }
    if unjudged == 0 {
        return 0.0;
    }
    cur_p + (1.0 - p) * sum
}
