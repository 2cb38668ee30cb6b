//! The paired statistics (`ranklab::stats`) against an independent implementation: SciPy's
//! `permutation_test` and `bootstrap` and statsmodels' `multipletests`, on fixed samples, in
//! `tests/fixtures/stats/scipy.json`, made by `tests/fixtures/stats/make.py` (which names the
//! versions and the exact calls). Each sample is a list of per-task differences, fed to
//! [`paired`] as `other` against an all-zero baseline, with the options every report uses
//! ([`Options::default`]: exact test up to 20 non-zero differences, else 100,000 random sign
//! assignments; 10,000 bootstrap resamples; seed 42). Properties:
//! - exact sign-flip p (every one of the 2^n assignments on both sides) equals SciPy's to the
//!   bit: both are a count over 2^n;
//! - a sampled p is within four Monte-Carlo standard errors of SciPy's (exact, or itself sampled
//!   with 10^6 assignments): sd of a p estimated from B draws is sqrt(p (1 - p) / B), plus 1/B
//!   for the `+ 1` both add;
//! - each end of the 95% percentile bootstrap interval is within 0.2 bootstrap standard
//!   deviations of SciPy's (10^6 resamples). The Monte-Carlo error of a 2.5% quantile of B
//!   resample means is about sqrt(0.025 * 0.975 / B) / phi(1.96) = 0.027 sd at B = 10,000 (and
//!   0.003 sd for SciPy's 10^6), so four errors are 0.11 sd; the rest covers the lattice of
//!   the coarsest sample (`rr10`: means move in steps of 0.025 = 0.18 sd, and the two
//!   interpolate differently between neighbouring resample means);
//! - Holm-adjusted p equals statsmodels' to the bit, on fixed families and on the family of the
//!   samples' own p-values.

use ranklab::stats::{holm, paired, Method, Options};
use serde_json::Value;

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/stats/scipy.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
fn sign_flip_p_and_bootstrap_interval_agree_with_scipy() {
    let f = fixture();
    let opts = Options::default();
    let mut checked = (0, 0, 0);
    for s in f["samples"].as_array().unwrap() {
        let name = s["name"].as_str().unwrap();
        let d = floats(&s["d"]);
        let zeros = vec![0.0; d.len()];
        let r = paired(&zeros, &d, &opts).unwrap();
        assert_eq!(
            r.test.nonzero,
            s["nonzero"].as_u64().unwrap() as usize,
            "{name}"
        );
        let b = opts.permutations as f64 + 1.0;
        match (&r.test.method, s.get("p_exact"), s.get("p_sampled")) {
            (Method::Exact { .. }, Some(p), _) => {
                assert_eq!(r.test.p, p.as_f64().unwrap(), "{name}: exact p");
                checked.0 += 1;
            }
            (Method::Sampled { .. }, Some(p), _) => {
                let p = p.as_f64().unwrap();
                let tol = 4.0 * (p * (1.0 - p) / b).sqrt() + 1.0 / b;
                assert!(
                    (r.test.p - p).abs() <= tol,
                    "{name}: sampled p {} vs SciPy's exact {p} (tolerance {tol})",
                    r.test.p
                );
                checked.1 += 1;
            }
            (Method::Sampled { .. }, None, Some(p)) => {
                let p = p.as_f64().unwrap();
                let theirs = s["p_resamples"].as_f64().unwrap() + 1.0;
                let tol = 4.0 * (p * (1.0 - p) * (1.0 / b + 1.0 / theirs)).sqrt() + 1.0 / b;
                assert!(
                    (r.test.p - p).abs() <= tol,
                    "{name}: sampled p {} vs SciPy's sampled {p} (tolerance {tol})",
                    r.test.p
                );
                checked.1 += 1;
            }
            (m, _, _) => panic!("{name}: ranklab's method {m:?} and the fixture do not match"),
        }
        let ci = floats(&s["ci95"]);
        let tol = 0.2 * s["boot_sd"].as_f64().unwrap();
        assert!(
            (r.ci.lo - ci[0]).abs() <= tol && (r.ci.hi - ci[1]).abs() <= tol,
            "{name}: interval [{}, {}] vs SciPy's [{}, {}] (tolerance {tol})",
            r.ci.lo,
            r.ci.hi,
            ci[0],
            ci[1]
        );
        checked.2 += 1;
    }
    assert_eq!(checked, (3, 2, 5), "exact p, sampled p, intervals checked");
}

#[test]
fn holm_agrees_with_statsmodels_to_the_bit() {
    let f = fixture();
    let families = f["holm"].as_array().unwrap();
    assert!(families.len() >= 4);
    for fam in families {
        let p = floats(&fam["p"]);
        assert_eq!(holm(&p), floats(&fam["adjusted"]), "holm({p:?})");
    }
}
