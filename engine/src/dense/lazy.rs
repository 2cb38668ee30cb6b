//! A bi-encoder loaded only when a text misses the cache.
//!
//! Opening a cache needs the embedder's identity and vector length, not a running model: the
//! identity comes from the model's pin or manifest and the settings
//! ([`FastembedEmbedder::identity_prefix`]), the vector length from the header of the cache
//! file of that identity ([`EmbeddingCache::recorded_dim`]). So [`LazyEmbedder::open`] creates
//! no ONNX session when the cache already holds vectors of this model; the model is verified and
//! loaded on the first [`Embedder::embed`] call, which the cache makes only for a miss. A fully
//! warm run therefore loads no model at all. With no cache file for the model yet (cold), the
//! length is unknown and the model is loaded at once.
//!
//! Guarantee: the identity and length a lazy embedder reports are those of the loaded model; a
//! loaded model that reports another is an error, never a silent mix of vectors.

use super::fastembed::query_instruction_for;
use super::{Embedder, EmbedderOptions, EmbeddingCache, FastembedEmbedder};
use crate::models::{ModelKind, ModelStore};
use crate::{Error, Result};

/// Loads the model behind a [`LazyEmbedder`].
pub type EmbedderLoader = Box<dyn FnMut() -> Result<Box<dyn Embedder>> + Send>;

/// An [`Embedder`] whose model is loaded on its first `embed` call.
pub struct LazyEmbedder {
    identity: String,
    dim: usize,
    query_instruction: String,
    load: EmbedderLoader,
    loaded: Option<Box<dyn Embedder>>,
}

impl std::fmt::Debug for LazyEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyEmbedder")
            .field("identity", &self.identity)
            .field("loaded", &self.loaded.is_some())
            .finish_non_exhaustive()
    }
}

impl LazyEmbedder {
    /// An embedder that will be `load`ed on first use and must then report `identity` and `dim`.
    pub fn new(
        identity: String,
        dim: usize,
        query_instruction: String,
        load: EmbedderLoader,
    ) -> LazyEmbedder {
        LazyEmbedder {
            identity,
            dim,
            query_instruction,
            load,
            loaded: None,
        }
    }

    /// An embedder already loaded.
    pub fn loaded(embedder: Box<dyn Embedder>) -> LazyEmbedder {
        LazyEmbedder {
            identity: embedder.identity().to_string(),
            dim: embedder.dim(),
            query_instruction: embedder.query_instruction().to_string(),
            load: Box::new(|| unreachable!("already loaded")),
            loaded: Some(embedder),
        }
    }

    /// The fastembed model `id` of `store` with `options`: not loaded when the store's vector
    /// cache knows its length, loaded (fetched and verified first) now when it does not.
    pub fn open(store: &ModelStore, id: &str, options: &EmbedderOptions) -> Result<LazyEmbedder> {
        let model = store.describe(id)?;
        model.expect_kind(ModelKind::BiEncoder, "a rerank model")?;
        let prefix = FastembedEmbedder::identity_prefix(&model, options);
        let dim = EmbeddingCache::recorded_dim(&store.embeddings_dir(), &prefix);
        let (store, id, options) = (store.clone(), id.to_string(), options.clone());
        let mut load: EmbedderLoader = Box::new(move || {
            let dir = store.ensure_model(&id)?;
            Ok(Box::new(FastembedEmbedder::load(&dir, &options)?) as Box<dyn Embedder>)
        });
        Ok(match dim {
            Some(dim) => LazyEmbedder::new(
                format!("{prefix} dim={dim}"),
                dim,
                query_instruction_for(&model.id).to_string(),
                load,
            ),
            None => LazyEmbedder::loaded(load()?),
        })
    }

    /// Whether the model has been loaded.
    pub fn is_loaded(&self) -> bool {
        self.loaded.is_some()
    }

    /// The model, loaded now if it was not; its identity and length are checked.
    pub fn model(&mut self) -> Result<&mut dyn Embedder> {
        if self.loaded.is_none() {
            let e = (self.load)()?;
            if e.identity() != self.identity || e.dim() != self.dim {
                return Err(Error::Model {
                    model: self.identity.clone(),
                    message: format!(
                        "the loaded model reports identity {:?} ({} dimensions), not the one its \
                         cache was opened for; delete the model and run `ranklab models fetch`",
                        e.identity(),
                        e.dim()
                    ),
                });
            }
            self.loaded = Some(e);
        }
        Ok(self.loaded.as_deref_mut().expect("loaded above"))
    }
}

impl Embedder for LazyEmbedder {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn query_instruction(&self) -> &str {
        &self.query_instruction
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.model()?.embed(texts)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::dense::testing::HashEmbedder;

    /// A lazy stand-in that counts its loads; it loads `HashEmbedder::with_identity(8, name)`.
    fn counted(expected: &HashEmbedder, name: &'static str) -> (LazyEmbedder, Arc<AtomicUsize>) {
        let loads = Arc::new(AtomicUsize::new(0));
        let l = loads.clone();
        let lazy = LazyEmbedder::new(
            expected.identity().to_string(),
            expected.dim(),
            String::new(),
            Box::new(move || {
                l.fetch_add(1, Ordering::Relaxed);
                Ok(Box::new(HashEmbedder::with_identity(8, name)) as Box<dyn Embedder>)
            }),
        );
        (lazy, loads)
    }

    #[test]
    fn a_warm_cache_loads_no_model_and_the_first_miss_loads_it_once() {
        let mut direct = HashEmbedder::with_identity(8, "m");
        let cache = EmbeddingCache::in_memory(&direct);
        let (expected, _) = cache.embed(&mut direct, &["a", "b"]).unwrap();
        let (mut lazy, loads) = counted(&direct, "m");

        let (warm, stats) = cache.embed(&mut lazy, &["a", "b", "a"]).unwrap();
        assert_eq!((stats.hits, stats.misses), (3, 0));
        assert_eq!(
            loads.load(Ordering::Relaxed),
            0,
            "every text cached: no load"
        );
        assert!(!lazy.is_loaded());
        assert_eq!(warm[..2], expected[..]);

        let (cold, stats) = cache.embed(&mut lazy, &["c", "d"]).unwrap();
        assert_eq!(stats.misses, 2);
        assert_eq!(loads.load(Ordering::Relaxed), 1, "a miss loads the model");
        assert_eq!(cold, direct.embed(&["c", "d"]).unwrap(), "same vectors");
        cache.embed(&mut lazy, &["e"]).unwrap();
        assert_eq!(loads.load(Ordering::Relaxed), 1, "loaded once");
    }

    #[test]
    fn a_loaded_model_of_another_identity_is_refused() {
        let direct = HashEmbedder::with_identity(8, "m");
        let (mut lazy, _) = counted(&direct, "not-m");
        let err = lazy.embed(&["x"]).unwrap_err().to_string();
        assert!(err.contains("not-m"), "{err}");
    }
}
