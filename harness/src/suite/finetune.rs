//! The `finetune:` settings of a rerank stage.

use serde::Deserialize;

/// `finetune: { folds, epochs, negatives, seed }` of a rerank stage: the suite's tasks split
/// into `folds` by a seeded shuffle, each fold's tasks reranked by a model trained on the
/// others' pairs (and the suite's merges) for `epochs`, with `negatives` hard negatives per
/// positive. `lr` (default 2e-5) and `batch` (pairs per step, default 16) are optional, and so is
/// `precision` (how the fold models score: `float`, the default, or `int8`).
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
    /// How the fold models score their pairs: absent or `float`, the float model in candle
    /// (`rerank::finetuned`); `int8`, the fold model exported into the pinned int8 graph and run
    /// by ONNX Runtime like the off-the-shelf model (`rerank::int8`: about 10× as fast, scores
    /// that depend on the CPU's int8 kernel). Training is the same, so the two share fold models.
    #[serde(default, deserialize_with = "precision")]
    pub precision: Option<Precision>,
}

/// How a fine-tuned stage's fold models score (`finetune: { precision: .. }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// The float model in candle.
    Float,
    /// The int8 export through ONNX Runtime.
    Int8,
}

/// `float` reads as absent, so that a stage that spells out the default keeps its identity
/// (the gate's configuration fingerprint leaves absent fields out).
fn precision<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Precision>, D::Error> {
    Ok(match Precision::deserialize(d)? {
        Precision::Float => None,
        p => Some(p),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<FinetuneSpec, String> {
        yaml_serde::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn precision_is_float_when_absent_or_spelled_out_and_int8_when_asked() {
        let base = "{ folds: 5, epochs: 1, negatives: 3 }";
        let absent = parse(base).unwrap();
        assert_eq!(absent.precision, None);
        let float = parse("{ folds: 5, epochs: 1, negatives: 3, precision: float }").unwrap();
        // Spelled out, the default is the same stage (and the same gate fingerprint).
        assert_eq!(float, absent);
        assert_eq!(format!("{float:?}"), format!("{absent:?}"));
        let int8 = parse("{ folds: 5, epochs: 1, negatives: 3, precision: int8 }").unwrap();
        assert_eq!(int8.precision, Some(Precision::Int8));
        let e = parse("{ folds: 5, epochs: 1, negatives: 3, precision: int4 }").unwrap_err();
        assert!(e.contains("int4"), "{e}");
    }
}
