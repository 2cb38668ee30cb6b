//! `infAP`: inferred average precision (Yilmaz & Aslam, CIKM 2006), trec_eval's form.
//!
//! Judgments of -1 (or below) mark documents pooled but not judged; documents absent from the
//! qrels were not pooled. Precision above each relevant document is estimated from the judged
//! documents above it.

use super::QueryView;

const INFAP_EPSILON: f64 = 0.00001;

pub(super) fn inferred_ap(q: &QueryView<'_>) -> f64 {
    let (mut rel_so_far, mut nonrel_so_far, mut unjudged_so_far) = (0usize, 0usize, 0usize);
    let mut sum = 0.0;
    for h in q.hits {
        if h.rel < 0 {
            unjudged_so_far += 1;
        } else if h.rel < q.rel_level {
            nonrel_so_far += 1;
        } else {
            rel_so_far += 1;
            if h.rank == 0 {
                sum += 1.0;
            } else {
                let fj = h.rank as f64;
                let above = (rel_so_far - 1 + nonrel_so_far + unjudged_so_far) as f64;
                let rel_above = (rel_so_far - 1) as f64;
                sum += 1.0 / (fj + 1.0)
                    + (fj / (fj + 1.0))
                        * (above / fj)
                        * ((rel_above + INFAP_EPSILON)
                            / (rel_above + nonrel_so_far as f64 + 2.0 * INFAP_EPSILON));
            }
        }
    }
    if q.judgments.num_rel > 0 {
        sum / q.judgments.num_rel as f64
    } else {
        sum
    }
}
