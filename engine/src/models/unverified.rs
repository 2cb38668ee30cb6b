//! The records of a cache file read from disk but not yet verified: each record's checksum
//! (and its cache's payload check) is computed the first time the record is asked for, and
//! its verdict kept.
//!
//! A warm run reads a few hundred records of an embedding cache that holds every vector the
//! machine ever embedded; verifying the whole file at open cost most of the file's sha256 work
//! for records nobody reads. The guarantee is the same as [`super::record_file`]'s: no record is
//! served before its checksum matches and its payload passes the check; a record that fails is
//! reported on stderr (once per file) and its key counts as damaged, so the caller recomputes
//! it as a rebuild.
//!
//! Only a body whose keys are strictly ascending (what every writer of a record file writes)
//! is held this way, since a key is found by binary search; any other body (a hand-made file,
//! or one whose damage broke the order) is verified whole at open as before.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Per-record states.
const UNKNOWN: u8 = 0;
const USABLE: u8 = 1;
const DAMAGED: u8 = 2;
const REFUSED: u8 = 3;

/// What the first read of a record found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Found {
    /// Its checksum matches and the payload passes the cache's check.
    Usable,
    /// Its checksum does not match.
    Damaged,
    /// Its checksum matches but the cache's check refuses the payload.
    Refused,
}

/// A record file's body, records of `64 + payload` bytes (key, payload, sum), keys strictly
/// ascending.
#[derive(Debug)]
pub(crate) struct Unverified {
    bytes: Vec<u8>,
    offset: usize,
    count: usize,
    payload: usize,
    state: Vec<AtomicU8>,
    warned: AtomicBool,
}

impl Unverified {
    /// The records of `bytes[offset..]` (whole records only: the caller handles a partial tail
    /// and passes `count`), or the bytes back when their keys are not strictly ascending.
    pub(crate) fn new(
        bytes: Vec<u8>,
        offset: usize,
        count: usize,
        payload: usize,
    ) -> Result<Unverified, Vec<u8>> {
        let record_len = 64 + payload;
        let key = |i: usize| &bytes[offset + i * record_len..offset + i * record_len + 32];
        if !(1..count).all(|i| key(i - 1) < key(i)) {
            return Err(bytes);
        }
        Ok(Unverified {
            state: (0..count).map(|_| AtomicU8::new(UNKNOWN)).collect(),
            bytes,
            offset,
            count,
            payload,
            warned: AtomicBool::new(false),
        })
    }

    fn record(&self, i: usize) -> &[u8] {
        let start = self.offset + i * (64 + self.payload);
        &self.bytes[start..start + 64 + self.payload]
    }

    /// The index of the record of `key`, if the body holds one.
    pub(crate) fn find(&self, key: &[u8; 32]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.record(mid)[..32].cmp(&key[..]) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }

    /// The verdict on record `i`, computed (and kept) on its first use; the second value says
    /// whether this call computed a bad verdict that is the file's first (for its warning).
    pub(crate) fn verdict(&self, i: usize, sound: fn(&[u8]) -> bool) -> (Found, bool) {
        let state = match self.state[i].load(Ordering::Relaxed) {
            UNKNOWN => {
                let rec = self.record(i);
                let (key, rest) = rec.split_at(32);
                let (payload, sum) = rest.split_at(self.payload);
                let s = match (
                    super::record_file::record_sum(key, payload) == sum,
                    sound(payload),
                ) {
                    (false, _) => DAMAGED,
                    (true, false) => REFUSED,
                    (true, true) => USABLE,
                };
                self.state[i].store(s, Ordering::Relaxed);
                if s != USABLE && !self.warned.swap(true, Ordering::Relaxed) {
                    return (found(s), true);
                }
                s
            }
            s => s,
        };
        (found(state), false)
    }

    /// The payload of record `i` (verified or not: callers ask [`Unverified::verdict`] first).
    pub(crate) fn payload(&self, i: usize) -> &[u8] {
        &self.record(i)[32..32 + self.payload]
    }

    /// The key of record `i`.
    pub(crate) fn key(&self, i: usize) -> [u8; 32] {
        self.record(i)[..32].try_into().expect("32 bytes")
    }

    /// How many records the body holds.
    pub(crate) fn len(&self) -> usize {
        self.count
    }
}

fn found(state: u8) -> Found {
    match state {
        USABLE => Found::Usable,
        DAMAGED => Found::Damaged,
        _ => Found::Refused,
    }
}

#[cfg(test)]
mod tests {
    use super::super::record_file::RecordFile;
    use super::*;
    use std::path::{Path, PathBuf};

    fn key(i: u8) -> [u8; 32] {
        [i; 32]
    }

    fn any(_: &[u8]) -> bool {
        true
    }

