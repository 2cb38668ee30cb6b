//! `ranklab bench`: replay every suite under `tasks/` and regenerate `reports/`. All suites are
//! computed before any file is written.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::report;

/// Arguments of `ranklab bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Directory holding one folder per suite (each with suite.yaml and experiments*.yaml).
    #[arg(long, default_value = "tasks")]
    pub tasks: PathBuf,
    /// Root of the report tree.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
}

/// Every `<tasks>/*/suite.yaml`, sorted.
pub fn suites(tasks: &std::path::Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(tasks).with_context(|| format!("cannot list {}", tasks.display()))? {
        let p = e?.path().join("suite.yaml");
        if p.is_file() {
            out.push(p);
        }
    }
    out.sort();
    if out.is_empty() {
        bail!(
            "{}: no suite found (expected <suite>/suite.yaml folders)",
            tasks.display()
        );
    }
    Ok(out)
}

/// Runs the command.
pub fn run(args: BenchArgs) -> Result<ExitCode> {
    let mut rendered = Vec::new();
    for s in suites(&args.tasks)? {
        rendered.push(super::run::render_suite(&s, &[])?);
    }
    for (suite, reports) in &rendered {
        let dir = args.reports.join(&suite.name);
        for r in reports {
            report::write_all(&dir, r)?;
            println!("{}", r.markdown);
        }
    }
    Ok(ExitCode::SUCCESS)
}
