//! A deterministic, model-free [`CrossEncoder`] for unit tests: word overlap.
//!
//! Never used for anything a report shows. The score of a pair is the number of distinct
//! lowercase query words found in the passage, minus a hundredth of the passage's word count
//! (so shorter exact matches win), a function of the pair alone.

use std::collections::HashSet;

use super::CrossEncoder;
use crate::Result;

/// The test stand-in for a cross-encoder.
#[derive(Debug, Clone)]
pub struct OverlapCrossEncoder {
    identity: String,
    pairs: usize,
    /// Passages containing this word score NaN (to test the error path).
    poison: Option<String>,
}

fn words(s: &str) -> impl Iterator<Item = String> + '_ {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

impl OverlapCrossEncoder {
    /// The stand-in with identity `overlap`.
    pub fn new() -> OverlapCrossEncoder {
        OverlapCrossEncoder::with_identity("overlap")
    }

    /// A stand-in with its own identity (to test cache separation).
    pub fn with_identity(name: &str) -> OverlapCrossEncoder {
        OverlapCrossEncoder {
            identity: format!("{name} (test stand-in)"),
            pairs: 0,
            poison: None,
        }
    }

    /// Scores NaN for any passage containing `word`.
    pub fn poisoned(word: &str) -> OverlapCrossEncoder {
        OverlapCrossEncoder {
            poison: Some(word.to_lowercase()),
            ..OverlapCrossEncoder::new()
        }
    }

    /// Pairs scored so far.
    pub fn pairs(&self) -> usize {
        self.pairs
    }

    /// The score of one pair.
    pub fn pair_score(&self, query: &str, passage: &str) -> f32 {
        let p: HashSet<String> = words(passage).collect();
        if self.poison.as_ref().is_some_and(|w| p.contains(w)) {
            return f32::NAN;
        }
        let q: HashSet<String> = words(query).collect();
        q.intersection(&p).count() as f32 - words(passage).count() as f32 / 100.0
    }
}

impl Default for OverlapCrossEncoder {
    fn default() -> Self {
        OverlapCrossEncoder::new()
    }
}

impl CrossEncoder for OverlapCrossEncoder {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        self.pairs += passages.len();
        Ok(passages.iter().map(|p| self.pair_score(query, p)).collect())
    }
}
