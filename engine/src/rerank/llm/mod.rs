//! An LLM as a pointwise reranker, in-process: a quantized llama-family GGUF model (SmolLM2) run
//! with candle on the CPU, asked the yes/no question of [`PromptTemplate`] about each (query,
//! passage) pair.
//!
//! One pair, one forward pass: the pair's prompt ([`PromptTemplate::chatml`], which ends where
//! the assistant's answer begins) is tokenized with the tokenizer of the GGUF's own metadata
//! ([`GgufTokenizer`]), run from position 0 with an empty key/value cache, and the score is
//! [`prompt::yes_no_score`] over the logits of the last position: the largest logit among the
//! vocabulary's "yes" tokens minus the largest among its "no" tokens (the sets are found once,
//! at load, by decoding every token: [`LlmReranker::answer_tokens`]).
//!
//! Weights: the GGUF's Q4_1 matrices are expanded to f32 at load (exactly, see [`weights`]),
//! because candle's Q4_1 kernel is a scalar loop about 15 times slower than its f32 `gemm`.
//!
//! Length: a query is cut to its first [`QUERY_TOKENS`] tokens and a passage to its first
//! [`PASSAGE_TOKENS`] (tokenized alone; the text is cut after the character where that token
//! ends, then the whole prompt is tokenized), so that a prompt stays far inside the model's
//! context and a pair's cost is bounded.
//!
//! Guarantees:
//! - A pair's score depends on the pair alone: no state is carried between pairs, so the order
//!   of the passages and the other passages of a call change nothing.
//! - Same inputs, same bits: candle's CPU kernels compute every output element in one worker,
//!   over the whole reduction, in a fixed order, so the thread count (candle's pool, sized once
//!   per process by `CANDLE_NUM_THREADS`, else `RAYON_NUM_THREADS`, else the physical cores)
//!   does not change a score (the tests run 1 and 2 threads).
//! - The identity ([`LlmReranker::identity_of`]) names everything that determines a score: the
//!   model id, the GGUF's sha256, the prompt's hash, the token budgets and the scoring scheme.

mod grader;
mod tokenizer;
mod weights;

pub use grader::LlmGrader;
pub use tokenizer::GgufTokenizer;

use candle_core::quantized::gguf_file::Content;
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;

use super::prompt::{self, PromptTemplate};
use super::CrossEncoder;
use crate::models::{ModelDir, ModelKind};
use crate::{Error, Result};

/// Tokens of a query kept (the rest is cut).
pub const QUERY_TOKENS: usize = 128;

/// Tokens of a passage kept (the rest is cut).
pub const PASSAGE_TOKENS: usize = 512;

/// The scoring scheme, as the identity names it.
pub const SCORING: &str = "yes-no-max-logit";

/// A GGUF language model scoring (query, passage) pairs by its yes/no answer.
pub struct LlmReranker {
    model: ModelWeights,
    tokenizer: GgufTokenizer,
    prompt: PromptTemplate,
    answers: Vec<(u32, String)>,
    identity: String,
    id: String,
    device: Device,
}

