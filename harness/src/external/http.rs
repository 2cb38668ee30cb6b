//! The HTTP adapter: one request per task from a template, hits read from the response with
//! JSON pointers (RFC 6901), `concurrency` requests in flight.
//!
//! - `url` and `body` are templates: `{{query}}`, `{{k}}` and `{{task}}` are replaced per task
//!   (JSON-escaped in the body, so `"q": "{{query}}"` stays valid JSON for any query;
//!   percent-encoded in the URL). Any other `{{name}}` is an error. The body must be JSON once
//!   substituted (checked before the first request).
//! - `headers` (and the URL) may name environment variables as `${NAME}`; they are expanded
//!   only for the request sent, never in what is recorded or printed.
//! - Connection errors, timeouts, 429 and 5xx are retried `retries` times (default 3) with
//!   exponential back-off (100 ms, 200 ms, 400 ms, ...), or, when a 429 or 503 carries
//!   `Retry-After` (seconds or an HTTP date), after the wait it asks for, at most 30 s (said on
//!   stderr once per engine); the count is printed with the rate.
//! - The tasks are one shared queue: a worker takes the next task only when it is free to send
//!   it, so a request the engine never answers holds back no other task (it fails after
//!   `timeout_ms` and its retries).
//!   A request that finally fails is the task's engine error (`HTTP 503: <first 200 bytes>`).
//!
//! The client: for `http://`, [`wire`] (one keep-alive connection per worker, `httparse` for the
//! response head; one write and usually one read per request); for `https://`, `ureq` (rustls),
//! an agent per worker whose request head and body leave in one write. Not recording, a
//! response's hits are read straight from its bytes ([`walk`]); a recording keeps the parsed
//! response and reads the hits from it, the way `--from-recording` reads them.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use super::{cut, snippet, walk, wire, Exchange};
use crate::engine_spec::http::HttpSpec;
use crate::engine_spec::http::{env_filled, fill, DEFAULT_RETRIES};
use crate::engine_spec::{expand_env, EngineSpec};
use crate::suite::Task;

/// The body template with each `${NAME}` replaced by the environment variable, JSON-escaped
/// (write it inside a JSON string: `"key": "${API_KEY}"`). Expanded before the placeholders
/// are filled, so a query that holds `${...}` is sent as written.
fn expand_body(template: &str) -> Result<String> {
    let mut missing = None;
    let out = env_filled(template, |name| match std::env::var(name) {
        Ok(v) => json_escaped(&v),
        Err(_) => {
            missing.get_or_insert_with(|| name.to_string());
            String::new()
        }
    });
    if let Some(name) = missing {
        bail!("environment variable {name} (named as ${{{name}}}) is not set; set it, or replay from the recording with --from-recording");
    }
    Ok(out)
}

/// A string's JSON escape, without the quotes.
fn json_escaped(s: &str) -> String {
    let q = Value::String(s.to_string()).to_string();
    q[1..q.len() - 1].to_string()
}

/// Percent-encoding of everything but RFC 3986's unreserved characters.
fn percent_encoded(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What ranklab sends for a task, as recorded: method, URL and body with the placeholders
/// filled, `${NAME}` left as written; headers are not recorded (they hold secrets).
pub fn request(h: &HttpSpec, task: &Task, k: usize) -> Value {
    let url = url_text(h, task, k);
    let body = body_text(h.body.as_deref(), task, k)
        .map(|text| serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)));
    serde_json::json!({
        "method": h.method().unwrap_or("POST"),
        "url": url,
        "body": body,
    })
}

/// The URL of a task (before `${NAME}` is expanded).
fn url_text(h: &HttpSpec, task: &Task, k: usize) -> String {
    fill(&h.url, |n| match n {
        "query" => percent_encoded(&task.query),
        "task" => percent_encoded(&task.id),
        _ => k.to_string(),
    })
}

/// The body of a task: `template` (the configuration's, or it with `${NAME}` expanded: what is
/// sent) with its placeholders filled, byte for byte.
fn body_text(template: Option<&str>, task: &Task, k: usize) -> Option<String> {
    template.map(|b| {
        fill(b, |n| match n {
            "query" => json_escaped(&task.query),
            "task" => json_escaped(&task.id),
            _ => k.to_string(),
        })
    })
}

/// A JSON pointer (RFC 6901), its reference tokens decoded once: [`Value::pointer`] decodes
/// them again (two `String`s per token) at every lookup, which is a cost per hit per request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    text: String,
    tokens: Vec<String>,
}

impl Pointer {
    /// `text` (`""`, the whole value, or `/a/b`; `~1` is `/` and `~0` is `~` in a token).
    pub fn new(text: &str) -> Pointer {
        let tokens = text
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
            .collect();
        Pointer {
            text: text.to_string(),
            tokens,
        }
    }

