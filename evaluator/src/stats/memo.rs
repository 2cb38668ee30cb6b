//! A store of computed statistics that outlives the process, for the costly ones: the bootstrap
//! interval ([`super::mean_interval`]), the sign-flip test's p ([`super::sign_flip_test`]) and
//! the power analysis's searches ([`super::power::min_detectable_effect_size`],
//! [`super::power::tasks_needed`]) and the agreement intervals ([`super::agreement`]'s
//! `kappa_interval`, `tau_interval`).
//!
//! The evaluator keeps no files: a program that wants its statistics remembered between runs
//! installs a [`Store`] ([`install`]); the ranklab binary installs one on disk
//! (`harness/src/stats_cache.rs`). With none installed (the default, and the Python package)
//! every statistic is computed, as before.
//!
//! A key is content-addressed: the statistic's name and version, every option its value depends
//! on (seed, resamples or permutations, confidence, the exact-enumeration limit) and the bits of
//! the sorted values it is computed from — exactly what the computation reads, so a stored value
//! is the one the computation would give, to the bit. A value is two `u64` words (an interval's
//! bounds, or the p-value and a zero, as `f64::to_bits`; tasks needed as found-flag and count).

use std::sync::{Arc, RwLock};

/// Somewhere to keep computed statistics: a key (bytes, see the module doc) to two words.
pub trait Store: Send + Sync {
    /// The words stored under `key`, if any.
    fn get(&self, key: &[u8]) -> Option<[u64; 2]>;
    /// Keeps `value` under `key`.
    fn put(&self, key: &[u8], value: [u64; 2]);
}

static STORE: RwLock<Option<Arc<dyn Store>>> = RwLock::new(None);

/// Installs `store` for every later statistic of the process (None: none), returning the one
/// installed before.
pub fn install(store: Option<Arc<dyn Store>>) -> Option<Arc<dyn Store>> {
    let mut slot = STORE.write().unwrap_or_else(|e| e.into_inner());
    std::mem::replace(&mut *slot, store)
}

fn installed() -> Option<Arc<dyn Store>> {
    STORE.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// The key of a statistic: its `name`, then each word of `head`, then the bits of `sorted`, all
/// little-endian.
fn key(name: &str, head: &[u64], sorted: &[f64]) -> Vec<u8> {
    let mut k = Vec::with_capacity(name.len() + 1 + 8 * (head.len() + sorted.len()));
    k.extend_from_slice(name.as_bytes());
    k.push(0);
    for w in head {
        k.extend_from_slice(&w.to_le_bytes());
    }
    for x in sorted {
        k.extend_from_slice(&x.to_bits().to_le_bytes());
    }
    k
}

/// The value of the statistic `name` over `head` and `sorted` from the installed store, or
/// `compute`d (and then stored) when there is no store or it does not hold it.
pub(crate) fn remembered(
    name: &str,
    head: &[u64],
    sorted: &[f64],
    compute: impl FnOnce() -> [u64; 2],
) -> [u64; 2] {
    let Some(store) = installed() else {
        return compute();
    };
    let k = key(name, head, sorted);
    if let Some(v) = store.get(&k) {
        return v;
    }
    let v = compute();
    store.put(&k, v);
    v
}

/// [`remembered`] for a statistic that may have no value: only a value is stored, and a
/// statistic without one is computed again each time.
pub(crate) fn remembered_some(
    name: &str,
    head: &[u64],
    sorted: &[f64],
    compute: impl FnOnce() -> Option<[u64; 2]>,
) -> Option<[u64; 2]> {
    let Some(store) = installed() else {
        return compute();
    };
    let k = key(name, head, sorted);
    if let Some(v) = store.get(&k) {
        return Some(v);
    }
    let v = compute()?;
    store.put(&k, v);
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_by_name_options_and_bits() {
        let a = key("bootstrap/1", &[42, 10_000], &[0.25, 0.5]);
        assert_ne!(a, key("signflip/1", &[42, 10_000], &[0.25, 0.5]));
        assert_ne!(a, key("bootstrap/1", &[43, 10_000], &[0.25, 0.5]));
        assert_ne!(
            a,
            key("bootstrap/1", &[42, 10_000], &[0.25, 0.5000000000000001])
        );
        assert_ne!(a, key("bootstrap/1", &[42, 10_000], &[0.25, 0.5, 0.5]));
        assert_eq!(a.len(), "bootstrap/1".len() + 1 + 8 * 4);
    }
}
