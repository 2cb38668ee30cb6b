//! The warranty of a suite report (`report::warranty`): Judged@k, unjudged counts, the judgment
//! sentences of the reading and the power sentence, on the committed docir suite with three BM25
//! configurations (no model needed). Properties checked:
//! - Judged@5 and unjudged@5 per configuration equal a count made here from the written run
//!   files and `qrels.txt` (top 5 lines per task that the qrels judge);
//! - with only expected documents judged, the reading says so with the unjudged percentage of
//!   the baseline's top 5 counted here, and points to `ranklab pool`;
//! - a grade-0 judgment (`not_relevant:`) is judged: it raises Judged@5, removes the "only
//!   expected" sentence and changes no other measure; judging the baseline's whole top 5 makes
//!   the reading warn about every configuration with fewer judged documents, with their counts;
//! - the power sentence names the suite's size, and each MDE cell equals statsmodels' effect
//!   size at n = 35 (tests/fixtures/power/statsmodels.csv: 0.4874661890) times the standard
//!   deviation of the per-task differences.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

mod common;
use common::BM25_PARAMS_EXPERIMENTS;

use ranklab::replay::{replay, Replayer};
use ranklab::report::{self, MeasureSet};
use ranklab::suite::{Experiments, Suite};

const CONFIGS: [&str; 3] = ["anserini", "robertson", "no-length-norm"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Writes the docir suite (with `extra` lines after each named task's `expected:` line) and
/// the experiments into `dir`; renders and writes the report into `dir/out`.
fn render(dir: &Path, extra: &BTreeMap<String, String>) -> (String, PathBuf) {
    let text = std::fs::read_to_string(root().join("tasks/docir/suite.yaml")).unwrap();
    let corpus = root().join("corpora/docir");
    let mut out = String::new();
    let mut task = String::new();
    for line in text.lines() {
        let line = if line.starts_with("corpus:") {
            format!("corpus: {}", corpus.display())
        } else {
            line.to_string()
        };
        if let Some(id) = line.trim().strip_prefix("- id: ") {
            task = id.to_string();
        }
        out.push_str(&line);
        out.push('\n');
        if line.trim_start().starts_with("expected:") {
            if let Some(e) = extra.get(&task) {
                out.push_str(&format!("    not_relevant: [{e}]\n"));
            }
        }
    }
    std::fs::write(dir.join("suite.yaml"), out).unwrap();
    std::fs::write(dir.join("experiments.yaml"), BM25_PARAMS_EXPERIMENTS).unwrap();
    let suite = Suite::load(&dir.join("suite.yaml")).unwrap();
    let ex = Experiments::load(&dir.join("experiments.yaml")).unwrap();
    let corpus = suite.load_corpus().unwrap();
    let engine = Replayer::build(&corpus, &[&ex]).unwrap();
    let r = replay(&engine, &suite, &ex).unwrap();
    let rep = report::render(&corpus, &suite, &ex, &r, &MeasureSet::Suite).unwrap();
    let out_dir = dir.join("out");
    report::write_all(&out_dir, std::slice::from_ref(&rep)).unwrap();
    (rep.markdown, out_dir)
}

/// Per task, the top 5 document ids of a run file.
fn top5(path: &Path) -> BTreeMap<String, Vec<String>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in std::fs::read_to_string(path).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let v = m.entry(f[0].to_string()).or_default();
        if v.len() < 5 {
            v.push(f[2].to_string());
        }
    }
    m
}

fn qrels(path: &Path) -> BTreeSet<(String, String)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[0].to_string(), f[2].to_string())
        })
        .collect()
}

/// (judged, unjudged) in the top 5 over every task, counted from the files.
fn counted(out: &Path, config: &str) -> (usize, usize) {
    let judged = qrels(&out.join("qrels.txt"));
    let mut j = 0;
    let mut u = 0;
    for (task, docs) in top5(&out.join("runs").join(format!("{config}.trec"))) {
        for d in docs {
            if judged.contains(&(task.clone(), d)) {
                j += 1;
            } else {
                u += 1;
            }
        }
    }
    (j, u)
}

/// The warranty CSV as rows of (configuration, column -> cell).
fn warranty(out: &Path) -> BTreeMap<String, BTreeMap<String, String>> {
    let text = std::fs::read_to_string(out.join("bm25-params.warranty.csv")).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (
                f[0].to_string(),
                head.iter()
                    .zip(&f)
                    .map(|(h, v)| (h.to_string(), v.to_string()))
                    .collect(),
            )
        })
        .collect()
}

fn reading(md: &str) -> &str {
    md.lines().find(|l| l.starts_with("**Reading:**")).unwrap()
}

