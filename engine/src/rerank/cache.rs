//! The score cache: cross-encoder scores on disk, so a rerun does no model work.
//!
//! One checked record file per cross-encoder identity, `<root>/scores/<sha256(identity)>.ce`
//! (format and integrity rules in `models::record_file`); a record's key is
//! `sha256(sha256(query) | sha256(passage))`. The identity names the model file's sha256, so a
//! score of one model can never be read for another: they live in different files, and each
//! file's header names its identity and is checked when read. A score read back that is NaN or
//! infinite (even under a matching checksum) is discarded with a warning, once per file, and
//! scored again.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use rayon::prelude::*;

use rustc_hash::FxBuildHasher;

use super::{Candidate, CrossEncoder};
use crate::models::model_cache::cache_counts;
use crate::models::remote::{self, Shard, WorkKind};
use crate::models::{sha256, CacheKind, ModelCache, Shards};
use crate::{Error, Result};

cache_counts! {
    /// Pair counters of a rerank.
    pub struct PairStats {
        /// Pairs run through the model (each distinct pair once).
        scored = computed,
        /// Pairs whose score came from the cache (or from an identical pair of the same call).
        cached = served,
        /// Scored pairs whose entry was on disk but damaged (discarded and recomputed).
        rebuilt = rebuilt,
    }
    display "{} pairs scored, {} from cache, {} rebuilt"
}

/// The score cache's kind of records: one little-endian f32 logit, keyed by
/// `sha256(sha256(query) | sha256(passage))`, in `<sha256(identity)>.ce` files of kind
/// `cross-encoder scores`.
///
/// It also remembers the sha256 of every passage the cache has keyed, found by the candidate's
/// document id and then its whole text (compared in full, so a digest is never taken for
/// another text; a document's several sections each keep their own): a passage reranked for
/// many queries, or at every size of a corpus-size curve, is hashed once per cache instead of
/// once per pair (hashing the passages was a fifth of a warm SciFact curve's CPU time). The
/// memo holds each distinct passage once, for as long as the cache lives: a reference to the
/// candidate's text (a corpus's shared passage, so compared by address first).
#[derive(Debug, Default)]
pub struct Scores {
    passages: RwLock<PassageDigests>,
}

/// By document id: each of its passages seen so far, with its sha256.
type PassageDigests = HashMap<Box<str>, Vec<(Arc<str>, [u8; 32])>, FxBuildHasher>;

/// The digests a request computed that the memo lacked: (candidate, its passage's sha256).
type Fresh = Vec<(usize, [u8; 32])>;

/// The sha256 of `c`'s passage if `memo` holds it.
fn known_digest(memo: &PassageDigests, c: &Candidate) -> Option<[u8; 32]> {
    let seen = memo.get(c.doc_id.as_str())?;
    let (_, d) = seen.iter().find(|(text, _)| same_text(text, &c.passage))?;
    Some(*d)
}

/// Remembers `d` as the sha256 of `c`'s passage (once per text).
fn remember(memo: &mut PassageDigests, c: &Candidate, d: [u8; 32]) {
    let seen = memo.entry(c.doc_id.as_str().into()).or_default();
    if !seen.iter().any(|(text, _)| same_text(text, &c.passage)) {
        seen.push((Arc::clone(&c.passage), d));
    }
}

/// Whether two passages are the same text: the same allocation (a corpus's shared passage,
/// `Corpus::passage`), else equal in full.
fn same_text(a: &Arc<str>, b: &Arc<str>) -> bool {
    Arc::ptr_eq(a, b) || **a == **b
}

impl CacheKind for Scores {
    // Changing KIND or EXT invalidates every score file.
    const KIND: &'static str = "cross-encoder scores";
    const EXT: &'static str = "ce";
    const ROLE: &'static str = "cross-encoder";
    const WORK: WorkKind = WorkKind::Score;
    const RECORDED: bool = true;
    type Stats = PairStats;
    fn payload(&self) -> usize {
        4
    }
}

/// Scores of one cross-encoder, keyed by (query, passage).
pub type ScoreCache = ModelCache<Scores>;

