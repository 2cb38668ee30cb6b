//! The tuning file: what `ranklab tune FILE` tunes, on which measure, over which values.
//!
//! ```yaml
//! tune: fusion-weights            # reports/<suite>/tune-fusion-weights.md, .json
//! configuration: wsum             # a configuration of the suite's experiments files
//! measure: MRR                    # maximised; a column of the suite's tables
//! folds: 5                        # task folds (seeded: seed, default 42)
//! space:                          # parameter path -> candidate values
//!   fusion.weights.bm25: [0, 0.5, 1]
//!   fusion.weights.dense: [0, 0.5, 1]
//! ```
//! or, for a configuration with a rerank stage, `rerank.interpolate: [0, 0.1, ..., 1]` alone.
//! The file sits beside the suite's `suite.yaml`. Every check names the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use ranklab_engine::fusion::weighted::Normalize;
use serde::Deserialize;

use crate::suite::fusion::LISTS;

/// Largest grid `ranklab tune` scores (candidates).
pub(crate) const MAX_CANDIDATES: usize = 1_000_000;

/// A candidate value as written: a number or a word.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub(crate) enum Value {
    /// A number (a weight).
    Number(f64),
    /// A word (a normalization).
    Word(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Number(x) => write!(f, "{x}"),
            Value::Word(w) => write!(f, "{w}"),
        }
    }
}

/// The tuning file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TuneFile {
    /// Names the report (`reports/<suite>/tune-<tune>.md`).
    pub tune: String,
    /// The configuration tuned.
    pub configuration: String,
    /// The measure maximised (a column name of the suite's tables: `MRR`, `nDCG@10`, ...).
    pub measure: String,
    /// Task folds (default 5).
    #[serde(default = "default_folds")]
    pub folds: usize,
    /// Seed of the fold shuffle (default 42).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Candidates within this much of the best are tied; the plateau rule breaks the tie
    /// (default 0.001).
    #[serde(default = "default_epsilon")]
    pub epsilon: f64,
    /// Parameter path -> candidate values (empty with `learn:`).
    #[serde(default)]
    pub space: BTreeMap<String, Vec<Value>>,
    /// A BEIR collection (a folder, `${NAME}` variables expanded, relative to the file) instead
    /// of the suite beside the file: its test queries are the tasks, `configuration` and
    /// `shipped` name `ranklab beir` configurations, the measures are BEIR's (`nDCG@10`, ...)
    /// and the report goes to `reports/beir/<collection>/`.
    #[serde(default)]
    pub collection: Option<String>,
    /// Replaces the configuration's `fusion:` (e.g. to make `ranklab beir`'s RRF `fusion` a
    /// weighted one); the configuration is then named `<configuration>-weighted`.
    #[serde(default)]
    pub fusion: Option<crate::suite::fusion::FusionSpec>,
    /// Replaces (or adds) the configuration's rerank stage (e.g. ColBERT over BM25's top 100,
    /// whose scores a fusion weighing `rerank` or a learned ranker's `colbert` feature reads).
    #[serde(default)]
    pub rerank: Option<crate::suite::RerankSpec>,
    /// Train a learned ranker per fold instead of searching a grid ([`super::learned`]).
    #[serde(default)]
    pub learn: Option<super::learned::LearnSpec>,
    /// The configuration the out-of-fold result is compared with (default: the suite's first
    /// `ships:` entry, else the experiments file's baseline; `fusion` for a collection).
    #[serde(default)]
    pub shipped: Option<String>,
    /// How the choice is validated: `tasks` (seeded task folds, the default) or `time` (the
    /// penalty weights on the suite's dated merges: a time split and a rolling check, as
    /// `ranklab tune --suite` does; [`super::penalty`]).
    #[serde(default)]
    pub split: Option<String>,
    /// With `split: time`: the window, in days up to `as_of` (default 90).
    #[serde(default)]
    pub window_days: Option<u32>,
    /// With `split: time`: the window's last day, YYYY-MM-DD (default: today).
    #[serde(default)]
    pub as_of: Option<String>,
    /// With `split: time`: folds of the rolling check (default 8).
    #[serde(default)]
    pub rolling: Option<usize>,
}

fn default_folds() -> usize {
    5
}
fn default_seed() -> u64 {
    42
}
fn default_epsilon() -> f64 {
    super::super::robust::DEFAULT_EPSILON
}

/// A parameter the fast path can vary without replaying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Param {
    /// `fusion.weights.<list>`: the weight of list `LISTS[i]`.
    Weight(usize),
    /// `fusion.normalize`.
    Normalize,
    /// `rerank.interpolate`: the reranker's weight α (see [`super::interp`]).
    Interpolate,
}

/// One dimension of the grid.
#[derive(Debug, Clone)]
pub(crate) struct Dimension {
    /// The path as written (`fusion.weights.bm25`).
    pub path: String,
    /// What it sets.
    pub param: Param,
    /// Its candidate values, in the order written.
    pub values: Vec<Value>,
}

