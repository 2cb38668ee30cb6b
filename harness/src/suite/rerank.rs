//! A configuration's second stage (`rerank:`): what reorders the shortlist, and how the YAML
//! form is checked.

use std::path::PathBuf;

use serde::Deserialize;

use super::{FinetuneSpec, LlmApi, LlmEndpoint};

/// A second stage: a cross-encoder, a late-interaction model, an in-process LLM or an LLM
/// behind an OpenAI-compatible endpoint reorders the first `shortlist` candidates.
///
/// Written as `{ model: ID, shortlist: N }` (cross-encoder or late-interaction model),
/// `{ llm: ID, shortlist: N, prompt: FILE }` (an LLM run in-process) or
/// `{ llm: { endpoint: URL, model: NAME, api: completions | chat | rerank }, shortlist: N }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RerankFields")]
pub struct RerankSpec {
    /// The model id (see `ranklab models list`), or the endpoint's model name.
    pub model: String,
    /// What scores the pairs.
    pub scorer: Scorer,
    /// The LLM prompt's user-message template (`llm:` only), relative to the experiments file;
    /// `None`: the documented default (`ranklab_engine::rerank::prompt`).
    pub prompt: Option<PathBuf>,
    /// How many fused candidates it reorders.
    pub shortlist: usize,
    /// Pairs per model run (default 1: every score independent of the others, so scores and
    /// reports are the same whatever else is scored). Larger batches pad pairs to the longest
    /// of the batch and can move logits in the last bits; they are cached apart.
    pub batch: Option<usize>,
    /// Fine-tune the model on the suite's own tasks first, cross-validated by task
    /// (`model:` only; see [`crate::finetune`]).
    pub finetune: Option<FinetuneSpec>,
    /// `interpolate: α`: the shortlist ordered by α · reranker + (1 − α) · first stage, both
    /// normalized over the shortlist (`ranklab_engine::fusion::interpolate`); `None`: by the
    /// reranker alone.
    pub interpolate: Option<f64>,
}

/// What scores a rerank stage's pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scorer {
    /// A model of the catalogue run in-process by ONNX Runtime (`model:`).
    Model,
    /// An LLM of the catalogue run in-process (`llm: ID`): yes/no logits.
    Llm,
    /// An LLM (or a `/rerank` service) behind an HTTP endpoint (`llm: { endpoint: .. }`).
    Endpoint(LlmEndpoint),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RerankFields {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    llm: Option<LlmField>,
    #[serde(default)]
    prompt: Option<PathBuf>,
    shortlist: usize,
    #[serde(default)]
    batch: Option<usize>,
    #[serde(default)]
    finetune: Option<FinetuneSpec>,
    #[serde(default)]
    interpolate: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum LlmField {
    Id(String),
    Endpoint(LlmEndpoint),
}

impl TryFrom<RerankFields> for RerankSpec {
    type Error = String;

    fn try_from(f: RerankFields) -> std::result::Result<RerankSpec, String> {
        let (model, scorer) = match (f.model, f.llm) {
            (Some(m), None) => (m, Scorer::Model),
            (None, Some(LlmField::Id(id))) => (id, Scorer::Llm),
            (None, Some(LlmField::Endpoint(e))) => (e.model.clone(), Scorer::Endpoint(e)),
            (Some(_), Some(_)) => {
                return Err("a rerank stage names either `model:` (a cross-encoder or late-interaction model) or `llm:`, not both"
                    .into())
            }
            (None, None) => {
                return Err("a rerank stage needs `model: ID` or `llm: ID` (or `llm: { endpoint, model, api }`); see `ranklab models list`"
                    .into())
            }
        };
        if scorer == Scorer::Model && f.prompt.is_some() {
            return Err("`prompt:` belongs to an `llm:` rerank stage, not to `model:`".into());
        }
        if let Scorer::Endpoint(e) = &scorer {
            e.check()?;
            if e.api == LlmApi::Rerank && f.prompt.is_some() {
                return Err(
                    "`prompt:` has no effect on `api: rerank` (a /rerank service scores \
                            the query and the passage itself); remove it"
                        .into(),
                );
            }
        }
        if scorer != Scorer::Model && f.batch.is_some() {
            return Err(
                "`batch:` belongs to a `model:` rerank stage; an LLM scores each \
                        (query, passage) pair in its own forward pass"
                    .into(),
            );
        }
        if let Some(ft) = &f.finetune {
            if scorer != Scorer::Model {
                return Err("`finetune:` belongs to a `model:` rerank stage (a cross-encoder); an LLM or an endpoint is not trained here".into());
            }
            if f.batch.is_some() {
                return Err("`batch:` and `finetune:` cannot be combined: a fine-tuned model scores one pair per forward pass".into());
            }
            ft.check()?;
        }
        Ok(RerankSpec {
            model,
            scorer,
            prompt: f.prompt,
            shortlist: f.shortlist,
            batch: f.batch,
            finetune: f.finetune,
            interpolate: f.interpolate,
        })
    }
}

/// Largest cross-encoder batch accepted.
pub const MAX_BATCH: usize = 1024;

impl RerankSpec {
    /// Pairs per model run.
    pub fn batch(&self) -> usize {
        self.batch.unwrap_or(1)
    }

    /// The name of the loaded scorer this stage uses: the model id, with the batch size when it
    /// is not 1 (each distinct batch size is a separately loaded and cached model), with the
    /// prompt file when one is named, or the endpoint; a fine-tuned stage with its settings
    /// (and `int8` when its fold models score as int8 exports).
    pub fn model_key(&self) -> String {
        let mut key = match &self.scorer {
            Scorer::Endpoint(e) => format!("{} at {} ({})", self.model, e.endpoint, e.api.name()),
            _ => self.model.clone(),
        };
        if let Some(p) = &self.prompt {
            key.push_str(&format!(" (prompt {})", p.display()));
        }
        if let Some(f) = &self.finetune {
            key.push_str(&format!(
                " fine-tuned ({} folds, {} epochs, {} negatives, seed {}",
                f.folds, f.epochs, f.negatives, f.seed
            ));
            if let Some(lr) = f.lr {
                key.push_str(&format!(", lr {lr}"));
            }
            if let Some(b) = f.batch {
                key.push_str(&format!(", batch {b}"));
            }
            // The int8 exports are other scorers of the same fold models: a float and an int8
            // stage of one experiment are two models, not one (they shared this key, and so
            // one scorer and one set of scores).
            if f.precision == Some(super::Precision::Int8) {
                key.push_str(", int8");
            }
            key.push(')');
        }
        match self.batch() {
            1 => key,
            b => format!("{key} (batch {b})"),
        }
    }

    /// A rerank stage of cross-encoder `model` (`{ model, shortlist }`).
    pub fn cross_encoder(model: &str, shortlist: usize) -> RerankSpec {
        RerankSpec {
            model: model.to_string(),
            scorer: Scorer::Model,
            prompt: None,
            shortlist,
            batch: None,
            finetune: None,
            interpolate: None,
        }
    }
}
