//! The agreement statistics of LLM judgments (`ranklab::stats::agreement`) against independent
//! implementations, on the fixed cases of `tests/fixtures/agreement/sklearn_scipy.json`, made by
//! `tests/fixtures/agreement/make.py` (Python 3.11.7, scikit-learn 1.5.2, SciPy 1.14.1, NumPy
//! 2.1.3; the script names the exact calls). Properties:
//! - Cohen's κ, unweighted and quadratic-weighted, equals scikit-learn's `cohen_kappa_score`
//!   (`labels=[0, 1, 2, 3]`) within 1e-12 (both sum the same terms in different orders);
//! - the 4×4 confusion matrix equals scikit-learn's `confusion_matrix`, count for count;
//! - precision and recall of "relevant" (grade ≥ 1) equal scikit-learn's `precision_score` and
//!   `recall_score` within 1e-12;
//! - Kendall's τ-b equals SciPy's `kendalltau` within 1e-12, with and without ties;
//! - the width of κ's 95% bootstrap interval on the 339-pair case is within 20% of
//!   2 · 1.96 · Cohen's (1960) large-sample standard error √(pₒ(1 − pₒ) / (n (1 − pₑ)²)), an
//!   independent approximation of the same spread.
//!
//! Hand-computed cases of each statistic are unit tests in `evaluator/src/stats/agreement.rs`.

use ranklab::stats::agreement::{
    binary, confusion, kappa, kappa_interval, kendall_tau_b, GradePair, Weighting,
};
use ranklab::stats::Options;
use serde_json::Value;

fn fixture() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/agreement/sklearn_scipy.json"
    ))
    .unwrap();
    serde_json::from_str(&text).unwrap()
}

fn grades(v: &Value) -> Vec<u8> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u8)
        .collect()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn pairs_of(case: &Value) -> Vec<GradePair> {
    grades(&case["human"])
        .into_iter()
        .zip(grades(&case["llm"]))
        .map(|(human, llm)| GradePair { human, llm })
        .collect()
}

fn close(got: Option<f64>, want: &Value, what: &str) {
    match (got, want.as_f64()) {
        (Some(g), Some(w)) => assert!((g - w).abs() < 1e-12, "{what}: {g} vs {w}"),
        (None, None) => {}
        _ => panic!("{what}: {got:?} vs {want}"),
    }
}

#[test]
fn kappa_confusion_precision_and_recall_agree_with_scikit_learn() {
    let f = fixture();
    let cases = f["kappa"].as_array().unwrap();
    assert_eq!(cases.len(), 6);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let c = confusion(&pairs_of(case));
        let want: Vec<Vec<u64>> = case["confusion"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect()
            })
            .collect();
        let got: Vec<Vec<u64>> = c.iter().map(|r| r.to_vec()).collect();
        assert_eq!(got, want, "{name}: confusion");
        close(kappa(&c, Weighting::Unweighted), &case["kappa"], name);
        close(
            kappa(&c, Weighting::Quadratic),
            &case["kappa_quadratic"],
            name,
        );
        let b = binary(&c);
        close(b.precision, &case["precision"], name);
        close(b.recall, &case["recall"], name);
    }
}

#[test]
fn tau_b_agrees_with_scipy() {
    let f = fixture();
    let cases = f["tau"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let (x, y) = (floats(&case["x"]), floats(&case["y"]));
        close(kendall_tau_b(&x, &y), &case["tau_b"], name);
    }
}

#[test]
fn kappa_interval_width_matches_the_large_sample_standard_error() {
    let f = fixture();
    let case = f["kappa"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "weak339")
        .unwrap();
    let pairs = pairs_of(case);
    let n = pairs.len() as f64;
    let c = confusion(&pairs);
    let po = (0..4).map(|i| c[i][i] as f64).sum::<f64>() / n;
    let rows: Vec<f64> = (0..4)
        .map(|i| c[i].iter().sum::<u64>() as f64 / n)
        .collect();
    let cols: Vec<f64> = (0..4)
        .map(|j| (0..4).map(|i| c[i][j]).sum::<u64>() as f64 / n)
        .collect();
    let pe: f64 = (0..4).map(|i| rows[i] * cols[i]).sum();
    let se = (po * (1.0 - po) / (n * (1.0 - pe) * (1.0 - pe))).sqrt();
    let i = kappa_interval(&pairs, Weighting::Unweighted, &Options::default()).unwrap();
    let k = kappa(&c, Weighting::Unweighted).unwrap();
    assert!(i.contains(k), "{i:?} {k}");
    let ratio = (i.hi - i.lo) / (2.0 * 1.96 * se);
    assert!(
        (0.8..1.2).contains(&ratio),
        "width ratio {ratio}: {i:?}, se {se}"
    );
}
