//! Whether an external engine's recording rests on today's corpus.
//!
//! Under recording replay (the gate's default), an external configuration's row takes the
//! engine's answers from `runs/<configuration>.recording.json`. Those answers are the engine's
//! over the corpus it had indexed when it was recorded: after a record is edited, added or
//! removed, they say nothing about the engine over today's corpus. A recording keeps the corpus
//! it was made against (content hash and per-record hashes); the row is:
//!
//! - current: the recording's corpus is today's;
//! - stale: it is not (the records added, removed and edited are named), or the recording
//!   predates the corpus field and the suite's corpus changed since the baseline; the row fails
//!   with the command that re-records it, unless `--allow-stale`;
//! - unknown: the recording predates the corpus field and the corpus did not change since the
//!   baseline (said, passes);
//! - own index: the configuration says `own_index: true` (its index does not come from the
//!   suite's corpus): a corpus change does not make it stale; its recorded version is shown.

use std::collections::BTreeMap;

use serde::Serialize;

use super::plan::Plan;
use crate::external::recording::{recorded_corpus, recorded_version, RecordedCorpus};

/// Whether a configuration's recording rests on today's corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Staleness {
    /// Recorded against today's corpus.
    Current,
    /// Recorded before ranklab kept the corpus; the corpus did not change since the baseline.
    Unknown,
    /// The engine's index is its own (`own_index: true`): its version is what dates it.
    OwnIndex {
        /// The version recorded, if the configuration asks for one.
        version: Option<String>,
    },
    /// Recorded against another corpus.
    Stale {
        /// What changed since the recording.
        why: String,
        /// The command that re-records it.
        command: String,
        /// The recording file.
        file: String,
    },
}

impl Staleness {
    /// Whether the row is stale.
    pub fn is_stale(&self) -> bool {
        matches!(self, Staleness::Stale { .. })
    }

    /// As shown beside the row.
    pub fn note(&self) -> Option<String> {
        match self {
            Staleness::Current => None,
            Staleness::Unknown => Some(
                "recorded before ranklab kept the corpus of a recording: corpus unknown (the suite's corpus did not change since the baseline)".to_string(),
            ),
            Staleness::OwnIndex { version } => Some(format!(
                "the engine's index is its own (own_index): dated by its version, {}",
                version.as_deref().unwrap_or("not recorded (set `version: true`)")
            )),
            Staleness::Stale { why, command, file } => Some(format!(
                "{why}; re-record it with `{command}` while the engine runs, then review and commit {file}"
            )),
        }
    }
}

/// Up to five ids, then "…".
fn few(ids: &[String]) -> String {
    let mut s = ids.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if ids.len() > 5 {
        s.push_str(", …");
    }
    s
}

/// What changed between a recording's corpus and today's, in words.
fn changed(then: &RecordedCorpus, now: &RecordedCorpus) -> String {
    let (added, removed, edited) = then.diff(now);
    let mut parts = Vec::new();
    for (n, what) in [
        (&added, "added"),
        (&removed, "removed"),
        (&edited, "edited"),
    ] {
        if !n.is_empty() {
            parts.push(format!("{} record(s) {what} ({})", n.len(), few(n)));
        }
    }
    format!(
        "STALE: recorded against corpus {} and the corpus is now {}: {}",
        &then.sha256[..8.min(then.sha256.len())],
        &now.sha256[..8.min(now.sha256.len())],
        if parts.is_empty() {
            "records changed".to_string()
        } else {
            parts.join(", ")
        }
    )
}

/// The staleness of one recording at `path` of an engine, given today's corpus and the corpus
/// hash the baseline was recorded on (None: not in the baseline).
pub fn of_recording(
    path: &std::path::Path,
    own_index: bool,
    now: &RecordedCorpus,
    baseline_corpus: Option<&str>,
    command: String,
) -> Staleness {
    if own_index {
        return Staleness::OwnIndex {
            version: recorded_version(path),
        };
    }
    match recorded_corpus(path) {
        Some(then) if then.sha256 == now.sha256 => Staleness::Current,
        Some(then) => Staleness::Stale {
            why: changed(&then, now),
            command,
            file: crate::report::shown(path),
        },
        None if baseline_corpus.is_some_and(|b| b != now.sha256) => Staleness::Stale {
            why: "STALE: recorded before ranklab kept a recording's corpus, and the suite's corpus changed since the baseline".to_string(),
            command,
            file: crate::report::shown(path),
        },
        None => Staleness::Unknown,
    }
}

impl Plan {
    /// Under recording replay, the staleness of each wanted external configuration's recording
    /// (suites only).
    pub fn staleness(&self) -> BTreeMap<(String, String), Staleness> {
        let mut out = BTreeMap::new();
        for s in self.subjects.values() {
            if s.replay.external != crate::external::Mode::FromRecording {
                continue;
            }
            let Some(runs) = s.replay.recordings.as_deref() else {
                continue;
            };
            let now = RecordedCorpus::of(&s.corpus);
            let base = self
                .old
                .suites
                .get(&s.name)
                .map(|e| e.corpus_sha256.as_str());
            for (k, w) in &self.wanted {
                if k.0 != s.name
                    || w.gone.is_some()
                    || out.contains_key(&(k.0.clone(), k.1.clone()))
                {
                    continue;
                }
                let Some(spec) = s.configuration(&k.1).and_then(|c| c.engine.as_ref()) else {
                    continue;
                };
                let path = runs.join(crate::suite::recording_file_name(&k.1));
                let command = format!(
                    "ranklab run {} --record",
                    crate::report::shown(s.suite.dir())
                );
                out.insert(
                    (k.0.clone(), k.1.clone()),
                    of_recording(&path, spec.own_index, &now, base, command),
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(records: &[(&str, &str)], sha: &str) -> RecordedCorpus {
        RecordedCorpus {
            sha256: sha.to_string(),
            records: records
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        }
    }

    fn file(dir: &std::path::Path, corpus: Option<&RecordedCorpus>) -> std::path::PathBuf {
        let p = dir.join("x.recording.json");
        let mut v = serde_json::json!({"configuration": "x", "version": "x 1.0", "exchanges": []});
        if let Some(c) = corpus {
            v["corpus"] = serde_json::to_value(c).unwrap();
        }
        std::fs::write(&p, v.to_string()).unwrap();
        p
    }

    /// The four cases, each against a recording file written by hand.
    #[test]
    fn a_recording_of_another_corpus_is_stale_and_names_the_edited_record() {
        let dir = tempfile::tempdir().unwrap();
        let then = corpus(&[("a", "1"), ("b", "2")], "aaaaaaaa11");
        let now = corpus(&[("a", "1"), ("b", "3")], "bbbbbbbb22");
        let cmd = || "ranklab run tasks/s --record".to_string();
        let p = file(dir.path(), Some(&then));
        assert_eq!(
            of_recording(&p, false, &then, None, cmd()),
            Staleness::Current
        );
        match of_recording(&p, false, &now, None, cmd()) {
            Staleness::Stale { why, .. } => {
                assert!(why.contains("1 record(s) edited (b)"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            of_recording(&p, true, &now, None, cmd()),
            Staleness::OwnIndex {
                version: Some("x 1.0".into())
            }
        );
        let old = file(dir.path(), None);
        assert_eq!(
            of_recording(&old, false, &now, Some("bbbbbbbb22"), cmd()),
            Staleness::Unknown
        );
        assert!(of_recording(&old, false, &now, Some("aaaaaaaa11"), cmd()).is_stale());
    }
}
