//! What the embedding cache and the score cache share: one [`RecordFile`] per model identity,
//! named by the identity's sha256, looked up by 32-byte keys, with each distinct missing key
//! computed once per call, new records saved as the run goes ([`CHECKPOINT_EVERY`]) and on
//! drop.
//!
//! The two caches differ only in what a key hashes (a text; a query and a passage), what a
//! payload holds (a vector; a logit) and how they count; those stay in `dense::cache` and
//! `rerank::cache`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use super::record_file::{read_header, RecordFile, CHECKPOINT_EVERY};
use super::recorded::{Layer, Origin};
use super::remote::{verify, Offload, Shard, WorkKind, WorkRequest};
use super::{hex, sha256};
use crate::{Error, Result};

/// From this many keys on, [`KeyedCache::lookup`] finds the records on rayon's pool.
const PARALLEL_FROM: usize = 2048;

/// A checked record file of one model identity, shared between threads.
#[derive(Debug)]
pub(crate) struct KeyedCache {
    kind: &'static str,
    identity: String,
    file: Mutex<RecordFile>,
    discarded_at_open: usize,
    /// The recording session's layer of this identity (see `models::recorded`): read before
    /// the file, and told every payload served or stored.
    layer: Option<Arc<Layer>>,
}

/// The result of looking a call's keys up.
#[derive(Debug)]
pub(crate) struct Lookup<T> {
    /// Decoded payloads found, by position (None: to compute).
    pub found: Vec<Option<T>>,
    /// Distinct missing keys, in first-seen order: the position to compute, and every position
    /// the result fills (the first included).
    pub todo: Vec<(usize, Vec<usize>)>,
    /// Positions served without computing: from the file, or from an identical key earlier in
    /// the same call.
    pub served: usize,
    /// Missing keys whose record was on disk but damaged.
    pub rebuilt: usize,
}

impl KeyedCache {
    /// The cache `<dir>/<sha256(identity)>.<ext>`, read now and each record verified when it is
    /// first asked for (`RecordFile::open_lazy`: a warm run reads a few hundred records of a file
    /// that may hold every vector the machine ever embedded); damaged records, and records whose
    /// checksum matches but whose payload `sound` refuses (a non-finite value), are reported on
    /// stderr once per file and recomputed when asked for (a rebuild). A damaged header or a
    /// truncated tail is found at open and counted in [`KeyedCache::discarded_at_open`]. `recorded`: the cache attaches to the active recording session, if any
    /// (`models::recorded`).
    pub fn open(
        dir: &Path,
        ext: &str,
        kind: &'static str,
        identity: &str,
        payload: usize,
        sound: fn(&[u8]) -> bool,
        recorded: bool,
    ) -> Result<KeyedCache> {
        let name = format!("{}.{ext}", hex(&sha256(identity.as_bytes())));
        let (file, report) =
            RecordFile::open_lazy(&dir.join(&name), kind, identity, payload, sound)?;
        let layer = match recorded {
            true => super::recorded::layer(&name, kind, identity, payload, sound)?,
            false => None,
        };
        Ok(KeyedCache {
            kind,
            identity: identity.to_string(),
            file: Mutex::new(file),
            discarded_at_open: report.discarded,
            layer,
        })
    }

