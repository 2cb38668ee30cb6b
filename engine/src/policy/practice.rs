//! The practice file: the four penalty weights, kept in the repo, validated on load.
//!
//! ```yaml
//! tuned: "2026-11-30, ranklab tune --window-days 90 on tasks/brain/merges.yaml"
//! weights: { superseded: 0.30, deprecated: 0.60, amendment: 0.05, editorial_only: 0.15 }
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
    /// Where it was loaded from.
    #[serde(skip)]
    pub path: PathBuf,
}

impl Practice {
    /// Loads and validates a practice file.
    pub fn load(path: &Path) -> Result<Practice> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
            Error::parse(path, line, "invalid UTF-8; save the file as UTF-8")
        })?;
        let text = text.trim_start_matches('\u{feff}');
        let mut p: Practice =
            yaml_serde::from_str(text).map_err(|e| crate::error::yaml_in(path, 0, text, e))?;
        p.path = path.to_path_buf();
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
        format!(
            "# Lifecycle/history penalty weights, as fractions of the normalized first-stage score.\n# Validated on load: non-negative, deprecated >= superseded, editorial_only >= amendment.\ntuned: {:?}\nweights:\n  superseded: {:.2}\n  deprecated: {:.2}\n  amendment: {:.2}\n  editorial_only: {:.2}\n",
            self.tuned, self.weights.superseded, self.weights.deprecated, self.weights.amendment, self.weights.editorial_only
        )
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
            path: p.clone(),
        };
        std::fs::write(&p, pr.to_yaml()).unwrap();
        assert_eq!(Practice::load(&p).unwrap(), pr);
    }
}