/// The checked tuning file.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The file as written.
    pub file: TuneFile,
    /// Where it was read from.
    pub path: PathBuf,
    /// The grid's dimensions, in path order (empty for a learned or a time-split tuning).
    pub dims: Vec<Dimension>,
    /// With `split: time`: the penalty tuning's settings ([`super::penalty`]).
    pub time: Option<super::penalty::TimeSplit>,
}

impl Plan {
    /// Number of candidates (the product of the dimensions' sizes).
    pub(crate) fn candidates(&self) -> usize {
        self.dims.iter().map(|d| d.values.len()).product()
    }

    /// The value index of each dimension of candidate `c` (mixed radix, the last path fastest).
    pub(crate) fn point(&self, mut c: usize) -> Vec<usize> {
        let mut out = vec![0; self.dims.len()];
        for (i, d) in self.dims.iter().enumerate().rev() {
            out[i] = c % d.values.len();
            c /= d.values.len();
        }
        out
    }
}

/// The 1-based line of the first line of `text` that starts (after indentation) with `key:`.
pub(crate) fn line_of(text: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            let t = l.trim_start().trim_start_matches("- ");
            t.strip_prefix(key).is_some_and(|r| r.starts_with(':'))
                || t.strip_prefix(&format!("\"{key}\""))
                    .is_some_and(|r| r.starts_with(':'))
        })
        .map_or(0, |i| i + 1)
}

/// Reads and checks a tuning file.
pub(crate) fn load(path: &Path) -> Result<Plan> {
    let (file, text): (TuneFile, String) = crate::suite::read_yaml(path)?;
    let at = |key: &str| format!("{}:{}", path.display(), line_of(&text, key));
    if file.tune.is_empty()
        || file.tune.contains(['/', '\\', '\0'])
        || file
            .tune
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
    {
        bail!(
            "{}: tune name {:?} must be non-empty, without white space or slashes (it names reports/<suite>/tune-<name>.md)",
            at("tune"),
            file.tune
        );
    }
    match file.split.as_deref() {
        None | Some("tasks") => {
            for key in ["window_days", "as_of", "rolling"] {
                if line_of(&text, key) > 0 {
                    bail!("{}: `{key}` belongs to `split: time` (the penalty weights on dated merges); remove it or write `split: time`", at(key));
                }
            }
        }
        Some("time") => return super::penalty::plan(file, path, &text),
        Some(other) => bail!(
            "{}: split: {other:?} is not a split; write `split: tasks` (seeded task folds, the default) or `split: time` (the penalty weights on the suite's dated merges: a time split and a rolling check)",
            at("split")
        ),
    }
    if file.folds < 2 {
        bail!(
            "{}: folds: {} — cross-validation needs at least 2 folds (5 is usual)",
            at("folds"),
            file.folds
        );
    }
    if !(file.epsilon >= 0.0 && file.epsilon < 1.0) {
        bail!("{}: epsilon must be in [0, 1), e.g. 0.001", at("epsilon"));
    }
    if let Some(l) = &file.learn {
        l.check(&at("learn"))?;
        super::learned::target_of(&file.measure, 1, &at("measure"))?;
        if !file.space.is_empty() {
            bail!("{}: a tuning file with `learn:` trains a model and has no `space:`; remove one of them", at("space"));
        }
        return Ok(Plan {
            path: path.to_path_buf(),
            dims: Vec::new(),
            file,
            time: None,
        });
    }
    if file.space.is_empty() {
        bail!(
            "{}: `space` names no parameter; add e.g. `fusion.weights.bm25: [0, 0.5, 1]`",
            at("space")
        );
    }
    let mut dims = Vec::new();
    for (p, values) in &file.space {
        dims.push(dimension(p, values, &at(p))?);
    }
    if dims.iter().any(|d| d.param == Param::Interpolate) && dims.len() > 1 {
        bail!(
            "{}: `rerank.interpolate` is tuned alone (on the shortlist's scores computed once); move the other paths to another tuning file",
            at("rerank.interpolate")
        );
    }
    let plan = Plan {
        path: path.to_path_buf(),
        dims,
        file,
        time: None,
    };
    let n = plan
        .dims
        .iter()
        .try_fold(1usize, |acc, d| acc.checked_mul(d.values.len()));
    if n.is_none_or(|n| n > MAX_CANDIDATES) {
        bail!(
            "{}: the grid has more than {MAX_CANDIDATES} candidates; use fewer values",
            at("space")
        );
    }
    Ok(plan)
}

