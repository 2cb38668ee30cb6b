//! A deterministic, model-free [`Embedder`] for unit tests: a hashed bag of words.
//!
//! Never used for anything a report shows. Each lowercase alphanumeric word adds 1 to one
//! of `dim` buckets (chosen by the word's sha256) and the vector is L2-normalized, so texts
//! sharing words are close and a text's vector depends on nothing but the text.

use super::Embedder;
use crate::models::sha256;
use crate::Result;

/// The test stand-in for a bi-encoder.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dim: usize,
    identity: String,
    calls: usize,
}

impl HashEmbedder {
    /// A stand-in with `dim` dimensions.
    pub fn new(dim: usize) -> HashEmbedder {
        HashEmbedder::with_identity(dim, "hash-bow")
    }

    /// A stand-in with its own identity (to test cache separation).
    pub fn with_identity(dim: usize, name: &str) -> HashEmbedder {
        HashEmbedder {
            dim,
            identity: format!("{name} dim={dim} (test stand-in)"),
            calls: 0,
        }
    }

    /// A stand-in whose identity is exactly `identity` (to test what reads identities).
    pub fn with_exact_identity(dim: usize, identity: &str) -> HashEmbedder {
        HashEmbedder {
            identity: identity.to_string(),
            ..HashEmbedder::new(dim)
        }
    }

    /// Texts embedded so far.
    pub fn calls(&self) -> usize {
        self.calls
    }

    /// The vector of one text.
    pub fn vector(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            let h = sha256(word.to_lowercase().as_bytes());
            let bucket = u64::from_le_bytes(h[..8].try_into().expect("8 bytes")) % self.dim as u64;
            v[bucket as usize] += 1.0;
        }
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            v.iter_mut().for_each(|x| *x /= norm);
        }
        v
    }
}

impl Embedder for HashEmbedder {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.calls += texts.len();
        Ok(texts.iter().map(|t| self.vector(t)).collect())
    }
}
