//! Corpus-size curves, measured: one experiment replayed over corpora of growing size (a
//! suite's corpus joined by distractors, or a BEIR collection's judged documents with a sample
//! of the others), giving a [`Curve`] of per-task values that `report::scale` renders.
//!
//! The corpora are nested (see `suite::distractors`), and they are replayed largest first on one
//! [`Replayer`] moved from corpus to corpus ([`Replayer::over`]): every vector and cross-encoder
//! score missing from the caches is computed at the largest size, and a smaller size finds them
//! all there (its stderr line says "0 computed"). No index is built per size: each smaller
//! size's BM25 index is the largest's restricted to its documents, with its own statistics
//! (`LexicalIndex::restricted`), and the dense lists of every size come from one scoring pass
//! at the largest ([`share_dense_scores`]), each smaller size's index cut from the largest's
//! rows ([`over_shared`]); both give the same bits as a search of the size's own index.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::dense::embed_query;
#[cfg(doc)]
use ranklab_engine::dense::DenseIndex;
#[cfg(doc)]
use ranklab_engine::lexical::LexicalIndex;

use super::replayer::lexical_index;
use super::values::MeasureSet;
use super::ConfigRun;
use super::{replay_with, ReplayOptions, Replayer};
use crate::metrics::evaluate_ranking;
use crate::stats::thousands;
use crate::suite::{Experiments, Suite};

/// One size of the curve.
pub struct Point {
    /// Documents in the corpus.
    pub documents: usize,
    /// Of those, documents added to the base (distractors, or sampled unjudged documents).
    pub added: usize,
    /// `[configuration][task][measure]`.
    pub values: Vec<Vec<Vec<f64>>>,
    /// Per configuration: the share of the top-k slots (each task's k) holding an added
    /// document, over all tasks.
    pub added_share: Vec<f64>,
}

/// A measured curve.
pub struct Curve {
    /// Configuration names, in the experiment's order.
    pub configs: Vec<String>,
    /// Index of the baseline among them.
    pub baseline: usize,
    /// Names of every measure of the set.
    pub measures: Vec<String>,
    /// The sizes, smallest first.
    pub points: Vec<Point>,
    /// Tasks (queries) per size.
    pub tasks: usize,
}

/// Replays `ex` over each corpus of `corpora` (nested, smallest first), largest first on
/// `engine` (built over the largest). `base` holds the ids of the documents that are not added
/// (the suite's corpus, or the judged documents). Prints one line per size on stderr: its
/// documents, the BM25 index time, the pairs computed and the model loads so far.
pub fn measure<'c>(
    corpora: &'c [Corpus],
    mut engine: Replayer<'c>,
    base: &HashSet<&str>,
    suite: &Suite,
    ex: &Experiments,
    set: &MeasureSet,
) -> Result<Curve> {
    let mut points = Vec::with_capacity(corpora.len());
    let judged: Vec<HashMap<String, i32>> = suite
        .tasks
        .iter()
        .map(|t| t.expected.iter().map(|(k, v)| (k.clone(), *v)).collect())
        .collect();
    for (i, corpus) in corpora.iter().enumerate().rev() {
        let started = std::time::Instant::now();
        let mut vectors = String::new();
        if i + 1 < corpora.len() {
            let (moved, cut, (hits, misses)) = over_shared(engine, corpus)?;
            engine = moved;
            if cut > 0 {
                vectors =
                    format!("section vectors of {cut} model(s) cut from the largest size's; ");
            }
            if hits + misses > 0 {
                vectors += &format!("section vectors {misses} computed, {hits} from cache; ");
            }
        } else if corpora.len() > 1 {
            share_dense_scores(&mut engine, suite)?;
        }
        let built = match i + 1 < corpora.len() {
            true => format!("indexes {} ms; ", started.elapsed().as_millis()),
            false => String::new(),
        };
        let before = engine.pair_stats();
        let replay = replay_with(&engine, suite, ex, &ReplayOptions::default())?;
        let after = engine.pair_stats();
        eprintln!(
            "corpus size {}: {built}{vectors}rerank pairs {} computed, {} from cache; {} model load(s) so far",
            thousands(corpus.len()),
            after.scored.saturating_sub(before.scored),
            after.cached.saturating_sub(before.cached),
            engine.loaded_models().len()
        );
        let added = corpus
            .docs
            .iter()
            .filter(|d| !base.contains(d.id.as_str()))
            .count();
        let values = replay
            .runs
            .iter()
            .map(|run| curve_values(corpus, suite, run, set, &judged))
            .collect();
        let added_share = replay
            .runs
            .iter()
            .map(|run| {
                let (mut slots, mut hit) = (0usize, 0usize);
                for (task, ranked) in suite.tasks.iter().zip(&run.per_task) {
                    for r in ranked.iter().take(task.k) {
                        slots += 1;
                        hit += usize::from(!base.contains(corpus.id(r.doc)));
                    }
                }
                hit as f64 / slots.max(1) as f64
            })
            .collect();
        points.push(Point {
            documents: corpus.len(),
            added,
            values,
            added_share,
        });
    }
    engine.finish()?;
    points.reverse();
    let configs: Vec<String> = ex.configurations.iter().map(|c| c.name.clone()).collect();
    Ok(Curve {
        baseline: configs.iter().position(|c| c == ex.baseline()).unwrap_or(0),
        configs,
        measures: set.names(suite.k),
        points,
        tasks: suite.tasks.len(),
    })
}

