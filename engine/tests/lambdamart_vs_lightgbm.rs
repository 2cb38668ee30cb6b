//! LambdaMART against an independent implementation: LightGBM's `lambdarank` (Python package in
//! a venv under `target/lgbm-venv`, `python3 -m venv target/lgbm-venv &&
//! target/lgbm-venv/bin/pip install lightgbm numpy`). Both train on the same synthetic queries
//! with the same settings (50 trees, shrinkage 0.1, 8 leaves, at least 5 rows a leaf, linear
//! gain, nDCG@10) and are scored on held-out queries; ranklab's nDCG@10 must be the same or
//! better (within 0.01). Skipped, saying so, when the venv is absent.

use std::path::PathBuf;
use std::process::Command;

use ranklab_engine::learn::{lambdamart, mean_measure, Query, Target};

/// splitmix64, so the data are the same on every machine.
struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// `n` queries of 20 documents, 3 features; the grade (0..=3) depends on features 0 and 1
/// non-linearly, plus noise (uniform in [0, 1.5)); feature 2 is noise.
fn data(n: usize, rng: &mut Rng) -> Vec<Query> {
    (0..n)
        .map(|_| {
            let mut features = Vec::new();
            let mut labels = Vec::new();
            for _ in 0..20 {
                let x: Vec<f64> = (0..3).map(|_| rng.unit()).collect();
                let s = x[0] * x[1] * 3.0 + if x[1] > 0.7 { 1.0 } else { 0.0 } + rng.unit() * 1.5;
                labels.push(s.floor().clamp(0.0, 3.0));
                features.push(x);
            }
            Query {
                ideal: labels.iter().copied().filter(|&g| g > 0.0).collect(),
                tie: (0..20).collect(),
                features,
                labels,
            }
        })
        .collect()
}

fn csv(qs: &[Query]) -> String {
    let mut s = String::new();
    for (qi, q) in qs.iter().enumerate() {
        for (x, l) in q.features.iter().zip(&q.labels) {
            s += &format!("{qi},{l},{},{},{}\n", x[0], x[1], x[2]);
        }
    }
    s
}

const SCRIPT: &str = r#"
import sys, numpy as np, lightgbm as lgb
def load(p):
    a = np.loadtxt(p, delimiter=",", ndmin=2)
    q = a[:, 0].astype(int); groups = np.bincount(q)
    return a[:, 2:], a[:, 1], groups
X, y, g = load(sys.argv[1]); T, _, _ = load(sys.argv[2])
params = dict(objective="lambdarank", learning_rate=0.1, num_leaves=8, min_data_in_leaf=5,
    min_sum_hessian_in_leaf=0.0, label_gain=[0, 1, 2, 3], lambdarank_truncation_level=20,
    deterministic=True, num_threads=1, verbose=-1, max_bin=1023, seed=42)
m = lgb.train(params, lgb.Dataset(X, y, group=g), num_boost_round=50)
for v in m.predict(T): print(repr(float(v)))
"#;

#[test]
fn lambdamart_ranks_held_out_queries_as_well_as_lightgbm() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = root.join("target/lgbm-venv/bin/python");
    if !python.exists() {
        eprintln!(
            "SKIPPED: no LightGBM venv at {} (see this file's header)",
            python.display()
        );
        return;
    }
    let mut rng = Rng(42);
    let train = data(60, &mut rng);
    let test = data(30, &mut rng);
    let dir = tempfile::tempdir().unwrap();
    let (a, b, s) = (
        dir.path().join("train.csv"),
        dir.path().join("test.csv"),
        dir.path().join("lgb.py"),
    );
    std::fs::write(&a, csv(&train)).unwrap();
    std::fs::write(&b, csv(&test)).unwrap();
    std::fs::write(&s, SCRIPT).unwrap();
    let out = Command::new(&python)
        .arg(&s)
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let preds: Vec<f64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(preds.len(), 30 * 20);
    let target = Target::Ndcg(10);
    let theirs: f64 = test
        .iter()
        .enumerate()
        .map(|(i, q)| ranklab_engine::learn::evaluate(target, q, &preds[i * 20..(i + 1) * 20]))
        .sum::<f64>()
        / test.len() as f64;
    let p = lambdamart::Params {
        trees: 50,
        shrinkage: 0.1,
        leaves: 8,
        depth: 0,
        min_leaf: 5,
    };
    let trees = lambdamart::fit(target, &train, 3, &p);
    let ours = mean_measure(target, &test, |x| {
        trees.iter().map(|t| 0.1 * t.predict(x)).sum()
    });
    let untrained = mean_measure(target, &test, |_| 0.0);
    eprintln!(
        "held-out nDCG@10: ranklab {ours:.4}, LightGBM {theirs:.4}, untrained {untrained:.4}"
    );
    assert!(theirs > untrained + 0.05, "LightGBM learned something");
    assert!(
        ours >= theirs - 0.01,
        "ranklab {ours:.4} vs LightGBM {theirs:.4}"
    );
}
