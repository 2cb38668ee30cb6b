//! Gain tables for the gain-based measures (`ndcg`, `ndcg_rel`, `Rndcg`, `G`, `rbp`), as
//! trec_eval builds them: every judged level 0..=max of the query gets its own value as gain,
//! unless a `level=gain` parameter names it; the ideal ranking takes the levels by decreasing
//! gain, each as often as the query has judgments at it, while the gain stays positive.

use super::{Judgments, QueryView};

/// One query's gains.
#[derive(Debug, Clone)]
pub(super) struct Gains {
    /// `(level, gain, judgments at the level)`, sorted by increasing gain (stable).
    levels: Vec<(i32, f64, usize)>,
}

impl Gains {
    pub(super) fn new(pairs: &[(i32, f64)], j: &Judgments) -> Self {
        let mut levels: Vec<(i32, f64, usize)> =
            Vec::with_capacity(pairs.len() + j.rel_levels.len());
        for &(level, gain) in pairs {
            levels.push((level, gain, 0));
        }
        // trec_eval lists every level 0..=max; the empty ones other than 0 change nothing
        // (no document has them, and 0 and max bound the gains rbp normalizes).
        let zero = (!j.rel_levels.is_empty() && j.rel_levels[0].0 != 0).then_some((0, 0));
        for &(i, n) in zero.iter().chain(&j.rel_levels) {
            match levels.iter_mut().find(|l| l.0 == i) {
                Some(l) => l.2 = n as usize,
                None => levels.push((i, i as f64, n as usize)),
            }
        }
        levels.sort_by(|a, b| a.1.total_cmp(&b.1));
        Gains { levels }
    }

    /// The gain of a judgment (0 for an unjudged document or a level without a gain).
    #[inline]
    pub(super) fn gain(&self, rel: i32) -> f64 {
        if rel < 0 {
            return 0.0;
        }
        self.levels.iter().find(|l| l.0 == rel).map_or(0.0, |l| l.1)
    }

    /// The largest gain of the table (trec_eval's starting ideal gain), 0 when empty.
    pub(super) fn top(&self) -> f64 {
        self.levels.last().map_or(0.0, |l| l.1)
    }

    /// The ideal ranking's positive gains, largest first.
    pub(super) fn ideal(&self) -> Vec<f64> {
        let mut out = Vec::new();
        for &(_, g, n) in self.levels.iter().rev() {
            if g <= 0.0 {
                break;
            }
            out.extend(std::iter::repeat_n(g, n));
        }
        out
    }

    /// Rescales the gains into [0, 1] when some lie outside (trec_eval's `rbp`).
    pub(super) fn normalize_unit(&mut self) {
        let min = self
            .levels
            .iter()
            .map(|l| l.1)
            .fold(f64::INFINITY, f64::min);
        let max = self
            .levels
            .iter()
            .map(|l| l.1)
            .fold(f64::NEG_INFINITY, f64::max);
        if min < 0.0 || max > 1.0 {
            for l in &mut self.levels {
                l.1 = (l.1 - min) / (max - min);
            }
        }
    }
}

/// The gain of the document at each 0-based position, walking the hits once: positions without
/// a hit are unjudged and gain 0.
pub(super) struct GainWalk<'a, 'v> {
    q: &'a QueryView<'v>,
    gains: &'a Gains,
    next: usize,
}

impl<'a, 'v> GainWalk<'a, 'v> {
    pub(super) fn new(q: &'a QueryView<'v>, gains: &'a Gains) -> Self {
        GainWalk { q, gains, next: 0 }
    }

    /// Gain at position `i`; positions must be asked in increasing order.
    #[inline]
    pub(super) fn at(&mut self, i: usize) -> f64 {
        let hits = self.q.hits;
        while self.next < hits.len() && hits[self.next].rank < i {
            self.next += 1;
        }
        match hits.get(self.next) {
            Some(h) if h.rank == i => self.gains.gain(h.rel),
            _ => 0.0,
        }
    }
}
