//! A model's cache as the embedding cache and the score cache both use it: the checked record
//! file of one model identity (`models::keyed`), the running counts of its calls, and the remote
//! its misses go to when offloaded.
//!
//! What differs between the two caches is their [`CacheKind`]: the record kind and file
//! extension on disk, the model's role in messages, the work a remote does, the payload size and
//! the words the counts are reported in. What a key hashes and what a payload holds stay in
//! `dense::cache` ([`crate::dense::EmbeddingCache`]) and `rerank::cache`
//! ([`crate::rerank::ScoreCache`]), each a `ModelCache` of its kind.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::keyed::KeyedCache;
use super::remote::{self, Offload, Shard, WorkKind};
use crate::{Error, Result};

/// What one kind of model cache is: how its files are named and checked, and how it counts.
pub trait CacheKind {
    /// The record kind written in every file header (changing it invalidates every file).
    const KIND: &'static str;
    /// The file name extension: `<sha256(identity)>.<EXT>`.
    const EXT: &'static str;
    /// The model's role in messages ("embedder", "cross-encoder").
    const ROLE: &'static str;
    /// What a remote computes for this cache when it is offloaded.
    const WORK: WorkKind;
    /// Whether a replay's outputs of this kind are recorded beside its reports
    /// (`models::recorded`): true for what a ranking is made of (vectors, pair scores).
    const RECORDED: bool = false;
    /// A call's counts, in this cache's words.
    type Stats: Copy + From<Tally>;
    /// Bytes of one record's payload.
    fn payload(&self) -> usize;
    /// Whether a payload read from disk (the cache, or a recording) is one the model of
    /// `identity` can produce: by default every value finite. A payload refused here is
    /// rebuilt in the cache and refused, naming the file, in a recording.
    fn sound(_identity: &str) -> fn(&[u8]) -> bool {
        remote::finite_f32s
    }
}

/// The counts of cache calls, whatever a cache calls them: `served + computed` is the number of
/// positions asked for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Positions served without the model: from the file, or from an identical key earlier in
    /// the same call.
    pub served: usize,
    /// Distinct keys computed by the model (here or on a remote).
    pub computed: usize,
    /// Computed keys whose record was on disk but damaged (discarded and recomputed).
    pub rebuilt: usize,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.served += other.served;
        self.computed += other.computed;
        self.rebuilt += other.rebuilt;
    }
}

/// Declares a cache kind's public counts: a struct of `usize` counters named in the cache's own
/// words, each standing for one field of a [`Tally`] (`field = served`), with `add` (another
/// call's counts), the conversion from a [`Tally`], and a `Display` that prints the fields in
/// order through the given format. Used by `dense::CacheStats` and `rerank::PairStats`.
macro_rules! cache_counts {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$doc:meta])* $field:ident = $role:ident, )*
        }
        display $format:literal
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
        pub struct $name {
            $( $(#[$doc])* pub $field: usize, )*
        }

        impl $name {
            /// Adds another call's counts.
            pub fn add(&mut self, other: $name) {
                $( self.$field += other.$field; )*
            }
        }

        impl From<$crate::models::Tally> for $name {
            fn from(t: $crate::models::Tally) -> $name {
                $name { $( $field: t.$role, )* }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, $format, $( self.$field ),*)
            }
        }
    };
}
pub(crate) use cache_counts;

/// The cache of one model identity, of kind `K` (see the module documentation).
#[derive(Debug)]
pub struct ModelCache<K> {
    pub(crate) records: KeyedCache,
    pub(crate) kind: K,
    totals: Mutex<Tally>,
    offload: Option<Offload>,
}

/// What a call's lookup left: each position's decoded payload (None: still to compute), the
/// distinct keys still missing (as `keyed::Lookup::todo`), and the call's counts.
pub(crate) struct Found<T> {
    pub found: Vec<Option<T>>,
    pub todo: Vec<(usize, Vec<usize>)>,
    pub tally: Tally,
}

/// The shards a remote computes, each with the keys it is asked for.
pub(crate) type Shards = Vec<(Shard, BTreeSet<[u8; 32]>)>;

impl<K: CacheKind> ModelCache<K> {
    /// The cache of `identity` under `dir`, read and verified now; damaged entries, and entries
    /// holding a NaN or an infinity under a matching checksum, are reported on stderr.
    pub(crate) fn open_as(dir: &Path, identity: &str, kind: K) -> Result<ModelCache<K>> {
        let records = KeyedCache::open(
            dir,
            K::EXT,
            K::KIND,
            identity,
            kind.payload(),
            K::sound(identity),
            K::RECORDED,
        )?;
        Ok(ModelCache::with(records, kind))
    }