    /// The value `self` points at in `v` (what [`Value::pointer`] answers).
    pub fn get<'a>(&self, v: &'a Value) -> Option<&'a Value> {
        if !self.text.is_empty() && !self.text.starts_with('/') {
            return None;
        }
        self.tokens.iter().try_fold(v, |at, t| match at {
            Value::Object(m) => m.get(t),
            // An array index: decimal digits, no sign, no leading zero.
            Value::Array(a) if t == "0" || !(t.starts_with('0') || t.starts_with('+')) => {
                t.parse::<usize>().ok().and_then(|i| a.get(i))
            }
            _ => None,
        })
    }
}

/// The pointers of a configuration, parsed once.
#[derive(Debug, Clone)]
pub struct Pointers {
    hits: Pointer,
    id: Pointer,
    score: Option<Pointer>,
}

impl HttpSpec {
    /// The pointers ([`HttpSpec::shape`]), parsed.
    pub fn pointers(&self) -> Result<Pointers> {
        let (hits, id, score) = self.shape()?;
        Ok(Pointers {
            hits: Pointer::new(&hits),
            id: Pointer::new(&id),
            score: score.as_deref().map(Pointer::new),
        })
    }
}

/// Turns an HTTP exchange's response (live or recorded) into a ranking, or the engine's error
/// (`HTTP 503: <first 200 bytes>`, a request that failed): the hits the pointers find, checked
/// and ordered as [`super::rank_hits`] does for the command protocol.
pub fn ranking(
    p: &Pointers,
    task: &str,
    response: &Value,
    k: usize,
) -> Result<std::result::Result<Vec<super::ExtHit>, String>> {
    if let Some(e) = response.get("error").and_then(Value::as_str) {
        return Ok(Err(e.to_string()));
    }
    let status = response.get("status").and_then(Value::as_u64).unwrap_or(0);
    let body = response.get("body").unwrap_or(&Value::Null);
    if !(200..300).contains(&status) {
        let text = match response.get("text").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None => body.to_string(),
        };
        return Ok(Err(format!("HTTP {status}: {}", cut(&text, 200))));
    }
    if let Some(t) = response.get("text").and_then(Value::as_str) {
        bail!(
            "task {task}: the HTTP {status} response is not JSON: {}",
            cut(t, 200)
        );
    }
    let hits_p = &p.hits.text;
    let hits = p.hits.get(body).with_context(|| {
        format!(
            "task {task}: the pointer `hits: {hits_p}` matches nothing in the response: {}",
            snippet(body)
        )
    })?;
    let hits = hits.as_array().with_context(|| {
        format!(
            "task {task}: `hits: {hits_p}` points at {}, not a list",
            snippet(hits)
        )
    })?;
    // Every pointer must match in every hit before a hit's values are judged.
    for (i, hit) in hits.iter().enumerate() {
        if p.id.get(hit).is_none() {
            bail!(
                "task {task}: the pointer `id: {}` matches nothing in hit {}: {}",
                p.id.text,
                i + 1,
                snippet(hit)
            );
        }
        if let Some(sp) = p.score.as_ref().filter(|sp| sp.get(hit).is_none()) {
            bail!("task {task}: the pointer `score: {}` matches nothing in hit {}: {} (write `score: \"\"` when the engine gives none)", sp.text, i + 1, snippet(hit));
        }
    }
    let found = |i: usize| {
        let hit = &hits[i];
        (p.id.get(hit), p.score.as_ref().and_then(|sp| sp.get(hit)))
    };
    let shown = |i: usize| {
        let (id, score) = found(i);
        shown_hit(id, score)
    };
    super::rank_hits(task, hits.len(), found, shown, k).map(Ok)
}

/// A JSON object of `pairs`, moved in (`json!` would copy an interpolated `Value` through
/// serde, a cost per request that shows in the replay's rate).
fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// What one request finally got: the status and body, or why it failed.
enum Got {
    Reply(u16, Vec<u8>),
    Failed(String),
}

/// The response as recorded: `{"status", "body"}` (a 2xx whose body is JSON), `{"status",
/// "text"}` (any other body, its first 2000 bytes as text), or `{"error"}` (no response).
fn recorded(got: &Got) -> Value {
    match got {
        Got::Failed(e) => object([("error", e.clone().into())]),
        Got::Reply(status, b) => {
            // An error's body is kept as sent (its first bytes go into the message).
            let json = (200..300)
                .contains(status)
                .then(|| serde_json::from_slice::<Value>(b).ok())
                .flatten();
            match json {
                Some(json) => object([("status", (*status).into()), ("body", json)]),
                None => {
                    let text = cut(&String::from_utf8_lossy(b), 2000);
                    object([("status", (*status).into()), ("text", text.into())])
                }
            }
        }
    }
}

/// A worker's clients: its plain-HTTP connection ([`wire`]) and, for `https://`, a ureq agent
/// (made when first needed).
struct Clients {
    plain: wire::Client,
    tls: Option<ureq::Agent>,
    config: ureq::config::Config,
}