/// `values::per_task_values` of one size, the same values: each task's judgments are built once
/// per curve (`judged`, by task), tasks are evaluated on rayon's pool, and a ranked document
/// that no task judges is passed to the evaluator as the empty id (a miss either way: the
/// evaluator only looks its ids up among the judged ones), unless some task judges the
/// empty id itself.
fn curve_values(
    corpus: &Corpus,
    suite: &Suite,
    run: &ConfigRun,
    set: &MeasureSet,
    judged: &[HashMap<String, i32>],
) -> Vec<Vec<f64>> {
    use rayon::prelude::*;
    let mut any = vec![false; corpus.len()];
    let mut empty_judged = false;
    for id in judged.iter().flat_map(HashMap::keys) {
        empty_judged |= id.is_empty();
        if let Some(i) = corpus.index_of(id) {
            any[i] = true;
        }
    }
    suite
        .tasks
        .par_iter()
        .zip(&run.per_task)
        .zip(judged)
        .map(|((task, ranked), judged)| {
            let ids: Vec<&str> = ranked
                .iter()
                .map(|r| match any[r.doc] || empty_judged {
                    true => corpus.id(r.doc),
                    false => "",
                })
                .collect();
            evaluate_ranking(&set.for_task(task), &ids, judged, 1)
        })
        .collect()
}

/// Scores every task's query against every section of the largest corpus once per bi-encoder
/// ([`DenseIndex::share_scores`]): the dense lists of every size are then gathered from that
/// table (a cosine does not depend on the other documents), the same hits bit for bit as a
/// search of each size's own index. The query vectors come from the cache, as the replay's do.
fn share_dense_scores(engine: &mut Replayer<'_>, suite: &Suite) -> Result<()> {
    for (id, m) in &mut engine.dense {
        let mut queries = Vec::with_capacity(suite.tasks.len());
        for t in &suite.tasks {
            queries.push(
                embed_query(m.embedder.get_mut(), &m.cache, &t.query)
                    .with_context(|| format!("{id}: the query vector of task {}", t.id))?,
            );
        }
        m.index.share_scores(&queries);
    }
    Ok(())
}

/// [`Replayer::over`] for a smaller size of the curve: each BM25 index is the larger size's
/// restricted to this size's documents ([`LexicalIndex::restricted`]: this size's statistics,
/// the same hits bit for bit as an index of its own, nothing built or loaded), each
/// bi-encoder's index cut from the larger size's ([`DenseIndex::subset`]: the same rows, no
/// vector-cache keys, and the shared scores); an index that cannot be restricted or cut (a
/// document not in the larger corpus) is built, through the caches. Returns the engine, the
/// indexes cut, and the section vectors found in the cache and computed.
fn over_shared<'d>(
    mut engine: Replayer<'_>,
    corpus: &'d Corpus,
) -> Result<(Replayer<'d>, usize, (usize, usize))> {
    let dense = std::mem::take(&mut engine.dense);
    let larger = engine.corpus;
    let lexical = [engine.lexical.take(), engine.lexical_lucene.take()].map(|index| {
        index.map(|index| match index.restricted(larger, corpus) {
            Some(restricted) => Ok(restricted),
            None => lexical_index(corpus, index.analyzer()),
        })
    });
    let (mut moved, _, _) = engine.over(corpus)?;
    let [english, lucene] = lexical;
    moved.lexical = english.transpose()?;
    moved.lexical_lucene = lucene.transpose()?;
    let (mut cut, mut hits, mut misses) = (0, 0, 0);
    for (id, mut m) in dense {
        m.index = match m.index.subset(corpus) {
            Some(index) => {
                cut += 1;
                index
            }
            None => {
                let (index, found, computed) = m.index_over(corpus)?;
                (hits, misses) = (hits + found, misses + computed);
                index
            }
        };
        moved.dense.insert(id, m);
    }
    Ok((moved, cut, (hits, misses)))
}

/// The corpus-size curve of a suite's experiment with `distractors:`: the suite's corpus joined
/// by the first `sizes` documents of `pool`'s draw, each replayed (models' misses on `remote`
/// when given), with the suite's measures. Its report is `report::scale::suite_report`.
pub fn suite_curve(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    pool: &crate::suite::distractors::Pool,
    sizes: &[usize],
    remote: Option<&std::sync::Arc<dyn ranklab_engine::models::remote::Remote>>,
) -> Result<Curve> {
    // The largest joined once, each smaller size cut from it (the suite's documents, then the
    // first `n` of the draw: the same documents in the same order as joining `n`), so that
    // its BM25 index is the largest's restricted ([`over_shared`]).
    let (&most, smaller) = sizes.split_last().expect("sizes checked not empty at load");
    let joined = pool.joined(corpus, most)?;
    let mut corpora = smaller
        .iter()
        .map(|&n| Ok(joined.subset(|i| i < corpus.len() + n)?))
        .collect::<Result<Vec<_>>>()?;
    corpora.push(joined);
    let largest = corpora.last().expect("sizes checked not empty at load");
    let engine = Replayer::build_with(largest, &[ex], remote.cloned())?;
    let base: HashSet<&str> = corpus.docs.iter().map(|d| d.id.as_str()).collect();
    measure(&corpora, engine, &base, suite, ex, &MeasureSet::Suite)
}