    /// The identities and payload sizes of the `kind` caches in `dir` (`*.<ext>`), read from
    /// their headers only. A file counts when its header verifies and its name is the sha256 of
    /// the identity it holds, that is when [`KeyedCache::open`] of that identity would read it.
    pub fn recorded(dir: &Path, ext: &str, kind: &str) -> Vec<(String, usize)> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let Some(stem) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(&format!(".{ext}")))
            else {
                continue;
            };
            let Some(h) = read_header(&path) else {
                continue;
            };
            if h.kind == kind && hex(&sha256(h.identity.as_bytes())) == stem {
                out.push((h.identity, h.payload));
            }
        }
        out.sort();
        out
    }

    /// A cache in memory only: nothing is read or written.
    pub fn in_memory(kind: &'static str, identity: &str, payload: usize) -> KeyedCache {
        KeyedCache {
            kind,
            identity: identity.to_string(),
            file: Mutex::new(RecordFile::in_memory(kind, identity, payload)),
            discarded_at_open: 0,
            layer: None,
        }
    }

    pub fn identity(&self) -> &str {
        &self.identity
    }

    pub fn path(&self) -> Option<PathBuf> {
        self.lock().path().map(Path::to_path_buf)
    }

    pub fn discarded_at_open(&self) -> usize {
        self.discarded_at_open
    }

    fn lock(&self) -> MutexGuard<'_, RecordFile> {
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Refuses a model other than the one the cache was opened for (`role`: "embedder",
    /// "cross-encoder").
    pub fn check_model(&self, role: &str, identity: &str) -> Result<()> {
        if identity == self.identity {
            return Ok(());
        }
        Err(Error::Config(format!(
            "{} cache for {:?} used with {role} {:?}",
            self.kind, self.identity, identity
        )))
    }

    /// Looks `keys` up, decoding each payload found; each distinct missing key is listed once
    /// in `todo`. The records are found side by side on rayon's pool when the call asks for
    /// [`PARALLEL_FROM`] keys or more (a replay's pooled shortlists ask tens of thousands: their
    /// binary searches were one serial step of a warm replay); the file is only read there, and
    /// everything that counts or keeps runs after, in key order.
    pub fn lookup<T>(&self, keys: &[[u8; 32]], decode: impl Fn(&[u8]) -> T) -> Lookup<T> {
        use rayon::prelude::*;
        let file = self.lock();
        let find = |key: &[u8; 32]| match self.layer.as_ref().and_then(|l| l.get(key)) {
            Some(bytes) => Some((bytes, Origin::Recorded)),
            None => file.get(key).map(|bytes| (bytes, Origin::Cached)),
        };
        let records: Vec<Option<(&[u8], Origin)>> = match keys.len() >= PARALLEL_FROM {
            true => keys.par_iter().map(find).collect(),
            false => keys.iter().map(find).collect(),
        };
        let mut out = Lookup {
            found: (0..keys.len()).map(|_| None).collect(),
            todo: Vec::new(),
            served: 0,
            rebuilt: 0,
        };
        let mut pending: HashMap<[u8; 32], usize> = HashMap::new();
        for (i, (key, record)) in keys.iter().zip(records).enumerate() {
            if let Some((bytes, origin)) = record {
                if let Some(l) = &self.layer {
                    l.keep(key, bytes, origin);
                }
                out.found[i] = Some(decode(bytes));
                out.served += 1;
            } else if let Some(&j) = pending.get(key) {
                out.todo[j].1.push(i);
                out.served += 1;
            } else {
                pending.insert(*key, out.todo.len());
                out.todo.push((i, vec![i]));
                if file.was_damaged(key) {
                    out.rebuilt += 1;
                }
            }
        }
        out
    }

    /// Stores computed records, and saves the file when the last save is older than
    /// [`CHECKPOINT_EVERY`].
    pub fn store<'a>(&self, records: impl IntoIterator<Item = ([u8; 32], &'a [u8])>) -> Result<()> {
        let mut file = self.lock();
        for (key, payload) in records {
            if let Some(l) = &self.layer {
                l.keep(&key, payload, Origin::Computed);
            }
            file.insert(key, payload);
        }
        file.checkpoint(CHECKPOINT_EVERY)
    }

    /// Writes new records to disk (atomically). Also done on drop, with a warning on failure.
    pub fn flush(&self) -> Result<()> {
        self.lock().flush()
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        let mut file = self.lock();
        file.settle();
        file.len()
    }

    /// The record file's bytes (what a worker returns; see `models::remote`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut file = self.lock();
        file.settle();
        file.to_bytes()
    }

    /// Verifies a returned record file whole (see [`verify`]) against `asked` and, when it
    /// verifies, stores its records: the number stored, or why the file was refused (nothing
    /// of it stored).
    pub fn merge_whole(
        &self,
        bytes: &[u8],
        asked: &BTreeSet<[u8; 32]>,
        payload_ok: impl Fn(&[u8]) -> bool,
    ) -> std::result::Result<usize, String> {
        let payload = self.lock().payload();
        let records = verify(bytes, self.kind, &self.identity, payload, asked, payload_ok)?;
        let n = records.len();
        self.store(records.iter().map(|(k, v)| (*k, &v[..])))
            .map_err(|e| format!("could not store the records: {e}"))?;
        Ok(n)
    }

    /// Has `offload` compute `shards` (each with the keys it asks for), merging every returned
    /// file that verifies, then writes the file. An error when a shard could not be completed.
    pub fn offload(
        &self,
        offload: &Offload,
        kind: WorkKind,
        shards: Vec<(Shard, BTreeSet<[u8; 32]>)>,
        payload_ok: impl Fn(&[u8]) -> bool,
    ) -> Result<()> {
        let (shards, asked): (Vec<Shard>, Vec<BTreeSet<[u8; 32]>>) = shards.into_iter().unzip();
        let work = WorkRequest {
            kind,
            model: offload.model.clone(),
            args: offload.args.clone(),
            identity: self.identity.clone(),
            shards,
        };
        let outcome = offload.remote.compute(&work, &mut |i, bytes| {
            self.merge_whole(bytes, &asked[i], &payload_ok)
        });
        self.flush()?;
        outcome
    }
}

