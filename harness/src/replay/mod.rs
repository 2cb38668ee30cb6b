//! Replay: every task of a suite under every configuration of an experiment.
//!
//! One first stage, many configurations: per task, each distinct first-stage list (BM25 with
//! given parameters, the bi-encoder of a given model) is computed once, at the largest depth any
//! configuration asks for, and every configuration derives its ranking from those lists. Indexes
//! are built once per corpus. The output of a configuration for a task is a ranked list in the
//! total order of `ranklab_engine::ranking` (score descending, then id descending), so the run
//! files written from it rank identically when trec_eval reads them back.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use anyhow::{Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::dense::{
    embed_query, query_text, DenseIndex, EmbedderOptions, EmbeddingCache, LazyEmbedder,
};
use ranklab_engine::lexical::{
    Analyzer, Bm25Params, IndexCache, LexicalIndex, CACHED_MIN_SECTIONS,
};
use ranklab_engine::models::remote::{Offload, Remote};
use ranklab_engine::models::ModelStore;
use ranklab_engine::policy::{current, legacy, Practice, Weights};
use ranklab_engine::ranking::{check_finite, Hit};
use ranklab_engine::rerank::prompt::PromptTemplate;
use ranklab_engine::rerank::{
    score_shortlists, Candidate, CrossEncoderOptions, LazyCrossEncoder, PairStats, RerankedHit,
    ScoreCache, ShortlistRequest, ShortlistScores,
};

use crate::suite::fusion::fuse;
use crate::suite::{Configuration, Experiments, RerankSpec, Retriever, Scorer, Suite};
use ranklab_engine::policy::Wiring;

pub mod interpolated;
pub mod scale;
pub mod tuned;
pub mod values;

/// One ranked document of a configuration's output.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Document index in the corpus.
    pub doc: usize,
    /// The score that orders the list (written to the run file).
    pub score: f32,
    /// The section that won the document its first-stage rank.
    pub section: usize,
    /// The cross-encoder logit, for documents in a rerank shortlist.
    pub rerank_score: Option<f32>,
}

/// What one configuration produced for every task.
#[derive(Debug, Clone)]
pub struct ConfigRun {
    /// The configuration.
    pub config: Configuration,
    /// Per task (suite order), the ranked list (at most the configuration's depth).
    pub per_task: Vec<Vec<Ranked>>,
    /// The penalty weights it ranked with (configurations with a wiring; None for the others).
    pub weights: Option<Weights>,
}

/// The result of a replay.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Per configuration, in file order.
    pub runs: Vec<ConfigRun>,
    /// Identity (file sha256, settings) of every model used, by model id.
    pub models: BTreeMap<String, String>,
    /// Ids external engines returned that are not in the corpus: a [`Ranked::doc`] of
    /// `corpus.len() + i` names `unjudged[i]` (see [`Replay::corpus_view`]).
    pub unjudged: Vec<String>,
    /// What each external configuration did (file order).
    pub external: Vec<crate::external::Summary>,
    /// Per rerank model key, the shortlists it was asked to score: (task index, the widest
    /// shortlist's hits, best first), one per (task, first stage). What `bench --measure-costs`
    /// times the model on (`report::costs`).
    pub shortlists: BTreeMap<String, Vec<(usize, Vec<Hit>)>>,
    /// Under `--record` and `--from-recording`, the recording of each configuration whose
    /// rerank stage is an endpoint (file order).
    pub rerank_recordings: Vec<crate::external::rerank::tape::Recording>,
    /// What each fine-tuned rerank stage trained (file order of its first configuration).
    pub finetuned: Vec<crate::replay::tuned::Summary>,
}

impl Replay {
    /// The corpus the rankings index into: `corpus` itself, or, when an external engine
    /// returned ids the corpus does not hold, `corpus` followed by one text-less document per
    /// such id (unjudged: no task expects it).
    pub fn corpus_view<'a>(&self, corpus: &'a Corpus) -> Cow<'a, Corpus> {
        if self.unjudged.is_empty() {
            return Cow::Borrowed(corpus);
        }
        let mut docs = corpus.docs.clone();
        docs.extend(
            self.unjudged
                .iter()
                .map(|id| crate::external::stub_document(id)),
        );
        Cow::Owned(
            Corpus::new(corpus.root.clone(), docs)
                .expect("unjudged ids are absent from the corpus and unique"),
        )
    }
}