impl Clients {
    fn agent(&mut self) -> &ureq::Agent {
        let config = &self.config;
        self.tls.get_or_insert_with(|| {
            ureq::Agent::with_parts(
                config.clone(),
                ureq::unversioned::transport::Connector::chain(
                    ureq::unversioned::transport::DefaultConnector::new(),
                    OneWrite,
                ),
                ureq::unversioned::resolver::DefaultResolver::default(),
            )
        })
    }
}

/// One attempt through ureq (`https://`).
fn attempt_tls(
    agent: &ureq::Agent,
    method: &str,
    url: &str,
    headers: &[(String, String)],
    body: Option<&str>,
) -> std::result::Result<(u16, Vec<u8>, Option<String>), String> {
    let result = match method {
        "GET" => {
            let mut r = agent.get(url);
            for (k, v) in headers {
                r = r.header(k, v);
            }
            r.call()
        }
        m => {
            let mut r = if m == "PUT" {
                agent.put(url)
            } else {
                agent.post(url)
            };
            r = r.header("Content-Type", "application/json");
            for (k, v) in headers {
                r = r.header(k, v);
            }
            r.send(body.unwrap_or_default())
        }
    };
    match result {
        Ok(mut resp) => {
            let status = resp.status().as_u16();
            let asked = resp
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            resp.body_mut()
                .with_config()
                .limit(wire::MAX_BODY as u64)
                .read_to_vec()
                .map(|b| (status, b, asked))
                .map_err(|e| format!("reading the response: {e}"))
        }
        Err(e) => Err(format!("request failed: {e}")),
    }
}

/// A task's request ready to send: the URL as sent (or why it cannot be), its body and, for an
/// `http://` URL, the address to connect to and the request's bytes ([`wire::Client::encode`]).
struct Ready<'a> {
    url: std::result::Result<String, String>,
    body: Option<&'a str>,
    plain: Option<(String, Vec<u8>)>,
}

fn ready<'a>(
    h: &HttpSpec,
    headers: &[(String, String)],
    (url, body): (&str, Option<&'a str>),
) -> Ready<'a> {
    let url = expand_env(url).map_err(|e| format!("{e:#}"));
    let plain = url.as_ref().ok().and_then(|u| {
        let t = wire::target(u)?;
        let mut bytes = Vec::new();
        let method = h.method().unwrap_or("POST");
        wire::Client::encode(method, &t, headers, body.map(str::as_bytes), &mut bytes);
        Some((t.connect, bytes))
    });
    Ready { url, body, plain }
}

/// The longest wait a `Retry-After` header is honoured for.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// How the requests of a configuration are retried.
struct Retry<'a> {
    name: &'a str,
    h: &'a HttpSpec,
    headers: &'a [(String, String)],
    retries: u32,
    retried: &'a AtomicUsize,
    /// Whether a `Retry-After` wait was said on stderr (once per engine).
    waited_as_asked: &'a std::sync::atomic::AtomicBool,
}

/// The wait a `Retry-After` value asks for: delay-seconds, or an HTTP date (RFC 9110 10.2.3),
/// counted from now (a date past is no wait); `None` for a value that is neither.
pub fn retry_after(value: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let v = value.trim();
    if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(v.parse::<u64>().unwrap_or(u64::MAX)));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let ms = (at.with_timezone(&chrono::Utc) - now).num_milliseconds();
    Some(Duration::from_millis(ms.max(0) as u64))
}

/// One request, retried on connection errors, timeouts, 429 and 5xx, after an exponential
/// back-off (100 ms, 200 ms, 400 ms, ... at most 5 s) or, when a 429 or 503 says
/// `Retry-After`, after the wait it asks for, at most [`MAX_RETRY_AFTER`]. `meanwhile` runs
/// once, while the engine works on the first attempt (after its request was written, before
/// its response is read), so that the worker's own work is not added to each request's round
/// trip.
fn send(clients: &mut Clients, policy: &Retry<'_>, r: &Ready<'_>, meanwhile: impl FnOnce()) -> Got {
    let mut meanwhile = Some(meanwhile);
    let mut meanwhile = move || {
        if let Some(f) = meanwhile.take() {
            f()
        }
    };
    let url = match &r.url {
        Ok(u) => u,
        Err(e) => {
            meanwhile();
            return Got::Failed(e.clone());
        }
    };
    let method = policy.h.method().unwrap_or("POST");
    let mut attempt = 0;
    let mut buf = Vec::new();
    loop {
        let outcome = match &r.plain {
            Some((connect, request)) => {
                let begun = clients.plain.begin(connect, request);
                meanwhile();
                begun
                    .and_then(|()| clients.plain.finish(connect, request, &mut buf))
                    .map(|status| {
                        let asked = clients.plain.retry_after.take();
                        (status, std::mem::take(&mut buf), asked)
                    })
                    .map_err(|f| match f {
                        wire::Failure::Request(e) => format!("request failed: {e}"),
                        wire::Failure::Body(e) => format!("reading the response: {e}"),
                    })
            }
            None => {
                meanwhile();
                attempt_tls(clients.agent(), method, url, policy.headers, r.body)
            }
        };
        let retry = match &outcome {
            Ok((status, _, _)) => *status == 429 || *status >= 500,
            Err(_) => true,
        };
        if !retry || attempt >= policy.retries {
            return match outcome {
                Ok((status, b, _)) => Got::Reply(status, b),
                Err(e) => Got::Failed(e),
            };
        }
        policy.retried.fetch_add(1, Ordering::Relaxed);
        let backoff = Duration::from_millis((100u64 << attempt.min(6)).min(5_000));
        let asked = match &outcome {
            Ok((429 | 503, _, Some(v))) => retry_after(v, chrono::Utc::now()).map(|d| (v, d)),
            _ => None,
        };
        let wait = match asked {
            Some((v, d)) => {
                let d = d.min(MAX_RETRY_AFTER);
                if !policy.waited_as_asked.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "{}: the engine asked to wait before retrying (Retry-After: {}); waiting {:.1} s (at most {} s)",
                        policy.name,
                        v.trim(),
                        d.as_secs_f64(),
                        MAX_RETRY_AFTER.as_secs()
                    );
                }
                d.max(backoff)
            }
            None => backoff,
        };
        std::thread::sleep(wait);
        attempt += 1;
    }
}

