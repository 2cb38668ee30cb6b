//! The statistics cache: bootstrap intervals, sign-flip p-values and the power analysis's
//! searches kept between runs, so a warm `ranklab bench` / `run` / `beir` does not resample what
//! it resampled last time.
//!
//! It is the disk side of [`crate::stats::memo`]: one file, `<cache root>/stats/stats.bin`, of
//! records `sha256(key) → two words`, where the key (built by the evaluator) is the statistic's
//! name and version, every option its value depends on and the bits of the sorted values it is
//! computed from. A record is therefore the value the computation would give, to the bit, and
//! reports are byte-identical with the cache, without it (`RANKLAB_STATS_CACHE=off`) and from an
//! empty one (`harness/tests/stats_cache.rs`).
//!
//! The file: the magic line `ranklab stats cache 1\n`, the record count (u64 LE), the records
//! (32-byte sha256, two u64 LE words) and the sha256 of everything before it. A file that does
//! not read back whole (wrong magic, length or checksum) is never trusted: a stderr line names
//! it, the run computes everything and writes a new file. The file is read once, on the first
//! statistic a process asks for, and written (atomically: temporary + rename) after the command
//! ran, only when the run computed a statistic the file lacked. Two processes writing at once
//! each write a whole file; the later one's records win and the other's are computed again next
//! time. At most [`MAX_RECORDS`] records are kept, those this run used first.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};

/// The first line of the file.
const MAGIC: &[u8] = b"ranklab stats cache 1\n";
/// Bytes per record: the key's sha256 and two words.
const RECORD: usize = 32 + 16;
/// Records kept at most (4.8 MB).
pub const MAX_RECORDS: usize = 100_000;

type Digest32 = [u8; 32];

#[derive(Default)]
struct State {
    /// Every record known: the file's and this run's.
    records: HashMap<Digest32, [u64; 2]>,
    /// The records this run read or computed.
    used: HashSet<Digest32>,
    /// True when the file must be written: a record was computed, or the file was damaged.
    dirty: bool,
}

/// The statistics cache of one file, read on first use.
pub struct StatsCache {
    path: PathBuf,
    state: OnceLock<Mutex<State>>,
}

impl StatsCache {
    /// The cache of the file at `path` (not read yet).
    pub fn at(path: PathBuf) -> StatsCache {
        StatsCache {
            path,
            state: OnceLock::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .get_or_init(|| Mutex::new(load(&self.path)))
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Writes the file when this run added to it (or found it damaged); a no-op otherwise.
    pub fn save(&self) -> anyhow::Result<()> {
        let Some(state) = self.state.get() else {
            return Ok(());
        };
        let state = state.lock().unwrap_or_else(|e| e.into_inner());
        if !state.dirty {
            return Ok(());
        }
        Ok(ranklab_engine::atomic::write(&self.path, &encode(&state))?)
    }
}

impl crate::stats::memo::Store for StatsCache {
    fn get(&self, key: &[u8]) -> Option<[u64; 2]> {
        let d: Digest32 = Sha256::digest(key).into();
        let mut state = self.state();
        let v = state.records.get(&d).copied()?;
        state.used.insert(d);
        Some(v)
    }

    fn put(&self, key: &[u8], value: [u64; 2]) {
        let d: Digest32 = Sha256::digest(key).into();
        let mut state = self.state();
        state.records.insert(d, value);
        state.used.insert(d);
        state.dirty = true;
    }
}

/// The file's records; an empty state when there is no file, and an empty, dirty one (with a
/// stderr line) when it is damaged.
fn load(path: &Path) -> State {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return State::default(),
        Err(e) => return damaged(path, &format!("cannot read it: {e}")),
    };
    match decode(&bytes) {
        Ok(records) => State {
            records,
            ..State::default()
        },
        Err(why) => damaged(path, why),
    }
}

fn damaged(path: &Path, why: &str) -> State {
    eprintln!(
        "statistics cache {}: {why}; not trusted: every statistic is computed and the file written again",
        path.display()
    );
    State {
        dirty: true,
        ..State::default()
    }
}

/// The records of a whole file, or what is wrong with it.
fn decode(bytes: &[u8]) -> Result<HashMap<Digest32, [u64; 2]>, &'static str> {
    let body_len = bytes
        .len()
        .checked_sub(32)
        .ok_or("shorter than its checksum")?;
    let (body, sum) = bytes.split_at(body_len);
    if Sha256::digest(body).as_slice() != sum {
        return Err("checksum does not match its content");
    }
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or("not a statistics cache of this version")?;
    let (count, records) = rest.split_at_checked(8).ok_or("no record count")?;
    let count = u64::from_le_bytes(count.try_into().expect("8 bytes"));
    if records.len() as u64 != count.saturating_mul(RECORD as u64) {
        return Err("record count does not match its length");
    }
    let mut out = HashMap::with_capacity(records.len() / RECORD);
    for r in records.chunks_exact(RECORD) {
        let word = |i: usize| u64::from_le_bytes(r[32 + 8 * i..40 + 8 * i].try_into().expect("8"));
        out.insert(r[..32].try_into().expect("32 bytes"), [word(0), word(1)]);
    }
    Ok(out)
}

