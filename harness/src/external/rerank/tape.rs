//! Recordings of a rerank endpoint: every request a configuration's shortlists needed and the
//! endpoint's response, kept beside its run as `runs/<configuration>.rerank.recording.json`, so
//! that `--from-recording` renders the same reports with no server running.
//!
//! The file has the shape of an external engine's recording (`about`, `configuration`, then one
//! exchange per line in canonical JSON, see [`crate::external::recording`]), with `scorer`, the
//! endpoint stage's identity (API, model, endpoint URL as written, prompt sha256), in place of
//! the engine's hash: a recording is used only by a stage of the same identity. A request is
//! `{"url", "body"}` with `${NAME}` as written; headers are never recorded, and a response has
//! its secrets replaced before it is kept.
//!
//! Guarantees: a configuration's recording lists, task by task and in shortlist order, the
//! exchange of each (query, passage) pair of its shortlists, each exchange once. A response is
//! kept as the text it is read from, so the score read under `--record` and under
//! `--from-recording` come from the same bytes, and a replay writes the recording back byte for
//! byte. Under `--from-recording`, a request no recording of the stage holds is an error (exit
//! 2), never an empty score.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::external::recording::canonical;
use crate::external::Mode;

pub use crate::suite::rerank_recording_file_name as file_name;

const ABOUT: &str = "ranklab recording of a rerank endpoint: every request and response; ranklab run --from-recording renders the reports from it";

/// What a rerank stage does with its exchanges, shared by the scorer and the replay.
#[derive(Debug, Clone, Default)]
pub struct Tape(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    mode: TapeMode,
    /// Canonical request -> the response's text, for every exchange made or replayed.
    exchanges: HashMap<String, String>,
    /// (query, passage) -> the canonical request that scored it.
    pairs: HashMap<(String, String), String>,
}

#[derive(Debug, Default)]
enum TapeMode {
    /// Live, nothing kept (no `--record`).
    #[default]
    Off,
    /// Live, every exchange kept (`--record`).
    Record,
    /// Every response read from the recordings of `dir` (`--from-recording`).
    Replay {
        recorded: HashMap<String, String>,
        dir: PathBuf,
    },
}

/// Where a request's response comes from.
pub enum Source {
    /// Ask the endpoint.
    Live,
    /// The recorded response's text.
    Recorded(String),
}

impl Tape {
    /// Sets the mode for a replay: live (nothing kept), recording, or reading every response
    /// from the recordings in `dir` whose scorer is `identity`.
    pub fn start(&self, mode: &Mode, dir: Option<&Path>, identity: &str) -> Result<()> {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        s.mode = match mode {
            Mode::Live => TapeMode::Off,
            Mode::Record => TapeMode::Record,
            Mode::FromRecording => {
                let dir = dir.context("--from-recording needs the directory of the recordings")?;
                TapeMode::Replay {
                    recorded: load_dir(dir, identity)?,
                    dir: dir.to_path_buf(),
                }
            }
        };
        Ok(())
    }

    /// Whether every response is read from the recordings (`--from-recording`): the endpoint
    /// is never asked.
    pub fn replays(&self) -> bool {
        matches!(
            self.0.lock().unwrap_or_else(|e| e.into_inner()).mode,
            TapeMode::Replay { .. }
        )
    }

    /// Whether exchanges are kept (`--record` or `--from-recording`).
    pub fn keeps(&self) -> bool {
        !matches!(
            self.0.lock().unwrap_or_else(|e| e.into_inner()).mode,
            TapeMode::Off
        )
    }

    /// Where the response to `request` (canonical JSON) comes from; under `--from-recording`, an
    /// error naming the recordings when none holds it (`what` says which pair it scores).
    pub fn source(&self, request: &str, what: &dyn Fn() -> String) -> Result<Source, String> {
        let s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match &s.mode {
            TapeMode::Replay { recorded, dir } => match recorded.get(request) {
                Some(text) => Ok(Source::Recorded(text.clone())),
                None => Err(format!(
                    "{}: no rerank recording in {} holds this request, and --from-recording asks \
                     no endpoint; record again with --record while the endpoint runs (the \
                     query, the passages or the configuration changed since)",
                    what(),
                    dir.display()
                )),
            },
            _ => Ok(Source::Live),
        }
    }

    /// Keeps an exchange (when the mode keeps them): the canonical request, the response's
    /// text, and the (query, passage) pairs it scored.
    pub fn keep(&self, request: &str, response: &str, pairs: &[(&str, &str)]) {
        let mut s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(s.mode, TapeMode::Off) {
            return;
        }
        s.exchanges
            .insert(request.to_string(), response.to_string());
        for (q, p) in pairs {
            s.pairs
                .insert((q.to_string(), p.to_string()), request.to_string());
        }
    }