/// A task's ranking from what its request got, and the response as recorded when `keep`.
///
/// Not recording, a 2xx response is read straight from its bytes ([`walk`]), with no JSON tree;
/// whatever that way does not read (a pointer that matches nothing, a body that is not JSON) is
/// read through the tree as a recording is, which words the error.
fn answer(
    p: &Pointers,
    task: &str,
    got: Got,
    k: usize,
    keep: bool,
    secrets: &super::Secrets,
) -> (
    Option<Value>,
    Result<std::result::Result<Vec<super::ExtHit>, String>>,
) {
    if let (false, Got::Reply(200..=299, b)) = (keep, &got) {
        if let Some(found) = walk::hits(
            b,
            &p.hits.tokens,
            &p.id.tokens,
            p.score.as_ref().map(|s| s.tokens.as_slice()),
        ) {
            return (None, rank_found(task, &found, k).map(Ok));
        }
    }
    let mut v = recorded(&got);
    // What is recorded holds no secret (an engine may echo a header), and is read as the
    // recording will be.
    if keep {
        secrets.redact(&mut v);
    }
    let parsed = ranking(p, task, &v, k);
    (keep.then_some(v), parsed)
}

/// The hits' (id, score) values as a ranking, judged and worded as [`ranking`] judges the
/// tree's.
fn rank_found(
    task: &str,
    found: &[(Value, Option<Value>)],
    k: usize,
) -> Result<Vec<super::ExtHit>> {
    super::rank_hits(
        task,
        found.len(),
        |i| (Some(&found[i].0), found[i].1.as_ref()),
        |i| shown_hit(Some(&found[i].0), found[i].1.as_ref()),
        k,
    )
}

/// A hit as a message shows it: the values the pointers found.
fn shown_hit(id: Option<&Value>, score: Option<&Value>) -> String {
    let mut o = serde_json::Map::new();
    o.insert("id".into(), id.cloned().unwrap_or(Value::Null));
    if let Some(s) = score {
        o.insert("score".into(), s.clone());
    }
    snippet(&Value::Object(o))
}

/// What [`run`] gives per task: the ranking (or the engine's error) and, when asked to keep
/// it, the exchange for the recording.
pub type Answers = (
    Vec<Exchange>,
    Vec<Result<std::result::Result<Vec<super::ExtHit>, String>>>,
);

/// Asks the engine every task, `concurrency` at a time, each worker taking the next task from a
/// shared queue when it is free. Each worker keeps its own work off the round trip: while the
/// engine answers one task, the worker reads the answer to the previous one ([`send`]'s
/// `meanwhile`). The exchanges (for `--record`)
/// are kept only when `keep` says so, in suite order.
///
/// Each worker has its own agent (its own keep-alive connection, no lock shared with the other
/// workers), and the request's head and body leave in one write ([`OneWrite`]).
pub fn run(
    name: &str,
    spec: &EngineSpec,
    h: &HttpSpec,
    tasks: &[Task],
    k: usize,
    keep: bool,
) -> Result<Answers> {
    let plan = Plan::new(name, spec, h, tasks, k)?;
    let slots = ask(&plan, tasks, k, keep);
    Ok(collect(h, tasks, k, keep, slots))
}

/// What [`run`] sends, checked before the first request: the headers and body with `${NAME}`
/// expanded, every task's URL and body, the pointers, the workers' ureq configuration.
struct Plan<'a> {
    name: &'a str,
    spec: &'a EngineSpec,
    h: &'a HttpSpec,
    headers: Vec<(String, String)>,
    secrets: super::Secrets,
    /// Workers (requests in flight).
    n: usize,
    pointers: Pointers,
    config: ureq::config::Config,
    urls: Vec<String>,
    bodies: Vec<Option<String>>,
}

