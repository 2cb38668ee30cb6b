//! Evaluation of a TREC run against qrels, trec_eval 10.0's way, streaming.
//!
//! How it stays fast and small:
//! - the run is read in large blocks and split at the byte level ([`super::run::RunReader`]);
//! - each query's judgments that can change a measure (relevant at the level, or a positive
//!   gain) are interned up front; a run line costs one lookup against that small set, and the
//!   other documents only keep their score and id bytes (for tie-breaks and the duplicate check);
//! - runs are grouped by query in practice: a query is evaluated as soon as its block of lines
//!   ends and its buffers are reused, so memory is proportional to the qrels plus one query;
//! - a rank is only computed for the few documents that carry a judgment (count of documents
//!   ahead in trec_eval's order), not by sorting the whole list, unless there are many.
//!
//! A run whose queries are interleaved (a judged query id that reappears after another query)
//! is detected and read again with every query buffered: slower and bigger, still exact.
//!
//! Conventions: queries of the run absent from the qrels are ignored; a qrels query absent from
//! the run is an error unless [`EvalOptions::complete`] (trec_eval `-c`), in which case it counts
//! 0 in every average (its `num_rel` still counts); averages are taken over the qrels' queries in
//! qrels order, as trec_eval accumulates them, so sums match to the last bit.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::Path;

use super::error::{Location, TrecError};
use super::qrels::Qrels;
use super::run::RunReader;
use crate::metrics::{matters, relstring, Hit, Judgments, Measure, Params, QueryView};

/// Settings of an evaluation (trec_eval's `-l`, `-c`, `-M`, `-J`, and the measures'
/// parameters).
#[derive(Debug, Clone, PartialEq)]
pub struct EvalOptions {
    /// Minimum judgment for a document to be relevant (trec_eval `-l`, default 1).
    pub rel_level: i32,
    /// Average over every query of the qrels, a query missing from the run counting 0
    /// (trec_eval `-c`). Without it a missing query is an error.
    pub complete: bool,
    /// Only the first N documents of each query, in trec_eval's order, count (trec_eval `-M`).
    pub max_docs: Option<usize>,
    /// Drop unjudged documents (and judgments below 0) before evaluating (trec_eval `-J`).
    pub judged_only: bool,
    /// Every judged document becomes a hit, not only relevant ones: needed by the measures
    /// that read non-relevant judgments ([`crate::metrics::Selection::reads_nonrelevant`]).
    pub all_judged: bool,
    /// The measures' parameters (gains, RBP's p, ...).
    pub params: Params,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            rel_level: 1,
            complete: false,
            max_docs: None,
            judged_only: false,
            all_judged: false,
            params: Params::default(),
        }
    }
}

/// One query's values.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryValues {
    /// Query id.
    pub qid: String,
    /// One value per measure, in the order of [`Evaluation::measures`].
    pub values: Vec<f64>,
    /// True when the run had no results for this query (only possible with `complete`).
    pub missing: bool,
    /// The `relstring` of the query, when it was asked for.
    pub relstring: Option<String>,
}

/// The outcome of [`evaluate_run`].
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    /// The tag of the run's last line (trec_eval's `runid`).
    pub runid: String,
    /// The measures, in the order values are given.
    pub measures: Vec<Measure>,
    /// Every query of the qrels, in qrels order (query id, byte order).
    pub per_query: Vec<QueryValues>,
    /// Mean over `num_q` queries per measure; the sum for counts ([`Measure::is_count`]).
    pub summary: Vec<f64>,
    /// Queries averaged over (trec_eval's `num_q`).
    pub num_q: usize,
    /// True when the run's queries were interleaved and had to be buffered.
    pub interleaved: bool,
}

/// Evaluates the run file at `run` against `qrels`.
pub fn evaluate_run(
    qrels: &Qrels,
    run: &Path,
    measures: &[Measure],
    opts: &EvalOptions,
) -> Result<Evaluation, TrecError> {
    let file = File::open(run).map_err(|source| TrecError::Io {
        path: run.to_path_buf(),
        source,
    })?;
    evaluate_reader(qrels, file, run, measures, opts)
}

