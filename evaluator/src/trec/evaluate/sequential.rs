//! The sequential readers: one pass with one query block at a time, and the buffered fallback
//! for interleaved runs.

use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use super::block::{Block, Scratch};
use rustc_hash::FxHashMap as FxMap;

use super::index::{bytes_eq, Index};
use super::query::{Ctx, Results};
use super::{conclude, index_for, EvalOptions, Evaluation};
use crate::metrics::Measure;
use crate::trec::error::TrecError;
use crate::trec::qrels::Qrels;
use crate::trec::run::RunReader;

/// A run held in memory, given query by query (what the Python package makes of a `{qid:
/// {docno: score}}` dict): each judged query's documents go into the [`Block`] a file's lines
/// go into and are evaluated as a file's are, when the next query starts; no TREC text is
/// written or parsed, and memory stays at the qrels plus one query. Each query is given once
/// ([`TrecError::RepeatedQuery`] otherwise); `runid` is empty (documents carry no tag).
pub struct RunFeed<'q> {
    qrels: &'q Qrels,
    index: Index<'q>,
    measures: Vec<Measure>,
    opts: EvalOptions,
    path: PathBuf,
    results: Results,
    seen: Vec<bool>,
    block: Block,
    scratch: Scratch,
    open: bool,
    docs: u64,
}

impl<'q> RunFeed<'q> {
    /// A feed evaluating `measures` against `qrels`; `path` names the run in messages.
    pub fn new(qrels: &'q Qrels, path: &Path, measures: &[Measure], opts: &EvalOptions) -> Self {
        let index = index_for(qrels, opts);
        let nq = index.judged.len();
        RunFeed {
            qrels,
            index,
            measures: measures.to_vec(),
            opts: opts.clone(),
            path: path.to_path_buf(),
            results: vec![None; nq],
            seen: vec![false; nq],
            block: Block::default(),
            scratch: Scratch::default(),
            open: false,
            docs: 0,
        }
    }

    /// Starts query `qid` (the previous query is evaluated). False when the qrels do not judge
    /// it: its documents are only counted ([`RunFeed::push`] keeps nothing else of them).
    pub fn query(&mut self, qid: &str) -> Result<bool, TrecError> {
        self.close()?;
        let q = self.index.qids.get(qid).copied();
        if let Some(q) = q {
            if std::mem::replace(&mut self.seen[q], true) {
                return Err(TrecError::RepeatedQuery {
                    path: self.path.clone(),
                    qid: qid.to_string(),
                });
            }
        }
        self.block.reset(qid, q);
        self.open = true;
        Ok(q.is_some())
    }

    /// One document of the current query and its score (finite: the caller checks).
    #[inline]
    pub fn push(&mut self, docno: &str, score: f64) {
        self.docs += 1;
        let q = self.block.q;
        if q.is_some() {
            let rel = q.and_then(|q| self.index.judged[q].lookup.get(docno.as_bytes()));
            self.block.push(docno, score, self.docs, rel);
        }
    }

    /// Evaluates the current query's block, if any.
    fn close(&mut self) -> Result<(), TrecError> {
        if !std::mem::replace(&mut self.open, false) {
            return Ok(());
        }
        let ctx = Ctx {
            index: &self.index,
            measures: &self.measures,
            opts: &self.opts,
            path: &self.path,
            relstring: self.measures.contains(&Measure::Relstring),
        };
        if let (Some(q), Some(values)) = (self.block.q, ctx.finish(&self.block, &mut self.scratch)?)
        {
            self.results[q] = Some(values);
        }
        Ok(())
    }

    /// The evaluation, as [`super::evaluate_run`] gives it for the same lines in a file.
    pub fn finish(mut self) -> Result<Evaluation, TrecError> {
        self.close()?;
        if self.docs == 0 {
            return Err(TrecError::Empty {
                path: self.path,
                kind: "run",
                hint: "a run has one document and its score per line",
            });
        }
        let ctx = Ctx {
            index: &self.index,
            measures: &self.measures,
            opts: &self.opts,
            path: &self.path,
            relstring: self.measures.contains(&Measure::Relstring),
        };
        conclude(&ctx, self.qrels, self.results, String::new(), false)
    }
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
pub(super) fn stream<R: Read>(
    ctx: &Ctx<'_, '_>,
    reader: R,
) -> Result<Option<(Results, String)>, TrecError> {
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
pub(super) fn buffered<R: Read>(
    ctx: &Ctx<'_, '_>,
    reader: R,
) -> Result<(Results, String), TrecError> {
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
