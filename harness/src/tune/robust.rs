//! The robust choice among tied candidates.
//!
//! On a few merges, many grid points reach the same MRR and recall@k: a plateau. The best
//! candidate of [`super::order_key`] (smaller weights first) sits on the plateau's edge, where
//! the smallest change of a weight changes a rank. The robust choice instead takes the tied
//! candidate farthest from the edge:
//!
//! 1. *tied*: the passing candidates whose MRR and recall@k are both within `epsilon` of the
//!    best candidate's (and at least as good as the best minus `epsilon`);
//! 2. *margins* of a tied candidate: along each of the four weights, the number of grid steps
//!    (up or down, whichever is nearer) to the nearest valid grid point that is not tied (one
//!    that loses on the objective or breaks a paired assertion); points outside the rules are
//!    stepped over, and the first step past the grid's end (below 0, above the largest weight)
//!    counts as an edge, since nothing beyond it was searched. The four
//!    margins are sorted, smallest first, and compared lexicographically (leximin): a plateau
//!    one step thin along one weight does not hide how wide it is along the others;
//! 3. the candidates of the largest margins (the plateau's core) are reduced to the one nearest
//!    (squared Euclidean distance in steps) to the core's centroid, then by the objective and
//!    the smaller weights ([`super::order_key`]): a total order, so the choice is unique and does
//!    not depend on the number of threads.
//!
//! When the current weights are themselves tied with the best (and pass every paired
//! assertion), they are kept: no candidate beats the practice file by more than `epsilon`.
//!
//! [`refine`] then searches a finer grid (hundredths, the practice file's precision) in the box
//! of one coarse step around the choice, with the same rules, and moves the choice only if the
//! finer grid finds a point better on the objective or a tied point with a larger margin.

use ranklab_engine::policy::Weights;

use super::grid::{hundredths, Grid, Point};
use super::{order_key, Figures, Part, Problem, Scored};

/// Default tie tolerance on MRR and recall@k.
pub(crate) const DEFAULT_EPSILON: f64 = 0.001;

/// Weights from hundredths (the same `f32` as the practice file's two-decimal text).
pub(crate) fn weights_of(h: [u16; 4]) -> Weights {
    let w = |u: u16| f32::from(u) / 100.0;
    Weights {
        superseded: w(h[0]),
        deprecated: w(h[1]),
        amendment: w(h[2]),
        editorial_only: w(h[3]),
    }
}

/// The hundredths of `w` when each weight is a whole number of hundredths (as a practice file
/// writes them), else None.
pub(crate) fn hundredths_of(w: &Weights) -> Option<[u16; 4]> {
    let h = |x: f32| {
        let r = (f64::from(x) * 100.0).round();
        (r >= 0.0 && r <= f64::from(u16::MAX) && (f32::from(r as u16) / 100.0) == x)
            .then_some(r as u16)
    };
    Some([
        h(w.superseded)?,
        h(w.deprecated)?,
        h(w.amendment)?,
        h(w.editorial_only)?,
    ])
}

/// `[30, 60, 5, 15]` -> `0.30 / 0.60 / 0.05 / 0.15`.
pub(crate) fn show(h: [u16; 4]) -> String {
    h.iter()
        .map(|&x| hundredths(u32::from(x)))
        .collect::<Vec<_>>()
        .join(" / ")
}

/// Whether `f` is tied with `best` within `eps` (on MRR and on recall).
pub(crate) fn tied(best: &Figures, f: &Figures, eps: f64) -> bool {
    const ROUND: f64 = 1e-9;
    f.mrr() >= best.mrr() - eps - ROUND && f.recall() >= best.recall() - eps - ROUND
}

/// The outcome of the robust choice.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Choice {
    /// The chosen weights in hundredths.
    pub hundredths: [u16; 4],
    /// The chosen weights.
    pub weights: Weights,
    /// Their figures on the part chosen on.
    pub figures: Figures,
    /// True when the current weights were kept.
    pub kept_current: bool,
    /// The best candidate by the plain order (objective, then smaller weights).
    pub best: Point,
    /// Passing candidates tied with the best.
    pub tied: usize,
    /// Margins of the choice along each weight in coarse steps, smallest first (all zero when
    /// the current weights were kept).
    pub margin: [u32; 4],
    /// Tied candidates with that margin.
    pub core: usize,
    /// What the finer search did (None: not run).
    pub refined: Option<Refinement>,
    /// One paragraph: why this choice.
    pub why: String,
}

