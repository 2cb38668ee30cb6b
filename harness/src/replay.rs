//! Replay: every task of a suite under every configuration of an experiment.
//!
//! One first stage, many configurations: per task, each distinct first-stage list (BM25 with
//! given parameters, the bi-encoder of a given model) is computed once, at the largest depth any
//! configuration asks for, and every configuration derives its ranking from those lists. Indexes
//! are built once per corpus. The output of a configuration for a task is a ranked list in the
//! total order of `ranklab_engine::ranking` (score descending, then id descending), so the run
//! files written from it rank identically when trec_eval reads them back.

use std::collections::HashMap;

use anyhow::{Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::lexical::LexicalIndex;
use ranklab_engine::policy::{current, legacy, Practice, Weights};
use ranklab_engine::ranking::{check_finite, Hit};

use crate::suite::{Configuration, Experiments, Retriever, Suite, Wiring};

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
}

/// The result of a replay.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Per configuration, in file order.
    pub runs: Vec<ConfigRun>,
}

/// Indexes built once per corpus and shared by all configurations.
pub struct Engine<'c> {
    /// The corpus.
    pub corpus: &'c Corpus,
    /// BM25 index.
    pub lexical: LexicalIndex,
}

impl<'c> Engine<'c> {
    /// Builds the indexes the experiments need.
    pub fn build(corpus: &'c Corpus, _experiments: &[&Experiments]) -> Result<Self> {
        let pb = crate::progress::bar(1, "indexing");
        let lexical = LexicalIndex::build(corpus).context("building the BM25 index")?;
        pb.inc(1);
        pb.finish_and_clear();
        Ok(Engine { corpus, lexical })
    }
}

/// Cache key of a first-stage list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum ListKey {
    Bm25 { k1: u32, b: u32 },
}

/// Options of a replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Use these penalty weights instead of the practice file's (for tuning).
    pub weights: Option<Weights>,
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
                    format!("{}: configuration {:?} has wiring {:?} and needs a practice file", ex.path.display(), c.name, c.wiring)
                })?;
                Ok(Some(pr.weights))
            }
        })
        .collect()
}

/// Replays `suite` under every configuration of `ex`.
pub fn replay(engine: &Engine, suite: &Suite, ex: &Experiments) -> Result<Replay> {
    replay_with(engine, suite, ex, &ReplayOptions::default())
}

/// Replays `suite` under every configuration of `ex`, with options.
pub fn replay_with(engine: &Engine, suite: &Suite, ex: &Experiments, opts: &ReplayOptions) -> Result<Replay> {
    let corpus = engine.corpus;
    let weights = weights_of(ex, opts)?;
    let max_depth = ex.configurations.iter().map(|c| c.depth()).max().unwrap_or(1);
    let mut runs: Vec<ConfigRun> = ex
        .configurations
        .iter()
        .map(|c| ConfigRun { config: c.clone(), per_task: Vec::with_capacity(suite.tasks.len()) })
        .collect();
    let pb = crate::progress::bar(suite.tasks.len() as u64, "replay");
    for task in &suite.tasks {
        let mut lists: HashMap<ListKey, Vec<Hit>> = HashMap::new();
        for (run, w) in runs.iter_mut().zip(&weights) {
            let c = &run.config;
            let ranked = match c.retriever {
                Retriever::Bm25 => {
                    let p = c.bm25();
                    let key = ListKey::Bm25 { k1: p.k1.to_bits(), b: p.b.to_bits() };
                    if !lists.contains_key(&key) {
                        let hits = engine
                            .lexical
                            .search(corpus, &task.query, max_depth, p)
                            .with_context(|| format!("BM25 search for task {}", task.id))?;
                        lists.insert(key.clone(), hits);
                    }
                    lists[&key].iter().take(c.depth()).map(plain).collect::<Vec<_>>()
                }
                Retriever::Dense | Retriever::Fusion => {
                    anyhow::bail!(
                        "{}: configuration {:?} uses the `{:?}` retriever, which this build does not support yet",
                        ex.path.display(),
                        c.name,
                        c.retriever
                    )
                }
            };
            let hits: Vec<Hit> = ranked.iter().map(|r| Hit { doc: r.doc, score: r.score, section: r.section }).collect();
            check_finite(&task.query, &hits, |d| corpus.id(d))?;
            let ranked = match (c.wiring, w) {
                (Wiring::Legacy, Some(w)) => legacy::rank(corpus, &task.query, &hits, w).iter().map(plain).collect(),
                (Wiring::Current, Some(w)) => current::rank(corpus, &hits, w).iter().map(plain).collect(),
                _ => ranked,
            };
            run.per_task.push(ranked);
        }
        pb.inc(1);
    }
    pb.finish_and_clear();
    Ok(Replay { runs })
}

fn plain(h: &Hit) -> Ranked {
    Ranked { doc: h.doc, score: h.score, section: h.section, rerank_score: None }
}
