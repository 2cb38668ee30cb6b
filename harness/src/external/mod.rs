//! External engines: a configuration whose first stage is a search ranklab does not contain.
//!
//! - [`command`]: a long-lived child process speaking JSON lines on stdin/stdout;
//! - [`http`]: a request template and JSON pointers into the response (presets for the engines
//!   teams run), `concurrency` requests in flight, retries with back-off;
//! - [`recording`]: every request and response of a configuration, kept beside its run, so
//!   reports and the gate can be reproduced with no engine running;
//! - [`rerank`]: an OpenAI-compatible endpoint (or a `/rerank` service) as a rerank stage, on
//!   the same HTTP client, with its own recordings.
//!
//! An adapter turns each task into one *exchange*: the request ranklab sent and the response the
//! engine gave, both JSON. [`parse_response`] turns a response into a ranking, the same way for a
//! live engine and for a recording, so a report rendered from a recording is the report of the
//! recorded run, byte for byte.
//!
//! Guarantees: a duplicate id within one response, a score that is not a finite number, hits
//! that mix scored and unscored entries, and a response for another task are errors naming the
//! configuration and the task. A task the engine answered with an error is never silently an
//! empty ranking: the run fails with "engine errors: N (first: T07: ...)" unless the configuration
//! says `on_error: empty`, and then the report says how many tasks were counted empty.
//! Configuration values of the form `${NAME}` are read from the environment when the engine is
//! started and never written anywhere: recordings keep the `${NAME}` form, and a recorded
//! request or response that holds a secret value (an engine that echoes its `Authorization`
//! header) has it replaced ([`Secrets`]) before it is read or written. A hit id holding a
//! control character (NUL, newline, tab, DEL, ...) is an error naming the configuration and
//! the task; it never reaches a run file.
//!
//! What a configuration's `engine:` holds, and its checks, is [`crate::engine_spec`]. The
//! protocol and the YAML fields are in `docs/engines.md`.

pub mod command;
pub mod http;
pub mod recording;
pub mod rerank;
pub mod walk;
pub mod wire;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine_spec::{env_refs, expand_env, EngineSpec, OnError};
use crate::suite::Task;

/// The words that make a name a credential's (compared case-insensitively, as parts of the
/// name): a header or environment variable named with one holds a secret.
const CREDENTIAL_WORDS: [&str; 10] = [
    "token", "secret", "auth", "key", "pass", "cookie", "cred", "dsn", "session", "private",
];

/// Whether `name` (a header, an `env` entry, a `${NAME}`) names a credential: it contains one of
/// [`CREDENTIAL_WORDS`], case-insensitively (`Authorization`, `X-Api-Key`, `PG_PASSWORD`).
fn is_credential_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    CREDENTIAL_WORDS.iter().any(|w| n.contains(w))
}

/// The shortest value treated as a secret: shorter ones (a port's digits, a thread count) would
/// rewrite unrelated text, hit ids included, and are no credential.
const MIN_SECRET_LEN: usize = 6;

/// The secret values of a configuration and what each is replaced with in a recording (and in
/// the engine's version answer):
/// - the value of a `${NAME}` that names a credential ([`is_credential_name`]: the variable's
///   name, or the `env` entry or header it is given to), or that stands in the URL's user
///   information or query string, becomes `${NAME}`;
/// - the whole value of a credential header, and for an `Authorization`-like header the part
///   after its scheme (`Bearer <token>`), becomes `[redacted]`.
///
/// Other `${NAME}` values (a host, a port, an index name) are not secrets: replacing them would
/// rewrite hit ids that happen to contain them. Values shorter than 6 characters are never
/// replaced, for the same reason. Longer values are replaced first.
#[derive(Debug, Clone, Default)]
pub struct Secrets(Vec<(String, String)>);