/// The finer search around a coarse choice.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refinement {
    /// Points of the fine box (valid under the rules).
    pub points: usize,
    /// Of them, passing and tied with the best.
    pub tied: usize,
    /// Margins of the refined choice in hundredths, smallest first.
    pub margin: [u32; 4],
    /// The coarse choice, in hundredths.
    pub from: [u16; 4],
}

/// A cell of a 4-d box of candidates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    /// Tied with the best.
    Tied,
    /// A valid candidate that is not tied (loses on the objective or breaks a pair).
    Edge,
    /// Outside the rules (deprecated < superseded, editorial_only < amendment): skipped.
    Invalid,
}

/// For each cell, its margins along each axis, sorted ascending: along an axis, the number of
/// steps to the nearest edge cell in either direction (invalid cells are stepped over; the
/// first cell past the box's end counts as an edge: nothing beyond it was searched).
fn axis_margins(dims: [usize; 4], cells: &[Cell], i: usize) -> [u32; 4] {
    let stride = [dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1];
    let mut m = [u32::MAX; 4];
    for k in 0..4 {
        let c = i / stride[k] % dims[k];
        let up = (c + 1..dims[k]).find(|&v| cells[i + (v - c) * stride[k]] == Cell::Edge);
        let down = (0..c)
            .rev()
            .find(|&v| cells[i - (c - v) * stride[k]] == Cell::Edge);
        // Past the box's end is an edge too: nothing beyond it was searched.
        let up = up.map_or(dims[k] - c, |v| v - c) as u32;
        let down = down.map_or(c + 1, |v| c - v) as u32;
        m[k] = up.min(down);
    }
    m.sort_unstable();
    m
}

