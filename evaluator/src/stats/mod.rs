//! Paired statistics: is a difference between two configurations, measured on the same tasks,
//! more than one task's luck?
//!
//! For a configuration against a baseline, on per-task values of one measure (paired by task):
//! - [`permutation`]: a two-sided paired sign-flip randomization test of the mean difference —
//!   exact enumeration of every sign assignment when there are at most [`Options::exact_max`]
//!   non-zero differences (2^20, about a million), otherwise [`Options::permutations`] random
//!   assignments drawn from a seeded ChaCha stream;
//! - [`bootstrap`]: a paired bootstrap percentile interval of the mean difference (seeded,
//!   [`Options::resamples`] resamples of the tasks);
//! - win / tie / loss counts;
//! - [`holm`]: Holm's step-down correction across the configurations compared with one
//!   baseline, reported beside the raw p-value;
//! - [`reading`]: the one sentence an ADR quotes.
//! - [`memo`]: where a program may keep computed intervals and p-values between runs (a
//!   content-addressed [`memo::Store`]; none unless installed, so the same bits either way).
//!
//! Guarantees: the same values and [`Options`] give bit-identical results on every run and every
//! platform (our own bounded sampling on a ChaCha8 stream, no `HashMap` order). Each comparison
//! reads its streams from [`Options::seed`], so its numbers do not depend on which other
//! comparisons were computed before it or on which thread computed them: a stream is drawn once
//! per process and shared by every comparison that needs it (`stats::draws`), and the comparisons of
//! a family (and the families of a report) run on rayon's pool; and the test, the interval and Δ depend only
//! on the multiset of differences (they are sorted first), not on the order of the tasks, so a
//! suite report and `ranklab compare` on its run files (qrels order) agree to the bit.
//!
//! A difference is a tie when its absolute value is at most [`TIE_EPSILON`]; ties carry no sign
//! in the test and count as ties.

pub mod agreement;
pub mod bootstrap;
mod draws;
pub mod holm;
pub mod memo;
pub mod permutation;
pub mod power;
pub mod reading;
mod rng;
pub use rng::{Source, Stream};

use std::fmt;

use rayon::prelude::*;

pub use bootstrap::{mean_interval, quantile, Interval};
pub use holm::holm;
pub use permutation::{sign_flip_test, Method, SignFlip};
pub use reading::{reading, Finding};

/// The seed every report and `ranklab compare` use unless told otherwise.
pub const DEFAULT_SEED: u64 = 42;

/// Differences at most this large in absolute value are ties (exact zero in the test).
pub const TIE_EPSILON: f64 = 1e-12;

/// The significance level of the one-line reading.
pub const ALPHA: f64 = 0.05;

/// Settings of the paired statistics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Seed of the random streams (permutations and bootstrap resamples).
    pub seed: u64,
    /// Random sign assignments when the test cannot enumerate them all.
    pub permutations: usize,
    /// Bootstrap resamples.
    pub resamples: usize,
    /// Coverage of the confidence interval (0.95).
    pub confidence: f64,
    /// Largest number of non-zero differences tested by exact enumeration (2^n assignments).
    pub exact_max: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: DEFAULT_SEED,
            permutations: 100_000,
            resamples: 10_000,
            confidence: 0.95,
            exact_max: 20,
        }
    }
}

impl Options {
    /// A few sentences naming the methods, their sizes and the seed, for a report's notes;
    /// `noun` names what is compared ("configuration", "run") and `units` what is paired
    /// ("tasks", "queries").
    pub fn describe(&self, noun: &str, units: &str) -> String {
        format!(
            "Δ = {noun} − baseline, mean over {units}. {:.0}% CI: paired bootstrap percentile interval, {} resamples of the {units}. \
             p: two-sided paired sign-flip randomization test, exact over all 2^n sign assignments when n ≤ {} {units} differ, \
             otherwise {} random assignments; Holm-adjusted across the {noun}s compared with the baseline, per measure. \
             Seed {}.",
            self.confidence * 100.0,
            thousands(self.resamples),
            self.exact_max,
            thousands(self.permutations),
            self.seed,
        )
    }
}

