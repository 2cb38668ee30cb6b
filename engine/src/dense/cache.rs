//! The embedding cache: section and query vectors on disk, so a rerun does no model work.
//!
//! One checked record file per embedder identity, `<root>/embeddings/<sha256(identity)>.emb`
//! (format and integrity rules in `models::record_file`): the identity names the model file's
//! sha256, the max length, pooling, normalization and embedding scheme, so anything that
//! changes a vector changes the file; within it a record's key is the sha256 of the exact text
//! embedded (query instruction included). A damaged entry, or one holding a NaN or an infinity
//! under a matching checksum, is reported (once per file), discarded and recomputed; a vector
//! read back is bit-identical to the one computed.

use std::path::Path;

use super::Embedder;
use crate::models::model_cache::cache_counts;
use crate::models::remote::{self, Shard, WorkKind};
use crate::models::{sha256, CacheKind, ModelCache};
use crate::Result;

cache_counts! {
    /// Cache counters. `hits + misses` is the number of texts asked for.
    pub struct CacheStats {
        /// Texts whose vector came from the cache.
        hits = served,
        /// Texts embedded by the model (each distinct text once).
        misses = computed,
        /// Misses whose entry was on disk but damaged (discarded and recomputed).
        rebuilt = rebuilt,
    }
    display "{} cached, {} computed, {} rebuilt"
}

/// The embedding cache's kind of records: vectors of `dim` little-endian f32s, keyed by the
/// sha256 of the text, in `<sha256(identity)>.emb` files of kind `embeddings`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Vectors {
    /// The vector length.
    pub dim: usize,
}

impl CacheKind for Vectors {
    // Changing KIND or EXT invalidates every vector file.
    const KIND: &'static str = "embeddings";
    const EXT: &'static str = "emb";
    const ROLE: &'static str = "embedder";
    const WORK: WorkKind = WorkKind::Embed;
    const RECORDED: bool = true;
    type Stats = CacheStats;
    fn payload(&self) -> usize {
        self.dim * 4
    }
    fn sound(identity: &str) -> fn(&[u8]) -> bool {
        if identity.split(' ').any(|w| w == "norm=l2") {
            unit_vector
        } else {
            crate::models::remote::finite_f32s
        }
    }
}

/// How far from 1 the L2 norm of a normalizing embedder's vector may be: f32 normalization
/// leaves about 1e-6; a value off by more was not produced by the model.
pub const UNIT_NORM_TOLERANCE: f64 = 1e-3;

fn f32s(bytes: &[u8]) -> impl Iterator<Item = f32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
}

/// A vector an L2-normalizing embedder (identity `norm=l2`) can produce: finite, with norm 1
/// within [`UNIT_NORM_TOLERANCE`] (so never the zero vector).
fn unit_vector(bytes: &[u8]) -> bool {
    let norm2: f64 = f32s(bytes).map(|x| f64::from(x) * f64::from(x)).sum();
    f32s(bytes).all(f32::is_finite) && (norm2.sqrt() - 1.0).abs() <= UNIT_NORM_TOLERANCE
}

/// Vectors of one embedder, keyed by text.
pub type EmbeddingCache = ModelCache<Vectors>;

/// Texts embedded together (one [`Embedder::embed`] call, then stored, then a progress call):
/// as the cross-encoder's [`crate::rerank::POOL_PAIRS`], large enough that the workers' wait
/// for each other at the end of a chunk (up to one text) is a small share of it, small enough
/// that a killed run loses little. Every text is still embedded alone, so the vectors do not
/// depend on it.
const CHUNK: usize = 256;

impl ModelCache<Vectors> {
    /// The cache of `embedder` under `dir` (normally `ModelStore::embeddings_dir()`), read and
    /// verified now; damaged entries are reported on stderr.
    pub fn open(dir: &Path, embedder: &dyn Embedder) -> Result<EmbeddingCache> {
        let kind = Vectors {
            dim: embedder.dim(),
        };
        ModelCache::open_as(dir, embedder.identity(), kind)
    }

