//! Recordings: every request and response of one external configuration, in canonical JSON,
//! kept beside its run as `runs/<configuration>.recording.json`.
//!
//! Canonical: object keys sorted at every level, no insignificant white space inside a value,
//! one exchange per line (so a re-recording diffs by task). The file is keyed by the
//! configuration's hash (sha256 of the canonical JSON of what decides the engine's answers:
//! the adapter's command, cwd, env templates and the depth asked for; never an expanded
//! `${NAME}`) and, when the configuration asks for it, the engine's version.
//!
//! A recording is refused when its hash is not the configuration's (the command or template
//! changed) or when its requests are not those the suite sends now (a query or k changed).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;
use sha2::Digest;

use super::{request_for, Exchange};
use crate::engine_spec::EngineSpec;
use crate::suite::Task;

/// The top-level fields of a recording file, as [`Recording::to_bytes`] writes them; any other
/// is refused.
const FIELDS: [&str; 6] = [
    "about",
    "configuration",
    "hash",
    "version",
    "corpus",
    "exchanges",
];

/// The file name of a configuration's recording (beside `<name>.trec`).
pub use crate::suite::recording_file_name as file_name;

/// A recorded external configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Configuration name.
    pub configuration: String,
    /// The configuration's hash ([`config_hash`]).
    pub hash: String,
    /// The engine's version, when asked.
    pub version: Option<String>,
    /// The corpus the engine was asked against (None: a recording made before ranklab kept
    /// it; its corpus is unknown).
    pub corpus: Option<RecordedCorpus>,
    /// One exchange per task, in suite order.
    pub exchanges: Vec<Exchange>,
}

/// The corpus a recording was made against: its content hash and each record's, so that a
/// replay from the recording can tell whether it rests on today's corpus and which records
/// changed since.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RecordedCorpus {
    /// `Corpus::content_hash()`.
    pub sha256: String,
    /// Record id -> the first 16 hex digits of the sha256 of its content (as the gate
    /// baseline's `inputs.records`).
    pub records: std::collections::BTreeMap<String, String>,
}

impl RecordedCorpus {
    /// The fingerprint of `corpus`.
    pub fn of(corpus: &ranklab_engine::corpus::Corpus) -> RecordedCorpus {
        RecordedCorpus {
            sha256: corpus.content_hash(),
            records: corpus
                .docs
                .iter()
                .map(|d| {
                    let h = sha2::Sha256::digest(d.fingerprint().as_bytes());
                    (
                        d.id.clone(),
                        ranklab_engine::models::hex(&h)[..16].to_string(),
                    )
                })
                .collect(),
        }
    }

    /// The record ids added, removed and edited in `now` since this corpus.
    pub fn diff(&self, now: &RecordedCorpus) -> (Vec<String>, Vec<String>, Vec<String>) {
        let added = now
            .records
            .keys()
            .filter(|k| !self.records.contains_key(*k))
            .cloned()
            .collect();
        let removed = self
            .records
            .keys()
            .filter(|k| !now.records.contains_key(*k))
            .cloned()
            .collect();
        let edited = now
            .records
            .iter()
            .filter(|(k, h)| self.records.get(*k).is_some_and(|o| o != *h))
            .map(|(k, _)| k.clone())
            .collect();
        (added, removed, edited)
    }
}

/// The corpus a recording file says it was made against, read without checking the rest
/// (None: no such file, or no `corpus` field: recorded before ranklab kept it).
pub fn recorded_corpus(path: &Path) -> Option<RecordedCorpus> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    serde_json::from_value(v.get("corpus")?.clone()).ok()
}

/// The engine version a recording file holds, if any.
pub fn recorded_version(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.get("version")?.as_str().map(str::to_string)
}

/// Under `--from-recording`, a replay needs an answer that no recording holds (a paired
/// assertion's query that is not a task of the recorded suite, or a configuration that was not
/// recorded): the run stops (exit 2) rather than ask the engine.
#[derive(Debug)]
pub struct NotRecorded(pub String);

impl std::fmt::Display for NotRecorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotRecorded {}

/// `v` as canonical JSON: keys sorted at every level, compact.
pub fn canonical(v: &Value) -> String {
    let mut s = String::new();
    write_canonical(&mut s, v);
    s
}

