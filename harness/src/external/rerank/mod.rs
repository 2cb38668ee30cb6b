//! An OpenAI-compatible endpoint as a rerank stage: `rerank: { llm: { endpoint, model, api } }`.
//!
//! - `api: completions`: `POST {endpoint}/completions` with the pair's prompt in ChatML
//!   ([`PromptTemplate::chatml`], the token sequence the in-process model reads), `max_tokens:
//!   1`, `temperature: 0`, `logprobs: N`; the score is the largest log-probability of a "yes"
//!   token minus the largest of a "no" token at the answer position ([`yes_no_score`]).
//! - `api: chat`: `POST {endpoint}/chat/completions` with the system and user messages
//!   ([`PromptTemplate::messages`]; the server applies its model's chat template), `logprobs:
//!   true`, `top_logprobs: N`; the same score.
//! - `api: rerank`: `POST {endpoint}/rerank` with `{"model", "query", "documents"}` (Cohere,
//!   Jina, Voyage, text-embeddings-inference), one request per query; the score is each
//!   document's `relevance_score`.
//!
//! The HTTP client is the external engines' ([`super::http::Poster`]): headers with `${NAME}`
//! expanded only for the request sent, `concurrency` requests in flight, retries with back-off
//! on connection errors, timeouts, 429 and 5xx, a timeout per phase. A response that cannot give
//! a score ([`answer`]) or a request that fails after its retries stops the run with one line
//! naming the endpoint, the query and what is missing; no pair is ever scored by default.
//!
//! Every API sends the query cut to `query_chars` characters (default 512) and each passage cut
//! to `passage_chars` (default 2048, about 512 tokens of English; the in-process LLM cuts to 128
//! and 512 tokens with its own tokenizer), so a long section cannot overflow the server's
//! context. A server that still refuses a prompt (HTTP 400) stops the run naming both limits.
//!
//! Identity (keys the score cache and the recordings): the API, the model name, the endpoint
//! URL as written (`${NAME}` unexpanded), the two character limits and, for the yes/no APIs,
//! the prompt's sha256. The recordings of `--record` are [`tape`]'s.
//!
//! [`yes_no_score`]: ranklab_engine::rerank::prompt::yes_no_score

pub mod answer;
pub mod tape;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ranklab_engine::rerank::prompt::PromptTemplate;
use ranklab_engine::rerank::{CrossEncoder, LazyCrossEncoder};
use serde_json::{json, Value};

use super::http::Poster;
use super::recording::canonical;
use super::{cut, Secrets};
use crate::engine_spec::http::{DEFAULT_CONCURRENCY, DEFAULT_RETRIES};
use crate::engine_spec::{expand_env, EngineSpec, DEFAULT_TIMEOUT_MS};
use crate::suite::{LlmApi, LlmEndpoint};
use tape::{Source, Tape};

/// Alternatives of the answer token asked for by default (OpenAI's chat API allows 20).
pub const DEFAULT_TOP_LOGPROBS: u32 = 20;

/// Characters of the query sent by default ([`LlmEndpoint::query_chars`]).
pub const DEFAULT_QUERY_CHARS: usize = 512;

/// Characters of each passage sent by default ([`LlmEndpoint::passage_chars`]).
pub const DEFAULT_PASSAGE_CHARS: usize = 2048;

/// The first `n` characters (Unicode scalar values) of `s`.
pub(crate) fn head(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((at, _)) => &s[..at],
        None => s,
    }
}

/// Chat messages `(role, content)` as the chat API takes them.
pub(crate) fn chat_messages(messages: [(&str, String); 2]) -> Vec<Value> {
    messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

/// The API's name as the configuration writes it.
pub fn api_name(api: LlmApi) -> &'static str {
    api.name()
}

