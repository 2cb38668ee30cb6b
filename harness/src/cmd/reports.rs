//! What `ranklab run` and `ranklab bench` share: the flags saying how engines are asked
//! (recordings, cluster), replaying suites into reports, then writing them and printing the
//! summaries and the verdict line.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use ranklab_engine::models::remote::Remote;

use crate::external::Mode;
use crate::judgments::Selection;
use crate::report::{self, Rendered};

/// How engines are asked: external engines live or from their recordings, model work here or
/// on a cluster.
#[derive(Debug, clap::Args)]
pub(crate) struct EngineArgs {
    #[command(flatten)]
    pub recording: super::args::RecordingArgs,
    #[command(flatten)]
    pub cluster: super::args::ClusterArgs,
    #[command(flatten)]
    pub judgments: super::args::JudgmentsArgs,
}

/// A checked replay of suites: where recordings are read (or written), how external engines
/// are asked, and the cluster (one driver, one connection, for every suite).
pub(crate) struct Plan {
    /// `<RECORDINGS>`: a suite's recordings are in `<RECORDINGS>/<suite>/runs/`.
    recordings: PathBuf,
    /// Live, recording or replaying recordings.
    mode: Mode,
    /// The cluster of `--cluster`, if any (None: models run here).
    remote: Option<Arc<dyn Remote>>,
    /// Where the suites' cost files are, and whether to measure first.
    costs: report::costs::CostPlan,
    /// Which grades of `judgments.yaml` the suites take (`--judgments`).
    judgments: Selection,
}

impl Plan {
    /// Connects the cluster, if one is named; `reports` is the root of the report tree.
    pub(crate) fn new(args: &EngineArgs, reports: &Path) -> Result<Plan> {
        let remote = args.cluster.remote()?;
        Ok(Plan {
            recordings: args.recording.recordings_root(reports).to_path_buf(),
            mode: args.recording.mode(),
            remote,
            costs: report::costs::CostPlan {
                reports: reports.to_path_buf(),
                measure: None,
                command: String::new(),
                live: args.recording.mode() != Mode::FromRecording,
                prune: false,
            },
            judgments: args.judgments.judgments,
        })
    }

    /// Measures the rerank models' costs before rendering (`bench --measure-costs`): `models`,
    /// or (empty) every one whose identity has no measurement. Refused with `--cluster`: the
    /// time would be the cluster's, not the model's on this machine.
    /// Measures the rerank models `models` (none: those without a measurement) before
    /// rendering; `prune`: every experiment of each suite is rendered, so measurements no
    /// experiment uses are dropped.
    pub(crate) fn measuring(
        mut self,
        models: Vec<String>,
        command: String,
        prune: bool,
    ) -> Result<Plan> {
        if self.remote.is_some() {
            anyhow::bail!(
                "--measure-costs times the models on this machine; drop --cluster (the cluster's time is not the model's)"
            );
        }
        self.costs.measure = Some(models);
        self.costs.command = command;
        self.costs.prune = prune;
        Ok(self)
    }

    /// Replays the suite under its experiment files (none: every experiments*.yaml beside it but
    /// those that fine-tune a model) and renders its reports; nothing is written.
    pub(crate) fn render(&self, suite: &Path, experiments: &[PathBuf]) -> Result<Rendered> {
        report::render_suite(
            suite,
            experiments,
            &self.recordings,
            &self.mode,
            self.remote.as_ref(),
            &self.costs,
            self.judgments,
        )
    }
}

/// What to do with rendered reports.
pub(crate) struct Output {
    /// Write each suite's reports to `<REPORTS>/<suite>/` (false: `--dry-run`).
    pub write: bool,
    /// Print every whole Markdown report (false: a summary of each).
    pub print: bool,
    /// Begin each suite's defaults note with the suite's name (several suites).
    pub name_notes: bool,
    /// Print each report's headline table in its summary (false: title, decision, notes and the
    /// files written only, as `bench` prints many reports).
    pub tables: bool,
}

/// Per suite: its defaults note, its reports written to `<reports>/<suite>/` and their
/// summaries (or whole reports) printed; then the verdict line. The reports are written either
/// way (they show what failed); the exit code says it: 1 when a check failed.
pub(crate) fn emit(rendered: &[Rendered], reports: &Path, out: &Output) -> Result<ExitCode> {
    for rendered in rendered {
        let dir = reports.join(&rendered.suite.name);
        if let Some(note) = rendered.defaults_note() {
            if out.name_notes {
                println!("{}: {note}\n", rendered.suite.name);
            } else {
                println!("{note}\n");
            }
        }
        if out.write {
            if let Some((path, bytes)) = &rendered.costs_file {
                report::atomic::write(path, bytes)?;
                println!("wrote {}", report::for_person(path).display());
            }
            report::write_all(&dir, &rendered.reports)?;
            write_models(rendered, &dir)?;
        }
        for r in &rendered.reports {
            report::print_report_as(r, &dir, out.print, out.write, out.tables);
        }
    }
    let (line, failed) = report::verdict_line(rendered);
    println!("{line}");
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Merges the model outputs a suite's replay was given into `<dir>/runs/models/` and says so:
/// how many, and how many a `--from-recording` replay did not find recorded (computed or taken
/// from the cache on this machine).
fn write_models(rendered: &Rendered, dir: &Path) -> Result<()> {
    if rendered.models.is_empty() {
        return Ok(());
    }
    let models = dir.join("runs").join(crate::replay::MODELS_FOLDER);
    let (mut asked, mut fresh) = (0, 0);
    for f in &rendered.models {
        f.write_into(&models)?;
        asked += f.records;
        fresh += f.not_recorded;
    }
    println!(
        "recorded {asked} model outputs ({} model{}; {fresh} not in the recording before) in {}",
        rendered.models.len(),
        if rendered.models.len() == 1 { "" } else { "s" },
        report::for_person(&models).display()
    );
    Ok(())
}