#[test]
fn judged_at_k_and_unjudged_counts_match_the_run_files() {
    let tmp = tempfile::tempdir().unwrap();
    let (md, out) = render(tmp.path(), &BTreeMap::new());
    let w = warranty(&out);
    for c in CONFIGS {
        let (j, u) = counted(&out, c);
        assert_eq!(w[c]["unjudged@5"], u.to_string(), "{c}");
        assert_eq!(w[c]["Judged@5"], format!("{:.4}", j as f64 / 175.0), "{c}");
    }
    let (j, _) = counted(&out, "anserini");
    let pct = ((1.0 - j as f64 / 175.0) * 100.0).round();
    let r = reading(&md);
    assert!(
        r.contains(&format!(
            "Only expected documents are judged: {pct}% of every top 5 is unjudged (baseline `anserini`)"
        )),
        "{r}"
    );
    assert!(r.contains("run `ranklab pool "), "{r}");
    assert!(r.contains("With 35 tasks this suite detects"), "{r}");
}

#[test]
fn a_grade_0_judgment_counts_as_judged_and_changes_the_reading() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, out0) = render(tmp.path(), &BTreeMap::new());
    let before_metrics = std::fs::read_to_string(out0.join("bm25-params.csv")).unwrap();
    // Judge every unjudged document of the baseline's top 5 not relevant.
    let judged = qrels(&out0.join("qrels.txt"));
    let mut extra = BTreeMap::new();
    for (task, docs) in top5(&out0.join("runs/anserini.trec")) {
        let unj: Vec<String> = docs
            .into_iter()
            .filter(|d| !judged.contains(&(task.clone(), d.clone())))
            .collect();
        if !unj.is_empty() {
            extra.insert(task, unj.join(", "));
        }
    }
    let tmp2 = tempfile::tempdir().unwrap();
    let (md, out) = render(tmp2.path(), &extra);
    let w = warranty(&out);
    assert_eq!(w["anserini"]["Judged@5"], "1.0000");
    assert_eq!(w["anserini"]["unjudged@5"], "0");
    let r = reading(&md);
    assert!(!r.contains("Only expected documents are judged"), "{r}");
    let mut low = Vec::new();
    for c in ["robertson", "no-length-norm"] {
        let (j, u) = counted(&out, c);
        let judged = j as f64 / 175.0;
        if 1.0 - judged > 0.02 {
            low.push((c, u, judged));
        }
    }
    match low.as_slice() {
        [] => panic!("judging the baseline's top 5 left no configuration below it"),
        [(c, u, _)] => assert!(
            r.contains(&format!(
                "`{c}` has {u} unjudged documents in its top 5 across 35 tasks, the baseline 0"
            )),
            "{r}"
        ),
        many => {
            for (c, u, j) in many {
                assert!(
                    r.contains(&format!("`{c}` ({u}, Judged@5 {j:.4})")),
                    "{c}: {r}"
                );
            }
            assert!(
                r.contains("have more unjudged documents in their top 5 across 35 tasks than the baseline (0, Judged@5 1.0000"),
                "{r}"
            );
        }
    }
    // Every other measure is unchanged: only the Judged@5/unjudged@5 columns move.
    let strip = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.split(',').take(7).collect::<Vec<_>>().join(","))
            .collect()
    };
    let after_metrics = std::fs::read_to_string(out.join("bm25-params.csv")).unwrap();
    assert_eq!(strip(&before_metrics), strip(&after_metrics));
    assert_ne!(before_metrics, after_metrics);
}

#[test]
fn minimum_detectable_effect_is_statsmodels_effect_size_times_the_noise() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, out) = render(tmp.path(), &BTreeMap::new());
    let w = warranty(&out);
    // Per-task recall@5 from the run files: 1 when the task's one expected document is in the
    // top 5 (every docir task expects one document).
    let judged = qrels(&out.join("qrels.txt"));
    let per_task = |c: &str| -> Vec<f64> {
        top5(&out.join("runs").join(format!("{c}.trec")))
            .into_iter()
            .map(|(t, docs)| {
                f64::from(u8::from(
                    docs.iter()
                        .any(|d| judged.contains(&(t.clone(), d.clone()))),
                ))
            })
            .collect()
    };
    let base = per_task("anserini");
    let mut noisy = 0;
    for c in ["robertson", "no-length-norm"] {
        let d: Vec<f64> = per_task(c).iter().zip(&base).map(|(a, b)| a - b).collect();
        let mean = d.iter().sum::<f64>() / d.len() as f64;
        let sd = (d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (d.len() - 1) as f64).sqrt();
        let cell = &w[c]["mde recall@5"];
        if sd == 0.0 {
            assert_eq!(cell, "", "{c}");
        } else {
            assert_eq!(cell, &format!("{:.4}", 0.4874661890 * sd), "{c}");
            noisy += 1;
        }
    }
    assert!(
        noisy > 0,
        "no configuration differs from the baseline: nothing was checked"
    );
}