/// The identity of an endpoint stage: API, model name, endpoint as written, the character
/// limits and (yes/no APIs) the prompt's sha256.
pub fn identity(e: &LlmEndpoint, prompt: &PromptTemplate) -> String {
    let base = format!(
        "llm-endpoint api={} model={} endpoint={} query_chars={} passage_chars={}",
        api_name(e.api),
        e.model,
        e.endpoint,
        e.query_chars.unwrap_or(DEFAULT_QUERY_CHARS),
        e.passage_chars.unwrap_or(DEFAULT_PASSAGE_CHARS),
    );
    match e.api {
        LlmApi::Rerank => base,
        _ => format!("{base} prompt-sha256={}", prompt.hash()),
    }
}

/// The stage, not connected yet (headers are expanded at the first request sent), and its
/// tape, which the replay sets to live, recording or replaying.
pub fn open(e: &LlmEndpoint, prompt: &PromptTemplate) -> (LazyCrossEncoder, Tape) {
    let tape = Tape::default();
    let id = identity(e, prompt);
    let scorer = EndpointScorer {
        identity: id.clone(),
        e: e.clone(),
        prompt: prompt.clone(),
        tape: tape.clone(),
        poster: Arc::new(Mutex::new(None)),
    };
    let lazy = LazyCrossEncoder::new(
        id,
        Box::new(move || Ok(Box::new(scorer.clone()) as Box<dyn CrossEncoder>)),
    );
    (lazy, tape)
}

/// The endpoint as a [`CrossEncoder`].
#[derive(Clone)]
pub struct EndpointScorer {
    identity: String,
    e: LlmEndpoint,
    prompt: PromptTemplate,
    tape: Tape,
    /// Made at the first request sent (its headers expanded then).
    poster: Arc<Mutex<Option<Arc<Poster>>>>,
}

/// One request: what is sent, its canonical form (the recordings' key), and the pairs it
/// scores as (request index, passage index).
struct Job {
    url: String,
    body: Value,
    key: String,
    pairs: Vec<(usize, usize)>,
}

impl EndpointScorer {
    /// `rerank endpoint URL (api)`, for messages.
    fn name(&self) -> String {
        format!(
            "rerank endpoint {} ({})",
            self.e.endpoint,
            api_name(self.e.api)
        )
    }

    fn error(&self, message: String) -> ranklab_engine::Error {
        ranklab_engine::Error::Model {
            model: self.name(),
            message,
        }
    }

    /// The requests of `requests`: one per pair (yes/no APIs) or one per query (`rerank`).
    fn jobs(&self, requests: &[(&str, Vec<&str>)]) -> Vec<Job> {
        let base = self.e.endpoint.trim_end_matches('/');
        let top = self.e.top_logprobs.unwrap_or(DEFAULT_TOP_LOGPROBS);
        let model = &self.e.model;
        let mut jobs = Vec::new();
        let mut push = |path: &str, body: Value, pairs: Vec<(usize, usize)>| {
            let url = format!("{base}/{path}");
            let key = canonical(&json!({"url": url, "body": body}));
            jobs.push(Job {
                url,
                body,
                key,
                pairs,
            });
        };
        let (qn, pn) = (
            self.e.query_chars.unwrap_or(DEFAULT_QUERY_CHARS),
            self.e.passage_chars.unwrap_or(DEFAULT_PASSAGE_CHARS),
        );
        for (ri, (q, passages)) in requests.iter().enumerate() {
            let q = head(q, qn);
            if self.e.api == LlmApi::Rerank {
                let documents: Vec<&str> = passages.iter().map(|p| head(p, pn)).collect();
                let body = json!({"model": model, "query": q, "documents": documents});
                push(
                    "rerank",
                    body,
                    (0..passages.len()).map(|pi| (ri, pi)).collect(),
                );
                continue;
            }
            for (pi, p) in passages.iter().enumerate() {
                let p = head(p, pn);
                let body = match self.e.api {
                    LlmApi::Completions => json!({
                        "model": model, "prompt": self.prompt.chatml(q, p),
                        "max_tokens": 1, "temperature": 0, "logprobs": top,
                    }),
                    _ => {
                        let messages = chat_messages(self.prompt.messages(q, p));
                        json!({
                            "model": model, "messages": messages, "max_tokens": 1,
                            "temperature": 0, "logprobs": true, "top_logprobs": top,
                        })
                    }
                };
                let path = match self.e.api {
                    LlmApi::Completions => "completions",
                    _ => "chat/completions",
                };
                push(path, body, vec![(ri, pi)]);
            }
        }
        jobs
    }