impl Secrets {
    /// The secrets of `spec`, read from the environment now (an unset variable has none).
    pub fn of(spec: &EngineSpec) -> Secrets {
        // (template, whether every `${NAME}` in it is a secret whatever its name)
        let mut templates: Vec<(&str, bool)> = spec
            .env
            .iter()
            .map(|(k, v)| (v.as_str(), is_credential_name(k)))
            .collect();
        let mut out = Vec::new();
        if let Some(h) = &spec.http {
            // The URL's user information and query string hold credentials (`?api_key=${K}`).
            let (head, query) = h.url.split_once('?').unwrap_or((&h.url, ""));
            let (userinfo, rest) = match head.split_once("://") {
                Some((_, after)) => match after.split_once('@') {
                    Some((u, _)) if !u.contains('/') => (u, head),
                    _ => ("", head),
                },
                None => ("", head),
            };
            templates.push((rest, false));
            templates.push((userinfo, true));
            templates.push((query, true));
            templates.extend(h.body.as_deref().map(|b| (b, false)));
            for (name, v) in &h.headers {
                let credential = is_credential_name(name);
                templates.push((v, credential));
                if credential {
                    if let Ok(full) = expand_env(v) {
                        let full = full.trim();
                        if name.to_ascii_lowercase().contains("auth") {
                            if let Some((_, token)) = full.split_once(char::is_whitespace) {
                                out.push((token.trim().to_string(), "[redacted]".to_string()));
                            }
                        }
                        out.push((full.to_string(), "[redacted]".to_string()));
                    }
                }
            }
        }
        for (t, all) in templates {
            for name in env_refs(t).unwrap_or_default() {
                if !(all || is_credential_name(&name)) {
                    continue;
                }
                if let Ok(v) = std::env::var(&name) {
                    out.push((v, format!("${{{name}}}")));
                }
            }
        }
        out.retain(|(v, _)| v.chars().count() >= MIN_SECRET_LEN);
        out.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.cmp(b)));
        out.dedup_by(|a, b| a.0 == b.0);
        Secrets(out)
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `s` with every secret value replaced.
    pub fn redact_str(&self, s: &str) -> String {
        let mut out = s.to_string();
        for (v, with) in &self.0 {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), with);
            }
        }
        out
    }

    /// Every string and object key of `v`, redacted in place.
    pub fn redact(&self, v: &mut Value) {
        if self.is_empty() {
            return;
        }
        match v {
            Value::String(s) => {
                let r = self.redact_str(s);
                if r != *s {
                    *s = r;
                }
            }
            Value::Array(a) => a.iter_mut().for_each(|x| self.redact(x)),
            Value::Object(m) => {
                let keys: Vec<String> = m.keys().cloned().collect();
                for k in keys {
                    let r = self.redact_str(&k);
                    if r != k {
                        if let Some(x) = m.remove(&k) {
                            m.insert(r.clone(), x);
                        }
                    }
                    if let Some(x) = m.get_mut(&r) {
                        self.redact(x);
                    }
                }
            }
            _ => {}
        }
    }
}

/// One hit as the engine gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtHit {
    /// Document id (may be absent from the corpus: then it is an unjudged document).
    pub id: String,
    /// The engine's score, when it gives one.
    pub score: Option<f64>,
}

/// One request and its response, as sent and received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// Task id.
    pub task: String,
    /// The request ranklab sent.
    pub request: Value,
    /// The engine's response.
    pub response: Value,
}

/// What an external configuration produced for every task.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Per task (suite order): the ranking (best first, at most k), or the engine's error.
    pub per_task: Vec<std::result::Result<Vec<ExtHit>, String>>,
    /// The exchanges, for `--record` (an HTTP engine's are kept only when asked for).
    pub exchanges: Vec<Exchange>,
    /// The engine's version when the configuration asks for it.
    pub version: Option<String>,
}

/// How external configurations are run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Mode {
    /// Ask the engines.
    #[default]
    Live,
    /// Ask the engines and keep every exchange (`--record`).
    Record,
    /// Read every response from the recordings (`--from-recording`); no engine runs.
    FromRecording,
}

/// The request of a task (command adapter).
pub fn request(task: &Task, k: usize) -> Value {
    serde_json::json!({ "task": task.id, "query": task.query, "k": k })
}

/// The request of a task as recorded, for either adapter.
pub fn request_for(spec: &EngineSpec, task: &Task, k: usize) -> Value {
    match &spec.http {
        Some(h) => http::request(h, task, k),
        None => request(task, k),
    }
}

