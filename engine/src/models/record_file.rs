//! Checked record files: the on-disk form of the embedding and score caches.
//!
//! One file per model identity. Layout (all integers little-endian):
//!
//! ```text
//! magic     8 bytes  "RLCACHE1"
//! hlen      u32      length of the header
//! header    hlen     JSON: {"kind", "identity", "payload"}; must equal what the reader expects
//! hsum      32 bytes sha256(magic | hlen | header)
//! records   n times  key (32 bytes) | payload (`payload` bytes) | sum = sha256(key | payload)
//! ```
//!
//! Records have a fixed size, so one damaged record costs only itself: a record whose sum does
//! not match, or a partial record at the end (a truncated file), is discarded with a warning on
//! stderr and counted, and its value is recomputed by the caller as an ordinary miss. So is a
//! record whose sum matches but whose payload its cache refuses ([`RecordFile::open_checked`]:
//! the vector and score caches refuse a NaN or an infinity, which a checksum recomputed over a
//! poisoned value would otherwise let through). A damaged header, or a header for another
//! identity, discards the whole file. Nothing unverified is ever returned. The warning is
//! printed once per file, when it is opened: the re-read that merges the disk's records before
//! a write discards the same records again without repeating it. [`RecordFile::open_lazy`]
//! (the caches' warm path) checks the header and the tail at open and each record when it is
//! first asked for (`models::unverified`), with the same guarantee: nothing unverified is served.
//!
//! Writes are atomic: the file is written in full to a temporary file in the same directory and
//! renamed over the old one. Before writing, the records on disk are merged in, so two processes
//! that share a cache lose no work (a record written by both is the same bytes). The
//! read-merge-rename runs under an advisory exclusive lock on `.<file>.lock` beside the file
//! (`flock`, through `fs4`), so two writers cannot interleave and drop each other's records. Records are
//! written sorted by key, so the same content always gives the same file.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::unverified::{Found, Unverified};
use crate::{Error, Result};

const MAGIC: &[u8; 8] = b"RLCACHE1";

/// What loading a file found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoadReport {
    /// Records read and verified.
    pub loaded: usize,
    /// Records (or the whole file) discarded as damaged: checksum mismatch, truncation, bad
    /// header, another identity, a payload the cache refuses (counted in `refused` too).
    pub discarded: usize,
    /// Of `discarded`, records whose checksum matched but whose payload the cache's check
    /// refused (a non-finite value).
    pub refused: usize,
}

/// An in-memory copy of one record file.
#[derive(Debug)]
pub(crate) struct RecordFile {
    path: Option<PathBuf>,
    header: Vec<u8>,
    payload: usize,
    records: BTreeMap<[u8; 32], Box<[u8]>>,
    /// Whether a payload read from disk may be used (see [`RecordFile::open_checked`]).
    sound: fn(&[u8]) -> bool,
    /// Keys of records discarded as damaged (as far as their key bytes could be read): a later
    /// miss on one of them is a rebuild.
    damaged: HashSet<[u8; 32]>,
    /// Records read from disk whose checksums are checked when first asked for
    /// ([`RecordFile::open_lazy`]); `records` holds what was stored since and wins over them.
    pub(super) unverified: Option<Unverified>,
    dirty: bool,
    /// When the file was last written (or opened): the clock of [`RecordFile::checkpoint`].
    saved_at: std::time::Instant,
}

/// How long new records may stay in memory only during a long computation: a run killed
/// after an hour of model work loses at most this much of it.
pub(crate) const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// What a record file without a payload check accepts: every payload.
fn any_payload(_: &[u8]) -> bool {
    true
}

/// What reading one record found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    /// The checksum matches and the payload passes the cache's check.
    Usable,
    /// The checksum does not match.
    Damaged,
    /// The checksum matches but the cache's check refuses the payload.
    Refused,
}

fn header_json(kind: &str, identity: &str, payload: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "kind": kind,
        "identity": identity,
        "payload": payload,
    }))
    .expect("header serializes")
}

pub(crate) fn record_sum(key: &[u8], payload: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(key);
    h.update(payload);
    h.finalize().into()
}

