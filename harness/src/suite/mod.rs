//! Task suites (`tasks/<suite>/suite.yaml`) and experiment files (`experiments.yaml`).
//!
//! Both are parsed with `yaml_serde` into closed, `deny_unknown_fields` structures (a typo is an
//! error naming the field, not a silently ignored setting), then checked: unique task ids and
//! configuration names, k >= 1, a baseline that exists, expected ids that exist in the corpus.
//! Every error names the file and line. The format is in `docs/formats.md`.

/// Where messages about a file's format send a user (`ranklab help formats` prints
/// docs/formats.md; `help_formats` is the CLI's, which `suite` must not import).
pub(crate) const SEE_FORMATS: &str = "see `ranklab help formats`";

pub use crate::judgments::{JudgmentCounts, Selection};
pub use crate::root::read_yaml;

mod agreement;
pub mod beir;
mod configuration;
mod depth;
mod discover;
pub mod distractors;
mod experiments;
mod finetune;
pub mod fusion;
mod judging;
pub mod learned;
mod llm_endpoint;
pub(crate) mod merges;
mod names;
mod rerank;
mod retriever;
mod suite_file;
mod task;

pub use agreement::AgreementPair;
pub use configuration::{Configuration, DEFAULT_DEPTH, DEFAULT_EMBEDDER};
pub use depth::check_depth;
pub use discover::{experiment_files, suites};
pub use experiments::Experiments;
pub use finetune::{FinetuneSpec, Precision};
pub(crate) use judging::merge_judgments;
pub use llm_endpoint::{LlmApi, LlmEndpoint};
pub use names::{
    check_named_beside_written, check_names, configuration_file_names, experiment_file_names,
    load_experiments, recording_file_name, rerank_recording_file_name, OTHER_WRITERS,
};
pub use rerank::{RerankSpec, Scorer, MAX_BATCH};
pub use retriever::Retriever;
pub use suite_file::{corpus_ids, shipped, Suite};
pub use task::Task;

/// Largest accepted cutoff; larger values are almost certainly a typo.
pub const MAX_K: usize = 10_000;
