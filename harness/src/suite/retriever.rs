//! The first-stage retriever a configuration names.

use serde::Deserialize;

/// The first-stage retriever of a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retriever {
    /// tantivy BM25 only.
    Bm25,
    /// Bi-encoder only.
    Dense,
    /// RRF of BM25 and the bi-encoder.
    Fusion,
    /// A learned model (`model:`) over the union of the BM25 and bi-encoder lists.
    Learned,
    /// An engine outside ranklab (`engine:`), see [`crate::external`].
    External,
}