impl<'a> Plan<'a> {
    fn new(
        name: &'a str,
        spec: &'a EngineSpec,
        h: &'a HttpSpec,
        tasks: &[Task],
        k: usize,
    ) -> Result<Plan<'a>> {
        let headers: Vec<(String, String)> = h
            .headers
            .iter()
            .map(|(k, v)| {
                expand_env(v)
                    .with_context(|| format!("configuration {name:?}: header {k}"))
                    .map(|v| (k.clone(), v))
            })
            .collect::<Result<_>>()?;
        crate::engine_spec::http::check_headers(
            headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        )
        .with_context(|| format!("configuration {name:?}"))?;
        let url = expand_env(&h.url).with_context(|| format!("configuration {name:?}: url"))?;
        crate::engine_spec::http::no_control("the url", &url, false)
            .with_context(|| format!("configuration {name:?}"))?;
        let body = h
            .body
            .as_deref()
            .map(expand_body)
            .transpose()
            .with_context(|| format!("configuration {name:?}: body"))?;
        let secrets = super::Secrets::of(spec);
        let n = h.concurrency().min(tasks.len().max(1));
        let pointers = h.pointers()?;
        let config = agent_config(spec.timeout());
        // What is sent; the requests as recorded only for a recording.
        let urls: Vec<String> = tasks.iter().map(|t| url_text(h, t, k)).collect();
        let bodies: Vec<Option<String>> = tasks
            .iter()
            .map(|t| body_text(body.as_deref(), t, k))
            .collect();
        Ok(Plan {
            name,
            spec,
            h,
            headers,
            secrets,
            n,
            pointers,
            config,
            urls,
            bodies,
        })
    }
}

/// The ureq configuration of every worker's agent: each phase waits at most `timeout`.
fn agent_config(timeout: Duration) -> ureq::config::Config {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        // Per phase, not `timeout_global`: with a global timeout ureq resolves every request's
        // host on a new thread (to abort a slow lookup), which halves the rate on loopback.
        .timeout_connect(Some(timeout))
        .timeout_send_request(Some(timeout))
        .timeout_send_body(Some(timeout))
        .timeout_recv_response(Some(timeout))
        .timeout_recv_body(Some(timeout))
        .max_idle_connections_per_host(1)
        .max_idle_connections(1)
        .build()
}

/// A task's answer once asked: the response as recorded (when kept) and its ranking.
type Slot = Option<(
    Option<Value>,
    Result<std::result::Result<Vec<super::ExtHit>, String>>,
)>;

