//! The qrels, interned for lookups from run lines.

use rustc_hash::FxHashMap as FxMap;

use crate::metrics::{matters, Judgments};
use crate::trec::qrels::Qrels;

/// A query's judgments that can change a measure, keyed by document id bytes.
pub(super) enum Lookup<'q> {
    /// Up to [`FEW`] entries: a linear scan beats hashing.
    Few(Vec<(&'q [u8], i32)>),
    Many(FxMap<&'q [u8], i32>),
}

const FEW: usize = 8;

impl Lookup<'_> {
    #[inline]
    pub(super) fn get(&self, docno: &[u8]) -> Option<i32> {
        match self {
            Lookup::Few(v) => v.iter().find(|(d, _)| bytes_eq(d, docno)).map(|&(_, r)| r),
            Lookup::Many(m) => m.get(docno).copied(),
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
            let lookup = if mattering.len() <= FEW {
                Lookup::Few(mattering)
            } else {
                Lookup::Many(mattering.into_iter().collect())
            };
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
