//! The paired bootstrap percentile interval of a mean.
//!
//! Applied to the per-task differences it gives the interval of the mean difference (the pairing
//! is kept because whole tasks are resampled); applied to one configuration's values, the
//! interval of its mean. Each of [`Options::resamples`] resamples draws n tasks with replacement
//! from the seed's bootstrap stream; the interval is the (1 − c)/2 and (1 + c)/2 quantiles of the
//! resample means, linearly interpolated between order statistics (Hyndman & Fan type 7, the
//! default of R and numpy).
//!
//! The values are sorted before resampling, so the interval depends only on their multiset, never
//! on the order of the tasks.
//!
//! Degenerate inputs give degenerate intervals: identical values (all differences zero, or a
//! constant shift) give an interval of zero width at that value.

use super::rng::{Source, Stream};
use super::{draws, Options};

/// A closed interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
}

impl Interval {
    /// True when `x` lies in the interval.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }
}

/// The bootstrap interval of the mean of `values` (not empty).
pub fn mean_interval(values: &[f64], opts: &Options) -> Interval {
    let n = values.len();
    assert!(n > 0, "bootstrap of an empty sample");
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    if values[0] == values[n - 1] {
        // Every resample is the same sample; skip the draws (and their rounding).
        let m = super::mean(&values);
        return Interval { lo: m, hi: m };
    }
    let head = [opts.seed, opts.resamples as u64, opts.confidence.to_bits()];
    let [lo, hi] = super::memo::remembered("bootstrap/1", &head, &values, || {
        let i = resampled_interval(&values, opts);
        [i.lo.to_bits(), i.hi.to_bits()]
    });
    Interval {
        lo: f64::from_bits(lo),
        hi: f64::from_bits(hi),
    }
}

/// The bootstrap interval of the mean of the sorted, not all equal `values`, computed.
fn resampled_interval(values: &[f64], opts: &Options) -> Interval {
    let n = values.len();
    let mut means = match draws::bootstrap_indices(opts.seed, n, opts.resamples) {
        Some(idx) => resample_means(values, &idx),
        None => {
            let mut src = Source::new(opts.seed, Stream::Bootstrap);
            let mut means = Vec::with_capacity(opts.resamples);
            for _ in 0..opts.resamples {
                let mut s = 0.0;
                for _ in 0..n {
                    s += values[src.below(n as u64) as usize];
                }
                means.push(s / n as f64);
            }
            means
        }
    };
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - opts.confidence) / 2.0;
    Interval {
        lo: quantile(&means, tail),
        hi: quantile(&means, 1.0 - tail),
    }
}

/// The mean of every resample whose indices are the consecutive `values.len()`-long rows of
/// `idx`, in row order. Each resample is summed in draw order, as the stream gives them; four
/// resamples are summed side by side (four independent chains), which changes no bit.
fn resample_means(values: &[f64], idx: &[u32]) -> Vec<f64> {
    let n = values.len();
    let mut means = Vec::with_capacity(idx.len() / n);
    let mut blocks = idx.chunks_exact(4 * n);
    for block in blocks.by_ref() {
        let (r0, rest) = block.split_at(n);
        let (r1, rest) = rest.split_at(n);
        let (r2, r3) = rest.split_at(n);
        let mut s = [0.0f64; 4];
        for (((&a, &b), &c), &d) in r0.iter().zip(r1).zip(r2).zip(r3) {
            s[0] += values[a as usize];
            s[1] += values[b as usize];
            s[2] += values[c as usize];
            s[3] += values[d as usize];
        }
        means.extend(s.iter().map(|x| x / n as f64));
    }
    for row in blocks.remainder().chunks_exact(n) {
        let mut s = 0.0;
        for &i in row {
            s += values[i as usize];
        }
        means.push(s / n as f64);
    }
    means
}

