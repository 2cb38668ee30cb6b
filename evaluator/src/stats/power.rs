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

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// A process-wide memo of a pure function's values.
type Memo<K> = OnceLock<Mutex<HashMap<K, f64>>>;

/// Power of the sign-off: 80%.
pub const POWER: f64 = 0.8;

/// The largest number of tasks [`tasks_needed`] reports; beyond it, "more than".
pub const MAX_TASKS: usize = 1_000_000;

fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}

/// Simpson steps of the integral over s (even).
const STEPS: usize = 800;

/// The integration grid of one `df`: the points s_i and the density of s there. It depends on
/// `df` alone, so it is computed once per `df` and shared by every rejection probability at that
/// `df` (the critical value's search evaluates a dozen); the points and densities are the same
/// expressions, in the same order, as evaluating them inline, so every sum is the same bits.
struct Grid {
    /// (s_i, density(s_i)) for i = 0..=STEPS; s_0 = lo and s_STEPS = hi exactly.
    points: Vec<(f64, f64)>,
    h: f64,
}

impl Grid {
    fn new(df: f64) -> Grid {
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
        let h = (hi - lo) / STEPS as f64;
        let points = (0..=STEPS)
            .map(|i| {
                let s = match i {
                    0 => lo,
                    STEPS => hi,
                    _ => lo + i as f64 * h,
                };
                (s, density(s))
            })
            .collect();
        Grid { points, h }
    }

    /// The grid of `df`, made once per process.
    fn of(df: f64) -> Arc<Grid> {
        static GRIDS: OnceLock<Mutex<HashMap<u64, Arc<Grid>>>> = OnceLock::new();
        let map = GRIDS.get_or_init(|| Mutex::new(HashMap::new()));
        if let Some(g) = map
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&df.to_bits())
        {
            return Arc::clone(g);
        }
        let g = Arc::new(Grid::new(df));
        let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(m.entry(df.to_bits()).or_insert(g))
    }
}

/// Rejection probability of the two-sided paired t-test with `df` degrees of freedom, critical
/// value `tc`, at noncentrality `delta`.
fn reject(delta: f64, df: f64, tc: f64) -> f64 {
    let grid = Grid::of(df);
    let f = |&(s, density): &(f64, f64)| density * (phi(delta - tc * s) + phi(-delta - tc * s));
    let p = &grid.points;
    let mut sum = f(&p[0]) + f(&p[STEPS]);
    for (i, point) in p.iter().enumerate().take(STEPS).skip(1) {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * f(point);
    }
    sum * grid.h / 3.0
}

/// How far from α a rejection probability must be before the critical value's bisection may
/// decide a point on the same side without evaluating it: far above the rounding error of the
/// sum (about 1e-16 here), far below any difference the bisection resolves.
const MARGIN: f64 = 1e-13;

/// The two-sided critical value of Student's t with `df` degrees of freedom at level `alpha`:
/// the bisection of [0, 10^4] on `reject(0, df, t) > alpha` to a relative 1e-12, memoized per
/// (df, alpha).
///
/// The bisection's result is fixed by the side each midpoint falls on. The rejection
/// probability decreases in t, so once two points a < b are known with reject(a) > α + MARGIN
/// and reject(b) < α − MARGIN, every midpoint at or below a is above α and every one at or
/// above b below it: only the midpoints between a and b are evaluated. a and b come from a
/// secant search next to the root (a dozen evaluations in all instead of about 45), and the
/// answer is the same bits as the plain bisection's (a test compares them).
pub fn t_critical(df: f64, alpha: f64) -> f64 {
    static MEMO: Memo<(u64, u64)> = OnceLock::new();
    let memo = MEMO.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (df.to_bits(), alpha.to_bits());
    if let Some(&t) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return t;
    }
    let (a, b) = bracket(df, alpha);
    let (mut lo, mut hi) = (0.0f64, 1.0e4f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        let above = if mid <= a {
            true
        } else if mid >= b {
            false
        } else {
            reject(0.0, df, mid) > alpha
        };
        if above {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * hi.max(1.0) {
            break;
        }
    }
    let t = 0.5 * (lo + hi);
    memo.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, t);
    t
}

