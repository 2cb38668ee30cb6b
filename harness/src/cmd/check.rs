//! `ranklab check`: run paired assertions (paired.yaml) through the legacy and the current
//! wiring on the same first stage; one line per assertion and wiring; exit 1 when any
//! expectation fails (including a legacy half that no longer shows the bug). Then, per assertion,
//! whether its current half depends on the weights: its outcome with the practice file's
//! weights and with every weight zero.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::paired::{dependence_table, table, Paired};
use crate::replay::Engine;

/// Arguments of `ranklab check`.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// paired.yaml files (e.g. tasks/brain/paired.yaml).
    #[arg(required = true)]
    pub paired: Vec<PathBuf>,
}

/// Runs the command.
pub(crate) fn run(args: CheckArgs) -> Result<ExitCode> {
    let mut failed = 0;
    for p in &args.paired {
        let (paired, corpus) = Paired::load(p)?;
        let engine = Engine::build(&corpus, &[&paired.experiments])?;
        let verdicts = paired.check(&engine, None)?;
        let dependence = paired.dependence(&engine, None)?;
        engine.finish()?;
        println!(
            "## {}\n\n{}\n{}",
            p.display(),
            table(&verdicts),
            dependence_table(&dependence)
        );
        failed += verdicts.iter().filter(|v| !v.pass()).count();
    }
    if failed > 0 {
        println!("{failed} expectation(s) failed.");
        return Ok(ExitCode::from(1));
    }
    println!("All paired assertions hold as expected.");
    Ok(ExitCode::SUCCESS)
}
