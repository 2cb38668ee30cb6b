//! Lifecycle and history in the score: the penalty weights, and the two wirings that apply them.
//!
//! - [`current`]: `rerank_cited_hits(search_score, lifecycle, history, weights) -> FinalScore`,
//!   with `final = search_score - (lifecycle_penalty + history_penalty)` on the record's state
//!   read at rank time. This is the shipped wiring.
//! - [`legacy`]: the old `rerank_cited_hits(query, hits)`, kept as a named legacy path so the
//!   paired tests that prove it wrong can run forever. Its hits carry a score frozen at index
//!   time (the index snapshot's demotion baked in) and a citation boost; nothing is re-read.
//!
//! `search_score` is the record's first-stage score min-max normalized over the candidate list
//! ([`normalized_scores`]): the best candidate 1, the worst 0 (all 1 when they tie). So a weight
//! reads as a fraction of the candidate list's score range and means the same in both wirings.

pub mod current;
pub mod legacy;
pub mod practice;

use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::corpus::{History, Lifecycle};
use crate::ranking::Hit;

pub use practice::{Practice, Previous, Provenance, HISTORY_LEN};

/// How lifecycle and history reach the score (issue 5): which of the two wirings re-sorts the
/// first stage's list, if any. The one representation: experiments files name it (`wiring:
/// none | legacy | current`), replay applies it, the paired assertions and the tuner re-sort
/// under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Wiring {
    /// No lifecycle/history policy: the first stage's order.
    #[default]
    None,
    /// [`legacy`]: the old `rerank_cited_hits(query, hits)`, index snapshot and citation boost.
    Legacy,
    /// [`current`]: `rerank_cited_hits(query, title, lifecycle, history)`, read at rank time.
    Current,
}

impl Wiring {
    /// The name experiments files and reports use: `none`, `legacy`, `current`.
    pub fn name(self) -> &'static str {
        match self {
            Wiring::None => "none",
            Wiring::Legacy => "legacy",
            Wiring::Current => "current",
        }
    }
}

impl std::fmt::Display for Wiring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The four penalty weights.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Weights {
    /// Penalty of a superseded record.
    pub superseded: f32,
    /// Penalty of a deprecated record (>= superseded).
    pub deprecated: f32,
    /// Penalty of an amendment.
    pub amendment: f32,
    /// Penalty of an editorial-only pass-through (>= amendment).
    pub editorial_only: f32,
}

impl Weights {
    /// No demotion at all.
    pub const ZERO: Weights = Weights {
        superseded: 0.0,
        deprecated: 0.0,
        amendment: 0.0,
        editorial_only: 0.0,
    };

    /// Penalty for a lifecycle: 0 for active.
    pub fn lifecycle_penalty(&self, l: Lifecycle) -> f32 {
        match l {
            Lifecycle::Active => 0.0,
            Lifecycle::Superseded => self.superseded,
            Lifecycle::Deprecated => self.deprecated,
        }
    }

    /// Penalty for a history: 0 for first-class.
    pub fn history_penalty(&self, h: History) -> f32 {
        match h {
            History::FirstClass => 0.0,
            History::Amendment => self.amendment,
            History::EditorialOnly => self.editorial_only,
        }
    }

    /// The first rule the weights break, if any: every weight finite and non-negative,
    /// deprecated >= superseded, editorial_only >= amendment.
    pub fn violation(&self) -> Option<String> {
        for (name, w) in [
            ("superseded", self.superseded),
            ("deprecated", self.deprecated),
            ("amendment", self.amendment),
            ("editorial_only", self.editorial_only),
        ] {
            if !w.is_finite() || w < 0.0 {
                return Some(format!(
                    "weight `{name}` is {w}; weights must be non-negative numbers"
                ));
            }
        }
        if self.deprecated < self.superseded {
            return Some(format!(
                "weight `deprecated` ({}) is below `superseded` ({}); a deprecated record must be demoted at least as much",
                self.deprecated, self.superseded
            ));
        }
        if self.editorial_only < self.amendment {
            return Some(format!(
                "weight `editorial_only` ({}) is below `amendment` ({}); an editorial-only pass must be demoted at least as much",
                self.editorial_only, self.amendment
            ));
        }
        None
    }
}

/// The one number that orders a list under the current wiring.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FinalScore(pub f32);

