//! `ranklab judge --llm-endpoint URL --llm-model NAME`: an OpenAI-compatible server as the LLM
//! judge, asked the 0–3 [`GradePrompt`] about each pair.
//!
//! - `--llm-api completions` (the default): `POST {URL}/completions` with the grading prompt in
//!   ChatML (the token sequence the in-process model reads), `max_tokens: 1`, `temperature: 0`,
//!   `logprobs: 20`; read `choices[0].logprobs.top_logprobs[0]`.
//! - `--llm-api chat`: `POST {URL}/chat/completions` with the system and user messages,
//!   `logprobs: true`, `top_logprobs: 20`; read `choices[0].logprobs.content[0].top_logprobs`.
//!
//! The grade is read from the log-probabilities of the tokens "0".."3" among those alternatives
//! ([`GradeDist::from_logits`]; a log-probability is the logit minus one constant per position,
//! which the softmax cancels, so it is the in-process reading of the same numbers). With
//! `--parse-text`, an answer without log-probabilities is read from its text
//! ([`GradeDist::from_text`]); without it, that is an error naming the endpoint. As the rerank
//! endpoint does, the query is cut to 512 characters and the passage to 2048 before they are
//! sent; the HTTP client is the external engines' (retries on connection errors, timeouts, 429
//! and 5xx, `--llm-retries` times, default [`DEFAULT_RETRIES`]; each attempt ends
//! `--llm-timeout-ms` after it began, default [`TIMEOUT_MS`], however slowly the answer drips:
//! [`Patience`]).
//!
//! Identity (keys the grade cache): API, model name, endpoint, the character limits, the
//! prompt's hash, and whether text answers are accepted.

use std::time::Duration;

use ranklab_engine::rerank::grade::{GradeDist, GradePrompt, Grader};
use serde_json::{json, Value};

use crate::engine_spec::http::DEFAULT_RETRIES;
use crate::external::http::{PostClient, Poster};
use crate::external::rerank::{
    answer, chat_messages, head, DEFAULT_PASSAGE_CHARS, DEFAULT_QUERY_CHARS,
};
use crate::suite::LlmApi;

/// Alternatives of the answer token asked for by default (`--llm-top-logprobs`): what OpenAI's
/// API and vLLM allow at most.
pub(crate) const TOP_LOGPROBS: u32 = 20;

/// The default total deadline of one attempt of a request (`--llm-timeout-ms`): 2 minutes (a CPU
/// server reads a long prompt slowly).
pub(crate) const TIMEOUT_MS: u64 = 120_000;

/// How long the judge waits for an endpoint: each attempt of a request ends at `timeout` (the
/// whole response, however slowly it arrives), and a failed request is tried `retries` more
/// times, so a request gives up after at most `(retries + 1) × timeout` plus the back-off.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Patience {
    /// The total deadline of one attempt.
    pub timeout: Duration,
    /// Attempts after the first.
    pub retries: u32,
}

impl Default for Patience {
    fn default() -> Self {
        Patience {
            timeout: Duration::from_millis(TIMEOUT_MS),
            retries: DEFAULT_RETRIES,
        }
    }
}

/// An OpenAI-compatible endpoint grading pairs.
pub(crate) struct EndpointGrader {
    url: String,
    model: String,
    api: LlmApi,
    parse_text: bool,
    top_logprobs: u32,
    prompt: GradePrompt,
    identity: String,
    poster: Poster,
    client: PostClient,
}

impl EndpointGrader {
    /// The grader at base URL `url` (`http://127.0.0.1:8080/v1`) serving `model`, asking for
    /// the `top_logprobs` most likely answer tokens (the four digits must be among them; how
    /// many are asked changes no grade, so it is not part of the identity).
    pub(crate) fn new(
        url: &str,
        model: &str,
        api: LlmApi,
        parse_text: bool,
        top_logprobs: u32,
        patience: Patience,
    ) -> EndpointGrader {
        let prompt = GradePrompt::default();
        let api_name = crate::external::rerank::api_name(api);
        let identity = format!(
            "llm-endpoint-judge api={api_name} model={model} endpoint={url} \
             query_chars={DEFAULT_QUERY_CHARS} passage_chars={DEFAULT_PASSAGE_CHARS} \
             grade-prompt={} read=digits-0-3-logprob-softmax{}",
            prompt.hash(),
            if parse_text { " text-answers=yes" } else { "" }
        );
        let name = format!("judge endpoint {url} ({api_name})");
        let poster = Poster::new(&name, Vec::new(), patience.retries, patience.timeout);
        let client = poster.client();
        EndpointGrader {
            url: url.trim_end_matches('/').to_string(),
            model: model.to_string(),
            api,
            parse_text,
            top_logprobs,
            prompt,
            identity,
            poster,
            client,
        }
    }

    /// The request of one pair: its URL and body.
    fn request(&self, query: &str, passage: &str) -> (String, Value) {
        let (q, p) = (
            head(query, DEFAULT_QUERY_CHARS),
            head(passage, DEFAULT_PASSAGE_CHARS),
        );
        match self.api {
            LlmApi::Chat => {
                let messages = chat_messages(self.prompt.messages(q, p));
                (
                    format!("{}/chat/completions", self.url),
                    json!({
                        "model": self.model, "messages": messages, "max_tokens": 1,
                        "temperature": 0, "logprobs": true, "top_logprobs": self.top_logprobs,
                    }),
                )
            }
            _ => (
                format!("{}/completions", self.url),
                json!({
                    "model": self.model, "prompt": self.prompt.chatml(q, p), "max_tokens": 1,
                    "temperature": 0, "logprobs": self.top_logprobs,
                }),
            ),
        }
    }

