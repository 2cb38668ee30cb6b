//! The plateau rule of [`crate::tune::robust`], for any grid: among the candidates tied with the
//! best, the one farthest from the plateau's edge.
//!
//! 1. *tied*: candidates whose objective is at least `best − epsilon`;
//! 2. *margins* of a tied candidate: along each dimension, the number of grid steps (up or down,
//!    whichever is nearer) to the nearest candidate that is not tied; the first step past the
//!    grid's end counts as an edge, since nothing beyond it was searched. The margins are sorted,
//!    smallest first, and compared lexicographically (leximin);
//! 3. the candidates of the largest margins (the plateau's core) are reduced to the one nearest
//!    (squared distance in steps) to the core's centroid, then the higher objective, then the
//!    smaller candidate index (values earlier in the tuning file's lists): a total order, so the
//!    choice is unique.
//!
//! Unlike the penalty tuning it has no finer second search (the grid is what the file lists)
//! and no "current weights" to keep.

/// The chosen candidate of a grid of `sizes` (mixed radix, last dimension fastest) whose
/// objective per candidate is `objective`.
pub(crate) fn choose(sizes: &[usize], objective: &[f64], epsilon: f64) -> usize {
    let best = objective.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let tied = |c: usize| objective[c] >= best - epsilon;
    let strides: Vec<usize> = (0..sizes.len())
        .map(|i| sizes[i + 1..].iter().product())
        .collect();
    let coord = |c: usize, d: usize| (c / strides[d]) % sizes[d];
    let margins = |c: usize| -> Vec<usize> {
        let mut m: Vec<usize> = (0..sizes.len())
            .map(|d| {
                let x = coord(c, d);
                let base = c - x * strides[d];
                let up = (1..)
                    .find(|s| x + s >= sizes[d] || !tied(base + (x + s) * strides[d]))
                    .unwrap_or(0);
                let down = (1..)
                    .find(|s| *s > x || !tied(base + (x - s) * strides[d]))
                    .unwrap_or(0);
                up.min(down)
            })
            .collect();
        m.sort_unstable();
        m
    };
    let candidates: Vec<(usize, Vec<usize>)> = (0..objective.len())
        .filter(|&c| tied(c))
        .map(|c| (c, margins(c)))
        .collect();
    let widest = candidates
        .iter()
        .map(|(_, m)| m.clone())
        .max()
        .unwrap_or_default();
    let core: Vec<usize> = candidates
        .into_iter()
        .filter(|(_, m)| *m == widest)
        .map(|(c, _)| c)
        .collect();
    let centroid: Vec<f64> = (0..sizes.len())
        .map(|d| core.iter().map(|&c| coord(c, d) as f64).sum::<f64>() / core.len() as f64)
        .collect();
    let dist = |c: usize| -> f64 {
        (0..sizes.len())
            .map(|d| (coord(c, d) as f64 - centroid[d]).powi(2))
            .sum()
    };
    core.into_iter()
        .min_by(|&a, &b| {
            dist(a)
                .total_cmp(&dist(b))
                .then(objective[b].total_cmp(&objective[a]))
                .then(a.cmp(&b))
        })
        .expect("a non-empty grid has a best candidate")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_best_is_chosen() {
        // 1 x 5 grid, one peak at index 3.
        assert_eq!(choose(&[5], &[0.1, 0.2, 0.3, 0.9, 0.4], 0.001), 3);
    }

    #[test]
    fn the_centre_of_a_plateau_not_its_edge() {
        // Indices 1..=5 tie at 0.8: margins (steps to a non-tied point or past the end) are
        // 1, 2, 3, 2, 1 by hand; the centre 3 has the widest.
        let obj = [0.2, 0.8, 0.8, 0.8, 0.8, 0.8, 0.1];
        assert_eq!(choose(&[7], &obj, 0.001), 3);
    }

    #[test]
    fn two_dimensions_leximin() {
        // 3 x 3 grid, row-major. Tied: the whole middle row and column (a plus sign).
        // Centre (1,1): margins along rows 2 (past the end at both sides), along columns 2 -> [2,2].
        // (0,1): along dim 0 up 1? (1,1) tied, (2,1) tied, past end -> 3; down: past end -> 1;
        // so 1; along dim 1: neighbours (0,0),(0,2) not tied -> 1. Margins [1,1]. Centre wins.
        let t = 0.9;
        let obj = [0.0, t, 0.0, t, t, t, 0.0, t, 0.0];
        assert_eq!(choose(&[3, 3], &obj, 0.001), 4);
    }

    #[test]
    fn epsilon_decides_what_ties() {
        // With epsilon 0.05 the three tie and the middle is chosen; with 0, the best alone.
        let obj = [0.90, 0.86, 0.88];
        assert_eq!(choose(&[3], &obj, 0.05), 1);
        assert_eq!(choose(&[3], &obj, 0.0), 0);
    }
}
