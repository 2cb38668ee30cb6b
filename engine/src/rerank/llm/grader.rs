//! The in-process LLM as a judge: the reranker's model asked the 0–3 [`GradePrompt`] instead of
//! the yes/no question, the grade read from the logits of the tokens spelling "0".."3" at the
//! answer position ([`GradeDist::from_logits`]).
//!
//! Same runtime, same guarantees as [`LlmReranker`]: one forward pass per pair from an empty
//! key/value cache, query and passage cut to [`QUERY_TOKENS`] and [`PASSAGE_TOKENS`], the same
//! bits whatever the thread count or the order of the pairs.

use super::{tokens_where, truncate, LlmReranker, PASSAGE_TOKENS, QUERY_TOKENS};
use crate::models::ModelDir;
use crate::rerank::grade::{digit_of, GradeDist, GradePrompt, Grader};
use crate::rerank::prompt::PromptTemplate;
use crate::{Error, Result};

/// How the grade is read, as the identity names it.
pub const READ: &str = "digits-0-3-max-logit-softmax";

/// A GGUF language model grading (query, passage) pairs 0–3.
pub struct LlmGrader {
    llm: LlmReranker,
    prompt: GradePrompt,
    digits: Vec<(u32, String)>,
    identity: String,
}

impl std::fmt::Debug for LlmGrader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmGrader")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl LlmGrader {
    /// The verified LLM directory `model`, asking the default [`GradePrompt`]. A vocabulary
    /// without a token for each of "0".."3" is refused.
    pub fn load(model: &ModelDir) -> Result<LlmGrader> {
        let llm = LlmReranker::load(model, &PromptTemplate::default())?;
        let digits = tokens_where(llm.tokenizer(), |t| digit_of(t).is_some());
        let mut have = [false; 4];
        for (_, t) in &digits {
            have[usize::from(digit_of(t).expect("filtered"))] = true;
        }
        if have.contains(&false) {
            return Err(Error::Model {
                model: model.id.clone(),
                message: "its vocabulary lacks a token for one of the digits 0..3; it cannot \
                          grade with the 0–3 prompt"
                    .into(),
            });
        }
        let prompt = GradePrompt::default();
        Ok(LlmGrader {
            identity: LlmGrader::identity_of(model, &prompt),
            llm,
            prompt,
            digits,
        })
    }

    /// The identity of `model` grading with `prompt` (keys the grade cache), known without
    /// loading it: `ID gguf-sha256=SHA grade-prompt=HASH query_tokens=128 passage_tokens=512
    /// read=digits-0-3-max-logit-softmax runtime=candle-0.11.1-cpu`.
    pub fn identity_of(model: &ModelDir, prompt: &GradePrompt) -> String {
        format!(
            "{} gguf-sha256={} grade-prompt={} query_tokens={QUERY_TOKENS} \
             passage_tokens={PASSAGE_TOKENS} read={READ} runtime=candle-0.11.1-cpu",
            model.id,
            model.sha256,
            prompt.hash()
        )
    }

    /// Every vocabulary id spelling a grade digit, with its text, in id order.
    pub fn digit_tokens(&self) -> &[(u32, String)] {
        &self.digits
    }
}

impl Grader for LlmGrader {
    fn model(&self) -> &str {
        &self.llm.id
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn grade(&mut self, query: &str, passage: &str) -> Result<GradeDist> {
        let tokenizer = self.llm.tokenizer();
        let q = truncate(tokenizer, query, QUERY_TOKENS)?;
        let p = truncate(tokenizer, passage, PASSAGE_TOKENS)?;
        let ids = tokenizer.encode(&self.prompt.chatml(q, p))?;
        let logits = self.llm.logits(&ids)?;
        let read = self
            .digits
            .iter()
            .filter_map(|(id, t)| logits.get(*id as usize).map(|v| (t.as_str(), *v)));
        GradeDist::from_logits(read).map_err(|e| Error::Model {
            model: self.llm.id.clone(),
            message: e.to_string(),
        })
    }
}