/// Turns a response into a ranking: the engine's error, or its hits ordered by score descending
/// then id descending (ranklab's total order, trec_eval's reading order) when the hits carry
/// scores, else in the engine's order; at most `k`.
pub fn parse_response(
    task: &str,
    response: &Value,
    k: usize,
) -> Result<std::result::Result<Vec<ExtHit>, String>> {
    let obj = response
        .as_object()
        .with_context(|| format!("task {task}: the response is not a JSON object"))?;
    match obj.get("task").and_then(Value::as_str) {
        Some(t) if t == task => {}
        Some(t) => bail!("task {task}: the response is for task {t:?}; answer each request in order, with its own task id"),
        None => bail!("task {task}: the response has no \"task\" field"),
    }
    if let Some(e) = obj.get("error") {
        let msg = e.as_str().map_or_else(|| e.to_string(), str::to_string);
        return Ok(Err(cut(&msg, ERROR_BYTES)));
    }
    let hits = obj
        .get("hits")
        .with_context(|| format!("task {task}: the response has neither \"hits\" nor \"error\""))?
        .as_array()
        .with_context(|| format!("task {task}: \"hits\" is not a list"))?;
    rank_hits(
        task,
        hits.len(),
        |i| (hits[i].get("id"), hits[i].get("score")),
        |i| snippet(&hits[i]),
        k,
    )
    .map(Ok)
}

/// The checks and the order of a response's hits, for both adapters: hit `i` of `n` has the id
/// and score `hit(i)` gives (`shown(i)` is the hit as a message shows it); ordered by score
/// descending then id descending when the hits carry scores, else in the engine's order; at
/// most `k`.
pub(crate) fn rank_hits<'a>(
    task: &str,
    n: usize,
    hit: impl Fn(usize) -> (Option<&'a Value>, Option<&'a Value>),
    shown: impl Fn(usize) -> String,
    k: usize,
) -> Result<Vec<ExtHit>> {
    let mut out = Vec::with_capacity(n);
    let mut seen: HashSet<u64, std::hash::BuildHasherDefault<rustc_hash::FxHasher>> =
        HashSet::with_capacity_and_hasher(n, Default::default());
    for i in 0..n {
        let (id, score) = hit(i);
        let id = match id {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => bail!(
                "task {task}: hit {} has no string \"id\": {}",
                i + 1,
                shown(i)
            ),
        };
        if id.len() > ranklab_engine::input::MAX_ID_BYTES {
            bail!(
                "task {task}: hit {}: {}; an engine answers with document ids",
                i + 1,
                ranklab_engine::input::id_too_long("id", &id)
            );
        }
        if id.is_empty() || id.chars().any(char::is_whitespace) {
            bail!("task {task}: hit {} has id {id:?}; ids must be non-empty and hold no white space (they are TREC docnos)", i + 1);
        }
        if let Some(c) = id.chars().find(|c| c.is_control()) {
            bail!(
                "task {task}: hit {} has id {id:?}, which holds the control character U+{:04X}; ids are TREC docnos: printable text with no white space",
                i + 1,
                c as u32
            );
        }
        let score = match score {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match n.as_f64() {
                Some(s) if s.is_finite() => Some(s),
                _ => bail!("task {task}: hit {id:?} has score {n}, not a finite number"),
            },
            Some(other) => bail!(
                "task {task}: hit {id:?} has score {}, not a number",
                snippet(other)
            ),
        };
        // A duplicate, found by the id's hash (no copy of the id kept) and confirmed by
        // comparing the ids of equal hash.
        let hash = {
            use std::hash::{BuildHasher, BuildHasherDefault};
            BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(id.as_str())
        };
        if !seen.insert(hash) && out.iter().any(|h: &ExtHit| h.id == id) {
            bail!("task {task}: document {id:?} appears twice in the response; an engine returns each document once (trec_eval's rule)");
        }
        out.push(ExtHit { id, score });
    }
    let scored = out.iter().filter(|h| h.score.is_some()).count();
    if scored != 0 && scored != out.len() {
        bail!("task {task}: {scored} of {} hits have a score; give every hit a score or none (then the engine's order is the ranking)", out.len());
    }
    if scored != 0 {
        out.sort_by(|a, b| {
            let (sa, sb) = (a.score.unwrap_or(0.0), b.score.unwrap_or(0.0));
            sb.total_cmp(&sa)
                .then_with(|| b.id.as_bytes().cmp(a.id.as_bytes()))
        });
    }
    out.truncate(k);
    Ok(out)
}