fn write_canonical(out: &mut String, v: &Value) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                write_canonical(out, &m[k.as_str()]);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(out, x);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The hash that keys a configuration's recording: what decides the engine's answers.
pub fn config_hash(spec: &EngineSpec, k: usize) -> String {
    let mut identity = serde_json::json!({
        "command": spec.command,
        "cwd": spec.cwd,
        "env": spec.env,
        "k": k,
    });
    if let Some(h) = &spec.http {
        // What is sent (templates as written, `${NAME}` unexpanded); not how it is read.
        identity["http"] = serde_json::json!({
            "url": h.url,
            "method": h.method().unwrap_or("POST"),
            "headers": h.headers,
            "body": h.body,
        });
    }
    let digest = sha2::Sha256::digest(canonical(&identity).as_bytes());
    ranklab_engine::models::hex(&digest)
}

/// The recording of another configuration with the same engine hash ([`config_hash`]: the
/// same command, cwd, env templates, HTTP templates and depth, so the same answers to the same
/// requests), read for configuration `name` when `missing` (its own recording's path) does not
/// exist: what a weighted fusion weighing an engine's list, or a tuning's derived configuration
/// (`base~suffix`), replays from. The recordings of `missing`'s folder are tried in file-name
/// order and the first whose hash matches is loaded (and checked like its own); none is an
/// error naming the hash.
pub fn load_by_hash(
    missing: &Path,
    name: &str,
    spec: &EngineSpec,
    tasks: &[Task],
    k: usize,
) -> Result<Recording> {
    let want = config_hash(spec, k);
    let dir = missing.parent().unwrap_or(Path::new("."));
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                        n.ends_with(".recording.json") && !n.ends_with(".rerank.recording.json")
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    for f in files {
        let Some(v) =
            ranklab_engine::input::read_to_string(&f, ranklab_engine::input::MAX_WHOLE_BYTES)
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        else {
            continue;
        };
        if v.get("hash").and_then(Value::as_str) == Some(want.as_str()) {
            return Recording::load(&f, name, spec, tasks, k);
        }
    }
    bail!(
        "configuration {name:?}: no recording at {}, and no recording in {} has its engine hash {} (the same command, cwd, env and depth); run once with --record while the engine runs, or name the report tree that holds the recordings with --recordings DIR",
        missing.display(),
        dir.display(),
        super::cut(&want, 12)
    )
}

