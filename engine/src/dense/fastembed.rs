//! The real bi-encoder: an ONNX model run by fastembed (bge-small-en-v1.5 int8 by default).
//!
//! **Determinism.** The int8 bge model quantizes activations dynamically
//! (`DynamicQuantizeLinear`): the scale is computed over the whole input tensor, so in a
//! batch a text's vector depends on the other texts and on the padding (cosine about 0.996
//! between alone and in a batch of 32). This embedder therefore runs every text in a batch of
//! its own — no padding, no neighbours — so a text's vector is a function of the text alone,
//! bit for bit, whatever batch `embed` is given and whatever the cache held before. The
//! identity says so (`batch=1`). The tests in `engine/tests/dense_determinism.rs` prove it.
//!
//! **Parallelism.** Batch size 1 leaves no batch to parallelize inside, and ONNX Runtime's
//! intra-op threads spin and fight when the machine is shared (measured: 2 intra-op threads
//! were 2-3x slower than 1 while other builds ran). So the embedder loads `workers`
//! single-threaded sessions of the same model (default: one per core) and spreads the texts of
//! a call over them; each text is still computed alone, by an identical session, so the bits
//! do not depend on the number of workers or on which worker ran a text.
//!
//! Vectors are CLS-pooled (for bge) and L2-normalized by fastembed, so cosine is a dot product.

use std::sync::Arc;

use fastembed::{InitOptionsUserDefined, TextEmbedding, UserDefinedEmbeddingModel};

use super::Embedder;
use crate::models::{self, ModelDir, ModelKind, Pooling};
use crate::{Error, Result};

/// The instruction bge v1.5 puts before a short query in retrieval (passages get none).
///
/// BAAI's MTEB evaluation of bge-*-en-v1.5 (FlagEmbedding, `--query_instruction_for_retrieval`)
/// encodes the queries of retrieval tasks such as BEIR SciFact with this prefix and the corpus
/// without it; the published nDCG@10 (0.7127 for bge-small-en-v1.5 on SciFact) comes from
/// that setup, so ranklab does the same.
pub const BGE_QUERY_INSTRUCTION: &str = "Represent this sentence for searching relevant passages: ";

/// How to run the model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmbedderOptions {
    /// Tokens read per text (longer texts are truncated); None: the model's own (512 for bge).
    pub max_length: Option<usize>,
    /// Single-threaded model sessions texts are spread over; None: one per core.
    pub workers: Option<usize>,
}

/// A fastembed `TextEmbedding` over a verified model directory.
pub struct FastembedEmbedder {
    workers: Vec<TextEmbedding>,
    id: Arc<str>,
    identity: String,
    dim: usize,
    query_instruction: &'static str,
}

impl std::fmt::Debug for FastembedEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastembedEmbedder")
            .field("identity", &self.identity)
            .field("dim", &self.dim)
            .finish_non_exhaustive()
    }
}

impl FastembedEmbedder {
    /// The model `id` from the default cache, fetched on first use, with default options.
    pub fn open(id: &str) -> Result<FastembedEmbedder> {
        FastembedEmbedder::load(&models::ensure_model(id)?, &EmbedderOptions::default())
    }

    /// Loads a verified model directory (see [`models::ensure_model`]).
    pub fn load(model: &ModelDir, options: &EmbedderOptions) -> Result<FastembedEmbedder> {
        model.expect_kind(ModelKind::BiEncoder, "a rerank model")?;
        let fail = models::fastembed_error(&model.id);
        let onnx_path = model.file("model.onnx");
        let onnx = std::fs::read(&onnx_path).map_err(|e| Error::io(&onnx_path, e))?;
        let tokenizer = model.tokenizer_files()?;
        let (max_length, pooling) = settings(model, options);
        let environment = models::ort_environment()?;
        let mut workers = models::load_sessions(&model.id, options.workers, || {
            let user_model = UserDefinedEmbeddingModel::new(onnx.clone(), tokenizer.clone())
                .with_pooling(match pooling {
                    Pooling::Cls => fastembed::Pooling::Cls,
                    Pooling::Mean => fastembed::Pooling::Mean,
                });
            let init = InitOptionsUserDefined::new()
                .with_environment(environment.clone())
                .with_max_length(max_length)
                .with_intra_threads(1);
            TextEmbedding::try_new_from_user_defined(user_model, init)
        })?;
        let probe = workers[0]
            .embed(["dimension probe"], Some(1))
            .map_err(fail)?;
        let dim = probe.first().map(Vec::len).unwrap_or(0);
        if dim == 0 {
            return Err(Error::Model {
                model: model.id.clone(),
                message: "the model returned an empty vector".into(),
            });
        }
        let query_instruction = query_instruction_for(&model.id);
        let identity = format!(
            "{} dim={dim}",
            FastembedEmbedder::identity_prefix(model, options)
        );
        Ok(FastembedEmbedder {
            workers,
            id: model.id.as_str().into(),
            identity,
            dim,
            query_instruction,
        })
    }
}

/// The max length and pooling `options` give `model`.
fn settings(model: &ModelDir, options: &EmbedderOptions) -> (usize, Pooling) {
    let max_length = model.max_length_for(options.max_length);
    (max_length, model.pooling.unwrap_or(Pooling::Mean))
}

/// The query instruction of the model `id` (bge v1.5 English models have one; others none).
pub fn query_instruction_for(id: &str) -> &'static str {
    if id.starts_with("bge-") && id.ends_with("-en-v1.5") {
        BGE_QUERY_INSTRUCTION
    } else {
        ""
    }
}

impl FastembedEmbedder {
    /// The identity of `model` run with `options`, up to the vector length (which the loaded
    /// model reports): everything [`Embedder::identity`] says but the final ` dim=<n>`. Known
    /// without loading or reading the model (see [`crate::models::ModelStore::describe`]).
    pub fn identity_prefix(model: &ModelDir, options: &EmbedderOptions) -> String {
        let (max_length, pooling) = settings(model, options);
        format!(
            "{} onnx-sha256={} max_len={max_length} pooling={} norm=l2 batch=1",
            model.id,
            model.sha256,
            pooling.as_str()
        )
    }

    /// The first underlying fastembed model (for tests and benchmarks against it).
    pub fn inner(&mut self) -> &mut TextEmbedding {
        &mut self.workers[0]
    }

    /// Number of single-threaded sessions.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }
}

impl Embedder for FastembedEmbedder {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn query_instruction(&self) -> &str {
        self.query_instruction
    }

    fn embed(&mut self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        // Every text alone (batch size 1), spread over the workers: see the module documentation.
        let id = &self.id;
        models::run_on_workers(&mut self.workers, texts.len(), |w, i| {
            let mut v = w
                .embed([texts[i]], Some(1))
                .map_err(models::fastembed_error(id))?;
            v.pop().ok_or_else(|| Error::Model {
                model: id.to_string(),
                message: "returned no vector".into(),
            })
        })
    }
}
