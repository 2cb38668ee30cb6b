//! Recorded model outputs: the vectors and pair scores a suite's reports rest on, kept beside
//! them (`<reports>/<suite>/runs/models/`, one record file per model identity, the cache's own
//! format and file name), so that a replay `--from-recording` takes the very same bits on any
//! machine.
//!
//! Why it is needed: the pinned models are int8 ONNX, and ONNX Runtime's int8 kernels are not the
//! same on every CPU (AVX2's unsigned × signed byte products saturate at 16 bits, AVX-512 VNNI's
//! do not). The same text gives a bge-small-en-v1.5 vector whose cosines differ by up to 0.009
//! between two such machines: enough to swap near ties, so a gate recorded on one machine failed
//! on the other with no input changed. Model outputs are inputs of a replay, like an external
//! engine's answers, and are recorded as those are.
//!
//! A [`Session`] is begun around one suite's replay. While it is active, every cache of a
//! recorded kind ([`CacheKind::RECORDED`]: vectors and scores; not ColBERT's token rows, an
//! intermediate, nor LLM grades, which `judgments.yaml` keeps) that is opened attaches to it:
//! - reading (`--from-recording`): a key held by the recording is served from it, before the
//!   cache's own file; a key it does not hold (a record edited since) is looked up and computed
//!   as usual. A damaged recorded record is reported and discarded, never trusted. A record
//!   whose checksum matches but whose value the model cannot produce (`CacheKind::sound`: a
//!   NaN or an infinity, a zero or non-unit vector from a normalizing embedder) is an edit,
//!   not damage: the recording is refused, naming the file.
//! - keeping: every key the replay asks for, and the payload it was given, is kept, and
//!   [`Session::finish`] returns one record file per model of exactly those records (sorted by
//!   key: the same outputs give the same bytes), for the caller to write with the reports.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::record_file::RecordFile;
use crate::Result;

/// The active session, if any (one suite is replayed at a time).
static ACTIVE: Mutex<Option<Arc<Shared>>> = Mutex::new(None);

fn active() -> MutexGuard<'static, Option<Arc<Shared>>> {
    ACTIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the caches of one session share.
#[derive(Debug)]
struct Shared {
    /// The folder recorded files are read from (None: nothing is read, outputs are only kept).
    read: Option<PathBuf>,
    /// One layer per cache file name (`<sha256(identity)>.<ext>`).
    layers: Mutex<BTreeMap<String, Arc<Layer>>>,
}

/// The recording of one model identity in a session: what was read, and what was kept.
#[derive(Debug)]
pub(crate) struct Layer {
    kind: String,
    identity: String,
    sound: fn(&[u8]) -> bool,
    recorded: Option<RecordFile>,
    kept: Mutex<RecordFile>,
    /// Where each kept key's payload came from (the first time it was kept).
    origins: Mutex<BTreeMap<[u8; 32], Origin>>,
}

/// Where a model output a replay was given came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The recording read from (`--from-recording`).
    Recorded,
    /// This machine's cache.
    Cached,
    /// Computed by the model on this machine.
    Computed,
}

impl Layer {
    /// The recorded payload of `key`, if the recording holds it.
    pub(crate) fn get(&self, key: &[u8; 32]) -> Option<&[u8]> {
        self.recorded.as_ref().and_then(|r| r.get(key))
    }

    /// Keeps `key`'s payload as the replay was given it, and where it came from.
    pub(crate) fn keep(&self, key: &[u8; 32], payload: &[u8], origin: Origin) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.get(key).is_none() {
            kept.insert(*key, payload);
            let mut origins = self.origins.lock().unwrap_or_else(|p| p.into_inner());
            origins.insert(*key, origin);
        }
    }
}

/// The layer of the cache file `name` (kind, identity, payload size as its header says) in the
/// active session, None when no session is active. The recorded file is read and verified the
/// first time the session asks for it; damaged records are reported on stderr and left out.
pub(crate) fn layer(
    name: &str,
    kind: &str,
    identity: &str,
    payload: usize,
    sound: fn(&[u8]) -> bool,
) -> Result<Option<Arc<Layer>>> {
    let Some(shared) = active().clone() else {
        return Ok(None);
    };
    let mut layers = shared.layers.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(l) = layers.get(name) {
        return Ok(Some(l.clone()));
    }
    let recorded = match &shared.read {
        Some(dir) if dir.join(name).is_file() => {
            let path = dir.join(name);
            let (file, report) =
                RecordFile::open_checked_quiet(&path, kind, identity, payload, sound)?;
            if report.refused > 0 {
                return Err(crate::Error::Config(format!(
                    "model-output recording {}: {} record(s) hold values the model {identity:?} \
                     cannot produce (a NaN or an infinity, or a zero or non-unit vector from an \
                     L2-normalizing embedder) under matching checksums: the file was edited. \
                     Restore it (git checkout -- {0}) or record it again (run without \
                     --from-recording)",
                    path.display(),
                    report.refused
                )));
            }
            if report.discarded > 0 {
                eprintln!(
                    "warning: model-output recording {}: {} damaged record(s) (checksum \
                     mismatch or truncation) left out; their values are computed here",
                    path.display(),
                    report.discarded
                );
            }
            Some(file)
        }
        _ => None,
    };
    let l = Arc::new(Layer {
        kind: kind.to_string(),
        identity: identity.to_string(),
        sound,
        recorded,
        kept: Mutex::new(RecordFile::in_memory(kind, identity, payload)),
        origins: Mutex::new(BTreeMap::new()),
    });
    layers.insert(name.to_string(), l.clone());
    Ok(Some(l))
}

