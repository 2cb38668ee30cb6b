//! A weighted fusion that weighs its rerank stage's list (`weights: { ..., rerank: w }`):
//! after the shortlist is scored (step 2 of `replay_with`, from the score cache or the
//! recordings like any rerank stage), each task is ranked by the weighted sum of its
//! normalized BM25, dense and reranker lists (`suite::fusion::fuse_reranked`). The reranker's
//! list is the shortlist's documents by their reranker scores; a document outside it gets the
//! list's minimum. Every fused document inside the shortlist keeps its reranker score as
//! `rerank_score`.
//!
//! A weighted fusion that weighs its engine's list (`weights: { ..., engine: w }`, with
//! `engine:`) is fused in step 1 instead ([`fuse_engine`]): the engine's hits inside the corpus
//! are the third list; its hits outside the corpus are not fused and stay below, unjudged.
//! One that weighs both is fused here, over four lists (bm25, dense, rerank, engine), its
//! shortlist cut from `shortlist_from` as for any fusion weighing `rerank`.

use std::collections::HashMap;

use anyhow::{Context, Result};
use ranklab_engine::ranking::{cmp_ranked, Hit};

use super::{first_stage_of, ConfigRun, Ranked, Replayer};
use crate::suite::fusion::fuse_reranked;
use crate::suite::{Configuration, Retriever, Suite};

/// The reranker's list of one task's reranked ranking: its scored documents (those with a
/// `rerank_score`) by that score, in the total order of `ranklab_engine::ranking`.
pub(crate) fn rerank_list(ranked: &[Ranked], id_rank: &[u32]) -> Vec<Hit> {
    let mut hits: Vec<Hit> = ranked
        .iter()
        .filter_map(|r| {
            r.rerank_score.map(|s| Hit {
                doc: r.doc,
                score: s,
                section: r.section,
            })
        })
        .collect();
    hits.sort_unstable_by(|a, b| cmp_ranked(a, b, id_rank));
    hits
}

/// The single-list configuration of `c`'s BM25 (`Retriever::Bm25`) or dense list.
pub(crate) fn part(c: &Configuration, retriever: Retriever) -> Configuration {
    Configuration {
        retriever,
        engine: None,
        fusion: None,
        rerank: None,
        ..c.clone()
    }
}

/// The first stage of configuration `c` whose fusion weighs its engine's list: the weighted
/// fusion of its BM25 and dense lists (`parts`) and the engine's `hits` inside the corpus, cut
/// at the depth; and the engine's hits outside the corpus, which stay below in the engine's
/// order.
pub(super) fn fuse_engine(
    c: &Configuration,
    parts: [&[Hit]; 2],
    hits: Vec<Hit>,
    corpus: &ranklab_engine::corpus::Corpus,
) -> (Vec<Hit>, Vec<Hit>) {
    let spec = c.fusion.as_ref().expect("a fusion that names its engine");
    let (inside, outside): (Vec<Hit>, Vec<Hit>) =
        hits.into_iter().partition(|h| h.doc < corpus.len());
    let w = spec.weight_vector();
    let weights = [w[0], w[1], w[crate::suite::fusion::ENGINE]];
    let mut fused = ranklab_engine::fusion::weighted::weighted_ranked(
        &[parts[0], parts[1], &inside],
        &weights,
        spec.normalize(),
        c.depth(),
        corpus.id_rank(),
    );
    fused.truncate(c.depth());
    (fused, outside)
}

/// Replaces the ranking of every configuration whose fusion cuts a shortlist (ranked so far by
/// its plain rerank stage, or by its shortlist's list when only `rerankers:` score it) with the
/// weighted fusion of its lists: BM25, dense, its rerank stage's (a `rerank` weight), its
/// engine's hits inside the corpus (an `engine` weight; `external`: the engines' lists by
/// configuration index, as step 1 left them), and each `rerankers:` list (read from its
/// companion's run, `super::rerankers`), the engine's hits outside the corpus below in the
/// engine's order.
pub(super) fn fuse_rerank_lists(
    engine: &Replayer,
    suite: &Suite,
    runs: &mut [ConfigRun],
    external: &HashMap<usize, Vec<Vec<Hit>>>,
) -> Result<()> {
    let mut fused = Vec::new();
    for (ci, run) in runs.iter().enumerate() {
        let Some(spec) = run.config.fusion.as_ref().filter(|f| f.cuts_shortlist()) else {
            continue;
        };
        let more = super::rerankers::companion_runs(runs, &run.config, spec)?;
        let engine_lists = external.get(&ci).filter(|_| spec.names_engine());
        fused.push((ci, fuse_one(engine, suite, run, &more, engine_lists)?));
    }
    for (ci, per_task) in fused {
        runs[ci].per_task = per_task;
    }
    Ok(())
}

/// Every task of `run` (a fusion cutting a shortlist) fused over its lists; `more`: the runs of
/// its `rerankers:` lists; `engine_lists`: its engine's hits per task. A fused document keeps
/// the first reranker list's score (its rerank stage's, else the first `rerankers:` list's) as
/// `rerank_score`.
fn fuse_one(
    engine: &Replayer,
    suite: &Suite,
    run: &ConfigRun,
    more: &[&ConfigRun],
    engine_lists: Option<&Vec<Vec<Hit>>>,
) -> Result<Vec<Vec<Ranked>>> {
    let corpus = engine.corpus;
    let c = &run.config;
    let spec = c.fusion.as_ref().expect("a fusion cutting a shortlist");
    let mut out = Vec::with_capacity(suite.tasks.len());
    for (ti, (task, ranked)) in suite.tasks.iter().zip(&run.per_task).enumerate() {
        let lists = |r| {
            first_stage_of(engine, &part(c, r), &task.query)
                .with_context(|| format!("first stage of task {} under {:?}", task.id, c.name))
        };
        let (lex, sem) = (lists(Retriever::Bm25)?, lists(Retriever::Dense)?);
        let rr = rerank_list(ranked, corpus.id_rank());
        let (inside, outside): (Vec<Hit>, Vec<Hit>) = engine_lists
            .map(|l| l[ti].iter().cloned().partition(|h| h.doc < corpus.len()))
            .unwrap_or_default();
        let others: Vec<Vec<Hit>> = more
            .iter()
            .map(|r| rerank_list(&r.per_task[ti], corpus.id_rank()))
            .collect();
        let mut parts: Vec<&[Hit]> = vec![&lex, &sem];
        if spec.names_rerank() {
            parts.push(&rr);
        }
        if spec.names_engine() {
            parts.push(&inside);
        }
        parts.extend(others.iter().map(Vec::as_slice));
        let first = if spec.names_rerank() {
            Some(&rr)
        } else {
            others.first()
        };
        let logit: HashMap<usize, f32> = first
            .map(|l| l.iter().map(|h| (h.doc, h.score)).collect())
            .unwrap_or_default();
        out.push(
            fuse_reranked(spec, c.depth(), &parts, corpus.id_rank())
                .into_iter()
                .map(|h| Ranked {
                    doc: h.doc,
                    score: h.score,
                    section: h.section,
                    rerank_score: logit.get(&h.doc).copied(),
                })
                .chain(outside.iter().map(super::output::plain))
                .collect(),
        );
    }
    Ok(out)
}
