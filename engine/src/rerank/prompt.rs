//! The prompt of an LLM reranker, shared by the in-process model and the endpoint client so
//! that both ask exactly the same question.
//!
//! A template is the text of the user message with two placeholders, `{query}` and
//! `{passage}`, each replaced once, in a single left-to-right pass (a query that itself contains
//! `{passage}` is kept verbatim). The system message is fixed ([`SYSTEM`]). The default user
//! message is [`DEFAULT_USER`]; a configuration may name its own file (`prompt:`).
//!
//! Forms:
//! - [`PromptTemplate::messages`]: `[("system", ..), ("user", ..)]`, what `api: chat` sends; the
//!   server applies its model's chat template.
//! - [`PromptTemplate::chatml`]: the same two messages in ChatML (SmolLM2's and Qwen's chat
//!   format) followed by the opening of the assistant turn: what the in-process model reads and
//!   what `api: completions` sends, so both score the same token sequence.
//!
//! The score of a pair is read at the first answer position: the largest logit (or
//! log-probability) among the tokens that spell "yes" minus the largest among those that spell
//! "no" ([`answer_class`]: trimmed, case-insensitive). The difference of logits equals the
//! difference of log-probabilities, so an endpoint's `logprobs` and the in-process logits give
//! the same score.
//!
//! Identity: [`PromptTemplate::hash`] is the sha256 of the format version, the system message
//! and the user template; it keys the score cache and is shown in reports.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The system message of every LLM rerank prompt.
pub const SYSTEM: &str = "You are a search relevance judge.";

/// The default user message: the query, the passage and the question.
pub const DEFAULT_USER: &str =
    "Query: {query}\nPassage: {passage}\n\nDoes the passage answer the query? Answer yes or no.";

/// Bumped when the rendering (ChatML layout, substitution rule) changes.
const FORMAT: &str = "ranklab-llm-prompt-v1";

/// A user-message template with `{query}` and `{passage}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTemplate {
    user: String,
    source: String,
    hash: String,
}

impl Default for PromptTemplate {
    fn default() -> Self {
        PromptTemplate::new(DEFAULT_USER, "default").expect("the default template is valid")
    }
}

impl PromptTemplate {
    /// The template `user`, from `source` (a path or "default", for messages). Both
    /// placeholders must occur.
    pub fn new(user: &str, source: &str) -> Result<PromptTemplate> {
        for p in ["{query}", "{passage}"] {
            if !user.contains(p) {
                return Err(Error::Config(format!(
                    "prompt {source} has no {p} placeholder; write the user message with \
                     {{query}} and {{passage}} where they go"
                )));
            }
        }
        let mut h = Sha256::new();
        for part in [FORMAT, SYSTEM, user] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        Ok(PromptTemplate {
            user: user.to_string(),
            source: source.to_string(),
            hash: format!("{:x}", h.finalize()),
        })
    }

    /// The template in the UTF-8 file at `path`.
    pub fn from_file(path: &Path) -> Result<PromptTemplate> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Config(format!(
                "prompt file {}: {e}; give the path of a UTF-8 text file, relative to the \
                 experiments file",
                path.display()
            ))
        })?;
        PromptTemplate::new(&text, &path.display().to_string())
    }

    /// The sha256 (hex) of the format, system message and template.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// The first 12 hex digits of [`PromptTemplate::hash`], as reports show it.
    pub fn short_hash(&self) -> &str {
        &self.hash[..12]
    }

    /// Where the template came from: "default" or the file's path.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The user message for one pair.
    pub fn user_message(&self, query: &str, passage: &str) -> String {
        let mut out = String::with_capacity(self.user.len() + query.len() + passage.len());
        let mut rest = self.user.as_str();
        while let Some(i) = rest.find('{') {
            out.push_str(&rest[..i]);
            let tail = &rest[i..];
            if let Some(t) = tail.strip_prefix("{query}") {
                out.push_str(query);
                rest = t;
            } else if let Some(t) = tail.strip_prefix("{passage}") {
                out.push_str(passage);
                rest = t;
            } else {
                out.push('{');
                rest = &tail[1..];
            }
        }
        out.push_str(rest);
        out
    }

    /// The chat messages for one pair: system, then user.
    pub fn messages(&self, query: &str, passage: &str) -> [(&'static str, String); 2] {
        [
            ("system", SYSTEM.to_string()),
            ("user", self.user_message(query, passage)),
        ]
    }

    /// The pair's prompt in ChatML, ending where the assistant's answer begins.
    pub fn chatml(&self, query: &str, passage: &str) -> String {
        chatml(SYSTEM, &self.user_message(query, passage))
    }
}