/// A bi-encoder with its index over the corpus and its cache.
pub struct DenseModel {
    /// The model, loaded only when a text misses the cache.
    pub embedder: RefCell<LazyEmbedder>,
    /// Its vector cache.
    pub cache: EmbeddingCache,
    /// Section vectors of the corpus.
    pub index: DenseIndex,
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
            let (index, stats) = DenseIndex::build_with_progress(
                corpus,
                m.embedder.get_mut(),
                &m.cache,
                &mut |_, _| {},
            )?;
            m.cache.flush()?;
            (hits, misses) = (hits + stats.hits, misses + stats.misses);
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
        };
        Ok((engine, hits, misses))
    }

    /// The bi-encoders (with their section vectors) and cross-encoders the experiments name.
    #[allow(clippy::type_complexity)]
    fn open_models(
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
            eprintln!("{id}: {}", r.stats.borrow());
        }
        if let Some(line) = self.loads_line() {
            eprintln!("{line}");
        }
        Ok(())
    }

    /// Models loaded into ONNX Runtime by this engine (a model is loaded only when something
    /// misses its cache), by id.
    pub fn loaded_models(&self) -> Vec<String> {
        let dense = self
            .dense
            .iter()
            .filter(|(_, d)| d.embedder.borrow().is_loaded());
        let rerank = self
            .rerankers
            .iter()
            .filter(|(_, r)| r.model.borrow().is_loaded());
        dense
            .map(|(id, _)| id.clone())
            .chain(rerank.map(|(id, _)| id.clone()))
            .collect()
    }

    /// `N model loads: ids` (None when the engine uses no model): what [`Replayer::finish`] prints.
    fn loads_line(&self) -> Option<String> {
        if self.dense.is_empty() && self.rerankers.is_empty() {
            return None;
        }
        let loaded = self.loaded_models();
        Some(match loaded.len() {
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

    fn dense(&self, id: &str) -> &DenseModel {
        self.dense
            .get(id)
            .expect("every embedder of the experiments was loaded")
    }
}

/// The BM25 index of `corpus` under `analyzer`: for a corpus of at least
/// [`CACHED_MIN_SECTIONS`] sections, loaded from (or built and stored in) `<cache>/lexical/`
/// (see `LexicalIndex::cached`); a smaller one, or with no cache directory, built in memory.
fn lexical_index(corpus: &Corpus, analyzer: Analyzer) -> Result<LexicalIndex> {
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

/// Cache key of a first-stage list (per task).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum ListKey {
    Bm25 {
        k1: u32,
        b: u32,
        analyzer: Analyzer,
    },
    Dense {
        model: String,
    },
    Fusion {
        model: String,
        k1: u32,
        b: u32,
        analyzer: Analyzer,
        rrf_k: u32,
        depth: usize,
        /// `FusionSpec::key`: `rrf` or the weighted fusion's normalization and weights.
        fusion: String,
    },
    External {
        configuration: String,
    },
}

/// An external engine names documents, not sections: the passage the cross-encoder scores is
/// each document's best BM25 section for the query (ranklab's English analyzer, default k1
/// and b), as it is for ranklab's own lists; section 0 when the query matches none of it.
pub fn best_sections(engine: &Replayer<'_>, query: &str, hits: &mut [Hit]) -> Result<()> {
    let corpus = engine.corpus;
    let built;
    let index = match &engine.lexical {
        Some(index) => index,
        None => {
            built = LexicalIndex::build(corpus)?;
            &built
        }
    };
    let best: HashMap<usize, usize> = index
        .search(corpus, query, corpus.len(), Default::default())?
        .into_iter()
        .map(|h| (h.doc, h.section))
        .collect();
    for h in hits {
        h.section = best.get(&h.doc).copied().unwrap_or(0);
    }
    Ok(())
}

fn list_key(c: &Configuration) -> ListKey {
    let p = c.bm25();
    let (k1, b) = (p.k1.to_bits(), p.b.to_bits());
    match c.retriever {
        Retriever::Bm25 => ListKey::Bm25 {
            k1,
            b,
            analyzer: p.analyzer,
        },
        Retriever::Dense => ListKey::Dense {
            model: c.embedder().unwrap_or_default().to_string(),
        },
        Retriever::Fusion => ListKey::Fusion {
            model: c.embedder().unwrap_or_default().to_string(),
            k1,
            b,
            analyzer: p.analyzer,
            rrf_k: c.rrf().k.to_bits(),
            depth: c.depth(),
            fusion: c.fusion.as_ref().map_or_else(|| "rrf".into(), |f| f.key()),
        },
        Retriever::External => ListKey::External {
            configuration: c.name.clone(),
        },
    }
}

/// The first-stage lists of one task, each computed once at `max_depth`.
struct TaskLists<'e, 'c> {
    engine: &'e Replayer<'c>,
    query: String,
    max_depth: usize,
    lists: HashMap<ListKey, Vec<Hit>>,
    /// Lists computed ahead for every task at once (see [`prefetch`]), not yet checked.
    ready: HashMap<ListKey, Vec<Hit>>,
    query_vecs: HashMap<String, Vec<f32>>,
}

impl TaskLists<'_, '_> {
    fn get(&mut self, c: &Configuration) -> Result<Vec<Hit>> {
        let key = list_key(c);
        if let Some(l) = self.lists.get(&key) {
            return Ok(l.iter().take(c.depth()).cloned().collect());
        }
        let corpus = self.engine.corpus;
        let list = match c.retriever {
            _ if self.ready.contains_key(&key) => self.ready.remove(&key).expect("present"),
            Retriever::Bm25 => {
                let p = c.bm25();
                let index = match p.analyzer {
                    Analyzer::Lucene => self.engine.lexical_lucene.as_ref(),
                    Analyzer::English => self.engine.lexical.as_ref(),
                }
                .expect("built when a configuration uses it");
                index.search(corpus, &self.query, self.max_depth, p)?
            }
            Retriever::Dense => {
                let v = self.query_vec(c.embedder().unwrap_or_default())?;
                self.engine
                    .dense(c.embedder().unwrap_or_default())
                    .index
                    .search(&v, self.max_depth)
            }
            Retriever::Fusion => {
                let lex = self.get(&Configuration {
                    retriever: Retriever::Bm25,
                    depth: Some(self.max_depth),
                    ..c.clone()
                })?;
                let sem = self.get(&Configuration {
                    retriever: Retriever::Dense,
                    depth: Some(self.max_depth),
                    ..c.clone()
                })?;
                let mut fused = fuse(c.fusion.as_ref(), c.rrf(), &lex, &sem, corpus.id_rank());
                fused.truncate(self.max_depth);
                fused
            }
            Retriever::External => unreachable!("external lists come from crate::external"),
        };
        check_finite(&self.query, &list, |d| corpus.id(d))?;
        let out = list.iter().take(c.depth()).cloned().collect();
        self.lists.insert(key, list);
        Ok(out)
    }

    fn query_vec(&mut self, model: &str) -> Result<Vec<f32>> {
        if let Some(v) = self.query_vecs.get(model) {
            return Ok(v.clone());
        }
        let d = self.engine.dense(model);
        let v = embed_query(&mut *d.embedder.borrow_mut(), &d.cache, &self.query)?;
        self.query_vecs.insert(model.to_string(), v.clone());
        Ok(v)
    }
}

/// The first-stage list of `query` under `c` (a ranklab first stage, not an external engine),
/// at `c`'s depth: what a task's list would be for that query (fine-tuning's merges).
pub(crate) fn first_stage_of(
    engine: &Replayer,
    c: &Configuration,
    query: &str,
) -> Result<Vec<Hit>> {
    let mut lists = TaskLists {
        engine,
        query: query.to_string(),
        max_depth: c.depth(),
        lists: HashMap::new(),
        ready: HashMap::new(),
        query_vecs: HashMap::new(),
    };
    lists.get(c)
}

/// The BM25, dense and fused lists (at `max_depth`) of every task that ranklab's own
/// configurations need, computed for all tasks at once on rayon's pool: BM25 and fusion one task
/// per job, dense in blocks of queries per pass over the vectors ([`DenseIndex::search_many`]).
/// The same hits as [`TaskLists::get`] computes one task at a time; they are checked
/// (non-finite scores) when a task takes them. Query vectors come from the cache (a miss is embedded here, in
/// task order).
fn prefetch(
    engine: &Replayer,
    suite: &Suite,
    ex: &Experiments,
    external: &HashMap<usize, Vec<Vec<Hit>>>,
    max_depth: usize,
) -> Result<Vec<HashMap<ListKey, Vec<Hit>>>> {
    let mut out: Vec<HashMap<ListKey, Vec<Hit>>> = vec![HashMap::new(); suite.tasks.len()];
    let (bm25, dense) = prefetched_lists(ex, external, max_depth);
    prefetch_bm25(engine, suite, bm25, max_depth, &mut out)?;
    prefetch_dense(engine, suite, dense, max_depth, &mut out)?;
    prefetch_fused(engine.corpus, ex, external, max_depth, &mut out);
    Ok(out)
}

/// The first stages [`prefetch`] computes: the BM25 lists (by key, with their parameters) and
/// the dense models (by model id, with the first configuration that uses each) of ranklab's
/// own configurations, fusion's included.
fn prefetched_lists<'x>(
    ex: &'x Experiments,
    external: &HashMap<usize, Vec<Vec<Hit>>>,
    max_depth: usize,
) -> (BTreeMap<ListKey, Bm25Params>, BTreeMap<String, &'x str>) {
    let mut bm25: BTreeMap<ListKey, Bm25Params> = BTreeMap::new();
    let mut dense: BTreeMap<String, &str> = BTreeMap::new();
    for (ci, c) in ex.configurations.iter().enumerate() {
        if external.contains_key(&ci) {
            continue;
        }
        if matches!(c.retriever, Retriever::Bm25 | Retriever::Fusion) {
            let lexical = Configuration {
                retriever: Retriever::Bm25,
                depth: Some(max_depth),
                ..c.clone()
            };
            bm25.entry(list_key(&lexical)).or_insert(c.bm25());
        }
        if matches!(c.retriever, Retriever::Dense | Retriever::Fusion) {
            let model = c.embedder().unwrap_or_default().to_string();
            dense.entry(model).or_insert(&c.name);
        }
    }
    (bm25, dense)
}

/// Every task's BM25 list for each key of `bm25`, one task per job.
fn prefetch_bm25(
    engine: &Replayer,
    suite: &Suite,
    bm25: BTreeMap<ListKey, Bm25Params>,
    max_depth: usize,
    out: &mut [HashMap<ListKey, Vec<Hit>>],
) -> Result<()> {
    use rayon::prelude::*;
    for (key, p) in bm25 {
        let index = match p.analyzer {
            Analyzer::Lucene => engine.lexical_lucene.as_ref(),
            Analyzer::English => engine.lexical.as_ref(),
        }
        .expect("built when a configuration uses it");
        let lists = suite
            .tasks
            .par_iter()
            .map(|t| {
                index
                    .search(engine.corpus, &t.query, max_depth, p)
                    .with_context(|| format!("BM25 search of task {}", t.id))
            })
            .collect::<Result<Vec<_>>>()?;
        for (m, l) in out.iter_mut().zip(lists) {
            m.insert(key.clone(), l);
        }
    }
    Ok(())
}

/// Every task's dense list for each model of `dense` (model id -> the configuration named in
/// an error), the query vectors embedded in task order, searched in blocks of queries.
fn prefetch_dense(
    engine: &Replayer,
    suite: &Suite,
    dense: BTreeMap<String, &str>,
    max_depth: usize,
    out: &mut [HashMap<ListKey, Vec<Hit>>],
) -> Result<()> {
    for (model, config) in dense {
        let d = engine.dense(&model);
        let mut vecs = Vec::with_capacity(suite.tasks.len());
        for t in &suite.tasks {
            vecs.push(
                embed_query(&mut *d.embedder.borrow_mut(), &d.cache, &t.query)
                    .with_context(|| format!("first stage of task {} under {config:?}", t.id))?,
            );
        }
        let key = ListKey::Dense {
            model: model.clone(),
        };
        for (m, l) in out.iter_mut().zip(d.index.search_many(&vecs, max_depth)) {
            m.insert(key.clone(), l);
        }
    }
    Ok(())
}

/// Fused lists, one task per job, from the lists in `out`, fused as `TaskLists::get` fuses
/// them. A task whose lists hold a non-finite score is left to `get`, which reports it.
fn prefetch_fused(
    corpus: &Corpus,
    ex: &Experiments,
    external: &HashMap<usize, Vec<Vec<Hit>>>,
    max_depth: usize,
    out: &mut [HashMap<ListKey, Vec<Hit>>],
) {
    use rayon::prelude::*;
    let mut fused_keys = BTreeSet::new();
    for (ci, c) in ex.configurations.iter().enumerate() {
        if external.contains_key(&ci) || c.retriever != Retriever::Fusion {
            continue;
        }
        let key = list_key(c);
        if !fused_keys.insert(key.clone()) {
            continue;
        }
        let of = |retriever| {
            list_key(&Configuration {
                retriever,
                depth: Some(max_depth),
                ..c.clone()
            })
        };
        let (lex_key, sem_key) = (of(Retriever::Bm25), of(Retriever::Dense));
        let id_rank = corpus.id_rank();
        let fused: Vec<Option<Vec<Hit>>> = out
            .par_iter()
            .map(|m| {
                let (lex, sem) = (m.get(&lex_key)?, m.get(&sem_key)?);
                let finite = |l: &[Hit]| l.iter().all(|h| h.score.is_finite());
                if !finite(lex) || !finite(sem) {
                    return None;
                }
                let mut f = fuse(c.fusion.as_ref(), c.rrf(), lex, sem, id_rank);
                f.truncate(max_depth);
                Some(f)
            })
            .collect();
        for (m, f) in out.iter_mut().zip(fused) {
            if let Some(f) = f {
                m.insert(key.clone(), f);
            }
        }
    }
}

/// Options of a replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Use these penalty weights instead of the practice file's (for tuning).
    pub weights: Option<Weights>,
    /// Live engines, `--record` or `--from-recording` (external configurations only).
    pub external: crate::external::Mode,
    /// Where recordings are read from (`reports/<suite>/runs`); a live run compares its
    /// rankings with a recording found there.
    pub recordings: Option<std::path::PathBuf>,
    /// Under `--from-recording`, recordings already drawn for these tasks, by configuration
    /// name (paired assertions' queries out of the suite's recordings): used instead of a file.
    pub recorded: Vec<crate::external::recording::Recording>,
}

