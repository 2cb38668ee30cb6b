//! The two-sided paired sign-flip randomization test.
//!
//! Under the null hypothesis that the two configurations are exchangeable on every task, each
//! difference is as likely to have had the opposite sign. The statistic is |Σ dᵢ| (equivalently
//! the absolute mean difference); the p-value is the share of sign assignments whose statistic is
//! at least the observed one. Ties (zero differences) carry no sign and are left out: n is the
//! number of non-zero differences.
//!
//! - n ≤ [`Options::exact_max`]: every one of the 2^n assignments is enumerated (meet in the
//!   middle: the subset sums of each half, then every pair of them), so p is exact; it is a
//!   multiple of 2^-n and at least 2^(1-n) (the observed assignment and its mirror).
//! - otherwise [`Options::permutations`] assignments are drawn from the seed's permutation
//!   stream and p = (1 + hits) / (1 + draws), which is never 0 and never smaller than an exact
//!   p could be.
//!
//! The differences are sorted before anything is summed or drawn, so p depends only on their
//! multiset, never on the order of the tasks.
//!
//! "At least the observed one" allows for floating-point noise: a relative slack of 1e-9 of
//! Σ|dᵢ|, far below any real difference between metric values.

use std::fmt;

use super::rng::{Source, Stream};
use super::{draws, thousands, Options};

/// How a p-value was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// All 2^`nonzero` sign assignments enumerated.
    Exact {
        /// Non-zero differences.
        nonzero: usize,
    },
    /// Random sign assignments from a seeded stream.
    Sampled {
        /// Assignments drawn.
        permutations: usize,
        /// The seed.
        seed: u64,
    },
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Method::Exact { nonzero } => write!(f, "exact, 2^{nonzero} sign assignments"),
            Method::Sampled { permutations, seed } => {
                write!(
                    f,
                    "{} random sign assignments, seed {seed}",
                    thousands(*permutations)
                )
            }
        }
    }
}

impl Method {
    /// Short machine-readable name: `exact` or `sampled`.
    pub fn name(&self) -> &'static str {
        match self {
            Method::Exact { .. } => "exact",
            Method::Sampled { .. } => "sampled",
        }
    }
}

/// The outcome of [`sign_flip_test`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SignFlip {
    /// Two-sided p-value, in (0, 1].
    pub p: f64,
    /// How it was obtained.
    pub method: Method,
    /// Non-zero differences (the n of the test).
    pub nonzero: usize,
}

/// Tests whether the mean of the paired differences `d` is zero (ties must already be exact
/// zeros, see [`super::differences`]).
pub fn sign_flip_test(d: &[f64], opts: &Options) -> SignFlip {
    let mut v: Vec<f64> = d.iter().copied().filter(|&x| x != 0.0).collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let head = [opts.seed, opts.permutations as u64, opts.exact_max as u64];
    let [p, _] =
        super::memo::remembered("signflip/1", &head, &v, || [tested(&v, opts).to_bits(), 0]);
    SignFlip {
        p: f64::from_bits(p),
        method: if n <= opts.exact_max {
            Method::Exact { nonzero: n }
        } else {
            Method::Sampled {
                permutations: opts.permutations,
                seed: opts.seed,
            }
        },
        nonzero: n,
    }
}

/// The p of [`sign_flip_test`] on the sorted non-zero differences `v`, computed.
fn tested(v: &[f64], opts: &Options) -> f64 {
    let n = v.len();
    let observed: f64 = v.iter().sum::<f64>().abs();
    let slack = 1e-9 * v.iter().map(|x| x.abs()).sum::<f64>();
    let threshold = observed - slack;
    if n <= opts.exact_max {
        let (left, right) = v.split_at(n / 2);
        let (ls, rs) = (subset_sums(left), subset_sums(right));
        let mut hits: u64 = 0;
        for &l in &ls {
            hits += rs.iter().filter(|&&r| (l + r).abs() >= threshold).count() as u64;
        }
        let total = (ls.len() * rs.len()) as f64;
        hits as f64 / total
    } else {
        let words = n.div_ceil(64);
        let hits = match draws::sign_words(opts.seed, words, opts.permutations) {
            Some(w) => count_hits(v, &w, threshold),
            None => stream_hits(v, opts, threshold),
        };
        (hits + 1) as f64 / (opts.permutations + 1) as f64
    }
}

