//! The sequential readers: one pass with one query block at a time, and the buffered fallback
//! for interleaved runs.

use std::io::Read;
use std::ops::ControlFlow;

use super::block::{Block, Scratch};
use rustc_hash::FxHashMap as FxMap;

use super::index::bytes_eq;
use super::query::{Ctx, Results};
use crate::trec::error::TrecError;
use crate::trec::run::RunReader;

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