/// The folder of a suite's recorded model outputs: `<suite's runs folder>/models/`.
pub const MODELS_FOLDER: &str = "models";

/// Begins the model-output recording of one suite's replay (`models::recorded`): every vector
/// and pair score the replay is given is kept; under `--from-recording` those recorded in
/// `<runs>/models/` are read first, so the replay takes the recorded bits whatever this CPU's
/// int8 kernels would give.
pub fn recorded_models(
    external: &crate::external::Mode,
    runs: Option<&Path>,
) -> Result<ranklab_engine::models::recorded::Session> {
    let read = match (external, runs) {
        (crate::external::Mode::FromRecording, Some(runs)) => Some(runs.join(MODELS_FOLDER)),
        _ => None,
    };
    Ok(ranklab_engine::models::recorded::Session::begin(
        read.as_deref(),
    )?)
}

/// The penalty weights of every configuration that has a wiring (None for the others).
fn weights_of(ex: &Experiments, opts: &ReplayOptions) -> Result<Vec<Option<Weights>>> {
    ex.configurations
        .iter()
        .map(|c| match (c.wiring, opts.weights) {
            (Wiring::None, _) => Ok(None),
            (_, Some(w)) => Ok(Some(w)),
            _ => {
                let p = ex.practice_path(c);
                let pr = Practice::load(&p).with_context(|| {
                    let text = ranklab_engine::input::read_text(&ex.path).unwrap_or_default();
                    let at = match ranklab_engine::yaml::Lines::new(&text).of("name", &c.name) {
                        0 => ex.path.display().to_string(),
                        line => format!("{}:{line}", ex.path.display()),
                    };
                    format!(
                        "{at}: configuration {:?} (wiring {}) reads its penalty weights from a practice file",
                        c.name,
                        c.wiring
                    )
                })?;
                Ok(Some(pr.weights))
            }
        })
        .collect()
}

