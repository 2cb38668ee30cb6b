//! `ranklab run`: replay one suite under every configuration of its experiment files and write
//! `reports/<suite>/`. Everything is computed before the first file is written, so a bad input
//! leaves the previous report untouched.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Result};

use crate::replay::{replay, Engine};
use crate::report::{self, SuiteReport};
use crate::suite::{Experiments, Suite};

/// Arguments of `ranklab run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The suite: a directory holding suite.yaml (e.g. tasks/docir), or the suite file itself.
    pub suite: PathBuf,
    /// Experiment files to replay (default: every experiments*.yaml beside the suite file).
    #[arg(long = "experiments", short = 'x')]
    pub experiments: Vec<PathBuf>,
    /// Root of the report tree; the suite's reports go to <REPORTS>/<suite name>/.
    #[arg(long, default_value = "reports")]
    pub reports: PathBuf,
    /// Print the tables without writing any file.
    #[arg(long)]
    pub dry_run: bool,
}

/// Experiment files beside a suite: `experiments*.yaml`, sorted by name.
pub fn experiment_files(suite: &Suite) -> Result<Vec<PathBuf>> {
    let out = suite.files_named("experiments")?;
    if out.is_empty() {
        bail!(
            "{}: no experiments*.yaml beside the suite; add one (see docs/formats.md)",
            suite.dir().display()
        );
    }
    Ok(out)
}

/// Replays a suite and renders one report per experiment file (nothing written yet).
pub fn render_suite(
    suite_path: &Path,
    experiment_paths: &[PathBuf],
) -> Result<(Suite, Vec<SuiteReport>)> {
    let suite = Suite::load(suite_path)?;
    let paths = if experiment_paths.is_empty() {
        experiment_files(&suite)?
    } else {
        experiment_paths.to_vec()
    };
    let experiments = paths
        .iter()
        .map(|p| Experiments::load(p))
        .collect::<Result<Vec<_>>>()?;
    let corpus = suite.load_corpus()?;
    let refs: Vec<&Experiments> = experiments.iter().collect();
    let engine = Engine::build(&corpus, &refs)?;
    let mut reports = Vec::new();
    for ex in &experiments {
        let r = replay(&engine, &suite, ex)?;
        reports.push(report::render(
            &corpus,
            &suite,
            ex,
            &r,
            &report::MeasureSet::Suite,
        )?);
    }
    engine.finish()?;
    Ok((suite, reports))
}

/// Runs the command.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let (suite, reports) = render_suite(&args.suite, &args.experiments)?;
    let dir = args.reports.join(&suite.name);
    for r in &reports {
        if !args.dry_run {
            report::write_all(&dir, r)?;
        }
        println!("{}", r.markdown);
    }
    Ok(ExitCode::SUCCESS)
}
