//! The score cache: cross-encoder scores on disk, so a rerun does no model work.
//!
//! One checked record file per cross-encoder identity, `<root>/scores/<sha256(identity)>.ce`
//! (format and integrity rules in `models::record_file`); a record's key is
//! `sha256(sha256(query) | sha256(passage))`. The identity names the model file's sha256, so a
//! score of one model can never be read for another: they live in different files, and each
//! file's header names its identity and is checked when read.

use std::path::Path;
use std::sync::Mutex;

use super::{Candidate, CrossEncoder};
use crate::models::keyed::KeyedCache;
use crate::models::sha256;
use crate::{Error, Result};

/// Pair counters of a rerank.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PairStats {
    /// Pairs run through the model (each distinct pair once).
    pub scored: usize,
    /// Pairs whose score came from the cache (or from an identical pair of the same call).
    pub cached: usize,
    /// Scored pairs whose entry was on disk but damaged (discarded and recomputed).
    pub rebuilt: usize,
}

impl PairStats {
    /// Adds another rerank's counts.
    pub fn add(&mut self, other: PairStats) {
        self.scored += other.scored;
        self.cached += other.cached;
        self.rebuilt += other.rebuilt;
    }
}

impl std::fmt::Display for PairStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} pairs scored, {} from cache, {} rebuilt",
            self.scored, self.cached, self.rebuilt
        )
    }
}

/// Scores of one cross-encoder, keyed by (query, passage).
#[derive(Debug)]
pub struct ScoreCache {
    records: KeyedCache,
    totals: Mutex<PairStats>,
}

/// The cache key of a pair.
pub(crate) fn pair_key(query: &str, passage: &str) -> [u8; 32] {
    let mut both = [0u8; 64];
    both[..32].copy_from_slice(&sha256(query.as_bytes()));
    both[32..].copy_from_slice(&sha256(passage.as_bytes()));
    sha256(&both)
}

/// The record kind in the file header (changing it invalidates every score file).
const KIND: &str = "cross-encoder scores";

impl ScoreCache {
    /// The cache of `ce` under `dir` (normally `ModelStore::scores_dir()`), read and verified
    /// now; damaged entries are reported on stderr.
    pub fn open(dir: &Path, ce: &dyn CrossEncoder) -> Result<ScoreCache> {
        Ok(ScoreCache {
            records: KeyedCache::open(dir, "ce", KIND, ce.identity(), 4)?,
            totals: Mutex::new(PairStats::default()),
        })
    }

    /// A cache that lives in memory only (nothing read or written). Still scores each pair at
    /// most once per run.
    pub fn in_memory(ce: &dyn CrossEncoder) -> ScoreCache {
        ScoreCache {
            records: KeyedCache::in_memory(KIND, ce.identity(), 4),
            totals: Mutex::new(PairStats::default()),
        }
    }

    /// The cross-encoder identity this cache belongs to.
    pub fn identity(&self) -> &str {
        self.records.identity()
    }

    /// The file backing this cache (None in memory).
    pub fn path(&self) -> Option<std::path::PathBuf> {
        self.records.path()
    }

    /// Damaged entries found (and discarded) when the file was opened.
    pub fn discarded_at_open(&self) -> usize {
        self.records.discarded_at_open()
    }