fn header_sum(header: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(MAGIC);
    h.update((header.len() as u32).to_le_bytes());
    h.update(header);
    h.finalize().into()
}

/// What a record file's header says: the record kind, the model identity and the payload size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Header {
    pub kind: String,
    pub identity: String,
    pub payload: usize,
}

/// Reads only the header of the record file at `path` (magic, length, JSON, checksum), without
/// its records. None when the file is absent, not a record file or its header is damaged.
pub(crate) fn read_header(path: &Path) -> Option<Header> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).ok()?;
    let mut start = [0u8; 12];
    f.read_exact(&mut start).ok()?;
    if &start[..8] != MAGIC {
        return None;
    }
    let hlen = u32::from_le_bytes(start[8..12].try_into().expect("4 bytes")) as usize;
    if hlen > 1 << 20 {
        return None;
    }
    let mut rest = vec![0u8; hlen + 32];
    f.read_exact(&mut rest).ok()?;
    let (header, sum) = rest.split_at(hlen);
    if header_sum(header) != sum {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Json {
        kind: String,
        identity: String,
        payload: usize,
    }
    let j: Json = serde_json::from_slice(header).ok()?;
    Some(Header {
        kind: j.kind,
        identity: j.identity,
        payload: j.payload,
    })
}

impl RecordFile {
    /// A file kept in memory only (nothing is read or written).
    pub(crate) fn in_memory(kind: &str, identity: &str, payload: usize) -> RecordFile {
        RecordFile {
            path: None,
            header: header_json(kind, identity, payload),
            payload,
            records: BTreeMap::new(),
            sound: any_payload,
            damaged: HashSet::new(),
            unverified: None,
            dirty: false,
            saved_at: std::time::Instant::now(),
        }
    }

    /// Opens `path` (absent is fine: an empty cache), verifying every record. Damage is
    /// reported on stderr and in the returned report.
    #[cfg(test)]
    pub(crate) fn open(
        path: &Path,
        kind: &str,
        identity: &str,
        payload: usize,
    ) -> Result<(RecordFile, LoadReport)> {
        RecordFile::open_checked(path, kind, identity, payload, any_payload)
    }

    /// [`RecordFile::open`], also discarding (as damaged, with the warning) every record whose
    /// checksum matches but whose payload `sound` refuses; such records are never merged back
    /// from disk either.
    pub(crate) fn open_checked(
        path: &Path,
        kind: &str,
        identity: &str,
        payload: usize,
        sound: fn(&[u8]) -> bool,
    ) -> Result<(RecordFile, LoadReport)> {
        Self::open_sound(path, (kind, identity, payload), sound, true)
    }

    /// [`RecordFile::open_checked`] without the warning on stderr: for a reader that refuses
    /// what the report counts instead of recomputing it (a recording, `models::recorded`).
    pub(crate) fn open_checked_quiet(
        path: &Path,
        kind: &str,
        identity: &str,
        payload: usize,
        sound: fn(&[u8]) -> bool,
    ) -> Result<(RecordFile, LoadReport)> {
        Self::open_sound(path, (kind, identity, payload), sound, false)
    }

    /// The file at `path` read with `sound` as the payload check, warning on stderr or not.
    fn open_sound(
        path: &Path,
        (kind, identity, payload): (&str, &str, usize),
        sound: fn(&[u8]) -> bool,
        warn: bool,
    ) -> Result<(RecordFile, LoadReport)> {
        let mut file = RecordFile {
            path: Some(path.to_path_buf()),
            sound,
            ..RecordFile::in_memory(kind, identity, payload)
        };
        let (records, damaged, report) = file.read_disk(warn)?;
        file.records = records;
        file.damaged = damaged;
        Ok((file, report))
    }

