//! The fast path of tuning: a query's first-stage list, computed once, re-sorted for any weights.
//!
//! Only the final score depends on the weights. For each query the pre-policy list (the
//! configuration's output before lifecycle and history enter) is replayed once and reduced to
//! what the two wirings read per candidate: the normalized first-stage score, the current
//! lifecycle, the index snapshot, the history, the citation boost and each candidate's place in
//! the wiring's tie-break order. For given weights, the rank of one document is then 1 + the
//! number of candidates that sort before it: no sort, no allocation, O(list) per query.
//!
//! Exactness: the scores are computed with the engine's own arithmetic, in the same order
//! (`current::rerank_cited_hits`; the legacy `indexed_score + boost`), compared with
//! `f32::total_cmp` like the engine's sorts, and ties break on the same keys. The property test
//! below checks the ranks against `current::rank` and `legacy::rank` (a full sort), and
//! `ranklab tune` re-checks its chosen weights through the real replay.

use std::cmp::Ordering;

use ranklab_engine::corpus::{Corpus, History, Lifecycle};
use ranklab_engine::policy::legacy::{CITATION_BOOST, CITATION_CAP};
use ranklab_engine::policy::{current, normalized_scores, Weights, Wiring};
use ranklab_engine::ranking::Hit;

use crate::paired::Outcome;

/// What the wirings read about one candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Entry {
    norm: f32,
    lifecycle: Lifecycle,
    snapshot: Lifecycle,
    history: History,
    boost: f32,
    /// Place in the current wiring's tie order (newer `updated_at` first, then id descending).
    tie_current: u32,
    /// Place in the legacy tie order (id descending).
    tie_legacy: u32,
}

impl Entry {
    fn current(&self, w: &Weights) -> f32 {
        current::rerank_cited_hits(self.norm, self.lifecycle, self.history, w).0
    }
    fn legacy(&self, w: &Weights) -> f32 {
        let frozen = w.lifecycle_penalty(self.snapshot) + w.history_penalty(self.history);
        let indexed_score = self.norm - frozen;
        indexed_score + self.boost
    }
}

/// One query's pre-policy candidate list, ready to be re-sorted under any weights.
#[derive(Debug, Clone)]
pub(crate) struct Candidates {
    entries: Vec<Entry>,
    docs: Vec<usize>,
}

impl Candidates {
    /// From the pre-policy list of a query (in its order, as the wiring would receive it).
    pub(crate) fn new(corpus: &Corpus, hits: &[Hit]) -> Candidates {
        let norm = normalized_scores(hits);
        let cites = corpus.citation_counts();
        let tie_order = |cmp: &dyn Fn(usize, usize) -> Ordering| {
            let mut idx: Vec<usize> = (0..hits.len()).collect();
            idx.sort_by(|&a, &b| cmp(hits[a].doc, hits[b].doc));
            let mut place = vec![0u32; hits.len()];
            for (p, &i) in idx.iter().enumerate() {
                place[i] = p as u32;
            }
            place
        };
        let tie_current = tie_order(&|a, b| current::cmp_ties(&corpus.docs[a], &corpus.docs[b]));
        let tie_legacy = tie_order(&|a, b| corpus.id(b).as_bytes().cmp(corpus.id(a).as_bytes()));
        let entries = hits
            .iter()
            .enumerate()
            .map(|(i, h)| {
                let d = &corpus.docs[h.doc];
                Entry {
                    norm: norm[i],
                    lifecycle: d.lifecycle,
                    snapshot: d.index_snapshot(),
                    history: d.history,
                    boost: (CITATION_BOOST * cites[h.doc] as f32).min(CITATION_CAP),
                    tie_current: tie_current[i],
                    tie_legacy: tie_legacy[i],
                }
            })
            .collect();
        Candidates {
            entries,
            docs: hits.iter().map(|h| h.doc).collect(),
        }
    }

    /// The position of document `doc` in the list, if it is a candidate.
    pub(crate) fn position(&self, doc: usize) -> Option<usize> {
        self.docs.iter().position(|&d| d == doc)
    }

