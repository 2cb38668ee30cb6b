//! `ranklab bench`: replay every suite under `tasks/` and regenerate `reports/`. All suites are
//! computed before any file is written. Exit 1 when a check of any suite failed (a paired
//! assertion not met, an engine's errors counted as empty rankings), as `ranklab run`.

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
    pub recording: super::args::RecordingArgs,
    #[command(flatten)]
    pub cluster: super::args::ClusterArgs,
}

/// Runs the command.
pub(crate) fn run(args: BenchArgs) -> Result<ExitCode> {
    // One cluster (one driver, one Ray Client connection) for every suite.
    let remote = args.cluster.remote()?;
    let suite_files = suites(&args.tasks)?;
    distinct_report_folders(&suite_files)?;
    let mut rendered = Vec::new();
    for s in suite_files {
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
    // The reports are written either way (they show what failed); the exit code says it.
    let (line, failed) = report::verdict_line(&rendered);
    println!("{line}");
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Two suites of one name would write one report folder (`reports/<suite>/`), the second over
/// the first: refused before anything runs, naming both suite files.
fn distinct_report_folders(suite_files: &[PathBuf]) -> Result<()> {
    let mut seen: Vec<(String, PathBuf, usize)> = Vec::new();
    for path in suite_files {
        let suite = crate::suite::Suite::load(path)?;
        let text = std::fs::read_to_string(&suite.path).unwrap_or_default();
        let line = ranklab_engine::yaml::Lines::new(&text).of("suite", &suite.name);
        if let Some((_, other, other_line)) = seen
            .iter()
            .find(|(n, _, _)| n.to_lowercase() == suite.name.to_lowercase())
        {
            anyhow::bail!(
                "{}:{line}: suite name {:?} is also the name of {}:{other_line}; each suite writes reports/<suite name>/, so one would overwrite the other (names that differ only in case are one folder on macOS and Windows): rename one of the two",
                suite.path.display(),
                suite.name,
                other.display()
            );
        }
        seen.push((suite.name, suite.path, line));
    }
    Ok(())
}