    /// [`RecordFile::open_checked`] that checks a record's checksum and payload only when the
    /// record is first asked for ([`RecordFile::get`], [`RecordFile::was_damaged`]): a record
    /// that fails then is reported on stderr (the file's first such record only), never
    /// served, and counts as damaged, as if the open had found it. The header and a truncated
    /// tail are checked now, as by `open_checked`. A file whose keys are not strictly ascending
    /// (not written by a record file) is verified whole now. The returned report counts only
    /// what the open found.
    pub(crate) fn open_lazy(
        path: &Path,
        kind: &str,
        identity: &str,
        payload: usize,
        sound: fn(&[u8]) -> bool,
    ) -> Result<(RecordFile, LoadReport)> {
        let mut file = RecordFile {
            path: Some(path.to_path_buf()),
            sound,
            ..RecordFile::in_memory(kind, identity, payload)
        };
        let Some(bytes) = read_bytes(path)? else {
            return Ok((file, LoadReport::default()));
        };
        let record_len = 64 + payload;
        let Ok(offset) = file.check_header(&bytes) else {
            return Self::parsed(file, &bytes);
        };
        let count = (bytes.len() - offset) / record_len;
        if (bytes.len() - offset) % record_len != 0 {
            // A partial record at the end: the whole path reports and discards it.
            return Self::parsed(file, &bytes);
        }
        match Unverified::new(bytes, offset, count, payload) {
            Ok(u) => {
                file.unverified = Some(u);
                Ok((file, LoadReport::default()))
            }
            Err(bytes) => Self::parsed(file, &bytes),
        }
    }

    /// `file` with the records of `bytes` verified whole, warning about damage.
    fn parsed(mut file: RecordFile, bytes: &[u8]) -> Result<(RecordFile, LoadReport)> {
        let (records, damaged, report) = file.parse_disk(bytes, true)?;
        file.records = records;
        file.damaged = damaged;
        Ok((file, report))
    }

    /// Verifies every record still unverified ([`RecordFile::open_lazy`]) and keeps those that
    /// pass beside the records stored since; those that fail count as damaged. Quiet: what is
    /// damaged is left out as when a flush re-reads the disk.
    pub(crate) fn settle(&mut self) {
        let Some(u) = self.unverified.take() else {
            return;
        };
        for i in 0..u.len() {
            let key = u.key(i);
            if self.records.contains_key(&key) {
                continue;
            }
            match u.verdict(i, self.sound).0 {
                Found::Usable => {
                    self.records.insert(key, u.payload(i).into());
                }
                Found::Damaged | Found::Refused => {
                    self.damaged.insert(key);
                }
            }
        }
    }

    /// The verified payload of `key` among the unverified records, warning on stderr when its
    /// check fails and it is the file's first record to fail.
    fn get_unverified(&self, key: &[u8; 32]) -> Option<Result<&[u8], Found>> {
        let u = self.unverified.as_ref()?;
        let i = u.find(key)?;
        let (verdict, first_bad) = u.verdict(i, self.sound);
        if first_bad {
            let what = match verdict {
                Found::Damaged => "a damaged entry (checksum mismatch)",
                _ => "1 entry holding a non-finite value (NaN or infinity), or a vector no normalizing model gives, under a matching checksum",
            };
            eprintln!(
                "warning: cache file {}: {what}, found when read; discarded, it will be recomputed (any other damaged entry of this file is recomputed without another warning)",
                self.path.as_deref().map(Path::display).map(|d| d.to_string()).unwrap_or_default()
            );
        }
        Some(match verdict {
            Found::Usable => Ok(u.payload(i)),
            bad => Err(bad),
        })
    }

    /// Payload bytes per record.
    pub(crate) fn payload(&self) -> usize {
        self.payload
    }

    pub(crate) fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Parses the file on disk into verified records, warning about damage when `warn`.
    #[allow(clippy::type_complexity)]
    fn read_disk(
        &self,
        warn: bool,
    ) -> Result<(BTreeMap<[u8; 32], Box<[u8]>>, HashSet<[u8; 32]>, LoadReport)> {
        let bytes = match &self.path {
            Some(path) => read_bytes(path)?,
            None => None,
        };
        match bytes {
            Some(bytes) => self.parse_disk(&bytes, warn),
            None => Ok((BTreeMap::new(), HashSet::new(), LoadReport::default())),
        }
    }