/// The folder the active session reads recorded files from, if any.
pub(crate) fn read_dir() -> Option<PathBuf> {
    active().as_ref().and_then(|s| s.read.clone())
}

/// One recorded model file of a finished session.
#[derive(Debug)]
pub struct RecordedFile {
    /// The cache's file name, `<sha256(identity)>.<ext>`.
    pub name: String,
    /// The model identity it holds.
    pub identity: String,
    /// Records the replay asked for.
    pub records: usize,
    /// Of those, how many the recording read from did not hold (taken from the cache or
    /// computed on this machine); all of them when nothing was read.
    pub not_recorded: usize,
    /// Of the records, how many were served from the recording read from.
    pub from_recording: usize,
    /// Of the records, how many were taken from this machine's cache.
    pub from_cache: usize,
    /// Of the records, how many the model computed on this machine.
    pub computed: usize,
    kind: String,
    kept: RecordFile,
    sound: fn(&[u8]) -> bool,
}

impl RecordedFile {
    /// Writes the records into `<dir>/<name>` (atomically), merged with what that file holds:
    /// a key the replay asked for takes the replay's payload, every other record is kept (a
    /// replay of some experiments does not drop the others'). A damaged record of the file is
    /// reported and left out. Says what the file holds now and what this write changed in it
    /// (compared with the file as it was, whatever the replay read from).
    pub fn write_into(&self, dir: &Path) -> Result<Written> {
        let path = dir.join(&self.name);
        let (h, payload) = (&self.kept, self.kept.payload());
        let (mut file, _) =
            RecordFile::open_checked(&path, self.kind(), &self.identity, payload, self.sound)?;
        let (mut added, mut changed) = (0, 0);
        for k in h.keys() {
            let now = h.get(k).expect("a kept key");
            match file.get(k) {
                None => added += 1,
                Some(before) if before != now => changed += 1,
                Some(_) => {}
            }
            file.insert(*k, now);
        }
        crate::atomic::write(&path, &file.to_bytes())?;
        Ok(Written {
            total: file.len(),
            added,
            changed,
        })
    }

    fn kind(&self) -> &str {
        &self.kind
    }
}

/// What [`RecordedFile::write_into`] did to the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Records the file holds now.
    pub total: usize,
    /// Records it did not hold before.
    pub added: usize,
    /// Records it held with another payload (computed again with other bits).
    pub changed: usize,
}

/// A recording session (see the module documentation); ended by [`Session::finish`] or on drop.
#[derive(Debug)]
pub struct Session {
    shared: Arc<Shared>,
}

impl Session {
    /// Begins a session: caches of recorded kinds opened from now on read `read`'s files first
    /// (when given) and keep what they serve. Refused while another session is active.
    pub fn begin(read: Option<&Path>) -> Result<Session> {
        let mut slot = active();
        if slot.is_some() {
            return Err(crate::Error::Config(
                "a model recording session is already active (one suite is replayed at a time)"
                    .to_string(),
            ));
        }
        let shared = Arc::new(Shared {
            read: read.map(Path::to_path_buf),
            layers: Mutex::new(BTreeMap::new()),
        });
        *slot = Some(shared.clone());
        Ok(Session { shared })
    }