    /// Whether candidate `a` sorts before candidate `b` under `wiring` with weights `w`, given
    /// their final scores.
    fn before(&self, wiring: Wiring, a: usize, sa: f32, b: usize, sb: f32) -> bool {
        match sa.total_cmp(&sb) {
            Ordering::Greater => true,
            Ordering::Less => false,
            Ordering::Equal => match wiring {
                Wiring::Current => self.entries[a].tie_current < self.entries[b].tie_current,
                Wiring::Legacy => self.entries[a].tie_legacy < self.entries[b].tie_legacy,
                // The first stage's order: the list's own.
                Wiring::None => a < b,
            },
        }
    }

    fn score(&self, wiring: Wiring, i: usize, w: &Weights) -> f32 {
        match wiring {
            Wiring::Current => self.entries[i].current(w),
            Wiring::Legacy => self.entries[i].legacy(w),
            Wiring::None => self.entries[i].norm,
        }
    }

    /// The 1-based rank of candidate `t` (a position in the list) under `wiring` and `w`.
    pub(crate) fn rank(&self, wiring: Wiring, t: usize, w: &Weights) -> usize {
        let st = self.score(wiring, t, w);
        1 + (0..self.entries.len())
            .filter(|&i| i != t && self.before(wiring, i, self.score(wiring, i, w), t, st))
            .count()
    }

    /// Whether candidate `a` ranks above candidate `b` (positions in the list).
    pub(crate) fn above(&self, wiring: Wiring, a: usize, b: usize, w: &Weights) -> bool {
        self.before(
            wiring,
            a,
            self.score(wiring, a, w),
            b,
            self.score(wiring, b, w),
        )
    }
}

/// A merge query: its candidates and where its expected record sits among them.
#[derive(Debug, Clone)]
pub(crate) struct MergeQuery {
    /// The candidates.
    pub candidates: Candidates,
    /// Position of the expected record in the list (None: not retrieved, reciprocal rank 0).
    pub target: Option<usize>,
}

impl MergeQuery {
    /// The rank of the expected record under the current wiring with `w`.
    pub(crate) fn rank(&self, w: &Weights) -> Option<usize> {
        self.target
            .map(|t| self.candidates.rank(Wiring::Current, t, w))
    }
}

/// A task of the suite itself: its candidates and where its relevant records sit among them;
/// its rank is the rank of the first relevant record (trec_eval's recip_rank).
#[derive(Debug, Clone)]
pub(crate) struct TaskQuery {
    /// The candidates.
    pub candidates: Candidates,
    /// Positions of the relevant records in the list (grade >= 1) that were retrieved.
    pub targets: Vec<usize>,
    /// How many records are relevant to the task (grade >= 1), retrieved or not: recall@k's
    /// denominator, as in `run` and trec_eval.
    pub relevant: usize,
}

impl TaskQuery {
    /// The rank of the first relevant record under the current wiring with `w`.
    pub(crate) fn rank(&self, w: &Weights) -> Option<usize> {
        self.targets
            .iter()
            .map(|&t| self.candidates.rank(Wiring::Current, t, w))
            .min()
    }

    /// Recall@k under the current wiring with `w`: relevant records in the top k over all
    /// relevant records (0 when none is relevant), `run`'s recall@k.
    pub(crate) fn recall(&self, w: &Weights, k: usize) -> f64 {
        if self.relevant == 0 {
            return 0.0;
        }
        let in_top = self
            .targets
            .iter()
            .filter(|&&t| self.candidates.rank(Wiring::Current, t, w) <= k)
            .count();
        in_top as f64 / self.relevant as f64
    }
}

/// A paired assertion on precomputed candidates: `above` must rank above `below` as expected
/// under each wiring (a record not retrieved ranks below every retrieved one).
#[derive(Debug, Clone)]
pub(crate) struct PairQuery {
    /// Assertion id.
    pub id: String,
    /// The candidates of the assertion's query.
    pub candidates: Candidates,
    /// Position of `above` (None: not retrieved).
    pub above: Option<usize>,
    /// Position of `below`.
    pub below: Option<usize>,
    /// Expected under the legacy wiring.
    pub legacy: Outcome,
    /// Expected under the current wiring.
    pub current: Outcome,
}