/// A recorded or live response as a ranking (or the engine's error), for either adapter.
pub fn ranking(
    spec: &EngineSpec,
    task: &str,
    response: &Value,
    k: usize,
) -> Result<std::result::Result<Vec<ExtHit>, String>> {
    match &spec.http {
        Some(h) => http::ranking(&h.pointers()?, task, response, k),
        None => parse_response(task, response, k),
    }
}

/// How much of an engine's own error message, version answer or stderr line is kept (in
/// messages and reports): its first 1,000 bytes.
pub const ERROR_BYTES: usize = 1000;

/// The first 200 bytes of a value's JSON, for messages.
pub fn snippet(v: &Value) -> String {
    let s = v.to_string();
    cut(&s, 200)
}

/// `s` cut to at most `n` bytes on a character boundary, with "..." when cut.
pub fn cut(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// Runs one external configuration over `tasks`: live (asking the engine) or from `recorded`.
pub fn fetch(
    name: &str,
    spec: &EngineSpec,
    base: &Path,
    tasks: &[Task],
    k: usize,
    recorded: Option<&recording::Recording>,
    keep_exchanges: bool,
) -> Result<Fetched> {
    let parse = |t: &Task, x: &Exchange| ranking(spec, &t.id, &x.response, k);
    let (exchanges, parsed, version) = match (recorded, &spec.http) {
        (Some(r), _) => {
            let parsed: Vec<_> = tasks
                .iter()
                .zip(&r.exchanges)
                .map(|(t, x)| parse(t, x))
                .collect();
            (r.exchanges.clone(), parsed, r.version.clone())
        }
        // Parsed by the workers as the responses arrive (the rate is the rate of rankings);
        // the responses themselves are kept only for a recording.
        (None, Some(h)) => {
            let (exchanges, parsed) = http::run(name, spec, h, tasks, k, keep_exchanges)?;
            (exchanges, parsed, None)
        }
        (None, None) => {
            let (mut exchanges, version) = command::run(name, spec, base, tasks, k)?;
            // What is recorded holds no secret, and is read as the recording will be. The
            // version answer is shown in reports and recorded: it is redacted always.
            let secrets = Secrets::of(spec);
            if keep_exchanges {
                for x in &mut exchanges {
                    secrets.redact(&mut x.response);
                }
            }
            let version = version.map(|v| secrets.redact_str(&v));
            let parsed: Vec<_> = tasks
                .iter()
                .zip(&exchanges)
                .map(|(t, x)| parse(t, x))
                .collect();
            (exchanges, parsed, version)
        }
    };
    let mut per_task = Vec::with_capacity(tasks.len());
    for p in parsed {
        per_task.push(p.with_context(|| format!("configuration {name:?}"))?);
    }
    let errors: Vec<(&str, &String)> = tasks
        .iter()
        .zip(&per_task)
        .filter_map(|(t, r)| r.as_ref().err().map(|e| (t.id.as_str(), e)))
        .collect();
    if let Some((t, e)) = errors.first() {
        if spec.on_error == OnError::Fail {
            bail!(
                "configuration {name:?}: engine errors: {} (first: {t}: {}); fix the engine, or set `on_error: empty` to count failed tasks as empty rankings",
                errors.len(),
                cut(e, 200)
            );
        }
    }
    Ok(Fetched {
        per_task,
        exchanges,
        version,
    })
}

/// What one external configuration did in a replay (reported under the tables).
#[derive(Debug, Clone)]
pub struct Summary {
    /// Configuration name.
    pub configuration: String,
    /// Hits (over all tasks) whose id is not in the corpus: kept, unjudged.
    pub unjudged_hits: usize,
    /// Tasks the engine answered with an error, counted as empty rankings (`on_error: empty`).
    pub empty_tasks: usize,
    /// The engine's version, when the configuration asks for it.
    pub version: Option<String>,
    /// The recording to write beside the run (`--record`, and `--from-recording`, which
    /// rewrites the same bytes).
    pub recording: Option<recording::Recording>,
}

/// The external lists of a replay, as ranklab hits.
pub struct Lists {
    /// Per configuration index (file order), per task: the hits.
    pub lists: std::collections::HashMap<usize, Vec<Vec<ranklab_engine::ranking::Hit>>>,
    /// Ids outside the corpus, numbered from `corpus.len()`.
    pub unjudged: Vec<String>,
    /// Per external configuration.
    pub summaries: Vec<Summary>,
}

/// A document that only has an id: what a hit outside the corpus stands for in reports.
pub fn stub_document(id: &str) -> ranklab_engine::corpus::Document {
    ranklab_engine::corpus::Document::plain(
        id.to_string(),
        String::new(),
        Vec::new(),
        PathBuf::from("(returned by an external engine; not in the corpus)"),
    )
}

/// How [`run_all`] runs the external configurations (a replay's options, as far as they concern
/// external engines).
#[derive(Debug, Clone, Copy)]
pub struct RunOptions<'a> {
    /// Live engines, `--record` or `--from-recording`.
    pub mode: &'a Mode,
    /// Where recordings are read from (`reports/<suite>/runs`); a live run compares its
    /// rankings with a recording found there.
    pub recordings: Option<&'a Path>,
    /// Under `--from-recording`, recordings already drawn, by configuration name: used instead
    /// of a file.
    pub recorded: &'a [recording::Recording],
}

