//! Power and the minimum detectable effect of a paired comparison: the smallest Δ a suite of
//! `n` tasks detects with 80% power at α = 0.05, and how many tasks an observed Δ would need.
//!
//! This is the topic-set-size design of Sakai (2016, "Topic set size design", Information
//! Retrieval Journal 19): the two-sided paired t-test on the per-task differences, with the
//! variance estimated from the differences the report observed. The randomization test the
//! reports use is the t-test's exact-conditional counterpart and agrees with it closely at these
//! sizes; the t-test is what makes power a formula rather than a simulation.
//!
//! Power of the two-sided test at noncentrality δ = d·√n (d = Δ / sd of the differences) with
//! ν = n − 1 degrees of freedom and critical value t_c:
//!
//! ```text
//! power = E_s[ Φ(δ − t_c·s) + Φ(−δ − t_c·s) ],   s = √(V/ν), V ~ χ²(ν)
//! ```
//!
//! integrated numerically (Simpson's rule over the density of s). t_c is found from the same
//! integral at δ = 0 (power = α). Checked against statsmodels' `TTestPower`
//! (`harness/tests/fixtures/power/`, with the script that made it).

/// Power of the sign-off: 80%.
pub const POWER: f64 = 0.8;

/// The largest number of tasks [`tasks_needed`] reports; beyond it, "more than".
pub const MAX_TASKS: usize = 1_000_000;

fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Rejection probability of the two-sided paired t-test with `df` degrees of freedom, critical
/// value `tc`, at noncentrality `delta`.
fn reject(delta: f64, df: f64, tc: f64) -> f64 {
    // The density of s = sqrt(V/df), V ~ chi2(df): mass near 1 with sd ~ 1/sqrt(2 df).
    let sd = (1.0 / (2.0 * df)).sqrt();
    let (lo, hi) = ((1.0 - 14.0 * sd).max(0.0), 1.0 + 14.0 * sd);
    let half = df / 2.0;
    let ln_norm =
        std::f64::consts::LN_2 + df.ln() - half * std::f64::consts::LN_2 - libm::lgamma(half);
    let density = |s: f64| -> f64 {
        if s <= 0.0 {
            // g(0) is finite (and non-zero) only for df = 1.
            return if df == 1.0 { ln_norm.exp() } else { 0.0 };
        }
        let v = df * s * s;
        (ln_norm + s.ln() + (half - 1.0) * v.ln() - v / 2.0).exp()
    };
    let f = |s: f64| density(s) * (phi(delta - tc * s) + phi(-delta - tc * s));
    const STEPS: usize = 800; // even
    let h = (hi - lo) / STEPS as f64;
    let mut sum = f(lo) + f(hi);
    for i in 1..STEPS {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * f(lo + i as f64 * h);
    }
    sum * h / 3.0
}

/// The two-sided critical value of Student's t with `df` degrees of freedom at level `alpha`.
pub fn t_critical(df: f64, alpha: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0e4f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if reject(0.0, df, mid) > alpha {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Power of the two-sided paired t-test on `n` tasks (n >= 2) at level `alpha` for a true
/// standardized effect `d` = Δ / sd of the differences.
pub fn power(d: f64, n: usize, alpha: f64) -> f64 {
    assert!(n >= 2, "power needs at least 2 tasks");
    let df = (n - 1) as f64;
    reject(d.abs() * (n as f64).sqrt(), df, t_critical(df, alpha))
}

/// The smallest standardized effect (Δ / sd) that `n` tasks detect with probability `target`
/// at level `alpha`.
pub fn min_detectable_effect_size(n: usize, alpha: f64, target: f64) -> f64 {
    assert!(n >= 2, "power needs at least 2 tasks");
    let df = (n - 1) as f64;
    let tc = t_critical(df, alpha);
    let sqrt_n = (n as f64).sqrt();
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while reject(hi * sqrt_n, df, tc) < target {
        hi *= 2.0;
        if hi > 1e6 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if reject(mid * sqrt_n, df, tc) < target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-10 * hi {
            break;
        }
    }
    hi
}

/// The smallest number of tasks n >= 2 with power >= `target` for the standardized effect `d`;
/// `None` when more than [`MAX_TASKS`] would be needed (or `d` is zero).
pub fn tasks_needed(d: f64, alpha: f64, target: f64) -> Option<usize> {
    let d = d.abs();
    if d.is_nan() || d <= 0.0 || !d.is_finite() {
        return None;
    }
    let ok = |n: usize| power(d, n, alpha) >= target;
    if ok(2) {
        return Some(2);
    }
    // Exponential search, then bisection: power grows with n.
    let mut lo = 2usize;
    let mut hi = 4usize;
    while !ok(hi) {
        lo = hi;
        hi *= 2;
        if hi > MAX_TASKS {
            if ok(MAX_TASKS) {
                hi = MAX_TASKS;
                break;
            }
            return None;
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Sample standard deviation (n − 1) of the differences.
pub fn sd(diffs: &[f64]) -> f64 {
    let n = diffs.len();
    if n < 2 {
        return 0.0;
    }
    let mean = diffs.iter().sum::<f64>() / n as f64;
    let ss: f64 = diffs.iter().map(|d| (d - mean) * (d - mean)).sum();
    (ss / (n - 1) as f64).sqrt()
}

/// Power analysis of one configuration against the baseline on one measure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Power {
    /// Tasks.
    pub n: usize,
    /// Observed Δ (mean difference).
    pub delta: f64,
    /// Standard deviation of the per-task differences.
    pub sd: f64,
    /// The smallest |Δ| detected with [`POWER`] at α (None: every difference is zero, so there is
    /// no estimate of the noise, or fewer than 2 tasks).
    pub mde: Option<f64>,
    /// Tasks needed to detect the observed Δ with [`POWER`] at α (None: Δ is zero, there is no
    /// noise estimate, or more than [`MAX_TASKS`]).
    pub tasks_needed: Option<usize>,
}

/// Power analysis of the paired differences `diffs` (configuration − baseline) at level `alpha`.
pub fn analyse(diffs: &[f64], alpha: f64) -> Power {
    let n = diffs.len();
    let delta = if n == 0 {
        0.0
    } else {
        diffs.iter().sum::<f64>() / n as f64
    };
    let sd = sd(diffs);
    if n < 2 || sd <= super::TIE_EPSILON {
        return Power {
            n,
            delta,
            sd,
            mde: None,
            tasks_needed: None,
        };
    }
    let mde = min_detectable_effect_size(n, alpha, POWER) * sd;
    Power {
        n,
        delta,
        sd,
        mde: mde.is_finite().then_some(mde),
        tasks_needed: tasks_needed(delta / sd, alpha, POWER),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_values_match_student_t_tables() {
        // Two-sided 5% points of Student's t (any statistics table): df 1, 10, 34, 1000.
        for (df, want) in [
            (1.0, 12.7062),
            (10.0, 2.2281),
            (34.0, 2.0322),
            (1000.0, 1.9623),
        ] {
            let got = t_critical(df, 0.05);
            assert!((got - want).abs() < 5e-4, "df {df}: {got} vs {want}");
        }
    }

    #[test]
    fn power_at_zero_effect_is_alpha_and_grows_with_n() {
        assert!((power(0.0, 20, 0.05) - 0.05).abs() < 1e-6);
        assert!(power(0.5, 40, 0.05) > power(0.5, 20, 0.05));
    }

    #[test]
    fn zero_noise_has_no_estimate() {
        let p = analyse(&[0.0; 10], 0.05);
        assert_eq!((p.mde, p.tasks_needed), (None, None));
    }
}
