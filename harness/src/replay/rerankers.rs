//! A weighted fusion's further reranker lists (`fusion: { rerankers: { cross-encoder: {..},
//! colbert: {..} } }`): several rerankers' scores over one shortlist, each a list of its own.
//!
//! Before the replay, each such configuration `c` gets one hidden companion per named list,
//! `c~cross-encoder` / `c~colbert`: that list's model as a plain rerank stage over the list the
//! shortlist is cut from (`shortlist_from`: `rrf`, `bm25` or `dense`, at `c`'s depth), with no
//! engine, fusion or wiring. Its shortlist is scored like any rerank stage's (the score cache,
//! or the suite's recorded model outputs under `--from-recording`): on docir the companions'
//! pairs are those of `fusion+L12@20` and `fusion+colbert@20`, read, not scored again. After
//! the rerank stages, `c` is fused over its lists (`fused::fuse_rerank_lists`), each companion's
//! list read from its run (`fused::rerank_list`), and the companions are dropped with the
//! learned configurations' (`learned_models::rank_with_models` drops every run after the
//! experiments file's own).

use anyhow::{bail, Result};

use super::ConfigRun;
use crate::suite::fusion::{FusionSpec, ShortlistFrom, LISTS};
use crate::suite::{Configuration, Experiments, Retriever};
use ranklab_engine::policy::Wiring;

/// The companions of `c` (one per list of its fusion's `rerankers:`, in [`LISTS`] order):
/// each list's model as the rerank stage over `c`'s shortlist list.
pub(crate) fn companions(c: &Configuration) -> Vec<Configuration> {
    let Some(spec) = c.fusion.as_ref().filter(|f| f.names_rerankers()) else {
        return Vec::new();
    };
    let retriever = match spec.shortlist_from() {
        ShortlistFrom::Rrf => Retriever::Fusion,
        ShortlistFrom::Bm25 => Retriever::Bm25,
        ShortlistFrom::Dense => Retriever::Dense,
    };
    spec.reranker_lists()
        .into_iter()
        .map(|(i, r)| Configuration {
            name: companion_name(c, i),
            retriever,
            engine: None,
            fusion: None,
            rerank: Some(r.clone()),
            wiring: Wiring::None,
            model: None,
            shortlist: None,
            learned: None,
            ..c.clone()
        })
        .collect()
}

/// `c~<list>`: the name of `c`'s companion for list `LISTS[i]`.
fn companion_name(c: &Configuration, i: usize) -> String {
    format!("{}~{}", c.name, LISTS[i])
}

/// `ex` with the companions of its fusions' reranker lists appended after its configurations
/// (`None` when it has none).
pub(super) fn with_companions(ex: &Experiments) -> Option<Experiments> {
    let extra: Vec<Configuration> = ex.configurations.iter().flat_map(companions).collect();
    if extra.is_empty() {
        return None;
    }
    let mut out = ex.clone();
    out.configurations.extend(extra);
    Some(out)
}

/// The companion runs of `c`'s reranker lists among `runs`, in [`FusionSpec::reranker_lists`]
/// order.
pub(super) fn companion_runs<'r>(
    runs: &'r [ConfigRun],
    c: &Configuration,
    spec: &FusionSpec,
) -> Result<Vec<&'r ConfigRun>> {
    spec.reranker_lists()
        .into_iter()
        .map(|(i, _)| {
            let name = companion_name(c, i);
            match runs.iter().find(|r| r.config.name == name) {
                Some(r) => Ok(r),
                None => bail!(
                    "internal: the companion run {name:?} of a fusion's reranker list is missing"
                ),
            }
        })
        .collect()
}
