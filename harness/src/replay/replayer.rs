//! What a replay runs on: the BM25 indexes and the models (with their caches) built once per
//! corpus and shared by every configuration.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::dense::{DenseIndex, EmbeddingCache, LazyEmbedder};
use ranklab_engine::lexical::{Analyzer, IndexCache, LexicalIndex, CACHED_MIN_SECTIONS};
use ranklab_engine::models::remote::Remote;
use ranklab_engine::rerank::{LazyCrossEncoder, PairStats, ScoreCache};

use crate::suite::{Experiments, Retriever};

/// A bi-encoder with its index over the corpus and its cache.
pub struct DenseModel {
    /// The model, loaded only when a text misses the cache.
    pub embedder: RefCell<LazyEmbedder>,
    /// Its vector cache.
    pub cache: EmbeddingCache,
    /// Section vectors of the corpus.
    pub index: DenseIndex,
}

impl DenseModel {
    /// This model's index over `corpus`, its section vectors gathered through its cache (the
    /// model loads only for a text the cache lacks; the cache is flushed after), with the
    /// vectors found in the cache and those computed.
    pub fn index_over(&mut self, corpus: &Corpus) -> Result<(DenseIndex, usize, usize)> {
        let (index, stats) = DenseIndex::build_with_progress(
            corpus,
            self.embedder.get_mut(),
            &self.cache,
            &mut |_, _| {},
        )?;
        self.cache.flush()?;
        Ok((index, stats.hits, stats.misses))
    }
}

/// A cross-encoder with its score cache.
pub struct RerankModel {
    /// The model, loaded only when a pair misses the cache.
    pub model: RefCell<LazyCrossEncoder>,
    /// Its score cache.
    pub cache: ScoreCache,
    /// Pairs scored / from cache in this process.
    pub stats: RefCell<PairStats>,
    /// An endpoint stage's exchanges (live, recorded or replayed); None for a model.
    pub tape: Option<crate::external::rerank::tape::Tape>,
}

impl RerankModel {
    /// Whether this is an endpoint stage whose every answer comes from its recording
    /// (`--from-recording`): no model and no server is loaded or asked for it.
    pub fn replays_recording(&self) -> bool {
        self.tape.as_ref().is_some_and(|t| t.replays())
    }
}

/// What a replay runs on: the indexes and models built once per corpus and shared by all
/// configurations. (Named apart from the `ranklab-engine` crate and from external `engine:`
/// configurations, the other two things called an engine.)
pub struct Replayer<'c> {
    /// The corpus.
    pub corpus: &'c Corpus,
    /// BM25 index (English analyzer), built when a configuration uses it.
    pub lexical: Option<LexicalIndex>,
    /// BM25 index with the Lucene analyzer, built when a configuration uses it.
    pub lexical_lucene: Option<LexicalIndex>,
    /// Bi-encoders by model id.
    pub dense: BTreeMap<String, DenseModel>,
    /// Cross-encoders by model id, with " (batch N)" when a batch size other than 1 is set.
    pub rerankers: BTreeMap<String, RerankModel>,
    /// Where the models' misses go (`--cluster`), if anywhere: then every query vector is
    /// asked for in one call before the first stage, not one query at a time, and fine-tuned
    /// stages train their folds there.
    pub remote: Option<std::sync::Arc<dyn Remote>>,
    /// The models outside `dense` and `rerankers`, the fold models of fine-tuned stages, each
    /// with whether it was loaded (noted by `tuned::Tuned::finish`), so that the loads line
    /// counts them.
    pub fold_models: RefCell<Vec<(String, bool)>>,
}

impl<'c> Replayer<'c> {
    /// Builds the indexes the experiments use — a BM25 index per analyzer that a BM25 or fusion
    /// configuration names, section vectors per bi-encoder — and opens their models and caches.
    /// A model is loaded only when something misses its cache (see `LazyEmbedder`). The BM25
    /// indexes are built on a thread of their own while the vector caches load.
    pub fn build(corpus: &'c Corpus, experiments: &[&Experiments]) -> Result<Self> {
        Replayer::build_with(corpus, experiments, None)
    }

