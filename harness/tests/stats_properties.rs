//! Properties of the paired statistics (`ranklab::stats`), on random inputs (proptest):
//! - identical configurations: p = 1, interval [0, 0], every task a tie;
//! - a constant shift c: an interval of zero width at c, Δ = c, every task a win (or loss), and
//!   the smallest p the method can give (2/2^n exact, 1/(draws+1) sampled);
//! - the exact test agrees with a naive oracle that sums every sign assignment directly;
//! - swapping the two configurations keeps p, negates Δ, mirrors win/loss and (up to sampling
//!   noise) the interval;
//! - reordering the tasks changes nothing, to the bit, exact or sampled; scaling the differences
//!   keeps the exact p;
//! - p lies in (0, 1]; the interval is ordered; win + tie + loss = n;
//! - Holm: adjusted ≥ raw, ≤ 1, in the same order as the raw values;
//! - the same inputs give bit-identical results.

use proptest::prelude::*;
use ranklab::stats::{self, holm, paired, Method, Options};

/// Metric-like values: multiples of 1/12 in [0, 1] (what recall, MRR, P produce on small tasks).
fn metric() -> impl Strategy<Value = f64> {
    (0u32..=12).prop_map(|k| f64::from(k) / 12.0)
}

fn pairs(max: usize) -> impl Strategy<Value = (Vec<f64>, Vec<f64>)> {
    (1..=max).prop_flat_map(|n| {
        (
            prop::collection::vec(metric(), n),
            prop::collection::vec(metric(), n),
        )
    })
}

fn fast() -> Options {
    Options {
        permutations: 10_000,
        resamples: 10_000,
        ..Options::default()
    }
}