/// Type-7 quantile of sorted, non-empty `s` (R's default: linear interpolation between the order
/// statistics at `(n - 1) q`). The one implementation: the bootstrap interval and the report's
/// quartiles both use it.
pub fn quantile(s: &[f64], q: f64) -> f64 {
    let h = (s.len() - 1) as f64 * q;
    let i = h.floor() as usize;
    let frac = h - i as f64;
    match s.get(i + 1) {
        Some(&next) if frac > 0.0 => s[i] + frac * (next - s[i]),
        _ => s[i],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interval from shared indices, four resamples summed side by side, is the same bits
    /// as drawing every index from a fresh stream and summing one resample at a time (the loop
    /// this module had before the draws were shared), for resample counts not a multiple of 4.
    #[test]
    fn shared_indices_give_the_fresh_stream_interval_to_the_bit() {
        for (n, resamples) in [(2usize, 7usize), (35, 1_001), (300, 2_002)] {
            let mut v: Vec<f64> = (0..n).map(|i| ((i * 13) % 17) as f64 / 17.0).collect();
            v.sort_by(f64::total_cmp);
            let o = Options {
                resamples,
                seed: 5,
                ..Options::default()
            };
            let mut src = Source::new(o.seed, Stream::Bootstrap);
            let mut means: Vec<f64> = (0..resamples)
                .map(|_| {
                    let mut s = 0.0;
                    for _ in 0..n {
                        s += v[src.below(n as u64) as usize];
                    }
                    s / n as f64
                })
                .collect();
            means.sort_by(f64::total_cmp);
            let tail = (1.0 - o.confidence) / 2.0;
            let want = (quantile(&means, tail), quantile(&means, 1.0 - tail));
            let got = mean_interval(&v, &o);
            assert_eq!(
                (got.lo.to_bits(), got.hi.to_bits()),
                (want.0.to_bits(), want.1.to_bits()),
                "n {n}"
            );
        }
    }

    #[test]
    fn quantiles_interpolate() {
        let s = [0.0, 1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&s, 0.0), 0.0);
        assert_eq!(quantile(&s, 1.0), 4.0);
        assert_eq!(quantile(&s, 0.5), 2.0);
        assert_eq!(quantile(&s, 0.025), 0.1);
        assert!((quantile(&s, 0.975) - 3.9).abs() < 1e-12);
        assert_eq!(quantile(&[7.0], 0.3), 7.0);
    }

    #[test]
    fn constant_sample_has_a_point_interval() {
        let o = Options::default();
        assert_eq!(mean_interval(&[0.0; 20], &o), Interval { lo: 0.0, hi: 0.0 });
        let i = mean_interval(&[0.25; 7], &o);
        assert_eq!((i.lo, i.hi), (0.25, 0.25));
    }

    #[test]
    fn interval_covers_the_mean_and_narrows_with_n() {
        let o = Options::default();
        let small: Vec<f64> = (0..10).map(|i| (i % 2) as f64).collect();
        let large: Vec<f64> = (0..1000).map(|i| (i % 2) as f64).collect();
        let a = mean_interval(&small, &o);
        let b = mean_interval(&large, &o);
        assert!(a.contains(0.5) && b.contains(0.5));
        assert!(b.hi - b.lo < a.hi - a.lo);
        // Normal approximation for n = 1000, p = 0.5: ±1.96 · 0.5 / √1000 ≈ ±0.031.
        assert!((b.hi - b.lo - 0.062).abs() < 0.006, "{b:?}");
    }

    #[test]
    fn reproducible_to_the_bit() {
        let v: Vec<f64> = (0..50).map(|i| ((i * 13) % 7) as f64 / 7.0).collect();
        let o = Options::default();
        let (a, b) = (mean_interval(&v, &o), mean_interval(&v, &o));
        assert_eq!(
            (a.lo.to_bits(), a.hi.to_bits()),
            (b.lo.to_bits(), b.hi.to_bits())
        );
    }
}