/// Points a < b next to the critical value with reject(a) > α + MARGIN and
/// reject(b) < α − MARGIN, or (0, 10^4) (nothing known: the bisection evaluates every
/// midpoint) when the search does not find them.
fn bracket(df: f64, alpha: f64) -> (f64, f64) {
    const NONE: (f64, f64) = (0.0, 1.0e4);
    let h = |t: f64| reject(0.0, df, t) - alpha;
    // Start from the normal quantile with the first Cornish-Fisher term for Student's t.
    let z = normal_quantile(1.0 - alpha / 2.0);
    if !z.is_finite() || z <= 0.0 {
        return NONE;
    }
    let mut t0 = z + (z * z * z + z) / (4.0 * df);
    let mut t1 = t0 * 1.01;
    let (mut h0, mut h1) = (h(t0), h(t1));
    for _ in 0..30 {
        if !(h0.is_finite() && h1.is_finite()) || h1 == h0 {
            break;
        }
        let next = t1 - h1 * (t1 - t0) / (h1 - h0);
        if !next.is_finite() || next <= 0.0 || next >= 1.0e4 {
            return NONE;
        }
        (t0, h0) = (t1, h1);
        t1 = next;
        h1 = h(t1);
        if (t1 - t0).abs() < 1e-13 * t1 {
            break;
        }
    }
    // Step away from the root on both sides until the margins hold.
    let mut eps = 1e-11;
    while eps < 1e-3 {
        let (a, b) = (t1 * (1.0 - eps), t1 * (1.0 + eps));
        if h(a) > MARGIN && h(b) < -MARGIN {
            return (a, b);
        }
        eps *= 10.0;
    }
    NONE
}

/// The standard normal quantile, by bisection on Φ (only a starting point; any accuracy does).
fn normal_quantile(p: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if phi(mid) < p {
            lo = mid;
        } else {
            hi = mid;
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
/// at level `alpha` (memoized per (n, alpha, target): every configuration and measure of a
/// suite asks for the same n).
pub fn min_detectable_effect_size(n: usize, alpha: f64, target: f64) -> f64 {
    assert!(n >= 2, "power needs at least 2 tasks");
    static MEMO: Memo<(usize, u64, u64)> = OnceLock::new();
    let memo = MEMO.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (n, alpha.to_bits(), target.to_bits());
    if let Some(&d) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return d;
    }
    let head = [n as u64, alpha.to_bits(), target.to_bits()];
    let [bits, _] = super::memo::remembered("mde/1", &head, &[], || {
        [mde_search(n, alpha, target).to_bits(), 0]
    });
    let d = f64::from_bits(bits);
    memo.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, d);
    d
}

