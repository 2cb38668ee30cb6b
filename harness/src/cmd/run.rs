//! `ranklab run`: replay one suite under every configuration of its experiment files and write
//! `reports/<suite>/`. Everything is computed before the first file is written, so a bad input
//! leaves the previous report untouched, and the directory is replaced as a whole, so a kill
//! while writing does too. Exit 1 when a check failed (a paired assertion not met, an engine's
//! errors counted as empty rankings): the reports are written and the last line says `FAIL`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::report;

/// Arguments of `ranklab run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The suite: a directory holding suite.yaml (e.g. tasks/docir), or the suite file itself.
    pub suite: PathBuf,
    /// Experiment files to replay (default: every experiments*.yaml beside the suite file).
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
    #[command(flatten)]
    pub recording: super::args::RecordingArgs,
    #[command(flatten)]
    pub cluster: super::args::ClusterArgs,
}

/// Runs the command.
pub(crate) fn run(args: RunArgs) -> Result<ExitCode> {
    let remote = args.cluster.remote()?;
    let rendered = report::render_suite(
        &args.suite,
        &args.experiments,
        args.recording.recordings_root(&args.reports),
        &args.recording.mode(),
        remote.as_ref(),
    )?;
    let dir = args.reports.join(&rendered.suite.name);
    if let Some(note) = rendered.defaults_note() {
        println!("{note}\n");
    }
    if !args.dry_run {
        report::write_all(&dir, &rendered.reports)?;
    }
    for r in &rendered.reports {
        report::print_report(r, &dir, args.print, !args.dry_run);
    }
    // The reports are written either way (they show what failed); the exit code says it.
    let (line, failed) = report::verdict_line(std::slice::from_ref(&rendered));
    println!("{line}");
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
