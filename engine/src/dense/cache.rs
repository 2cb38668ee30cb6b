//! The embedding cache: section and query vectors on disk, so a rerun does no model work.
//!
//! One checked record file per embedder identity, `<root>/embeddings/<sha256(identity)>.emb`
//! (format and integrity rules in `models::record_file`): the identity names the model file's
//! sha256, the max length, pooling, normalization and embedding scheme, so anything that
//! changes a vector changes the file; within it a record's key is the sha256 of the exact text
//! embedded (query instruction included). A damaged entry is reported, discarded and
//! recomputed; a vector read back is bit-identical to the one computed.

use std::path::Path;
use std::sync::Mutex;

use super::Embedder;
use crate::models::keyed::KeyedCache;
use crate::models::sha256;
use crate::{Error, Result};

/// Cache counters. `hits + misses` is the number of texts asked for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Texts whose vector came from the cache.
    pub hits: usize,
    /// Texts embedded by the model (each distinct text once).
    pub misses: usize,
    /// Misses whose entry was on disk but damaged (discarded and recomputed).
    pub rebuilt: usize,
}

impl CacheStats {
    /// Adds another run's counts.
    pub fn add(&mut self, other: CacheStats) {
        self.hits += other.hits;
        self.misses += other.misses;
        self.rebuilt += other.rebuilt;
    }
}

impl std::fmt::Display for CacheStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cached, {} computed, {} rebuilt",
            self.hits, self.misses, self.rebuilt
        )
    }
}

/// Vectors of one embedder, keyed by text.
#[derive(Debug)]
pub struct EmbeddingCache {
    records: KeyedCache,
    dim: usize,
    totals: Mutex<CacheStats>,
}

/// How many texts are embedded between progress calls.
const CHUNK: usize = 32;

/// The record kind in the file header (changing it invalidates every vector file).
const KIND: &str = "embeddings";

impl EmbeddingCache {
    /// The cache of `embedder` under `dir` (normally `ModelStore::embeddings_dir()`), read and
    /// verified now; damaged entries are reported on stderr.
    pub fn open(dir: &Path, embedder: &dyn Embedder) -> Result<EmbeddingCache> {
        Ok(EmbeddingCache {
            records: KeyedCache::open(dir, "emb", KIND, embedder.identity(), embedder.dim() * 4)?,
            dim: embedder.dim(),
            totals: Mutex::new(CacheStats::default()),
        })
    }

    /// The vector length recorded for the embedder whose identity is `identity_prefix` followed
    /// by ` dim=<n>` (the form [`super::FastembedEmbedder`] gives), read from the headers of the
    /// cache files under `dir` without loading the model or any vector. None when no such file
    /// exists (the cache is cold: the model must be loaded to know) or the headers disagree.
    pub fn recorded_dim(dir: &Path, identity_prefix: &str) -> Option<usize> {
        let lead = format!("{identity_prefix} dim=");
        let dims: std::collections::BTreeSet<usize> = KeyedCache::recorded(dir, "emb", KIND)
            .into_iter()
            .filter_map(|(identity, payload)| {
                let dim: usize = identity.strip_prefix(&lead)?.parse().ok()?;
                (dim > 0 && payload == dim * 4).then_some(dim)
            })
            .collect();
        match dims.len() {
            1 => dims.into_iter().next(),
            _ => None,
        }
    }

    /// A cache that lives in memory only (nothing read or written).
    pub fn in_memory(embedder: &dyn Embedder) -> EmbeddingCache {
        EmbeddingCache {
            records: KeyedCache::in_memory(KIND, embedder.identity(), embedder.dim() * 4),
            dim: embedder.dim(),
            totals: Mutex::new(CacheStats::default()),
        }
    }

    /// The file backing this cache (None in memory).
    pub fn path(&self) -> Option<std::path::PathBuf> {
        self.records.path()
    }

    /// Damaged entries found (and discarded) when the file was opened.
    pub fn discarded_at_open(&self) -> usize {
        self.records.discarded_at_open()
    }