/// Runs every external configuration of `ex` (live, recording, or from recordings).
pub fn run_all(
    corpus: &ranklab_engine::corpus::Corpus,
    suite: &crate::suite::Suite,
    ex: &crate::suite::Experiments,
    opts: &RunOptions,
) -> Result<Lists> {
    let mut out = Lists {
        lists: Default::default(),
        unjudged: Vec::new(),
        summaries: Vec::new(),
    };
    let mut outside: std::collections::HashMap<String, usize> = Default::default();
    let base = ex.path.parent().unwrap_or(Path::new("."));
    for (ci, c) in ex.configurations.iter().enumerate() {
        let Some(spec) = &c.engine else { continue };
        let k = c.depth();
        let rec_path = opts
            .recordings
            .as_ref()
            .map(|d| d.join(recording::file_name(&c.name)));
        let recorded = recorded_for(opts, &c.name, spec, suite, k, rec_path.as_deref())?;
        let fetched = fetch(
            &c.name,
            spec,
            base,
            &suite.tasks,
            k,
            recorded.as_ref(),
            *opts.mode != Mode::Live,
        );
        // A recorded response that does not parse names the recording file it was read from
        // (`recorded_for`'s branch that loads `rec_path` itself).
        let from_file = rec_path.as_ref().filter(|p| {
            recorded.is_some()
                && p.is_file()
                && !opts.recorded.iter().any(|r| r.configuration == c.name)
        });
        let mut fetched = match (fetched, from_file) {
            (Err(e), Some(p)) => {
                return Err(e.context(format!("{}: a recorded response", p.display())))
            }
            (fetched, _) => fetched?,
        };
        if *opts.mode == Mode::Live {
            if let Some(p) = rec_path.as_ref().filter(|p| p.is_file()) {
                note_changes(p, &c.name, spec, suite, k, &fetched);
            }
        }
        let (lists, unjudged_hits, empty_tasks) = as_hits(
            corpus,
            &c.name,
            suite,
            &fetched,
            &mut outside,
            &mut out.unjudged,
        )?;
        out.lists.insert(ci, lists);
        let recording = (*opts.mode != Mode::Live).then(|| recording::Recording {
            configuration: c.name.clone(),
            hash: recording::config_hash(spec, k),
            version: fetched.version.clone(),
            corpus: (!spec.own_index).then(|| recording::RecordedCorpus::of(corpus)),
            exchanges: std::mem::take(&mut fetched.exchanges),
        });
        out.summaries.push(Summary {
            configuration: c.name.clone(),
            unjudged_hits,
            empty_tasks,
            version: fetched.version,
            recording,
        });
    }
    Ok(out)
}