/// Evaluates a run read from `reader` (`path` names it in messages). Seekable, so that an
/// interleaved run can be read a second time.
pub fn evaluate_reader<R: Read + Seek>(
    qrels: &Qrels,
    mut reader: R,
    path: &Path,
    measures: &[Measure],
    opts: &EvalOptions,
) -> Result<Evaluation, TrecError> {
    let all_judged = opts.all_judged || opts.judged_only || opts.params.has_custom_gains();
    let index = Index::new(qrels, opts.rel_level, all_judged);
    let ctx = Ctx {
        index: &index,
        measures,
        opts,
        path,
        relstring: measures.contains(&Measure::Relstring),
    };
    let (mut results, runid, interleaved) = match stream(&ctx, &mut reader)? {
        Some((results, runid)) => (results, runid, false),
        None => {
            reader
                .seek(SeekFrom::Start(0))
                .map_err(|source| TrecError::Io {
                    path: path.to_path_buf(),
                    source,
                })?;
            let (results, runid) = buffered(&ctx, &mut reader)?;
            (results, runid, true)
        }
    };

    let missing: Vec<usize> = (0..results.len())
        .filter(|&q| results[q].is_none())
        .collect();
    if let (false, Some(&first)) = (opts.complete, missing.first()) {
        let q = &qrels.queries()[first];
        return Err(TrecError::MissingQuery {
            at: Location::new(qrels.path(), q.line, 0),
            qid: q.qid.clone(),
            run: path.to_path_buf(),
            more: missing.len() - 1,
        });
    }
    for &q in &missing {
        results[q] = Some(ctx.missing(q));
    }

    let num_q = results.len();
    let mut summary = vec![0.0; measures.len()];
    let mut per_query = Vec::with_capacity(num_q);
    for (q, out) in results.into_iter().enumerate() {
        let out = out.expect("every query has values");
        for (s, v) in summary.iter_mut().zip(&out.values) {
            *s += v;
        }
        per_query.push(QueryValues {
            qid: qrels.queries()[q].qid.clone(),
            values: out.values,
            missing: missing.binary_search(&q).is_ok(),
            relstring: out.relstring,
        });
    }
    for (s, m) in summary.iter_mut().zip(measures) {
        if *m == Measure::NumRel && opts.complete {
            // trec_eval 10.0 re-counts num_rel under -c from the whole qrels: every judgment
            // above 0, whatever the relevance level.
            *s = index
                .judged
                .iter()
                .map(|j| j.judgments.num_positive)
                .sum::<usize>() as f64;
        } else if m.is_geometric() {
            if num_q > 0 {
                *s = (*s / num_q as f64).exp();
            }
        } else if !m.is_count() && num_q > 0 {
            *s /= num_q as f64;
        }
    }
    Ok(Evaluation {
        runid,
        measures: measures.to_vec(),
        per_query,
        summary,
        num_q,
        interleaved,
    })
}

// ---------------------------------------------------------------------------------------------
// Hashing: a small multiply-rotate hash (FxHash) with a final mix, enough for document ids.

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            // Byte by byte: a variable-length copy would cost a library call per id.
            let mut w = 0u64;
            for (k, &b) in rest.iter().enumerate() {
                w |= (b as u64) << (8 * k);
            }
            self.add(w);
        }
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        // Mix so that low bits (used for bucket indices) depend on every input bit.
        let mut h = self.0;
        h ^= h >> 29;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^ (h >> 32)
    }
}

type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

#[inline]
fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(bytes);
    h.finish()
}

// ---------------------------------------------------------------------------------------------
// The qrels, interned for lookups from run lines.

/// A query's judgments that can change a measure, keyed by document id bytes.
enum Lookup<'q> {
    /// Up to [`FEW`] entries: a linear scan beats hashing.
    Few(Vec<(&'q [u8], i32)>),
    Many(FxMap<&'q [u8], i32>),
}

const FEW: usize = 8;

impl Lookup<'_> {
    #[inline]
    fn get(&self, docno: &[u8]) -> Option<i32> {
        match self {
            Lookup::Few(v) => v.iter().find(|(d, _)| bytes_eq(d, docno)).map(|&(_, r)| r),
            Lookup::Many(m) => m.get(docno).copied(),
        }
    }
}

struct JudgedQuery<'q> {
    judgments: Judgments,
    lookup: Lookup<'q>,
}

struct Index<'q> {
    qids: FxMap<&'q str, usize>,
    judged: Vec<JudgedQuery<'q>>,
}