    /// The poster, made now if no request was sent yet (an unset `${NAME}` is an error).
    fn poster(&self) -> ranklab_engine::Result<Arc<Poster>> {
        let mut slot = self.poster.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = slot.as_ref() {
            return Ok(p.clone());
        }
        let mut headers = Vec::new();
        for (k, v) in &self.e.headers {
            let v = expand_env(v).map_err(|e| self.error(format!("header {k}: {e:#}")))?;
            headers.push((k.clone(), v));
        }
        crate::engine_spec::http::check_headers(
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .map_err(|e| self.error(format!("{e:#}")))?;
        let timeout = Duration::from_millis(self.e.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS));
        let retries = self.e.retries.unwrap_or(DEFAULT_RETRIES);
        let p = Arc::new(Poster::new(&self.name(), headers, retries, timeout));
        *slot = Some(p.clone());
        Ok(p)
    }

    /// The secrets a response may echo (the headers' values), replaced before it is kept.
    fn secrets(&self) -> Secrets {
        let spec: EngineSpec = serde_json::from_value(json!({"http": {
            "url": self.e.endpoint, "headers": self.e.headers, "preset": "opensearch",
        }}))
        .expect("an endpoint's URL and headers make an HTTP engine spec");
        Secrets::of(&spec)
    }

    /// Every job's response text (canonical JSON of the response as recorded): from the tape,
    /// or asked from the endpoint by `concurrency` workers sharing one queue.
    fn answers(
        &self,
        jobs: &[Job],
        requests: &[(&str, Vec<&str>)],
    ) -> ranklab_engine::Result<Vec<String>> {
        let mut out: Vec<Option<String>> = Vec::with_capacity(jobs.len());
        let mut live = Vec::new();
        for (i, j) in jobs.iter().enumerate() {
            let what = || describe(requests, j);
            match self.tape.source(&j.key, &what).map_err(|m| self.error(m))? {
                Source::Recorded(text) => out.push(Some(text)),
                Source::Live => {
                    out.push(None);
                    live.push(i);
                }
            }
        }
        if !live.is_empty() {
            let asked = self.ask(jobs, &live)?;
            for (i, text) in live.into_iter().zip(asked) {
                out[i] = Some(text);
            }
        }
        Ok(out
            .into_iter()
            .map(|t| t.expect("every job answered"))
            .collect())
    }

    /// Sends the jobs `which`, `concurrency` in flight; their responses (secrets replaced) as
    /// canonical JSON, in the order of `which`.
    fn ask(&self, jobs: &[Job], which: &[usize]) -> ranklab_engine::Result<Vec<String>> {
        let poster = self.poster()?;
        let secrets = self.secrets();
        let slots: Vec<Mutex<Option<String>>> = which.iter().map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        let n = self
            .e
            .concurrency
            .unwrap_or(DEFAULT_CONCURRENCY)
            .min(which.len());
        std::thread::scope(|s| {
            for _ in 0..n {
                s.spawn(|| {
                    let mut client = poster.client();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&i) = which.get(k) else { break };
                        let j = &jobs[i];
                        let mut response = poster.post(&mut client, &j.url, &j.body.to_string());
                        secrets.redact(&mut response);
                        *slots[k].lock().unwrap_or_else(|e| e.into_inner()) =
                            Some(canonical(&response));
                    }
                });
            }
        });
        Ok(slots
            .into_iter()
            .map(|m| {
                m.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .expect("every job asked")
            })
            .collect())
    }

    /// The scores a job's response gives, one per pair of the job.
    fn read(&self, j: &Job, text: &str) -> Result<Vec<f32>, String> {
        let response: Value = serde_json::from_str(text)
            .map_err(|e| format!("the recorded response is not JSON ({e})"))?;
        let body = answer::body(&response).map_err(|m| {
            if response.get("status").and_then(Value::as_u64) == Some(400) {
                format!(
                    "{m}; if the server says the prompt is longer than its context, lower \
                     `passage_chars` (now {}) or `query_chars` (now {})",
                    self.e.passage_chars.unwrap_or(DEFAULT_PASSAGE_CHARS),
                    self.e.query_chars.unwrap_or(DEFAULT_QUERY_CHARS)
                )
            } else {
                m
            }
        })?;
        match self.e.api {
            LlmApi::Completions => answer::completions_score(body).map(|s| vec![s]),
            LlmApi::Chat => answer::chat_score(body).map(|s| vec![s]),
            LlmApi::Rerank => answer::rerank_scores(body, j.pairs.len()),
        }
    }
}

