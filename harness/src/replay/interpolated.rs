//! A rerank stage with `interpolate: α`: its shortlist ordered by α · reranker + (1 − α) ·
//! first stage (`ranklab_engine::fusion::interpolate`), both normalized over the shortlist by
//! the configuration's `fusion: { normalize }` (`minmax` when it has none); below the shortlist
//! the documents keep their first-stage order and scores, as under a plain rerank.

use anyhow::Result;
use ranklab_engine::corpus::Corpus;
use ranklab_engine::fusion::interpolate::interpolate;
use ranklab_engine::fusion::weighted::Normalize;
use ranklab_engine::ranking::Hit;
use ranklab_engine::rerank::ShortlistScores;

use super::output::plain;
use super::Ranked;
use crate::suite::Configuration;

/// The normalization an interpolating rerank stage of `c` uses.
pub fn normalization(c: &Configuration) -> Normalize {
    c.fusion
        .as_ref()
        .and_then(|f| f.normalize)
        .unwrap_or(Normalize::Minmax)
}

/// `hits` (configuration `c`'s first stage of one task) with its first `width` interpolated
/// with the reranker's `scores` under weight `alpha`: the shortlist's score is the interpolated
/// one (its logit kept as `rerank_score`), the rest follow unchanged.
pub fn order(
    c: &Configuration,
    hits: &[Hit],
    scores: &ShortlistScores,
    width: usize,
    alpha: f64,
    corpus: &Corpus,
) -> Result<Vec<Ranked>> {
    // The same checks as a plain rerank (width, scores of this very list).
    scores.rerank(hits, width)?;
    let w = width.min(hits.len());
    let head = interpolate(
        &hits[..w],
        &scores.scores()[..w],
        alpha,
        normalization(c),
        corpus.id_rank(),
    );
    let mut out: Vec<Ranked> = head
        .into_iter()
        .map(|i| Ranked {
            doc: i.hit.doc,
            score: i.hit.score,
            section: i.hit.section,
            rerank_score: Some(i.rerank_score),
        })
        .collect();
    out.extend(hits[w..].iter().map(plain));
    Ok(out)
}