    /// Ends the session: one file per model whose cache kept anything, by file name.
    pub fn finish(self) -> Vec<RecordedFile> {
        let layers = self.shared.layers.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        for (name, l) in layers.iter() {
            let kept = l.kept.lock().unwrap_or_else(|p| p.into_inner());
            let records = kept.len();
            if records == 0 {
                continue;
            }
            let not_recorded = kept.keys().filter(|k| l.get(k).is_none()).count();
            let origins = l.origins.lock().unwrap_or_else(|p| p.into_inner());
            let count = |o: Origin| origins.values().filter(|&&x| x == o).count();
            let mut copy = RecordFile::in_memory(&l.kind, &l.identity, kept.payload());
            for k in kept.keys() {
                copy.insert(*k, kept.get(k).expect("a kept key"));
            }
            out.push(RecordedFile {
                name: name.clone(),
                identity: l.identity.clone(),
                records,
                not_recorded,
                from_recording: count(Origin::Recorded),
                from_cache: count(Origin::Cached),
                computed: count(Origin::Computed),
                kind: l.kind.clone(),
                kept: copy,
                sound: l.sound,
            });
        }
        out
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let mut slot = active();
        if slot.as_ref().is_some_and(|s| Arc::ptr_eq(s, &self.shared)) {
            *slot = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::keyed::KeyedCache;
    use super::*;

    fn any(_: &[u8]) -> bool {
        true
    }

    /// A cache file of identity `id` under `dir` holding `records`, written as a cache writes it.
    fn cache_file(dir: &Path, id: &str, records: &[([u8; 32], [u8; 4])]) -> String {
        let c = KeyedCache::open(dir, "t", "test records", id, 4, any, false).unwrap();
        c.store(records.iter().map(|(k, v)| (*k, &v[..]))).unwrap();
        c.flush().unwrap();
        c.path()
            .unwrap()
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string()
    }

    // One test: sessions are process-wide, and the test threads of this crate run in parallel.
    #[test]
    fn a_recorded_output_is_served_before_the_cache_kept_and_merged_into_the_recording() {
        let (cache, recording, out) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let id = "recorded-test identity 7f3a";
        let (a, b, c, d) = ([1u8; 32], [2u8; 32], [3u8; 32], [4u8; 32]);
        // This machine's cache says a = 10, b = 20; the recording (another machine) says a = 11
        // and holds d, which this replay does not ask for.
        let name = cache_file(cache.path(), id, &[(a, [10; 4]), (b, [20; 4])]);
        assert_eq!(
            cache_file(recording.path(), id, &[(a, [11; 4]), (d, [44; 4])]),
            name
        );
        std::fs::copy(recording.path().join(&name), out.path().join(&name)).unwrap();

        let session = Session::begin(Some(recording.path())).unwrap();
        assert!(
            Session::begin(None).is_err(),
            "a second session while one is active"
        );
        let kc = KeyedCache::open(cache.path(), "t", "test records", id, 4, any, true).unwrap();
        let l = kc.lookup(&[a, b, c], |p| p[0]);
        assert_eq!(
            l.found,
            [Some(11), Some(20), None],
            "recording, then cache, then missing"
        );
        kc.store([(c, &[30u8; 4][..])]).unwrap();
        // A cache of a kind that is not recorded is left alone.
        let other = KeyedCache::open(cache.path(), "u", "other", id, 4, any, false).unwrap();
        other.store([(a, &[99u8; 4][..])]).unwrap();
        // (Other tests' caches opened meanwhile may attach too: look for ours by name.)
        let files = session.finish();
        assert!(!files.iter().any(|f| f.name.ends_with(".u")), "{files:?}");
        let f = files.iter().find(|f| f.name == name).expect("our file");
        assert_eq!(f.identity, id);
        assert_eq!((f.records, f.not_recorded), (3, 2), "a recorded; b, c not");
        assert_eq!(
            (f.from_recording, f.from_cache, f.computed),
            (1, 1, 1),
            "a from the recording, b from the cache, c stored as computed"
        );
        assert_eq!(
            f.write_into(out.path()).unwrap(),
            Written {
                total: 4,
                added: 2,
                changed: 0
            },
            "a, b, c and the kept d; b and c new to the file, a the same bytes as the recording's"
        );
        // Written again: nothing new, nothing changed (a live `run` repeated says so).
        assert_eq!(
            f.write_into(out.path()).unwrap(),
            Written {
                total: 4,
                added: 0,
                changed: 0
            }
        );

        // Read back as a plain cache: the replay's payloads, and d kept.
        let back = KeyedCache::open(out.path(), "t", "test records", id, 4, any, false).unwrap();
        let l = back.lookup(&[a, b, c, d], |p| p[0]);
        assert_eq!(l.found, [Some(11), Some(20), Some(30), Some(44)]);
        // The cache's own file still holds this machine's a: nothing was written into it.
        let own = KeyedCache::open(cache.path(), "t", "test records", id, 4, any, false).unwrap();
        assert_eq!(own.lookup(&[a], |p| p[0]).found, [Some(10)]);
        // The session ended: a new one can begin, and a cache opened outside one reads no
        // recording.
        drop(Session::begin(None).unwrap());
        let outside =
            KeyedCache::open(cache.path(), "t", "test records", id, 4, any, true).unwrap();
        assert_eq!(outside.lookup(&[a], |p| p[0]).found, [Some(10)]);
    }
}
