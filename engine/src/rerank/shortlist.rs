//! The shortlist rerank: score the first `width` hits once, reorder any prefix of them.
//!
//! Shortlists of width 8 and 12 are prefixes of width 20, so a run scores the widest
//! ([`score_shortlist`]) and derives every narrower rerank from the same scores
//! ([`ShortlistScores::rerank`]) without touching the model or the cache again.
//!
//! Width rules: 0 is an error; a width larger than the hits available is capped to them
//! (the caller, who knows the configured first-stage depth, rejects a width beyond it).

use rayon::prelude::*;

use super::{Candidate, CrossEncoder, PairStats, ScoreCache};
use crate::ranking::Hit;
use crate::{Error, Result};

/// A hit after the rerank stage.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankedHit {
    /// The first-stage hit, untouched: `hit.score` keeps its first-stage meaning.
    pub hit: Hit,
    /// The cross-encoder's raw logit for (query, best section); None below the shortlist.
    pub rerank_score: Option<f32>,
}

/// Cross-encoder scores of a prefix of a first-stage list.
#[derive(Debug, Clone, PartialEq)]
pub struct ShortlistScores {
    /// Documents of the scored prefix, in first-stage order (to check reuse is on the same list).
    docs: Vec<usize>,
    /// `scores[i]` belongs to the i-th hit.
    scores: Vec<f32>,
}

impl ShortlistScores {
    /// Number of hits scored.
    pub fn width(&self) -> usize {
        self.scores.len()
    }

    /// The scores, in first-stage order.
    pub fn scores(&self) -> &[f32] {
        &self.scores
    }

    /// Reorders the first `width` of `hits` (the list these scores were computed for) by
    /// score, descending, ties in first-stage order; the rest follow in first-stage order.
    pub fn rerank(&self, hits: &[Hit], width: usize) -> Result<Vec<RerankedHit>> {
        check_width(width)?;
        let w = width.min(hits.len());
        if w > self.scores.len() {
            return Err(Error::Config(format!(
                "shortlist width {width} needs {w} scored candidates but only {} were scored; \
                 score the widest shortlist first",
                self.scores.len()
            )));
        }
        let same_list = hits
            .iter()
            .take(self.docs.len())
            .map(|h| h.doc)
            .eq(self.docs.iter().copied());
        if !same_list || hits.len() < self.docs.len() {
            return Err(Error::Config(
                "shortlist scores reused on a different first-stage list".into(),
            ));
        }
        let mut head: Vec<(usize, f32)> = (0..w).map(|i| (i, self.scores[i])).collect();
        // Stable: equal scores keep first-stage order.
        head.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut out: Vec<RerankedHit> = head
            .into_iter()
            .map(|(i, s)| RerankedHit {
                hit: hits[i].clone(),
                rerank_score: Some(s),
            })
            .collect();
        out.extend(hits[w..].iter().map(|h| RerankedHit {
            hit: h.clone(),
            rerank_score: None,
        }));
        Ok(out)
    }
}

fn check_width(width: usize) -> Result<()> {
    if width == 0 {
        return Err(Error::Config(
            "shortlist width 0: a rerank needs at least one candidate (omit the rerank stage instead)".into(),
        ));
    }
    Ok(())
}

/// Scores the first `width` hits (capped at `hits.len()`) against `query` through `cache`.
pub fn score_shortlist(
    query: &str,
    hits: &[Hit],
    width: usize,
    candidate_of: impl Fn(&Hit) -> Candidate + Sync,
    ce: &mut dyn CrossEncoder,
    cache: &ScoreCache,
) -> Result<(ShortlistScores, PairStats)> {
    let request = ShortlistRequest { query, hits, width };
    let (mut scores, stats) =
        score_shortlists(&[request], candidate_of, ce, cache, &mut |_, _| {})?;
    Ok((scores.pop().expect("one request, one list"), stats))
}

/// One shortlist to score: the query, its first-stage hits and the width.
#[derive(Debug, Clone, Copy)]
pub struct ShortlistRequest<'a> {
    /// The query text.
    pub query: &'a str,
    /// The first-stage list, best first.
    pub hits: &'a [Hit],
    /// How many of the first hits to score (at least 1; capped at `hits.len()`).
    pub width: usize,
}