/// The recording a configuration's responses are read from: under `--from-recording`, the one
/// drawn already, the file at `rec_path`, or when there is none, the recording beside it with
/// the configuration's engine hash ([`recording::load_by_hash`]); otherwise none.
fn recorded_for(
    opts: &RunOptions,
    name: &str,
    spec: &EngineSpec,
    suite: &crate::suite::Suite,
    k: usize,
    rec_path: Option<&Path>,
) -> Result<Option<recording::Recording>> {
    let drawn = opts.recorded.iter().find(|r| r.configuration == name);
    Ok(match (opts.mode, rec_path) {
        (Mode::FromRecording, _) if drawn.is_some() => drawn.cloned(),
        (Mode::FromRecording, Some(p)) if p.is_file() => {
            Some(recording::Recording::load(p, name, spec, &suite.tasks, k)?)
        }
        (Mode::FromRecording, Some(p)) => {
            Some(recording::load_by_hash(p, name, spec, &suite.tasks, k)?)
        }
        (Mode::FromRecording, None) => {
            bail!("--from-recording needs the directory of the recordings")
        }
        _ => None,
    })
}

/// The hits of one external configuration as ranklab hits, per task: ids outside the corpus are
/// numbered from `corpus.len()` in the order first met (`outside`, `unjudged`, shared by every
/// configuration), an unscored hit scores by its rank, a task the engine failed is empty.
/// Also returns how many hits were outside the corpus and how many tasks were counted empty.
fn as_hits(
    corpus: &ranklab_engine::corpus::Corpus,
    name: &str,
    suite: &crate::suite::Suite,
    fetched: &Fetched,
    outside: &mut std::collections::HashMap<String, usize>,
    unjudged: &mut Vec<String>,
) -> Result<(Vec<Vec<ranklab_engine::ranking::Hit>>, usize, usize)> {
    use ranklab_engine::ranking::Hit;
    let mut lists = Vec::with_capacity(suite.tasks.len());
    let (mut unjudged_hits, mut empty_tasks) = (0, 0);
    for (t, r) in suite.tasks.iter().zip(&fetched.per_task) {
        let Ok(hits) = r else {
            empty_tasks += 1;
            lists.push(Vec::new());
            continue;
        };
        let n = hits.len();
        let mut list = Vec::with_capacity(n);
        for (i, h) in hits.iter().enumerate() {
            let doc = match corpus.index_of(&h.id) {
                Some(d) => d,
                None => {
                    unjudged_hits += 1;
                    let next = corpus.len() + unjudged.len();
                    *outside.entry(h.id.clone()).or_insert_with(|| {
                        unjudged.push(h.id.clone());
                        next
                    })
                }
            };
            let score = match h.score {
                Some(s) => s as f32,
                None => (n - i) as f32,
            };
            if !score.is_finite() {
                bail!(
                    "configuration {:?}, task {}: hit {:?} has score {}, outside the range of a 32-bit float",
                    name,
                    t.id,
                    h.id,
                    h.score.unwrap_or_default()
                );
            }
            list.push(Hit {
                doc,
                score,
                section: 0,
            });
        }
        lists.push(list);
    }
    Ok((lists, unjudged_hits, empty_tasks))
}

