//! The parallel reader of a run file, for [`super::evaluate_run`] on a large regular file.
//!
//! The file is cut into chunks of whole lines: chunk `i` owns the lines that start in its byte
//! range `[i * chunk, (i + 1) * chunk)`, so every line belongs to exactly one chunk whatever the
//! line lengths. A rayon task reads its chunk (`pread`, into its own buffer: memory stays a few
//! chunks, not the file), checks it for UTF-8, splits it into runs of lines of one query, and
//! evaluates every run that starts and ends inside the chunk. The first and last runs of a chunk
//! may continue in its neighbours: they are kept as blocks and joined in file order, then
//! evaluated. Chunks are taken a window at a time, so at most a window's pieces are held.
//!
//! Exactness: a joined run is the same block, line for line, that the sequential reader builds,
//! and a query's values depend only on its block, so every value is bit-identical. Anything the
//! sequential reader would report or treat specially (a malformed line, invalid UTF-8, a
//! duplicate document, an empty run, a judged query in two separate runs of lines, an I/O
//! error) makes this reader give up: the caller then reads the file with the sequential reader,
//! which gives the same message, or the same values through its buffered fallback.

use std::fs::File;
use std::ops::ControlFlow;

use rayon::prelude::*;

use super::block::{Block, Scratch};
use super::index::{bytes_eq, Lookup};
use super::query::{Ctx, QueryOut, Results};
use crate::trec::lines::BOM;
use crate::trec::run::split_run_lines;

/// Chunk size for [`super::evaluate_run`]: big enough that a chunk's fixed costs (one read, two
/// joined runs) vanish, small enough that a window of them balances two or more cores.
pub(super) const CHUNK: usize = 1 << 20;

/// Chunks per thread in one window.
const WINDOW_PER_THREAD: usize = 64;

/// Bytes read past a chunk's end to find the end of its last line (more when a line is longer).
const EXTRA: usize = 1 << 14;

/// What one chunk leaves: its first and last runs of lines (which may continue in the
/// neighbouring chunks), the values of the judged queries whose runs lie in between, and the
/// tag of its last line (empty when it has no content line; a tag is never empty).
#[derive(Default)]
struct Piece {
    first: Option<Block>,
    middle: Vec<(usize, QueryOut)>,
    last: Option<Block>,
    tag: String,
}

/// Evaluates the run in `file` (`size` bytes) in chunks of `chunk` bytes. `None` when the
/// sequential reader must decide (see the module comment).
pub(super) fn evaluate(
    ctx: &Ctx<'_, '_>,
    file: &File,
    size: usize,
    chunk: usize,
) -> Option<(Results, String)> {
    if size == 0 {
        return None;
    }
    let n = size.div_ceil(chunk);
    let window = rayon::current_num_threads() * WINDOW_PER_THREAD;
    let mut join = Join::new(ctx.index.judged.len());
    for w in (0..n).step_by(window) {
        let pieces: Option<Vec<Piece>> = (w..(w + window).min(n))
            .into_par_iter()
            .map_init(
                || (Vec::new(), Scratch::default()),
                |(buf, scratch), i| {
                    let bytes = read_chunk(file, size, chunk, i, buf)?;
                    let text = std::str::from_utf8(bytes).ok()?;
                    piece(ctx, text, scratch)
                },
            )
            .collect();
        for p in pieces? {
            join.add(p)?;
        }
        join.evaluate(ctx)?;
    }
    if !join.any {
        return None;
    }
    if let Some(open) = join.open.take() {
        join.joined.push(open);
    }
    join.evaluate(ctx)?;
    Some((join.results, join.runid))
}

/// Reads the lines chunk `i` owns into `buf` and returns them (empty when no line starts in the
/// chunk's range). `None` on an I/O error, or a file shorter than `size`.
#[cfg(unix)]
fn read_chunk<'b>(
    file: &File,
    size: usize,
    chunk: usize,
    i: usize,
    buf: &'b mut Vec<u8>,
) -> Option<&'b [u8]> {
    use std::os::unix::fs::FileExt;

    let lo = i * chunk;
    let hi = (lo + chunk).min(size);
    // From the byte before the range: a line starts at `lo` when that byte is a newline.
    let from = lo.saturating_sub(1);
    // `buf[tail]` is the range's last byte; the chunk's last line ends at the first newline
    // from there on.
    let tail = hi - 1 - from;
    let mut want = (hi + EXTRA).min(size) - from;
    loop {
        buf.resize(want, 0);
        file.read_exact_at(&mut buf[..want], from as u64).ok()?;
        let start = if i == 0 {
            if buf.starts_with(BOM) {
                BOM.len()
            } else {
                0
            }
        } else {
            match memchr::memchr(b'\n', &buf[..tail]) {
                Some(p) => p + 1,
                None => return Some(&buf[..0]),
            }
        };
        match memchr::memchr(b'\n', &buf[tail..want]) {
            Some(p) => return Some(&buf[start..tail + p + 1]),
            None if from + want == size => return Some(&buf[start..want]),
            None => want = (want * 2).min(size - from),
        }
    }
}

