//! Semantic retrieval: a bi-encoder over sections, an on-disk vector cache, exact cosine top-k.
//!
//! - [`Embedder`]: the trait; [`FastembedEmbedder`] runs the real ONNX model (bge-small-en-v1.5
//!   int8), [`testing::HashEmbedder`] is the model-free stand-in for unit tests only.
//! - [`EmbeddingCache`]: vectors on disk keyed by embedder identity and text sha256; damaged
//!   entries are detected and recomputed.
//! - [`LazyEmbedder`]: loads the model only when a text misses the cache.
//! - [`DenseIndex`]: every section's vector in one matrix; a document scores by its best section.
//!
//! Guarantee: a text's vector is a function of the text and the embedder identity alone (not of
//! batch composition or cache state), so cold and warm runs give the same bits.

mod cache;
mod fastembed;
mod index;
mod lazy;
pub mod testing;

pub use cache::{CacheStats, EmbeddingCache, Vectors};
pub use fastembed::{
    query_instruction_for, EmbedderOptions, FastembedEmbedder, BGE_QUERY_INSTRUCTION,
};
pub use index::DenseIndex;
pub use lazy::{EmbedderLoader, LazyEmbedder};

use crate::Result;

/// A bi-encoder: text in, fixed-length vector out.
pub trait Embedder: Send {
    /// Everything that determines the vectors: model id, model file sha256, max length,
    /// pooling, normalization, embedding scheme. Keys the cache.
    fn identity(&self) -> &str;
    /// Length of every vector.
    fn dim(&self) -> usize;
    /// One vector per text, in order. A text's vector must not depend on the other texts.
    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Prefix the model expects before a search query (empty for most models; bge v1.5 has one).
    fn query_instruction(&self) -> &str {
        ""
    }
}

/// The text embedded for a search query: the model's query instruction, then the query.
pub fn query_text(embedder: &dyn Embedder, query: &str) -> String {
    format!("{}{query}", embedder.query_instruction())
}

/// The vector of a search query (instruction applied), through the cache.
pub fn embed_query(
    embedder: &mut dyn Embedder,
    cache: &EmbeddingCache,
    query: &str,
) -> Result<Vec<f32>> {
    let text = query_text(embedder, query);
    let (mut v, _) = cache.embed(embedder, &[&text])?;
    Ok(v.pop().expect("one text, one vector"))
}

/// Cosine similarity of two vectors (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    index::dot(&index::normalized(a), &index::normalized(b))
}
