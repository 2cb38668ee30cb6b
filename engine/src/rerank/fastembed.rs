//! The real cross-encoder: an ONNX model run by fastembed's `TextRerank`
//! (ms-marco-MiniLM-L-12-v2 int8 by default). Scores are the raw logits, unnormalized.
//!
//! **Determinism and batching.** The int8 model quantizes activations dynamically over the
//! whole input tensor, so a pair's logit depends slightly on the pairs batched with it and on
//! their padding. With the default batch size 1 a pair's score is a function of the pair alone,
//! bit for bit, which is what the score cache and reproducible reports need. A larger batch
//! (`CrossEncoderOptions::batch_size`) is faster; it is part of the identity, so its scores are
//! cached apart, but they then depend on how pairs were grouped: use it for speed studies, not
//! for committed reports.
//!
//! **Parallelism.** As for the embedder: `workers` single-threaded sessions (default one per
//! core) share the batches of a call; a batch's composition depends only on the call (pairs in
//! order, `batch_size` at a time), never on the worker, so the scores do not either.
//! [`CrossEncoder::score_many`] pools the batches of several queries into one work list, so the
//! workers stay busy to the end of a run instead of waiting for each other after every query.

use fastembed::{RerankInitOptionsUserDefined, TextRerank, UserDefinedRerankingModel};

use super::CrossEncoder;
use crate::models::{self, ModelDir, ModelKind};
use crate::{Error, Result};

/// How to run the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrossEncoderOptions {
    /// Pairs per model run; 1 (the default) makes every score independent of the others.
    pub batch_size: usize,
    /// Tokens read per pair (longer pairs are truncated); None: the model's own (512).
    pub max_length: Option<usize>,
    /// Single-threaded model sessions batches are spread over; None: one per core.
    pub workers: Option<usize>,
}

impl Default for CrossEncoderOptions {
    fn default() -> Self {
        CrossEncoderOptions {
            batch_size: 1,
            max_length: None,
            workers: None,
        }
    }
}

impl CrossEncoderOptions {
    /// Refuses options no model can run with (a batch size of 0): checked before a model is
    /// loaded, and before a lazy one is opened.
    pub(crate) fn check(&self) -> Result<()> {
        if self.batch_size == 0 {
            return Err(Error::Config(
                "cross-encoder batch size must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// A fastembed `TextRerank` over a verified model directory.
pub struct FastembedCrossEncoder {
    workers: Vec<TextRerank>,
    id: String,
    identity: String,
    batch_size: usize,
}

impl std::fmt::Debug for FastembedCrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastembedCrossEncoder")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl FastembedCrossEncoder {
    /// The model `id` from the default cache, fetched on first use, with default options.
    pub fn open(id: &str) -> Result<FastembedCrossEncoder> {
        FastembedCrossEncoder::load(&models::ensure_model(id)?, &CrossEncoderOptions::default())
    }

    /// Loads a verified model directory (see [`models::ensure_model`]).
    pub fn load(model: &ModelDir, options: &CrossEncoderOptions) -> Result<FastembedCrossEncoder> {
        model.expect_kind(ModelKind::CrossEncoder, "an embedder")?;
        options.check()?;
        let max_length = model.max_length_for(options.max_length);
        let environment = models::ort_environment()?;
        let tokenizer = model.tokenizer_files()?;
        let workers = models::load_sessions(&model.id, options.workers, || {
            let init = RerankInitOptionsUserDefined::new()
                .with_environment(environment.clone())
                .with_max_length(max_length)
                .with_intra_threads(1);
            let user_model =
                UserDefinedRerankingModel::new(model.file("model.onnx"), tokenizer.clone());
            TextRerank::try_new_from_user_defined(user_model, init)
        })?;
        let identity = FastembedCrossEncoder::identity_of(model, options);
        Ok(FastembedCrossEncoder {
            workers,
            id: model.id.clone(),
            identity,
            batch_size: options.batch_size,
        })
    }

    /// The identity of `model` run with `options` ([`CrossEncoder::identity`]), known without
    /// loading or reading the model (see [`crate::models::ModelStore::describe`]).
    pub fn identity_of(model: &ModelDir, options: &CrossEncoderOptions) -> String {
        format!(
            "{} onnx-sha256={} max_len={} score=logit batch={}",
            model.id,
            model.sha256,
            model.max_length_for(options.max_length),
            options.batch_size
        )
    }

    /// The first underlying fastembed model (for tests and benchmarks against it).
    pub fn inner(&mut self) -> &mut TextRerank {
        &mut self.workers[0]
    }

    /// Number of single-threaded sessions.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Pairs per model run.
    pub fn batch_size(&self) -> usize {
        self.batch_size
    }
}

impl CrossEncoder for FastembedCrossEncoder {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        let mut out = self.score_many(&[(query, passages.to_vec())])?;
        Ok(out.pop().expect("one request, one list"))
    }

    /// Every request's passages cut into batches exactly as [`CrossEncoder::score`] cuts one
    /// request's (in order, `batch_size` at a time, never mixing two queries), and all the
    /// batches of all requests spread over the workers as one work list: so the scores are
    /// those of one request at a time, bit for bit, and no worker idles while pairs remain.
    fn score_many(&mut self, requests: &[(&str, Vec<&str>)]) -> Result<Vec<Vec<f32>>> {
        let (id, batch) = (&self.id, self.batch_size);
        let jobs: Vec<(&str, &[&str])> = requests
            .iter()
            .flat_map(|(q, passages)| passages.chunks(batch).map(move |c| (*q, c)))
            .collect();
        let per_job = models::run_on_workers(&mut self.workers, jobs.len(), |w, j| {
            let (query, chunk) = jobs[j];
            let ranked = w
                .rerank(query, chunk, false, Some(batch))
                .map_err(models::fastembed_error(id))?;
            // fastembed returns results sorted by score; put them back in input order.
            let mut scores = vec![f32::NAN; chunk.len()];
            for r in ranked {
                scores[r.index] = r.score;
            }
            Ok(scores)
        })?;
        let mut per_job = per_job.into_iter();
        Ok(requests
            .iter()
            .map(|(_, passages)| {
                let n = passages.len().div_ceil(batch);
                per_job.by_ref().take(n).flatten().collect()
            })
            .collect())
    }
}