/// Share of the 2^n sign assignments of `d`'s non-zero values with |Σ| ≥ |observed|, summing
/// each assignment from scratch.
fn oracle_p(d: &[f64]) -> f64 {
    let v: Vec<f64> = d.iter().copied().filter(|&x| x != 0.0).collect();
    let observed = v.iter().sum::<f64>().abs();
    let slack = 1e-9 * v.iter().map(|x| x.abs()).sum::<f64>();
    let n = v.len();
    let mut hits = 0u64;
    for mask in 0u64..(1 << n) {
        let s: f64 = v
            .iter()
            .enumerate()
            .map(|(i, x)| if mask >> i & 1 == 1 { -x } else { *x })
            .sum();
        if s.abs() >= observed - slack {
            hits += 1;
        }
    }
    hits as f64 / (1u64 << n) as f64
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn identical_runs_give_p_one_and_a_zero_interval(v in prop::collection::vec(metric(), 1..80)) {
        let s = paired(&v, &v, &fast()).unwrap();
        prop_assert_eq!(s.test.p, 1.0);
        prop_assert_eq!((s.ci.lo, s.ci.hi), (0.0, 0.0));
        prop_assert_eq!(s.delta, 0.0);
        prop_assert_eq!((s.wins, s.ties, s.losses), (0, v.len(), 0));
        prop_assert_eq!(s.test.method, Method::Exact { nonzero: 0 });
    }

    #[test]
    fn constant_shift_gives_an_interval_at_the_shift(
        v in prop::collection::vec(0.0f64..1.0, 1..60),
        c in prop_oneof![-0.5f64..-0.001, 0.001f64..0.5],
    ) {
        let shifted: Vec<f64> = v.iter().map(|x| x + c).collect();
        let o = fast();
        let s = paired(&v, &shifted, &o).unwrap();
        prop_assert!((s.delta - c).abs() < 1e-12, "Δ {} vs {}", s.delta, c);
        prop_assert!((s.ci.lo - c).abs() < 1e-9 && (s.ci.hi - c).abs() < 1e-9, "{:?} vs {}", s.ci, c);
        let n = v.len();
        if c > 0.0 {
            prop_assert_eq!((s.wins, s.ties, s.losses), (n, 0, 0));
        } else {
            prop_assert_eq!((s.wins, s.ties, s.losses), (0, 0, n));
        }
        if n <= o.exact_max {
            prop_assert_eq!(s.test.p, 2.0 / (1u64 << n) as f64);
        } else {
            // 2 of 2^n assignments reach the observed sum: never drawn in 10,000 for n > 20.
            prop_assert_eq!(s.test.p, 1.0 / (o.permutations + 1) as f64);
        }
    }

    #[test]
    fn exact_test_matches_the_naive_oracle((b, o) in pairs(12)) {
        let d = stats::differences(&b, &o).unwrap();
        let t = stats::sign_flip_test(&d, &fast());
        prop_assert_eq!(t.p, oracle_p(&d));
    }

    #[test]
    fn swapping_keeps_p_and_mirrors_the_rest((b, o) in pairs(30)) {
        let opts = fast();
        let ab = paired(&b, &o, &opts).unwrap();
        let ba = paired(&o, &b, &opts).unwrap();
        if matches!(ab.test.method, Method::Exact { .. }) {
            prop_assert_eq!(ab.test.p, ba.test.p);
        } else {
            prop_assert!((ab.test.p - ba.test.p).abs() < 0.03);
        }
        prop_assert!((ab.delta + ba.delta).abs() < 1e-12);
        // The bootstrap resamples the sorted differences, and sorting does not commute with
        // negation, so the mirrored interval comes from other draws: equal up to sampling noise,
        // a few steps of the resample mean's lattice ((max − min) / n) at most.
        let d = stats::differences(&b, &o).unwrap();
        let spread = d.iter().copied().fold(f64::MIN, f64::max) - d.iter().copied().fold(f64::MAX, f64::min);
        let tol = 3.0 * spread / d.len() as f64 + 1e-9;
        prop_assert!((ab.ci.lo + ba.ci.hi).abs() <= tol && (ab.ci.hi + ba.ci.lo).abs() <= tol, "{:?} {:?}", ab.ci, ba.ci);
        prop_assert_eq!((ab.wins, ab.ties, ab.losses), (ba.losses, ba.ties, ba.wins));
    }

    #[test]
    fn exact_p_ignores_order_and_scale((b, o) in pairs(16), k in 0.1f64..10.0) {
        let d = stats::differences(&b, &o).unwrap();
        let p = stats::sign_flip_test(&d, &fast()).p;
        let mut rev = d.clone();
        rev.reverse();
        prop_assert_eq!(stats::sign_flip_test(&rev, &fast()).p, p);
        let scaled: Vec<f64> = d.iter().map(|x| x * k).collect();
        prop_assert_eq!(stats::sign_flip_test(&scaled, &fast()).p, p);
    }

    #[test]
    fn order_of_tasks_changes_nothing((b, o) in pairs(50), rotate in 0usize..50) {
        let opts = fast();
        let n = b.len();
        let perm = |v: &[f64]| -> Vec<f64> { (0..n).map(|i| v[(n - 1 - i + rotate) % n]).collect() };
        let s = paired(&b, &o, &opts).unwrap();
        let t = paired(&perm(&b), &perm(&o), &opts).unwrap();
        prop_assert_eq!(s.test, t.test);
        prop_assert_eq!(s.delta.to_bits(), t.delta.to_bits());
        prop_assert_eq!((s.ci.lo.to_bits(), s.ci.hi.to_bits()), (t.ci.lo.to_bits(), t.ci.hi.to_bits()));
    }

    #[test]
    fn p_in_range_interval_ordered_and_reproducible((b, o) in pairs(60)) {
        let opts = fast();
        let s = paired(&b, &o, &opts).unwrap();
        prop_assert!(s.test.p > 0.0 && s.test.p <= 1.0);
        prop_assert!(s.ci.lo <= s.ci.hi);
        prop_assert_eq!(s.wins + s.ties + s.losses, b.len());
        let again = paired(&b, &o, &opts).unwrap();
        prop_assert_eq!(s.test.p.to_bits(), again.test.p.to_bits());
        prop_assert_eq!((s.ci.lo.to_bits(), s.ci.hi.to_bits()), (again.ci.lo.to_bits(), again.ci.hi.to_bits()));
    }

    #[test]
    fn holm_is_monotone_bounded_and_above_raw(p in prop::collection::vec(0.0f64..=1.0, 0..12)) {
        let a = holm(&p);
        for i in 0..p.len() {
            prop_assert!(a[i] >= p[i] && a[i] <= 1.0);
            for j in 0..p.len() {
                if p[i] <= p[j] {
                    prop_assert!(a[i] <= a[j]);
                }
            }
        }
    }
}

/// Exact p-values of a realistic 20-task comparison, enumerated by hand from the definition:
/// two tasks lose a whole point of reciprocal rank (1 → 1/2), one gains (1/2 → 1), the rest tie.
/// Differences −1/2, −1/2, +1/2: observed |Σ| = 1/2; the 8 assignments give ±3/2 (2 of them) and
/// ±1/2 (6): all reach 1/2, so p = 1.
#[test]
fn twenty_tasks_three_movements() {
    let mut base = vec![1.0; 20];
    let mut other = vec![1.0; 20];
    other[0] = 0.5;
    other[1] = 0.5;
    base[2] = 0.5;
    let s = paired(&base, &other, &Options::default()).unwrap();
    assert_eq!(s.test.p, 1.0);
    assert_eq!(s.test.method, Method::Exact { nonzero: 3 });
    assert_eq!((s.wins, s.ties, s.losses), (1, 17, 2));
    assert!((s.delta - (-0.5 / 20.0)).abs() < 1e-15);
}

/// Five of twenty tasks lose 1/2, none gain: only the all-minus and all-plus assignments of the
/// five reach |Σ| = 5/2, p = 2/32.
#[test]
fn five_losses_of_twenty() {
    let base = vec![1.0; 20];
    let other: Vec<f64> = (0..20).map(|i| if i < 5 { 0.5 } else { 1.0 }).collect();
    let s = paired(&base, &other, &Options::default()).unwrap();
    assert_eq!(s.test.p, 0.0625);
    assert!(s.ci.hi <= 0.0 && s.ci.lo >= -0.25, "{:?}", s.ci);
}