/// One checked dimension; `at` is its file:line.
fn dimension(path: &str, values: &[Value], at: &str) -> Result<Dimension> {
    let param = match path.strip_prefix("fusion.weights.") {
        Some(list) => match LISTS.iter().position(|l| *l == list) {
            Some(i) => Param::Weight(i),
            None => bail!("{at}: {path}: a weighted fusion combines the lists {}; write fusion.weights.<one of them>{}", LISTS.join(", "), crate::suite::fusion::did_you_mean(list)),
        },
        None if path == "fusion.normalize" => Param::Normalize,
        None if path == "rerank.interpolate" => Param::Interpolate,
        None if path.starts_with("penalty.") => bail!("{at}: {path}: the penalty weights are tuned on the suite's dated merges; add `split: time` (docs/tuning.md)"),
        None => bail!("{at}: {path:?} cannot be tuned (yet): the paths ranklab tune varies on lists computed once are fusion.weights.bm25, fusion.weights.dense, fusion.weights.rerank, fusion.normalize and rerank.interpolate"),
    };
    if values.is_empty() {
        bail!("{at}: {path} lists no value; write at least one, e.g. [0, 0.5, 1]");
    }
    for v in values {
        match (param, v) {
            (Param::Weight(_), Value::Number(x)) if x.is_finite() && *x >= 0.0 => {}
            (Param::Weight(_), _) => {
                bail!("{at}: {path}: {v} is not a weight (a finite number >= 0)")
            }
            (Param::Normalize, Value::Word(w)) if normalize_of(w).is_some() => {}
            (Param::Normalize, _) => {
                bail!("{at}: {path}: {v} is not a normalization (minmax | zscore | rank)")
            }
            (Param::Interpolate, Value::Number(x)) if (0.0..=1.0).contains(x) => {}
            (Param::Interpolate, _) => {
                bail!("{at}: {path}: {v} is not a reranker weight α (a number in [0, 1])")
            }
        }
    }
    if has_repeats(values) {
        bail!("{at}: {path} lists a value twice; list each once");
    }
    Ok(Dimension {
        path: path.to_string(),
        param,
        values: values.to_vec(),
    })
}

fn has_repeats(values: &[Value]) -> bool {
    values
        .iter()
        .enumerate()
        .any(|(i, v)| values[..i].contains(v))
}

/// The normalization named `w`.
pub(crate) fn normalize_of(w: &str) -> Option<Normalize> {
    match w {
        "minmax" => Some(Normalize::Minmax),
        "zscore" => Some(Normalize::Zscore),
        "rank" => Some(Normalize::Rank),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_text(text: &str) -> Result<Plan> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tune-x.yaml");
        std::fs::write(&p, text).unwrap();
        load(&p).map_err(|e| anyhow::anyhow!("{e:#}"))
    }

    #[test]
    fn a_negative_weight_is_refused_at_its_line() {
        let e = load_text(
            "tune: x\nconfiguration: wsum\nmeasure: MRR\nspace:\n  fusion.weights.bm25: [0, -1]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("tune-x.yaml:5: fusion.weights.bm25: -1"), "{e}");
    }

    #[test]
    fn an_unknown_path_and_one_fold_are_refused() {
        let e = load_text("tune: x\nconfiguration: c\nmeasure: MRR\nspace:\n  depth: [10]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":5: \"depth\" cannot be tuned"), "{e}");
        let e = load_text("tune: x\nconfiguration: c\nmeasure: MRR\nfolds: 1\nspace:\n  fusion.normalize: [rank]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":4: folds: 1"), "{e}");
    }

    #[test]
    fn a_learned_tuning_refuses_an_untrainable_measure_and_a_space_at_their_lines() {
        let e = load_text("tune: x\nconfiguration: c\nmeasure: recall@5\nlearn: { method: lambdamart, features: [bm25] }\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tune-x.yaml:3: measure \"recall@5\""), "{e}");
        let e = load_text("tune: x\nconfiguration: c\nmeasure: MRR\nlearn: { method: lambdamart, features: [bm25, bm25] }\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tune-x.yaml:4: feature \"bm25\" is listed twice"),
            "{e}"
        );
        let e = load_text("tune: x\nconfiguration: c\nmeasure: MRR\nlearn: { method: lambdamart, features: [bm25] }\nspace:\n  fusion.normalize: [rank]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tune-x.yaml:5: a tuning file with `learn:`"),
            "{e}"
        );
    }

    #[test]
    fn an_interpolation_outside_zero_one_or_beside_weights_is_refused() {
        let e = load_text(
            "tune: x\nconfiguration: c\nmeasure: MRR\nspace:\n  rerank.interpolate: [0, 1.5]\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("tune-x.yaml:5: rerank.interpolate: 1.5"), "{e}");
        let e = load_text("tune: x\nconfiguration: c\nmeasure: MRR\nspace:\n  fusion.weights.bm25: [0]\n  rerank.interpolate: [0, 1]\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("tune-x.yaml:6: `rerank.interpolate` is tuned alone"),
            "{e}"
        );
        assert!(load_text(
            "tune: x\nconfiguration: c\nmeasure: MRR\nspace:\n  rerank.interpolate: [0, 0.5, 1]\n"
        )
        .is_ok());
    }

    #[test]
    fn points_enumerate_the_grid_last_path_fastest() {
        let p = load_text("tune: x\nconfiguration: c\nmeasure: MRR\nspace:\n  fusion.weights.bm25: [0, 1]\n  fusion.weights.dense: [0, 0.5, 1]\n").unwrap();
        assert_eq!(p.candidates(), 6);
        assert_eq!(p.point(0), [0, 0]);
        assert_eq!(p.point(1), [0, 1]);
        assert_eq!(p.point(5), [1, 2]);
    }
}
