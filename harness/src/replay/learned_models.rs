//! A learned configuration whose model uses the `cross-encoder` or `colbert` features
//! (`retriever: learned, model: FILE, shortlist: { width, from }`) or the `external` feature
//! (`retriever: learned, model: FILE, engine: {..}`): the features a tuning computed, computed
//! again by the same code (`features::build`) from the same replays.
//!
//! Before the replay, each such configuration `c` gets hidden companions, the configurations
//! `ranklab tune` replays to build its features: `c~bm25` and `c~dense` (its lists at its
//! depth) and, per model feature, `c~cross-encoder` / `c~colbert`: that feature's model
//! (`features::MODEL_FEATURES`) as the rerank stage over the top `width` of the list `from`.
//! Their shortlists are scored like any rerank stage's (the score cache, or the suite's
//! recorded model outputs under `--from-recording`), so a pair the tuning scored is read, not
//! scored again. A model with the `external` feature needs no companion for it: `c` carries the
//! engine it was trained with (`engine:`, as the tuned configuration writes it), so the replay
//! asks it (or reads its recording, found by the engine's hash like every engine list:
//! `external::recording::load_by_hash`; none is an error, never an empty list) as `c`'s own
//! first stage, and that list at `c`'s depth is the feature's. After the replay, `c`'s ranking
//! is its model's over those features (the missing-document rule and the candidates of
//! `features`), and the companions are dropped from the runs.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use ranklab_engine::corpus::Corpus;

use super::output::plain;
use super::{features, ConfigRun};
use crate::suite::fusion::ShortlistFrom;
use crate::suite::learned::{model_features, uses_external};
use crate::suite::{Configuration, Experiments, RerankSpec, Retriever};
use ranklab_engine::policy::Wiring;

/// Whether `c` is a learned configuration whose model uses a model feature or `external`:
/// ranked here, after the replay, rather than in the first stage.
pub(super) fn uses_models(c: &Configuration) -> bool {
    c.retriever == Retriever::Learned
        && c.learned
            .as_ref()
            .is_some_and(|m| !model_features(m).is_empty() || uses_external(m))
}

/// The companion of `c` named `c~suffix` with retriever `r` (no engine, fusion, wiring or
/// model).
fn companion(c: &Configuration, suffix: &str, r: Retriever) -> Configuration {
    Configuration {
        name: format!("{}~{suffix}", c.name),
        retriever: r,
        engine: None,
        fusion: None,
        rerank: None,
        wiring: Wiring::None,
        model: None,
        shortlist: None,
        learned: None,
        ..c.clone()
    }
}

/// The companions of `c` (see the module comment), in the order [`rank_with_models`] reads.
fn companions(c: &Configuration) -> Vec<Configuration> {
    let m = c.learned.as_ref().expect("checked by uses_models");
    let mut out = vec![
        companion(c, "bm25", Retriever::Bm25),
        companion(c, "dense", Retriever::Dense),
    ];
    if model_features(m).is_empty() {
        return out;
    }
    let s = c
        .shortlist
        .expect("checked when the experiments file was read");
    let from = match s.from {
        ShortlistFrom::Rrf => Retriever::Fusion,
        ShortlistFrom::Bm25 => Retriever::Bm25,
        ShortlistFrom::Dense => Retriever::Dense,
    };
    for name in model_features(m) {
        let (_, model) = features::MODEL_FEATURES
            .iter()
            .find(|(n, _)| *n == name)
            .expect("the suite's model columns are the replay's");
        out.push(Configuration {
            rerank: Some(RerankSpec::cross_encoder(model, s.width)),
            ..companion(c, name, from)
        });
    }
    out
}

/// `ex` with the companions of its learned configurations that use model features appended
/// after its own configurations (`None` when it has none).
pub(super) fn with_companions(ex: &Experiments) -> Option<Experiments> {
    let extra: Vec<Configuration> = ex
        .configurations
        .iter()
        .filter(|c| uses_models(c))
        .flat_map(companions)
        .collect();
    if extra.is_empty() {
        return None;
    }
    let mut out = ex.clone();
    out.configurations.extend(extra);
    Some(out)
}

/// Ranks every learned configuration that uses model features by its model over the features
/// of its companions' runs, then drops the companions (the runs after the first `own`).
pub(super) fn rank_with_models(
    corpus: &Corpus,
    runs: &mut Vec<ConfigRun>,
    own: usize,
) -> Result<()> {
    let companions = runs.split_off(own);
    let find = |name: String| -> Result<&ConfigRun> {
        match companions.iter().find(|r| r.config.name == name) {
            Some(r) => Ok(r),
            None => {
                bail!("internal: the companion run {name:?} of a learned configuration is missing")
            }
        }
    };
    for run in runs.iter_mut().filter(|r| uses_models(&r.config)) {
        let c = &run.config;
        let model = c.learned.clone().expect("checked by uses_models");
        let width = c.shortlist.map_or(0, |s| s.width);
        let bm25 = find(format!("{}~bm25", c.name))?;
        let dense = find(format!("{}~dense", c.name))?;
        let mut lists = Vec::new();
        for name in model_features(&model) {
            let (name, _) = features::MODEL_FEATURES
                .iter()
                .find(|(n, _)| *n == name)
                .expect("the suite's model columns are the replay's");
            lists.push(features::ModelList {
                name,
                run: find(format!("{}~{name}", c.name))?,
                width,
            });
        }
        // `external`: the engine's list is `c`'s own first stage, replayed above.
        let engine = ConfigRun {
            config: c.clone(),
            per_task: std::mem::take(&mut run.per_task),
            weights: None,
        };
        if uses_external(&model) {
            lists.push(features::ModelList {
                name: features::EXTERNAL,
                run: &engine,
                width: c.depth(),
            });
        }
        let none = vec![BTreeMap::new(); bm25.per_task.len()];
        let rows = features::build(
            &model.features,
            bm25,
            dense,
            &lists,
            corpus,
            c.depth(),
            &none,
        );
        run.per_task = rows
            .iter()
            .map(|r| {
                features::rank(&model, r, c.depth(), corpus)
                    .iter()
                    .map(plain)
                    .collect()
            })
            .collect();
    }
    Ok(())
}