    /// The recording of configuration `name` of scorer `identity`: the exchange of every
    /// `(task, query, passage)` of its shortlists, in order, each exchange once.
    pub fn recording(
        &self,
        name: &str,
        identity: &str,
        pairs: &[(&str, &str, &str)],
    ) -> Result<Recording> {
        let s = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (task, q, p) in pairs {
            let key = (q.to_string(), p.to_string());
            let Some(request) = s.pairs.get(&key) else {
                bail!("internal error: configuration {name:?}, task {task}: a shortlisted pair has no exchange to record; please report this");
            };
            if seen.insert(request.clone()) {
                let response = s.exchanges[request].clone();
                lines.push((request.clone(), response, task.to_string()));
            }
        }
        Ok(Recording {
            configuration: name.to_string(),
            scorer: identity.to_string(),
            lines,
        })
    }
}

/// A configuration's rerank recording.
#[derive(Debug, Clone, PartialEq)]
pub struct Recording {
    /// Configuration name.
    pub configuration: String,
    /// The stage's identity.
    pub scorer: String,
    /// (canonical request, response text, the first task that needed it), in order.
    pub lines: Vec<(String, String, String)>,
}

impl Recording {
    /// The file's name (beside the configuration's run).
    pub fn file_name(&self) -> String {
        file_name(&self.configuration)
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut s = String::new();
        s.push_str(&format!("{{\"about\":{},\n", Value::String(ABOUT.into())));
        s.push_str(&format!(
            "\"configuration\":{},\n",
            Value::String(self.configuration.clone())
        ));
        s.push_str(&format!(
            "\"scorer\":{},\n",
            Value::String(self.scorer.clone())
        ));
        s.push_str("\"exchanges\":[\n");
        for (i, (request, response, task)) in self.lines.iter().enumerate() {
            // The canonical form of {"request", "response", "task"}: keys in sorted order.
            s.push_str(&format!(
                "{{\"request\":{request},\"response\":{response},\"task\":{}}}",
                Value::String(task.clone())
            ));
            s.push_str(if i + 1 < self.lines.len() {
                ",\n"
            } else {
                "\n"
            });
        }
        s.push_str("]}\n");
        s.into_bytes()
    }
}

// Unknown fields are refused: a recording holds exactly what `Recording::to_bytes` writes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLine<'a> {
    #[serde(borrow)]
    request: &'a RawValue,
    #[serde(borrow)]
    response: &'a RawValue,
    #[allow(dead_code)]
    task: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File<'a> {
    #[allow(dead_code)]
    about: Option<String>,
    #[allow(dead_code)]
    configuration: Option<String>,
    scorer: Option<String>,
    #[serde(borrow, default)]
    exchanges: Vec<FileLine<'a>>,
}

/// Every exchange of the rerank recordings in `dir` whose scorer is `identity`: canonical
/// request -> response text. A file that cannot be read as a recording is an error naming it.
fn load_dir(dir: &Path, identity: &str) -> Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    let suffix = file_name("");
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.ends_with(&suffix))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    for path in paths {
        let text =
            ranklab_engine::input::read_to_string(&path, ranklab_engine::input::MAX_WHOLE_BYTES)
                .with_context(|| format!("cannot read the rerank recording {}", path.display()))?;
        let file: File = serde_json::from_str(&text).with_context(|| {
            format!(
                "{}: not a rerank recording (want {{\"about\", \"configuration\", \"scorer\", \"exchanges\": [{{\"request\", \"response\", \"task\"}}]}} and no other field); re-record it with --record",
                path.display()
            )
        })?;
        if file.scorer.as_deref() != Some(identity) {
            continue;
        }
        for x in file.exchanges {
            let request: Value = serde_json::from_str(x.request.get())?;
            out.insert(canonical(&request), x.response.get().to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording written from a tape reads back into the same responses, and writing what was
    /// read gives the same bytes (the response text is kept, never re-printed from a float).
    #[test]
    fn a_recording_reads_back_and_rewrites_byte_for_byte() {
        let tape = Tape::default();
        tape.start(&Mode::Record, None, "id").unwrap();
        let req = r#"{"body":{"prompt":"q1 p1"},"url":"http://h/v1/completions"}"#;
        // 17 significant digits: a float serde_json alone may not print back as written.
        let resp = r#"{"body":{"x":-2.3025850929940455},"status":200}"#;
        tape.keep(req, resp, &[("q1", "p1")]);
        let rec = tape
            .recording("c", "id", &[("T1", "q1", "p1"), ("T2", "q1", "p1")])
            .unwrap();
        assert_eq!(rec.lines.len(), 1, "one exchange, once");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(rec.file_name()), rec.to_bytes()).unwrap();
        let replay = Tape::default();
        replay
            .start(&Mode::FromRecording, Some(dir.path()), "id")
            .unwrap();
        let Ok(Source::Recorded(text)) = replay.source(req, &|| String::new()) else {
            panic!("recorded response not found");
        };
        assert_eq!(text, resp);
        replay.keep(req, &text, &[("q1", "p1")]);
        let again = replay.recording("c", "id", &[("T1", "q1", "p1")]).unwrap();
        assert_eq!(again.to_bytes(), rec.to_bytes());
        // Another scorer's recordings are not read.
        let other = Tape::default();
        other
            .start(&Mode::FromRecording, Some(dir.path()), "other")
            .unwrap();
        let e = other.source(req, &|| "task T1".into()).err().unwrap();
        assert!(
            e.contains("task T1: no rerank recording in") && e.contains("--record"),
            "{e}"
        );
    }
}