/// The cache key of a pair.
pub(crate) fn pair_key(query: &str, passage: &str) -> [u8; 32] {
    key_of_digests(&sha256(query.as_bytes()), &sha256(passage.as_bytes()))
}

/// The cache key of a pair from the sha256 of its query and of its passage.
fn key_of_digests(query: &[u8; 32], passage: &[u8; 32]) -> [u8; 32] {
    let mut both = [0u8; 64];
    both[..32].copy_from_slice(query);
    both[32..].copy_from_slice(passage);
    sha256(&both)
}

/// Pairs scored together (at least; a group ends with a whole request) by
/// [`ScoreCache::score_many`] before they are stored: large enough that the workers' wait at the
/// end of a group is a small share of it, small enough that a killed run loses little.
pub const POOL_PAIRS: usize = 256;

impl ModelCache<Scores> {
    /// The cache of `ce` under `dir` (normally `ModelStore::scores_dir()`), read and verified
    /// now; damaged entries are reported on stderr.
    pub fn open(dir: &Path, ce: &dyn CrossEncoder) -> Result<ScoreCache> {
        ModelCache::open_as(dir, ce.identity(), Scores::default())
    }

    /// A cache that lives in memory only (nothing read or written). Still scores each pair at
    /// most once per run.
    pub fn in_memory(ce: &dyn CrossEncoder) -> ScoreCache {
        ModelCache::in_memory_as(ce.identity(), Scores::default())
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
        self.check_model(ce.identity())?;
        let pairs = Pairs::new(requests, &self.kind);
        let found = self.lookup(&pairs.keys, decode, |todo, per_shard| {
            pairs.shards(todo, per_shard)
        })?;
        let (mut out, todo) = (found.found, found.todo);
        // todo is in first-seen order, so each request's missing pairs are consecutive.
        progress(0, todo.len());
        let mut begin = 0;
        while begin < todo.len() {
            let end = group_end(&pairs, &todo, begin);
            self.score_group(ce, &pairs, &todo[begin..end], &mut out)?;
            begin = end;
            progress(end, todo.len());
        }
        self.record(found.tally);
        Ok((pairs.split(out), found.tally.into()))
    }

    /// Scores one group of missing pairs (each `(first position, every position)`, whole
    /// requests in first-seen order) in one [`CrossEncoder::score_many`] call, checks the
    /// scores, stores them and fills their positions of `out`.
    fn score_group(
        &self,
        ce: &mut dyn CrossEncoder,
        pairs: &Pairs<'_>,
        group: &[(usize, Vec<usize>)],
        out: &mut [Option<f32>],
    ) -> Result<()> {
        let batch = pairs.lists(group.iter().map(|(first, _)| *first));
        let lists = ce.score_many(&batch)?;
        let scores: Vec<f32> = lists.iter().flatten().copied().collect();
        let shapes_match = lists.len() == batch.len()
            && lists
                .iter()
                .zip(&batch)
                .all(|(l, (_, p))| l.len() == p.len());
        if !shapes_match {
            return Err(self.model_error(format!(
                "returned {} scores for {} passages",
                scores.len(),
                group.len()
            )));
        }
        if let Some((k, s)) = scores.iter().enumerate().find(|(_, s)| !s.is_finite()) {
            let first = group[k].0;
            return Err(Error::NonFiniteScore {
                query: pairs.query(first).to_string(),
                doc: pairs.candidate(first).doc_id.clone(),
                score: *s,
            });
        }
        let bytes: Vec<[u8; 4]> = scores.iter().map(|s| s.to_le_bytes()).collect();
        self.store(
            group
                .iter()
                .zip(&bytes)
                .map(|((first, _), b)| (pairs.keys[*first], &b[..])),
        )?;
        for ((_, positions), s) in group.iter().zip(scores) {
            for &p in positions {
                out[p] = Some(s);
            }
        }
        Ok(())
    }
}