#[cfg(not(unix))]
fn read_chunk<'b>(
    _file: &File,
    _size: usize,
    _chunk: usize,
    _i: usize,
    _buf: &'b mut Vec<u8>,
) -> Option<&'b [u8]> {
    None
}

/// Splits a chunk's lines into runs of one query; evaluates the runs after the first and
/// before the last. `None` on any error.
fn piece(ctx: &Ctx<'_, '_>, text: &str, scratch: &mut Scratch) -> Option<Piece> {
    let mut piece = Piece::default();
    let mut block = Block::default();
    let mut open = false;
    let mut lookup: Option<&Lookup<'_>> = None;
    // The last line's tag, as a byte range of `text` (copied once, at the end).
    let mut tag = 0..0;
    let base = text.as_ptr() as usize;
    let mut line_no = 0;
    // The closure never breaks: the flow is always `Continue`.
    let _: ControlFlow<()> = split_run_lines(text, &mut line_no, ctx.path, &mut |l| {
        if !open || !bytes_eq(l.qid.as_bytes(), block.qid.as_bytes()) {
            if open {
                if piece.first.is_none() {
                    piece.first = Some(std::mem::take(&mut block));
                } else if let Some(out) = ctx.finish(&block, scratch)? {
                    piece.middle.push((block.q.expect("judged"), out));
                }
            }
            let q = ctx.index.qids.get(l.qid).copied();
            block.reset(l.qid, q);
            lookup = q.map(|q| &ctx.index.judged[q].lookup);
            open = true;
        }
        let rel = lookup.and_then(|j| j.get(l.docno.as_bytes()));
        block.push(l.docno, l.score, l.line, rel);
        let start = l.tag.as_ptr() as usize - base;
        tag = start..start + l.tag.len();
        Ok(ControlFlow::Continue(()))
    })
    .ok()?;
    piece.tag = text[tag].to_string();
    if open {
        if piece.first.is_none() {
            piece.first = Some(block);
        } else {
            piece.last = Some(block);
        }
    }
    Some(piece)
}

/// The pieces joined in file order.
struct Join {
    /// The run of lines that may continue in the next piece.
    open: Option<Block>,
    /// Runs that ended, joined from pieces, not evaluated yet.
    joined: Vec<Block>,
    /// Judged queries whose run has begun: a second run means an interleaved run.
    seen: Vec<bool>,
    results: Results,
    runid: String,
    /// A content line was read.
    any: bool,
}

impl Join {
    fn new(nq: usize) -> Join {
        Join {
            open: None,
            joined: Vec::new(),
            seen: vec![false; nq],
            results: vec![None; nq],
            runid: String::new(),
            any: false,
        }
    }

    /// Adds the next piece; `None` when a judged query begins a second run.
    fn add(&mut self, p: Piece) -> Option<()> {
        if !p.tag.is_empty() {
            self.runid = p.tag;
        }
        let Some(first) = p.first else {
            return Some(());
        };
        self.any = true;
        match &mut self.open {
            Some(open) if open.qid == first.qid => open.append(&first),
            _ => {
                self.close();
                self.begin(first.q)?;
                self.open = Some(first);
            }
        }
        if p.middle.is_empty() && p.last.is_none() {
            return Some(());
        }
        // The first run ended inside the piece.
        self.close();
        for (q, out) in p.middle {
            self.begin(Some(q))?;
            self.results[q] = Some(out);
        }
        let last = p
            .last
            .expect("a piece with runs after its first has a last");
        self.begin(last.q)?;
        self.open = Some(last);
        Some(())
    }

    fn close(&mut self) {
        if let Some(open) = self.open.take() {
            self.joined.push(open);
        }
    }

    fn begin(&mut self, q: Option<usize>) -> Option<()> {
        if let Some(q) = q {
            if std::mem::replace(&mut self.seen[q], true) {
                return None;
            }
        }
        Some(())
    }

    /// Evaluates the joined runs (a judged one is checked for duplicates, as the sequential
    /// reader checks it).
    fn evaluate(&mut self, ctx: &Ctx<'_, '_>) -> Option<()> {
        let outs: Option<Vec<Option<QueryOut>>> = self
            .joined
            .par_iter()
            .map_init(Scratch::default, |scratch, b| ctx.finish(b, scratch).ok())
            .collect();
        for (b, out) in self.joined.drain(..).zip(outs?) {
            if let Some(out) = out {
                self.results[b.q.expect("judged")] = Some(out);
            }
        }
        Some(())
    }
}
