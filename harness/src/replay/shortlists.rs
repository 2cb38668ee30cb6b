//! The rerank stages' shortlists: each (model, first stage)'s widest shortlist of every task
//! scored as one pooled work list, and the endpoint stages' tapes and recordings.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use ranklab_engine::ranking::Hit;
use ranklab_engine::rerank::{
    score_shortlists, Candidate, ScoreCache, ShortlistRequest, ShortlistScores,
};

use super::first_stage::{list_key, FirstStage, ListKey};
use super::{ConfigRun, ReplayOptions, Replayer};
use crate::suite::{Experiments, Suite};

/// A cross-encoder's shortlists of one first stage: (model key, first-stage list).
pub(super) type ShortlistKey = (String, ListKey);

/// The hits each rerank model was asked to score, by model key: (task index, shortlist).
type Asked = BTreeMap<String, Vec<(usize, Vec<Hit>)>>;

/// Step 2: per cross-encoder, the widest shortlist of each (model, first stage) of every task,
/// scored as one pooled work list; narrower widths reuse its scores. Also returns those
/// shortlists' hits ([`Replay::shortlists`]).
pub(super) fn score_widest_shortlists(
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

/// Sets every endpoint stage's tape to the replay's mode (live, `--record`, or reading the
/// recordings of `opts.recordings` under `--from-recording`).
pub(super) fn start_tapes(engine: &Replayer, opts: &ReplayOptions) -> Result<()> {
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
pub(super) fn endpoint_recordings(
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
        let pairs: Vec<(&str, &str, &str)> = texts.iter().map(|(t, q, p)| (*t, *q, &**p)).collect();
        out.push(tape.recording(&run.config.name, m.cache.identity(), &pairs)?);
    }
    Ok(out)
}