/// Replays `suite` under every configuration of `ex`.
pub fn replay(engine: &Replayer, suite: &Suite, ex: &Experiments) -> Result<Replay> {
    replay_with(engine, suite, ex, &ReplayOptions::default())
}

/// Replays `suite` under every configuration of `ex`, with options.
pub fn replay_with(
    engine: &Replayer,
    suite: &Suite,
    ex: &Experiments,
    opts: &ReplayOptions,
) -> Result<Replay> {
    let weights = weights_of(ex, opts)?;
    let max_depth = ex
        .configurations
        .iter()
        .map(|c| c.depth())
        .max()
        .unwrap_or(1);
    let mut runs: Vec<ConfigRun> = ex
        .configurations
        .iter()
        .zip(&weights)
        .map(|(c, w)| ConfigRun {
            config: c.clone(),
            per_task: Vec::with_capacity(suite.tasks.len()),
            weights: *w,
        })
        .collect();
    let ext_opts = crate::external::RunOptions {
        mode: &opts.external,
        recordings: opts.recordings.as_deref(),
        recorded: &opts.recorded,
    };
    let mut ext = crate::external::run_all(engine.corpus, suite, ex, &ext_opts)?;
    if engine.remote.is_some() {
        embed_all_queries(engine, suite, ex)?;
    }
    // 1. Every task's first-stage lists, and per task the configuration whose list each
    //    (model, first stage) shortlist is cut from (the first that names it).
    let (mut first_stage, cut_from) =
        first_stages(engine, suite, ex, &runs, &mut ext.lists, max_depth)?;
    // 1b. Fine-tuned stages: one model per fold, trained (or found in the cache) on the first
    //     stage's lists of the other folds' tasks.
    let tuned = finetune_stages(engine, suite, ex, &runs, &first_stage)?;
    // 2. Per cross-encoder, the widest shortlists of every task scored as one pooled work list
    //    (each pair the same bits as one task at a time; see `rerank::score_shortlists`).
    start_tapes(engine, opts)?;
    let (shortlists, asked) =
        score_widest_shortlists(engine, suite, ex, &first_stage, &cut_from, &tuned, opts)?;
    for (_, t) in &tuned {
        t.finish()?;
    }
    let rerank_recordings = endpoint_recordings(engine, suite, &runs, &first_stage)?;
    // 3. Every configuration's ranking of every task.
    rank_every_task(
        engine.corpus,
        suite,
        &mut runs,
        &weights,
        &mut first_stage,
        &shortlists,
    )?;
    let mut models = models_used(engine, ex);
    for (_, t) in &tuned {
        let s = &t.summary;
        let folds: Vec<String> = s
            .folds
            .iter()
            .map(|f| ranklab_engine::rerank::finetuned::FinetunedCrossEncoder::identity_of(&f.key))
            .collect();
        models.insert(
            s.model_key.clone(),
            format!("{}{}{}", s.base, tuned::PER_FOLD, folds.join(", ")),
        );
    }
    Ok(Replay {
        runs,
        models,
        unjudged: ext.unjudged,
        external: ext.summaries,
        shortlists: asked,
        rerank_recordings,
        finetuned: tuned.into_iter().map(|(_, t)| t.summary).collect(),
    })
}