    /// [`Replayer::build`], with every model's cache misses computed by `remote` (a cluster)
    /// instead of the local model: the section vectors now, query vectors and cross-encoder
    /// pairs when replayed. Results are merged into the same caches, only once verified.
    pub fn build_with(
        corpus: &'c Corpus,
        experiments: &[&Experiments],
        remote: Option<std::sync::Arc<dyn Remote>>,
    ) -> Result<Self> {
        // A learned model's model features are scored by companion rerank stages.
        // So are a fusion's `rerankers:` lists.
        let expanded: Vec<Experiments> = experiments
            .iter()
            .filter_map(|e| super::learned_models::with_companions(e))
            .chain(
                experiments
                    .iter()
                    .filter_map(|e| super::rerankers::with_companions(e)),
            )
            .collect();
        let mut all: Vec<&Experiments> = experiments.to_vec();
        all.extend(expanded.iter());
        let experiments = all.as_slice();
        let configs = || experiments.iter().flat_map(|e| e.configurations.iter());
        let mut analyzers: BTreeSet<Analyzer> = configs().filter_map(|c| c.analyzer()).collect();
        // A reranked external list is scored on each document's best English BM25 section.
        if configs().any(|c| c.retriever == Retriever::External && c.rerank.is_some()) {
            analyzers.insert(Analyzer::English);
        }
        let uses_models = configs().any(|c| c.embedder().is_some() || c.rerank.is_some());
        std::thread::scope(|s| {
            let lexical = s.spawn(|| -> Result<_> {
                let pb = (!uses_models).then(|| crate::progress::bar(1, "BM25 index"));
                let mut built = BTreeMap::new();
                for &a in &analyzers {
                    let index = lexical_index(corpus, a).with_context(|| match a {
                        Analyzer::English => "building the BM25 index".to_string(),
                        a => format!("building the BM25 index ({} analyzer)", a.name()),
                    })?;
                    built.insert(a, index);
                }
                if let Some(pb) = pb {
                    pb.finish_and_clear();
                }
                Ok(built)
            });
            let models = Replayer::open_models(corpus, experiments, remote.as_ref());
            let mut built = lexical
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))?;
            let (dense, rerankers) = models?;
            Ok(Replayer {
                corpus,
                lexical: built.remove(&Analyzer::English),
                lexical_lucene: built.remove(&Analyzer::Lucene),
                dense,
                rerankers,
                remote,
                fold_models: RefCell::default(),
            })
        })
    }

    /// This engine's models, caches and counts over another corpus (a point of a corpus-size
    /// curve): the BM25 indexes it has are built anew (document frequencies change with the
    /// corpus), each bi-encoder's section vectors gathered again through its cache, so a model
    /// loads only for a text it has never embedded; loaded models stay loaded. Also returns the
    /// section vectors found in the caches and those computed.
    pub fn over<'d>(self, corpus: &'d Corpus) -> Result<(Replayer<'d>, usize, usize)> {
        let lexical = match self.lexical {
            Some(_) => Some(lexical_index(corpus, Analyzer::English)?),
            None => None,
        };
        let lexical_lucene = match self.lexical_lucene {
            Some(_) => Some(lexical_index(corpus, Analyzer::Lucene)?),
            None => None,
        };
        let mut dense = BTreeMap::new();
        let (mut hits, mut misses) = (0, 0);
        for (id, mut m) in self.dense {
            let (index, found, computed) = m.index_over(corpus)?;
            (hits, misses) = (hits + found, misses + computed);
            m.index = index;
            dense.insert(id, m);
        }
        let engine = Replayer {
            corpus,
            lexical,
            lexical_lucene,
            dense,
            rerankers: self.rerankers,
            remote: self.remote,
            fold_models: self.fold_models,
        };
        Ok((engine, hits, misses))
    }

    /// The identity (name, sha256, settings) of every model in use, by id.
    pub fn model_identities(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        for (id, d) in &self.dense {
            m.insert(id.clone(), d.index.identity().to_string());
        }
        for (id, r) in &self.rerankers {
            m.insert(id.clone(), r.cache.identity().to_string());
        }
        m
    }

    /// Writes the caches and prints the pair counts of this process.
    pub fn finish(&self) -> Result<()> {
        for d in self.dense.values() {
            d.cache.flush()?;
        }
        for (id, r) in &self.rerankers {
            r.cache.flush()?;
            let stats = r.stats.borrow();
            match r.replays_recording() {
                true => eprintln!(
                    "{id}: {} pairs answered from its recorded exchanges (no endpoint asked), {} from cache",
                    stats.scored, stats.cached
                ),
                false => eprintln!("{id}: {stats}"),
            }
        }
        if let Some(line) = self.loads_line() {
            eprintln!("{line}");
        }
        Ok(())
    }

    /// Models loaded by this engine (a model is loaded only when something misses its cache),
    /// by id: an endpoint counts when it was asked, not when its recording answered.
    pub fn loaded_models(&self) -> Vec<String> {
        let dense = self
            .dense
            .iter()
            .filter(|(_, d)| d.embedder.borrow().is_loaded());
        let rerank = self
            .rerankers
            .iter()
            .filter(|(_, r)| r.model.borrow().is_loaded() && !r.replays_recording());
        dense
            .map(|(id, _)| id.clone())
            .chain(rerank.map(|(id, _)| id.clone()))
            .chain(
                self.fold_models
                    .borrow()
                    .iter()
                    .filter(|(_, loaded)| *loaded)
                    .map(|(id, _)| id.clone()),
            )
            .collect()
    }

    /// `N model loads: ids` (None when the engine uses no model): what [`Replayer::finish`] prints.
    fn loads_line(&self) -> Option<String> {
        if self.dense.is_empty()
            && self.rerankers.is_empty()
            && self.fold_models.borrow().is_empty()
        {
            return None;
        }
        let loaded = self.loaded_models();
        Some(match loaded.len() {
            0 if self.rerankers.values().any(RerankModel::replays_recording) => {
                "0 model loads: every vector and score came from the cache or a recording"
                    .to_string()
            }
            0 => "0 model loads: every vector and score came from the cache".to_string(),
            1 => format!("1 model load: {}", loaded[0]),
            n => format!("{n} model loads: {}", loaded.join(", ")),
        })
    }

    /// Total cross-encoder pairs scored and cached so far, over all models.
    pub fn pair_stats(&self) -> PairStats {
        let mut s = PairStats::default();
        for r in self.rerankers.values() {
            s.add(*r.stats.borrow());
        }
        s
    }

    pub(super) fn dense(&self, id: &str) -> &DenseModel {
        self.dense
            .get(id)
            .expect("every embedder of the experiments was loaded")
    }
}