/// The end of the group of missing pairs that starts at `todo[begin]`: at least [`POOL_PAIRS`]
/// pairs, then on to the end of the request the last one belongs to.
fn group_end(pairs: &Pairs<'_>, todo: &[(usize, Vec<usize>)], begin: usize) -> usize {
    let mut end = begin;
    while end < todo.len()
        && (end - begin < POOL_PAIRS
            || pairs.request_of[todo[end].0] == pairs.request_of[todo[end - 1].0])
    {
        end += 1;
    }
    end
}

/// The (query, candidate) pairs of several requests in one flat list of positions: request r's
/// candidates are at `starts[r]..starts[r + 1]`.
struct Pairs<'a> {
    requests: &'a [(&'a str, &'a [Candidate])],
    starts: Vec<usize>,
    /// The request of each position.
    request_of: Vec<usize>,
    /// The cache key of each position's pair.
    keys: Vec<[u8; 32]>,
}

impl<'a> Pairs<'a> {
    /// The pairs of `requests`, each keyed as [`pair_key`] keys it: each query hashed once per
    /// request, each passage once per cache (`scores`' memo); the requests keyed on rayon's
    /// pool, in order.
    fn new(requests: &'a [(&'a str, &'a [Candidate])], scores: &Scores) -> Pairs<'a> {
        // Each request's keys, and the digests it computed (candidate, digest) for the memo.
        // Each request reads the memo under its own guard, held while it keys its candidates
        // and nothing else (no rayon work while a guard is held, so a thread that steals a job
        // never waits on a guard it holds itself); the new digests are written after, on this
        // thread. A poisoned memo is still whole: an entry is inserted complete or not at all.
        let keyed: Vec<(Vec<[u8; 32]>, Fresh)> = requests
            .par_iter()
            .map(|(query, candidates)| {
                let query = sha256(query.as_bytes());
                let memo = scores
                    .passages
                    .read()
                    .unwrap_or_else(PoisonError::into_inner);
                let mut fresh = Vec::new();
                let keys = candidates
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let passage = known_digest(&memo, c).unwrap_or_else(|| {
                            let d = sha256(c.passage.as_bytes());
                            fresh.push((i, d));
                            d
                        });
                        key_of_digests(&query, &passage)
                    })
                    .collect();
                (keys, fresh)
            })
            .collect();
        // The write guard only when some request computed a digest the memo lacked.
        let mut memo = keyed.iter().any(|(_, fresh)| !fresh.is_empty()).then(|| {
            scores
                .passages
                .write()
                .unwrap_or_else(PoisonError::into_inner)
        });
        let mut starts = Vec::with_capacity(requests.len() + 1);
        let mut keys: Vec<[u8; 32]> = Vec::new();
        let mut request_of: Vec<usize> = Vec::new();
        for (r, ((_, candidates), (request_keys, fresh))) in requests.iter().zip(keyed).enumerate()
        {
            starts.push(keys.len());
            for (i, d) in fresh {
                let memo = memo.as_mut().expect("taken: a request computed a digest");
                remember(memo, &candidates[i], d);
            }
            keys.extend(request_keys);
            request_of.extend(std::iter::repeat_n(r, candidates.len()));
        }
        starts.push(keys.len());
        Pairs {
            requests,
            starts,
            request_of,
            keys,
        }
    }

    fn query(&self, flat: usize) -> &'a str {
        self.requests[self.request_of[flat]].0
    }

    fn candidate(&self, flat: usize) -> &'a Candidate {
        let r = self.request_of[flat];
        &self.requests[r].1[flat - self.starts[r]]
    }

    /// Positions split into runs of one request each (consecutive positions of the same request
    /// stay together), in order.
    fn by_request(&self, positions: impl IntoIterator<Item = usize>) -> Vec<Vec<usize>> {
        let mut runs: Vec<Vec<usize>> = Vec::new();
        let mut last = usize::MAX;
        for p in positions {
            if self.request_of[p] != last {
                runs.push(Vec::new());
                last = self.request_of[p];
            }
            runs.last_mut().expect("pushed above").push(p);
        }
        runs
    }

    /// The model's input for `positions`: per run of one request, its query and the passages.
    fn lists(&self, positions: impl IntoIterator<Item = usize>) -> Vec<(&'a str, Vec<&'a str>)> {
        self.by_request(positions)
            .iter()
            .map(|run| self.list(run))
            .collect()
    }

    fn list(&self, run: &[usize]) -> (&'a str, Vec<&'a str>) {
        let passages = run.iter().map(|&f| &*self.candidate(f).passage);
        (self.query(run[0]), passages.collect())
    }

    /// The shards of the missing pairs `todo` for a remote: whole requests (each request's
    /// missing pairs, in the order the model would get them), about `per_shard` pairs a shard.
    fn shards(&self, todo: &[(usize, Vec<usize>)], per_shard: usize) -> Shards {
        let items = self
            .by_request(todo.iter().map(|(first, _)| *first))
            .into_iter()
            .map(|run| {
                let n = run.len();
                (run, n)
            })
            .collect();
        remote::split(items, per_shard)
            .into_iter()
            .map(|runs| {
                let lists: Vec<(&str, Vec<&str>)> = runs.iter().map(|run| self.list(run)).collect();
                let shard = Shard {
                    input: remote::score_input(&lists),
                    records: runs.iter().map(Vec::len).sum(),
                };
                let asked = runs.iter().flatten().map(|&f| self.keys[f]).collect();
                (shard, asked)
            })
            .collect()
    }

    /// Each request's scores, in order, from every position's score.
    fn split(&self, out: Vec<Option<f32>>) -> Vec<Vec<f32>> {
        let mut out = out.into_iter();
        self.starts
            .windows(2)
            .map(|w| {
                out.by_ref()
                    .take(w[1] - w[0])
                    .map(|s| s.expect("every position filled"))
                    .collect()
            })
            .collect()
    }
}