    /// Counts since the cache was opened.
    pub fn stats(&self) -> CacheStats {
        *self.totals.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The vectors of `texts`, in order: from the cache, or embedded (each distinct text once)
    /// and stored. `embedder` must be the one the cache was opened for.
    pub fn embed(
        &self,
        embedder: &mut dyn Embedder,
        texts: &[&str],
    ) -> Result<(Vec<Vec<f32>>, CacheStats)> {
        self.embed_with_progress(embedder, texts, &mut |_, _| {})
    }

    /// [`EmbeddingCache::embed`], calling `progress(done, to_compute)` as misses are embedded.
    pub fn embed_with_progress(
        &self,
        embedder: &mut dyn Embedder,
        texts: &[&str],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(Vec<Vec<f32>>, CacheStats)> {
        self.records.check_model("embedder", embedder.identity())?;
        let keys: Vec<[u8; 32]> = texts.iter().map(|t| sha256(t.as_bytes())).collect();
        let lookup = self.records.lookup(&keys, decode);
        let mut out = lookup.found;
        let todo = lookup.todo;
        let stats = CacheStats {
            hits: lookup.served,
            misses: todo.len(),
            rebuilt: lookup.rebuilt,
        };
        progress(0, todo.len());
        for (done, chunk) in todo.chunks(CHUNK).enumerate() {
            let batch: Vec<&str> = chunk.iter().map(|(i, _)| texts[*i]).collect();
            let vectors = embedder.embed(&batch)?;
            if vectors.len() != batch.len() {
                return Err(self.model_error(format!(
                    "returned {} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                )));
            }
            for ((first, _), v) in chunk.iter().zip(&vectors) {
                if v.len() != self.dim || v.iter().any(|x| !x.is_finite()) {
                    return Err(self.model_error(format!(
                        "invalid vector (length {}, expected {}, or a non-finite value) for text {:?}",
                        v.len(),
                        self.dim,
                        truncate(texts[*first], 80)
                    )));
                }
            }
            let bytes: Vec<Vec<u8>> = vectors.iter().map(|v| encode(v)).collect();
            self.records.store(
                chunk
                    .iter()
                    .zip(&bytes)
                    .map(|((first, _), b)| (keys[*first], b.as_slice())),
            )?;
            for ((_, positions), v) in chunk.iter().zip(vectors) {
                for &p in positions {
                    out[p] = Some(v.clone());
                }
            }
            progress((done * CHUNK + chunk.len()).min(todo.len()), todo.len());
        }
        self.totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(stats);
        Ok((
            out.into_iter()
                .map(|v| v.expect("every position filled"))
                .collect(),
            stats,
        ))
    }

    fn model_error(&self, message: String) -> Error {
        Error::Model {
            model: self.records.identity().to_string(),
            message,
        }
    }

    /// Writes new entries to disk (atomically). Also done on drop, with a warning on failure.
    pub fn flush(&self) -> Result<()> {
        self.records.flush()
    }
}

fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

pub(crate) fn truncate(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::testing::HashEmbedder;

    #[test]
    fn cold_and_warm_give_identical_bits_and_count_hits() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = HashEmbedder::new(16);
        let texts = ["alpha", "beta", "alpha", "gamma"];
        let cold = {
            let cache = EmbeddingCache::open(dir.path(), &e).unwrap();
            let (v, s) = cache.embed(&mut e, &texts).unwrap();
            assert_eq!(
                s,
                CacheStats {
                    hits: 1,
                    misses: 3,
                    rebuilt: 0
                }
            );
            assert_eq!(e.calls(), 3);
            v
        };
        let cache = EmbeddingCache::open(dir.path(), &e).unwrap();
        let (warm, s) = cache.embed(&mut e, &texts).unwrap();
        assert_eq!(
            s,
            CacheStats {
                hits: 4,
                misses: 0,
                rebuilt: 0
            }
        );
        assert_eq!(e.calls(), 3, "a warm cache does no model work");
        let bits = |v: &Vec<Vec<f32>>| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&cold), bits(&warm));
    }

    #[test]
    fn the_vector_length_is_read_from_the_cache_header_of_that_identity_only() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            EmbeddingCache::recorded_dim(dir.path(), "m x=1"),
            None,
            "no file"
        );
        let mut e = HashEmbedder::with_exact_identity(24, "m x=1 dim=24");
        let cache = EmbeddingCache::open(dir.path(), &e).unwrap();
        cache.embed(&mut e, &["a"]).unwrap();
        drop(cache);
        assert_eq!(EmbeddingCache::recorded_dim(dir.path(), "m x=1"), Some(24));
        assert_eq!(EmbeddingCache::recorded_dim(dir.path(), "m x=2"), None);
        assert_eq!(
            EmbeddingCache::recorded_dim(dir.path(), "m"),
            None,
            "prefix"
        );
        // A file renamed to another identity's name is not that identity's cache.
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::rename(&file, dir.path().join(format!("{}.emb", "0".repeat(64)))).unwrap();
        assert_eq!(EmbeddingCache::recorded_dim(dir.path(), "m x=1"), None);
    }

    #[test]
    fn a_cache_opened_for_another_embedder_is_refused() {
        let e = HashEmbedder::new(8);
        let mut other = HashEmbedder::with_identity(8, "other");
        let cache = EmbeddingCache::in_memory(&e);
        assert!(cache.embed(&mut other, &["x"]).is_err());
    }
}