/// Step 1b: the fold models of every fine-tuned rerank stage, by the shortlists they score
/// (one per (model key, first stage), trained on the first configuration's lists that names
/// it).
fn finetune_stages(
    engine: &Replayer,
    suite: &Suite,
    ex: &Experiments,
    runs: &[ConfigRun],
    first_stage: &FirstStage,
) -> Result<Vec<(ShortlistKey, crate::replay::tuned::Tuned)>> {
    let mut out: Vec<(ShortlistKey, crate::replay::tuned::Tuned)> = Vec::new();
    for (ci, run) in runs.iter().enumerate() {
        let c = &run.config;
        let Some(r) = c.rerank.as_ref().filter(|r| r.finetune.is_some()) else {
            continue;
        };
        let key = (r.model_key(), list_key(c));
        if out.iter().any(|(k, _)| *k == key) {
            continue;
        }
        if c.retriever == Retriever::External {
            anyhow::bail!(
                "{}: configuration {:?}: a fine-tuned rerank stage needs one of ranklab's first stages (its hard negatives and merges' lists come from it), not an external engine",
                ex.path.display(),
                c.name
            );
        }
        let lists: Vec<&[Hit]> = first_stage.iter().map(|t| t[ci].0.as_slice()).collect();
        let tuned = crate::replay::tuned::prepare(engine, suite, &ex.path, c, &lists)?;
        out.push((key, tuned));
    }
    Ok(out)
}