impl PairQuery {
    /// The outcome under `wiring` with `w`.
    pub(crate) fn outcome(&self, wiring: Wiring, w: &Weights) -> Outcome {
        let holds = match (self.above, self.below) {
            (Some(a), Some(b)) => self.candidates.above(wiring, a, b, w),
            (Some(_), None) => true,
            _ => false,
        };
        if holds {
            Outcome::Holds
        } else {
            Outcome::Inverted
        }
    }

    /// Both expectations met.
    pub(crate) fn passes(&self, w: &Weights) -> bool {
        self.outcome(Wiring::Legacy, w) == self.legacy
            && self.outcome(Wiring::Current, w) == self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::NaiveDate;
    use proptest::prelude::*;
    use ranklab_engine::corpus::{Document, LifecycleEntry, Section};
    use ranklab_engine::policy::legacy;

    const LIFECYCLES: [Lifecycle; 3] = [
        Lifecycle::Active,
        Lifecycle::Superseded,
        Lifecycle::Deprecated,
    ];
    const HISTORIES: [History; 3] = [
        History::FirstClass,
        History::Amendment,
        History::EditorialOnly,
    ];

    fn doc(
        i: usize,
        lc: usize,
        snap_later: bool,
        h: usize,
        day: Option<u32>,
        cites: Vec<String>,
    ) -> Document {
        let updated_at = day.map(|d| {
            NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + chrono::Days::new(u64::from(d))
        });
        let lifecycle = LIFECYCLES[lc];
        // A deprecation logged after updated_at: the index snapshot still says active.
        let lifecycle_log = match (snap_later, updated_at) {
            (true, Some(at)) if lifecycle != Lifecycle::Active => vec![
                LifecycleEntry {
                    date: at,
                    lifecycle: Lifecycle::Active,
                    by: None,
                },
                LifecycleEntry {
                    date: at + chrono::Days::new(30),
                    lifecycle,
                    by: None,
                },
            ],
            _ => Vec::new(),
        };
        Document {
            id: format!("d{:02}", i),
            title: format!("doc {i}"),
            lifecycle,
            history: HISTORIES[h],
            updated_at,
            topic: String::new(),
            superseded_by: None,
            cites,
            lifecycle_log,
            sections: vec![Section {
                heading: "h".into(),
                body: "b".into(),
            }],
            source: "t".into(),
        }
    }

    fn weights() -> impl Strategy<Value = Weights> {
        (0u32..=20, 0u32..=20, 0u32..=20, 0u32..=20).prop_map(|(s, d, a, e)| {
            let f = |u: u32| (u * 5) as f32 / 100.0;
            Weights {
                superseded: f(s),
                deprecated: f(s.max(d)),
                amendment: f(a),
                editorial_only: f(a.max(e)),
            }
        })
    }

    proptest! {
        /// The fast rank of every candidate equals its position after the engine's full sort,
        /// under both wirings, including exact score ties (scores drawn from a few values).
        #[test]
        fn fast_ranks_equal_the_engines_sort(
            spec in proptest::collection::vec((0usize..3, any::<bool>(), 0usize..3, proptest::option::of(0u32..5), 0u8..4, 0usize..6), 1..14),
            w in weights(),
        ) {
            let n = spec.len();
            let docs: Vec<Document> = spec
                .iter()
                .enumerate()
                .map(|(i, &(lc, late, h, day, _, cite))| doc(i, lc, late, h, day, if cite < n && cite != i { vec![format!("d{cite:02}")] } else { vec![] }))
                .collect();
            let corpus = Corpus::new("t", docs).unwrap();
            // A first-stage list: score descending, so a list position is not a document index.
            let mut hits: Vec<Hit> = spec.iter().enumerate().map(|(i, s)| Hit { doc: i, score: f32::from(s.4) * 0.5, section: 0 }).collect();
            ranklab_engine::ranking::sort_hits(&mut hits, |d| corpus.id(d));
            let c = Candidates::new(&corpus, &hits);
            let cur = current::rank(&corpus, &hits, &w);
            let leg = legacy::rank(&corpus, "q", &hits, &w);
            for (t, h) in hits.iter().enumerate() {
                prop_assert_eq!(c.position(h.doc), Some(t));
                prop_assert_eq!(c.rank(Wiring::Current, t, &w), cur.iter().position(|x| x.doc == h.doc).unwrap() + 1);
                prop_assert_eq!(c.rank(Wiring::Legacy, t, &w), leg.iter().position(|x| x.doc == h.doc).unwrap() + 1);
            }
        }
    }

    /// Issue 41: tune's suite recall@k is `run`'s (relevant in the top k over all relevant),
    /// not "the first relevant record is in the top k". Hand-computed: three active records
    /// ranked d00, d01, d02 by score; the task judges d00 and d02 relevant and a third record
    /// that was not retrieved, k = 2: one of three relevant in the top 2, recall 1/3, while
    /// its first relevant record is at rank 1 (found in the top 2).
    #[test]
    fn task_recall_counts_every_relevant_record() {
        let corpus = Corpus::new(
            "t",
            (0..3)
                .map(|i| doc(i, 0, false, 0, Some(1), vec![]))
                .collect(),
        )
        .unwrap();
        let hits: Vec<Hit> = (0..3)
            .map(|i| Hit {
                doc: i,
                score: 3.0 - i as f32,
                section: 0,
            })
            .collect();
        let t = TaskQuery {
            candidates: Candidates::new(&corpus, &hits),
            targets: vec![0, 2],
            relevant: 3,
        };
        let w = Weights {
            superseded: 0.3,
            deprecated: 0.6,
            amendment: 0.05,
            editorial_only: 0.15,
        };
        assert_eq!(t.rank(&w), Some(1));
        assert!((t.recall(&w, 2) - 1.0 / 3.0).abs() < 1e-12);
        assert!((t.recall(&w, 3) - 2.0 / 3.0).abs() < 1e-12);
        let problem = crate::tune::Problem {
            merges: Vec::new(),
            train: 0,
            pairs: Vec::new(),
            tasks: vec![t],
            k: 2,
        };
        let f = problem.task_figures(&w);
        assert_eq!((f.n, f.hits), (1, 1), "found in the top 2");
        assert!((f.recall() - 1.0 / 3.0).abs() < 1e-12, "{}", f.recall());
    }

    #[test]
    fn pair_outcomes_follow_retrieval() {
        let corpus = Corpus::new(
            "t",
            vec![
                doc(0, 0, false, 0, Some(1), vec![]),
                doc(1, 2, false, 0, Some(2), vec![]),
            ],
        )
        .unwrap();
        let hits = vec![
            Hit {
                doc: 1,
                score: 2.0,
                section: 0,
            },
            Hit {
                doc: 0,
                score: 1.0,
                section: 0,
            },
        ];
        let c = Candidates::new(&corpus, &hits);
        let p = PairQuery {
            id: "p".into(),
            candidates: c,
            above: Some(1),
            below: Some(0),
            legacy: Outcome::Holds,
            current: Outcome::Holds,
        };
        // Deprecated d01 leads by the whole normalized range (1.0); a penalty above 1 flips it.
        let w = |d: f32| Weights {
            superseded: 0.0,
            deprecated: d,
            amendment: 0.0,
            editorial_only: 0.0,
        };
        assert_eq!(p.outcome(Wiring::Current, &w(0.5)), Outcome::Inverted);
        assert_eq!(p.outcome(Wiring::Current, &w(1.05)), Outcome::Holds);
        assert!(p.passes(&w(1.05)) && !p.passes(&w(0.5)));
        let missing = PairQuery {
            above: None,
            ..p.clone()
        };
        assert_eq!(missing.outcome(Wiring::Current, &w(2.0)), Outcome::Inverted);
        let only_above = PairQuery { below: None, ..p };
        assert_eq!(only_above.outcome(Wiring::Legacy, &w(0.0)), Outcome::Holds);
    }
}
