//! ranklab-engine: the minimal search engine that ranklab evaluates.
//!
//! - [`corpus`]: records (Markdown with front matter, or BEIR jsonl) split into sections.
//! - [`lexical`]: tantivy BM25 over sections; a document ranks by its best section.
//! - [`dense`]: a bi-encoder over sections ([`dense::Embedder`]), exact cosine top-k, on-disk cache.
//! - [`fusion`]: reciprocal rank fusion of document rankings.
//! - [`rerank`]: a cross-encoder ([`rerank::CrossEncoder`]) that reorders a shortlist.
//! - [`policy`]: lifecycle/history demotion, legacy and current wiring.
//! - [`ranking`]: the hit type and the one total order every ranking uses.
//! - [`suggest`]: the known names nearest to a misspelt one ("did you mean").
//! - [`models`]: the pinned model catalogue, model cache and ONNX Runtime location.

#![warn(missing_docs)]

pub mod atomic;
pub mod corpus;
pub mod dense;
pub mod error;
pub mod fusion;
pub mod leftovers;
pub mod lexical;
pub mod models;
pub mod policy;
pub mod ranking;
pub mod rerank;
pub mod suggest;
pub mod yaml;

pub use error::{Error, Result};
