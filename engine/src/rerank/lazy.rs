//! A cross-encoder loaded only when a pair misses the score cache.
//!
//! The score cache is keyed by the cross-encoder's identity, which the model's pin or manifest
//! and the options give without a running model ([`FastembedCrossEncoder::identity_of`]). So
//! [`LazyCrossEncoder::open`] creates no ONNX session; the model is verified and loaded on the
//! first [`CrossEncoder::score`] call, which the cache makes only for a missing pair. A run
//! whose pairs are all cached loads no cross-encoder.
//!
//! Guarantee: the loaded model must report the identity the cache was opened for; another is
//! an error, never a silent mix of scores.

use super::prompt::PromptTemplate;
use super::{
    ColbertReranker, CrossEncoder, CrossEncoderOptions, FastembedCrossEncoder, LlmReranker,
};
use crate::models::{ModelKind, ModelStore};
use crate::{Error, Result};

/// Loads the model behind a [`LazyCrossEncoder`].
pub type CrossEncoderLoader = Box<dyn FnMut() -> Result<Box<dyn CrossEncoder>> + Send>;

/// A [`CrossEncoder`] whose model is loaded on its first `score` call.
pub struct LazyCrossEncoder {
    identity: String,
    load: CrossEncoderLoader,
    loaded: Option<Box<dyn CrossEncoder>>,
}

impl std::fmt::Debug for LazyCrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyCrossEncoder")
            .field("identity", &self.identity)
            .field("loaded", &self.loaded.is_some())
            .finish_non_exhaustive()
    }
}

impl LazyCrossEncoder {
    /// A cross-encoder that will be `load`ed on first use and must then report `identity`.
    pub fn new(identity: String, load: CrossEncoderLoader) -> LazyCrossEncoder {
        LazyCrossEncoder {
            identity,
            load,
            loaded: None,
        }
    }

    /// The model `id` of `store` with `options`, not loaded yet (fetched and verified when
    /// first loaded): a fastembed cross-encoder, or a late-interaction model
    /// ([`ColbertReranker`]), which accepts no batch size but 1.
    pub fn open(
        store: &ModelStore,
        id: &str,
        options: &CrossEncoderOptions,
    ) -> Result<LazyCrossEncoder> {
        let model = store.describe(id)?;
        if model.kind == ModelKind::LateInteraction {
            return LazyCrossEncoder::open_late_interaction(store, &model, options);
        }
        if model.kind == ModelKind::Llm {
            return Err(Error::Config(format!(
                "model {id} is an llm, not a cross-encoder; write its rerank stage as \
                 `rerank: {{ llm: {id}, shortlist: N }}` instead of `model: {id}`"
            )));
        }
        model.expect_kind(ModelKind::CrossEncoder, "an embedder")?;
        options.check()?;
        let identity = FastembedCrossEncoder::identity_of(&model, options);
        let (store, id, options) = (store.clone(), id.to_string(), options.clone());
        Ok(LazyCrossEncoder::new(
            identity,
            Box::new(move || {
                let dir = store.ensure_model(&id)?;
                Ok(Box::new(FastembedCrossEncoder::load(&dir, &options)?) as Box<dyn CrossEncoder>)
            }),
        ))
    }

    /// A late-interaction model (ColBERT) as a pair scorer: encoded one text at a time, so a
    /// batch size other than 1 is refused.
    fn open_late_interaction(
        store: &ModelStore,
        model: &crate::models::ModelDir,
        options: &CrossEncoderOptions,
    ) -> Result<LazyCrossEncoder> {
        if options.batch_size != 1 || options.max_length.is_some() {
            return Err(Error::Config(format!(
                "model {} is a late-interaction model: it encodes every text alone, with its own \
                 lengths; remove batch (and max length) from its rerank stage",
                model.id
            )));
        }
        let identity = ColbertReranker::identity_of(model);
        let (store, id, workers) = (store.clone(), model.id.clone(), options.workers);
        Ok(LazyCrossEncoder::new(
            identity,
            Box::new(move || {
                let dir = store.ensure_model(&id)?;
                let model = ColbertReranker::load(&dir, workers)?
                    .with_token_cache(&store.embeddings_dir())?;
                Ok(Box::new(model) as Box<dyn CrossEncoder>)
            }),
        ))
    }

