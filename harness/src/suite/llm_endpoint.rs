//! An LLM (or a `/rerank` service) behind an HTTP endpoint as a rerank stage, and its API.

use std::collections::BTreeMap;

use serde::Deserialize;

/// An OpenAI-compatible endpoint as a rerank stage.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmEndpoint {
    /// Base URL (`http://127.0.0.1:8080/v1`); `${NAME}` is expanded from the environment when
    /// the request is made and never written.
    pub endpoint: String,
    /// The model name sent with each request.
    pub model: String,
    /// Which API: `completions` and `chat` read yes/no log-probabilities, `rerank` reads
    /// `results[{index, relevance_score}]`.
    pub api: LlmApi,
    /// Request headers; values may name `${NAME}` environment variables (expanded only for the
    /// request sent, never recorded).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Requests in flight (default 4).
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// Retries of a request after a connection error, timeout, 429 or 5xx (default 3).
    #[serde(default)]
    pub retries: Option<u32>,
    /// How long each phase of a request may take, in milliseconds (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// How many alternatives of the answer token to ask for (`completions`, `chat`; default
    /// 20): "yes" and "no" must both be among them.
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    /// The query is cut to this many characters before it is sent (default 512).
    #[serde(default)]
    pub query_chars: Option<usize>,
    /// Each passage is cut to this many characters before it is sent (default 2048, about 512
    /// tokens of English), so that a long section cannot overflow the server's context.
    #[serde(default)]
    pub passage_chars: Option<usize>,
}

impl LlmEndpoint {
    /// Checks what needs no server: the URL's scheme, the limits, the `${NAME}` references.
    pub fn check(&self) -> std::result::Result<(), String> {
        use crate::engine_spec::http::MAX_CONCURRENCY;
        let e = &self.endpoint;
        if !(e.starts_with("http://") || e.starts_with("https://")) {
            return Err(format!(
                "`endpoint: {e}` must start with http:// or https:// (the base URL, e.g. \
                 http://127.0.0.1:8080/v1)"
            ));
        }
        match self.concurrency {
            Some(0) => return Err("`concurrency: 0`: write 1 or more (default 4)".into()),
            Some(c) if c > MAX_CONCURRENCY => {
                return Err(format!("`concurrency: {c}` is more than {MAX_CONCURRENCY}"))
            }
            _ => {}
        }
        if self.timeout_ms == Some(0) {
            return Err("`timeout_ms` must be at least 1".into());
        }
        if self.top_logprobs == Some(0) {
            return Err(
                "`top_logprobs: 0`: \"yes\" and \"no\" must be among the answer's \
                        alternatives; write 2 or more (default 20)"
                    .into(),
            );
        }
        for (name, v) in [
            ("query_chars", self.query_chars),
            ("passage_chars", self.passage_chars),
        ] {
            if v == Some(0) {
                return Err(format!(
                    "`{name}: 0` would send nothing; write 1 or more (the defaults are 512 \
                     for queries, 2048 for passages)"
                ));
            }
        }
        if self.api == LlmApi::Rerank && self.top_logprobs.is_some() {
            return Err(
                "`top_logprobs` belongs to `api: completions` or `chat`; `api: rerank` \
                        reads relevance scores"
                    .into(),
            );
        }
        for v in self.headers.values().chain([&self.endpoint]) {
            crate::engine_spec::env_refs(v).map_err(|e| format!("{e:#}"))?;
        }
        Ok(())
    }
}

/// The API of an [`LlmEndpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LlmApi {
    /// `POST /completions` with the ChatML prompt, `logprobs`.
    Completions,
    /// `POST /chat/completions` with the messages, `logprobs` + `top_logprobs`.
    Chat,
    /// `POST /rerank` (Cohere, Jina, Voyage, text-embeddings-inference).
    Rerank,
}

impl LlmApi {
    /// The API's name as the configuration writes it.
    pub fn name(self) -> &'static str {
        match self {
            LlmApi::Completions => "completions",
            LlmApi::Chat => "chat",
            LlmApi::Rerank => "rerank",
        }
    }
}
