//! The qrels, interned for lookups from run lines.

use rustc_hash::FxHashMap as FxMap;

use crate::metrics::{matters, Judgments};
use crate::trec::qrels::Qrels;

/// A query's judgments that can change a measure, keyed by document id bytes.
pub(super) struct Lookup<'q> {
    /// One bit per judged document ([`filter_bit`]): most run lines, unjudged, are turned away
    /// by one test of this mask.
    mask: u64,
    entries: Entries<'q>,
}

enum Entries<'q> {
    /// Up to [`FEW`] entries: a linear scan beats hashing.
    Few(Vec<(&'q [u8], i32)>),
    Many(FxMap<&'q [u8], i32>),
}

const FEW: usize = 8;

/// The mask bit of a document id: a multiplicative hash of its length, middle and last bytes.
#[inline]
fn filter_bit(docno: &[u8]) -> u64 {
    let n = docno.len();
    let last = docno.last().copied().unwrap_or(0) as u32;
    let mid = docno.get(n / 2).copied().unwrap_or(0) as u32;
    let x = last | mid << 8 | (n as u32) << 16;
    1u64 << (x.wrapping_mul(0x9E37_79B9) >> 26)
}

impl<'q> Lookup<'q> {
    fn new(entries: Vec<(&'q [u8], i32)>) -> Self {
        let mask = entries.iter().fold(0, |m, (d, _)| m | filter_bit(d));
        let entries = if entries.len() <= FEW {
            Entries::Few(entries)
        } else {
            Entries::Many(entries.into_iter().collect())
        };
        Lookup { mask, entries }
    }

    #[inline]
    pub(super) fn get(&self, docno: &[u8]) -> Option<i32> {
        if self.mask & filter_bit(docno) == 0 {
            return None;
        }
        match &self.entries {
            Entries::Few(v) => v.iter().find(|(d, _)| bytes_eq(d, docno)).map(|&(_, r)| r),
            Entries::Many(m) => m.get(docno).copied(),
        }
    }
}

pub(super) struct JudgedQuery<'q> {
    pub(super) judgments: Judgments,
    pub(super) lookup: Lookup<'q>,
}

pub(super) struct Index<'q> {
    pub(super) qids: FxMap<&'q str, usize>,
    pub(super) judged: Vec<JudgedQuery<'q>>,
}

impl<'q> Index<'q> {
    pub(super) fn new(qrels: &'q Qrels, rel_level: i32, all_judged: bool) -> Self {
        let mut qids = FxMap::default();
        let mut judged = Vec::with_capacity(qrels.queries().len());
        for (i, q) in qrels.queries().iter().enumerate() {
            qids.insert(q.qid.as_str(), i);
            let mattering: Vec<(&[u8], i32)> = q
                .judgments
                .iter()
                .filter(|(_, r)| all_judged || matters(*r, rel_level))
                .map(|(d, r)| (d.as_bytes(), *r))
                .collect();
            let lookup = Lookup::new(mattering);
            judged.push(JudgedQuery {
                judgments: Judgments::from_values(q.judgments.iter().map(|j| j.1), rel_level),
                lookup,
            });
        }
        Index { qids, judged }
    }
}

/// Byte equality for short ids, a word at a time, without a library call per comparison.
#[inline]
pub(super) fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut ca = a.chunks_exact(8);
    let mut cb = b.chunks_exact(8);
    for (x, y) in (&mut ca).zip(&mut cb) {
        if x != y {
            return false;
        }
    }
    let (ra, rb) = (ca.remainder(), cb.remainder());
    let mut i = 0;
    while i < ra.len() {
        if ra[i] != rb[i] {
            return false;
        }
        i += 1;
    }
    true
}