    /// The in-process LLM `id` of `store` asked `prompt` about each pair (yes/no logits,
    /// [`LlmReranker`]), not loaded yet: fetched, verified and loaded on the first missing
    /// pair. A model of another kind is refused, naming how to write its stage.
    pub fn open_llm(
        store: &ModelStore,
        id: &str,
        prompt: &PromptTemplate,
    ) -> Result<LazyCrossEncoder> {
        let model = store.describe(id)?;
        if model.kind != ModelKind::Llm {
            return Err(Error::Config(format!(
                "model {id} is a {}, not an llm; write its rerank stage as \
                 `rerank: {{ model: {id}, shortlist: N }}` instead of `llm: {id}`",
                model.kind
            )));
        }
        let identity = LlmReranker::identity_of(&model, prompt);
        let (store, id, prompt) = (store.clone(), id.to_string(), prompt.clone());
        Ok(LazyCrossEncoder::new(
            identity,
            Box::new(move || {
                let dir = store.ensure_model(&id)?;
                Ok(Box::new(LlmReranker::load(&dir, &prompt)?) as Box<dyn CrossEncoder>)
            }),
        ))
    }

    /// Whether the model has been loaded.
    pub fn is_loaded(&self) -> bool {
        self.loaded.is_some()
    }

    /// The model, loaded now if it was not; its identity is checked.
    pub fn model(&mut self) -> Result<&mut dyn CrossEncoder> {
        if self.loaded.is_none() {
            let ce = (self.load)()?;
            if ce.identity() != self.identity {
                return Err(Error::Model {
                    model: self.identity.clone(),
                    message: format!(
                        "the loaded model reports identity {:?}, not the one its score cache was \
                         opened for; delete the model and run `ranklab models fetch`",
                        ce.identity()
                    ),
                });
            }
            self.loaded = Some(ce);
        }
        Ok(self.loaded.as_deref_mut().expect("loaded above"))
    }
}