    /// [`RecordFile::read_disk`] of the file's `bytes`.
    #[allow(clippy::type_complexity)]
    fn parse_disk(
        &self,
        bytes: &[u8],
        warn: bool,
    ) -> Result<(BTreeMap<[u8; 32], Box<[u8]>>, HashSet<[u8; 32]>, LoadReport)> {
        let mut records = BTreeMap::new();
        let mut damaged = HashSet::new();
        let mut report = LoadReport::default();
        let path = self.path.as_deref().expect("read from a file");
        let record_len = 64 + self.payload;
        let body = match self.check_header(bytes) {
            Ok(offset) => &bytes[offset..],
            Err(why) => {
                report.discarded = bytes
                    .len()
                    .saturating_sub(self.header.len() + 44)
                    .div_ceil(record_len)
                    .max(1);
                if warn {
                    eprintln!(
                    "warning: cache file {}: {why}; discarding it, its entries will be recomputed",
                    path.display()
                    );
                }
                return Ok((records, damaged, report));
            }
        };
        let (mut corrupt, mut refused) = (0, 0);
        let chunks = body.chunks_exact(record_len);
        let tail = chunks.remainder();
        let truncated = usize::from(!tail.is_empty());
        if tail.len() >= 32 {
            damaged.insert(tail[..32].try_into().expect("32 bytes"));
        }
        // The checksums on rayon's pool (a warm run's cache is megabytes); kept in file order.
        let verdicts: Vec<Verdict> = {
            use rayon::prelude::*;
            body[..body.len() - tail.len()]
                .par_chunks_exact(record_len)
                .map(|rec| {
                    let (key, rest) = rec.split_at(32);
                    let (payload, sum) = rest.split_at(self.payload);
                    match (record_sum(key, payload) == sum, (self.sound)(payload)) {
                        (false, _) => Verdict::Damaged,
                        (true, false) => Verdict::Refused,
                        (true, true) => Verdict::Usable,
                    }
                })
                .collect()
        };
        for (rec, verdict) in chunks.zip(verdicts) {
            let (key, rest) = rec.split_at(32);
            let payload = &rest[..self.payload];
            match verdict {
                Verdict::Usable => {
                    records.insert(key.try_into().expect("32 bytes"), payload.into());
                }
                Verdict::Damaged => corrupt += 1,
                Verdict::Refused => refused += 1,
            }
            if verdict != Verdict::Usable {
                damaged.insert(key.try_into().expect("32 bytes"));
            }
        }
        report.loaded = records.len();
        report.discarded = corrupt + refused + truncated;
        report.refused = refused;
        if report.discarded > 0 && warn {
            let mut what = Vec::new();
            if corrupt > 0 {
                what.push(format!(
                    "{corrupt} damaged entr{} (checksum mismatch)",
                    if corrupt == 1 { "y" } else { "ies" }
                ));
            }
            if refused > 0 {
                what.push(format!(
                    "{refused} entr{} holding a non-finite value (NaN or infinity), or a vector no normalizing model gives, under a matching checksum",
                    if refused == 1 { "y" } else { "ies" }
                ));
            }
            if truncated > 0 {
                what.push("a truncated entry at the end".to_string());
            }
            eprintln!(
                "warning: cache file {}: {}; discarded, they will be recomputed",
                path.display(),
                what.join(", and ")
            );
        }
        Ok((records, damaged, report))
    }

    /// The offset of the first record, or why the header is unusable.
    fn check_header(&self, bytes: &[u8]) -> std::result::Result<usize, String> {
        if bytes.len() < 12 || &bytes[..8] != MAGIC {
            return Err("not a ranklab cache file (bad magic or too short)".into());
        }
        let hlen = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
        let end = 12usize.saturating_add(hlen);
        if bytes.len() < end + 32 {
            return Err("truncated header".into());
        }
        let header = &bytes[12..end];
        if header_sum(header) != bytes[end..end + 32] {
            return Err("damaged header (checksum mismatch)".into());
        }
        if header != self.header.as_slice() {
            return Err(format!(
                "written for another model identity or layout ({})",
                String::from_utf8_lossy(header)
            ));
        }
        Ok(end + 32)
    }

    /// The payload of `key`, verified.
    pub(crate) fn get(&self, key: &[u8; 32]) -> Option<&[u8]> {
        match self.records.get(key) {
            Some(b) => Some(&b[..]),
            None => self.get_unverified(key).and_then(|r| r.ok()),
        }
    }