/// Sends every task's request from `plan.n` workers and reads the answers (one slot per task,
/// in suite order); says the rate on stderr.
fn ask(plan: &Plan<'_>, tasks: &[Task], k: usize, keep: bool) -> Vec<Slot> {
    let (name, h, n) = (plan.name, plan.h, plan.n);
    let answers: Vec<Mutex<Slot>> = tasks.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let retried = AtomicUsize::new(0);
    let waited_as_asked = std::sync::atomic::AtomicBool::new(false);
    let policy = Retry {
        name,
        h,
        headers: &plan.headers,
        retries: h.retries.unwrap_or(DEFAULT_RETRIES),
        retried: &retried,
        waited_as_asked: &waited_as_asked,
    };
    let pb = crate::progress::rate_bar(tasks.len() as u64, name);
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| {
                let mut clients = Clients {
                    plain: wire::Client::new(plan.spec.timeout()),
                    tls: None,
                    config: plan.config.clone(),
                };
                // The tasks are one shared queue, and a worker claims a task only when it is
                // free to send it: a request the engine never answers holds back no other task.
                // While the engine answers task i, the worker reads the answer to the previous.
                let claim = || {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    (i < tasks.len()).then(|| {
                        let what = (plan.urls[i].as_str(), plan.bodies[i].as_deref());
                        (i, ready(h, &plan.headers, what))
                    })
                };
                let store = |i: usize, got: Got| {
                    let id = &tasks[i].id;
                    let (v, parsed) = answer(&plan.pointers, id, got, k, keep, &plan.secrets);
                    *answers[i].lock().unwrap_or_else(|e| e.into_inner()) = Some((v, parsed));
                    pb.inc(1);
                };
                let mut done: Option<(usize, Got)> = None;
                while let Some((i, r)) = claim() {
                    let previous = done.take();
                    let got = send(&mut clients, &policy, &r, || {
                        if let Some((j, g)) = previous {
                            store(j, g);
                        }
                    });
                    done = Some((i, got));
                }
                if let Some((j, g)) = done {
                    store(j, g);
                }
            });
        }
    });
    pb.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    eprintln!(
        "{name}: {} requests in {secs:.2} s ({:.0} queries/s, {n} in flight), {} retries",
        tasks.len(),
        tasks.len() as f64 / secs.max(1e-9),
        retried.load(Ordering::Relaxed)
    );
    answers
        .into_iter()
        .map(|a| a.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

/// The rankings in suite order and, when `keep`, the exchanges for the recording.
fn collect(h: &HttpSpec, tasks: &[Task], k: usize, keep: bool, slots: Vec<Slot>) -> Answers {
    let mut exchanges = Vec::with_capacity(if keep { tasks.len() } else { 0 });
    let mut parsed = Vec::with_capacity(tasks.len());
    for (t, slot) in tasks.iter().zip(slots) {
        let (response, p) = slot.expect("every task was asked");
        if let Some(response) = response {
            exchanges.push(Exchange {
                task: t.id.clone(),
                request: request(h, t, k),
                response,
            });
        }
        parsed.push(p);
    }
    (exchanges, parsed)
}

/// JSON bodies sent by POST with the adapter's clients and retry policy, for callers that are not
/// a search engine's first stage (a rerank endpoint, [`super::rerank`]): one [`Poster`] per
/// endpoint (its headers with `${NAME}` expanded, its retries and timeout), one
/// [`PostClient`] per worker thread (its own keep-alive connection).
pub struct Poster {
    name: String,
    /// The method's source: a POST with a body (the URL and body are given per request).
    spec: HttpSpec,
    headers: Vec<(String, String)>,
    retries: u32,
    retried: AtomicUsize,
    waited_as_asked: std::sync::atomic::AtomicBool,
    config: ureq::config::Config,
    timeout: Duration,
}

/// One worker's connection for a [`Poster`].
pub struct PostClient(Clients);

impl Poster {
    /// A poster named `name` (in messages) sending `headers` (already expanded: they are never
    /// recorded), retrying `retries` times, each phase of a request waiting at most `timeout`.
    pub fn new(
        name: &str,
        headers: Vec<(String, String)>,
        retries: u32,
        timeout: Duration,
    ) -> Poster {
        Poster {
            name: name.to_string(),
            spec: HttpSpec {
                url: String::new(),
                method: Some("POST".into()),
                headers: Default::default(),
                body: Some("{}".into()),
                preset: None,
                hits: None,
                id: None,
                score: None,
                concurrency: None,
                retries: Some(retries),
            },
            headers,
            retries,
            retried: AtomicUsize::new(0),
            waited_as_asked: std::sync::atomic::AtomicBool::new(false),
            config: agent_config(timeout),
            timeout,
        }
    }

    /// A worker's client.
    pub fn client(&self) -> PostClient {
        PostClient(Clients {
            plain: wire::Client::new(self.timeout),
            tls: None,
            config: self.config.clone(),
        })
    }

    /// Requests retried so far.
    pub fn retried(&self) -> usize {
        self.retried.load(Ordering::Relaxed)
    }

    /// POSTs `body` to `url` (`${NAME}` expanded now), retried on connection errors, timeouts,
    /// 429 and 5xx as the adapter retries; the response as a recording keeps it:
    /// `{"status", "body"}` (a 2xx whose body is JSON), `{"status", "text"}` or `{"error"}`.
    pub fn post(&self, client: &mut PostClient, url: &str, body: &str) -> Value {
        let policy = Retry {
            name: &self.name,
            h: &self.spec,
            headers: &self.headers,
            retries: self.retries,
            retried: &self.retried,
            waited_as_asked: &self.waited_as_asked,
        };
        let r = ready(&self.spec, &self.headers, (url, Some(body)));
        recorded(&send(&mut client.0, &policy, &r, || {}))
    }
}

/// A transport that sends what ureq transmits in one write when it next waits for input: ureq
/// transmits a request's head and its body separately, and two small writes cost the engine two
/// reads (and, on loopback, the client two deliveries) per request, where a load tool makes one.
/// ureq only reuses a connection whose input buffer is empty, so every wait for a response
/// reaches [`ureq::unversioned::transport::Transport::await_input`], which writes first.
#[derive(Debug)]
struct OneWrite;

/// Bytes held before they are written anyway (a large body goes out in pieces of this size).
const ONE_WRITE_MAX: usize = 64 * 1024;

#[derive(Debug)]
struct OneWriteTransport {
    inner: Box<dyn ureq::unversioned::transport::Transport>,
    pending: Vec<u8>,
    timeout: Option<ureq::unversioned::transport::NextTimeout>,
}

impl OneWriteTransport {
    fn flush(&mut self) -> std::result::Result<(), ureq::Error> {
        let Some(timeout) = self.timeout.take() else {
            return Ok(());
        };
        let mut at = 0;
        while at < self.pending.len() {
            let out = self.inner.buffers().output();
            let n = out.len().min(self.pending.len() - at);
            out[..n].copy_from_slice(&self.pending[at..at + n]);
            self.inner.transmit_output(n, timeout)?;
            at += n;
        }
        self.pending.clear();
        Ok(())
    }
}

impl ureq::unversioned::transport::Connector<Box<dyn ureq::unversioned::transport::Transport>>
    for OneWrite
{
    type Out = OneWriteTransport;

    fn connect(
        &self,
        _: &ureq::unversioned::transport::ConnectionDetails,
        chained: Option<Box<dyn ureq::unversioned::transport::Transport>>,
    ) -> std::result::Result<Option<Self::Out>, ureq::Error> {
        Ok(chained.map(|inner| OneWriteTransport {
            inner,
            pending: Vec::new(),
            timeout: None,
        }))
    }
}

impl ureq::unversioned::transport::Transport for OneWriteTransport {
    fn buffers(&mut self) -> &mut dyn ureq::unversioned::transport::Buffers {
        self.inner.buffers()
    }

    fn transmit_output(
        &mut self,
        amount: usize,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> std::result::Result<(), ureq::Error> {
        let out = &self.inner.buffers().output()[..amount];
        self.pending.extend_from_slice(out);
        self.timeout = Some(timeout);
        if self.pending.len() >= ONE_WRITE_MAX {
            self.flush()?;
        }
        Ok(())
    }

    fn await_input(
        &mut self,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> std::result::Result<bool, ureq::Error> {
        self.flush()?;
        self.inner.await_input(timeout)
    }

    fn is_open(&mut self) -> bool {
        self.inner.is_open()
    }

    fn is_tls(&self) -> bool {
        self.inner.is_tls()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn spec(body: &str) -> HttpSpec {
        HttpSpec {
            url: "http://127.0.0.1:9/search?q={{query}}".into(),
            method: None,
            headers: BTreeMap::new(),
            body: Some(body.into()),
            preset: Some("opensearch".into()),
            hits: None,
            id: None,
            score: None,
            concurrency: None,
            retries: None,
        }
    }

    fn task(q: &str) -> Task {
        Task {
            id: "T\"1".into(),
            query: q.into(),
            expected: Default::default(),
            k: 5,
            note: None,
            line: 0,
        }
    }

    #[test]
    fn placeholders_are_json_escaped_in_the_body_and_percent_encoded_in_the_url() {
        let h = spec(
            r#"{"query": {"match": {"text": "{{query}}"}}, "size": {{k}}, "_name": "{{task}}"}"#,
        );
        h.check().unwrap();
        let q = "say \"hi\"\\ \n& café";
        let r = request(&h, &task(q), 7);
        // The substituted body parses, and holds the query and task exactly.
        assert_eq!(r["body"]["query"]["match"]["text"], q);
        assert_eq!(r["body"]["_name"], "T\"1");
        assert_eq!(r["body"]["size"], 7);
        assert_eq!(
            r["url"],
            "http://127.0.0.1:9/search?q=say%20%22hi%22%5C%20%0A%26%20caf%C3%A9"
        );
    }

    /// Both forms of RFC 9110's `Retry-After`, against waits computed by hand from a fixed
    /// "now" (2026-12-02 04:00:00 UTC, a Wednesday).
    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-02T04:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let secs = |v: &str| retry_after(v, now).map(|d| d.as_millis());
        assert_eq!(secs("1"), Some(1_000));
        assert_eq!(secs(" 120 "), Some(120_000));
        assert_eq!(secs("Wed, 02 Dec 2026 04:00:10 GMT"), Some(10_000));
        assert_eq!(secs("Wed, 02 Dec 2026 04:01:30 GMT"), Some(90_000));
        // A date past is no wait.
        assert_eq!(secs("Wed, 02 Dec 2026 03:59:00 GMT"), Some(0));
        assert_eq!(secs("soon"), None);
        assert_eq!(secs("-1"), None);
        assert_eq!(secs(""), None);
    }

    /// The oracle is serde_json's own `Value::pointer` (RFC 6901), on every pointer below over
    /// a value with escapes, arrays and empty keys.
    #[test]
    fn a_parsed_pointer_finds_what_serde_jsons_pointer_finds() {
        let v = serde_json::json!({
            "hits": {"hits": [{"_id": "a", "_score": 2.5}, {"_id": "b"}]},
            "a/b": {"m~n": 1, "~1": 2}, "": {"": 3}, "0": ["x", "y"], "list": [[1, 2], [3]],
        });
        let pointers = [
            "",
            "/",
            "//",
            "/hits",
            "/hits/hits",
            "/hits/hits/0/_id",
            "/hits/hits/1/_id",
            "/hits/hits/1/_score",
            "/hits/hits/2",
            "/hits/hits/01",
            "/hits/hits/+1",
            "/hits/hits/-",
            "/hits/hits/ 1",
            "/a~1b/m~0n",
            "/a~1b/~01",
            "/a~1b/~1",
            "/a/b",
            "/0/1",
            "/0/00",
            "/list/0/1",
            "/list/1/0",
            "/list/1/1",
            "hits",
            "/missing/x",
            "/hits/hits/18446744073709551616",
        ];
        for p in pointers {
            assert_eq!(Pointer::new(p).get(&v), v.pointer(p), "pointer {p:?}");
        }
    }

    #[test]
    fn an_unknown_placeholder_and_an_unquoted_string_placeholder_are_refused() {
        let e = spec(r#"{"q": "{{qeury}}"}"#)
            .check()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown placeholder {{qeury}}") && e.contains("{{query}}, {{k}}, {{task}}"),
            "{e}"
        );
        let e = spec(r#"{"q": {{query}}}"#).check().unwrap_err().to_string();
        assert!(
            e.contains("not JSON once its placeholders are filled"),
            "{e}"
        );
    }

    /// Each preset reads a response shaped as its engine documents it (fixtures in
    /// `harness/tests/fixtures/presets/`, written from the pages below; ids and scores are the
    /// fixtures', the expected lists are read off them by hand), through the same reading as a
    /// live or recorded response: ids (numbers as their decimal text) and scores, best first.
    #[test]
    fn every_preset_reads_a_response_shaped_as_its_engine_documents() {
        // (preset, response, the (id, score) list it must read)
        type Case = (&'static str, &'static str, &'static [(&'static str, f64)]);
        let cases: [Case; 7] = [
            // https://docs.aws.amazon.com/opensearch-service/latest/developerguide/searching.html
            // (sample `_search` response) and https://opensearch.org/docs/2.13/api-reference/search
            (
                "opensearch",
                include_str!("../../tests/fixtures/presets/opensearch.json"),
                &[
                    ("pay-idempotency-v2", 7.25),
                    ("pay-idempotency-v1", 5.5),
                    ("pay-retries-backoff", 1.125),
                ],
            ),
            // The example response of Elasticsearch's search API (as quoted by
            // https://hackage.haskell.org/package/elasticsearch-interchange-0.2.0.0/docs/Elasticsearch-Search-Response.html)
            // and https://www.elastic.co/guide/en/elasticsearch/guide/current/empty-search.html
            (
                "elasticsearch",
                include_str!("../../tests/fixtures/presets/elasticsearch.json"),
                &[("0", 1.3862942), ("7", 0.5)],
            ),
            // https://solr.apache.org/guide/7_3/response-writers.html (JSON Response Writer
            // sample), with `fl=id,score`
            (
                "solr",
                include_str!("../../tests/fixtures/presets/solr.json"),
                &[("VS1GB400C3", 2.5), ("TWINX2048-3200PRO", 1.5)],
            ),
            // https://docs.vespa.ai/en/reference/default-result-format.html (root, children,
            // relevance, fields); the schema's own `id` field, not Vespa's document id
            (
                "vespa",
                include_str!("../../tests/fixtures/presets/vespa.json"),
                &[
                    ("pay-webhook-signing-v2", 0.254),
                    ("pay-webhook-signing-v1", 0.125),
                ],
            ),
            // https://www.meilisearch.com/docs/capabilities/full_text_search/relevancy/ranking_score
            // (`showRankingScore: true`; numeric primary keys)
            (
                "meilisearch",
                include_str!("../../tests/fixtures/presets/meilisearch.json"),
                &[("155", 0.9546), ("36657", 0.8103)],
            ),
            // Typesense's SearchResult (hits[].document.id, hits[].text_match: an integer, often
            // beyond 2^53), https://docs.rs/crate/typesense-rs/latest/source/docs/SearchResult.md
            // (generated from Typesense's OpenAPI spec) and the example at
            // https://apis.io/examples/typesense/typesense-search-example/
            (
                "typesense",
                include_str!("../../tests/fixtures/presets/typesense.json"),
                &[
                    ("124", 578730123365187705u64 as f64),
                    ("201", 578730123365187000u64 as f64),
                ],
            ),
            // https://api.qdrant.tech/v-1-14-x/api-reference/search/points (response: usage,
            // time, status, result) with ScoredPoint {id: uint64 or UUID, version, score}
            (
                "qdrant",
                include_str!("../../tests/fixtures/presets/qdrant.json"),
                &[("10", 0.81), ("5c56c793-69f3-4fbf-87e6-c4bf54c28c26", 0.75)],
            ),
        ];
        assert_eq!(cases.len(), crate::engine_spec::preset::PRESETS.len());
        for (preset, body, want) in cases {
            let mut s = spec("{}");
            s.preset = Some(preset.into());
            let body: Value = serde_json::from_str(body).unwrap();
            let got = ranking(
                &s.pointers().unwrap(),
                "T1",
                &serde_json::json!({"status": 200, "body": body}),
                100,
            )
            .unwrap()
            .unwrap_or_else(|e| panic!("{preset}: {e}"));
            let got: Vec<(&str, f64)> = got
                .iter()
                .map(|h| (h.id.as_str(), h.score.unwrap()))
                .collect();
            assert_eq!(got, want, "{preset}");
        }
    }
}
