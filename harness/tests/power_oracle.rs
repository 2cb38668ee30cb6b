//! Power and minimum detectable effect (`ranklab::stats::power`) against an independent
//! computation: statsmodels' `TTestPower`, two-sided, α = 0.05, in
//! `tests/fixtures/power/statsmodels.csv`, made by `tests/fixtures/power/make.py` (the script
//! names the statsmodels version). Properties:
//! - power at (d, n) equals statsmodels' to 1e-6;
//! - the effect size detected with 80% power at n is the root of statsmodels' power to 1e-6;
//! - the tasks needed for effect d is the ceiling of statsmodels' continuous solution.

use ranklab::stats::power::{min_detectable_effect_size, power, tasks_needed};

fn rows() -> Vec<(String, Option<usize>, Option<f64>, f64)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/power/statsmodels.csv"
    ))
    .unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("kind"))
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].to_string(),
                f[1].parse().ok(),
                f[2].parse().ok(),
                f[3].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn power_matches_statsmodels() {
    let mut seen = 0;
    for (kind, n, d, want) in rows() {
        if kind == "power" {
            let got = power(d.unwrap(), n.unwrap(), 0.05);
            assert!(
                (got - want).abs() < 1e-6,
                "n {n:?} d {d:?}: {got} vs {want}"
            );
            seen += 1;
        }
    }
    assert!(seen >= 20);
}

#[test]
fn minimum_detectable_effect_matches_statsmodels() {
    let mut seen = 0;
    for (kind, n, _, want) in rows() {
        if kind == "mde" {
            let got = min_detectable_effect_size(n.unwrap(), 0.05, 0.8);
            assert!((got - want).abs() < 1e-6, "n {n:?}: {got} vs {want}");
            seen += 1;
        }
    }
    assert!(seen >= 5);
}

#[test]
fn tasks_needed_is_the_ceiling_of_statsmodels_solution() {
    let mut seen = 0;
    for (kind, _, d, want) in rows() {
        if kind == "nobs" {
            assert_eq!(
                tasks_needed(d.unwrap(), 0.05, 0.8),
                Some(want as usize),
                "d {d:?}"
            );
            seen += 1;
        }
    }
    assert!(seen >= 5);
}