/// Sets every endpoint stage's tape to the replay's mode (live, `--record`, or reading the
/// recordings of `opts.recordings` under `--from-recording`).
fn start_tapes(engine: &Replayer, opts: &ReplayOptions) -> Result<()> {
    for m in engine.rerankers.values() {
        if let Some(t) = &m.tape {
            let identity = m.cache.identity();
            t.start(&opts.external, opts.recordings.as_deref(), identity)?;
        }
    }
    Ok(())
}

/// The recording of every configuration whose rerank stage is an endpoint that keeps its
/// exchanges: the exchange of each pair of its shortlists, task by task (suite order).
fn endpoint_recordings(
    engine: &Replayer,
    suite: &Suite,
    runs: &[ConfigRun],
    first_stage: &FirstStage,
) -> Result<Vec<crate::external::rerank::tape::Recording>> {
    let mut out = Vec::new();
    for (ci, run) in runs.iter().enumerate() {
        let Some((r, m)) = run
            .config
            .rerank
            .as_ref()
            .and_then(|r| Some((r, engine.rerankers.get(&r.model_key())?)))
        else {
            continue;
        };
        let Some(tape) = m.tape.as_ref().filter(|t| t.keeps()) else {
            continue;
        };
        let mut texts = Vec::new();
        for (ti, task) in suite.tasks.iter().enumerate() {
            for h in first_stage[ti][ci].0.iter().take(r.shortlist) {
                let passage = Candidate::of(engine.corpus, h).passage;
                texts.push((task.id.as_str(), task.query.as_str(), passage));
            }
        }
        let pairs: Vec<(&str, &str, &str)> =
            texts.iter().map(|(t, q, p)| (*t, *q, p.as_str())).collect();
        out.push(tape.recording(&run.config.name, m.cache.identity(), &pairs)?);
    }
    Ok(out)
}

/// A cross-encoder's shortlists of one first stage: (model key, first-stage list).
type ShortlistKey = (String, ListKey);

/// Per task, per configuration: the first-stage hits that go through ranklab's stages, and the
/// hits of an external engine outside the corpus, which skip them and stay below.
type FirstStage = Vec<Vec<(Vec<Hit>, Vec<Hit>)>>;

/// Every query vector in one call (`--cluster`), so the cluster gets them as shards, not one by
/// one.
fn embed_all_queries(engine: &Replayer, suite: &Suite, ex: &Experiments) -> Result<()> {
    let used: BTreeSet<&str> = ex
        .configurations
        .iter()
        .filter_map(|c| c.embedder())
        .collect();
    for id in used {
        let d = engine.dense(id);
        let texts: Vec<String> = suite
            .tasks
            .iter()
            .map(|t| query_text(&*d.embedder.borrow(), &t.query))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        d.cache
            .embed(&mut *d.embedder.borrow_mut(), &refs)
            .with_context(|| format!("{id}: the query vectors"))?;
    }
    Ok(())
}