impl Recording {
    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut s = String::new();
        let _ = writeln!(s, "{{\"about\":\"ranklab recording of an external engine: every request and response; ranklab run --from-recording renders the reports from it\",");
        let _ = writeln!(
            s,
            "\"configuration\":{},",
            Value::String(self.configuration.clone())
        );
        let _ = writeln!(s, "\"hash\":\"{}\",", self.hash);
        let _ = writeln!(
            s,
            "\"version\":{},",
            self.version.clone().map_or(Value::Null, Value::String)
        );
        if let Some(c) = &self.corpus {
            s.push_str("\"corpus\":");
            write_canonical(&mut s, &serde_json::to_value(c).unwrap_or(Value::Null));
            s.push_str(",\n");
        }
        s.push_str("\"exchanges\":[\n");
        for (i, x) in self.exchanges.iter().enumerate() {
            // The canonical form of {"task", "request", "response"}: keys in sorted order.
            s.push_str("{\"request\":");
            write_canonical(&mut s, &x.request);
            s.push_str(",\"response\":");
            write_canonical(&mut s, &x.response);
            s.push_str(",\"task\":");
            s.push_str(&Value::String(x.task.clone()).to_string());
            s.push('}');
            s.push_str(if i + 1 < self.exchanges.len() {
                ",\n"
            } else {
                "\n"
            });
        }
        s.push_str("]}\n");
        s.into_bytes()
    }

    /// Reads a recording and checks it matches the configuration and the tasks.
    pub fn load(
        path: &Path,
        name: &str,
        spec: &EngineSpec,
        tasks: &[Task],
        k: usize,
    ) -> Result<Self> {
        let text = match ranklab_engine::input::read_to_string(
            path,
            ranklab_engine::input::MAX_WHOLE_BYTES,
        ) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(anyhow::Error::new(e).context(format!(
                    "configuration {name:?}: no recording at {}; run once with --record while the engine runs, or name the report tree that holds the recordings with --recordings DIR",
                    path.display()
                )))
            }
            // There, but not readable as a recording (not UTF-8, a folder, too large): "no
            // recording" would send the user looking for a file that is there.
            Err(e) => bail!(
                "configuration {name:?}: the recording {} cannot be read: {e}; re-record it with --record while the engine runs",
                path.display()
            ),
        };
        let v: Value = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: the recording is not valid JSON; re-record it with --record",
                path.display()
            )
        })?;
        if let Some(extra) = v
            .as_object()
            .and_then(|o| o.keys().find(|k| !FIELDS.contains(&k.as_str())))
        {
            bail!(
                "{}: the recording has the field {extra:?}, which ranklab never writes (a recording holds {}); restore the file or re-record it with --record",
                path.display(),
                FIELDS.join(", ")
            );
        }
        let field = |f: &str| v.get(f).cloned().unwrap_or(Value::Null);
        let hash = field("hash").as_str().unwrap_or_default().to_string();
        let want = config_hash(spec, k);
        if hash != want {
            bail!(
                "{}: the recording does not match configuration {name:?}: it was recorded with engine configuration hash {} and the configuration's is now {} (its command, cwd, env or depth changed); re-record with --record",
                path.display(),
                super::cut(&hash, 12),
                super::cut(&want, 12)
            );
        }
        let exchanges: Vec<Exchange> =
            serde_json::from_value(field("exchanges")).with_context(|| {
                format!(
                    "{}: `exchanges` is malformed; re-record it with --record",
                    path.display()
                )
            })?;
        if exchanges.len() != tasks.len() {
            bail!(
                "{}: the recording does not match configuration {name:?}: it holds {} tasks and the suite has {}; re-record with --record",
                path.display(),
                exchanges.len(),
                tasks.len()
            );
        }
        for (t, x) in tasks.iter().zip(&exchanges) {
            if x.task != t.id || x.request != request_for(spec, t, k) {
                bail!(
                    "{}: the recording does not match configuration {name:?}: task {}'s request differs from the recorded one ({}) (a task, query or k changed); re-record with --record",
                    path.display(),
                    t.id,
                    super::snippet(&x.request)
                );
            }
        }
        let corpus = match v.get("corpus") {
            None | Some(Value::Null) => None,
            Some(c) => Some(serde_json::from_value(c.clone()).with_context(|| {
                format!(
                    "{}: `corpus` is malformed; re-record it with --record",
                    path.display()
                )
            })?),
        };
        Ok(Recording {
            configuration: name.to_string(),
            hash,
            version: field("version").as_str().map(str::to_string),
            corpus,
            exchanges,
        })
    }
}

impl Recording {
    /// The recording of `wanted` (tasks that are not the suite's, e.g. paired assertions, each
    /// with its own id) drawn from this recording of the suite: for each wanted task, the
    /// recorded exchange whose request is the one the wanted query sends (under the recorded
    /// task's id, which a request may carry); the response is given the wanted task's id. An
    /// error ([`NotRecorded`]) naming the first query no exchange asked, and `what` (where the
    /// wanted tasks come from).
    pub fn for_tasks(
        &self,
        path: &Path,
        name: &str,
        spec: &EngineSpec,
        wanted: &[Task],
        k: usize,
        what: &dyn Fn(&Task) -> String,
    ) -> Result<Recording> {
        let mut exchanges = Vec::with_capacity(wanted.len());
        for w in wanted {
            let found = self.exchanges.iter().find(|x| {
                let as_recorded = Task {
                    id: x.task.clone(),
                    ..w.clone()
                };
                x.request == request_for(spec, &as_recorded, k)
            });
            let Some(x) = found else {
                return Err(anyhow::Error::new(NotRecorded(format!(
                    "{}: configuration {name:?} was not asked the query {:?} when it was recorded ({}), and --from-recording asks no engine; add a task with this query to the suite and record again with --record, or run without --from-recording",
                    what(w),
                    w.query,
                    path.display()
                ))));
            };
            let mut response = x.response.clone();
            if let Some(t) = response.get_mut("task").filter(|t| t.is_string()) {
                *t = Value::String(w.id.clone());
            }
            exchanges.push(Exchange {
                task: w.id.clone(),
                request: request_for(spec, w, k),
                response,
            });
        }
        Ok(Recording {
            configuration: name.to_string(),
            hash: self.hash.clone(),
            version: self.version.clone(),
            corpus: self.corpus.clone(),
            exchanges,
        })
    }
}
