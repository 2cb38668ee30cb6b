//! ranklab's evaluator: trec_eval 10.0-exact retrieval measures, TREC run and qrels files, paired
//! statistics and the comparison of runs, as `ranklab eval` and `ranklab compare` run them and
//! as the `treclab` Python package binds them. Nothing here searches or runs a model: the crate
//! depends on no search engine (tantivy), no ONNX Runtime, candle or fastembed, and not on
//! `ranklab-engine`, so a program that only evaluates runs builds it in seconds.
//!
//! - [`trec`]: TREC run and qrels files (a streaming parser, a writer) and the evaluation of a
//!   run against qrels, one query block at a time.
//! - [`metrics`]: one file per measure, trec_eval 10.0 conventions; [`metrics::Selection`]
//!   parses `-m` specifications.
//! - [`stats`]: paired statistics (randomization test, bootstrap CI, win/tie/loss, Holm, power,
//!   agreement).
//! - [`compare`]: paired comparison of TREC runs against a baseline (`ranklab compare`).
//! - [`table`]: typed tables rendered as Markdown, CSV and JSON, byte-for-byte stable.
//! - [`warranty`]: the Judged@k warning and the power sentence shared by reports and `compare`.
//! - [`root`]: the suite repository's root and paths as reports show them.
//!
//! Evaluating a run against qrels, as `ranklab eval -m map -m P.5` does:
//!
//! ```
//! use ranklab_eval::metrics::{Measure, Selection};
//! use ranklab_eval::trec::{evaluate_run, EvalOptions, Qrels};
//!
//! let dir = tempfile::tempdir()?;
//! let (qrels, run) = (dir.path().join("qrels"), dir.path().join("run"));
//! // Query q1 judges d1 and d3 relevant and d2 not; the run ranks d1, d2, d3.
//! std::fs::write(&qrels, "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 1\n")?;
//! std::fs::write(&run, "q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d3 3 1.0 r\n")?;
//! let qrels = Qrels::read(&qrels)?;
//! let selection = Selection::from_specs(&["map", "P.5"])?;
//! let opts = EvalOptions { params: selection.params.clone(), ..EvalOptions::default() };
//! let eval = evaluate_run(&qrels, &run, &selection.measures, &opts)?;
//! // By hand: AP = (1/1 + 2/3) / 2 = 0.8333; P@5 = 2 relevant / 5 = 0.4 (trec_eval divides
//! // by the cutoff even when fewer documents were retrieved).
//! let value = |m: Measure| eval.summary[eval.measures.iter().position(|x| *x == m).unwrap()];
//! assert!((value(Measure::Map) - 5.0 / 6.0).abs() < 1e-12);
//! assert_eq!(value(Measure::P(5)), 0.4);
//! assert_eq!(eval.num_q, 1);
//! # Ok::<(), anyhow::Error>(())
//! ```

#![warn(missing_docs, unreachable_pub)]

pub mod compare;
pub mod metrics;
pub mod root;
pub mod stats;
pub mod table;
pub mod trec;
pub mod warranty;
