//! The hit type and the one total order every ranking in ranklab uses.
//!
//! Order: score descending (compared with `f32::total_cmp`), then document id descending in
//! byte order. This is exactly how trec_eval orders a run when it reads it back, so a run file we
//! write ranks the same in any TREC tool as it did in the replay. Scores must be finite:
//! [`check_finite`] turns a NaN into an error instead of a silent reorder.

use std::cmp::Ordering;

use crate::{Error, Result};

/// One ranked document.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Index of the document in its [`crate::corpus::Corpus`].
    pub doc: usize,
    /// The score that orders this list (BM25, cosine, RRF, final score, ...).
    pub score: f32,
    /// Index (within the document) of the section that gave the document its score.
    pub section: usize,
}

/// The total order: score descending, then document id descending (byte order).
pub fn cmp_hits(a_score: f32, a_id: &str, b_score: f32, b_id: &str) -> Ordering {
    b_score
        .total_cmp(&a_score)
        .then_with(|| b_id.as_bytes().cmp(a_id.as_bytes()))
}

/// [`cmp_hits`] with each id replaced by its rank among the ids in byte order
/// ([`crate::corpus::Corpus::id_rank`]): the same order, compared as integers.
#[inline]
pub fn cmp_ranked(a: &Hit, b: &Hit, id_rank: &[u32]) -> Ordering {
    b.score
        .total_cmp(&a.score)
        .then_with(|| id_rank[b.doc].cmp(&id_rank[a.doc]))
}

/// The top `depth` of `hits` in the total order, sorted (`id_rank` as in [`cmp_ranked`]):
/// each hit's place in the order is one integer ([`order_key`]), `select_nth_unstable` puts the
/// top `depth` keys in front, then only they are sorted, as bare `u64`s (no comparator looking
/// ranks up, no position carried along); each sorted key finds its hit through its low half,
/// the document's rank (a per-thread map from rank to hit, emptied again after the call). The
/// keys are unique (ids are), so the result equals a full sort's prefix by [`cmp_ranked`]. A
/// list naming a document twice is sorted with each key paired with its position instead (equal
/// hits keep their order).
pub fn top_k(hits: Vec<Hit>, depth: usize, id_rank: &[u32]) -> Vec<Hit> {
    if depth == 0 {
        return Vec::new();
    }
    let mut keys: Vec<u64> = hits.iter().map(|h| order_key(h, id_rank)).collect();
    first_sorted(&mut keys, depth);
    // A key's low half is its document's rank (inverted): which hit it is, when no document
    // is in `hits` twice.
    let found = HIT_AT.with(|at| {
        let mut at = at.borrow_mut();
        if at.len() < id_rank.len() {
            at.resize(id_rank.len(), u32::MAX);
        }
        let mut once = true;
        for (i, h) in hits.iter().enumerate() {
            let slot = &mut at[id_rank[h.doc] as usize];
            once &= *slot == u32::MAX;
            *slot = i as u32;
        }
        let found = once.then(|| {
            keys.iter()
                .map(|&k| hits[at[!(k as u32) as usize] as usize].clone())
                .collect()
        });
        for h in &hits {
            at[id_rank[h.doc] as usize] = u32::MAX;
        }
        found
    });
    found.unwrap_or_else(|| top_k_repeated(hits, depth, id_rank))
}

/// Keeps the `depth` smallest of `keys` (`depth` > 0), sorted: a selection, then a sort of
/// only those.
fn first_sorted<T: Ord>(keys: &mut Vec<T>, depth: usize) {
    if keys.len() > depth {
        keys.select_nth_unstable(depth - 1);
        keys.truncate(depth);
    }
    keys.sort_unstable();
}

thread_local! {
    /// [`top_k`]'s map from a document's rank to its hit, every slot `u32::MAX` between calls.
    static HIT_AT: std::cell::RefCell<Vec<u32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// [`top_k`] of hits where a document may appear more than once: each key paired with its
/// hit's position, so equal keys keep the order of `hits`.
fn top_k_repeated(hits: Vec<Hit>, depth: usize, id_rank: &[u32]) -> Vec<Hit> {
    let mut keys: Vec<(u64, u32)> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| (order_key(h, id_rank), i as u32))
        .collect();
    first_sorted(&mut keys, depth);
    keys.iter()
        .map(|&(_, i)| hits[i as usize].clone())
        .collect()
}