/// "query "...", passage "..."" (or "N passages") for messages.
fn describe(requests: &[(&str, Vec<&str>)], j: &Job) -> String {
    let (ri, pi) = j.pairs.first().copied().unwrap_or_default();
    let (q, passages) = &requests[ri];
    match j.pairs.len() {
        1 => format!(
            "query {:?}, passage {:?}",
            cut(q, 80),
            cut(passages.get(pi).copied().unwrap_or_default(), 80)
        ),
        n => format!("query {:?} ({n} passages)", cut(q, 80)),
    }
}

impl CrossEncoder for EndpointScorer {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn score(&mut self, query: &str, passages: &[&str]) -> ranklab_engine::Result<Vec<f32>> {
        let mut out = self.score_many(&[(query, passages.to_vec())])?;
        Ok(out.pop().expect("one request, one list"))
    }

    fn score_many(
        &mut self,
        requests: &[(&str, Vec<&str>)],
    ) -> ranklab_engine::Result<Vec<Vec<f32>>> {
        let jobs = self.jobs(requests);
        let texts = self.answers(&jobs, requests)?;
        let mut out: Vec<Vec<f32>> = requests.iter().map(|(_, p)| vec![0.0; p.len()]).collect();
        for (j, text) in jobs.iter().zip(&texts) {
            let scores = self
                .read(j, text)
                .map_err(|m| self.error(format!("{}: {m}", describe(requests, j))))?;
            let mut pairs = Vec::with_capacity(j.pairs.len());
            for (&(ri, pi), s) in j.pairs.iter().zip(scores) {
                out[ri][pi] = s;
                pairs.push((requests[ri].0, requests[ri].1[pi]));
            }
            self.tape.keep(&j.key, text, &pairs);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    //! Against a stand-in HTTP server (a thread answering every request with one fixed
    //! response, keeping each request's body): the requests' shape, and the errors of malformed
    //! or failing responses. Expected scores are subtractions done by hand from the literals.

    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;

    /// Serves `status` + `body` to every request; returns the endpoint URL and the bodies
    /// received.
    fn stand_in(status: u16, body: &'static str) -> (String, Arc<Mutex<Vec<Value>>>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let kept = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut s = BufReader::new(stream.unwrap());
                let mut len = 0;
                loop {
                    let mut line = String::new();
                    s.read_line(&mut line).unwrap();
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                }
                let mut b = vec![0; len];
                s.read_exact(&mut b).unwrap();
                kept.lock()
                    .unwrap()
                    .push(serde_json::from_slice(&b).unwrap());
                let reply = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                s.get_mut().write_all(reply.as_bytes()).unwrap();
            }
        });
        (url, seen)
    }

    fn scorer(url: &str, api: LlmApi) -> EndpointScorer {
        let e: LlmEndpoint = serde_json::from_value(json!({
            "endpoint": url, "model": "m", "api": api_name(api), "retries": 1,
        }))
        .unwrap();
        let (lazy, tape) = open(&e, &PromptTemplate::default());
        EndpointScorer {
            identity: lazy.identity().to_string(),
            e,
            prompt: PromptTemplate::default(),
            tape,
            poster: Arc::new(Mutex::new(None)),
        }
    }

    #[test]
    fn completions_sends_the_chatml_prompt_and_reads_yes_minus_no() {
        let (url, seen) = stand_in(
            200,
            r#"{"choices":[{"logprobs":{"top_logprobs":[{"yes":-0.5,"no":-2.0}]}}]}"#,
        );
        let mut s = scorer(&url, LlmApi::Completions);
        assert_eq!(s.score("q", &["p1", "p2"]).unwrap(), vec![1.5, 1.5]);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "one request per pair");
        let want = PromptTemplate::default().chatml("q", "p1");
        assert!(
            seen.iter().any(|b| b["prompt"] == want.as_str()),
            "{seen:?}"
        );
        assert_eq!(seen[0]["max_tokens"], 1);
        assert_eq!(seen[0]["temperature"], 0);
        assert_eq!(seen[0]["logprobs"], 20);
    }

    #[test]
    fn long_queries_and_passages_are_cut_to_their_character_limits() {
        let (url, seen) = stand_in(200, r#"{"results":[{"index":0,"relevance_score":0.5}]}"#);
        // 3000 characters, 'é' (two bytes) at the cut: a byte slice there would split it.
        let passage = format!("{}é{}", "a".repeat(2047), "b".repeat(952));
        let query = "q".repeat(600);
        scorer(&url, LlmApi::Rerank)
            .score(&query, &[passage.as_str()])
            .unwrap();
        let seen = seen.lock().unwrap();
        let doc = seen[0]["documents"][0].as_str().unwrap();
        assert_eq!(doc.chars().count(), 2048);
        assert_eq!(doc, format!("{}é", "a".repeat(2047)));
        assert_eq!(seen[0]["query"].as_str().unwrap(), "q".repeat(512));
    }

    #[test]
    fn a_400_names_the_character_limits() {
        let (url, _) = stand_in(400, r#"{"error":"prompt exceeds context"}"#);
        let e = scorer(&url, LlmApi::Completions)
            .score("q", &["p"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("HTTP 400")
                && e.contains("prompt exceeds context")
                && e.contains("`passage_chars` (now 2048)"),
            "{e}"
        );
    }

    #[test]
    fn a_response_without_logprobs_is_an_error_naming_the_endpoint_and_the_pair() {
        let (url, _) = stand_in(200, r#"{"choices":[{"text":"yes","logprobs":null}]}"#);
        let e = scorer(&url, LlmApi::Completions)
            .score("why", &["because"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("rerank endpoint {url} (completions)"))
                && e.contains("query \"why\", passage \"because\"")
                && e.contains("no log-probabilities"),
            "{e}"
        );
    }

    #[test]
    fn an_http_error_is_retried_then_stops_the_scoring() {
        let (url, seen) = stand_in(503, r#"{"error":"overloaded"}"#);
        let e = scorer(&url, LlmApi::Chat)
            .score("q", &["p"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("HTTP 503") && e.contains("overloaded"), "{e}");
        assert_eq!(
            seen.lock().unwrap().len(),
            2,
            "the request and its one retry"
        );
    }

    #[test]
    fn rerank_sends_one_request_per_query_and_refuses_a_duplicate_index() {
        let (url, seen) = stand_in(
            200,
            r#"{"results":[{"index":1,"relevance_score":0.5},{"index":1,"relevance_score":0.25}]}"#,
        );
        let e = scorer(&url, LlmApi::Rerank)
            .score("q", &["a", "b"])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("query \"q\" (2 passages)") && e.contains("index 1 appears twice"),
            "{e}"
        );
        let seen = seen.lock().unwrap();
        assert_eq!(
            *seen,
            vec![json!({"model": "m", "query": "q", "documents": ["a", "b"]})]
        );
    }
}
