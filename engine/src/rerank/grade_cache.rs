//! The grade cache: an LLM judge's grades on disk, so grading a pool again does no model work.
//!
//! One checked record file per judge identity ([`Grader::identity`]: model file or endpoint,
//! grading prompt, how the grade is read), `<root>/scores/<sha256(identity)>.grade`, beside the
//! score cache and with its rules (`models::record_file`): a record's key is the score cache's
//! pair key, `sha256(sha256(query) | sha256(passage))`; its payload the four probabilities
//! p(0)..p(3) as little-endian f32. A record that does not verify, or holds a value that is not
//! finite, is discarded and graded again.
//!
//! Same bits cold or warm: a fresh grade is rounded to the f32 it is stored as before it is
//! used ([`stored`]), so a run that grades and a run that reads the cache give the same
//! distribution, expected grade and argmax.
//!
//! Offloaded ([`ModelCache::set_offload`], `ranklab judge --llm MODEL --cluster`), the missing
//! pairs go to the remote in shards of whole pairs (`ranklab work grade`, one input line per
//! pair: `{"query": ..., "passages": [one passage]}`), each worker grading with the same model
//! and prompt into an in-memory grade cache whose record file comes back verified like any
//! other; what the remote did not grade is graded here.

use std::path::Path;

use super::cache::pair_key;
use super::grade::{GradeDist, Grader};
use crate::models::model_cache::cache_counts;
use crate::models::remote::{self, WorkKind};
use crate::models::{CacheKind, ModelCache};
use crate::Result;

cache_counts! {
    /// Pair counters of a grading.
    pub struct GradeStats {
        /// Pairs graded by the model (each distinct pair once).
        graded = computed,
        /// Pairs whose grade came from the cache (or from an identical pair of the same call).
        cached = served,
        /// Graded pairs whose entry was on disk but damaged (discarded and graded again).
        rebuilt = rebuilt,
    }
    display "{} pairs graded, {} from cache, {} rebuilt"
}

/// The grade cache's kind of records: p(0)..p(3) as four little-endian f32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grades;

impl CacheKind for Grades {
    // Changing KIND or EXT invalidates every grade file.
    const KIND: &'static str = "llm grades";
    const EXT: &'static str = "grade";
    const ROLE: &'static str = "llm judge";
    const WORK: WorkKind = WorkKind::Grade;
    type Stats = GradeStats;
    fn payload(&self) -> usize {
        16
    }
}

/// Grades of one judge, keyed by (query, passage).
pub type GradeCache = ModelCache<Grades>;

/// Grades written to the cache together (a killed run keeps the groups done).
const GROUP: usize = 16;

/// `d` as the cache stores it: each probability rounded to f32.
pub fn stored(d: &GradeDist) -> GradeDist {
    GradeDist {
        probs: d.probs.map(|p| f64::from(p as f32)),
    }
}

fn encode(d: &GradeDist) -> [u8; 16] {
    let mut out = [0u8; 16];
    for (i, p) in d.probs.iter().enumerate() {
        out[i * 4..i * 4 + 4].copy_from_slice(&(*p as f32).to_le_bytes());
    }
    out
}

fn decode(bytes: &[u8]) -> GradeDist {
    let mut probs = [0.0; 4];
    for (i, c) in bytes.chunks_exact(4).enumerate() {
        probs[i] = f64::from(f32::from_le_bytes(c.try_into().expect("4 bytes")));
    }
    GradeDist { probs }
}

impl ModelCache<Grades> {
    /// The grade cache of judge `identity` under `dir` (normally `ModelStore::scores_dir()`),
    /// read and verified now.
    pub fn open(dir: &Path, identity: &str) -> Result<GradeCache> {
        ModelCache::open_as(dir, identity, Grades)
    }

    /// A cache in memory only (nothing read or written).
    pub fn in_memory(identity: &str) -> GradeCache {
        ModelCache::in_memory_as(identity, Grades)
    }

