//! Reports: what `ranklab run` and `ranklab bench` write under `reports/<suite>/`.
//!
//! - `runs/<configuration>.trec`: each configuration's ranked lists in TREC run format;
//! - `qrels.txt`: the suite's judgments in TREC qrels format, so any TREC tool can check us;
//! - `<experiment>.md` / `.csv` / `.json`: the metrics table (configuration x measure) and the
//!   per-task table (rank of the first expected document per configuration).
//!
//! Nothing that varies between runs (timings, dates, absolute paths) goes into these files: a
//! second run on unchanged inputs rewrites the same bytes. The one section with timings renders
//! them from a committed file that a run only reads (`costs.json`, [`costs`]). Every file is
//! written atomically.

pub mod adr;
pub mod atomic;
mod checks;
pub mod configs;
pub mod costs;
pub mod decision;
pub mod explorer;
pub mod external;
pub mod finetune;
pub mod llm_judgments;
mod paired_section;
pub mod plots;
mod render;
pub mod scale;
pub mod stats_section;
mod suite_report;
mod tables;
mod trec_files;
pub mod tuned;
pub use ranklab_eval::table;
pub mod warranty;
mod write;

pub use crate::paired::beside::PairedResult;
pub use crate::replay::values::{first_relevant_rank, per_task_values, suite_measures, MeasureSet};
pub use crate::root::shown;
pub use crate::suite::{configuration_file_names, experiment_file_names, OTHER_WRITERS};

pub use checks::{verdict_line, Rendered};
pub use render::{render, render_with};
pub use suite_report::{for_person, print_report, print_report_as, SuiteReport};
pub use tables::{first_ranks, metrics_table, tasks_markdown_table, tasks_table, Firsts, Ranks};
pub use trec_files::{qrels_file, run_file};
pub use write::{check_files, write_all, write_all_with_costs};
