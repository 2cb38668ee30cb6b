//! The practice file: the four penalty weights, kept in the repo, validated on load.
//!
//! ```yaml
//! tuned: "2026-11-30, ranklab tune --window-days 90 on tasks/brain/merges.yaml"
//! weights: { superseded: 0.30, deprecated: 0.60, amendment: 0.05, editorial_only: 0.15 }
//! provenance:   # optional: written by `ranklab tune --write`
//!   date: 2026-11-30
//!   window: 2026-09-01..=2026-11-30
//!   merges: 17
//!   newest_merge: M040
//!   objective_before: "MRR 0.8627, recall@5 1.0000"
//!   objective_after: "MRR 0.9412, recall@5 1.0000"
//!   held_out: "..."
//!   decision: "wrote the chosen weights: ..."   # or "kept the current weights ..."
//!   ranklab: 0.1.0
//! history:      # optional: the previous weights, newest first (at most HISTORY_LEN)
//!   - tuned: "initial hand-set weights"
//!     weights: { superseded: 0.30, deprecated: 0.60, amendment: 0.05, editorial_only: 0.15 }
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Weights;
use crate::{Error, Result};

/// A loaded practice file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Practice {
    /// When and how the weights were last tuned.
    pub tuned: String,
    /// The weights.
    pub weights: Weights,
    /// How the weights were last tuned (written by `ranklab tune --write`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Provenance>,
    /// The previous weights, newest first (at most [`HISTORY_LEN`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Previous>,
    /// Where it was loaded from.
    #[serde(skip)]
    pub path: PathBuf,
}

/// How many previous weights a practice file keeps.
pub const HISTORY_LEN: usize = 5;

/// The provenance of tuned weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// The tuning's as-of date.
    pub date: String,
    /// The window of merges, `FROM..=TO`.
    pub window: String,
    /// Merges in the window.
    pub merges: usize,
    /// Id of the newest merge of the window.
    pub newest_merge: String,
    /// The objective under the previous weights.
    pub objective_before: String,
    /// The objective under the written weights.
    pub objective_after: String,
    /// Held-out and rolling figures.
    pub held_out: String,
    /// What the tuning decided: the weights written or kept, and why.
    #[serde(default)]
    pub decision: String,
    /// The ranklab version that wrote them.
    pub ranklab: String,
}

/// Previous weights.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Previous {
    /// Their `tuned` line.
    pub tuned: String,
    /// The weights.
    pub weights: Weights,
}

impl Practice {
    /// Loads and validates a practice file.
    pub fn load(path: &Path) -> Result<Practice> {
        let (mut p, text): (Practice, String) = crate::yaml::read(path)?;
        p.path = path.to_path_buf();
        for (i, h) in p.history.iter().enumerate() {
            if let Some(v) = h.weights.violation() {
                let line = text
                    .lines()
                    .position(|l| l.trim_start().starts_with("history:"))
                    .map_or(0, |i| i + 1);
                return Err(Error::parse(
                    path,
                    line,
                    format!("history entry {} ({:?}): {v}", i + 1, h.tuned),
                ));
            }
        }
        if let Some(v) = p.weights.violation() {
            let key = v.split('`').nth(1).unwrap_or("weights");
            let line = text
                .lines()
                .position(|l| l.contains(key))
                .map_or(0, |i| i + 1);
            return Err(Error::parse(path, line, v));
        }
        Ok(p)
    }

    /// The file's text for these weights (fixed precision, stable key order).
    pub fn to_yaml(&self) -> String {
        let w = |w: &Weights, indent: &str| {
            format!(
                "{indent}superseded: {:.2}\n{indent}deprecated: {:.2}\n{indent}amendment: {:.2}\n{indent}editorial_only: {:.2}\n",
                w.superseded, w.deprecated, w.amendment, w.editorial_only
            )
        };
        let mut out = format!(
            "# Lifecycle/history penalty weights, as fractions of the normalized first-stage score.\n# Validated on load: non-negative, deprecated >= superseded, editorial_only >= amendment.\ntuned: {:?}\nweights:\n{}",
            self.tuned,
            w(&self.weights, "  ")
        );
        if let Some(p) = &self.provenance {
            out.push_str(&format!(
                "provenance:\n  date: {:?}\n  window: {:?}\n  merges: {}\n  newest_merge: {:?}\n  objective_before: {:?}\n  objective_after: {:?}\n  held_out: {:?}\n  decision: {:?}\n  ranklab: {:?}\n",
                p.date, p.window, p.merges, p.newest_merge, p.objective_before, p.objective_after, p.held_out, p.decision, p.ranklab
            ));
        }
        if !self.history.is_empty() {
            out.push_str("# The previous weights, newest first.\nhistory:\n");
            for h in &self.history {
                out.push_str(&format!(
                    "  - tuned: {:?}\n    weights:\n{}",
                    h.tuned,
                    w(&h.weights, "      ")
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_a_negative_weight_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("search-practice.yaml");
        std::fs::write(&p, "tuned: x\nweights:\n  superseded: -0.1\n  deprecated: 0.6\n  amendment: 0\n  editorial_only: 0.1\n").unwrap();
        let e = Practice::load(&p).unwrap_err().to_string();
        assert!(e.contains("superseded") && e.contains(":3"), "{e}");
    }

    #[test]
    fn rejects_a_missing_weight() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("search-practice.yaml");
        std::fs::write(
            &p,
            "tuned: x\nweights:\n  superseded: 0.1\n  deprecated: 0.6\n  amendment: 0\n",
        )
        .unwrap();
        assert!(Practice::load(&p)
            .unwrap_err()
            .to_string()
            .contains("editorial_only"));
    }

    #[test]
    fn round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("search-practice.yaml");
        let pr = Practice {
            tuned: "t".into(),
            weights: Weights {
                superseded: 0.3,
                deprecated: 0.6,
                amendment: 0.05,
                editorial_only: 0.15,
            },
            provenance: None,
            history: Vec::new(),
            path: p.clone(),
        };
        std::fs::write(&p, pr.to_yaml()).unwrap();
        assert_eq!(Practice::load(&p).unwrap(), pr);
        let full = Practice {
            provenance: Some(Provenance {
                date: "2026-11-30".into(),
                window: "2026-09-01..=2026-11-30".into(),
                merges: 17,
                newest_merge: "M040".into(),
                objective_before: "MRR 0.8627".into(),
                objective_after: "MRR 0.9412".into(),
                held_out: "held-out \"x\"".into(),
                decision: "kept the current weights: no candidate beats the practice file".into(),
                ranklab: "0.1.0".into(),
            }),
            history: vec![Previous {
                tuned: "initial".into(),
                weights: pr.weights,
            }],
            ..pr
        };
        std::fs::write(&p, full.to_yaml()).unwrap();
        assert_eq!(Practice::load(&p).unwrap(), full);
    }
}

#[cfg(test)]
mod formats_reference {
    /// docs/formats.md names every field of the practice file (read from the serde types).
    #[test]
    fn formats_md_names_every_practice_field() {
        let reference = include_str!("../../../docs/formats.md");
        crate::yaml::shape::documented::<super::Practice>(reference, "Practice file", &[]).unwrap();
    }
}