/// Picks among tied cells: the largest sorted margins (leximin: the smallest per-axis margin
/// first), then nearest to the core's centroid, then `tie` (smaller is better). Returns (index
/// into `cands`, margins, core size).
fn pick<T: Copy>(
    cands: &[([u16; 4], [u32; 4], T)],
    tie: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> (usize, [u32; 4], usize) {
    let top = cands.iter().map(|c| c.1).max().expect("a tied candidate");
    let core: Vec<usize> = (0..cands.len()).filter(|&i| cands[i].1 == top).collect();
    let m = core.len() as i64;
    let mut sum = [0i64; 4];
    for &i in &core {
        for (s, &x) in sum.iter_mut().zip(&cands[i].0) {
            *s += i64::from(x);
        }
    }
    // (m*x - sum)^2 summed: m^2 times the squared distance to the centroid, in integers.
    let off = |p: &[u16; 4]| -> i64 {
        p.iter()
            .zip(&sum)
            .map(|(&x, &s)| (m * i64::from(x) - s).pow(2))
            .sum()
    };
    let best = core
        .iter()
        .copied()
        .min_by(|&a, &b| {
            off(&cands[a].0)
                .cmp(&off(&cands[b].0))
                .then_with(|| tie(&cands[a].2, &cands[b].2))
        })
        .expect("non-empty core");
    (best, top, core.len())
}

/// `[1, 3, 4, 4]` -> `1, 3, 4, 4 steps of 0.05`.
fn margin_text(m: [u32; 4], step: &str) -> String {
    let parts: Vec<String> = m.iter().map(u32::to_string).collect();
    format!("{} steps of {step}", parts.join(", "))
}

/// The robust choice on `part` among `scored` (grid order, every grid point), keeping
/// `current` when it is tied with the best. None when no candidate passes.
pub(crate) fn choose(
    problem: &Problem,
    grid: &Grid,
    scored: &[Scored],
    part: Part,
    eps: f64,
    current: &Weights,
) -> Option<Choice> {
    let best = scored
        .iter()
        .filter(|s| s.score.is_some())
        .min_by_key(|s| order_key(s, part))?;
    let best_f = *best.score.expect("passing").part(part);
    let is_tied = |s: &Scored| s.score.is_some_and(|x| tied(&best_f, x.part(part), eps));
    let n_tied = scored.iter().filter(|s| is_tied(s)).count();

    let cur_score = problem.score(current);
    let cur_f = *cur_score.part(part);
    let cur_h = hundredths_of(current);
    if problem.paired_ok(current) && tied(&best_f, &cur_f, eps) {
        if let Some(h) = cur_h {
            return Some(Choice {
                hundredths: h,
                weights: *current,
                figures: cur_f,
                kept_current: true,
                best: best.point,
                tied: n_tied,
                margin: [0; 4],
                core: 0,
                refined: None,
                why: format!(
                    "No candidate beats the practice file: the current weights {} reach MRR {:.4} and recall {:.4}, within ε = {eps} of the best candidate ({:.4}, {:.4}), so they are kept ({} candidates tie within ε).",
                    show(h), cur_f.mrr(), cur_f.recall(), best_f.mrr(), best_f.recall(), n_tied
                ),
            });
        }
    }

    let side = usize::from(grid.max_units) + 1;
    let dims = [side; 4];
    let idx = |p: &Point| {
        p.0.iter()
            .fold(0usize, |acc, &u| acc * side + usize::from(u))
    };
    let mut cells = vec![Cell::Invalid; side.pow(4)];
    for s in scored {
        cells[idx(&s.point)] = if is_tied(s) { Cell::Tied } else { Cell::Edge };
    }
    let cands: Vec<([u16; 4], [u32; 4], Scored)> = scored
        .iter()
        .filter(|s| is_tied(s))
        .map(|s| (s.point.0, axis_margins(dims, &cells, idx(&s.point)), *s))
        .collect();
    let (i, margin, core) = pick(&cands, |a, b| order_key(a, part).cmp(&order_key(b, part)));
    let chosen = cands[i].2;
    let w = grid.weights(chosen.point);
    let h = hundredths_of(&w).expect("grid weights are hundredths");
    let f = *chosen.score.expect("passing").part(part);
    let best_h = hundredths_of(&grid.weights(best.point)).expect("hundredths");
    let step = grid.unit_text();
    let why = format!(
        "{} candidates tie within ε = {eps} of the best MRR {:.4} and recall {:.4} (the current weights {} reach {:.4} and {:.4}{}). Chosen: {}, the centre of the plateau's core: of the tied candidates, the {} whose margins to the plateau's edge along each weight (the steps to the nearest candidate that is not tied, or past the grid's end), smallest first, are largest ({}), and of those the nearest to their centroid. The plain order (smaller weights first) would take {}, with margins {}.",
        n_tied,
        best_f.mrr(),
        best_f.recall(),
        cur_h.map_or_else(|| format!("{current:?}"), show),
        cur_f.mrr(),
        cur_f.recall(),
        if problem.paired_ok(current) { "" } else { ", breaking a paired assertion" },
        show(h),
        core,
        margin_text(margin, &step),
        show(best_h),
        margin_text(axis_margins(dims, &cells, idx(&best.point)), &step),
    );
    Some(Choice {
        hundredths: h,
        weights: w,
        figures: f,
        kept_current: false,
        best: best.point,
        tied: n_tied,
        margin,
        core,
        refined: None,
        why,
    })
}

/// The finer search: every valid point within one coarse step (exclusive) of the choice at a
/// step of 0.01, scored like the grid; the choice moves to the fine point of largest margin
/// among those tied with the best of the coarse best and the fine box, nearest the coarse
/// choice. Nothing to do when the grid already steps by 0.01 or the current weights were kept.
pub(crate) fn refine(
    problem: &Problem,
    grid: &Grid,
    part: Part,
    eps: f64,
    coarse_best: &Figures,
    choice: &mut Choice,
) {
    let u = grid.unit_hundredths;
    if u <= 1 || choice.kept_current {
        return;
    }
    let c = choice.hundredths;
    let fine = FineBox::around(c, u, u.saturating_mul(grid.max_units));
    let n = fine.len();
    let figs = fine.figures(problem, part);
    let mut best = *coarse_best;
    for f in figs.iter().flatten() {
        if f.key() > best.key() {
            best = *f;
        }
    }
    let points = (0..n).filter(|&i| fine.valid(i)).count();
    let is_tied = |i: usize| figs[i].is_some_and(|f| tied(&best, &f, eps));
    let cells: Vec<Cell> = (0..n)
        .map(|i| {
            if !fine.valid(i) {
                Cell::Invalid
            } else if is_tied(i) {
                Cell::Tied
            } else {
                Cell::Edge
            }
        })
        .collect();
    let cands: Vec<([u16; 4], [u32; 4], [u16; 4])> = (0..n)
        .filter(|&i| is_tied(i))
        .map(|i| (fine.at(i), axis_margins(fine.dims, &cells, i), fine.at(i)))
        .collect();
    let n_tied = cands.len();
    let refinement = |margin: [u32; 4]| Refinement {
        points,
        tied: n_tied,
        margin,
        from: c,
    };
    if cands.is_empty() {
        // Cannot happen (the coarse choice is in the box and tied); keep the coarse choice.
        choice.refined = Some(refinement([0; 4]));
        return;
    }
    let (p, margin) = widest_nearest(&cands, c);
    let moved = p != c;
    let better = (best.key() > coarse_best.key()).then_some(&best);
    choice.why.push_str(&refined_why(
        u,
        points,
        n_tied,
        better,
        moved.then_some(p),
        margin,
    ));
    if moved {
        let w = weights_of(p);
        choice.hundredths = p;
        choice.weights = w;
        choice.figures = *problem.score(&w).part(part);
    }
    choice.refined = Some(refinement(margin));
}

/// The sentence the finer search adds to the choice's why: the box searched, how many points
/// tie, the better best it found (if any), and whether the choice moves (`moved_to`).
fn refined_why(
    u: u16,
    points: usize,
    n_tied: usize,
    better: Option<&Figures>,
    moved_to: Option<[u16; 4]>,
    margin: [u32; 4],
) -> String {
    format!(
        " Finer search at 0.01 within ±{} of it: {} points, {} tied{}; {}.",
        hundredths(u32::from(u - 1)),
        points,
        n_tied,
        match better {
            Some(best) => format!(
                " with a better best (MRR {:.4}, recall {:.4})",
                best.mrr(),
                best.recall()
            ),
            None => String::new(),
        },
        match moved_to {
            Some(p) => format!(
                "the choice moves to {} (margins {} inside the box)",
                show(p),
                margin_text(margin, "0.01")
            ),
            None => format!(
                "the choice stands (margins {} inside the box)",
                margin_text(margin, "0.01")
            ),
        }
    )
}

/// The box of the finer search: the points at 0.01 within one coarse step `u` (exclusive) of
/// a coarse choice, clipped to `0..=top` hundredths.
struct FineBox {
    /// The lowest corner, in hundredths.
    lo: [u16; 4],
    /// Points along each weight.
    dims: [usize; 4],
}

impl FineBox {
    fn around(c: [u16; 4], u: u16, top: u16) -> FineBox {
        let lo: [u16; 4] = c.map(|x| x.saturating_sub(u - 1));
        let hi: [u16; 4] = c.map(|x| (x + (u - 1)).min(top));
        FineBox {
            lo,
            dims: std::array::from_fn(|k| usize::from(hi[k] - lo[k]) + 1),
        }
    }

    /// How many points (valid or not).
    fn len(&self) -> usize {
        self.dims.iter().product()
    }

    /// The `i`-th point, the last weight varying fastest.
    fn at(&self, i: usize) -> [u16; 4] {
        let mut r = i;
        let mut p = [0u16; 4];
        for k in (0..4).rev() {
            p[k] = self.lo[k] + (r % self.dims[k]) as u16;
            r /= self.dims[k];
        }
        p
    }

    /// Whether the `i`-th point keeps the rules (deprecated >= superseded, editorial_only >=
    /// amendment).
    fn valid(&self, i: usize) -> bool {
        let p = self.at(i);
        p[1] >= p[0] && p[3] >= p[2]
    }

    /// Each point's figures on `part`; None for a point against the rules or breaking a pair.
    fn figures(&self, problem: &Problem, part: Part) -> Vec<Option<Figures>> {
        (0..self.len())
            .map(|i| {
                if !self.valid(i) {
                    return None;
                }
                let w = weights_of(self.at(i));
                problem.paired_ok(&w).then(|| *problem.score(&w).part(part))
            })
            .collect()
    }
}

/// Among tied fine points (point, margins, point): the largest margins, then nearest the
/// coarse choice `c` (not the core's centroid: the coarse choice already is a plateau's
/// centre), then the point itself. `cands` is not empty.
fn widest_nearest(cands: &[([u16; 4], [u32; 4], [u16; 4])], c: [u16; 4]) -> ([u16; 4], [u32; 4]) {
    let top_m = cands.iter().map(|x| x.1).max().expect("non-empty");
    let d2 = |p: &[u16; 4]| -> i64 {
        p.iter()
            .zip(&c)
            .map(|(&a, &b)| (i64::from(a) - i64::from(b)).pow(2))
            .sum()
    };
    let (p, margin, _) = *cands
        .iter()
        .filter(|x| x.1 == top_m)
        .min_by(|a, b| d2(&a.0).cmp(&d2(&b.0)).then(a.2.cmp(&b.2)))
        .expect("non-empty");
    (p, margin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_margins_count_steps_to_the_nearest_edge_along_each_weight() {
        // A 7x5x1x1 box: edges at x = 0 and at (6, 0); invalid at (3, 2), which is stepped over.
        let dims = [7, 5, 1, 1];
        let at = |x: usize, y: usize| x * 5 + y;
        let mut cells = vec![Cell::Tied; 35];
        for y in 0..5 {
            cells[at(0, y)] = Cell::Edge;
        }
        cells[at(6, 0)] = Cell::Edge;
        cells[at(3, 2)] = Cell::Invalid;
        // (2, 2): x: 2 steps down to x = 0 (5 up past the end); y: 3 steps to either end; the
        // two size-1 axes: 1 step past the end.
        assert_eq!(axis_margins(dims, &cells, at(2, 2)), [1, 1, 2, 3]);
        // (5, 0): x: 1 step up to (6, 0); y: 1 step below 0.
        assert_eq!(axis_margins(dims, &cells, at(5, 0)), [1, 1, 1, 1]);
        // (4, 2): x: down to x = 0 over the invalid (3, 2) is 4, up past the end 3.
        assert_eq!(axis_margins(dims, &cells, at(4, 2)), [1, 1, 3, 3]);
    }

    #[test]
    fn pick_takes_the_centre_of_the_core() {
        // Margins 1,2,2,2 on a line: the core is x = 1..=3, its centroid 2.
        let m = |x: u32| [1, x, 5, 5];
        let c = [
            ([0, 0, 0, 0], m(1), 0),
            ([1, 0, 0, 0], m(2), 1),
            ([2, 0, 0, 0], m(2), 2),
            ([3, 0, 0, 0], m(2), 3),
        ];
        assert_eq!(pick(&c, |a: &i32, b: &i32| a.cmp(b)), (2, m(2), 3));
        // An even core: two points equally near the centroid, the tie order decides.
        let c = [([1, 0, 0, 0], m(2), 9), ([2, 0, 0, 0], m(2), 4)];
        assert_eq!(pick(&c, |a: &i32, b: &i32| a.cmp(b)).0, 1);
    }

    #[test]
    fn hundredths_round_trip_and_reject_finer_weights() {
        let h = [30, 60, 5, 15];
        assert_eq!(hundredths_of(&weights_of(h)), Some(h));
        let mut w = weights_of(h);
        w.amendment = 0.055;
        assert_eq!(hundredths_of(&w), None);
        assert_eq!(show(h), "0.30 / 0.60 / 0.05 / 0.15");
    }
}
