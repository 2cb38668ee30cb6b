//! `ranklab bench`: replay every suite under `tasks/` and regenerate `reports/`. All suites are
//! computed before any file is written.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::report;
use crate::suite::suites;

/// Arguments of `ranklab bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
    /// Directory holding one folder per suite (each with suite.yaml and experiments*.yaml).
    #[arg(long, default_value_os_t = crate::root::default("tasks"))]
    pub tasks: PathBuf,
    /// Root of the report tree.
    #[arg(long, default_value_os_t = crate::root::default("reports"))]
    pub reports: PathBuf,
    /// Also print every whole Markdown report on stdout (by default stdout gets a summary per
    /// report: the headline table, the decision and the files written).
    #[arg(long)]
    pub print: bool,
    #[command(flatten)]
    pub recording: crate::external::RecordingArgs,
    #[command(flatten)]
    pub cluster: crate::cluster::ClusterArgs,
}

/// Runs the command.
pub(crate) fn run(args: BenchArgs) -> Result<ExitCode> {
    // One cluster (one driver, one Ray Client connection) for every suite.
    let remote = args.cluster.remote()?;
    let mut rendered = Vec::new();
    for s in suites(&args.tasks)? {
        rendered.push(report::render_suite(
            &s,
            &[],
            args.recording.recordings_root(&args.reports),
            &args.recording.mode(),
            remote.as_ref(),
        )?);
    }
    for rendered in &rendered {
        let dir = args.reports.join(&rendered.suite.name);
        if let Some(note) = rendered.defaults_note() {
            println!("{}: {note}\n", rendered.suite.name);
        }
        report::write_all(&dir, &rendered.reports)?;
        for r in &rendered.reports {
            report::print_report(r, &dir, args.print, true);
        }
    }
    Ok(ExitCode::SUCCESS)
}