/// [`cmp_ranked`] as one integer, smaller first: the high half is the score's
/// `f32::total_cmp` order (the bit trick `total_cmp` documents, made unsigned), inverted for
/// descending scores; the low half the id's rank, inverted for descending ids.
#[inline]
pub fn order_key(h: &Hit, id_rank: &[u32]) -> u64 {
    key_of(h.score, id_rank[h.doc])
}

/// [`order_key`] of a score and an id rank.
#[inline]
fn key_of(score: f32, rank: u32) -> u64 {
    (u64::from(!total_bits(score.to_bits())) << 32) | u64::from(!rank)
}

/// The bit trick of `f32::total_cmp` (flip the magnitude bits of a negative number), made
/// unsigned; it is its own inverse on the magnitude bits, so [`score_of_key`] undoes it.
#[inline]
fn total_bits(bits: u32) -> u32 {
    let bits = bits as i32;
    (bits ^ (((bits >> 31) as u32) >> 1) as i32) as u32 ^ 0x8000_0000
}

/// The score whose bits are in `key`'s high half ([`key_of`] undone, bit for bit).
#[inline]
fn score_of_key(key: u64) -> f32 {
    let t = (!(key >> 32) as u32 ^ 0x8000_0000) as i32;
    f32::from_bits((t ^ (((t >> 31) as u32) >> 1) as i32) as u32)
}

/// The inverse of an `id_rank` array: rank -> document ordinal.
pub fn by_rank(id_rank: &[u32]) -> Vec<u32> {
    let mut out = vec![0u32; id_rank.len()];
    for (doc, &r) in id_rank.iter().enumerate() {
        out[r as usize] = doc as u32;
    }
    out
}

/// [`top_k`] of documents given as (document, score) pairs, no document twice, without a hit
/// per document: each pair becomes its key, the top `depth` keys are selected and sorted, and
/// each gives back its document (its rank through `by_rank`, the inverse of `id_rank`) and its
/// score (the key's high half, the same bits). The same documents, scores and order as
/// [`top_k`] of the same hits.
pub fn top_k_scored(
    scored: impl Iterator<Item = (usize, f32)>,
    depth: usize,
    id_rank: &[u32],
    by_rank: &[u32],
) -> Vec<(usize, f32)> {
    if depth == 0 {
        return Vec::new();
    }
    let mut keys: Vec<u64> = scored.map(|(d, s)| key_of(s, id_rank[d])).collect();
    first_sorted(&mut keys, depth);
    keys.iter()
        .map(|&k| (by_rank[!(k as u32) as usize] as usize, score_of_key(k)))
        .collect()
}

/// Sorts `hits` by [`cmp_hits`], looking ids up with `id_of`.
pub fn sort_hits<'a>(hits: &mut [Hit], id_of: impl Fn(usize) -> &'a str) {
    hits.sort_by(|a, b| cmp_hits(a.score, id_of(a.doc), b.score, id_of(b.doc)));
}

