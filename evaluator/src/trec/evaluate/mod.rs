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
//! A large run file is read on every core ([`parallel`]): cut into chunks of whole lines, each
//! chunk split and its whole queries evaluated on its own thread, the queries cut by chunk
//! boundaries joined in file order; the values are the sequential reader's, to the bit, and
//! anything unusual (an error, an interleaved run) is left to the sequential reader.
//!
//! The parts: [`index`] interns the qrels; [`block`] holds one query's lines and ranks its judged
//! documents; [`query`] turns a block into values; [`sequential`] is the one-pass reader and the
//! buffered fallback; [`parallel`] the chunked reader.
//!
//! Conventions: queries of the run absent from the qrels are ignored; a qrels query absent from
//! the run is an error unless [`EvalOptions::complete`] (trec_eval `-c`), in which case it counts
//! 0 in every average (its `num_rel` still counts); averages are taken over the qrels' queries in
//! qrels order, as trec_eval accumulates them, so sums match to the last bit.

mod block;
mod index;
mod parallel;
mod query;
mod sequential;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::error::{Location, TrecError};
use super::qrels::Qrels;
use crate::metrics::{Measure, Params};
use index::Index;
use query::{Ctx, Results};
pub use sequential::RunFeed;
use sequential::{buffered, stream};

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

/// Evaluates the run file at `run` against `qrels`. A regular file of a few MiB or more is read
/// on every thread of rayon's pool (`RAYON_NUM_THREADS=1`: one thread, the sequential reader),
/// with the same results as the sequential reader, to the bit ([`parallel`]).
/// `RANKLAB_EVAL_CHUNK=BYTES` forces the parallel reader with chunks of that many bytes (at least
/// 16) on any regular file, on any number of threads: the tests use it on small files.
pub fn evaluate_run(
    qrels: &Qrels,
    run: &Path,
    measures: &[Measure],
    opts: &EvalOptions,
) -> Result<Evaluation, TrecError> {
    let file = ranklab_input::open(run)
        .map(|(file, _)| file)
        .map_err(|source| TrecError::Io {
            path: run.to_path_buf(),
            source,
        })?;
    let split = chunking(&file);
    evaluate_with(qrels, &file, run, measures, opts, |ctx| {
        split.and_then(|(size, chunk)| parallel::evaluate(ctx, &file, size, chunk))
    })
}

/// The file's size and the chunk size when [`evaluate_run`] reads it in parallel.
fn chunking(file: &File) -> Option<(usize, usize)> {
    let meta = file.metadata().ok().filter(|m| m.is_file())?;
    let size = usize::try_from(meta.len()).ok()?;
    let forced = std::env::var("RANKLAB_EVAL_CHUNK")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok());
    match forced {
        Some(chunk) => Some((size, chunk.max(16))),
        None if rayon::current_num_threads() > 1 && size >= 4 * parallel::CHUNK => {
            Some((size, parallel::CHUNK))
        }
        None => None,
    }
}

/// Evaluates a run read from `reader` (`path` names it in messages), with the sequential
/// reader. Seekable, so that an interleaved run can be read a second time.
pub fn evaluate_reader<R: Read + Seek>(
    qrels: &Qrels,
    reader: R,
    path: &Path,
    measures: &[Measure],
    opts: &EvalOptions,
) -> Result<Evaluation, TrecError> {
    evaluate_with(qrels, reader, path, measures, opts, |_| None)
}

/// Evaluates with `fast` when it gives results, else with the sequential reader from the
/// reader's start (`fast` must not move the reader: the parallel reader uses positioned reads).
fn evaluate_with<R: Read + Seek>(
    qrels: &Qrels,
    mut reader: R,
    path: &Path,
    measures: &[Measure],
    opts: &EvalOptions,
    fast: impl FnOnce(&Ctx<'_, '_>) -> Option<(Results, String)>,
) -> Result<Evaluation, TrecError> {
    let index = index_for(qrels, opts);
    let ctx = Ctx {
        index: &index,
        measures,
        opts,
        path,
        relstring: measures.contains(&Measure::Relstring),
    };
    let (results, runid, interleaved) = match fast(&ctx) {
        Some((results, runid)) => (results, runid, false),
        None => match stream(&ctx, &mut reader)? {
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
        },
    };
    conclude(&ctx, qrels, results, runid, interleaved)
}

/// The qrels interned for `opts`: every judged document is kept when a setting reads
/// non-relevant judgments, else only those that can change a measure.
fn index_for<'q>(qrels: &'q Qrels, opts: &EvalOptions) -> Index<'q> {
    let all_judged = opts.all_judged || opts.judged_only || opts.params.has_custom_gains();
    Index::new(qrels, opts.rel_level, all_judged)
}

/// The evaluation from every judged query's values (`results`, in qrels order): a query the run
/// lacks is an error, or counts 0 under [`EvalOptions::complete`]; the summary sums in qrels
/// order, as trec_eval accumulates.
fn conclude(
    ctx: &Ctx<'_, '_>,
    qrels: &Qrels,
    mut results: Results,
    runid: String,
    interleaved: bool,
) -> Result<Evaluation, TrecError> {
    let (measures, opts, path, index) = (ctx.measures, ctx.opts, ctx.path, ctx.index);
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
