//! Recordings are inputs: the files a suite's rows are replayed from under `--from-recording`
//! (`reports/<suite>/runs/`: engine recordings `*.recording.json`, rerank recordings
//! `*.rerank.recording.json`, model outputs `models/*.emb` and `models/*.ce`) change the
//! numbers as a corpus does. The baseline keeps a digest of each (`inputs.<suite>.recordings`,
//! path under `runs/` -> the first 16 hex digits of the file's sha256), and the gate's banner
//! names a recording added, removed or changed since, as it names a changed record.
//!
//! A digest says only that the bytes moved; whether the values in them are ones a model or an
//! engine can give is checked where they are read (`models::recorded`, `external::recording`,
//! `external::rerank`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use sha2::Digest;

/// Whether `rel` (a path under `runs/`, `/`-separated) is a recording the replay reads.
fn is_recording(rel: &str) -> bool {
    match rel.split_once('/') {
        None => rel.ends_with(".recording.json"),
        Some(("models", name)) => {
            !name.contains('/') && (name.ends_with(".emb") || name.ends_with(".ce"))
        }
        Some(_) => false,
    }
}

/// The digest of every recording under `runs` (a suite's `reports/<suite>/runs`), by path
/// under it; empty when the folder does not exist. An unreadable file has the digest
/// `unreadable` (the banner then names it as changed).
pub fn digests(runs: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for sub in ["", "models"] {
        let Ok(entries) = std::fs::read_dir(runs.join(sub)) else {
            continue;
        };
        for e in entries.flatten() {
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let rel = if sub.is_empty() {
                name
            } else {
                format!("{sub}/{name}")
            };
            if !is_recording(&rel) || !e.file_type().is_ok_and(|t| t.is_file()) {
                continue;
            }
            let digest = match std::fs::read(e.path()) {
                Ok(bytes) => {
                    ranklab_engine::models::hex(&sha2::Sha256::digest(&bytes))[..16].to_string()
                }
                Err(_) => "unreadable".to_string(),
            };
            out.insert(rel, digest);
        }
    }
    out
}

/// The recordings of a suite that differ from the baseline's digests.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct RecordingsChange {
    /// Recordings there now and not then.
    pub added: Vec<String>,
    /// Recordings recorded then and gone now.
    pub removed: Vec<String>,
    /// Recordings whose bytes changed.
    pub changed: Vec<String>,
}

/// What changed between the digests `then` (the baseline's) and `now`; None when nothing did,
/// or when the baseline records no recording digest (a baseline written before they were).
pub fn change(
    then: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> Option<RecordingsChange> {
    if then.is_empty() {
        return None;
    }
    let mut c = RecordingsChange::default();
    for (p, d) in now {
        match then.get(p) {
            None => c.added.push(p.clone()),
            Some(t) if t != d => c.changed.push(p.clone()),
            Some(_) => {}
        }
    }
    c.removed = then
        .keys()
        .filter(|p| !now.contains_key(*p))
        .cloned()
        .collect();
    (!(c.added.is_empty() && c.removed.is_empty() && c.changed.is_empty())).then_some(c)
}

impl RecordingsChange {
    /// The banner's words: `recordings changed (runs/minisearch.recording.json), added (…)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        for (list, what) in [
            (&self.changed, "changed"),
            (&self.added, "added"),
            (&self.removed, "removed"),
        ] {
            if !list.is_empty() {
                let names: Vec<String> = list.iter().map(|p| format!("runs/{p}")).collect();
                parts.push(format!("{what} ({})", names.join(", ")));
            }
        }
        format!(
            "recordings {} (the rows replayed from them rest on other bytes than the baseline's)",
            parts.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_whose_bytes_moved_is_named_others_are_not() {
        let dir = tempfile::tempdir().unwrap();
        let runs = dir.path();
        std::fs::create_dir_all(runs.join("models")).unwrap();
        let write = |p: &str, b: &str| std::fs::write(runs.join(p), b).unwrap();
        write("e.recording.json", r#"{"exchanges":[{"hits":["a","b"]}]}"#);
        write("f.rerank.recording.json", "{}");
        write("models/x.emb", "vectors");
        write("models/y.ce", "scores");
        write("e.trec", "a run: an output, not an input");
        write("models/notes.txt", "not a recording");
        let then = digests(runs);
        assert_eq!(
            then.keys().collect::<Vec<_>>(),
            [
                "e.recording.json",
                "f.rerank.recording.json",
                "models/x.emb",
                "models/y.ce"
            ]
        );
        // The oracle is coreutils: `printf scores | sha256sum` = a6235752ef51e86c…
        assert_eq!(then["models/y.ce"], "a6235752ef51e86c");
        assert_eq!(change(&then, &digests(runs)), None);
        // Two hits swapped (issue 42 case 2), a model file removed, a new recording.
        write("e.recording.json", r#"{"exchanges":[{"hits":["b","a"]}]}"#);
        std::fs::remove_file(runs.join("models/x.emb")).unwrap();
        write("g.recording.json", "{}");
        write("e.trec", "changed output");
        let c = change(&then, &digests(runs)).unwrap();
        assert_eq!(c.changed, ["e.recording.json"]);
        assert_eq!(c.added, ["g.recording.json"]);
        assert_eq!(c.removed, ["models/x.emb"]);
        assert!(c
            .describe()
            .starts_with("recordings changed (runs/e.recording.json), added (runs/g.recording.json), removed (runs/models/x.emb)"));
        // A baseline without digests says nothing (it cannot know).
        assert_eq!(change(&BTreeMap::new(), &digests(runs)), None);
    }
}
