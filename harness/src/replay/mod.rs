//! Replay: every task of a suite under every configuration of an experiment.
//!
//! One first stage, many configurations: per task, each distinct first-stage list (BM25 with
//! given parameters, the bi-encoder of a given model) is computed once, at the largest depth any
//! configuration asks for, and every configuration derives its ranking from those lists. Indexes
//! are built once per corpus. The output of a configuration for a task is a ranked list in the
//! total order of `ranklab_engine::ranking` (score descending, then id descending), so the run
//! files written from it rank identically when trec_eval reads them back.

pub mod costs;
pub(crate) mod features;
mod first_stage;
pub(crate) mod fused;
pub mod interpolated;
mod learned_models;
mod models;
mod output;
mod prefetch;
pub mod query_costs;
mod replayer;
pub(crate) mod rerankers;
mod run;
pub mod scale;
mod shortlists;
pub mod tuned;
pub mod values;

pub use first_stage::best_sections;
pub(crate) use first_stage::first_stage_of;
pub(crate) use models::open_scorer;
pub use output::{as_hits, ConfigRun, Ranked, Replay};
pub use replayer::{DenseModel, Replayer, RerankModel};
pub use run::{recorded_models, replay, replay_with, ReplayOptions, MODELS_FOLDER};
