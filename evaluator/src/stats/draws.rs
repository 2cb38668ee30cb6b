//! The seeded draws, made once per process and shared.
//!
//! Every bootstrap of n values with the same seed and resample count draws the same n × R
//! indices, and every sampled sign-flip test whose n non-zero differences fill the same number
//! of 64-bit words draws the same sign words; a report computes dozens of such tests (every
//! configuration × measure, and each configuration's own interval). So each distinct stream is
//! drawn once, kept behind an `Arc`, and read by every test that needs it, from any thread.
//! The values are exactly those [`Source`] yields in order, so results are the same bits as
//! drawing afresh.
//!
//! A stream larger than [`MAX_SHARED`] entries is not kept (a `compare` of 10,000 queries would
//! need 400 MB of indices); callers then draw it on the fly, as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::rng::{Source, Stream};

/// Largest stream kept, in entries (u32 indices or u64 words): 64 MiB of indices.
pub(crate) const MAX_SHARED: usize = 16 << 20;

type Slot<T> = Arc<OnceLock<Arc<[T]>>>;

/// One memo per stream kind, keyed by (seed, n or words, count).
struct Memo<T>(Mutex<HashMap<(u64, usize, usize), Slot<T>>>);

impl<T> Memo<T> {
    fn get(&self, key: (u64, usize, usize), draw: impl FnOnce() -> Vec<T>) -> Arc<[T]> {
        // The map lock is held only to find the slot; the drawing happens outside it, once per
        // key (other threads asking for the same key wait on the slot, not on the map).
        let slot = {
            let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(map.entry(key).or_default())
        };
        Arc::clone(slot.get_or_init(|| draw().into()))
    }
}

fn bootstrap_memo() -> &'static Memo<u32> {
    static M: OnceLock<Memo<u32>> = OnceLock::new();
    M.get_or_init(|| Memo(Mutex::new(HashMap::new())))
}

fn sign_memo() -> &'static Memo<u64> {
    static M: OnceLock<Memo<u64>> = OnceLock::new();
    M.get_or_init(|| Memo(Mutex::new(HashMap::new())))
}

/// The `resamples × n` indices of the bootstrap stream of `seed` (resample after resample, each
/// `n` draws of `below(n)`), or None when too large to keep.
pub(crate) fn bootstrap_indices(seed: u64, n: usize, resamples: usize) -> Option<Arc<[u32]>> {
    let len = n.checked_mul(resamples)?;
    if len > MAX_SHARED || n > u32::MAX as usize {
        return None;
    }
    Some(bootstrap_memo().get((seed, n, resamples), || {
        let mut src = Source::new(seed, Stream::Bootstrap);
        (0..len).map(|_| src.below(n as u64) as u32).collect()
    }))
}

/// The `permutations × words` sign words of the permutation stream of `seed` (permutation after
/// permutation, `words` words each), or None when too large to keep.
pub(crate) fn sign_words(seed: u64, words: usize, permutations: usize) -> Option<Arc<[u64]>> {
    let len = words.checked_mul(permutations)?;
    if len > MAX_SHARED {
        return None;
    }
    Some(sign_memo().get((seed, words, permutations), || {
        let mut src = Source::new(seed, Stream::Permutation);
        (0..len).map(|_| src.bits()).collect()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_draws_are_the_stream_in_order_and_drawn_once() {
        let a = bootstrap_indices(9, 7, 5).unwrap();
        let mut src = Source::new(9, Stream::Bootstrap);
        let want: Vec<u32> = (0..35).map(|_| src.below(7) as u32).collect();
        assert_eq!(&a[..], &want[..]);
        let b = bootstrap_indices(9, 7, 5).unwrap();
        assert!(
            Arc::ptr_eq(&a, &b),
            "the second caller reads the first draw"
        );
        let w = sign_words(9, 2, 3).unwrap();
        let mut src = Source::new(9, Stream::Permutation);
        let want: Vec<u64> = (0..6).map(|_| src.bits()).collect();
        assert_eq!(&w[..], &want[..]);
        assert!(bootstrap_indices(1, MAX_SHARED, 2).is_none());
    }
}