/// [`score_shortlist`] for many queries at once: every missing pair of every shortlist is
/// scored in one pooled work list ([`ScoreCache::score_many`]), each score the same bits as
/// one query at a time. Returns the scores of each request, in order, and the summed counts;
/// `progress(done, to_score)` follows the pairs scored.
pub fn score_shortlists(
    requests: &[ShortlistRequest<'_>],
    candidate_of: impl Fn(&Hit) -> Candidate + Sync,
    ce: &mut dyn CrossEncoder,
    cache: &ScoreCache,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<(Vec<ShortlistScores>, PairStats)> {
    let mut prefixes = Vec::with_capacity(requests.len());
    for r in requests {
        check_width(r.width)?;
        prefixes.push(&r.hits[..r.width.min(r.hits.len())]);
    }
    // Built on rayon's pool (a candidate shares its corpus's passage): in order, the same lists.
    let candidates: Vec<Vec<Candidate>> = prefixes
        .par_iter()
        .map(|p| p.iter().map(&candidate_of).collect())
        .collect();
    let asked: Vec<(&str, &[Candidate])> = requests
        .iter()
        .zip(&candidates)
        .map(|(r, c)| (r.query, c.as_slice()))
        .collect();
    let (scores, stats) = cache.score_many(ce, &asked, progress)?;
    let out = prefixes
        .iter()
        .zip(scores)
        .map(|(p, scores)| ShortlistScores {
            docs: p.iter().map(|h| h.doc).collect(),
            scores,
        })
        .collect();
    Ok((out, stats))
}

/// Scores and reorders the first `width` hits in one step (see [`score_shortlist`] and
/// [`ShortlistScores::rerank`]).
pub fn rerank_shortlist(
    query: &str,
    hits: &[Hit],
    width: usize,
    candidate_of: impl Fn(&Hit) -> Candidate + Sync,
    ce: &mut dyn CrossEncoder,
    cache: &ScoreCache,
) -> Result<(Vec<RerankedHit>, PairStats)> {
    let (scores, stats) = score_shortlist(query, hits, width, candidate_of, ce, cache)?;
    Ok((scores.rerank(hits, width)?, stats))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rerank::testing::OverlapCrossEncoder;
    use proptest::prelude::*;

    /// Documents d0..dn with the given passages; first-stage order = index order.
    fn setup<'a>(passages: &'a [&'a str]) -> (Vec<Hit>, impl Fn(&Hit) -> Candidate + 'a) {
        let hits = (0..passages.len())
            .map(|i| Hit {
                doc: i,
                score: 1.0 - i as f32 / 100.0,
                section: 0,
            })
            .collect();
        let cand = move |h: &Hit| Candidate {
            doc_id: format!("d{}", h.doc),
            passage: passages[h.doc].into(),
        };
        (hits, cand)
    }

    #[test]
    fn only_the_shortlist_moves_and_similarity_keeps_its_meaning() {
        let passages = ["x", "y", "cat mat", "z", "cat mat"];
        let (hits, cand) = setup(&passages);
        let mut ce = OverlapCrossEncoder::new();
        let cache = ScoreCache::in_memory(&ce);
        let (out, stats) = rerank_shortlist("cat mat", &hits, 3, cand, &mut ce, &cache).unwrap();
        let order: Vec<usize> = out.iter().map(|r| r.hit.doc).collect();
        assert_eq!(
            order,
            [2, 0, 1, 3, 4],
            "d4 matches too but is below the shortlist"
        );
        assert_eq!(out[0].hit.score, hits[2].score);
        assert!(out[0].rerank_score.is_some() && out[3].rerank_score.is_none());
        assert_eq!(
            stats,
            PairStats {
                scored: 3,
                cached: 0,
                rebuilt: 0
            }
        );
    }

    #[test]
    fn ties_keep_first_stage_order() {
        let (hits, cand) = setup(&["a", "b", "c"]);
        let mut ce = OverlapCrossEncoder::new();
        let cache = ScoreCache::in_memory(&ce);
        let (out, _) = rerank_shortlist("zzz", &hits, 3, cand, &mut ce, &cache).unwrap();
        assert_eq!(out.iter().map(|r| r.hit.doc).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn narrower_widths_reuse_the_widest_scores() {
        let passages = ["q w", "e", "q", "r t y", "q w e", "u"];
        let (hits, cand) = setup(&passages);
        let mut ce = OverlapCrossEncoder::new();
        let cache = ScoreCache::in_memory(&ce);
        let (wide, stats) = score_shortlist("q w e", &hits, 5, &cand, &mut ce, &cache).unwrap();
        assert_eq!(stats.scored, 5);
        for w in 1..=5 {
            let reused = wide.rerank(&hits, w).unwrap();
            let mut fresh_ce = OverlapCrossEncoder::new();
            let fresh_cache = ScoreCache::in_memory(&fresh_ce);
            let (fresh, _) =
                rerank_shortlist("q w e", &hits, w, &cand, &mut fresh_ce, &fresh_cache).unwrap();
            assert_eq!(reused, fresh, "width {w}");
        }
        assert_eq!(ce.pairs(), 5, "no pair scored twice");
        assert!(wide.rerank(&hits, 6).is_err(), "wider than scored");
        assert!(wide.rerank(&hits[1..], 3).is_err(), "another list");
    }

    #[test]
    fn width_zero_is_an_error_and_too_wide_is_capped() {
        let (hits, cand) = setup(&["a", "b"]);
        let mut ce = OverlapCrossEncoder::new();
        let cache = ScoreCache::in_memory(&ce);
        assert!(rerank_shortlist("a", &hits, 0, &cand, &mut ce, &cache).is_err());
        let (out, stats) = rerank_shortlist("a", &hits, 50, &cand, &mut ce, &cache).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(stats.scored, 2);
    }

    #[test]
    fn nan_names_query_and_document() {
        let (hits, cand) = setup(&["fine", "poison here"]);
        let mut ce = OverlapCrossEncoder::poisoned("poison");
        let cache = ScoreCache::in_memory(&ce);
        let err = rerank_shortlist("q", &hits, 2, cand, &mut ce, &cache).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("\"d1\"") && msg.contains("\"q\""), "{msg}");
    }

    #[test]
    fn pooled_shortlists_equal_one_query_at_a_time_with_the_same_counts() {
        // Requests of several queries, one repeated (its pairs are cached by the first), long
        // enough to span several pooled groups.
        let passages: Vec<String> = (0..300)
            .map(|i| format!("p{i} w{} w{} x", i % 7, i % 11))
            .collect();
        let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
        let (hits, cand) = setup(&refs);
        let queries = ["w1 w2", "w3 x", "w1 w2", "w5", "zzz"];
        let widths = [300, 40, 300, 7, 1];
        let requests: Vec<ShortlistRequest> = queries
            .iter()
            .zip(widths)
            .map(|(q, w)| ShortlistRequest {
                query: q,
                hits: &hits,
                width: w,
            })
            .collect();

        let mut one_ce = OverlapCrossEncoder::new();
        let one_cache = ScoreCache::in_memory(&one_ce);
        let mut one = Vec::new();
        let mut one_stats = PairStats::default();
        for r in &requests {
            let (s, st) =
                score_shortlist(r.query, r.hits, r.width, &cand, &mut one_ce, &one_cache).unwrap();
            one.push(s);
            one_stats.add(st);
        }

        let mut pool_ce = OverlapCrossEncoder::new();
        let pool_cache = ScoreCache::in_memory(&pool_ce);
        let (pooled, pool_stats) =
            score_shortlists(&requests, &cand, &mut pool_ce, &pool_cache, &mut |_, _| {}).unwrap();
        let bits = |v: &[ShortlistScores]| {
            v.iter()
                .map(|s| s.scores.iter().map(|x| x.to_bits()).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&pooled), bits(&one));
        assert_eq!(pooled, one);
        assert_eq!(pool_stats, one_stats);
        assert_eq!(pool_stats.scored, 300 + 40 + 7 + 1);
        assert_eq!(pool_ce.pairs(), one_ce.pairs(), "each pair once either way");
    }

    proptest! {
        /// The output is a permutation of the input; the tail is untouched; the head is sorted
        /// by rerank score with first-stage order on ties.
        #[test]
        fn rerank_is_a_permutation_that_moves_only_the_head(
            scores in proptest::collection::vec(-3i8..3, 0..20),
            width in 1usize..25,
        ) {
            let hits: Vec<Hit> = (0..scores.len()).map(|i| Hit { doc: i, score: 0.0, section: 0 }).collect();
            let s = ShortlistScores {
                docs: (0..scores.len().min(width)).collect(),
                scores: scores.iter().take(width).map(|&x| x as f32).collect(),
            };
            let out = s.rerank(&hits, width).unwrap();
            let w = width.min(hits.len());
            let mut docs: Vec<usize> = out.iter().map(|r| r.hit.doc).collect();
            prop_assert_eq!(&docs[w..], &(w..hits.len()).collect::<Vec<_>>()[..]);
            for pair in out[..w].windows(2) {
                let (a, b) = (pair[0].rerank_score.unwrap(), pair[1].rerank_score.unwrap());
                prop_assert!(a > b || (a == b && pair[0].hit.doc < pair[1].hit.doc));
            }
            docs.sort();
            prop_assert_eq!(docs, (0..hits.len()).collect::<Vec<_>>());
        }
    }
}
