//! `retriever: learned, model: FILE`: the model file a learned configuration ranks with, read
//! and checked when the experiments file is read (docs/formats.md, "A learned model file").

use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Result};
use ranklab_engine::learn::{tree::Node, Model, Scorer, FORMAT};

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
    if let Some(f) = m
        .features
        .iter()
        .find(|f| !KNOWN_COLUMNS.contains(&f.as_str()))
    {
        if ["cross-encoder", "colbert"].contains(&f.trim_end_matches(".rank")) {
            return Err(format!("feature {f:?} (a model's score over a rerank shortlist) is computed by `ranklab tune` only; a model using it is not replayable as `retriever: learned` yet, train one without it"));
        }
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
