//! `iprec_at_recall_x` and `11pt_avg`: interpolated precision at recall points.
//!
//! A recall point x becomes a number of relevant documents c = round(x · R) (trec_eval 10.0
//! rounds; 9 and older added 0.9 and truncated). Interpolated precision there is the best
//! precision at any rank at or below the c-th relevant document; 0 when fewer than c relevant
//! documents were retrieved.

use super::QueryView;

/// Interpolated precision at each recall point of `points`, in the same order.
pub(super) fn interpolated(q: &QueryView<'_>, points: &[f64]) -> Vec<f64> {
    // best[j] = max precision at or below the (j+1)-th relevant retrieved document
    let mut best: Vec<f64> = q
        .relevant_hits()
        .enumerate()
        .map(|(j, h)| (j + 1) as f64 / (h.rank + 1) as f64)
        .collect();
    for j in (0..best.len().saturating_sub(1)).rev() {
        if best[j] < best[j + 1] {
            best[j] = best[j + 1];
        }
    }
    let num_rel = q.judgments.num_rel as f64;
    points
        .iter()
        .map(|&x| {
            let c = (x * num_rel).round();
            if c > best.len() as f64 || best.is_empty() {
                0.0
            } else {
                best[(c as usize).max(1) - 1]
            }
        })
        .collect()
}

/// Interpolated precision at one recall point.
pub(super) fn iprec_at_recall(q: &QueryView<'_>, x: f64) -> f64 {
    interpolated(q, &[x])[0]
}

/// The mean of interpolated precision over `points`, summed from the highest point down as
/// trec_eval sums it.
pub(super) fn eleven_point_average(q: &QueryView<'_>, points: &[f64]) -> f64 {
    if points.is_empty() {
        return 0.0;
    }
    let mut sorted = points.to_vec();
    sorted.sort_by(f64::total_cmp);
    let values = interpolated(q, &sorted);
    let sum = values.iter().rev().fold(0.0, |s, v| s + v);
    sum / points.len() as f64
}