/// Why paired statistics could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum StatsError {
    /// The two samples are not paired: different lengths.
    #[error(
        "paired samples of different lengths: baseline has {baseline} values, the other {other}"
    )]
    LengthMismatch {
        /// Values of the baseline.
        baseline: usize,
        /// Values of the other configuration.
        other: usize,
    },
    /// No pair at all.
    #[error("no paired values to compare (zero tasks)")]
    Empty,
    /// A value that is NaN or infinite.
    #[error("value {index} is not a finite number ({value})")]
    NotFinite {
        /// 0-based index of the pair.
        index: usize,
        /// The value.
        value: f64,
    },
    /// Options outside their range.
    #[error("invalid statistics options: {0}")]
    BadOptions(&'static str),
}

/// One configuration against the baseline on one measure.
#[derive(Debug, Clone, PartialEq)]
pub struct Paired {
    /// Number of pairs (tasks).
    pub n: usize,
    /// Mean of the baseline's values.
    pub baseline_mean: f64,
    /// Mean of the configuration's values.
    pub mean: f64,
    /// Mean of the differences (configuration − baseline).
    pub delta: f64,
    /// Bootstrap interval of `delta`.
    pub ci: Interval,
    /// Tasks where the configuration is higher.
    pub wins: usize,
    /// Tasks where both are equal (within [`TIE_EPSILON`]).
    pub ties: usize,
    /// Tasks where the configuration is lower.
    pub losses: usize,
    /// The randomization test.
    pub test: SignFlip,
    /// Holm-adjusted p across the family it was compared in ([`against_baseline`]); equal to
    /// `test.p` when compared alone.
    pub p_holm: f64,
}

impl Paired {
    /// True when the Holm-adjusted p is below `alpha`.
    pub fn significant(&self, alpha: f64) -> bool {
        self.p_holm < alpha
    }
}

fn check_options(opts: &Options) -> Result<(), StatsError> {
    if opts.permutations < 1 {
        return Err(StatsError::BadOptions("permutations must be at least 1"));
    }
    if opts.resamples < 1 {
        return Err(StatsError::BadOptions("resamples must be at least 1"));
    }
    if !(opts.confidence > 0.0 && opts.confidence < 1.0) {
        return Err(StatsError::BadOptions(
            "confidence must be strictly between 0 and 1",
        ));
    }
    if opts.exact_max > 30 {
        return Err(StatsError::BadOptions(
            "exact_max above 30 would enumerate more than 2^30 assignments",
        ));
    }
    Ok(())
}

/// Differences `other − baseline`, ties set to exactly zero.
pub fn differences(baseline: &[f64], other: &[f64]) -> Result<Vec<f64>, StatsError> {
    if baseline.len() != other.len() {
        return Err(StatsError::LengthMismatch {
            baseline: baseline.len(),
            other: other.len(),
        });
    }
    if baseline.is_empty() {
        return Err(StatsError::Empty);
    }
    let mut out = Vec::with_capacity(baseline.len());
    for (index, (&b, &o)) in baseline.iter().zip(other).enumerate() {
        for value in [b, o] {
            if !value.is_finite() {
                return Err(StatsError::NotFinite { index, value });
            }
        }
        let d = o - b;
        out.push(if d.abs() <= TIE_EPSILON { 0.0 } else { d });
    }
    Ok(out)
}

/// Mean in index order (the one summation order everything here uses).
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Mean of `values` summed in ascending order: independent of the order of the tasks.
fn sorted_mean(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    mean(&v)
}

/// Compares `other` with `baseline`, pair by pair (same task at the same index).
pub fn paired(baseline: &[f64], other: &[f64], opts: &Options) -> Result<Paired, StatsError> {
    check_options(opts)?;
    let d = differences(baseline, other)?;
    let wins = d.iter().filter(|&&x| x > 0.0).count();
    let losses = d.iter().filter(|&&x| x < 0.0).count();
    let test = sign_flip_test(&d, opts);
    Ok(Paired {
        n: d.len(),
        baseline_mean: mean(baseline),
        mean: mean(other),
        delta: sorted_mean(&d),
        ci: mean_interval(&d, opts),
        wins,
        ties: d.len() - wins - losses,
        losses,
        p_holm: test.p,
        test,
    })
}

