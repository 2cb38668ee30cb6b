//! ranklab: replay retrieval task suites on the engine, compute trec_eval-exact metrics, and
//! write ADR-ready reports, gates and tuned weights.
//!
//! - [`cli`]: argument parsing and dispatch; exit codes 0 ok, 1 failed check, 2 error.
//! - [`exit`]: the exit codes of every command, one rule ([`exit::Exit`]).
//! - `cmd`: one file per subcommand.
//! - [`suite`]: task suites and experiment files (YAML), suite discovery, BEIR as a suite.
//! - [`suite_run`]: a suite's run: replay, paired checks, curves and costs, then the reports'
//!   rendering of what they produced.
//! - [`compare`]: paired comparison of TREC runs against a baseline.
//! - [`metrics`]: one file per measure, trec_eval 10.0 conventions.
//! - [`paired`]: paired legacy-vs-current assertions.
//! - [`pool`]: TREC pooling: the unjudged documents in the top K of every run, to be judged.
//! - `judge`: `ranklab judge`, a local page (127.0.0.1) to grade the pooled documents.
//! - [`judgments`]: `tasks/<suite>/judgments.yaml`, the grades given, merged into the suite's.
//! - [`trec`]: TREC run and qrels files (streaming parser, writer).
//! - [`replay`]: runs every task under every configuration.
//! - [`engine_spec`]: `engine:` of a configuration (an external engine's settings), checked.
//! - [`external`]: engines outside ranklab as a first stage (a child process speaking JSON lines,
//!   or HTTP with presets for OpenSearch, Solr, Vespa, ...), and their recordings.
//! - [`report`]: typed tables to Markdown, CSV (the `csv` crate) and JSON; atomic writes.
//! - [`finetune`]: training pairs for fine-tuning a cross-encoder, folds by task (no leaks).
//! - [`gate`]: the CI regression gate (baseline file, one-sided verdicts).
//! - `tune`: penalty weights tuned on an integer grid against dated merges.
//! - `cluster`: model work on a Ray cluster (`--cluster ray://HOST:PORT`).
//! - [`stats`]: paired statistics (randomization test, bootstrap CI, win/tie/loss, Holm).
//! - [`root`]: the suite repository's root (nearest `ranklab.toml` or `tasks/`).
//! - [`stats_cache`]: bootstrap intervals, sign-flip p-values and power searches kept between runs.
//! - `progress`: indicatif bars on a terminal; otherwise a plain line every 15 s.
//! - `help_formats`: `ranklab help formats`, docs/formats.md built into the binary.

#![warn(missing_docs, unreachable_pub)]

pub use ranklab_eval::{compare, metrics, stats, trec};

pub mod cli;
pub(crate) mod cluster;
pub(crate) mod cmd;
pub mod engine_spec;
pub mod exit;
pub mod external;
pub mod finetune;
pub mod gate;
pub(crate) mod help_formats;
pub(crate) mod judge;
pub mod judgments;
pub mod paired;
pub mod pool;
pub(crate) mod progress;
pub mod replay;
pub mod report;
pub mod root;
pub mod stats_cache;
pub mod suite;
pub mod suite_run;
pub(crate) mod tune;
