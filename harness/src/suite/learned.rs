//! `retriever: learned, model: FILE`: the model file a learned configuration ranks with, read
//! and checked when the experiments file is read (docs/formats.md, "A learned model file"),
//! and the shortlist its `cross-encoder` and `colbert` features are scored over.

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Result};
use ranklab_engine::learn::{tree::Node, Model, Scorer, FORMAT};
use serde::Deserialize;

/// Every feature column a model file may name (`ranklab tune` writes them; the replay computes
/// them in `crate::replay::features`, whose test checks this list against its own).
pub const KNOWN_COLUMNS: [&str; 12] = [
    "bm25",
    "bm25.rank",
    "dense",
    "dense.rank",
    "lifecycle.active",
    "lifecycle.superseded",
    "lifecycle.deprecated",
    "history.first-class",
    "history.amendment",
    "history.editorial-only",
    "history.versions",
    "age",
];

/// The columns of the model features (a model's score over a shortlist, and its rank), by
/// feature name: replayed when the configuration names the shortlist (`shortlist:`).
pub const MODEL_COLUMNS: [(&str, [&str; 2]); 2] = [
    ("cross-encoder", ["cross-encoder", "cross-encoder.rank"]),
    ("colbert", ["colbert", "colbert.rank"]),
];

/// The columns of the `external` feature (the configuration's engine's score and rank, replayed
/// from its recording): a model naming them needs `engine:` beside `retriever: learned`.
pub const EXTERNAL_COLUMNS: [&str; 2] = ["external", "external.rank"];

/// Whether `m` names a column of the `external` feature.
pub fn uses_external(m: &Model) -> bool {
    m.features
        .iter()
        .any(|f| EXTERNAL_COLUMNS.contains(&f.as_str()))
}

/// Checks that a learned configuration has `engine:` exactly when its model uses the `external`
/// feature; `at` is the configuration's file:line.
pub(super) fn check_engine(m: &Model, has_engine: bool, at: &str) -> Result<()> {
    match (uses_external(m), has_engine) {
        (true, false) => bail!("{at}: its model uses the feature \"external\" (an engine's score and rank); add the engine it was trained with, copied from the tuned configuration (`engine:` as in docs/engines.md; `ranklab tune --write` writes it), so that its recording is found by the engine's hash"),
        (false, true) => bail!("{at}: `engine:` beside `retriever: learned` is for a model with the \"external\" feature, and this model has none; remove `engine:`"),
        _ => Ok(()),
    }
}

/// `shortlist: { width: N, from: rrf | bm25 | dense }` of a learned configuration: the
/// shortlist its model's `cross-encoder` and `colbert` features are scored over (the top
/// `width` of the list `from`, at the configuration's depth), as the tuning that trained it
/// scored them (`ranklab tune --write` writes it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FeatureShortlist {
    /// Documents scored per task.
    pub width: usize,
    /// The list they are cut from (default `rrf`, with the RRF constant 60).
    #[serde(default)]
    pub from: super::fusion::ShortlistFrom,
}

/// The model features (`cross-encoder`, `colbert`) whose columns `m` names, in
/// [`MODEL_COLUMNS`] order.
pub fn model_features(m: &Model) -> Vec<&'static str> {
    MODEL_COLUMNS
        .iter()
        .filter(|(_, cols)| cols.iter().any(|c| m.features.iter().any(|f| f == c)))
        .map(|(n, _)| *n)
        .collect()
}

/// Checks that a learned configuration names a shortlist exactly when its model needs one;
/// `at` is the configuration's file:line.
pub(super) fn check_shortlist(
    m: &Model,
    shortlist: Option<&FeatureShortlist>,
    at: &str,
) -> Result<()> {
    let names = model_features(m);
    match (names.is_empty(), shortlist) {
        (false, None) => bail!("{at}: its model uses {} (a model's score over a rerank shortlist); name that shortlist as the tuning scored it, e.g. `shortlist: {{ width: 20, from: rrf }}` (from: rrf | bm25 | dense; `ranklab tune --write` writes it)", names.join(" and ")),
        (true, Some(_)) => bail!("{at}: `shortlist:` is for a model with cross-encoder or colbert features, and this model has none; remove it"),
        _ => Ok(()),
    }
}