    /// The grade a response body gives.
    fn read(&self, body: &Value) -> Result<GradeDist, String> {
        let tokens = match self.api {
            LlmApi::Chat => answer::chat_tokens(body),
            _ => answer::completions_tokens(body),
        };
        match tokens {
            Ok(tokens) => GradeDist::from_logits(tokens).map_err(|e| {
                format!(
                    "{e} (asked for the top {}: raise it with --llm-top-logprobs)",
                    self.top_logprobs
                )
            }),
            Err(no_logprobs) if self.parse_text => {
                let text = body
                    .pointer("/choices/0/text")
                    .or_else(|| body.pointer("/choices/0/message/content"))
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{no_logprobs}; and the answer has no text either"))?;
                GradeDist::from_text(text).map_err(|e| e.to_string())
            }
            Err(no_logprobs) => Err(format!(
                "{no_logprobs}; or pass --parse-text to read the grade from the answer's text"
            )),
        }
    }
}

impl Grader for EndpointGrader {
    fn model(&self) -> &str {
        &self.model
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn grade(&mut self, query: &str, passage: &str) -> ranklab_engine::Result<GradeDist> {
        let (url, body) = self.request(query, passage);
        let response = self.poster.post(&mut self.client, &url, &body.to_string());
        answer::body(&response)
            .and_then(|b| self.read(b))
            .map_err(|message| ranklab_engine::Error::Model {
                model: format!(
                    "judge endpoint {} ({})",
                    self.url,
                    crate::external::rerank::api_name(self.api)
                ),
                message,
            })
    }
}

#[cfg(test)]
mod tests {
    //! Response bodies written by hand in the shapes of docs/engines.md; the expected grades are
    //! worked out in each test's comment.

    use super::*;

    fn grader(api: LlmApi, parse_text: bool) -> EndpointGrader {
        EndpointGrader::new(
            "http://127.0.0.1:1/v1/",
            "m",
            api,
            parse_text,
            TOP_LOGPROBS,
            Patience::default(),
        )
    }

    /// log-probs -3, ln 0.5 - 1 ... : "0" -1.2, "1" -1.2, "2" -0.5, "3" -3.0 (and " 2" lower,
    /// "The" ignored): the largest is "2", so argmax 2.
    #[test]
    fn completions_logprobs_give_the_grade() {
        let body = json!({"choices": [{"text": "2", "logprobs": {"top_logprobs": [
            {"0": -1.2, "1": -1.2, "2": -0.5, " 2": -4.0, "3": -3.0, "The": -0.1}]}}]});
        let d = grader(LlmApi::Completions, false).read(&body).unwrap();
        assert_eq!(d.argmax(), 2);
        // By hand: e^-1.2, e^-1.2, e^-0.5, e^-3.0 = 0.3012, 0.3012, 0.6065, 0.0498 (sum
        // 1.2587); expected = (0.3012 + 2·0.6065 + 3·0.0498)/1.2587 = 1.3221.
        assert!((d.expected() - 1.3221).abs() < 1e-3, "{}", d.expected());
    }

    #[test]
    fn chat_logprobs_give_the_grade() {
        let body = json!({"choices": [{"message": {"content": "3"}, "logprobs": {"content": [
            {"token": "3", "top_logprobs": [
                {"token": "3", "logprob": -0.1}, {"token": "2", "logprob": -2.5},
                {"token": "1", "logprob": -4.0}, {"token": "0", "logprob": -6.0}]}]}}]});
        assert_eq!(grader(LlmApi::Chat, false).read(&body).unwrap().argmax(), 3);
    }

    #[test]
    fn no_logprobs_is_an_error_unless_text_answers_are_accepted() {
        let body = json!({"choices": [{"text": " 1", "logprobs": null}]});
        let e = grader(LlmApi::Completions, false).read(&body).unwrap_err();
        assert!(
            e.contains("no log-probabilities") && e.contains("--parse-text"),
            "{e}"
        );
        let d = grader(LlmApi::Completions, true).read(&body).unwrap();
        assert_eq!((d.argmax(), d.expected()), (1, 1.0));
        let outside = json!({"choices": [{"text": "7", "logprobs": null}]});
        let e = grader(LlmApi::Completions, true)
            .read(&outside)
            .unwrap_err();
        assert!(e.contains("outside the scale"), "{e}");
    }

    #[test]
    fn a_missing_digit_is_an_error() {
        let body = json!({"choices": [{"logprobs": {"top_logprobs": [
            {"0": -1.0, "1": -1.0, "2": -0.5}]}}]});
        let e = grader(LlmApi::Completions, false).read(&body).unwrap_err();
        assert!(e.contains("[3]"), "{e}");
    }

    #[test]
    fn requests_cut_long_text_and_identities_differ_by_api_and_text_answers() {
        let g = grader(LlmApi::Completions, false);
        let (url, body) = g.request(&"q".repeat(600), &"p".repeat(3000));
        assert_eq!(url, "http://127.0.0.1:1/v1/completions");
        let prompt = body["prompt"].as_str().unwrap();
        assert!(prompt.contains(&format!("Query: {}\n", "q".repeat(512))));
        assert!(prompt.contains(&format!("Passage: {}\n", "p".repeat(2048))));
        assert!(!prompt.contains(&"p".repeat(2049)));
        let ids = [
            g.identity.clone(),
            grader(LlmApi::Chat, false).identity,
            grader(LlmApi::Completions, true).identity,
        ];
        assert!(ids[0] != ids[1] && ids[0] != ids[2] && ids[1] != ids[2]);
    }
}