impl Drop for KeyedCache {
    fn drop(&mut self) {
        if let Err(e) = self.lock().flush() {
            eprintln!("warning: could not save the {} cache: {e}", self.kind);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookup_lists_each_missing_key_once_and_serves_repeats() {
        let cache = KeyedCache::in_memory("t", "id", 1);
        let (a, b) = ([1u8; 32], [2u8; 32]);
        cache.store([(a, &[7u8][..])]).unwrap();
        let l = cache.lookup(&[b, a, b], <[u8]>::to_vec);
        assert_eq!(l.found[1].as_deref(), Some(&[7u8][..]));
        assert!(l.found[0].is_none() && l.found[2].is_none());
        assert_eq!(l.todo, vec![(0, vec![0, 2])]);
        assert_eq!((l.served, l.rebuilt), (2, 0));
    }

    #[test]
    fn another_model_is_refused() {
        let cache = KeyedCache::in_memory("scores", "model-a", 4);
        assert!(cache.check_model("cross-encoder", "model-a").is_ok());
        let err = cache.check_model("cross-encoder", "model-b").unwrap_err();
        assert!(err.to_string().contains("model-b"), "{err}");
    }

    /// A lookup large enough to find its records on rayon's pool, of a file read lazily from
    /// disk, one of its records damaged there. Oracle: the rules of [`Lookup`] applied by hand
    /// to the keys stored (every key i with i % 3 != 0 holds i's bytes) and the one damaged.
    #[test]
    fn a_large_lookup_finds_records_side_by_side_as_one_at_a_time_would() {
        let dir = tempfile::tempdir().unwrap();
        let key = |i: u32| sha256(&i.to_le_bytes());
        let n = 2 * PARALLEL_FROM as u32;
        let held: Vec<u32> = (0..n).filter(|i| !i.is_multiple_of(3)).collect();
        let payloads: Vec<[u8; 4]> = held.iter().map(|i| i.to_le_bytes()).collect();
        let open = || KeyedCache::open(dir.path(), "t", "t", "id", 4, |_| true, false).unwrap();
        let cache = open();
        cache
            .store(held.iter().zip(&payloads).map(|(&i, p)| (key(i), &p[..])))
            .unwrap();
        cache.flush().unwrap();
        drop(cache);
        // Damage the record of key(1) on disk: records of 68 bytes, sorted by key, at the end.
        let damaged = key(1);
        let path = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.extension().is_some_and(|e| e == "t"))
            .unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let mut sorted: Vec<[u8; 32]> = held.iter().map(|&i| key(i)).collect();
        sorted.sort_unstable();
        let at = sorted.binary_search(&damaged).unwrap();
        let body = bytes.len() - sorted.len() * 68;
        bytes[body + at * 68 + 33] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        let cache = open();
        let asked: Vec<u32> = (0..n).chain([0, 1, 2, 3]).collect();
        let keys: Vec<[u8; 32]> = asked.iter().map(|&i| key(i)).collect();
        let l = cache.lookup(&keys, <[u8]>::to_vec);
        let usable = |i: u32| !i.is_multiple_of(3) && i != 1;
        let mut todo: Vec<(usize, Vec<usize>)> = Vec::new();
        for (p, &i) in asked.iter().enumerate() {
            let want = usable(i).then(|| i.to_le_bytes().to_vec());
            assert_eq!(l.found[p], want, "position {p}, key {i}");
            if !usable(i) {
                match todo.iter_mut().find(|(first, _)| asked[*first] == i) {
                    Some((_, all)) => all.push(p),
                    None => todo.push((p, vec![p])),
                }
            }
        }
        assert_eq!(l.todo, todo);
        assert_eq!(l.served, asked.len() - todo.len());
        assert_eq!(l.rebuilt, 1, "key(1)'s record was damaged");
    }
}