    /// Whether `key` belonged to a record discarded as damaged when the file was opened, or
    /// (for [`RecordFile::open_lazy`]) when the record was first read.
    pub(crate) fn was_damaged(&self, key: &[u8; 32]) -> bool {
        self.damaged.contains(key)
            || (!self.records.contains_key(key) && matches!(self.get_unverified(key), Some(Err(_))))
    }

    pub(crate) fn insert(&mut self, key: [u8; 32], payload: &[u8]) {
        debug_assert_eq!(payload.len(), self.payload);
        self.records.insert(key, payload.into());
        self.dirty = true;
    }

    /// The number of records held (of a lazily opened file: call [`RecordFile::settle`] first).
    pub(crate) fn len(&self) -> usize {
        debug_assert!(
            self.unverified.is_none(),
            "settle a lazily opened file first"
        );
        self.records.len()
    }

    /// The keys held, in order (of a lazily opened file: call [`RecordFile::settle`] first).
    pub(crate) fn keys(&self) -> impl Iterator<Item = &[u8; 32]> {
        debug_assert!(
            self.unverified.is_none(),
            "settle a lazily opened file first"
        );
        self.records.keys()
    }

    /// Writes the file if records were added and the last write is older than `every`.
    /// Called after each batch of new records, so a long run saves its work as it goes.
    pub(crate) fn checkpoint(&mut self, every: std::time::Duration) -> Result<()> {
        if self.dirty && self.saved_at.elapsed() >= every {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the file if anything was added: merges what is on disk now, writes a temporary
    /// file and renames it into place.
    pub(crate) fn flush(&mut self) -> Result<()> {
        let Some(path) = self.path.clone() else {
            return Ok(());
        };
        if !self.dirty {
            return Ok(());
        }
        self.settle();
        let dir = path.parent().expect("cache files have a parent");
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        // Held until the end of this function: read, merge and rename as one step.
        let _lock = lock(&path)?;
        // Quiet: what is damaged on disk was reported when the file was opened.
        let (on_disk, _, _) = self.read_disk(false)?;
        for (k, v) in on_disk {
            self.records.entry(k).or_insert(v);
        }
        crate::atomic::write(&path, &self.to_bytes())?;
        self.dirty = false;
        self.saved_at = std::time::Instant::now();
        Ok(())
    }
}

impl RecordFile {
    /// The file's bytes: magic, header, its sum, then every record sorted by key. What
    /// [`RecordFile::flush`] writes; the same records always give the same bytes.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        debug_assert!(
            self.unverified.is_none(),
            "settle a lazily opened file first"
        );
        let mut bytes = Vec::with_capacity(
            12 + self.header.len() + 32 + self.records.len() * (64 + self.payload),
        );
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&(self.header.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&self.header);
        bytes.extend_from_slice(&header_sum(&self.header));
        for (key, payload) in &self.records {
            bytes.extend_from_slice(key);
            bytes.extend_from_slice(payload);
            bytes.extend_from_slice(&record_sum(key, payload));
        }
        bytes
    }

    /// Reads a record file that must be whole: the records of `bytes`, or why they are refused.
    /// Unlike [`RecordFile::open`], which keeps what verifies of a damaged cache and recomputes
    /// the rest, a file coming back from a worker is all or nothing: a header of another kind,
    /// identity or layout, one record whose sum does not match, or a partial record refuses it
    /// whole.
    pub(crate) fn parse_whole(
        &self,
        bytes: &[u8],
    ) -> std::result::Result<BTreeMap<[u8; 32], Box<[u8]>>, String> {
        let offset = self.check_header(bytes)?;
        let record_len = 64 + self.payload;
        let body = &bytes[offset..];
        if !body.len().is_multiple_of(record_len) {
            return Err(format!(
                "truncated: {} bytes after the header are not a whole number of {record_len}-byte records",
                body.len()
            ));
        }
        let mut records = BTreeMap::new();
        for (i, rec) in body.chunks_exact(record_len).enumerate() {
            let (key, rest) = rec.split_at(32);
            let (payload, sum) = rest.split_at(self.payload);
            if record_sum(key, payload) != sum {
                return Err(format!("record {} fails its checksum", i + 1));
            }
            let key: [u8; 32] = key.try_into().expect("32 bytes");
            if records.insert(key, payload.into()).is_some() {
                return Err(format!("record {} repeats a key", i + 1));
            }
        }
        Ok(records)
    }
}

