//! One query's lines, the ranks of its judged documents, and the duplicate check.

use std::hash::Hasher;
use std::path::Path;

use rustc_hash::FxHasher;

use super::index::bytes_eq;
use crate::metrics::Hit;
use crate::trec::error::{Location, TrecError};

/// The lines of one query: scores and id bytes of every document (ties, duplicates), and the
/// few documents whose judgment matters.
#[derive(Default)]
pub(super) struct Block {
    pub(super) qid: String,
    /// Position in the qrels, `None` for a query the qrels do not judge.
    pub(super) q: Option<usize>,
    pub(super) scores: Vec<f64>,
    /// End of each document id in `arena` (the start is the previous end).
    pub(super) ends: Vec<u32>,
    pub(super) arena: Vec<u8>,
    pub(super) lines: Vec<u64>,
    /// `(document index, judgment)` of the documents whose judgment matters.
    pub(super) hits: Vec<(u32, i32)>,
}

impl Block {
    pub(super) fn reset(&mut self, qid: &str, q: Option<usize>) {
        self.qid.clear();
        self.qid.push_str(qid);
        self.q = q;
        self.scores.clear();
        self.ends.clear();
        self.arena.clear();
        self.lines.clear();
        self.hits.clear();
    }

    #[inline]
    pub(super) fn push(&mut self, docno: &str, score: f64, line: u64, rel: Option<i32>) {
        if let Some(rel) = rel {
            self.hits.push((self.scores.len() as u32, rel));
        }
        self.arena.extend_from_slice(docno.as_bytes());
        self.ends.push(self.arena.len() as u32);
        self.scores.push(score);
        self.lines.push(line);
    }

    #[inline]
    pub(super) fn docno(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.arena[start..self.ends[i] as usize]
    }

    pub(super) fn len(&self) -> usize {
        self.scores.len()
    }

    /// Appends `other`'s lines (the same query's, read after these).
    pub(super) fn append(&mut self, other: &Block) {
        let base = self.len() as u32;
        let arena = self.arena.len() as u32;
        self.hits
            .extend(other.hits.iter().map(|&(d, rel)| (d + base, rel)));
        self.arena.extend_from_slice(&other.arena);
        self.ends.extend(other.ends.iter().map(|&e| e + arena));
        self.scores.extend_from_slice(&other.scores);
        self.lines.extend_from_slice(&other.lines);
    }
}

/// Buffers reused from query to query.
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) slots: Vec<(u32, u32)>,
    pub(super) order: Vec<u32>,
    pub(super) rank_of: Vec<u32>,
    pub(super) ranked: Vec<Hit>,
}

/// Above this many judged documents in a query, ranks come from one sort of the whole query
/// instead of one counting pass per judged document.
const COUNTING_MAX: usize = 16;

/// Position of every hit in trec_eval's order (score descending, then document id descending),
/// left in `scratch.ranked` by ascending rank.
pub(super) fn rank_hits(block: &Block, scratch: &mut Scratch) {
    scratch.ranked.clear();
    let n = block.len();
    if block.hits.len() <= COUNTING_MAX {
        for &(d, rel) in &block.hits {
            let d = d as usize;
            let s = block.scores[d];
            let mut ahead = 0usize;
            let mut ties = 0usize;
            for &t in &block.scores {
                ahead += (t > s) as usize;
                ties += (t == s) as usize;
            }
            if ties > 1 {
                // A copy of the same document at the same score (a duplicate past the -M cut,
                // which trec_eval does not see) is put after the earlier line, so that the two
                // copies take two ranks, as in trec_eval's sort.
                let id = block.docno(d);
                ahead += (0..n)
                    .filter(|&j| {
                        j != d
                            && block.scores[j] == s
                            && match block.docno(j).cmp(id) {
                                std::cmp::Ordering::Greater => true,
                                std::cmp::Ordering::Equal => j < d,
                                std::cmp::Ordering::Less => false,
                            }
                    })
                    .count();
            }
            scratch.ranked.push(Hit { rank: ahead, rel });
        }
    } else {
        sort_in_trec_order(block, &mut scratch.order);
        scratch.rank_of.clear();
        scratch.rank_of.resize(n, 0);
        for (rank, &i) in scratch.order.iter().enumerate() {
            scratch.rank_of[i as usize] = rank as u32;
        }
        for &(d, rel) in &block.hits {
            scratch.ranked.push(Hit {
                rank: scratch.rank_of[d as usize] as usize,
                rel,
            });
        }
    }
    scratch.ranked.sort_unstable_by_key(|h| h.rank);
}

/// Every document index of `block` in trec_eval's order: score descending, then document id
/// descending (byte order).
fn sort_in_trec_order(block: &Block, order: &mut Vec<u32>) {
    order.clear();
    order.extend(0..block.len() as u32);
    order.sort_unstable_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        let (sa, sb) = (block.scores[a], block.scores[b]);
        if sa > sb {
            std::cmp::Ordering::Less
        } else if sa < sb {
            std::cmp::Ordering::Greater
        } else {
            block.docno(b).cmp(block.docno(a))
        }
    });
}

/// The hash of a document id for [`check_duplicates`] (rustc-hash's FxHasher, whose `finish`
/// moves its best-mixed bits down to the bucket index).
#[inline]
pub(super) fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
}

/// The duplicate check (trec_eval rejects a document listed twice in one query): an
/// open-addressing table of (document index + 1, hash), cleared per query; ids are compared only
/// when their hashes agree. With `max_docs` (trec_eval `-M`) below the query's length, only the
/// first `max_docs` documents in trec_eval's order are checked, as trec_eval cuts before it
/// checks; they are visited in line order, so the error names the later line of the two.
pub(super) fn check_duplicates(
    block: &Block,
    scratch: &mut Scratch,
    path: &Path,
    max_docs: Option<usize>,
) -> Result<(), TrecError> {
    let n = block.len();
    let cap = (n * 2).next_power_of_two().max(16);
    let mask = cap - 1;
    let Scratch { slots, order, .. } = scratch;
    slots.clear();
    slots.resize(cap, (0, 0));
    let mut visit = |i: usize| -> Result<(), TrecError> {
        let id = block.docno(i);
        let hash = hash_bytes(id);
        let tag = (hash >> 32) as u32;
        let mut h = hash as usize & mask;
        loop {
            let (slot, slot_tag) = slots[h];
            if slot == 0 {
                slots[h] = (i as u32 + 1, tag);
                return Ok(());
            }
            let j = slot as usize - 1;
            if slot_tag == tag && bytes_eq(block.docno(j), id) {
                return Err(TrecError::DuplicateDoc {
                    at: Location::new(path, block.lines[i], 0),
                    qid: block.qid.clone(),
                    docno: String::from_utf8_lossy(id).into_owned(),
                    first_line: block.lines[j],
                });
            }
            h = (h + 1) & mask;
        }
    };
    match max_docs {
        Some(max) if max < n => {
            sort_in_trec_order(block, order);
            order.truncate(max);
            order.sort_unstable();
            order.iter().try_for_each(|&i| visit(i as usize))
        }
        _ => (0..n).try_for_each(visit),
    }
}