/// The BM25 index of `corpus` under `analyzer`: for a corpus of at least
/// [`CACHED_MIN_SECTIONS`] sections, loaded from (or built and stored in) `<cache>/lexical/`
/// (see `LexicalIndex::cached`); a smaller one, or with no cache directory, built in memory.
pub(super) fn lexical_index(corpus: &Corpus, analyzer: Analyzer) -> Result<LexicalIndex> {
    let sections: usize = corpus.docs.iter().map(|d| d.sections.len()).sum();
    let root = match ranklab_engine::models::cache_root() {
        Ok(root) if sections >= CACHED_MIN_SECTIONS => root,
        _ => return Ok(LexicalIndex::build_with(corpus, analyzer)?),
    };
    let (index, outcome) = LexicalIndex::cached(corpus, analyzer, &root.join("lexical"))?;
    match outcome {
        IndexCache::Loaded(_) | IndexCache::Built(_) => {}
        IndexCache::Rebuilt(path, why) => eprintln!(
            "note: the cached BM25 index {} failed its check ({why}); rebuilt it",
            path.display()
        ),
        IndexCache::NotStored(path, why) => eprintln!(
            "note: could not store the BM25 index in {} ({why}); the next run builds it again",
            path.display()
        ),
    }
    Ok(index)
}
