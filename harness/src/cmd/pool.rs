//! `ranklab pool tasks/<suite> [--depth K]`: collect, per task, the unjudged documents in the
//! top K of every configuration's run into `tasks/<suite>/pool.yaml` (TREC pooling).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::report::atomic;
use crate::suite::Suite;

/// Arguments of `ranklab pool`.
#[derive(Debug, clap::Args)]
pub(crate) struct PoolArgs {
    /// The suite: a directory holding suite.yaml (e.g. tasks/docir), or the suite file itself.
    pub suite: PathBuf,
    /// Pool depth K: the top K of each run (default: the suite's k).
    #[arg(long)]
    pub depth: Option<usize>,
    /// Root of the report tree holding <suite>/runs/*.trec (written by `ranklab run`).
    #[arg(long, default_value_os_t = crate::root::default("reports"))]
    pub reports: PathBuf,
}

/// Runs the command.
pub(crate) fn run(args: PoolArgs) -> Result<ExitCode> {
    let suite = Suite::load(&args.suite)?;
    let runs = crate::pool::run_files(&args.reports, &suite)?;
    let pool = crate::pool::pool(&suite, &runs, args.depth.unwrap_or(suite.k))?;
    let path = suite.dir().join("pool.yaml");
    atomic::write(&path, pool.yaml().as_bytes())?;
    println!("{}", pool.summary(&path));
    Ok(ExitCode::SUCCESS)
}
