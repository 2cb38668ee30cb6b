//! ranklab-engine: the minimal search engine that ranklab evaluates.
//!
//! A corpus of records is split into sections; a first stage ranks documents by their best
//! section (BM25, a bi-encoder, or the reciprocal rank fusion of both); a cross-encoder may
//! reorder a shortlist; and the lifecycle policy demotes superseded, deprecated or amending
//! records. Every ranking is a list of [`ranking::Hit`] in one total order (score descending,
//! then id descending), the order trec_eval reads a run in.
//!
//! # Example: three records, BM25, fusion, the lifecycle policy
//!
//! The query asks how failed refunds are retried. The old record says "refund" and "retry"
//! most often, so BM25 ranks it first; but it is superseded, and the current wiring takes the
//! superseded penalty off its score, so its successor wins.
//!
//! ```rust
//! use std::path::Path;
//!
//! use ranklab_engine::corpus::{markdown::parse_record, Corpus};
//! use ranklab_engine::fusion::{rrf_ranked, RrfParams};
//! use ranklab_engine::lexical::{Bm25Params, LexicalIndex};
//! use ranklab_engine::policy::{current, Weights};
//!
//! # fn main() -> ranklab_engine::Result<()> {
//! let old = "---
//! id: refunds-v1
//! title: Refund retries
//! lifecycle: superseded
//! superseded_by: refunds-v2
//! ---
//! Retry a failed refund every hour; retry refund webhooks too.
//! ";
//! let new = "---
//! id: refunds-v2
//! title: Refund retries with back-off
//! ---
//! A failed refund is retried with exponential back-off.
//! ";
//! let other = "---
//! id: ledger
//! title: Ledger entries
//! ---
//! Every payment, payout and refund posts two ledger entries.
//! ";
//! let docs = [("refunds-v1.md", old), ("refunds-v2.md", new), ("ledger.md", other)]
//!     .iter()
//!     .map(|(file, text)| parse_record(Path::new(file), text.as_bytes()))
//!     .collect::<ranklab_engine::Result<Vec<_>>>()?;
//! let corpus = Corpus::new("example", docs)?;
//! let ids = |hits: &[ranklab_engine::ranking::Hit]| -> Vec<String> {
//!     hits.iter().map(|h| corpus.id(h.doc).to_string()).collect()
//! };
//!
//! // First stage: BM25 (k1 = 0.9, b = 0.4) over sections, a document scored by its best one.
//! let index = LexicalIndex::build(&corpus)?;
//! let query = "how are failed refunds retried";
//! let bm25 = index.search(&corpus, query, 10, Bm25Params::default())?;
//! assert_eq!(ids(&bm25), ["refunds-v1", "refunds-v2", "ledger"]);
//!
//! // Fusion: RRF gives a document 1 / (k + rank) per list. BM25 fused with itself (a real
//! // configuration fuses BM25 with the dense list) keeps the order, each score 2 / (60 + rank).
//! let fused = rrf_ranked(&[&bm25, &bm25], RrfParams { k: 60.0, depth: 10 }, corpus.id_rank());
//! assert_eq!(ids(&fused), ids(&bm25));
//! let scores: Vec<f32> = fused.iter().map(|h| h.score).collect();
//! let by_hand: Vec<f32> = [61.0, 62.0, 63.0].iter().map(|d: &f64| (2.0 / d) as f32).collect();
//! assert_eq!(scores, by_hand);
//!
//! // Policy, current wiring: each score is min-max normalized over the list (best 1, worst 0:
//! // refunds-v1 1, refunds-v2 (1/62 - 1/63) / (1/61 - 1/63) = 61/124 ~ 0.49, ledger 0), then
//! // the record's penalties come off. refunds-v1 is superseded: 1 - 0.75 = 0.25 < 0.49.
//! let weights = Weights {
//!     superseded: 0.75,
//!     deprecated: 1.0,
//!     amendment: 0.0,
//!     editorial_only: 0.0,
//! };
//! let ranked = current::rank(&corpus, &fused, &weights);
//! assert_eq!(ids(&ranked), ["refunds-v2", "refunds-v1", "ledger"]);
//! assert_eq!(ranked[1].score, 0.25);
//! assert!((ranked[0].score - 61.0 / 124.0).abs() < 1e-6);
//!
//! // Without penalties the policy keeps the first stage's order: the penalty alone moved it.
//! let unpenalized = current::rank(&corpus, &fused, &Weights::ZERO);
//! assert_eq!(ids(&unpenalized), ids(&bm25));
//! # Ok(())
//! # }
//! ```
//!
//! # Modules
//!
//! - [`corpus`]: records (Markdown with front matter, or BEIR jsonl) split into sections.
//! - [`lexical`]: tantivy BM25 over sections; a document ranks by its best section.
//! - [`dense`]: a bi-encoder over sections ([`dense::Embedder`]), exact cosine top-k, on-disk cache.
//! - [`fusion`]: reciprocal rank fusion of document rankings.
//! - [`learn`]: learning to rank (coordinate ascent, LambdaMART) over a feature matrix.
//! - [`rerank`]: a cross-encoder ([`rerank::CrossEncoder`]) that reorders a shortlist.
//! - [`policy`]: lifecycle/history demotion, legacy and current wiring.
//! - [`ranking`]: the hit type and the one total order every ranking uses.
//! - [`suggest`]: the known names nearest to a misspelt one ("did you mean").
//! - [`models`]: the pinned model catalogue, model cache and ONNX Runtime location.
//! - [`yaml`]: the one YAML reader and its error messages (file:line:column, what to do).
//! - [`error`]: the one error type ([`Error`]), carrying the file, line and id involved.
//! - [`atomic`]: atomic writes of a file (temporary + rename) and of a whole directory.
//! - [`leftovers`]: sweeps the temporaries a killed run left behind.
//! - [`input`]: the bounds on input files (regular files only, sizes, line and id lengths,
//!   YAML depth).

#![warn(missing_docs)]

pub mod atomic;
pub mod corpus;
pub mod dense;
pub mod error;
pub mod fusion;
pub mod learn;
pub use ranklab_input as input;
pub mod leftovers;
pub mod lexical;
pub mod models;
pub mod policy;
pub mod ranking;
pub mod rerank;
pub use ranklab_input::suggest;
pub mod yaml;

pub use error::{Error, Result};
