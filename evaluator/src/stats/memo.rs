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

/// [`remembered`] for a statistic that may have no value. A value is stored under the
/// statistic's key; "no value" is stored too, under the same key with [`NONE`] appended to the
/// name (so no pair of words is reserved to mean it), so that a statistic without a value (a
/// κ interval whose every resample is undefined) is not resampled again on every run.
pub(crate) fn remembered_some(
    name: &str,
    head: &[u64],
    sorted: &[f64],
    compute: impl FnOnce() -> Option<[u64; 2]>,
) -> Option<[u64; 2]> {
    remembered_some_in(installed().as_deref(), name, head, sorted, compute)
}

/// Appended to a statistic's name for the key that records "no value".
const NONE: &str = "#none";

fn remembered_some_in(
    store: Option<&dyn Store>,
    name: &str,
    head: &[u64],
    sorted: &[f64],
    compute: impl FnOnce() -> Option<[u64; 2]>,
) -> Option<[u64; 2]> {
    let Some(store) = store else {
        return compute();
    };
    let k = key(name, head, sorted);
    if let Some(v) = store.get(&k) {
        return Some(v);
    }
    let none = key(&format!("{name}{NONE}"), head, sorted);
    if store.get(&none).is_some() {
        return None;
    }
    match compute() {
        Some(v) => {
            store.put(&k, v);
            Some(v)
        }
        None => {
            store.put(&none, [0, 0]);
            None
        }
    }
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

    #[derive(Default)]
    struct Map(std::sync::Mutex<std::collections::HashMap<Vec<u8>, [u64; 2]>>);
    impl Store for Map {
        fn get(&self, key: &[u8]) -> Option<[u64; 2]> {
            self.0.lock().unwrap().get(key).copied()
        }
        fn put(&self, key: &[u8], value: [u64; 2]) {
            self.0.lock().unwrap().insert(key.to_vec(), value);
        }
    }

    /// A statistic without a value is computed once and then answered "none" from the store;
    /// one with a value is answered with it; the two are kept apart (a "none" of one key is
    /// not a value of it, and the value [0, 0] still reads back as a value).
    #[test]
    fn no_value_is_remembered_once_apart_from_values() {
        let store = Map::default();
        let mut calls = 0;
        for _ in 0..3 {
            let got = remembered_some_in(Some(&store), "kappa/1", &[1], &[0.5], || {
                calls += 1;
                None
            });
            assert_eq!(got, None);
        }
        assert_eq!(calls, 1, "a missing value was computed again");
        let mut calls = 0;
        for _ in 0..2 {
            let got = remembered_some_in(Some(&store), "kappa/1", &[1], &[0.25], || {
                calls += 1;
                Some([0, 0])
            });
            assert_eq!(got, Some([0, 0]));
        }
        assert_eq!(calls, 1);
        assert_eq!(store.0.lock().unwrap().len(), 2);
        let none = remembered_some_in(None, "kappa/1", &[1], &[0.5], || Some([7, 7]));
        assert_eq!(none, Some([7, 7]), "without a store everything is computed");
    }
}