impl std::fmt::Debug for LlmReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmReranker")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl LlmReranker {
    /// The verified LLM directory `model` (its `model.gguf`), asking `prompt`.
    pub fn load(model: &ModelDir, prompt: &PromptTemplate) -> Result<LlmReranker> {
        model.expect_kind(ModelKind::Llm, "a rerank `model:` (not `llm:`)")?;
        let path = model.file(ModelKind::Llm.weights_file());
        let fail = |message: String| Error::Model {
            model: model.id.clone(),
            message,
        };
        let mut file = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        let content = Content::read(&mut file)
            .map_err(|e| fail(format!("{}: not a readable GGUF file: {e}", path.display())))?;
        let tokenizer = GgufTokenizer::from_gguf(&content, &model.id)?;
        let weights = weights::load(content, &mut file)
            .map_err(|e| fail(format!("{}: loading the weights: {e}", path.display())))?;
        let answers = answer_tokens(&tokenizer);
        let classes: Vec<bool> = answers
            .iter()
            .filter_map(|(_, t)| prompt::answer_class(t))
            .collect();
        if !classes.contains(&true) || !classes.contains(&false) {
            return Err(fail(
                "its vocabulary has no token spelling \"yes\" or none spelling \"no\"; it \
                 cannot be scored with the yes/no prompt"
                    .into(),
            ));
        }
        Ok(LlmReranker {
            model: weights,
            tokenizer,
            prompt: prompt.clone(),
            answers,
            identity: LlmReranker::identity_of(model, prompt),
            id: model.id.clone(),
            device: Device::Cpu,
        })
    }

    /// The identity of `model` asking `prompt` ([`CrossEncoder::identity`]), known without
    /// loading it: `ID gguf-sha256=SHA prompt=HASH query_tokens=128 passage_tokens=512
    /// score=yes-no-max-logit runtime=candle-0.11.1-cpu`.
    pub fn identity_of(model: &ModelDir, prompt: &PromptTemplate) -> String {
        format!(
            "{} gguf-sha256={} prompt={} query_tokens={QUERY_TOKENS} \
             passage_tokens={PASSAGE_TOKENS} score={SCORING} runtime=candle-0.11.1-cpu",
            model.id,
            model.sha256,
            prompt.hash()
        )
    }

    /// The tokenizer read from the GGUF.
    pub fn tokenizer(&self) -> &GgufTokenizer {
        &self.tokenizer
    }

    /// Every vocabulary id whose text spells "yes" or "no" ([`prompt::answer_class`]), with
    /// its text, in id order.
    pub fn answer_tokens(&self) -> &[(u32, String)] {
        &self.answers
    }

    /// The prompt of a pair as the model reads it: query and passage cut to their budgets,
    /// rendered in ChatML, tokenized.
    pub fn prompt_ids(&self, query: &str, passage: &str) -> Result<Vec<u32>> {
        let q = truncate(&self.tokenizer, query, QUERY_TOKENS)?;
        let p = truncate(&self.tokenizer, passage, PASSAGE_TOKENS)?;
        self.tokenizer.encode(&self.prompt.chatml(q, p))
    }

    /// The logits over the vocabulary after reading `ids` from position 0 (one forward pass,
    /// an empty key/value cache before and after).
    pub fn logits(&mut self, ids: &[u32]) -> Result<Vec<f32>> {
        let fail = |e: candle_core::Error| Error::Model {
            model: self.id.clone(),
            message: format!("forward pass over {} tokens: {e}", ids.len()),
        };
        if ids.is_empty() {
            return Err(Error::Model {
                model: self.id.clone(),
                message: "an empty prompt cannot be scored".into(),
            });
        }
        self.model.clear_kv_cache();
        let input = Tensor::new(ids, &self.device)
            .and_then(|t| t.unsqueeze(0))
            .map_err(fail)?;
        let out = self.model.forward(&input, 0).map_err(fail);
        self.model.clear_kv_cache();
        out?.squeeze(0)
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(fail)
    }

    /// The yes/no score of a prompt's ids (see the module docs).
    pub fn score_ids(&mut self, ids: &[u32]) -> Result<f32> {
        let logits = self.logits(ids)?;
        let read = self
            .answers
            .iter()
            .filter_map(|(id, t)| logits.get(*id as usize).map(|v| (t.as_str(), *v)));
        prompt::yes_no_score(read).ok_or_else(|| Error::Model {
            model: self.id.clone(),
            message: "the logits lack the yes or no tokens".into(),
        })
    }
}

impl CrossEncoder for LlmReranker {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        passages
            .iter()
            .map(|p| {
                let ids = self.prompt_ids(query, p)?;
                self.score_ids(&ids)
            })
            .collect()
    }
}

/// Every id whose decoded text is "yes" or "no" (trimmed, any case), with that text.
fn answer_tokens(tokenizer: &GgufTokenizer) -> Vec<(u32, String)> {
    tokens_where(tokenizer, |t| prompt::answer_class(t).is_some())
}

/// Every id of the vocabulary whose decoded text `keep` accepts, with that text, in id order.
fn tokens_where(tokenizer: &GgufTokenizer, keep: impl Fn(&str) -> bool) -> Vec<(u32, String)> {
    (0..tokenizer.vocab_size() as u32)
        .map(|id| (id, tokenizer.token_text(id)))
        .filter(|(_, t)| keep(t))
        .collect()
}

/// `text` cut after the character where its `budget`-th token ends (unchanged when it has no
/// more tokens than that).
pub fn truncate<'a>(tokenizer: &GgufTokenizer, text: &'a str, budget: usize) -> Result<&'a str> {
    let enc = tokenizer.encoding(text)?;
    if enc.len() <= budget || budget == 0 {
        return Ok(if budget == 0 { "" } else { text });
    }
    let mut end = enc.get_offsets()[budget - 1].1.min(text.len());
    while !text.is_char_boundary(end) {
        end += 1;
    }
    Ok(&text[..end])
}
