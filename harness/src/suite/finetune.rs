//! The `finetune:` settings of a rerank stage.

use serde::Deserialize;

/// `finetune: { folds, epochs, negatives, seed }` of a rerank stage: the suite's tasks split
/// into `folds` by a seeded shuffle, each fold's tasks reranked by a model trained on the
/// others' pairs (and the suite's merges) for `epochs`, with `negatives` hard negatives per
/// positive. `lr` (default 2e-5) and `batch` (pairs per step, default 16) are optional.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinetuneSpec {
    /// How many folds the tasks are split into (at least 2).
    pub folds: usize,
    /// Passes over the training pairs.
    pub epochs: usize,
    /// Hard negatives per positive.
    pub negatives: usize,
    /// Seed of the split and of the pairs' order.
    #[serde(default = "default_finetune_seed")]
    pub seed: u64,
    /// Peak learning rate.
    #[serde(default)]
    pub lr: Option<f64>,
    /// Pairs per optimizer step.
    #[serde(default)]
    pub batch: Option<usize>,
}

fn default_finetune_seed() -> u64 {
    42
}

impl FinetuneSpec {
    /// What is wrong with the numbers, for a message.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.folds < 2 {
            return Err(format!(
                "`finetune: folds: {}`: cross-validation needs at least 2 folds",
                self.folds
            ));
        }
        if self.epochs == 0 || self.negatives == 0 || self.batch == Some(0) {
            return Err("`finetune:` needs epochs, negatives and batch of at least 1".into());
        }
        if let Some(lr) = self.lr {
            if !(lr.is_finite() && lr > 0.0) {
                return Err(format!("`finetune: lr: {lr}` must be a positive number"));
            }
        }
        Ok(())
    }
}
