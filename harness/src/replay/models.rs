//! Opening the models a replay uses: the bi-encoders with their section vectors, the rerank
//! stages' scorers (cross-encoder, late-interaction model, in-process LLM or endpoint), their
//! caches and, under `--cluster`, where their misses are computed.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::dense::{DenseIndex, EmbedderOptions, EmbeddingCache, LazyEmbedder};
use ranklab_engine::models::remote::{Offload, Remote};
use ranklab_engine::models::ModelStore;
use ranklab_engine::rerank::prompt::PromptTemplate;
use ranklab_engine::rerank::{CrossEncoderOptions, LazyCrossEncoder, ScoreCache};

use super::{DenseModel, Replayer, RerankModel};
use crate::suite::{Experiments, RerankSpec, Scorer};

impl<'c> Replayer<'c> {
    /// The bi-encoders (with their section vectors) and cross-encoders the experiments name.
    #[allow(clippy::type_complexity)]
    pub(super) fn open_models(
        corpus: &Corpus,
        experiments: &[&Experiments],
        remote: Option<&std::sync::Arc<dyn Remote>>,
    ) -> Result<(BTreeMap<String, DenseModel>, BTreeMap<String, RerankModel>)> {
        let configs = || experiments.iter().flat_map(|e| e.configurations.iter());
        let mut dense = BTreeMap::new();
        let embedders: BTreeSet<&str> = configs().filter_map(|c| c.embedder()).collect();
        let rerank_specs: BTreeMap<String, (&RerankSpec, &Path)> = experiments
            .iter()
            .flat_map(|e| {
                let dir = e.path.parent().unwrap_or(Path::new("."));
                e.configurations
                    .iter()
                    .filter_map(move |c| c.rerank.as_ref().map(|r| (r, dir)))
                    // A fine-tuned stage's models are trained per fold in the replay.
                    .filter(|(r, _)| r.finetune.is_none())
            })
            .map(|(r, dir)| (r.model_key(), (r, dir)))
            .collect();
        let store = if embedders.is_empty() && rerank_specs.is_empty() {
            None
        } else {
            Some(ModelStore::open_default()?)
        };
        for id in embedders {
            let store = store.as_ref().expect("store opened when models are used");
            let mut embedder = LazyEmbedder::open(store, id, &EmbedderOptions::default())
                .with_context(|| format!("loading bi-encoder {id}"))?;
            let mut cache = EmbeddingCache::open(&store.embeddings_dir(), &embedder)?;
            if let Some(r) = remote {
                cache.set_offload(Offload {
                    remote: r.clone(),
                    model: id.to_string(),
                    args: Vec::new(),
                });
            }
            let total = corpus.docs.iter().map(|d| d.sections.len()).sum::<usize>();
            let pb = crate::progress::bar(total as u64, "embedding");
            let (index, stats) =
                DenseIndex::build_with_progress(corpus, &mut embedder, &cache, &mut |done, _| {
                    pb.set_position(done as u64)
                })?;
            pb.finish_and_clear();
            cache.flush()?;
            eprintln!(
                "{id}: {} sections; vector cache {} hits, {} misses, {} rebuilt",
                total, stats.hits, stats.misses, stats.rebuilt
            );
            dense.insert(
                id.to_string(),
                DenseModel {
                    embedder: RefCell::new(embedder),
                    cache,
                    index,
                },
            );
        }
        let mut rerankers = BTreeMap::new();
        for (key, (spec, dir)) in rerank_specs {
            let store = store.as_ref().expect("store opened when models are used");
            let (id, batch) = (spec.model.as_str(), spec.batch());
            let (model, tape) = open_scorer_with_tape(store, spec, dir)?;
            let mut cache = ScoreCache::open(&store.scores_dir(), &model)?;
            // An endpoint's pairs are asked here: a cluster's nodes have no endpoint stage.
            if let Some(r) = remote.filter(|_| !matches!(spec.scorer, Scorer::Endpoint(_))) {
                if spec.scorer == Scorer::Llm && spec.prompt.is_some() {
                    anyhow::bail!(
                        "rerank stage {key}: --cluster workers ask the default prompt; run this \
                         stage (its own `prompt:` file) without --cluster"
                    );
                }
                cache.set_offload(Offload {
                    remote: r.clone(),
                    model: id.to_string(),
                    args: match batch {
                        1 => Vec::new(),
                        b => vec!["--batch".to_string(), b.to_string()],
                    },
                });
            }
            rerankers.insert(
                key,
                RerankModel {
                    model: RefCell::new(model),
                    cache,
                    stats: RefCell::default(),
                    tape,
                },
            );
        }
        Ok((dense, rerankers))
    }
}