/// Reads and checks the model file `model` of a configuration (relative to the experiments
/// file `path`); `at` is the configuration's file:line.
pub(super) fn load_model(model: &Path, at: &str, path: &Path) -> Result<Arc<Model>> {
    let file = path.parent().unwrap_or(Path::new(".")).join(model);
    let shown = file.display();
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => bail!("{at}: model file {shown}: {e}; write the path of a model `ranklab tune` wrote (reports/<suite>/tune-<name>.model.json), relative to the experiments file"),
    };
    let m: Model = match serde_json::from_str(&text) {
        Ok(m) => m,
        Err(e) => bail!("{at}: model file {shown} is not a learned model ({e}); use a file `ranklab tune` wrote"),
    };
    if let Err(why) = check(&m) {
        bail!("{at}: model file {shown}: {why}; use a file `ranklab tune` wrote");
    }
    Ok(Arc::new(m))
}

/// Why `m` cannot be scored, if it cannot.
fn check(m: &Model) -> std::result::Result<(), String> {
    if m.format != FORMAT {
        return Err(format!("format is {:?}, not {FORMAT:?}", m.format));
    }
    let n = m.features.len();
    if n == 0 {
        return Err("it names no feature".into());
    }
    let known = |f: &str| {
        KNOWN_COLUMNS.contains(&f)
            || EXTERNAL_COLUMNS.contains(&f)
            || MODEL_COLUMNS.iter().any(|(_, cols)| cols.contains(&f))
    };
    if let Some(f) = m.features.iter().find(|f| !known(f)) {
        return Err(format!("unknown feature {f:?}"));
    }
    let norm = &m.normalization;
    if norm.mean.len() != n || norm.scale.len() != n {
        return Err(format!("its normalization does not have {n} features"));
    }
    match &m.scorer {
        Scorer::CoordinateAscent { weights } if weights.len() != n => {
            Err(format!("it has {} weights for {n} features", weights.len()))
        }
        Scorer::CoordinateAscent { .. } => Ok(()),
        Scorer::Lambdamart { trees, .. } => {
            for (t, tree) in trees.iter().enumerate() {
                let len = tree.nodes.len();
                if len == 0 {
                    return Err(format!("tree {t} has no node"));
                }
                for (i, node) in tree.nodes.iter().enumerate() {
                    if let Node::Split {
                        feature,
                        left,
                        right,
                        ..
                    } = node
                    {
                        if *feature >= n
                            || *left >= len
                            || *right >= len
                            || *left <= i
                            || *right <= i
                        {
                            return Err(format!(
                                "tree {t} node {i} points outside the tree or its features"
                            ));
                        }
                    }
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ranklab_engine::learn::{Normalization, Target};

    fn model(features: &[&str]) -> Model {
        Model {
            format: FORMAT.to_string(),
            features: features.iter().map(|f| f.to_string()).collect(),
            target: Target::Mrr(5),
            normalization: Normalization {
                mean: vec![0.0; features.len()],
                scale: vec![1.0; features.len()],
            },
            scorer: Scorer::CoordinateAscent {
                weights: vec![1.0; features.len()],
            },
        }
    }

    /// A model with a reranker feature needs the shortlist it was scored over, and only such a
    /// model takes one: the message names the configuration's line and what to write.
    #[test]
    fn a_shortlist_is_required_exactly_for_reranker_features() {
        let with = model(&["bm25", "colbert", "colbert.rank"]);
        let without = model(&["bm25", "bm25.rank"]);
        let s = FeatureShortlist {
            width: 20,
            from: super::super::fusion::ShortlistFrom::Rrf,
        };
        assert_eq!(model_features(&with), ["colbert"]);
        assert!(check(&with).is_ok());
        let e = check_shortlist(&with, None, "x.yaml:7")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.yaml:7: its model uses colbert"), "{e}");
        assert!(e.contains("shortlist: { width: 20, from: rrf }"), "{e}");
        assert!(check_shortlist(&with, Some(&s), "x").is_ok());
        let e = check_shortlist(&without, Some(&s), "x.yaml:9")
            .unwrap_err()
            .to_string();
        assert!(e.contains("remove it"), "{e}");
        assert!(check_shortlist(&without, None, "x").is_ok());
    }
}