fn decode(bytes: &[u8]) -> f32 {
    f32::from_le_bytes(bytes.try_into().expect("4 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::remote::Offload;
    use crate::rerank::testing::OverlapCrossEncoder;

    fn cands(passages: &[&str]) -> Vec<Candidate> {
        passages
            .iter()
            .enumerate()
            .map(|(i, p)| Candidate {
                doc_id: format!("d{i}"),
                passage: (*p).into(),
            })
            .collect()
    }

    /// The documented key, computed here with `sha2` directly (not with `pair_key`).
    fn documented_key(query: &str, passage: &str) -> [u8; 32] {
        use sha2::{Digest, Sha256};
        let mut both = Sha256::new();
        both.update(Sha256::digest(query.as_bytes()));
        both.update(Sha256::digest(passage.as_bytes()));
        both.finalize().into()
    }

    #[test]
    fn keys_through_the_passage_memo_are_each_pairs_documented_sha256() {
        // One document with two sections (two texts under one id), one text under two ids, and
        // a text met again in a later call (a memo hit): every key is the documented one.
        let c = |doc: &str, passage: &str| Candidate {
            doc_id: doc.to_string(),
            passage: passage.into(),
        };
        let first = [
            c("d1", "alpha beta"),
            c("d1", "gamma"),
            c("d2", "alpha beta"),
        ];
        let second = [
            c("d1", "gamma"),
            c("d1", "alpha beta"),
            c("d1", "delta"),
            c("d3", "gamma"),
        ];
        let scores = Scores::default();
        for (n, requests) in [
            vec![("q one", &first[..]), ("q two", &first[..2])],
            vec![("q two", &second[..]), ("q one", &second[1..])],
        ]
        .iter()
        .enumerate()
        {
            let pairs = Pairs::new(requests, &scores);
            let want: Vec<[u8; 32]> = requests
                .iter()
                .flat_map(|(q, cs)| cs.iter().map(|c| documented_key(q, &c.passage)))
                .collect();
            assert_eq!(pairs.keys, want, "call {n}");
        }
        // Each distinct (document, text) remembered once: d1 has three texts, d2 and d3 one.
        let memo = scores.passages.read().unwrap();
        let mut held: Vec<(usize, &str)> =
            memo.iter().map(|(d, seen)| (seen.len(), &**d)).collect();
        held.sort_unstable();
        assert_eq!(held, vec![(1, "d2"), (1, "d3"), (3, "d1")]);
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