impl FinalScore {
    /// Descending by score (total order on f32).
    pub fn cmp_desc(&self, other: &FinalScore) -> Ordering {
        other.0.total_cmp(&self.0)
    }
}

/// Min-max normalization of the candidates' first-stage scores to [0, 1], in hit order.
/// The best candidate gets 1 and the worst 0; when all scores are equal, every candidate gets 1.
pub fn normalized_scores(hits: &[Hit]) -> Vec<f32> {
    let max = hits
        .iter()
        .map(|h| h.score)
        .fold(f32::NEG_INFINITY, f32::max);
    let min = hits.iter().map(|h| h.score).fold(f32::INFINITY, f32::min);
    hits.iter()
        .map(|h| {
            if max > min {
                (h.score - min) / (max - min)
            } else {
                1.0
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn penalties_follow_the_weights() {
        let w = Weights {
            superseded: 0.3,
            deprecated: 0.6,
            amendment: 0.05,
            editorial_only: 0.15,
        };
        assert_eq!(w.lifecycle_penalty(Lifecycle::Active), 0.0);
        assert_eq!(w.lifecycle_penalty(Lifecycle::Deprecated), 0.6);
        assert_eq!(w.history_penalty(History::EditorialOnly), 0.15);
        assert!(w.violation().is_none());
        assert!(Weights {
            deprecated: 0.1,
            ..w
        }
        .violation()
        .unwrap()
        .contains("deprecated"));
        assert!(Weights {
            amendment: -0.1,
            ..w
        }
        .violation()
        .unwrap()
        .contains("amendment"));
    }

    #[test]
    fn normalization_spans_zero_to_one() {
        let hits = [2.0, 1.0, 0.5].map(|s| Hit {
            doc: 0,
            score: s,
            section: 0,
        });
        assert_eq!(normalized_scores(&hits), vec![1.0, 1.0 / 3.0, 0.0]);
        let flat = [1.0, 1.0].map(|s| Hit {
            doc: 0,
            score: s,
            section: 0,
        });
        assert_eq!(normalized_scores(&flat), vec![1.0, 1.0]);
    }
}

/// Hand-built records for the wirings' unit tests.
#[cfg(test)]
pub(crate) mod fixture {
    use chrono::NaiveDate;

    use super::Weights;
    use crate::corpus::{Corpus, Document, History, Lifecycle, LifecycleEntry};
    use crate::ranking::Hit;

    /// The weights both wirings' tests rank with: exact binary fractions, so every expected
    /// score computed by hand is exact in f32.
    pub(crate) const W: Weights = Weights {
        superseded: 0.25,
        deprecated: 0.5,
        amendment: 0.125,
        editorial_only: 0.25,
    };

    /// A record with no sections; `log` is `(date, lifecycle)` entries.
    pub(crate) fn doc(
        id: &str,
        lifecycle: Lifecycle,
        history: History,
        updated_at: Option<&str>,
        cites: &[&str],
        log: &[(&str, Lifecycle)],
    ) -> Document {
        let date = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        Document {
            id: id.into(),
            title: id.into(),
            lifecycle,
            history,
            updated_at: updated_at.map(date),
            topic: String::new(),
            superseded_by: None,
            cites: cites.iter().map(|c| c.to_string()).collect(),
            lifecycle_log: log
                .iter()
                .map(|(d, l)| LifecycleEntry {
                    date: date(d),
                    lifecycle: *l,
                    by: None,
                })
                .collect(),
            sections: Vec::new(),
            source: format!("{id}.md").into(),
        }
    }

    /// A corpus of `docs`.
    pub(crate) fn corpus(docs: Vec<Document>) -> Corpus {
        Corpus::new("fixture", docs).unwrap()
    }

    /// First-stage candidates `(doc index, score)`, in that order.
    pub(crate) fn hits(scores: &[(usize, f32)]) -> Vec<Hit> {
        scores
            .iter()
            .map(|&(doc, score)| Hit {
                doc,
                score,
                section: 0,
            })
            .collect()
    }

    /// `(id, score)` of a ranked list.
    pub(crate) fn ranked<'a>(corpus: &'a Corpus, hits: &[Hit]) -> Vec<(&'a str, f32)> {
        hits.iter().map(|h| (corpus.id(h.doc), h.score)).collect()
    }
}