    /// The vector length recorded for the embedder whose identity is `identity_prefix` followed
    /// by ` dim=<n>` (the form [`super::FastembedEmbedder`] gives), read from the headers of the
    /// cache files under `dir` without loading the model or any vector. None when no such file
    /// exists (the cache is cold: the model must be loaded to know) or the headers disagree.
    /// The files of the active recording session's folder count too (`models::recorded`): a
    /// replay from a recording that holds every vector loads no model.
    pub fn recorded_dim(dir: &Path, identity_prefix: &str) -> Option<usize> {
        let lead = format!("{identity_prefix} dim=");
        let recording = crate::models::recorded::read_dir();
        let dims: std::collections::BTreeSet<usize> = EmbeddingCache::recorded(dir)
            .into_iter()
            .chain(recording.iter().flat_map(|d| EmbeddingCache::recorded(d)))
            .filter_map(|(identity, payload)| {
                let dim: usize = identity.strip_prefix(&lead)?.parse().ok()?;
                (dim > 0 && payload == dim * 4).then_some(dim)
            })
            .collect();
        match dims.len() {
            1 => dims.into_iter().next(),
            _ => None,
        }
    }

    /// A cache that lives in memory only (nothing read or written).
    pub fn in_memory(embedder: &dyn Embedder) -> EmbeddingCache {
        let kind = Vectors {
            dim: embedder.dim(),
        };
        ModelCache::in_memory_as(embedder.identity(), kind)
    }

    /// The vectors of `texts`, in order: from the cache, or embedded (each distinct text once)
    /// and stored. `embedder` must be the one the cache was opened for.
    pub fn embed(
        &self,
        embedder: &mut dyn Embedder,
        texts: &[&str],
    ) -> Result<(Vec<Vec<f32>>, CacheStats)> {
        self.embed_with_progress(embedder, texts, &mut |_, _| {})
    }