impl CrossEncoder for LazyCrossEncoder {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        if passages.is_empty() {
            return Ok(Vec::new());
        }
        self.model()?.score(query, passages)
    }

    /// The loaded model's own `score_many` (its pooled work list), loading it only when some
    /// request has a passage.
    fn score_many(&mut self, requests: &[(&str, Vec<&str>)]) -> Result<Vec<Vec<f32>>> {
        if requests.iter().all(|(_, p)| p.is_empty()) {
            return Ok(vec![Vec::new(); requests.len()]);
        }
        self.model()?.score_many(requests)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::rerank::testing::OverlapCrossEncoder;
    use crate::rerank::{Candidate, ScoreCache};

    fn counted(identity: &str, loads_as: &'static str) -> (LazyCrossEncoder, Arc<AtomicUsize>) {
        let loads = Arc::new(AtomicUsize::new(0));
        let l = loads.clone();
        let lazy = LazyCrossEncoder::new(
            identity.to_string(),
            Box::new(move || {
                l.fetch_add(1, Ordering::Relaxed);
                Ok(Box::new(OverlapCrossEncoder::with_identity(loads_as)) as Box<dyn CrossEncoder>)
            }),
        );
        (lazy, loads)
    }

    fn cand(p: &str) -> Candidate {
        Candidate {
            doc_id: p.to_string(),
            passage: p.into(),
        }
    }

    #[test]
    fn cached_pairs_load_no_model_and_the_first_missing_pair_loads_it_once() {
        let mut direct = OverlapCrossEncoder::with_identity("ce");
        let cache = ScoreCache::in_memory(&direct);
        let (expected, _) = cache.score(&mut direct, "q a", &[cand("a b")]).unwrap();
        let (mut lazy, loads) = counted(direct.identity(), "ce");

        let (warm, st) = cache.score(&mut lazy, "q a", &[cand("a b")]).unwrap();
        assert_eq!((st.scored, st.cached), (0, 1));
        assert_eq!(loads.load(Ordering::Relaxed), 0, "cached: no load");
        assert!(!lazy.is_loaded());
        assert_eq!(warm[0].to_bits(), expected[0].to_bits());

        let (cold, st) = cache.score(&mut lazy, "q a", &[cand("a c")]).unwrap();
        assert_eq!(st.scored, 1);
        assert_eq!(
            loads.load(Ordering::Relaxed),
            1,
            "a missing pair loads the model"
        );
        assert_eq!(cold, direct.score("q a", &["a c"]).unwrap());
        cache.score(&mut lazy, "q a", &[cand("z")]).unwrap();
        assert_eq!(loads.load(Ordering::Relaxed), 1, "loaded once");
    }

    #[test]
    fn a_late_interaction_model_opens_lazily_by_its_pin_and_refuses_a_batch() {
        // An empty cache root: describing a pinned model reads nothing, so opening loads nothing.
        let tmp = tempfile::tempdir().unwrap();
        let store = crate::models::ModelStore::at(tmp.path()).with_progress(false);
        let lazy = LazyCrossEncoder::open(
            &store,
            "answerai-colbert-small-v1",
            &CrossEncoderOptions::default(),
        )
        .unwrap();
        assert!(!lazy.is_loaded());
        let id = lazy.identity();
        assert!(
            id.starts_with("answerai-colbert-small-v1 onnx-sha256=4980983628c18e4f")
                && id.contains("no-projection")
                && id.contains("doc_len=300"),
            "{id}"
        );
        let batched = CrossEncoderOptions {
            batch_size: 8,
            ..CrossEncoderOptions::default()
        };
        let err = LazyCrossEncoder::open(&store, "answerai-colbert-small-v1", &batched)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("late-interaction") && err.contains("batch"),
            "{err}"
        );
    }

    /// A stand-in that counts its `score_many` calls (each request scored as `score` would).
    struct Pooled {
        inner: OverlapCrossEncoder,
        calls: Arc<AtomicUsize>,
    }

    impl CrossEncoder for Pooled {
        fn identity(&self) -> &str {
            self.inner.identity()
        }
        fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
            self.inner.score(query, passages)
        }
        fn score_many(&mut self, requests: &[(&str, Vec<&str>)]) -> Result<Vec<Vec<f32>>> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            requests
                .iter()
                .map(|(q, p)| self.inner.score(q, p))
                .collect()
        }
    }

    #[test]
    fn score_many_reaches_the_loaded_models_own_pooled_score_many() {
        let calls = Arc::new(AtomicUsize::new(0));
        let c = calls.clone();
        let mut direct = OverlapCrossEncoder::with_identity("ce");
        let mut lazy = LazyCrossEncoder::new(
            direct.identity().to_string(),
            Box::new(move || {
                Ok(Box::new(Pooled {
                    inner: OverlapCrossEncoder::with_identity("ce"),
                    calls: c.clone(),
                }) as Box<dyn CrossEncoder>)
            }),
        );
        let empty = lazy.score_many(&[("q", vec![]), ("r", vec![])]).unwrap();
        assert_eq!(empty, vec![Vec::<f32>::new(), Vec::new()]);
        assert!(!lazy.is_loaded(), "no passage: nothing to load");

        let requests = [("q a", vec!["a b", "c"]), ("r", vec!["r s"])];
        let got = lazy.score_many(&requests).unwrap();
        assert_eq!(calls.load(Ordering::Relaxed), 1, "one pooled call");
        let want: Vec<Vec<f32>> = requests
            .iter()
            .map(|(q, p)| direct.score(q, p).unwrap())
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_loaded_model_of_another_identity_is_refused() {
        let (mut lazy, _) = counted("ce", "other");
        let err = lazy.score("q", &["p"]).unwrap_err().to_string();
        assert!(err.contains("other"), "{err}");
    }
}
