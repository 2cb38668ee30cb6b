//! TREC files: runs (`qid Q0 docno rank score tag`) and qrels (`qid iter docno rel`).
//!
//! - [`run`]: a streaming run reader (large block reads, byte-level splitting, no per-line
//!   allocation) and [`read_run`] for small runs;
//! - [`qrels`]: the qrels reader;
//! - [`evaluate`]: evaluation of a run against qrels with trec_eval's conventions, streaming one
//!   query block at a time (what `ranklab eval` runs);
//! - [`write`]: run lines and qrels that read back exactly;
//! - [`error`]: the one error type, every message naming `file:line[:column]`.
//!
//! Ordering is trec_eval's everywhere: within a query, score descending, ties broken by document
//! id descending in byte order ([`trec_order`]); the rank column is ignored.

pub mod error;
pub mod evaluate;
mod lines;
pub mod qrels;
pub mod run;
pub mod write;

pub use error::{Location, TrecError};
pub use evaluate::{evaluate_reader, evaluate_run, EvalOptions, Evaluation, QueryValues, RunFeed};
pub use qrels::{Qrels, QrelsQuery};
pub use run::{read_run, read_run_where, trec_order, RankedQuery, RunLine, RunReader};
pub use write::{format_run_line, push_run_line, write_qrels};