impl<'q> Index<'q> {
    fn new(qrels: &'q Qrels, rel_level: i32, all_judged: bool) -> Self {
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

// ---------------------------------------------------------------------------------------------
// One query's lines.

/// The lines of one query: scores and id bytes of every document (ties, duplicates), and the
/// few documents whose judgment matters.
#[derive(Default)]
struct Block {
    qid: String,
    /// Position in the qrels, `None` for a query the qrels do not judge.
    q: Option<usize>,
    scores: Vec<f64>,
    /// End of each document id in `arena` (the start is the previous end).
    ends: Vec<u32>,
    arena: Vec<u8>,
    lines: Vec<u64>,
    /// `(document index, judgment)` of the documents whose judgment matters.
    hits: Vec<(u32, i32)>,
}

impl Block {
    fn reset(&mut self, qid: &str, q: Option<usize>) {
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
    fn push(&mut self, docno: &str, score: f64, line: u64, rel: Option<i32>) {
        if let Some(rel) = rel {
            self.hits.push((self.scores.len() as u32, rel));
        }
        self.arena.extend_from_slice(docno.as_bytes());
        self.ends.push(self.arena.len() as u32);
        self.scores.push(score);
        self.lines.push(line);
    }

    #[inline]
    fn docno(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.arena[start..self.ends[i] as usize]
    }

    fn len(&self) -> usize {
        self.scores.len()
    }
}

/// Buffers reused from query to query.
#[derive(Default)]
struct Scratch {
    slots: Vec<(u32, u32)>,
    order: Vec<u32>,
    rank_of: Vec<u32>,
    ranked: Vec<Hit>,
}

/// Above this many judged documents in a query, ranks come from one sort of the whole query
/// instead of one counting pass per judged document.
const COUNTING_MAX: usize = 16;

/// Position of every hit in trec_eval's order (score descending, then document id descending),
/// left in `scratch.ranked` by ascending rank.
fn rank_hits(block: &Block, scratch: &mut Scratch) {
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
                let id = block.docno(d);
                ahead += (0..n)
                    .filter(|&j| j != d && block.scores[j] == s && block.docno(j) > id)
                    .count();
            }
            scratch.ranked.push(Hit { rank: ahead, rel });
        }
    } else {
        scratch.order.clear();
        scratch.order.extend(0..n as u32);
        scratch.order.sort_unstable_by(|&a, &b| {
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

/// The duplicate check (trec_eval rejects a document listed twice in one query): an
/// open-addressing table of (document index + 1, hash), cleared per query; ids are compared only
/// when their hashes agree.
fn check_duplicates(block: &Block, scratch: &mut Scratch, path: &Path) -> Result<(), TrecError> {
    let n = block.len();
    let cap = (n * 2).next_power_of_two().max(16);
    let mask = cap - 1;
    scratch.slots.clear();
    scratch.slots.resize(cap, (0, 0));
    for i in 0..n {
        let id = block.docno(i);
        let hash = hash_bytes(id);
        let tag = (hash >> 32) as u32;
        let mut h = hash as usize & mask;
        loop {
            let (slot, slot_tag) = scratch.slots[h];
            if slot == 0 {
                scratch.slots[h] = (i as u32 + 1, tag);
                break;
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
    }
    Ok(())
}

struct Ctx<'a, 'q> {
    index: &'a Index<'q>,
    measures: &'a [Measure],
    opts: &'a EvalOptions,
    path: &'a Path,
    relstring: bool,
}

/// One query's values and relstring.
#[derive(Clone)]
struct QueryOut {
    values: Vec<f64>,
    relstring: Option<String>,
}

impl Ctx<'_, '_> {
    /// Checks a finished block and, for a judged query, returns its values.
    fn finish(&self, block: &Block, scratch: &mut Scratch) -> Result<Option<QueryOut>, TrecError> {
        check_duplicates(block, scratch, self.path)?;
        let Some(q) = block.q else {
            return Ok(None);
        };
        rank_hits(block, scratch);
        let mut num_ret = block.len();
        if let Some(max) = self.opts.max_docs {
            if num_ret > max {
                num_ret = max;
                let keep = scratch.ranked.partition_point(|h| h.rank < max);
                scratch.ranked.truncate(keep);
            }
        }
        if self.opts.judged_only {
            // trec_eval -J: unjudged documents leave the ranking; the judged keep their order.
            scratch.ranked.retain(|h| h.rel >= 0);
            for (i, h) in scratch.ranked.iter_mut().enumerate() {
                h.rank = i;
            }
            num_ret = scratch.ranked.len();
        }
        Ok(Some(self.values(q, num_ret, &scratch.ranked)))
    }

    fn values(&self, q: usize, num_ret: usize, hits: &[Hit]) -> QueryOut {
        let view = QueryView {
            num_ret,
            hits,
            judgments: &self.index.judged[q].judgments,
            rel_level: self.opts.rel_level,
            params: &self.opts.params,
        };
        QueryOut {
            values: self.measures.iter().map(|m| m.compute(&view)).collect(),
            relstring: self
                .relstring
                .then(|| relstring(&view, self.opts.params.relstring_len)),
        }
    }

    /// A qrels query the run lacks, under `-c`: trec_eval 10.0 evaluates it as a ranking of one
    /// unjudged document, then zeroes num_ret, utility, unj, rbp_resid and relstring.
    fn missing(&self, q: usize) -> QueryOut {
        let mut out = self.values(q, 1, &[]);
        for (v, m) in out.values.iter_mut().zip(self.measures) {
            if matches!(
                m,
                Measure::NumRet | Measure::Utility | Measure::Unj(_) | Measure::RbpResid
            ) {
                *v = 0.0;
            }
        }
        if out.relstring.is_some() {
            out.relstring = Some(String::new());
        }
        out
    }

    #[inline]
    fn judgment(&self, q: Option<usize>, docno: &str) -> Option<i32> {
        q.and_then(|q| self.index.judged[q].lookup.get(docno.as_bytes()))
    }
}

type Results = Vec<Option<QueryOut>>;

/// Byte equality for short ids, a word at a time, without a library call per comparison.
#[inline]
fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
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

/// Remembers the tag of the last line (trec_eval's `runid`), copying only when it changes.
#[inline]
fn note_tag(runid: &mut String, tag: &str) {
    if !bytes_eq(runid.as_bytes(), tag.as_bytes()) {
        runid.clear();
        runid.push_str(tag);
    }
}

/// One pass, one query block at a time. `None` when a judged query reappears after another
/// query (interleaved run): the caller falls back to [`buffered`].
fn stream<R: Read>(ctx: &Ctx<'_, '_>, reader: R) -> Result<Option<(Results, String)>, TrecError> {
    let nq = ctx.index.judged.len();
    let mut results: Results = vec![None; nq];
    let mut seen = vec![false; nq];
    let mut runid = String::new();
    let mut block = Block::default();
    let mut scratch = Scratch::default();
    let mut open = false;
    let flow = RunReader::new(reader, ctx.path).for_each(|l| {
        if !open || !bytes_eq(l.qid.as_bytes(), block.qid.as_bytes()) {
            if open {
                if let Some(values) = ctx.finish(&block, &mut scratch)? {
                    results[block.q.expect("judged")] = Some(values);
                }
            }
            let q = ctx.index.qids.get(l.qid).copied();
            if let Some(q) = q {
                if seen[q] {
                    return Ok(ControlFlow::Break(()));
                }
                seen[q] = true;
            }
            block.reset(l.qid, q);
            open = true;
        }
        let rel = ctx.judgment(block.q, l.docno);
        block.push(l.docno, l.score, l.line, rel);
        note_tag(&mut runid, l.tag);
        Ok(ControlFlow::Continue(()))
    })?;
    if flow.is_break() {
        return Ok(None);
    }
    if open {
        if let Some(values) = ctx.finish(&block, &mut scratch)? {
            results[block.q.expect("judged")] = Some(values);
        }
    }
    Ok(Some((results, runid)))
}

/// The fallback for interleaved runs: every query's lines are kept until the end.
fn buffered<R: Read>(ctx: &Ctx<'_, '_>, reader: R) -> Result<(Results, String), TrecError> {
    let mut results: Results = vec![None; ctx.index.judged.len()];
    let mut runid = String::new();
    let mut blocks: Vec<Block> = Vec::new();
    let mut by_qid: FxMap<String, usize> = FxMap::default();
    let _ = RunReader::new(reader, ctx.path).for_each::<()>(|l| {
        let b = match by_qid.get(l.qid) {
            Some(&b) => b,
            None => {
                let mut block = Block::default();
                block.reset(l.qid, ctx.index.qids.get(l.qid).copied());
                blocks.push(block);
                by_qid.insert(l.qid.to_string(), blocks.len() - 1);
                blocks.len() - 1
            }
        };
        // Judgments are looked up per block at the end: one query's lines at a time is kinder
        // to the cache than hopping between queries on every line.
        blocks[b].push(l.docno, l.score, l.line, None);
        note_tag(&mut runid, l.tag);
        Ok(ControlFlow::Continue(()))
    })?;
    let mut scratch = Scratch::default();
    for block in &mut blocks {
        if let Some(q) = block.q {
            let lookup = &ctx.index.judged[q].lookup;
            block.hits = (0..block.len())
                .filter_map(|i| lookup.get(block.docno(i)).map(|rel| (i as u32, rel)))
                .collect();
        }
        if let Some(values) = ctx.finish(block, &mut scratch)? {
            results[block.q.expect("judged")] = Some(values);
        }
    }
    Ok((results, runid))
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use proptest::prelude::*;

    use super::*;
    use crate::metrics::{evaluate_ranking, Measure::*};
    use crate::trec::run::trec_order;

    fn qrels(text: &str) -> Qrels {
        Qrels::from_reader(text.as_bytes(), Path::new("qrels")).unwrap()
    }

    fn eval(
        q: &Qrels,
        run: &str,
        ms: &[Measure],
        opts: EvalOptions,
    ) -> Result<Evaluation, TrecError> {
        evaluate_reader(
            q,
            Cursor::new(run.as_bytes().to_vec()),
            Path::new("run"),
            ms,
            &opts,
        )
    }

    #[test]
    fn ties_break_by_docno_descending_and_rank_column_is_ignored() {
        let q = qrels("q1 0 a 1\n");
        // b and a tie at 2.0: b (greater id) ranks first, a second; c at 3.0 leads.
        let ev = eval(
            &q,
            "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 3.0 t\n",
            &[RecipRank],
            EvalOptions::default(),
        )
        .unwrap();
        assert_eq!(ev.summary, vec![1.0 / 3.0]);
    }

    #[test]
    fn interleaved_run_gives_the_grouped_result() {
        let q = qrels("q1 0 a 1\nq2 0 x 1\nq2 0 y 2\n");
        let ms = [Map, RecipRank, NdcgCut(3), NumRet];
        let grouped = "q1 Q0 a 1 1 t\nq1 Q0 b 1 2 t\nq2 Q0 x 1 1 t\nq2 Q0 y 1 3 t\nq2 Q0 z 1 2 t\n";
        let interleaved =
            "q1 Q0 a 1 1 t\nq2 Q0 x 1 1 t\nq1 Q0 b 1 2 t\nq2 Q0 y 1 3 t\nq2 Q0 z 1 2 t\n";
        let a = eval(&q, grouped, &ms, EvalOptions::default()).unwrap();
        let b = eval(&q, interleaved, &ms, EvalOptions::default()).unwrap();
        assert!(!a.interleaved && b.interleaved);
        assert_eq!(a.per_query, b.per_query);
        assert_eq!(a.summary, b.summary);
    }

    #[test]
    fn duplicates_are_found_across_interleaved_blocks() {
        let q = qrels("q1 0 a 1\n");
        let err = eval(
            &q,
            "q1 Q0 a 1 1 t\nq2 Q0 a 1 1 t\nq1 Q0 a 1 2 t\n",
            &[Map],
            EvalOptions::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "run:3: document `a` appears twice in query `q1` (first at line 1); trec_eval rejects such runs: keep only one line per (query, document)"
        );
    }

    #[test]
    fn missing_query_is_an_error_unless_complete() {
        let q = qrels("q1 0 a 1\nq2 0 b 1\nq2 0 c 1\nq3 0 d 1\n");
        let run = "q1 Q0 a 1 1 t\nq9 Q0 a 1 1 t\n";
        let err = eval(&q, run, &[Map], EvalOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("qrels:2: query `q2` of the qrels has no results in run run (1 more"),
            "{err}"
        );
        let ev = eval(
            &q,
            run,
            &[Map, NumRel, NumRet],
            EvalOptions {
                complete: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(ev.num_q, 3);
        assert_eq!(ev.summary, vec![1.0 / 3.0, 4.0, 1.0]);
        assert!(ev.per_query[1].missing && !ev.per_query[0].missing);
        assert_eq!(ev.per_query[1].values, vec![0.0, 2.0, 0.0]);
    }

    #[test]
    fn runid_is_the_last_lines_tag() {
        let q = qrels("q1 0 a 1\n");
        let ev = eval(
            &q,
            "q1 Q0 a 1 1 first\nq1 Q0 b 1 0 last\n",
            &[Map],
            EvalOptions::default(),
        )
        .unwrap();
        assert_eq!(ev.runid, "last");
    }

    #[test]
    fn hash_spreads_numeric_ids() {
        let mask = 2047u64;
        let mut buckets = std::collections::HashSet::new();
        for i in 0..1000u32 {
            buckets.insert(hash_bytes(format!("{}", 7_000_000 + i).as_bytes()) & mask);
        }
        assert!(
            buckets.len() > 700,
            "{} distinct buckets of 1000",
            buckets.len()
        );
    }

    /// A random judged query with ties: documents from a small pool, scores from a few values.
    /// `(docno, score)` in run order, and `(docno, judgment)`.
    type Case = (Vec<(String, f64)>, Vec<(String, i32)>);

    fn arb_case() -> impl Strategy<Value = Case> {
        (
            proptest::sample::subsequence((0..60).collect::<Vec<u32>>(), 0..50).prop_shuffle(),
            proptest::collection::vec(0u8..6, 50),
            proptest::collection::hash_map(0u32..60, -1i32..=3, 0..40),
        )
            .prop_map(|(docs, scores, judged)| {
                (
                    docs.iter()
                        .zip(&scores)
                        .map(|(d, s)| (format!("d{d}"), *s as f64 * 0.5 - 1.0))
                        .collect(),
                    judged
                        .into_iter()
                        .map(|(d, r)| (format!("d{d}"), r))
                        .collect(),
                )
            })
    }

    proptest! {
        /// The streaming evaluator (counting ranks or sorting, whichever applies) and the
        /// buffered fallback for interleaved runs both agree with a plain sort in trec_eval's
        /// order followed by `evaluate_ranking`.
        #[test]
        fn streaming_and_buffered_agree_with_sort_then_evaluate(
            (docs, judged) in arb_case(),
            level in 0i32..=2,
        ) {
            let mut qrels_text = "r 0 z 1\n".to_string();
            for (d, r) in &judged {
                qrels_text += &format!("q 0 {d} {r}\n");
            }
            let q = qrels(&qrels_text);
            let lines: Vec<String> = docs.iter().map(|(d, s)| format!("q Q0 {d} 0 {s} t\n")).collect();
            let other = "r Q0 z 0 1 t\n".to_string();
            let grouped = lines.concat() + &other;
            // q, r, then the rest of q: interleaved as soon as q has two lines
            let mut interleaved = lines.first().cloned().unwrap_or_default() + &other;
            interleaved += &lines.iter().skip(1).cloned().collect::<String>();
            let ms = [Map, RecipRank, P(5), Recall(10), Ndcg, NdcgCut(5), Rprec, NumRelRet, Success(3), Bpref, InfAp, Unj(5), NumNonrelJudgedRet, G, Rndcg, NdcgRel];
            let opts = EvalOptions { rel_level: level, complete: true, all_judged: true, ..Default::default() };
            let mut sorted: Vec<(&str, f64)> = docs.iter().map(|(d, s)| (d.as_str(), *s)).collect();
            sorted.sort_by(|a, b| trec_order(*a, *b));
            let ranked: Vec<&str> = sorted.iter().map(|x| x.0).collect();
            let qi = q.position("q");
            let want = match qi {
                Some(i) => evaluate_ranking(&ms, &ranked, &q.queries()[i].to_map(), level),
                None => vec![],
            };
            for (name, run) in [("grouped", &grouped), ("interleaved", &interleaved)] {
                let ev = eval(&q, run, &ms, opts.clone()).unwrap();
                prop_assert_eq!(ev.interleaved, name == "interleaved" && docs.len() >= 2 && qi.is_some());
                if let Some(i) = qi {
                    prop_assert_eq!(&ev.per_query[i].values, &want, "{}", name);
                }
            }
        }
    }
}