    /// A cache of `identity` in memory only (nothing read or written).
    pub(crate) fn in_memory_as(identity: &str, kind: K) -> ModelCache<K> {
        ModelCache::with(
            KeyedCache::in_memory(K::KIND, identity, kind.payload()),
            kind,
        )
    }

    fn with(records: KeyedCache, kind: K) -> ModelCache<K> {
        ModelCache {
            records,
            kind,
            totals: Mutex::new(Tally::default()),
            offload: None,
        }
    }

    /// The identities and payload sizes of this kind's cache files in `dir`, read from their
    /// headers only (see `keyed::KeyedCache::recorded`).
    pub(crate) fn recorded(dir: &Path) -> Vec<(String, usize)> {
        KeyedCache::recorded(dir, K::EXT, K::KIND)
    }

    /// Sends this cache's misses to a remote from now on (see `models::remote`): they are
    /// computed there in shards, and each returned record file is merged only when it verifies
    /// whole. The local model is then never run for this cache.
    pub fn set_offload(&mut self, offload: Offload) {
        self.offload = Some(offload);
    }

    /// The record file of everything this cache holds, in the cache's format: what
    /// `ranklab work embed` or `ranklab work score` writes after computing its records through
    /// an in-memory cache.
    pub fn record_bytes(&self) -> Vec<u8> {
        self.records.to_bytes()
    }

    /// The model identity this cache belongs to.
    pub fn identity(&self) -> &str {
        self.records.identity()
    }

    /// The file backing this cache (None in memory).
    pub fn path(&self) -> Option<PathBuf> {
        self.records.path()
    }

    /// Damaged entries found (and discarded) when the file was opened (its header and a
    /// truncated tail; a damaged record is found when it is read, and counted as rebuilt).
    pub fn discarded_at_open(&self) -> usize {
        self.records.discarded_at_open()
    }

    /// Counts since the cache was opened.
    pub fn stats(&self) -> K::Stats {
        (*self.totals.lock().unwrap_or_else(|p| p.into_inner())).into()
    }

    /// Writes new entries to disk (atomically). Also done on drop, with a warning on failure.
    pub fn flush(&self) -> Result<()> {
        self.records.flush()
    }

    /// Refuses a model other than the one the cache was opened for.
    pub(crate) fn check_model(&self, identity: &str) -> Result<()> {
        self.records.check_model(K::ROLE, identity)
    }

    /// Looks `keys` up. When the cache is offloaded and keys are missing, has the remote compute
    /// them, in the shards `shards` makes of the missing keys (first-seen order) and the
    /// remote's shard size, merging what verifies, and looks up again: what is left is for the
    /// local model. The counts are those of the first lookup.
    pub(crate) fn lookup<T>(
        &self,
        keys: &[[u8; 32]],
        decode: impl Fn(&[u8]) -> T,
        shards: impl FnOnce(&[(usize, Vec<usize>)], usize) -> Shards,
    ) -> Result<Found<T>> {
        let lookup = self.records.lookup(keys, &decode);
        let tally = Tally {
            served: lookup.served,
            computed: lookup.todo.len(),
            rebuilt: lookup.rebuilt,
        };
        let (mut found, mut todo) = (lookup.found, lookup.todo);
        if let (Some(offload), false) = (&self.offload, todo.is_empty()) {
            let shards = shards(&todo, offload.remote.shard_records());
            self.records
                .offload(offload, K::WORK, shards, K::sound(self.records.identity()))?;
            let lookup = self.records.lookup(keys, &decode);
            found = lookup.found;
            todo = lookup.todo;
        }
        Ok(Found { found, todo, tally })
    }

    /// Stores computed records (see `keyed::KeyedCache::store`).
    pub(crate) fn store<'a>(
        &self,
        records: impl IntoIterator<Item = ([u8; 32], &'a [u8])>,
    ) -> Result<()> {
        self.records.store(records)
    }

    /// Adds a finished call's counts to [`ModelCache::stats`].
    pub(crate) fn record(&self, tally: Tally) {
        self.totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(tally);
    }

    /// An error of this cache's model (it returned something unusable).
    pub(crate) fn model_error(&self, message: String) -> Error {
        Error::Model {
            model: self.identity().to_string(),
            message,
        }
    }
}
