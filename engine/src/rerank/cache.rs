//! The score cache: cross-encoder scores on disk, so a rerun does no model work.
//!
//! One checked record file per cross-encoder identity, `<root>/scores/<sha256(identity)>.ce`
//! (format and integrity rules in `models::record_file`); a record's key is
//! `sha256(sha256(query) | sha256(passage))`. The identity names the model file's sha256, so a
//! score of one model can never be read for another: they live in different files, and each
//! file's header names its identity and is checked when read. A score read back that is NaN or
//! infinite (even under a matching checksum) is discarded with a warning, once per file, and
//! scored again.

use std::path::Path;
use std::sync::Mutex;

use super::{Candidate, CrossEncoder};
use crate::models::keyed::KeyedCache;
use crate::models::remote::{self, Offload, Shard, WorkKind};
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
    offload: Option<Offload>,
}

/// The cache key of a pair.
pub(crate) fn pair_key(query: &str, passage: &str) -> [u8; 32] {
    let mut both = [0u8; 64];
    both[..32].copy_from_slice(&sha256(query.as_bytes()));
    both[32..].copy_from_slice(&sha256(passage.as_bytes()));
    sha256(&both)
}

/// Pairs scored together (at least; a group ends with a whole request) by
/// [`ScoreCache::score_many`] before they are stored: large enough that the workers' wait at the
/// end of a group is a small share of it, small enough that a killed run loses little.
pub const POOL_PAIRS: usize = 256;

/// The record kind in the file header (changing it invalidates every score file).
const KIND: &str = "cross-encoder scores";

impl ScoreCache {
    /// The cache of `ce` under `dir` (normally `ModelStore::scores_dir()`), read and verified
    /// now; damaged entries are reported on stderr.
    pub fn open(dir: &Path, ce: &dyn CrossEncoder) -> Result<ScoreCache> {
        Ok(ScoreCache {
            records: KeyedCache::open(dir, "ce", KIND, ce.identity(), 4, remote::finite_f32s)?,
            totals: Mutex::new(PairStats::default()),
            offload: None,
        })
    }

    /// A cache that lives in memory only (nothing read or written). Still scores each pair at
    /// most once per run.
    pub fn in_memory(ce: &dyn CrossEncoder) -> ScoreCache {
        ScoreCache {
            records: KeyedCache::in_memory(KIND, ce.identity(), 4),
            totals: Mutex::new(PairStats::default()),
            offload: None,
        }
    }

    /// Sends this cache's missing pairs to a remote from now on (see `models::remote`): they are
    /// scored there in shards of whole queries, and each returned record file is merged only when
    /// it verifies whole. The local model is then never run for this cache.
    pub fn set_offload(&mut self, offload: Offload) {
        self.offload = Some(offload);
    }

    /// The record file of everything this cache holds, in the cache's format: what
    /// `ranklab work score` writes after scoring its pairs through an in-memory cache.
    pub fn record_bytes(&self) -> Vec<u8> {
        self.records.to_bytes()
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
        let (mut out, stats) = self.score_many(ce, &[(query, candidates)], &mut |_, _| {})?;
        Ok((out.pop().expect("one request, one list"), stats))
    }