/// `x` with the sign the assignment gives it: `x` when the bit is 1, `-x` when 0 (flipping the
/// sign bit, so `s + signed(x, 0)` is exactly `s - x`).
#[inline(always)]
fn signed(x: f64, bit: u64) -> f64 {
    f64::from_bits(x.to_bits() ^ (((bit & 1) ^ 1) << 63))
}

/// Hits among the assignments whose sign words are the consecutive rows of `w` (one row of
/// `v.len().div_ceil(64)` words per assignment; bit j of word c signs `v[64 c + j]`). Each
/// assignment is summed in index order, without branches; four assignments are summed side by
/// side (four independent chains), which changes no bit.
fn count_hits(v: &[f64], w: &[u64], threshold: f64) -> u64 {
    let words = v.len().div_ceil(64);
    let mut hits = 0u64;
    let mut blocks = w.chunks_exact(4 * words);
    for block in blocks.by_ref() {
        let mut s = [0.0f64; 4];
        for (c, chunk) in v.chunks(64).enumerate() {
            let b = [
                block[c],
                block[words + c],
                block[2 * words + c],
                block[3 * words + c],
            ];
            for (j, &x) in chunk.iter().enumerate() {
                for (acc, &bits) in s.iter_mut().zip(&b) {
                    *acc += signed(x, bits >> j);
                }
            }
        }
        hits += s.iter().filter(|x| x.abs() >= threshold).count() as u64;
    }
    for row in blocks.remainder().chunks_exact(words) {
        let mut s = 0.0;
        for (chunk, &bits) in v.chunks(64).zip(row) {
            for (j, &x) in chunk.iter().enumerate() {
                s += signed(x, bits >> j);
            }
        }
        if s.abs() >= threshold {
            hits += 1;
        }
    }
    hits
}

/// [`count_hits`] drawing the sign words from the stream as it goes (streams too large to keep).
fn stream_hits(v: &[f64], opts: &Options, threshold: f64) -> u64 {
    let mut src = Source::new(opts.seed, Stream::Permutation);
    let mut hits: u64 = 0;
    for _ in 0..opts.permutations {
        let mut s = 0.0;
        for chunk in v.chunks(64) {
            let bits = src.bits();
            for (j, &x) in chunk.iter().enumerate() {
                if bits >> j & 1 == 1 {
                    s += x;
                } else {
                    s -= x;
                }
            }
        }
        if s.abs() >= threshold {
            hits += 1;
        }
    }
    hits
}