/// The file's bytes: this run's records, then the others, up to [`MAX_RECORDS`], each group in
/// key order (so the same records give the same file).
fn encode(state: &State) -> Vec<u8> {
    let mut used: Vec<&Digest32> = state.used.iter().collect();
    let mut other: Vec<&Digest32> = state
        .records
        .keys()
        .filter(|d| !state.used.contains(*d))
        .collect();
    used.sort_unstable();
    other.sort_unstable();
    let kept: Vec<&Digest32> = used.into_iter().chain(other).take(MAX_RECORDS).collect();
    let mut out = Vec::with_capacity(MAGIC.len() + 8 + kept.len() * RECORD + 32);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(kept.len() as u64).to_le_bytes());
    for d in kept {
        out.extend_from_slice(d);
        for w in state.records[d] {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }
    let sum = Sha256::digest(&out);
    out.extend_from_slice(&sum);
    out
}

static INSTALLED: OnceLock<Option<Arc<StatsCache>>> = OnceLock::new();

/// Installs the cache under the cache root for the process's statistics, unless
/// `RANKLAB_STATS_CACHE=off` or there is no cache root (then every statistic is computed).
pub fn install() {
    let cache = INSTALLED.get_or_init(|| {
        if std::env::var_os("RANKLAB_STATS_CACHE").is_some_and(|v| v == "off") {
            return None;
        }
        let root = ranklab_engine::models::cache_root().ok()?;
        Some(Arc::new(StatsCache::at(
            root.join("stats").join("stats.bin"),
        )))
    });
    if let Some(c) = cache {
        crate::stats::memo::install(Some(c.clone() as Arc<dyn crate::stats::memo::Store>));
    }
}

/// Writes the installed cache's file if the run added to it; a failure is a stderr line, not
/// the command's error (the reports are written already, and the next run computes again).
pub fn save() {
    if let Some(Some(c)) = INSTALLED.get() {
        if let Err(e) = c.save() {
            eprintln!(
                "statistics cache {}: not written ({e:#}); the next run computes its statistics again",
                c.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::memo::Store;

    #[test]
    fn records_read_back_from_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.bin");
        let a = StatsCache::at(path.clone());
        assert_eq!(a.get(b"k1"), None);
        a.put(b"k1", [1, 2]);
        a.put(b"k2", [3, u64::MAX]);
        a.save().unwrap();
        let b = StatsCache::at(path.clone());
        assert_eq!(b.get(b"k1"), Some([1, 2]));
        assert_eq!(b.get(b"k2"), Some([3, u64::MAX]));
        assert_eq!(b.get(b"k3"), None);
        // Nothing added: saving leaves the file as it was.
        let before = std::fs::read(&path).unwrap();
        b.save().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), before);
        assert_eq!(before.len(), MAGIC.len() + 8 + 2 * RECORD + 32);
    }

    /// Every kind of damage (a flipped bit anywhere, a cut, an empty file, another format) is
    /// seen, nothing of the file is used, and the file is written again whole.
    #[test]
    fn a_damaged_file_is_never_trusted_and_is_rebuilt() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("stats.bin");
        let a = StatsCache::at(path.clone());
        a.put(b"k1", [1, 2]);
        a.save().unwrap();
        let good = std::fs::read(&path).unwrap();
        let mut cases: Vec<Vec<u8>> = (0..good.len())
            .step_by(7)
            .map(|i| {
                let mut b = good.clone();
                b[i] ^= 0x10;
                b
            })
            .collect();
        cases.push(good[..good.len() - 1].to_vec());
        cases.push(Vec::new());
        cases.push(b"ranklab stats cache 0\n".to_vec());
        for bad in cases {
            std::fs::write(&path, &bad).unwrap();
            let c = StatsCache::at(path.clone());
            assert_eq!(c.get(b"k1"), None, "a damaged file was trusted");
            c.put(b"k1", [1, 2]);
            c.save().unwrap();
            assert_eq!(std::fs::read(&path).unwrap(), good, "not rebuilt whole");
        }
    }

    #[test]
    fn the_records_this_run_used_are_kept_first() {
        let mut state = State::default();
        for i in 0..(MAX_RECORDS as u64 + 5) {
            let d: Digest32 = Sha256::digest(i.to_le_bytes()).into();
            state.records.insert(d, [i, 0]);
        }
        let last: Digest32 = Sha256::digest((MAX_RECORDS as u64 + 4).to_le_bytes()).into();
        state.used.insert(last);
        let bytes = encode(&state);
        let records = decode(&bytes).unwrap();
        assert_eq!(records.len(), MAX_RECORDS);
        assert_eq!(records.get(&last), Some(&[MAX_RECORDS as u64 + 4, 0]));
    }
}