/// Compares every configuration in `others` with `baseline` and fills in Holm-adjusted p-values
/// across them (one family: one measure, one baseline).
pub fn against_baseline(
    baseline: &[f64],
    others: &[&[f64]],
    opts: &Options,
) -> Result<Vec<Paired>, StatsError> {
    let mut out = others
        .par_iter()
        .map(|o| paired(baseline, o, opts))
        .collect::<Result<Vec<_>, _>>()?;
    let adjusted = holm(&out.iter().map(|p| p.test.p).collect::<Vec<_>>());
    for (p, a) in out.iter_mut().zip(adjusted) {
        p.p_holm = a;
    }
    Ok(out)
}

/// `12345` as `12,345`.
pub fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A p-value as reports print it: 4 decimals, `<0.0001` below that.
pub fn format_p(p: f64) -> String {
    if p < 0.0001 {
        "<0.0001".to_string()
    } else {
        format!("{p:.4}")
    }
}

/// A signed value with 4 decimals (`+0.0500`, `-0.0500`), zero without a sign.
pub fn format_signed(x: f64) -> String {
    let s = format!("{x:+.4}");
    if s == "+0.0000" || s == "-0.0000" {
        "0.0000".to_string()
    } else {
        s
    }
}

impl Paired {
    /// The difference with its confidence interval as reports print it:
    /// `+0.0500 [+0.0100, +0.0900]` ([`format_signed`] each).
    pub fn delta_with_ci(&self) -> String {
        format!(
            "{} [{}, {}]",
            format_signed(self.delta),
            format_signed(self.ci.lo),
            format_signed(self.ci.hi)
        )
    }
}

impl fmt::Display for Paired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Δ {}, p {} ({}), Holm {}, {}/{}/{}",
            self.delta_with_ci(),
            format_p(self.test.p),
            self.test.method,
            format_p(self.p_holm),
            self.wins,
            self.ties,
            self.losses
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn win_tie_loss_and_means() {
        let b = [0.5, 1.0, 0.0, 1.0 / 3.0];
        let o = [1.0, 1.0, 0.5, 0.25];
        let p = paired(&b, &o, &Options::default()).unwrap();
        assert_eq!((p.wins, p.ties, p.losses), (2, 1, 1));
        assert_eq!(p.n, 4);
        assert!((p.delta - (0.5 + 0.0 + 0.5 - 1.0 / 12.0) / 4.0).abs() < 1e-15);
        assert!((p.mean - p.baseline_mean - p.delta).abs() < 1e-15);
    }

    #[test]
    fn float_noise_is_a_tie() {
        let d = differences(&[0.1 + 0.2], &[0.3]).unwrap();
        assert_eq!(d, vec![0.0]);
    }

    #[test]
    fn bad_input_is_an_error() {
        let o = Options::default();
        assert_eq!(
            paired(&[1.0], &[1.0, 2.0], &o),
            Err(StatsError::LengthMismatch {
                baseline: 1,
                other: 2
            })
        );
        assert_eq!(paired(&[], &[], &o), Err(StatsError::Empty));
        assert!(matches!(
            paired(&[f64::NAN], &[1.0], &o),
            Err(StatsError::NotFinite { index: 0, .. })
        ));
        let bad = Options {
            confidence: 1.0,
            ..o
        };
        assert!(matches!(
            paired(&[1.0], &[1.0], &bad),
            Err(StatsError::BadOptions(_))
        ));
    }

    #[test]
    fn formats() {
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(format_p(0.00001), "<0.0001");
        assert_eq!(format_p(0.25), "0.2500");
        assert_eq!(format_signed(-0.00001), "0.0000");
        assert_eq!(format_signed(0.05), "+0.0500");
        assert_eq!(format_signed(-0.05), "-0.0500");
    }

    #[test]
    fn holm_fills_the_family() {
        let base = [0.0; 6];
        let a = [1.0; 6];
        let b = [0.0; 6];
        let r = against_baseline(&base, &[&a, &b], &Options::default()).unwrap();
        assert_eq!(r[0].test.p, 2.0 / 64.0);
        assert_eq!(r[0].p_holm, 4.0 / 64.0);
        assert_eq!(r[1].test.p, 1.0);
        assert_eq!(r[1].p_holm, 1.0);
    }
}