/// After a live run: says on stderr how many tasks rank differently than in the recording.
fn note_changes(
    path: &Path,
    name: &str,
    spec: &EngineSpec,
    suite: &crate::suite::Suite,
    k: usize,
    live: &Fetched,
) {
    let rec = match recording::Recording::load(path, name, spec, &suite.tasks, k) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{name}: not compared with the recording: {e:#}");
            return;
        }
    };
    let mut changed = Vec::new();
    for ((t, x), now) in suite.tasks.iter().zip(&rec.exchanges).zip(&live.per_task) {
        // Read like the live response (an HTTP engine's through its pointers).
        let then = ranking(spec, &t.id, &x.response, k).ok();
        let ids = |r: &std::result::Result<Vec<ExtHit>, String>| {
            r.as_ref()
                .map(|h| h.iter().map(|h| h.id.clone()).collect::<Vec<_>>())
                .ok()
        };
        if then.as_ref().map(ids) != Some(ids(now)) {
            changed.push(t.id.as_str());
        }
    }
    if changed.is_empty() {
        eprintln!(
            "{name}: every task ranks as in the recording {}",
            path.display()
        );
    } else {
        eprintln!(
            "{name}: {} tasks changed rank since the recording {} ({}); --record to accept",
            changed.len(),
            path.display(),
            changed.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The redaction of a recorded response, against the expected value written by hand: a
    /// `${NAME}` value becomes `${NAME}`, a credential header's whole value and its token become
    /// `[redacted]`, in strings and object keys at any depth; other text is untouched.
    #[test]
    fn secrets_are_replaced_in_strings_and_keys_at_any_depth() {
        let spec: EngineSpec = serde_json::from_value(serde_json::json!({"http": {
            "url": "http://h/x?key=${RANKLAB_UNIT_URL_KEY}",
            "headers": {"Authorization": "Bearer literal-token-1234", "X-Trace": "plain"},
            "body": "{\"k\": \"${RANKLAB_UNIT_BODY_KEY}\"}",
            "preset": "opensearch",
        }}))
        .unwrap();
        std::env::set_var("RANKLAB_UNIT_URL_KEY", "urlsecret99");
        std::env::set_var("RANKLAB_UNIT_BODY_KEY", "bodysecret77");
        let secrets = Secrets::of(&spec);
        let mut v = serde_json::json!({
            "echo": ["Bearer literal-token-1234", "token literal-token-1234 again"],
            "urlsecret99": {"deep": "a bodysecret77 b", "trace": "plain"},
            "n": 3,
        });
        secrets.redact(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "echo": ["[redacted]", "token [redacted] again"],
                "${RANKLAB_UNIT_URL_KEY}": {"deep": "a ${RANKLAB_UNIT_BODY_KEY} b", "trace": "plain"},
                "n": 3,
            })
        );
    }

    /// A `${NAME}` that names no credential and stands outside the URL's query and user
    /// information (a port, an index) is not a secret: a hit id holding its value is left as the
    /// engine gave it. The same variable given to a credential header, or in the query string,
    /// is one.
    #[test]
    fn a_port_or_an_index_is_not_a_secret_and_a_query_key_is() {
        std::env::set_var("RANKLAB_UNIT_PORT", "9200");
        std::env::set_var("RANKLAB_UNIT_INDEX", "release-notes");
        std::env::set_var("RANKLAB_UNIT_Q", "querysecret42");
        std::env::set_var("RANKLAB_UNIT_USERINFO", "user:pw-secret-1");
        let spec: EngineSpec = serde_json::from_value(serde_json::json!({"http": {
            "url": "http://${RANKLAB_UNIT_USERINFO}@h:${RANKLAB_UNIT_PORT}/${RANKLAB_UNIT_INDEX}/_search?k=${RANKLAB_UNIT_Q}",
            "headers": {"X-Trace": "${RANKLAB_UNIT_INDEX}"},
            "preset": "opensearch",
        }}))
        .unwrap();
        let secrets = Secrets::of(&spec);
        let mut v = serde_json::json!({
            "hits": ["release-notes-9200", "doc-9200"],
            "echo": "k=querysecret42 as user:pw-secret-1",
        });
        secrets.redact(&mut v);
        assert_eq!(
            v,
            serde_json::json!({
                "hits": ["release-notes-9200", "doc-9200"],
                "echo": "k=${RANKLAB_UNIT_Q} as ${RANKLAB_UNIT_USERINFO}",
            })
        );
        // A command engine: an `env` entry named as a credential makes its value a secret,
        // another entry's (a thread count) is not one.
        std::env::set_var("RANKLAB_UNIT_THREADS", "4");
        std::env::set_var("RANKLAB_UNIT_CMD", "cmd-secret-value");
        let spec: EngineSpec = serde_json::from_value(serde_json::json!({
            "command": ["engine"],
            "env": {"API_KEY": "${RANKLAB_UNIT_CMD}", "THREADS": "${RANKLAB_UNIT_THREADS}"},
        }))
        .unwrap();
        let mut v = serde_json::json!(["id-4", "got cmd-secret-value"]);
        Secrets::of(&spec).redact(&mut v);
        assert_eq!(v, serde_json::json!(["id-4", "got ${RANKLAB_UNIT_CMD}"]));
    }
}