    /// [`ScoreCache::score`] for several queries at once, one list of scores per request. The
    /// missing pairs of all requests are scored together ([`CrossEncoder::score_many`], so the
    /// model's workers share one work list), in groups of whole requests of at least
    /// [`POOL_PAIRS`] pairs, each group stored as soon as it is scored (a killed run keeps the
    /// groups done). Each request's missing pairs reach the model exactly as `score` alone
    /// would pass them (distinct pairs, first-seen order), so every score is the same bits, and
    /// the counts are the sum of the per-request counts. `progress(done, to_score)` is called
    /// before the first group and after each.
    pub fn score_many(
        &self,
        ce: &mut dyn CrossEncoder,
        requests: &[(&str, &[Candidate])],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(Vec<Vec<f32>>, PairStats)> {
        self.records.check_model("cross-encoder", ce.identity())?;
        // Flat positions: request r's candidates are starts[r]..starts[r + 1].
        let mut starts = Vec::with_capacity(requests.len() + 1);
        let mut keys: Vec<[u8; 32]> = Vec::new();
        let mut request_of: Vec<usize> = Vec::new();
        for (r, (query, candidates)) in requests.iter().enumerate() {
            starts.push(keys.len());
            keys.extend(candidates.iter().map(|c| pair_key(query, &c.passage)));
            request_of.extend(std::iter::repeat_n(r, candidates.len()));
        }
        starts.push(keys.len());
        let lookup = self.records.lookup(&keys, decode);
        let mut out = lookup.found;
        let mut todo = lookup.todo;
        let stats = PairStats {
            scored: todo.len(),
            cached: lookup.served,
            rebuilt: lookup.rebuilt,
        };
        let candidate =
            |flat: usize| &requests[request_of[flat]].1[flat - starts[request_of[flat]]];
        if let (Some(offload), false) = (&self.offload, todo.is_empty()) {
            // One item per request: its missing pairs, in the order the model would get them.
            let mut items: Vec<(Vec<usize>, usize)> = Vec::new();
            let mut last = usize::MAX;
            for (first, _) in &todo {
                if request_of[*first] != last {
                    items.push((Vec::new(), 0));
                    last = request_of[*first];
                }
                let item = items.last_mut().expect("pushed above");
                item.0.push(*first);
                item.1 += 1;
            }
            let shards = remote::split(items, offload.remote.shard_records())
                .into_iter()
                .map(|reqs| {
                    let lists: Vec<(&str, Vec<&str>)> = reqs
                        .iter()
                        .map(|firsts| {
                            (
                                requests[request_of[firsts[0]]].0,
                                firsts
                                    .iter()
                                    .map(|&f| candidate(f).passage.as_str())
                                    .collect(),
                            )
                        })
                        .collect();
                    let shard = Shard {
                        input: remote::score_input(&lists),
                        records: reqs.iter().map(Vec::len).sum(),
                    };
                    (shard, reqs.iter().flatten().map(|&f| keys[f]).collect())
                })
                .collect();
            self.records
                .offload(offload, WorkKind::Score, shards, remote::finite_f32s)?;
            let lookup = self.records.lookup(&keys, decode);
            out = lookup.found;
            todo = lookup.todo;
        }
        // todo is in first-seen order, so each request's missing pairs are consecutive.
        progress(0, todo.len());
        let mut begin = 0;
        while begin < todo.len() {
            let mut end = begin;
            while end < todo.len()
                && (end - begin < POOL_PAIRS
                    || request_of[todo[end].0] == request_of[todo[end - 1].0])
            {
                end += 1;
            }
            let group = &todo[begin..end];
            let mut batch: Vec<(&str, Vec<&str>)> = Vec::new();
            let mut last = usize::MAX;
            for (first, _) in group {
                let r = request_of[*first];
                if r != last {
                    batch.push((requests[r].0, Vec::new()));
                    last = r;
                }
                batch
                    .last_mut()
                    .expect("pushed above")
                    .1
                    .push(candidate(*first).passage.as_str());
            }
            let lists = ce.score_many(&batch)?;
            let scores: Vec<f32> = lists.iter().flatten().copied().collect();
            let shapes_match = lists.len() == batch.len()
                && lists
                    .iter()
                    .zip(&batch)
                    .all(|(l, (_, p))| l.len() == p.len());
            if !shapes_match {
                return Err(Error::Model {
                    model: self.identity().to_string(),
                    message: format!(
                        "returned {} scores for {} passages",
                        scores.len(),
                        group.len()
                    ),
                });
            }
            if let Some((k, s)) = scores.iter().enumerate().find(|(_, s)| !s.is_finite()) {
                let first = group[k].0;
                return Err(Error::NonFiniteScore {
                    query: requests[request_of[first]].0.to_string(),
                    doc: candidate(first).doc_id.clone(),
                    score: *s,
                });
            }
            let bytes: Vec<[u8; 4]> = scores.iter().map(|s| s.to_le_bytes()).collect();
            self.records.store(
                group
                    .iter()
                    .zip(&bytes)
                    .map(|((first, _), b)| (keys[*first], &b[..])),
            )?;
            for ((_, positions), s) in group.iter().zip(scores) {
                for &p in positions {
                    out[p] = Some(s);
                }
            }
            begin = end;
            progress(end, todo.len());
        }
        self.totals
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(stats);
        let mut out = out.into_iter();
        let lists = starts
            .windows(2)
            .map(|w| {
                out.by_ref()
                    .take(w[1] - w[0])
                    .map(|s| s.expect("every position filled"))
                    .collect()
            })
            .collect();
        Ok((lists, stats))
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

    type Requests = Vec<(String, Vec<String>)>;

    /// A stand-in remote (unit tests only) that scores each shard with `OverlapCrossEncoder`
    /// through an in-memory cache, as `ranklab work score` does, recording the shards' requests.
    struct Worker {
        shards: std::sync::Mutex<Vec<Requests>>,
    }

    impl crate::models::remote::Remote for Worker {
        fn shard_records(&self) -> usize {
            3
        }
        fn compute(
            &self,
            work: &crate::models::remote::WorkRequest,
            accept: &mut crate::models::remote::Accept<'_>,
        ) -> Result<()> {
            for (i, shard) in work.shards.iter().enumerate() {
                let reqs = remote::parse_score_input("shard", &shard.input).unwrap();
                let mut ce = OverlapCrossEncoder::new();
                let c = ScoreCache::in_memory(&ce);
                for (q, p) in &reqs {
                    let p: Vec<&str> = p.iter().map(String::as_str).collect();
                    c.score(&mut ce, q, &cands(&p)).unwrap();
                }
                accept(i, &c.record_bytes()).unwrap();
                self.shards.lock().unwrap().push(reqs);
            }
            Ok(())
        }
    }

    #[test]
    fn offloaded_pairs_go_in_shards_of_whole_queries_each_pair_once() {
        let mut ce = OverlapCrossEncoder::new();
        let worker = std::sync::Arc::new(Worker {
            shards: Default::default(),
        });
        let mut cache = ScoreCache::in_memory(&ce);
        cache.set_offload(Offload {
            remote: worker.clone(),
            model: "overlap".into(),
            args: Vec::new(),
        });
        let (a, b) = (cands(&["x y", "y", "x y", "z"]), cands(&["x", "y"]));
        let (scores, stats) = cache
            .score_many(&mut ce, &[("x", &a[..]), ("y", &b[..])], &mut |_, _| {})
            .unwrap();
        assert_eq!(ce.pairs(), 0, "the local model never ran");
        assert_eq!((stats.scored, stats.cached), (5, 1));
        let direct = OverlapCrossEncoder::new();
        let expect = |q: &str, c: &[Candidate]| -> Vec<f32> {
            c.iter().map(|c| direct.pair_score(q, &c.passage)).collect()
        };
        assert_eq!(scores, vec![expect("x", &a), expect("y", &b)]);
        // Query "x" has 3 distinct pairs (a shard's worth); "y" goes to the next shard, whole.
        let shards = worker.shards.lock().unwrap().clone();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            shards,
            vec![
                vec![("x".to_string(), s(&["x y", "y", "z"]))],
                vec![("y".to_string(), s(&["x", "y"]))],
            ]
        );
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