/// The 2^len signed sums ±v₀ ± v₁ ± …, in a fixed order.
fn subset_sums(v: &[f64]) -> Vec<f64> {
    let mut out = Vec::with_capacity(1 << v.len());
    out.push(0.0);
    for &x in v {
        let k = out.len();
        for i in 0..k {
            let s = out[i];
            out[i] = s + x;
            out.push(s - x);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared, branch-free, four-at-a-time count gives the same hits as drawing each
    /// assignment's words from a fresh stream and branching on every bit (the loop this module
    /// had before the draws were shared), for n across one, two and five words.
    #[test]
    fn shared_words_count_the_same_hits_as_a_fresh_stream() {
        for n in [21usize, 63, 64, 65, 130, 300] {
            let v: Vec<f64> = (0..n)
                .map(|i| ((i * 37 % 11) as f64 - 5.0) / 7.0 + 1e-3)
                .filter(|x| *x != 0.0)
                .collect();
            let opts = Options {
                permutations: 1_003,
                ..Options::default()
            };
            let observed: f64 = v.iter().sum::<f64>().abs();
            for threshold in [0.0, observed, observed * 0.5, 1.0] {
                let mut src = Source::new(opts.seed, Stream::Permutation);
                let mut want = 0u64;
                for _ in 0..opts.permutations {
                    let mut s = 0.0f64;
                    for chunk in v.chunks(64) {
                        let bits = src.bits();
                        for (j, &x) in chunk.iter().enumerate() {
                            if bits >> j & 1 == 1 {
                                s += x;
                            } else {
                                s -= x;
                            }
                        }
                    }
                    want += u64::from(s.abs() >= threshold);
                }
                let w =
                    draws::sign_words(opts.seed, v.len().div_ceil(64), opts.permutations).unwrap();
                assert_eq!(
                    count_hits(&v, &w, threshold),
                    want,
                    "n {n}, threshold {threshold}"
                );
                assert_eq!(stream_hits(&v, &opts, threshold), want);
            }
        }
    }

    fn exact(d: &[f64]) -> SignFlip {
        sign_flip_test(d, &Options::default())
    }

    /// p-values enumerated by hand (each line lists the 2^n signed sums).
    #[test]
    fn hand_computed_exact_cases() {
        let cases: &[(&[f64], f64)] = &[
            // no difference at all: the only assignment is the observed one
            (&[], 1.0),
            (&[0.0, 0.0], 1.0),
            // ±0.5: both assignments reach |0.5|
            (&[0.5], 1.0),
            // ±1±2±3 = 6 4 2 0 0 -2 -4 -6: |S| ≥ 6 twice in 8
            (&[1.0, 2.0, 3.0], 0.25),
            // zeros are ties and do not count in n
            (&[0.0, 1.0, 0.0, 2.0, 3.0], 0.25),
            // observed 1-1+2 = 2; sums 2 -2 4 0 0 -4 2 -2: |S| ≥ 2 six times in 8
            (&[1.0, -1.0, 2.0], 0.75),
            // observed 0: every assignment is as extreme
            (&[1.0, -1.0], 1.0),
            // five equal gains: only all-plus and all-minus reach 2.5, 2 in 32
            (&[0.5; 5], 0.0625),
            // 1/3 and -1/2 style metric values: observed 1/3+1/3-1/2 = 1/6;
            // sums ±1/3 ±1/3 ±1/2 = 7/6 1/6 1/2 -1/2 1/2 -1/2 -1/6 -7/6: all 8 reach 1/6
            (&[1.0 / 3.0, 1.0 / 3.0, -0.5], 1.0),
            // 1, 1, 1, 3: observed 6, reached only by all-plus and all-minus (flipping any
            // one value gives at most 4): 2 of 16
            (&[1.0, 1.0, 1.0, 3.0], 0.125),
        ];
        for (d, want) in cases {
            let t = exact(d);
            assert_eq!(t.p, *want, "p of {d:?}");
            assert!(matches!(t.method, Method::Exact { .. }));
        }
    }

    #[test]
    fn exact_p_is_a_multiple_of_two_to_minus_n_and_at_least_two_of_them() {
        let d: Vec<f64> = (1..=20).map(|i| i as f64 * 0.01).collect();
        let t = exact(&d);
        assert_eq!(t.method, Method::Exact { nonzero: 20 });
        assert_eq!(t.p, 2.0 / f64::from(1 << 20));
    }

    #[test]
    fn sampled_agrees_with_exact() {
        let d: Vec<f64> = (0..16)
            .map(|i| {
                if i % 3 == 0 {
                    -0.2
                } else {
                    0.1 + i as f64 * 0.01
                }
            })
            .collect();
        let e = exact(&d);
        let s = sign_flip_test(
            &d,
            &Options {
                exact_max: 0,
                ..Options::default()
            },
        );
        assert_eq!(
            s.method,
            Method::Sampled {
                permutations: 100_000,
                seed: 42
            }
        );
        assert!((e.p - s.p).abs() < 0.005, "exact {} sampled {}", e.p, s.p);
    }

    #[test]
    fn sampled_is_reproducible_and_seeded() {
        let d: Vec<f64> = (0..30)
            .map(|i| ((i * 7) % 11) as f64 / 10.0 - 0.45)
            .collect();
        let o = Options {
            permutations: 10_000,
            ..Options::default()
        };
        let a = sign_flip_test(&d, &o);
        assert_eq!(a.p.to_bits(), sign_flip_test(&d, &o).p.to_bits());
        assert_eq!(a.nonzero, 30);
        let other_seed = sign_flip_test(&d, &Options { seed: 43, ..o });
        assert_ne!(a.p, other_seed.p);
    }

    #[test]
    fn sampled_p_is_never_zero() {
        let d = vec![1.0; 200];
        let t = sign_flip_test(
            &d,
            &Options {
                permutations: 10_000,
                ..Options::default()
            },
        );
        assert_eq!(t.p, 1.0 / 10_001.0);
    }

    #[test]
    fn method_reads_well() {
        assert_eq!(
            Method::Exact { nonzero: 7 }.to_string(),
            "exact, 2^7 sign assignments"
        );
        assert_eq!(
            Method::Sampled {
                permutations: 100_000,
                seed: 42
            }
            .to_string(),
            "100,000 random sign assignments, seed 42"
        );
    }
}
