//! A weighted fusion that weighs its rerank stage's list (`weights: { ..., rerank: w }`):
//! after the shortlist is scored (step 2 of `replay_with`, from the score cache or the
//! recordings like any rerank stage), each task is ranked by the weighted sum of its
//! normalized BM25, dense and reranker lists (`suite::fusion::fuse_reranked`). The reranker's
//! list is the shortlist's documents by their reranker scores; a document outside it gets the
//! list's minimum. Every fused document inside the shortlist keeps its reranker score as
//! `rerank_score`.

use std::collections::HashMap;

use anyhow::{Context, Result};
use ranklab_engine::ranking::{cmp_ranked, Hit};

use super::{first_stage_of, ConfigRun, Ranked, Replayer};
use crate::suite::fusion::{fuse_reranked, FusionSpec};
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
        fusion: None,
        rerank: None,
        ..c.clone()
    }
}

/// Replaces the ranking of every configuration whose fusion weighs `rerank` (ranked so far by
/// its plain rerank stage) with the weighted fusion of its three lists.
pub(super) fn fuse_rerank_lists(
    engine: &Replayer,
    suite: &Suite,
    runs: &mut [ConfigRun],
) -> Result<()> {
    let corpus = engine.corpus;
    for run in runs.iter_mut() {
        let Some(spec) = run.config.fusion.clone().filter(FusionSpec::names_rerank) else {
            continue;
        };
        let c = run.config.clone();
        for (task, ranked) in suite.tasks.iter().zip(run.per_task.iter_mut()) {
            let lists = |r| {
                first_stage_of(engine, &part(&c, r), &task.query)
                    .with_context(|| format!("first stage of task {} under {:?}", task.id, c.name))
            };
            let (lex, sem) = (lists(Retriever::Bm25)?, lists(Retriever::Dense)?);
            let rr = rerank_list(ranked, corpus.id_rank());
            let logit: HashMap<usize, f32> = rr.iter().map(|h| (h.doc, h.score)).collect();
            *ranked = fuse_reranked(&spec, c.depth(), [&lex, &sem, &rr], corpus.id_rank())
                .into_iter()
                .map(|h| Ranked {
                    doc: h.doc,
                    score: h.score,
                    section: h.section,
                    rerank_score: logit.get(&h.doc).copied(),
                })
                .collect();
        }
    }
    Ok(())
}
