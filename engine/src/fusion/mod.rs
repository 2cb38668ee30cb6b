//! Reciprocal rank fusion (Cormack, Clarke and Büttcher, 2009); weighted fusion of normalized
//! scores is in [`weighted`], and the interpolation of a reranker's scores with the first stage's
//! over a shortlist in [`interpolate`].
//!
//! `score(d) = Σ_lists 1 / (k + rank_list(d))`, ranks 1-based, each list cut to `depth` first;
//! a document absent from a list gets nothing from it. Documents with equal scores in a list share
//! a rank (standard competition ranking, "1224"): the id tie-break that makes a list's order total
//! must not turn into a score difference after fusion, or two identical records would stop tying. The sum is taken in f64 in list order and
//! stored as f32. A fused hit keeps the section of the list that ranked it best (on equal ranks,
//! the earlier list: lexical before semantic), which is the section a later rerank reads.
//! The result is in the total order of [`crate::ranking`].

pub mod interpolate;
pub mod weighted;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::ranking::{sort_hits, Hit};
use crate::{Error, Result};

/// RRF parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RrfParams {
    /// The constant k (60 in the original paper).
    pub k: f32,
    /// How many hits of each list take part.
    pub depth: usize,
}

impl Default for RrfParams {
    fn default() -> Self {
        RrfParams {
            k: 60.0,
            depth: 100,
        }
    }
}

impl RrfParams {
    /// Checks k > 0 and depth > 0.
    pub fn validate(&self) -> Result<()> {
        if !(self.k.is_finite() && self.k > 0.0) {
            return Err(Error::Config(format!(
                "rrf_k must be a positive number, got {}",
                self.k
            )));
        }
        if self.depth == 0 {
            return Err(Error::Config("depth must be at least 1".into()));
        }
        Ok(())
    }
}

/// [`rrf`] with the documents' id ranks ([`crate::corpus::Corpus::id_rank`]) in place of
/// their ids, the same hits bit for bit: the sums sit in an array indexed by the document
/// ordinal (added up in the same list order), and the id tie-break compares integers.
pub fn rrf_ranked(lists: &[&[Hit]], params: RrfParams, id_rank: &[u32]) -> Vec<Hit> {
    // doc -> (sum, best rank, section at best rank); rank 0 = not seen yet. A per-thread
    // array, every entry not seen again when the call returns.
    let hits: Vec<Hit> = RRF_ACC.with(|acc| {
        let mut acc = acc.borrow_mut();
        if acc.len() < id_rank.len() {
            acc.resize(id_rank.len(), (0.0, 0, 0));
        }
        let mut docs: Vec<usize> = Vec::new();
        for list in lists {
            let mut rank = 0;
            for (i, h) in list.iter().take(params.depth).enumerate() {
                if i == 0 || h.score != list[i - 1].score {
                    rank = i + 1;
                }
                let e = &mut acc[h.doc];
                if e.1 == 0 {
                    *e = (0.0, usize::MAX, h.section);
                    docs.push(h.doc);
                }
                e.0 += 1.0 / (params.k as f64 + rank as f64);
                if rank < e.1 {
                    e.1 = rank;
                    e.2 = h.section;
                }
            }
        }
        docs.into_iter()
            .map(|doc| {
                let (score, _, section) = std::mem::replace(&mut acc[doc], (0.0, 0, 0));
                Hit {
                    doc,
                    score: score as f32,
                    section,
                }
            })
            .collect()
    });
    // The whole list in the total order (sorted on integer keys).
    crate::ranking::top_k(hits, usize::MAX, id_rank)
}

