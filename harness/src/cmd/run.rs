//! `ranklab run`: replay one suite under every configuration of its experiment files and write
//! `reports/<suite>/`. Everything is computed before the first file is written, so a bad input
//! leaves the previous report untouched, and the directory is replaced as a whole, so a kill
//! while writing does too. Exit 1 when a check failed (a paired assertion not met, an engine's
//! errors counted as empty rankings): the reports are written and the last line says `FAIL`.

use crate::exit::Exit;
use std::path::PathBuf;

use anyhow::Result;

use super::reports::{emit, EngineArgs, Output, Plan};

/// Arguments of `ranklab run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The suite: a directory holding suite.yaml (e.g. tasks/docir), or the suite file itself.
    pub suite: PathBuf,
    /// Experiment files to replay (default: every experiments*.yaml beside the suite file but
    /// those that fine-tune a model, which train only when named here).
    #[arg(long = "experiments", short = 'x')]
    pub experiments: Vec<PathBuf>,
    /// Root of the report tree; the suite's reports go to <REPORTS>/<suite name>/.
    #[arg(long, default_value_os_t = crate::root::default("reports"))]
    pub reports: PathBuf,
    /// Print the summary without writing any file.
    #[arg(long)]
    pub dry_run: bool,
    /// Also print the whole Markdown report on stdout (by default stdout gets a summary: the
    /// headline table, the decision and the files written; the full report is in the files).
    #[arg(long)]
    pub print: bool,
    /// Also time the rerank models of these experiments, as `ranklab bench --measure-costs`
    /// does, and add the figures to reports/<suite>/costs.json (keeping every other model's):
    /// with no MODEL every one whose identity has no measurement yet, with MODELs (rerank model
    /// keys as the reports name them) those again. A fine-tuned stage is timed fold by fold,
    /// each fold model on its own tasks' pairs (`just costs-finetune`). Not with --cluster.
    #[arg(long, value_name = "MODEL", num_args = 0..)]
    pub measure_costs: Option<Vec<String>>,
    #[command(flatten)]
    pub engines: EngineArgs,
}

/// Runs the command: plan, replay and render the suite, then write and print.
pub(crate) fn run(args: RunArgs) -> Result<Exit> {
    let mut plan = Plan::new(&args.engines, &args.reports)?;
    if let Some(models) = args.measure_costs {
        let command: Vec<String> = std::env::args().skip(1).collect();
        plan = plan.measuring(models, format!("ranklab {}", command.join(" ")), false)?;
    }
    plan.check_environment(&[(args.suite.clone(), args.experiments.clone())])?;
    let rendered = plan.render(&args.suite, &args.experiments)?;
    let out = Output {
        write: !args.dry_run,
        print: args.print,
        tables: true,
        name_notes: false,
    };
    emit(std::slice::from_ref(&rendered), &args.reports, &out)
}