/// The scorer of a rerank stage, not loaded yet (`dir`: the experiments file's folder, which
/// a `prompt:` file is relative to): a cross-encoder or late-interaction model of `store`, an
/// in-process LLM or an endpoint. `report::costs` opens stages through it too.
pub(crate) fn open_scorer(
    store: &ModelStore,
    spec: &RerankSpec,
    dir: &Path,
) -> Result<LazyCrossEncoder> {
    Ok(open_scorer_with_tape(store, spec, dir)?.0)
}

/// [`open_scorer`], with an endpoint stage's tape (live until a replay sets its mode).
fn open_scorer_with_tape(
    store: &ModelStore,
    spec: &RerankSpec,
    dir: &Path,
) -> Result<(
    LazyCrossEncoder,
    Option<crate::external::rerank::tape::Tape>,
)> {
    let id = spec.model.as_str();
    Ok(match &spec.scorer {
        Scorer::Model => {
            let options = CrossEncoderOptions {
                batch_size: spec.batch(),
                ..CrossEncoderOptions::default()
            };
            let model = LazyCrossEncoder::open(store, id, &options)
                .with_context(|| format!("loading cross-encoder {id}"))?;
            (model, None)
        }
        Scorer::Llm => (open_llm(store, spec, dir)?, None),
        Scorer::Endpoint(endpoint) => {
            let (model, tape) = open_endpoint(endpoint, spec, dir)?;
            (model, Some(tape))
        }
    })
}

/// The prompt template of an `llm:` rerank stage: its `prompt:` file (relative to `dir`, the
/// experiments file's folder) or the default.
fn prompt_of(spec: &RerankSpec, dir: &Path) -> Result<PromptTemplate> {
    Ok(match &spec.prompt {
        Some(p) => PromptTemplate::from_file(&dir.join(p))?,
        None => PromptTemplate::default(),
    })
}

/// An in-process LLM rerank stage (`llm: ID`).
fn open_llm(store: &ModelStore, spec: &RerankSpec, dir: &Path) -> Result<LazyCrossEncoder> {
    let prompt = prompt_of(spec, dir)?;
    LazyCrossEncoder::open_llm(store, &spec.model, &prompt)
        .with_context(|| format!("loading LLM {}", spec.model))
}

/// An endpoint rerank stage (`llm: { endpoint, model, api }`), not connected yet, and the tape
/// of its exchanges.
fn open_endpoint(
    endpoint: &crate::suite::LlmEndpoint,
    spec: &RerankSpec,
    dir: &Path,
) -> Result<(LazyCrossEncoder, crate::external::rerank::tape::Tape)> {
    let prompt = prompt_of(spec, dir)?;
    Ok(crate::external::rerank::open(endpoint, &prompt))
}

/// The identities of the models the configurations of `ex` use.
pub(super) fn models_used(engine: &Replayer, ex: &Experiments) -> BTreeMap<String, String> {
    let used: BTreeSet<String> = ex
        .configurations
        .iter()
        .flat_map(|c| {
            c.embedder()
                .map(str::to_string)
                .into_iter()
                .chain(c.rerank.as_ref().map(RerankSpec::model_key))
        })
        .collect();
    engine
        .model_identities()
        .into_iter()
        .filter(|(id, _)| used.contains(id))
        .collect()
}