thread_local! {
    /// [`rrf_ranked`]'s sums by document ordinal, every entry unseen between calls.
    static RRF_ACC: std::cell::RefCell<Vec<(f64, usize, usize)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Fuses ranked lists (each already in ranking order) into one.
pub fn rrf<'a>(lists: &[&[Hit]], params: RrfParams, id_of: impl Fn(usize) -> &'a str) -> Vec<Hit> {
    // doc -> (sum, best rank, section at best rank)
    let mut acc: HashMap<usize, (f64, usize, usize)> = HashMap::new();
    for list in lists {
        let mut rank = 0;
        for (i, h) in list.iter().take(params.depth).enumerate() {
            if i == 0 || h.score != list[i - 1].score {
                rank = i + 1;
            }
            let e = acc.entry(h.doc).or_insert((0.0, usize::MAX, h.section));
            e.0 += 1.0 / (params.k as f64 + rank as f64);
            if rank < e.1 {
                e.1 = rank;
                e.2 = h.section;
            }
        }
    }
    let mut hits: Vec<Hit> = acc
        .into_iter()
        .map(|(doc, (score, _, section))| Hit {
            doc,
            score: score as f32,
            section,
        })
        .collect();
    sort_hits(&mut hits, id_of);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A hit whose score is distinct per document (no ties inside a list).
    fn h(doc: usize, section: usize) -> Hit {
        Hit {
            doc,
            score: 100.0 - doc as f32,
            section,
        }
    }

    const IDS: [&str; 6] = ["d0", "d1", "d2", "d3", "d4", "d5"];

    #[test]
    fn agreeing_lists_keep_their_order() {
        let a = [h(0, 0), h(1, 0), h(2, 0)];
        let fused = rrf(&[&a, &a], RrfParams::default(), |d| IDS[d]);
        assert_eq!(fused.iter().map(|x| x.doc).collect::<Vec<_>>(), [0, 1, 2]);
        assert!((fused[0].score - 2.0 / 61.0).abs() < 1e-7);
    }

    #[test]
    fn section_comes_from_the_best_rank() {
        let lex = [h(0, 1), h(1, 0)];
        let sem = [h(1, 3), h(0, 2)];
        let fused = rrf(&[&lex, &sem], RrfParams::default(), |d| IDS[d]);
        // Equal sums: tie broken by id descending, d1 first.
        assert_eq!(fused[0].doc, 1);
        assert_eq!(fused[0].section, 3);
        assert_eq!(fused[1].section, 1);
    }

    #[test]
    fn tied_scores_share_a_rank() {
        let tied = [
            Hit {
                doc: 1,
                score: 2.0,
                section: 0,
            },
            Hit {
                doc: 0,
                score: 2.0,
                section: 0,
            },
            Hit {
                doc: 2,
                score: 1.0,
                section: 0,
            },
        ];
        let fused = rrf(&[&tied], RrfParams::default(), |d| IDS[d]);
        assert_eq!(fused[0].score, fused[1].score);
        assert_eq!(
            rrf_ranked(&[&tied], RrfParams::default(), &[0, 1, 2]),
            fused
        );
        assert!((fused[2].score - 1.0 / 63.0).abs() < 1e-7);
    }

    #[test]
    fn depth_cuts_each_list() {
        let lex = [h(0, 0), h(1, 0), h(2, 0)];
        let fused = rrf(&[&lex], RrfParams { k: 60.0, depth: 2 }, |d| IDS[d]);
        assert_eq!(fused.len(), 2);
    }

    proptest! {
        /// RRF against a naive oracle: sum of reciprocal ranks, then the total order.
        #[test]
        fn matches_naive_oracle(a in proptest::sample::subsequence((0..6usize).collect::<Vec<_>>(), 0..6),
                                b in Just((0..6usize).rev().collect::<Vec<_>>()).prop_shuffle()) {
            let la: Vec<Hit> = a.iter().map(|&d| h(d, 0)).collect();
            let lb: Vec<Hit> = b.iter().map(|&d| h(d, 0)).collect();
            let fused = rrf(&[&la, &lb], RrfParams::default(), |d| IDS[d]);
            let mut oracle: Vec<(f64, usize)> = (0..6).filter_map(|d| {
                let ra = a.iter().position(|&x| x == d).map(|r| 1.0 / (61.0 + r as f64));
                let rb = b.iter().position(|&x| x == d).map(|r| 1.0 / (61.0 + r as f64));
                match (ra, rb) { (None, None) => None, _ => Some((ra.unwrap_or(0.0) + rb.unwrap_or(0.0), d)) }
            }).collect();
            oracle.sort_by(|x, y| (y.0 as f32).total_cmp(&(x.0 as f32)).then(IDS[y.1].cmp(IDS[x.1])));
            prop_assert_eq!(fused.iter().map(|x| x.doc).collect::<Vec<_>>(), oracle.iter().map(|x| x.1).collect::<Vec<_>>());
            // The ordinal-array version: the same hits, bit for bit (IDS are in byte order,
            // so each document's id rank is its ordinal).
            let ranks: Vec<u32> = (0..6).collect();
            prop_assert_eq!(rrf_ranked(&[&la, &lb], RrfParams::default(), &ranks), fused);
        }
    }
}
