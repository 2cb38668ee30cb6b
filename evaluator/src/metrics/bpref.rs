//! `bpref` and `gm_bpref`: binary preference (Buckley & Voorhees, SIGIR 2004), trec_eval's form.
//!
//! Only judged documents count: for each relevant retrieved document, 1 - min(judged
//! non-relevant above it, R) / min(judged non-relevant of the query, R), averaged over R.
//! Unjudged documents and judgments below 0 are skipped.

use super::map::MIN_GEO_MEAN;
use super::QueryView;

pub(super) fn bpref(q: &QueryView<'_>) -> f64 {
    let r = q.judgments.num_rel;
    let num_nonrel: usize = q
        .judgments
        .rel_levels
        .iter()
        .filter(|l| l.0 < q.rel_level)
        .map(|l| l.1 as usize)
        .sum();
    let mut nonrel_so_far = 0usize;
    let mut sum = 0.0;
    for h in q.hits {
        if h.rel < 0 {
            continue;
        }
        if h.rel < q.rel_level {
            nonrel_so_far += 1;
        } else if nonrel_so_far > 0 {
            sum += 1.0 - (nonrel_so_far.min(r) as f64) / (num_nonrel.min(r) as f64);
        } else {
            sum += 1.0;
        }
    }
    if r > 0 {
        sum / r as f64
    } else {
        sum
    }
}

/// `gm_bpref`'s per-query term: ln(max(bpref, 0.00001)).
pub(super) fn log_bpref(q: &QueryView<'_>) -> f64 {
    bpref(q).max(MIN_GEO_MEAN).ln()
}