    /// Counts since the cache was opened.
    pub fn stats(&self) -> PairStats {
        *self.totals.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Scores of `query` against each candidate's passage, in order: from the cache, or from
    /// `ce` (each distinct missing pair once, in one call) and stored. A non-finite score is an
    /// error naming the query and the document, and is not stored.
    pub fn score(
        &self,
        ce: &mut dyn CrossEncoder,
        query: &str,
        candidates: &[Candidate],
    ) -> Result<(Vec<f32>, PairStats)> {
        self.records.check_model("cross-encoder", ce.identity())?;
        let keys: Vec<[u8; 32]> = candidates
            .iter()
            .map(|c| pair_key(query, &c.passage))
            .collect();
        let lookup = self.records.lookup(&keys, decode);
        let mut out = lookup.found;
        let todo = lookup.todo;
        let stats = PairStats {
            scored: todo.len(),
            cached: lookup.served,
            rebuilt: lookup.rebuilt,
        };
        if !todo.is_empty() {
            let passages: Vec<&str> = todo
                .iter()
                .map(|(i, _)| candidates[*i].passage.as_str())
                .collect();
            let scores = ce.score(query, &passages)?;
            if scores.len() != passages.len() {
                return Err(Error::Model {
                    model: self.identity().to_string(),
                    message: format!(
                        "returned {} scores for {} passages",
                        scores.len(),
                        passages.len()
                    ),
                });
            }
            if let Some((k, s)) = scores.iter().enumerate().find(|(_, s)| !s.is_finite()) {
                return Err(Error::NonFiniteScore {
                    query: query.to_string(),
                    doc: candidates[todo[k].0].doc_id.clone(),
                    score: *s,
                });
            }
            let bytes: Vec<[u8; 4]> = scores.iter().map(|s| s.to_le_bytes()).collect();
            self.records.store(
                todo.iter()
                    .zip(&bytes)
                    .map(|((first, _), b)| (keys[*first], &b[..])),
            )?;
            for ((_, positions), s) in todo.iter().zip(scores) {
                for &p in positions {
                    out[p] = Some(s);
                }
            }
        }
        self.totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(stats);
        Ok((
            out.into_iter()
                .map(|s| s.expect("every position filled"))
                .collect(),
            stats,
        ))
    }

    /// Writes new entries to disk (atomically). Also done on drop, with a warning on failure.
    pub fn flush(&self) -> Result<()> {
        self.records.flush()
    }
}

fn decode(bytes: &[u8]) -> f32 {
    f32::from_le_bytes(bytes.try_into().expect("4 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rerank::testing::OverlapCrossEncoder;

    fn cands(passages: &[&str]) -> Vec<Candidate> {
        passages
            .iter()
            .enumerate()
            .map(|(i, p)| Candidate {
                doc_id: format!("d{i}"),
                passage: p.to_string(),
            })
            .collect()
    }

    #[test]
    fn each_pair_is_scored_once_and_reread_bit_identical() {
        let dir = tempfile::tempdir().unwrap();
        let mut ce = OverlapCrossEncoder::new();
        let c = cands(&["a b", "b c", "a b"]);
        let cold = {
            let cache = ScoreCache::open(dir.path(), &ce).unwrap();
            let (s, st) = cache.score(&mut ce, "a", &c).unwrap();
            assert_eq!(
                st,
                PairStats {
                    scored: 2,
                    cached: 1,
                    rebuilt: 0
                }
            );
            s
        };
        let cache = ScoreCache::open(dir.path(), &ce).unwrap();
        let (warm, st) = cache.score(&mut ce, "a", &c).unwrap();
        assert_eq!(
            st,
            PairStats {
                scored: 0,
                cached: 3,
                rebuilt: 0
            }
        );
        assert_eq!(ce.pairs(), 2);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&cold), bits(&warm));
        // Another query is another pair.
        let (_, st) = cache.score(&mut ce, "b", &c[..1]).unwrap();
        assert_eq!(st.scored, 1);
    }

    #[test]
    fn a_score_of_another_model_is_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = OverlapCrossEncoder::with_identity("model-a");
        let mut b = OverlapCrossEncoder::with_identity("model-b");
        let c = cands(&["x y"]);
        ScoreCache::open(dir.path(), &a)
            .unwrap()
            .score(&mut a, "x", &c)
            .unwrap();
        let cache_b = ScoreCache::open(dir.path(), &b).unwrap();
        let (_, st) = cache_b.score(&mut b, "x", &c).unwrap();
        assert_eq!(
            st,
            PairStats {
                scored: 1,
                cached: 0,
                rebuilt: 0
            }
        );
        // Renaming model a's file to model b's name does not make its entries readable as b's.
        drop(cache_b);
        let path_b = ScoreCache::open(dir.path(), &b).unwrap().path().unwrap();
        let path_a = ScoreCache::open(dir.path(), &a).unwrap().path().unwrap();
        assert_ne!(path_a, path_b);
        std::fs::copy(&path_a, &path_b).unwrap();
        let cache_b = ScoreCache::open(dir.path(), &b).unwrap();
        assert!(cache_b.discarded_at_open() > 0);
        assert_eq!(cache_b.score(&mut b, "x", &c).unwrap().1.scored, 1);
        // And using a cache with the wrong model is refused outright.
        assert!(cache_b.score(&mut a, "x", &c).is_err());
    }

    #[test]
    fn nan_is_an_error_naming_query_and_document_and_is_not_cached() {
        let mut ce = OverlapCrossEncoder::poisoned("bad");
        let cache = ScoreCache::in_memory(&ce);
        let c = cands(&["fine text", "bad text"]);
        let err = cache.score(&mut ce, "my query", &c).unwrap_err();
        match &err {
            Error::NonFiniteScore { query, doc, .. } => {
                assert_eq!(query, "my query");
                assert_eq!(doc, "d1");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(cache.records.len(), 0);
    }
}