fn mde_search(n: usize, alpha: f64, target: f64) -> f64 {
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
///
/// Power grows with n, so the answer is the first n whose power reaches the target. The search
/// starts at Guenther's approximation ((z_α/2 + z_power) / d)² + z_α/2² / 2, usually within a
/// task or two of it, and gallops from there to a pair n − 1 (below) and n (reached): a handful
/// of power evaluations where an exponential search from 2 took about 2 log2 n.
pub fn tasks_needed(d: f64, alpha: f64, target: f64) -> Option<usize> {
    let d = d.abs();
    if d.is_nan() || d <= 0.0 || !d.is_finite() {
        return None;
    }
    let head = [d.to_bits(), alpha.to_bits(), target.to_bits()];
    let [found, n] = super::memo::remembered("tasks-needed/1", &head, &[], || {
        match tasks_search(d, alpha, target) {
            Some(n) => [1, n as u64],
            None => [0, 0],
        }
    });
    (found == 1).then_some(n as usize)
}

/// [`tasks_needed`] of a positive, finite `d`, searched.
fn tasks_search(d: f64, alpha: f64, target: f64) -> Option<usize> {
    let ok = |n: usize| power(d, n, alpha) >= target;
    if ok(2) {
        return Some(2);
    }
    let za = normal_quantile(1.0 - alpha / 2.0);
    let zb = normal_quantile(target);
    let guess = ((za + zb) / d).powi(2) + za * za / 2.0;
    let start = if guess.is_finite() {
        guess.ceil().clamp(3.0, MAX_TASKS as f64) as usize
    } else {
        MAX_TASKS
    };
    // lo: power below the target (2 is); hi: reached.
    let (mut lo, mut hi);
    if ok(start) {
        hi = start;
        lo = 2;
        let mut step = 1;
        while hi > step + 2 {
            let c = hi - step;
            if ok(c) {
                hi = c;
                step *= 2;
            } else {
                lo = c;
                break;
            }
        }
    } else {
        if start == MAX_TASKS {
            return None;
        }
        lo = start;
        let mut step = 1;
        loop {
            let c = (lo + step).min(MAX_TASKS);
            if ok(c) {
                hi = c;
                break;
            }
            if c == MAX_TASKS {
                return None;
            }
            lo = c;
            step *= 2;
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

    // The previous implementation, kept as the oracle of the faster one: the density inline,
    // the plain bisection for the critical value, the exponential search from 2 for the tasks.
    fn reject_inline(delta: f64, df: f64, tc: f64) -> f64 {
        let sd = (1.0 / (2.0 * df)).sqrt();
        let (lo, hi) = ((1.0 - 14.0 * sd).max(0.0), 1.0 + 14.0 * sd);
        let half = df / 2.0;
        let ln_norm =
            std::f64::consts::LN_2 + df.ln() - half * std::f64::consts::LN_2 - libm::lgamma(half);
        let density = |s: f64| -> f64 {
            if s <= 0.0 {
                return if df == 1.0 { ln_norm.exp() } else { 0.0 };
            }
            let v = df * s * s;
            (ln_norm + s.ln() + (half - 1.0) * v.ln() - v / 2.0).exp()
        };
        let f = |s: f64| density(s) * (phi(delta - tc * s) + phi(-delta - tc * s));
        let h = (hi - lo) / STEPS as f64;
        let mut sum = f(lo) + f(hi);
        for i in 1..STEPS {
            let w = if i % 2 == 1 { 4.0 } else { 2.0 };
            sum += w * f(lo + i as f64 * h);
        }
        sum * h / 3.0
    }

    fn t_critical_plain(df: f64, alpha: f64) -> f64 {
        let (mut lo, mut hi) = (0.0f64, 1.0e4f64);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if reject_inline(0.0, df, mid) > alpha {
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

    fn tasks_needed_plain(d: f64, alpha: f64, target: f64) -> Option<usize> {
        let ok = |n: usize| {
            let df = (n - 1) as f64;
            reject_inline(d * (n as f64).sqrt(), df, t_critical_plain(df, alpha)) >= target
        };
        if ok(2) {
            return Some(2);
        }
        let (mut lo, mut hi) = (2usize, 4usize);
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

    #[test]
    fn shared_grid_gives_the_inline_sums_bits() {
        for df in [1.0, 2.0, 7.0, 34.0, 299.0, 1e5] {
            for (delta, tc) in [(0.0, 1.96), (1.3, 2.03), (3.7, 12.7), (0.2, 0.5)] {
                assert_eq!(
                    reject(delta, df, tc).to_bits(),
                    reject_inline(delta, df, tc).to_bits(),
                    "df {df} delta {delta} tc {tc}"
                );
            }
        }
    }

    #[test]
    fn critical_values_are_the_plain_bisections_bits() {
        let dfs = (1..=60)
            .map(f64::from)
            .chain([99.0, 127.0, 299.0, 1000.0, 4095.0, 65_535.0, 999_999.0]);
        for df in dfs {
            for alpha in [0.05, 0.01, 0.2] {
                assert_eq!(
                    t_critical(df, alpha).to_bits(),
                    t_critical_plain(df, alpha).to_bits(),
                    "df {df} alpha {alpha}"
                );
            }
        }
    }

    #[test]
    fn tasks_needed_is_the_exponential_searchs_answer() {
        let ds = [
            3.0, 2.0, 1.5, 1.2, 1.0, 0.8, 0.61, 0.5, 0.37, 0.3, 0.25, 0.2, 0.15, 0.11, 0.1, 0.07,
            0.05, 0.03, 0.02, 0.012, 0.007, 0.0035, 0.0028, 0.001,
        ];
        for d in ds {
            for target in [0.8, 0.9] {
                assert_eq!(
                    tasks_needed(d, 0.05, target),
                    tasks_needed_plain(d, 0.05, target),
                    "d {d} target {target}"
                );
            }
        }
    }

    #[test]
    fn zero_noise_has_no_estimate() {
        let p = analyse(&[0.0; 10], 0.05);
        assert_eq!((p.mde, p.tasks_needed), (None, None));
    }
}