    /// [`EmbeddingCache::embed`], calling `progress(done, to_compute)` as misses are embedded.
    pub fn embed_with_progress(
        &self,
        embedder: &mut dyn Embedder,
        texts: &[&str],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(Vec<Vec<f32>>, CacheStats)> {
        self.check_model(embedder.identity())?;
        let keys: Vec<[u8; 32]> = {
            use rayon::prelude::*;
            texts.par_iter().map(|t| sha256(t.as_bytes())).collect()
        };
        let found = self.lookup(&keys, decode, |todo, per_shard| {
            let items = todo.iter().map(|(first, _)| (*first, 1)).collect();
            remote::split(items, per_shard)
                .into_iter()
                .map(|firsts| {
                    let batch: Vec<&str> = firsts.iter().map(|&i| texts[i]).collect();
                    let shard = Shard {
                        input: remote::embed_input(&batch),
                        records: firsts.len(),
                    };
                    (shard, firsts.iter().map(|&i| keys[i]).collect())
                })
                .collect()
        })?;
        let (mut out, todo) = (found.found, found.todo);
        progress(0, todo.len());
        for (done, chunk) in todo.chunks(CHUNK).enumerate() {
            let batch: Vec<&str> = chunk.iter().map(|(i, _)| texts[*i]).collect();
            let vectors = embedder.embed(&batch)?;
            if vectors.len() != batch.len() {
                return Err(self.model_error(format!(
                    "returned {} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                )));
            }
            for ((first, _), v) in chunk.iter().zip(&vectors) {
                if v.len() != self.kind.dim || v.iter().any(|x| !x.is_finite()) {
                    return Err(self.model_error(format!(
                        "invalid vector (length {}, expected {}, or a non-finite value) for text {:?}",
                        v.len(),
                        self.kind.dim,
                        truncate(texts[*first], 80)
                    )));
                }
            }
            let bytes: Vec<Vec<u8>> = vectors.iter().map(|v| encode(v)).collect();
            self.store(
                chunk
                    .iter()
                    .zip(&bytes)
                    .map(|((first, _), b)| (keys[*first], b.as_slice())),
            )?;
            for ((_, positions), v) in chunk.iter().zip(vectors) {
                for &p in positions {
                    out[p] = Some(v.clone());
                }
            }
            progress((done * CHUNK + chunk.len()).min(todo.len()), todo.len());
        }
        self.record(found.tally);
        Ok((
            out.into_iter()
                .map(|v| v.expect("every position filled"))
                .collect(),
            found.tally.into(),
        ))
    }
}

fn encode(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn decode(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect()
}

pub(crate) fn truncate(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dense::testing::HashEmbedder;

    #[test]
    fn a_normalizing_embedders_vectors_must_be_unit_a_stand_ins_only_finite() {
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let l2 = Vectors::sound("bge onnx-sha256=x pooling=cls norm=l2 batch=1 dim=2");
        // 0.6² + 0.8² = 1 (by hand); zero, half-length and NaN vectors no model normalizing
        // by L2 can give.
        assert!(l2(&bytes(&[0.6, 0.8])));
        assert!(!l2(&bytes(&[0.0, 0.0])));
        assert!(!l2(&bytes(&[0.3, 0.4])));
        assert!(!l2(&bytes(&[f32::NAN, 1.0])));
        let plain = Vectors::sound("hash-bow dim=2 (test stand-in)");
        assert!(plain(&bytes(&[0.0, 0.0])) && plain(&bytes(&[0.3, 0.4])));
        assert!(!plain(&bytes(&[f32::INFINITY, 0.0])));
    }
    use crate::models::remote::Offload;

    #[test]
    fn cold_and_warm_give_identical_bits_and_count_hits() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = HashEmbedder::new(16);
        let texts = ["alpha", "beta", "alpha", "gamma"];
        let cold = {
            let cache = EmbeddingCache::open(dir.path(), &e).unwrap();
            let (v, s) = cache.embed(&mut e, &texts).unwrap();
            assert_eq!(
                s,
                CacheStats {
                    hits: 1,
                    misses: 3,
                    rebuilt: 0
                }
            );
            assert_eq!(e.calls(), 3);
            v
        };
        let cache = EmbeddingCache::open(dir.path(), &e).unwrap();
        let (warm, s) = cache.embed(&mut e, &texts).unwrap();
        assert_eq!(
            s,
            CacheStats {
                hits: 4,
                misses: 0,
                rebuilt: 0
            }
        );
        assert_eq!(e.calls(), 3, "a warm cache does no model work");
        let bits = |v: &Vec<Vec<f32>>| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&cold), bits(&warm));
    }

    /// Issue 42 case 1 for the cache: zero vectors written in place of a normalizing embedder's
    /// vectors, under checksums that match (written through the record file itself), are not
    /// trusted: the texts are embedded again and the model's unit vectors come back.
    #[test]
    fn zero_vectors_in_a_normalizing_embedders_cache_are_recomputed() {
        let dir = tempfile::tempdir().unwrap();
        let identity = "bge onnx-sha256=x pooling=cls norm=l2 dim=8";
        let mut e = HashEmbedder::with_exact_identity(8, identity);
        let texts = ["alpha beta", "gamma"];
        let (cold, _) = EmbeddingCache::open(dir.path(), &e)
            .unwrap()
            .embed(&mut e, &texts)
            .unwrap();
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|f| f.unwrap().path())
            .find(|p| p.extension().is_some_and(|x| x == "emb"))
            .unwrap();
        {
            let (mut f, _) =
                crate::models::record_file::RecordFile::open(&file, "embeddings", identity, 8 * 4)
                    .unwrap();
            let keys: Vec<[u8; 32]> = f.keys().copied().collect();
            assert_eq!(keys.len(), 2);
            for k in keys {
                f.insert(k, &[0u8; 32]);
            }
            f.flush().unwrap();
            // The forgery holds on disk: its checksums are right.
            let (g, report) =
                crate::models::record_file::RecordFile::open(&file, "embeddings", identity, 32)
                    .unwrap();
            assert_eq!((report.loaded, report.discarded), (2, 0));
            assert!(g.keys().all(|k| g.get(k) == Some(&[0u8; 32][..])));
        }
        let calls = e.calls();
        let (warm, s) = EmbeddingCache::open(dir.path(), &e)
            .unwrap()
            .embed(&mut e, &texts)
            .unwrap();
        assert_eq!(e.calls() - calls, 2, "both zero vectors recomputed: {s:?}");
        // The oracle: the stand-in's own vectors, each of norm 1.
        let bits = |v: &Vec<Vec<f32>>| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&warm), bits(&cold));
        assert!(warm.iter().all(|v| v.iter().any(|x| *x != 0.0)));
    }

    #[test]
    fn the_vector_length_is_read_from_the_cache_header_of_that_identity_only() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            EmbeddingCache::recorded_dim(dir.path(), "m x=1"),
            None,
            "no file"
        );
        let mut e = HashEmbedder::with_exact_identity(24, "m x=1 dim=24");
        let cache = EmbeddingCache::open(dir.path(), &e).unwrap();
        cache.embed(&mut e, &["a"]).unwrap();
        drop(cache);
        assert_eq!(EmbeddingCache::recorded_dim(dir.path(), "m x=1"), Some(24));
        assert_eq!(EmbeddingCache::recorded_dim(dir.path(), "m x=2"), None);
        assert_eq!(
            EmbeddingCache::recorded_dim(dir.path(), "m"),
            None,
            "prefix"
        );
        // A file renamed to another identity's name is not that identity's cache.
        let file = std::fs::read_dir(dir.path())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        std::fs::rename(&file, dir.path().join(format!("{}.emb", "0".repeat(64)))).unwrap();
        assert_eq!(EmbeddingCache::recorded_dim(dir.path(), "m x=1"), None);
    }

    /// A stand-in remote (unit tests only): for every shard it first returns a file from
    /// another model, then one with a key not asked for, then one missing a record, then
    /// `HashEmbedder::new(8)`'s true file; each bad one must be refused.
    struct BadThenGood {
        refusals: std::sync::Mutex<Vec<String>>,
    }

    impl crate::models::remote::Remote for BadThenGood {
        fn shard_records(&self) -> usize {
            2
        }
        fn compute(
            &self,
            work: &crate::models::remote::WorkRequest,
            accept: &mut crate::models::remote::Accept<'_>,
        ) -> Result<()> {
            let file = |e: &mut HashEmbedder, texts: &[&str]| {
                let c = EmbeddingCache::in_memory(e);
                c.embed(e, texts).unwrap();
                c.record_bytes()
            };
            for (i, shard) in work.shards.iter().enumerate() {
                let texts = remote::parse_embed_input("shard", &shard.input).unwrap();
                let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                let mut with_extra = refs.clone();
                with_extra.push("never asked");
                let bad = [
                    file(&mut HashEmbedder::with_identity(8, "other"), &refs),
                    file(&mut HashEmbedder::new(8), &with_extra),
                    file(&mut HashEmbedder::new(8), &refs[..refs.len() - 1]),
                ];
                for b in bad {
                    self.refusals
                        .lock()
                        .unwrap()
                        .push(accept(i, &b).unwrap_err());
                }
                assert_eq!(
                    accept(i, &file(&mut HashEmbedder::new(8), &refs)),
                    Ok(refs.len())
                );
            }
            Ok(())
        }
    }

    #[test]
    fn offloaded_misses_merge_only_verified_files_and_run_no_local_model() {
        let dir = tempfile::tempdir().unwrap();
        let mut e = HashEmbedder::new(8);
        let remote = std::sync::Arc::new(BadThenGood {
            refusals: Default::default(),
        });
        let texts = ["a b", "c", "a b", "d e f", "g", "h"];
        let mut cache = EmbeddingCache::open(dir.path(), &e).unwrap();
        cache.set_offload(Offload {
            remote: remote.clone(),
            model: "hash".into(),
            args: Vec::new(),
        });
        let (v, stats) = cache.embed(&mut e, &texts).unwrap();
        assert_eq!(e.calls(), 0, "the local model never ran");
        assert_eq!((stats.hits, stats.misses), (1, 5));
        // Oracle: the stand-in's own vector function, computed directly.
        let direct = HashEmbedder::new(8);
        for (t, got) in texts.iter().zip(&v) {
            assert_eq!(got, &direct.vector(t), "{t}");
        }
        let refusals = remote.refusals.lock().unwrap().clone();
        assert_eq!(
            refusals.len(),
            3 * 3,
            "3 shards of at most 2 texts, 3 bad files each"
        );
        assert!(
            refusals[0].contains("another model identity"),
            "{refusals:?}"
        );
        assert!(refusals[1].contains("not asked for"), "{refusals:?}");
        assert!(refusals[2].contains("1 of the 2"), "{refusals:?}");
        drop(cache);
        // On disk: exactly the asked texts, none of a refused file's records.
        let reopened = EmbeddingCache::open(dir.path(), &direct).unwrap();
        assert_eq!(reopened.records.len(), 5);
        let l = reopened.records.lookup(&[sha256(b"never asked")], |_| ());
        assert_eq!(
            l.todo.len(),
            1,
            "a record of a refused file reached the cache"
        );
    }

    #[test]
    fn a_cache_opened_for_another_embedder_is_refused() {
        let e = HashEmbedder::new(8);
        let mut other = HashEmbedder::with_identity(8, "other");
        let cache = EmbeddingCache::in_memory(&e);
        assert!(cache.embed(&mut other, &["x"]).is_err());
    }
}