    /// The grade of each `(query, passage)` pair, in order: from the cache, or from `grader`
    /// (each distinct missing pair once, in first-seen order) and stored. `progress(done,
    /// to_grade)` is called before the first pair and after each. The first pair without a
    /// grade stops the call with the grader's error; the grades before it stay stored.
    pub fn grade_all(
        &self,
        grader: &mut dyn Grader,
        pairs: &[(&str, &str)],
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<(Vec<GradeDist>, GradeStats)> {
        self.check_model(grader.identity())?;
        let keys: Vec<[u8; 32]> = pairs.iter().map(|(q, p)| pair_key(q, p)).collect();
        let found = self.lookup(&keys, decode, |todo, per_shard| {
            let firsts = todo.iter().map(|(first, _)| (*first, 1)).collect();
            remote::split(firsts, per_shard)
                .into_iter()
                .map(|firsts| {
                    let lists: Vec<(&str, Vec<&str>)> = firsts
                        .iter()
                        .map(|&f| (pairs[f].0, vec![pairs[f].1]))
                        .collect();
                    let shard = remote::Shard {
                        input: remote::score_input(&lists),
                        records: firsts.len(),
                    };
                    (shard, firsts.iter().map(|&f| keys[f]).collect())
                })
                .collect()
        })?;
        let (mut out, todo) = (found.found, found.todo);
        progress(0, todo.len());
        let mut pending: Vec<([u8; 32], [u8; 16])> = Vec::with_capacity(GROUP);
        let save = |pending: &mut Vec<([u8; 32], [u8; 16])>| {
            let r = self.store(pending.iter().map(|(k, v)| (*k, &v[..])));
            pending.clear();
            r
        };
        for (n, (first, positions)) in todo.iter().enumerate() {
            let (q, p) = pairs[*first];
            let d = match grader.grade(q, p) {
                Ok(d) => stored(&d),
                Err(e) => {
                    save(&mut pending)?;
                    return Err(e);
                }
            };
            pending.push((keys[*first], encode(&d)));
            if pending.len() == GROUP {
                save(&mut pending)?;
            }
            for &i in positions {
                out[i] = Some(d);
            }
            progress(n + 1, todo.len());
        }
        save(&mut pending)?;
        self.record(found.tally);
        let grades = out
            .into_iter()
            .map(|d| d.expect("every pair found or graded"))
            .collect();
        Ok((grades, found.tally.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Grades by passage length (a stand-in, not a model); counts its calls.
    struct Counting {
        calls: usize,
    }

    impl Grader for Counting {
        fn model(&self) -> &str {
            "counting"
        }
        fn identity(&self) -> &str {
            "counting v1"
        }
        fn grade(&mut self, _q: &str, p: &str) -> Result<GradeDist> {
            self.calls += 1;
            let x = p.len() as f32 / 10.0;
            Ok(GradeDist::from_logits([("0", 0.0), ("1", x), ("2", 0.3), ("3", 0.1)]).unwrap())
        }
    }

    #[test]
    fn a_second_call_reads_every_grade_back_bit_for_bit() {
        let dir = tempfile::tempdir().unwrap();
        let pairs = [("q", "short"), ("q", "a longer passage"), ("q", "short")];
        let mut g = Counting { calls: 0 };
        let cold = GradeCache::open(dir.path(), "counting v1").unwrap();
        let (a, s) = cold.grade_all(&mut g, &pairs, &mut |_, _| {}).unwrap();
        assert_eq!((g.calls, s.graded, s.cached), (2, 2, 1));
        cold.flush().unwrap();
        drop(cold);
        let warm = GradeCache::open(dir.path(), "counting v1").unwrap();
        let (b, s) = warm.grade_all(&mut g, &pairs, &mut |_, _| {}).unwrap();
        assert_eq!((g.calls, s.graded, s.cached), (2, 0, 3));
        assert_eq!(a, b);
        assert_eq!(a[0], a[2]);
        // The fresh grade was already rounded to what the file holds.
        let fresh = Counting { calls: 0 }.grade("q", "short").unwrap();
        assert_ne!(
            fresh, a[0],
            "f64 probabilities differ from their f32 rounding"
        );
        assert_eq!(stored(&fresh), a[0]);
    }

    #[test]
    fn another_judge_is_refused() {
        let cache = GradeCache::in_memory("someone else");
        let e = cache
            .grade_all(&mut Counting { calls: 0 }, &[("q", "p")], &mut |_, _| {})
            .unwrap_err();
        assert!(e.to_string().contains("llm judge \"counting v1\""), "{e}");
    }
}
