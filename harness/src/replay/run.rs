//! A replay of one experiments file: its options, the penalty weights, and the steps (first
//! stage, fine-tuned stages, shortlists, every configuration's ranking) in order.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::policy::{current, legacy, Practice, Weights};
use ranklab_engine::ranking::Hit;
use ranklab_engine::rerank::{RerankedHit, ShortlistScores};

use super::first_stage::{embed_all_queries, first_stages, list_key, FirstStage};
use super::models::models_used;
use super::output::plain;
use super::shortlists::{endpoint_recordings, score_widest_shortlists, start_tapes, ShortlistKey};
use super::{as_hits, tuned, ConfigRun, Ranked, Replay, Replayer};
use crate::suite::{Experiments, Retriever, Suite};
use ranklab_engine::policy::Wiring;

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
    // A learned model with model features: its companions replayed beside it (dropped below).
    let own = ex.configurations.len();
    let with = super::learned_models::with_companions(ex);
    let ex = with.as_ref().unwrap_or(ex);
    // A fusion's `rerankers:` lists: their companion rerank stages, dropped with those above.
    let with_rerankers = super::rerankers::with_companions(ex);
    let ex = with_rerankers.as_ref().unwrap_or(ex);
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
        t.finish(engine)?;
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
    // 3b. A weighted fusion that weighs its rerank stage's scores: fused after the rerank.
    super::fused::fuse_rerank_lists(engine, suite, &mut runs, &ext.lists)?;
    // 3c. A learned model with model features: ranked over its companions' runs.
    super::learned_models::rank_with_models(engine.corpus, &mut runs, own)?;
    let mut models = models_used(engine, ex);
    for (_, t) in &tuned {
        let s = &t.summary;
        let folds: Vec<String> = s.folds.iter().map(|f| f.identity.clone()).collect();
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

/// Step 3: every configuration's ranking of every task: its first-stage list, reranked on its
/// shortlist, then its wiring's penalties; an external engine's hits outside the corpus below.
/// Tasks are ranked side by side on rayon's pool (each task's rankings depend on its own lists
/// only) and kept in task order; of several failing tasks, the first in task order is reported.
fn rank_every_task(
    corpus: &Corpus,
    suite: &Suite,
    runs: &mut [ConfigRun],
    weights: &[Option<Weights>],
    first_stage: &mut FirstStage,
    shortlists: &[BTreeMap<ShortlistKey, ShortlistScores>],
) -> Result<()> {
    use rayon::prelude::*;
    // One entry per task in each (the zips below would stop at the shortest).
    assert_eq!(first_stage.len(), suite.tasks.len(), "first stage per task");
    assert_eq!(shortlists.len(), suite.tasks.len(), "shortlists per task");
    let configs: Vec<&crate::suite::Configuration> = runs.iter().map(|r| &r.config).collect();
    let ranked: Vec<Result<Vec<Vec<Ranked>>>> = suite
        .tasks
        .par_iter()
        .zip(first_stage.par_iter_mut())
        .zip(shortlists.par_iter())
        .map(|((task, lists), shortlists)| {
            configs
                .iter()
                .zip(weights)
                .zip(lists.iter_mut())
                .map(|((c, w), list)| {
                    rank_one(corpus, &task.query, c, *w, std::mem::take(list), shortlists)
                })
                .collect()
        })
        .collect();
    for per_config in ranked {
        for (run, ranked) in runs.iter_mut().zip(per_config?) {
            run.per_task.push(ranked);
        }
    }
    Ok(())
}

/// One task's ranking under `c`: the first-stage `hits` reranked on the task's shortlist
/// scores, then `c`'s wiring's penalties, the hits `outside` the corpus below.
fn rank_one(
    corpus: &Corpus,
    query: &str,
    c: &crate::suite::Configuration,
    w: Option<Weights>,
    (hits, outside): (Vec<Hit>, Vec<Hit>),
    shortlists: &BTreeMap<ShortlistKey, ShortlistScores>,
) -> Result<Vec<Ranked>> {
    let ranked: Vec<Ranked> = match &c.rerank {
        None => hits.iter().map(plain).collect(),
        Some(r) => {
            let scores = &shortlists[&(r.model_key(), list_key(c))];
            match r.interpolate {
                None => order_by_rerank(&scores.rerank(&hits, r.shortlist)?),
                Some(a) => super::interpolated::order(c, &hits, scores, r.shortlist, a, corpus)?,
            }
        }
    };
    let mut ranked = match (c.wiring, w) {
        (Wiring::Legacy, Some(w)) => legacy::rank(corpus, query, &as_hits(&ranked), &w)
            .iter()
            .map(plain)
            .collect(),
        (Wiring::Current, Some(w)) => current::rank(corpus, &as_hits(&ranked), &w)
            .iter()
            .map(plain)
            .collect(),
        _ => ranked,
    };
    ranked.extend(outside.iter().map(plain));
    Ok(ranked)
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
