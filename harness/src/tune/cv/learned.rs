//! A learned ranker under task-fold cross-validation: `learn:` in a tuning file.
//!
//! ```yaml
//! tune: learned-lambdamart
//! configuration: wsum            # the configuration whose bm25 and dense lists are the features
//! learn: { method: lambdamart, features: [bm25, dense, lifecycle, age], trees: 100 }
//! measure: nDCG@10
//! folds: 5
//! ```
//! Per fold, a model is trained on the other folds' tasks only ([`train_fold`] is handed
//! those tasks' rows and nothing else) and scores the fold's held-out tasks; the out-of-fold
//! report is the weighted-fusion tuning's ([`super::render`]). Models are cached by content
//! under `$RANKLAB_CACHE/learned/<sha256>.json`: the key covers the method, its parameters,
//! the target and every training row; a cache file that does not parse as a model with the
//! same features is rebuilt, never trusted. The model trained on every task is written beside
//! the report (`tune-<name>.model.json`, docs/formats.md).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::learn::{
    coordinate_ascent, lambdamart, Model, Normalization, Query, Scorer as ModelScorer, Target,
    FORMAT,
};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::features::{self, rank, TaskRows};
use super::folds::Fold;
use super::lists::Scorer;

/// Which learner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Method {
    /// Gradient-boosted trees, LambdaMART objective.
    Lambdamart,
    /// A linear model by coordinate ascent on the measure.
    CoordinateAscent,
}

/// The `learn:` block of a tuning file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LearnSpec {
    /// The learner.
    pub method: Method,
    /// Feature names ([`features::NAMES`]).
    pub features: Vec<String>,
    /// LambdaMART: trees (default 100).
    #[serde(default)]
    pub trees: Option<usize>,
    /// LambdaMART: shrinkage (default 0.1).
    #[serde(default)]
    pub shrinkage: Option<f64>,
    /// LambdaMART: most leaves per tree (default 10).
    #[serde(default)]
    pub leaves: Option<usize>,
    /// LambdaMART: fewest rows per leaf (default 5).
    #[serde(default)]
    pub min_leaf: Option<usize>,
    /// Coordinate ascent: random restarts (default 5).
    #[serde(default)]
    pub restarts: Option<usize>,
}

impl LearnSpec {
    fn lambdamart(&self) -> lambdamart::Params {
        let d = lambdamart::Params::default();
        lambdamart::Params {
            trees: self.trees.unwrap_or(d.trees),
            shrinkage: self.shrinkage.unwrap_or(d.shrinkage),
            leaves: self.leaves.unwrap_or(d.leaves),
            min_leaf: self.min_leaf.unwrap_or(d.min_leaf),
            depth: d.depth,
        }
    }

    fn coordinate_ascent(&self, seed: u64) -> coordinate_ascent::Params {
        let d = coordinate_ascent::Params::default();
        coordinate_ascent::Params {
            restarts: self.restarts.unwrap_or(d.restarts),
            seed,
            ..d
        }
    }

    /// One line for the report.
    pub(crate) fn describe(&self, seed: u64) -> String {
        match self.method {
            Method::Lambdamart => {
                let p = self.lambdamart();
                format!(
                    "LambdaMART over {} ({} trees, shrinkage {}, at most {} leaves, at least {} rows a leaf)",
                    self.features.join(", "),
                    p.trees,
                    p.shrinkage,
                    p.leaves,
                    p.min_leaf
                )
            }
            Method::CoordinateAscent => {
                let p = self.coordinate_ascent(seed);
                format!(
                    "a linear model by coordinate ascent over {} ({} restarts, seed {})",
                    self.features.join(", "),
                    p.restarts,
                    p.seed
                )
            }
        }
    }

    /// Checks the block; `at` is its file:line.
    pub(crate) fn check(&self, at: &str) -> Result<Vec<String>> {
        let cols = features::columns(&self.features, at)?;
        if self.trees == Some(0) || self.leaves.is_some_and(|l| l < 2) {
            bail!("{at}: learn needs trees >= 1 and leaves >= 2");
        }
        if self.shrinkage.is_some_and(|s| !(s > 0.0 && s <= 1.0)) {
            bail!("{at}: learn.shrinkage must be in (0, 1], e.g. 0.1");
        }
        Ok(cols)
    }
}