    /// Five records `key(i) -> [i; 4]` written as a cache writes them (sorted by key), with the
    /// payload byte 1 of record `flip` flipped on disk (its checksum no longer matches).
    fn file_with_damaged(dir: &Path, flip: usize) -> PathBuf {
        let path = dir.join("c.bin");
        let (mut f, _) = RecordFile::open_checked(&path, "t", "id", 4, any).unwrap();
        for i in 0..5u8 {
            f.insert(key(i), &[i; 4]);
        }
        f.flush().unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        let first = bytes.len() - 5 * 68;
        bytes[first + flip * 68 + 33] ^= 0x01;
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_lazy_open_serves_verified_records_and_never_a_damaged_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with_damaged(dir.path(), 2);
        let (f, report) = RecordFile::open_lazy(&path, "t", "id", 4, any).unwrap();
        assert_eq!(report.discarded, 0, "nothing read yet, nothing found");
        // The oracle: the payloads written above, [i; 4].
        assert_eq!(f.get(&key(4)), Some(&[4u8; 4][..]));
        assert_eq!(f.get(&key(0)), Some(&[0u8; 4][..]));
        assert_eq!(
            f.get(&key(2)),
            None,
            "a checksum that fails is never served"
        );
        assert!(f.was_damaged(&key(2)), "so its recomputation is a rebuild");
        assert!(!f.was_damaged(&key(3)) && !f.was_damaged(&key(9)));
        assert_eq!(f.get(&key(9)), None, "absent");
    }

    #[test]
    fn a_lazy_open_checks_only_the_records_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with_damaged(dir.path(), 2);
        let (f, _) = RecordFile::open_lazy(&path, "t", "id", 4, any).unwrap();
        assert_eq!(f.get(&key(4)), Some(&[4u8; 4][..]));
        let u = f.unverified.as_ref().expect("held unverified");
        let states: Vec<u8> = u.state.iter().map(|s| s.load(Ordering::Relaxed)).collect();
        assert_eq!(states, [UNKNOWN, UNKNOWN, UNKNOWN, UNKNOWN, USABLE]);
        assert!(f.was_damaged(&key(2)));
        assert_eq!(u.state[2].load(Ordering::Relaxed), DAMAGED);
    }

    #[test]
    fn settling_keeps_the_verified_records_and_a_flush_drops_the_damaged_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with_damaged(dir.path(), 1);
        let (mut f, _) = RecordFile::open_lazy(&path, "t", "id", 4, any).unwrap();
        f.insert(key(7), &[7; 4]);
        f.flush().unwrap();
        let (g, report) = RecordFile::open_checked(&path, "t", "id", 4, any).unwrap();
        assert_eq!((report.loaded, report.discarded), (5, 0));
        let held: Vec<[u8; 32]> = g.keys().copied().collect();
        assert_eq!(held, [key(0), key(2), key(3), key(4), key(7)]);
    }

    #[test]
    fn a_refused_payload_is_not_served_by_a_lazy_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.bin");
        let (mut f, _) = RecordFile::open_checked(&path, "t", "id", 4, any).unwrap();
        f.insert(key(1), &1.5f32.to_le_bytes());
        f.insert(key(2), &f32::NAN.to_le_bytes());
        f.flush().unwrap();
        let finite = |b: &[u8]| f32::from_le_bytes(b.try_into().unwrap()).is_finite();
        let (f, _) = RecordFile::open_lazy(&path, "t", "id", 4, finite).unwrap();
        assert_eq!(f.get(&key(1)), Some(&1.5f32.to_le_bytes()[..]));
        assert_eq!(f.get(&key(2)), None);
        assert!(f.was_damaged(&key(2)));
    }

    #[test]
    fn a_body_not_in_key_order_is_verified_whole_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with_damaged(dir.path(), 3);
        // Swap records 0 and 4: checksums still match, the order is broken.
        let mut bytes = std::fs::read(&path).unwrap();
        let first = bytes.len() - 5 * 68;
        let r0: Vec<u8> = bytes[first..first + 68].to_vec();
        let r4: Vec<u8> = bytes[first + 4 * 68..first + 5 * 68].to_vec();
        bytes[first..first + 68].copy_from_slice(&r4);
        bytes[first + 4 * 68..first + 5 * 68].copy_from_slice(&r0);
        std::fs::write(&path, bytes).unwrap();
        let (f, report) = RecordFile::open_lazy(&path, "t", "id", 4, any).unwrap();
        assert!(f.unverified.is_none());
        assert_eq!((report.loaded, report.discarded), (4, 1), "found at open");
        assert_eq!(f.get(&key(0)), Some(&[0u8; 4][..]));
        assert_eq!(f.get(&key(3)), None);
    }
}
