//! Corpus-size curves, measured: one experiment replayed over corpora of growing size (a
//! suite's corpus joined by distractors, or a BEIR collection's judged documents with a sample
//! of the others), giving a [`Curve`] of per-task values that `report::scale` renders.
//!
//! The corpora are nested (see `suite::distractors`), and they are replayed largest first on one
//! [`Replayer`] moved from corpus to corpus ([`Replayer::over`]): every vector and cross-encoder
//! score missing from the caches is computed at the largest size, and a smaller size finds them
//! all there (its stderr line says "0 computed"). Only the BM25 indexes are built per size.

use std::collections::HashSet;

use anyhow::Result;
use ranklab_engine::corpus::Corpus;

use super::values::{per_task_values, MeasureSet};
use super::{replay_with, ReplayOptions, Replayer};
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
    for (i, corpus) in corpora.iter().enumerate().rev() {
        let started = std::time::Instant::now();
        let mut vectors = String::new();
        if i + 1 < corpora.len() {
            let (moved, hits, misses) = engine.over(corpus)?;
            engine = moved;
            if !engine.dense.is_empty() {
                vectors = format!("section vectors {misses} computed, {hits} from cache; ");
            }
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
            .map(|run| per_task_values(corpus, suite, run, set))
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
    let corpora = sizes
        .iter()
        .map(|&n| pool.joined(corpus, n))
        .collect::<Result<Vec<_>>>()?;
    let largest = corpora.last().expect("sizes checked not empty at load");
    let engine = Replayer::build_with(largest, &[ex], remote.cloned())?;
    let base: HashSet<&str> = corpus.docs.iter().map(|d| d.id.as_str()).collect();
    measure(&corpora, engine, &base, suite, ex, &MeasureSet::Suite)
}