/// The bytes of the file at `path`, None when it is absent.
fn read_bytes(path: &Path) -> Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Takes the advisory exclusive lock of the record file `path` (blocking), on `.<file>.lock`
/// beside it; released when the returned file is dropped.
fn lock(path: &Path) -> Result<std::fs::File> {
    let lock_path = path.with_file_name(format!(
        ".{}.lock",
        path.file_name().expect("named").to_string_lossy()
    ));
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::io(&lock_path, e))?;
    fs4::fs_std::FileExt::lock_exclusive(&f).map_err(|e| Error::io(&lock_path, e))?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u8) -> [u8; 32] {
        [i; 32]
    }

    fn sample(dir: &Path) -> PathBuf {
        let path = dir.join("c.bin");
        let (mut f, _) = RecordFile::open(&path, "t", "id", 4).unwrap();
        for i in 0..5u8 {
            f.insert(key(i), &[i; 4]);
        }
        f.flush().unwrap();
        path
    }

    #[test]
    fn read_header_reads_what_open_writes_and_refuses_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path());
        assert_eq!(
            read_header(&path),
            Some(Header {
                kind: "t".into(),
                identity: "id".into(),
                payload: 4
            })
        );
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[14] ^= 0x20;
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(read_header(&path), None, "damaged header");
        assert_eq!(read_header(&dir.path().join("absent")), None);
        std::fs::write(&path, b"RLCACHE1").unwrap();
        assert_eq!(read_header(&path), None, "truncated");
    }

    #[test]
    fn checkpoint_writes_only_when_dirty_and_due() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.bin");
        let (mut f, _) = RecordFile::open(&path, "t", "id", 4).unwrap();
        f.insert(key(1), &[1; 4]);
        f.checkpoint(std::time::Duration::from_secs(3600)).unwrap();
        assert!(!path.exists(), "not due yet: nothing written");
        f.checkpoint(std::time::Duration::ZERO).unwrap();
        let (g, report) = RecordFile::open(&path, "t", "id", 4).unwrap();
        assert_eq!(report.loaded, 1);
        assert_eq!(g.get(&key(1)), Some(&[1u8; 4][..]));
        // Clean: a due checkpoint writes nothing new.
        std::fs::remove_file(&path).unwrap();
        f.checkpoint(std::time::Duration::ZERO).unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn round_trip_is_byte_stable() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path());
        let first = std::fs::read(&path).unwrap();
        let (mut f, report) = RecordFile::open(&path, "t", "id", 4).unwrap();
        assert_eq!(
            report,
            LoadReport {
                loaded: 5,
                discarded: 0,
                refused: 0
            }
        );
        assert_eq!(f.get(&key(3)), Some(&[3u8; 4][..]));
        f.insert(key(3), &[3; 4]);
        f.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), first);
    }

    #[test]
    fn flipped_payload_byte_discards_only_that_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path());
        let mut bytes = std::fs::read(&path).unwrap();
        let first_record = bytes.len() - 5 * 68;
        bytes[first_record + 2 * 68 + 33] ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
        let (f, report) = RecordFile::open(&path, "t", "id", 4).unwrap();
        assert_eq!(
            report,
            LoadReport {
                loaded: 4,
                discarded: 1,
                refused: 0
            }
        );
        assert_eq!(f.get(&key(2)), None);
        assert_eq!(f.get(&key(4)), Some(&[4u8; 4][..]));
    }

    #[test]
    fn a_refused_payload_under_a_matching_checksum_is_discarded_and_not_merged_back() {
        // Written by the writer itself, so every checksum matches: one finite value, a NaN and
        // an infinity.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.bin");
        let (mut f, _) = RecordFile::open(&path, "t", "id", 4).unwrap();
        for (i, v) in [1.5f32, f32::NAN, f32::INFINITY].into_iter().enumerate() {
            f.insert(key(i as u8), &v.to_le_bytes());
        }
        f.flush().unwrap();
        let finite = |b: &[u8]| f32::from_le_bytes(b.try_into().unwrap()).is_finite();
        // Without a check the file is whole (the checksums are right) ...
        let (_, report) = RecordFile::open(&path, "t", "id", 4).unwrap();
        assert_eq!((report.loaded, report.discarded), (3, 0));
        // ... with the check, the two non-finite records are discarded and marked damaged.
        let (mut f, report) = RecordFile::open_checked(&path, "t", "id", 4, finite).unwrap();
        assert_eq!(
            report,
            LoadReport {
                loaded: 1,
                discarded: 2,
                refused: 2
            }
        );
        assert_eq!(f.get(&key(1)), None);
        assert!(f.was_damaged(&key(1)) && f.was_damaged(&key(2)));
        assert_eq!(f.get(&key(0)), Some(&1.5f32.to_le_bytes()[..]));
        // Recomputing one and writing: the other poisoned record is not merged back from disk.
        f.insert(key(1), &2.5f32.to_le_bytes());
        f.flush().unwrap();
        let (g, report) = RecordFile::open(&path, "t", "id", 4).unwrap();
        assert_eq!((report.loaded, report.discarded), (2, 0));
        assert_eq!(g.get(&key(1)), Some(&2.5f32.to_le_bytes()[..]));
        assert_eq!(g.get(&key(2)), None);
    }

    #[test]
    fn truncation_discards_the_partial_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path());
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        let (f, report) = RecordFile::open(&path, "t", "id", 4).unwrap();
        assert_eq!(
            report,
            LoadReport {
                loaded: 4,
                discarded: 1,
                refused: 0
            }
        );
        assert_eq!(f.get(&key(4)), None);
    }

    #[test]
    fn another_identity_or_damaged_header_is_never_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let path = sample(dir.path());
        let (f, report) = RecordFile::open(&path, "t", "other-model", 4).unwrap();
        assert_eq!(f.len(), 0);
        assert!(report.discarded > 0);

        let mut bytes = std::fs::read(&path).unwrap();
        bytes[14] ^= 0x20;
        std::fs::write(&path, bytes).unwrap();
        let (f, report) = RecordFile::open(&path, "t", "id", 4).unwrap();
        assert_eq!(f.len(), 0);
        assert!(report.discarded > 0);

        std::fs::write(&path, b"RLCA").unwrap();
        let (f, _) = RecordFile::open(&path, "t", "id", 4).unwrap();
        assert_eq!(f.len(), 0);
    }

    #[test]
    fn flush_merges_records_written_by_another_process() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.bin");
        let (mut a, _) = RecordFile::open(&path, "t", "id", 4).unwrap();
        let (mut b, _) = RecordFile::open(&path, "t", "id", 4).unwrap();
        a.insert(key(1), &[1; 4]);
        b.insert(key(2), &[2; 4]);
        a.flush().unwrap();
        b.flush().unwrap();
        let (f, _) = RecordFile::open(&path, "t", "id", 4).unwrap();
        assert_eq!(f.len(), 2);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn concurrent_writers_of_disjoint_records_keep_every_record() {
        // Two writers (threads here; the lock is per open file, so the same as two processes)
        // each add 150 records of their own to one file, flushing after every record: each
        // flush reads, merges and renames. Without the lock a writer's rename can replace a file
        // that gained the other's records after it read, losing them.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.bin");
        let writers: Vec<_> = [0u8, 1u8]
            .into_iter()
            .map(|w| {
                let path = path.clone();
                std::thread::spawn(move || {
                    let (mut f, _) = RecordFile::open(&path, "test", "id", 4).unwrap();
                    for i in 0..150u8 {
                        let mut k = [w; 32];
                        k[1] = i;
                        f.insert(k, &[w, i, 0, 0]);
                        f.flush().unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let (f, report) = RecordFile::open(&path, "test", "id", 4).unwrap();
        assert_eq!(report.discarded, 0);
        assert_eq!(f.len(), 300, "records lost by interleaved writers");
        for w in [0u8, 1u8] {
            for i in 0..150u8 {
                let mut k = [w; 32];
                k[1] = i;
                assert_eq!(f.get(&k), Some(&[w, i, 0, 0][..]), "writer {w} record {i}");
            }
        }
    }
}