/// The target of a measure name: `nDCG@k` or `MRR` / `MRR@k`; `at` is its file:line.
pub(crate) fn target_of(measure: &str, depth: usize, at: &str) -> Result<Target> {
    let cut = |rest: &str| -> Result<usize> {
        match rest.strip_prefix('@') {
            None if rest.is_empty() => Ok(depth),
            Some(k) => k
                .parse()
                .with_context(|| format!("{at}: {measure:?}: the cutoff is not a number")),
            None => bail!("{at}: measure {measure:?}: a learned ranker trains on nDCG@k or MRR"),
        }
    };
    if let Some(r) = measure.strip_prefix("nDCG") {
        return Ok(Target::Ndcg(cut(r)?));
    }
    if let Some(r) = measure.strip_prefix("MRR") {
        return Ok(Target::Mrr(cut(r)?));
    }
    bail!("{at}: measure {measure:?}: a learned ranker trains on nDCG@k or MRR (write one of them)")
}

/// The content key of a model trained on `train` (method, parameters, target, columns, rows).
fn key(
    spec: &LearnSpec,
    seed: u64,
    target: Target,
    columns: &[String],
    train: &[&Query],
) -> String {
    let mut h = Sha256::new();
    h.update(FORMAT.as_bytes());
    h.update(
        format!(
            "{:?}|{:?}|{:?}|{target:?}|{columns:?}",
            spec.method,
            spec.lambdamart(),
            spec.coordinate_ascent(seed)
        )
        .as_bytes(),
    );
    for q in train {
        h.update((q.labels.len() as u64).to_le_bytes());
        for (row, (l, t)) in q.features.iter().zip(q.labels.iter().zip(&q.tie)) {
            for x in row {
                h.update(x.to_bits().to_le_bytes());
            }
            h.update(l.to_bits().to_le_bytes());
            h.update(t.to_le_bytes());
        }
        for g in &q.ideal {
            h.update(g.to_bits().to_le_bytes());
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Trains a model on exactly the queries `train` (no other task's rows reach the learner).
pub(crate) fn train(
    spec: &LearnSpec,
    seed: u64,
    target: Target,
    columns: &[String],
    train: &[&Query],
) -> Model {
    let owned: Vec<Query> = train.iter().map(|q| (*q).clone()).collect();
    let normalization = Normalization::fit(&owned, columns.len());
    let normalized = normalization.apply_all(&owned);
    let scorer = match spec.method {
        Method::Lambdamart => ModelScorer::Lambdamart {
            shrinkage: spec.lambdamart().shrinkage,
            trees: lambdamart::fit(target, &normalized, columns.len(), &spec.lambdamart()),
        },
        Method::CoordinateAscent => ModelScorer::CoordinateAscent {
            weights: coordinate_ascent::fit(
                target,
                &normalized,
                columns.len(),
                &spec.coordinate_ascent(seed),
            ),
        },
    };
    Model {
        format: FORMAT.to_string(),
        features: columns.to_vec(),
        target,
        normalization,
        scorer,
    }
}

/// [`train`] through the content-keyed cache (`None`: no cache). Returns the model and its key.
pub(crate) fn train_cached(
    spec: &LearnSpec,
    seed: u64,
    target: Target,
    columns: &[String],
    rows: &[&Query],
    cache: Option<&PathBuf>,
) -> Result<(Model, String)> {
    let k = key(spec, seed, target, columns, rows);
    let path = cache.map(|c| c.join(format!("{k}.json")));
    if let Some(p) = &path {
        if let Ok(text) = std::fs::read_to_string(p) {
            match serde_json::from_str::<Model>(&text) {
                Ok(m) if m.format == FORMAT && m.features == columns && m.to_json() == text => {
                    return Ok((m, k))
                }
                _ => eprintln!(
                    "tune: cached model {} is broken; training it again",
                    p.display()
                ),
            }
        }
    }
    let m = train(spec, seed, target, columns, rows);
    if let Some(p) = &path {
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        crate::report::atomic::write(p, m.to_json().as_bytes())?;
    }
    Ok((m, k))
}

/// What the cross-validation of a learned ranker produced.
pub(crate) struct Learned {
    /// The cross-validation in the grid's shape: fold `i` "chose" model `i`; model
    /// `folds.len()` is the one trained on every task.
    pub cv: super::CrossValidation,
    /// Content keys of the models, per fold then all tasks.
    pub keys: Vec<String>,
    /// The model trained on every task.
    pub all: Model,
}

/// The queries fold `f` trains on: its training tasks', in task order, and no other.
fn training_rows<'a>(queries: &[&'a Query], f: &Fold) -> Vec<&'a Query> {
    f.train.iter().map(|&t| queries[t]).collect()
}

/// Trains one model per fold on its training tasks and scores its held-out tasks.
#[allow(clippy::too_many_arguments)]
pub(crate) fn cross_validate(
    spec: &LearnSpec,
    seed: u64,
    target: Target,
    columns: &[String],
    rows: &[TaskRows],
    folds: &[Fold],
    scorer: &Scorer,
    corpus: &Corpus,
    depth: usize,
) -> Result<Learned> {
    let cache = ranklab_engine::models::cache_root()
        .ok()
        .map(|c| c.join("learned"));
    let n = rows.len();
    let value = |m: &Model, t: usize| scorer.value(t, &rank(m, &rows[t], depth, corpus), corpus);
    let mean = |m: &Model, tasks: &[usize]| {
        tasks.iter().map(|&t| value(m, t)).sum::<f64>() / tasks.len().max(1) as f64
    };
    let mut cv = super::CrossValidation {
        chosen: Vec::new(),
        train_value: Vec::new(),
        out_of_fold: vec![f64::NAN; n],
        all: folds.len(),
        all_value: 0.0,
    };
    let queries: Vec<&Query> = rows.iter().map(|r| &r.query).collect();
    let mut keys = Vec::new();
    for (i, f) in folds.iter().enumerate() {
        let train_rows = training_rows(&queries, f);
        let (m, k) = train_cached(spec, seed, target, columns, &train_rows, cache.as_ref())?;
        cv.chosen.push(i);
        cv.train_value.push(mean(&m, &f.train));
        for &t in &f.held_out {
            cv.out_of_fold[t] = value(&m, t);
        }
        keys.push(k);
    }
    let everyone: Vec<usize> = (0..n).collect();
    let (all, k) = train_cached(spec, seed, target, columns, &queries, cache.as_ref())?;
    cv.all_value = mean(&all, &everyone);
    keys.push(k);
    Ok(Learned { cv, keys, all })
}

/// The learned half of `ranklab tune FILE`: features from the replayed `bm25` and `dense`
/// runs, one model per fold, the out-of-fold values. `at(key)` gives a key's file:line.
/// The configurations whose replays give the model features' lists (`cross-encoder`,
/// `colbert`): `c`'s rerank stage with that model, over the list its shortlist is cut from
/// (`shortlist_from` for a fusion weighing `rerank`, else `c`'s own first stage), with the
/// feature name and the shortlist's width. `at` is the `learn` key's file:line.
pub(crate) fn model_parts(
    spec: &LearnSpec,
    c: &crate::suite::Configuration,
    at: &str,
) -> Result<Vec<(&'static str, crate::suite::Configuration, usize)>> {
    let mut out = Vec::new();
    if spec.features.iter().any(|f| f == features::EXTERNAL) {
        if c.engine.is_none() {
            bail!("{at}: feature \"external\" is the score and rank of the configuration's engine, and {:?} has no `engine:`; tune a configuration that has one (a weighted fusion with `engine:`, docs/formats.md)", c.name);
        }
        let part = crate::suite::Configuration {
            name: format!("{}~{}", c.name, features::EXTERNAL),
            retriever: crate::suite::Retriever::External,
            fusion: None,
            rerank: None,
            wiring: ranklab_engine::policy::Wiring::None,
            ..c.clone()
        };
        out.push((features::EXTERNAL, part, c.depth()));
    }
    for (name, model) in features::MODEL_FEATURES {
        if !spec.features.iter().any(|f| f == name) {
            continue;
        }
        let Some(r) = &c.rerank else {
            bail!("{at}: feature {name:?} is a model's score over the configuration's rerank shortlist, and {:?} has no rerank stage; give it one (e.g. `rerank: {{ model: {model}, shortlist: 100 }}` in the tuning file)", c.name);
        };
        let base = match c
            .fusion
            .as_ref()
            .and_then(|f| super::lists::rerank_part(c, f))
        {
            Some(p) => p,
            None => crate::suite::Configuration {
                wiring: ranklab_engine::policy::Wiring::None,
                ..c.clone()
            },
        };
        let part = crate::suite::Configuration {
            name: format!("{}~{name}", c.name),
            rerank: Some(crate::suite::RerankSpec {
                batch: r.batch,
                ..crate::suite::RerankSpec::cross_encoder(model, r.shortlist)
            }),
            ..base
        };
        out.push((name, part, r.shortlist));
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    spec: &LearnSpec,
    plan: &super::file::Plan,
    suite: &crate::suite::Suite,
    bm25: &crate::replay::ConfigRun,
    dense: &crate::replay::ConfigRun,
    models: &[features::ModelList],
    scorer: &Scorer,
    corpus: &Corpus,
    depth: usize,
    folds: &[Fold],
    at: &dyn Fn(&str) -> String,
) -> Result<Learned> {
    let columns = spec.check(&at("learn"))?;
    let target = target_of(&plan.file.measure, depth, &at("measure"))?;
    let rows = features::build(&columns, bm25, dense, models, corpus, depth, &grades(suite));
    cross_validate(
        spec,
        plan.file.seed,
        target,
        &columns,
        &rows,
        folds,
        scorer,
        corpus,
        depth,
    )
}

/// The grades of every task (id -> grade), suite order.
pub(crate) fn grades(suite: &crate::suite::Suite) -> Vec<BTreeMap<String, i32>> {
    suite.tasks.iter().map(|t| t.expected.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(x: f64, label: f64) -> Query {
        Query {
            features: vec![vec![x], vec![-x]],
            labels: vec![label, 1.0 - label],
            tie: vec![0, 1],
            ideal: vec![1.0],
        }
    }

    /// The model of a fold is a function of its training rows only: training on the training
    /// tasks gives the model trained on exactly them, and adding a held-out task's rows changes
    /// it (so a fold that read its held-out task would be caught). Oracle: the data — task 2
    /// says the opposite of tasks 0 and 1, so a linear model that saw it ranks differently.
    #[test]
    fn a_fold_model_never_sees_a_held_out_task() {
        let tasks = [
            q(1.0, 1.0),
            q(2.0, 1.0),
            q(3.0, 0.0),
            q(4.0, 0.0),
            q(5.0, 0.0),
        ];
        let spec = LearnSpec {
            method: Method::CoordinateAscent,
            features: vec!["bm25".into()],
            trees: None,
            shrinkage: None,
            leaves: None,
            min_leaf: None,
            restarts: Some(1),
        };
        let cols = vec!["bm25".to_string()];
        let t = Target::Mrr(10);
        let train_only: Vec<&Query> = vec![&tasks[0], &tasks[1]];
        let with_held: Vec<&Query> = tasks.iter().collect();
        let a = train(&spec, 42, t, &cols, &train_only);
        let b = train(&spec, 42, t, &cols, &with_held);
        // Trained on tasks 0 and 1 only, x ranks the relevant row first: weight positive.
        assert!(a.score(&[1.0]) > a.score(&[-1.0]));
        // With tasks 2..=4 (three against two) the sign flips.
        assert!(b.score(&[1.0]) < b.score(&[-1.0]));
        assert_ne!(
            key(&spec, 42, t, &cols, &train_only),
            key(&spec, 42, t, &cols, &with_held)
        );
    }

    /// Each task's one row carries its index as a feature; on the real fold split, no fold's
    /// training rows carry a held-out index (set arithmetic on the indices is the oracle).
    #[test]
    fn no_fold_trains_on_its_held_out_tasks() {
        let tasks: Vec<Query> = (0..23).map(|i| q(i as f64, 1.0)).collect();
        let refs: Vec<&Query> = tasks.iter().collect();
        for f in super::super::folds::split(23, 5, 42) {
            let seen: Vec<usize> = training_rows(&refs, &f)
                .iter()
                .map(|q| q.features[0][0] as usize)
                .collect();
            assert_eq!(seen, f.train);
            assert!(seen.iter().all(|t| !f.held_out.contains(t)));
        }
    }

    #[test]
    fn a_broken_cache_file_is_rebuilt_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().to_path_buf();
        let tasks = [q(1.0, 1.0), q(2.0, 1.0)];
        let rows: Vec<&Query> = tasks.iter().collect();
        let spec = LearnSpec {
            method: Method::Lambdamart,
            features: vec!["bm25".into()],
            trees: Some(3),
            shrinkage: None,
            leaves: Some(2),
            min_leaf: Some(1),
            restarts: None,
        };
        let cols = vec!["bm25".to_string()];
        let (m, k) = train_cached(&spec, 42, Target::Ndcg(10), &cols, &rows, Some(&cache)).unwrap();
        let file = cache.join(format!("{k}.json"));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), m.to_json());
        std::fs::write(&file, &m.to_json()[..40]).unwrap();
        let (again, _) =
            train_cached(&spec, 42, Target::Ndcg(10), &cols, &rows, Some(&cache)).unwrap();
        assert_eq!(again, m);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), m.to_json());
    }
}