/// Step 1: every task's first-stage list under every configuration (an external engine's taken
/// out of `external`), and per task the configuration whose list each shortlist is cut from.
fn first_stages(
    engine: &Replayer,
    suite: &Suite,
    ex: &Experiments,
    runs: &[ConfigRun],
    external: &mut HashMap<usize, Vec<Vec<Hit>>>,
    max_depth: usize,
) -> Result<(FirstStage, Vec<BTreeMap<ShortlistKey, usize>>)> {
    let corpus = engine.corpus;
    let pb = crate::progress::bar(suite.tasks.len() as u64, "first stage");
    let mut first_stage: FirstStage = Vec::with_capacity(suite.tasks.len());
    let mut cut_from: Vec<BTreeMap<ShortlistKey, usize>> = Vec::new();
    let mut ready = prefetch(engine, suite, ex, external, max_depth)?;
    for (ti, task) in suite.tasks.iter().enumerate() {
        let mut lists = TaskLists {
            engine,
            query: task.query.clone(),
            max_depth,
            lists: HashMap::new(),
            ready: std::mem::take(&mut ready[ti]),
            query_vecs: HashMap::new(),
        };
        let mut per_config = Vec::with_capacity(runs.len());
        let mut keys = BTreeMap::new();
        for (ci, run) in runs.iter().enumerate() {
            let c = &run.config;
            // An external list: hits outside the corpus skip ranklab's stages and stay below.
            per_config.push(match external.get_mut(&ci) {
                Some(l) => {
                    let hits = std::mem::take(&mut l[ti]);
                    if c.rerank.is_some() || c.wiring != Wiring::None {
                        let (mut inside, outside): (Vec<Hit>, Vec<Hit>) =
                            hits.into_iter().partition(|h| h.doc < corpus.len());
                        if c.rerank.is_some() {
                            best_sections(engine, &task.query, &mut inside)?;
                        }
                        (inside, outside)
                    } else {
                        (hits, Vec::new())
                    }
                }
                None => (
                    lists.get(c).with_context(|| {
                        format!("first stage of task {} under {:?}", task.id, c.name)
                    })?,
                    Vec::new(),
                ),
            });
            if let Some(r) = &c.rerank {
                keys.entry((r.model_key(), list_key(c))).or_insert(ci);
            }
        }
        first_stage.push(per_config);
        cut_from.push(keys);
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok((first_stage, cut_from))
}

/// The hits each rerank model was asked to score, by model key: (task index, shortlist).
type Asked = BTreeMap<String, Vec<(usize, Vec<Hit>)>>;

/// Step 2: per cross-encoder, the widest shortlist of each (model, first stage) of every task,
/// scored as one pooled work list; narrower widths reuse its scores. Also returns those
/// shortlists' hits ([`Replay::shortlists`]).
fn score_widest_shortlists(
    engine: &Replayer,
    suite: &Suite,
    ex: &Experiments,
    first_stage: &FirstStage,
    cut_from: &[BTreeMap<ShortlistKey, usize>],
    tuned: &[(ShortlistKey, crate::replay::tuned::Tuned)],
    opts: &ReplayOptions,
) -> Result<(Vec<BTreeMap<ShortlistKey, ShortlistScores>>, Asked)> {
    let corpus = engine.corpus;
    // Widest shortlist per (model, first stage): narrower widths reuse its scores.
    let mut widest: BTreeMap<ShortlistKey, usize> = BTreeMap::new();
    for c in &ex.configurations {
        if let Some(r) = &c.rerank {
            let w = widest.entry((r.model_key(), list_key(c))).or_default();
            *w = (*w).max(r.shortlist);
        }
    }
    let mut shortlists: Vec<BTreeMap<ShortlistKey, ShortlistScores>> =
        vec![BTreeMap::new(); suite.tasks.len()];
    let mut asked = Asked::new();
    // Every scorer with the tasks it scores: an engine's model all of them, a fine-tuned
    // stage's fold model its fold's (in `asked`, the folds' shortlists are the stage's, under
    // its model key; `--measure-costs` times each fold's model on its own tasks).
    let scorers = engine
        .rerankers
        .iter()
        .map(|(k, m)| (k, m, None))
        .chain(tuned.iter().flat_map(|(key, t)| {
            t.folds
                .iter()
                .map(move |f| (&key.0, &f.model, Some(f.tasks.as_slice())))
        }));
    for (model_key, m, only) in scorers {
        let mut at = Vec::new();
        let mut requests = Vec::new();
        for (ti, keys) in cut_from.iter().enumerate() {
            if only.is_some_and(|tasks| !tasks.contains(&ti)) {
                continue;
            }
            for (key, &ci) in keys.iter().filter(|(k, _)| &k.0 == model_key) {
                at.push((ti, key.clone()));
                requests.push(ShortlistRequest {
                    query: &suite.tasks[ti].query,
                    hits: &first_stage[ti][ci].0,
                    width: widest[key],
                });
            }
        }
        if requests.is_empty() {
            continue;
        }
        asked.entry(model_key.clone()).or_default().extend(
            at.iter()
                .zip(&requests)
                .map(|((ti, _), r)| (*ti, r.hits[..r.width.min(r.hits.len())].to_vec())),
        );
        // Recording or replaying an endpoint, every pair is asked (or read from the recording),
        // none taken from the disk cache: the recording holds every pair the report shows.
        let in_memory;
        let cache = match &m.tape {
            Some(_) if opts.external != crate::external::Mode::Live => {
                in_memory = ScoreCache::in_memory(&*m.model.borrow());
                &in_memory
            }
            _ => &m.cache,
        };
        let pb = crate::progress::bar(0, "cross-encoder");
        let (scores, stats) = score_shortlists(
            &requests,
            |h| Candidate::of(corpus, h),
            &mut *m.model.borrow_mut(),
            cache,
            &mut |done, total| {
                pb.set_length(total as u64);
                pb.set_position(done as u64);
            },
        )
        .with_context(|| {
            format!(
                "cross-encoder {model_key} on the shortlists of {} tasks",
                suite.tasks.len()
            )
        })?;
        pb.finish_and_clear();
        m.stats.borrow_mut().add(stats);
        for ((ti, key), s) in at.into_iter().zip(scores) {
            shortlists[ti].insert(key, s);
        }
    }
    Ok((shortlists, asked))
}

/// Step 3: every configuration's ranking of every task: its first-stage list, reranked on its
/// shortlist, then its wiring's penalties; an external engine's hits outside the corpus below.
fn rank_every_task(
    corpus: &Corpus,
    suite: &Suite,
    runs: &mut [ConfigRun],
    weights: &[Option<Weights>],
    first_stage: &mut FirstStage,
    shortlists: &[BTreeMap<ShortlistKey, ShortlistScores>],
) -> Result<()> {
    for (ti, task) in suite.tasks.iter().enumerate() {
        for (ci, (run, w)) in runs.iter_mut().zip(weights).enumerate() {
            let c = &run.config;
            let (hits, outside) = std::mem::take(&mut first_stage[ti][ci]);
            let ranked: Vec<Ranked> = match &c.rerank {
                None => hits.iter().map(plain).collect(),
                Some(r) => {
                    let key = (r.model_key(), list_key(c));
                    let scores = &shortlists[ti][&key];
                    match r.interpolate {
                        None => order_by_rerank(&scores.rerank(&hits, r.shortlist)?),
                        Some(a) => interpolated::order(c, &hits, scores, r.shortlist, a, corpus)?,
                    }
                }
            };
            let ranked = match (c.wiring, w) {
                (Wiring::Legacy, Some(w)) => {
                    legacy::rank(corpus, &task.query, &as_hits(&ranked), w)
                        .iter()
                        .map(plain)
                        .collect()
                }
                (Wiring::Current, Some(w)) => current::rank(corpus, &as_hits(&ranked), w)
                    .iter()
                    .map(plain)
                    .collect(),
                _ => ranked,
            };
            let mut ranked = ranked;
            ranked.extend(outside.iter().map(plain));
            run.per_task.push(ranked);
        }
    }
    Ok(())
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
fn models_used(engine: &Replayer, ex: &Experiments) -> BTreeMap<String, String> {
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

/// The reranked list with its ordering score: the logit inside the shortlist; below it, the
/// documents keep their fused order and their first-stage score (the run writer keeps the file
/// in this order, see `report::run_file`).
fn order_by_rerank(reranked: &[RerankedHit]) -> Vec<Ranked> {
    reranked
        .iter()
        .map(|r| Ranked {
            doc: r.hit.doc,
            score: r.rerank_score.unwrap_or(r.hit.score),
            section: r.hit.section,
            rerank_score: r.rerank_score,
        })
        .collect()
}

/// The hits of a ranked list (order, score and section; the rerank logit dropped).
pub fn as_hits(ranked: &[Ranked]) -> Vec<Hit> {
    ranked
        .iter()
        .map(|r| Hit {
            doc: r.doc,
            score: r.score,
            section: r.section,
        })
        .collect()
}

fn plain(h: &Hit) -> Ranked {
    Ranked {
        doc: h.doc,
        score: h.score,
        section: h.section,
        rerank_score: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ranklab_engine::corpus::{markdown::parse_record, Document};

    fn doc(id: &str, body: &str) -> Document {
        parse_record(
            std::path::Path::new(&format!("{id}.md")),
            format!("---\nid: {id}\ntitle: {id}\n---\n{body}\n").as_bytes(),
        )
        .unwrap()
    }

    /// Hand-computed: "idempotency" occurs only in section 1 of `a` and section 2 of `b`; `c`
    /// does not hold it, so it keeps section 0. The external engine named sections 0 for all.
    #[test]
    fn an_external_hit_is_reranked_on_its_best_bm25_section() {
        let corpus = Corpus::new(
            "t",
            vec![
                doc(
                    "a",
                    "## Intro\nledger entries\n## Keys\nidempotency keys on capture",
                ),
                doc(
                    "b",
                    "## One\nwebhooks\n## Two\nrefunds\n## Three\nidempotency",
                ),
                doc("c", "## One\nnothing relevant"),
            ],
        )
        .unwrap();
        let engine = Replayer::build(&corpus, &[]).unwrap();
        let mut hits: Vec<Hit> = (0..3)
            .map(|doc| Hit {
                doc,
                score: 1.0,
                section: 0,
            })
            .collect();
        best_sections(&engine, "idempotency key", &mut hits).unwrap();
        let got: Vec<(&str, usize)> = hits.iter().map(|h| (corpus.id(h.doc), h.section)).collect();
        assert_eq!(got, [("a", 1), ("b", 2), ("c", 0)]);
        // The passage scored is that section's text.
        let passage = ranklab_engine::rerank::Candidate::of(&corpus, &hits[0]).passage;
        assert!(passage.contains("idempotency keys on capture"), "{passage}");
    }
}