/// A system and a user message in ChatML, followed by the opening of the assistant's turn.
pub fn chatml(system: &str, user: &str) -> String {
    format!(
        "<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n\
         <|im_start|>assistant\n"
    )
}

/// Whether an answer token spells "yes" (`Some(true)`), "no" (`Some(false)`) or neither:
/// surrounding white space (including the byte-level BPE space `Ġ`) ignored, case-insensitive.
pub fn answer_class(token: &str) -> Option<bool> {
    let t = token.trim().trim_start_matches('Ġ').trim();
    if t.eq_ignore_ascii_case("yes") {
        Some(true)
    } else if t.eq_ignore_ascii_case("no") {
        Some(false)
    } else {
        None
    }
}

/// The yes/no score of one answer position from `(token text, logit or log-probability)`
/// pairs: the largest "yes" value minus the largest "no" value. `None` when either class is
/// absent (the caller names the endpoint or model and the pair).
pub fn yes_no_score<'a>(tokens: impl IntoIterator<Item = (&'a str, f32)>) -> Option<f32> {
    let (mut yes, mut no) = (f32::NEG_INFINITY, f32::NEG_INFINITY);
    let (mut seen_yes, mut seen_no) = (false, false);
    for (t, v) in tokens {
        match answer_class(t) {
            Some(true) => {
                seen_yes = true;
                yes = yes.max(v);
            }
            Some(false) => {
                seen_no = true;
                no = no.max(v);
            }
            None => {}
        }
    }
    (seen_yes && seen_no).then_some(yes - no)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_replaced_once_in_one_pass() {
        let t = PromptTemplate::default();
        let m = t.user_message("why {passage}?", "a {query} b");
        // Hand-written expectation: the query's own "{passage}" is not substituted again.
        assert_eq!(
            m,
            "Query: why {passage}?\nPassage: a {query} b\n\nDoes the passage answer the query? \
             Answer yes or no."
        );
    }

    #[test]
    fn a_template_without_both_placeholders_is_refused() {
        let err = PromptTemplate::new("Query: {query}", "p.txt").unwrap_err();
        assert!(err.to_string().contains("p.txt has no {passage}"), "{err}");
    }

    #[test]
    fn the_chatml_form_opens_the_assistant_turn() {
        let p = PromptTemplate::new("{query}|{passage}", "t")
            .unwrap()
            .chatml("q", "p");
        assert_eq!(
            p,
            "<|im_start|>system\nYou are a search relevance judge.<|im_end|>\n<|im_start|>user\n\
             q|p<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn the_hash_changes_with_the_template_only() {
        let a = PromptTemplate::new("{query} {passage}", "a").unwrap();
        let b = PromptTemplate::new("{query} {passage}", "b").unwrap();
        let c = PromptTemplate::new("{query}  {passage}", "a").unwrap();
        assert_eq!(a.hash(), b.hash());
        assert_ne!(a.hash(), c.hash());
        assert_eq!(a.hash().len(), 64);
    }

    #[test]
    fn yes_and_no_are_read_case_and_space_insensitively() {
        let s = yes_no_score([("Yes", -0.5), (" no", -2.0), ("ĠYES", -3.0), ("maybe", 0.0)]);
        assert_eq!(s, Some(1.5));
        assert_eq!(yes_no_score([("Yes", -0.5), ("maybe", 0.0)]), None);
    }
}
