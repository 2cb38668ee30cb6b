//! The clap types several commands share, and the command-line face of domain types: the flags
//! live here, in `cmd/`, and the modules below read plain values from them.
//!
//! - [`ClusterArgs`]: `--cluster`, `--shard-records`, `--ray-python` (`beir`, `run`, `bench`);
//! - [`RecordingArgs`]: `--record`, `--from-recording`, `--recordings` (`run`, `bench`, `gate`);
//! - `--format` of `compare`: [`crate::compare::Format`] as a [`clap::ValueEnum`] ([`FormatArg`]);
//! - [`JudgmentsArgs`]: `--judgments human|all` (`run`, `bench`), [`Selection`] as a
//!   [`clap::ValueEnum`].

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::builder::PossibleValue;
use ranklab_engine::models::remote::Remote;

use crate::cluster::Ray;
use crate::compare::Format;
use crate::external::Mode;
use crate::judgments::Selection;

/// `--cluster`, `--shard-records`, `--ray-python`: shared by `beir`, `run` and `bench`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ClusterArgs {
    /// Compute the vectors and cross-encoder scores missing from the cache on a Ray cluster
    /// (ray://HOST:PORT, the head's Ray Client port): ranklab splits them into shards, runs
    /// `ranklab work` on the nodes through harness/ray/driver.py, verifies every returned record
    /// file and merges it into the cache; results are bit-identical to a local run. The binary
    /// and $RANKLAB_CACHE/models must be on a path every node reads.
    #[arg(long, value_name = "ray://HOST:PORT")]
    pub(crate) cluster: Option<String>,
    /// Records (texts or pairs) per shard with --cluster; a query's pairs are never split.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) shard_records: u64,
    /// The Python that has ray==2.40.0 (default: $RANKLAB_RAY_PYTHON, else python3).
    #[arg(long)]
    pub(crate) ray_python: Option<PathBuf>,
}

impl ClusterArgs {
    /// The cluster `--cluster` names, checked ([`Ray::connect`]); None without the flag.
    pub(crate) fn remote(&self) -> Result<Option<std::sync::Arc<dyn Remote>>> {
        let Some(address) = &self.cluster else {
            return Ok(None);
        };
        let ray = Ray::connect(
            address,
            self.ray_python.clone(),
            self.shard_records as usize,
        )?;
        Ok(Some(std::sync::Arc::new(ray)))
    }
}

/// `--record` / `--from-recording`, shared by `run`, `bench` and `gate`.
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct RecordingArgs {
    /// Ask external engines and keep every request and response beside each run
    /// (`runs/<configuration>.recording.json`).
    #[arg(long)]
    pub(crate) record: bool,
    /// Read external engines' responses from the recordings beside the runs instead of asking
    /// them (no engine needs to run); the reports are byte-identical to the recorded run's.
    #[arg(long, conflicts_with = "record")]
    pub(crate) from_recording: bool,
    /// Root of the report tree whose `<suite>/runs/` hold the recordings (default: the
    /// `--reports` tree), so `--from-recording` can render into another, empty tree.
    #[arg(long, value_name = "DIR")]
    pub(crate) recordings: Option<PathBuf>,
}

impl RecordingArgs {
    /// The report tree the recordings are read from (`--recordings`, else `reports`).
    pub(crate) fn recordings_root<'a>(&'a self, reports: &'a Path) -> &'a Path {
        self.recordings.as_deref().unwrap_or(reports)
    }

    /// The mode these flags ask for.
    pub(crate) fn mode(&self) -> Mode {
        match (self.record, self.from_recording) {
            (true, _) => Mode::Record,
            (_, true) => Mode::FromRecording,
            _ => Mode::Live,
        }
    }
}

/// `ranklab compare --format`: the evaluator's [`Format`] as a command-line value (the
/// evaluator crate does not depend on clap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FormatArg(pub(crate) Format);

/// `ranklab compare --format`: the values and their help, as `--help` lists them.
impl clap::ValueEnum for FormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        &[
            FormatArg(Format::Md),
            FormatArg(Format::Csv),
            FormatArg(Format::Json),
        ]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self.0 {
            Format::Md => {
                PossibleValue::new("md").help("Markdown tables, the reading and the method notes")
            }
            Format::Csv => PossibleValue::new("csv")
                .help("CSV: the per-measure table (with --per-query: the per-query table instead)"),
            Format::Json => PossibleValue::new("json").help(
                "JSON: one object with the settings, the per-measure rows, the reading, the per-query rows",
            ),
        })
    }
}

/// `--judgments human|all`: which grades of `judgments.yaml` a run takes (`run`, `bench`).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct JudgmentsArgs {
    /// Which grades of judgments.yaml the tasks take: people's only (LLM grades change
    /// nothing), or also LLM grades of documents no person judged.
    #[arg(long = "judgments", value_name = "WHICH", default_value = "human")]
    pub(crate) judgments: Selection,
}

/// `--judgments`: the values and their help, as `--help` lists them.
impl clap::ValueEnum for Selection {
    fn value_variants<'a>() -> &'a [Self] {
        &[Selection::Human, Selection::All]
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        Some(match self {
            Selection::Human => PossibleValue::new("human")
                .help("people's grades only (suite.yaml and judgments.yaml); the default"),
            Selection::All => PossibleValue::new("all")
                .help("also the LLM grades of documents no person judged (`ranklab judge --llm`)"),
        })
    }
}
