//! `ranklab check`: run paired assertions (paired.yaml) through the legacy and the current
//! wiring on the same first stage; one line per assertion and wiring; exit 1 when any
//! expectation fails (including a legacy half that no longer shows the bug). Then, per assertion,
//! whether its current half depends on the weights: its outcome with the practice file's
//! weights and with every weight zero. A file in which no assertion expects the two wirings to
//! differ is refused (exit 2). With `--from-recording`, external configurations are not asked:
//! each assertion's ranking is the recorded answer to its query in the suite's recording
//! (`<RECORDINGS>/<suite>/runs/<configuration>.recording.json`), so no engine needs to run.

use crate::exit::Exit;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::paired::{dependence_table, table, Dependence, Paired, Verdict};
use crate::replay::Replayer;

/// Arguments of `ranklab check`.
#[derive(Debug, clap::Args)]
pub(crate) struct CheckArgs {
    /// paired.yaml files, or suite folders (every paired*.yaml in them), e.g. tasks/brain.
    #[arg(required = true)]
    pub paired: Vec<PathBuf>,
    /// Read external engines' answers from the suite's recordings instead of asking them (no
    /// engine needs to run); a query not recorded is an error (exit 2).
    #[arg(long)]
    pub from_recording: bool,
    /// Root of the report tree whose `<suite>/runs/` hold the recordings.
    #[arg(long, value_name = "DIR", default_value_os_t = crate::root::default("reports"), requires = "from_recording")]
    pub recordings: PathBuf,
}

/// Runs the command: the files to check (plan), then per file its verdicts and their weight
/// dependence (measure) and its tables (render, printed as each file is done), then the total.
pub(crate) fn run(args: CheckArgs) -> Result<Exit> {
    let mut files = Vec::new();
    for p in &args.paired {
        files.extend(paired_files(p)?);
    }
    let mut failed = 0;
    for p in &files {
        let (verdicts, dependence) = check_file(p, &args)?;
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
        return Ok(Exit::Failed);
    }
    println!("All paired assertions hold as expected.");
    Ok(Exit::Ok)
}

/// One paired file checked: each assertion's verdict under each wiring, and whether its
/// current half depends on the weights (external engines answered from their recordings with
/// `--from-recording`).
fn check_file(path: &Path, args: &CheckArgs) -> Result<(Vec<Verdict>, Vec<Dependence>)> {
    let (paired, corpus) = Paired::load(path)?;
    let engine = Replayer::build(&corpus, &[&paired.experiments])?;
    let recordings = args
        .from_recording
        .then(|| args.recordings.join(&paired.suite.name).join("runs"));
    let verdicts = paired.check_with(&engine, None, recordings.as_deref())?;
    let dependence = paired.dependence_with(&engine, None, recordings.as_deref())?;
    engine.finish()?;
    Ok((verdicts, dependence))
}

/// `path` itself, or the `paired*.yaml` files of the folder `path`, sorted.
fn paired_files(path: &Path) -> Result<Vec<PathBuf>> {
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let out = crate::paired::files_in(path)
        .map_err(|e| anyhow::anyhow!("cannot list {}: {e}", path.display()))?;
    if out.is_empty() {
        anyhow::bail!(
            "{}: no paired*.yaml in this folder; pass a paired.yaml file or a suite folder holding one ({})",
            path.display(),
            crate::suite::SEE_FORMATS
        );
    }
    Ok(out)
}