/// Errors on the first non-finite score.
pub fn check_finite<'a>(query: &str, hits: &[Hit], id_of: impl Fn(usize) -> &'a str) -> Result<()> {
    match hits.iter().find(|h| !h.score.is_finite()) {
        Some(h) => Err(Error::NonFiniteScore {
            query: query.to_string(),
            doc: id_of(h.doc).to_string(),
            score: h.score,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: `cmp_ranked` (the comparator the integer keys replace), on every pair of a
    /// table of scores (signed zeros, subnormals, infinities, ties) and id ranks.
    #[test]
    fn order_key_orders_as_cmp_ranked_does() {
        let scores = [
            f32::NEG_INFINITY,
            -1.5,
            -f32::MIN_POSITIVE / 2.0,
            -0.0,
            0.0,
            f32::MIN_POSITIVE / 2.0,
            0.25,
            0.25,
            1.0e30,
            f32::INFINITY,
        ];
        let id_rank: Vec<u32> = vec![3, 0, 9, 1, 7, 2, 8, 4, 6, 5];
        let hits: Vec<Hit> = scores
            .iter()
            .enumerate()
            .map(|(doc, &score)| Hit {
                doc,
                score,
                section: 0,
            })
            .collect();
        for a in &hits {
            for b in &hits {
                assert_eq!(
                    order_key(a, &id_rank).cmp(&order_key(b, &id_rank)),
                    cmp_ranked(a, b, &id_rank),
                    "{a:?} {b:?}"
                );
            }
        }
    }

    #[test]
    fn ties_break_on_id_descending() {
        let ids = ["a", "b", "c"];
        let mut hits = vec![
            Hit {
                doc: 0,
                score: 1.0,
                section: 0,
            },
            Hit {
                doc: 2,
                score: 1.0,
                section: 0,
            },
            Hit {
                doc: 1,
                score: 2.0,
                section: 0,
            },
        ];
        sort_hits(&mut hits, |d| ids[d]);
        let order: Vec<_> = hits.iter().map(|h| ids[h.doc]).collect();
        assert_eq!(order, ["b", "c", "a"]);
    }

    /// A xorshift64 stream from `seed`: each call a draw below its argument.
    fn draws(mut state: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        }
    }

    /// `top_k` against a stable full sort by `cmp_ranked` (equal hits keep their input
    /// order) cut to the depth: hit lists drawn with few scores (many ties) and, in half of
    /// them, documents repeated (the path that pairs keys with positions), at every depth,
    /// and twice in a row, the rank-to-hit map clean after each call.
    #[test]
    fn top_k_is_the_stable_full_sorts_prefix() {
        let mut next = draws(0x2545_f491_4f6c_dd1d_u64);
        for case in 0..400 {
            let docs = 1 + next(40) as usize;
            let id_rank: Vec<u32> = {
                let mut r: Vec<u32> = (0..docs as u32).collect();
                for i in (1..docs).rev() {
                    r.swap(i, next(i as u64 + 1) as usize);
                }
                r
            };
            let mut hits = Vec::new();
            for doc in 0..docs {
                if next(3) > 0 {
                    let score = next(4) as f32 * 0.5 - 0.5;
                    let section = next(3) as usize;
                    hits.push(Hit {
                        doc,
                        score,
                        section,
                    });
                }
            }
            if case % 2 == 1 && !hits.is_empty() {
                for _ in 0..3 {
                    let h = hits[next(hits.len() as u64) as usize].clone();
                    let at = next(hits.len() as u64 + 1) as usize;
                    hits.insert(
                        at,
                        Hit {
                            section: h.section + 1,
                            ..h
                        },
                    );
                }
            }
            for depth in 0..=hits.len() + 1 {
                let mut want = hits.clone();
                want.sort_by(|a, b| cmp_ranked(a, b, &id_rank));
                want.truncate(depth);
                for _ in 0..2 {
                    assert_eq!(
                        top_k(hits.clone(), depth, &id_rank),
                        want,
                        "case {case}, depth {depth}"
                    );
                    HIT_AT.with(|at| assert!(at.borrow().iter().all(|&s| s == u32::MAX)));
                }
            }
        }
    }

    /// `top_k_scored` against a full sort by `cmp_ranked` (the comparator, not the keys) cut
    /// to the depth: documents each at most once, scores drawn from a table of edge values
    /// (signed zeros, subnormals, infinities, the extremes, ties) whose bits must come back
    /// unchanged from the keys, at every depth.
    #[test]
    fn top_k_scored_is_the_full_sorts_prefix_with_the_same_bits() {
        let table = [
            0.0f32,
            -0.0,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x8000_0001),
            1.0,
            -1.0,
            0.5,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            3.25e-3,
        ];
        let mut next = draws(0x9e37_79b9_7f4a_7c15_u64);
        for case in 0..300 {
            let docs = 1 + next(40) as usize;
            let mut id_rank: Vec<u32> = (0..docs as u32).collect();
            for i in (1..docs).rev() {
                id_rank.swap(i, next(i as u64 + 1) as usize);
            }
            let ranks = by_rank(&id_rank);
            let mut scored: Vec<(usize, f32)> = Vec::new();
            for d in 0..docs {
                if next(4) > 0 {
                    scored.push((d, table[next(table.len() as u64) as usize]));
                }
            }
            for depth in 0..=scored.len() + 1 {
                let mut want: Vec<Hit> = scored
                    .iter()
                    .map(|&(doc, score)| Hit {
                        doc,
                        score,
                        section: 0,
                    })
                    .collect();
                want.sort_by(|a, b| cmp_ranked(a, b, &id_rank));
                want.truncate(depth);
                let got = top_k_scored(scored.iter().copied(), depth, &id_rank, &ranks);
                assert_eq!(
                    got.iter()
                        .map(|&(d, s)| (d, s.to_bits()))
                        .collect::<Vec<_>>(),
                    want.iter()
                        .map(|h| (h.doc, h.score.to_bits()))
                        .collect::<Vec<_>>(),
                    "case {case}, depth {depth}"
                );
            }
        }
    }

    #[test]
    fn nan_is_an_error() {
        let hits = vec![Hit {
            doc: 0,
            score: f32::NAN,
            section: 0,
        }];
        assert!(check_finite("q", &hits, |_| "d").is_err());
    }
}
