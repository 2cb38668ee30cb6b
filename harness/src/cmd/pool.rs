//! `ranklab pool tasks/<suite> [--depth K] [--configs A,B]`: collect, per task, the unjudged
//! documents in the top K of every configuration's run (or of those named) into
//! `tasks/<suite>/pool.yaml` (TREC pooling). A BEIR
//! collection is pooled from its report's runs (`ranklab beir`) into its report folder,
//! `reports/beir/<name>/pool.yaml`.

use crate::exit::Exit;
use std::path::PathBuf;

use anyhow::Result;

use crate::report::atomic;
use crate::suite::{Selection, Suite};

/// Arguments of `ranklab pool`.
#[derive(Debug, clap::Args)]
pub(crate) struct PoolArgs {
    /// The suite: a directory holding suite.yaml (e.g. tasks/docir), or the suite file itself;
    /// or a BEIR collection's directory (corpus.jsonl, queries.jsonl, qrels/), pooled from the
    /// runs of `ranklab beir` into <REPORTS>/<name>/pool.yaml.
    pub suite: PathBuf,
    /// Pool depth K: the top K of each run (default: the suite's k).
    #[arg(long)]
    pub depth: Option<usize>,
    /// Root of the report tree holding <suite>/runs/*.trec (written by `ranklab run`; default
    /// reports), or for a BEIR collection <name>/runs/*.trec (written by `ranklab beir`;
    /// default reports/beir).
    #[arg(long)]
    pub reports: Option<PathBuf>,
    /// For a BEIR collection: the qrels split whose queries are pooled (qrels/<split>.tsv).
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Pool only these configurations' runs (comma-separated or repeated; the names of
    /// <suite>/runs/<configuration>.trec). Default: every run. A name without a run is an
    /// error listing the runs there are.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub configs: Vec<String>,
}

/// Runs the command.
pub(crate) fn run(args: PoolArgs) -> Result<Exit> {
    let (suite, reports) = if crate::suite::beir::is_collection(&args.suite) {
        let reports = args
            .reports
            .unwrap_or_else(crate::suite::beir::default_reports);
        let (_, suite) =
            crate::suite::beir::load_judged(&args.suite, &args.split, &reports, Selection::Human)?;
        (suite, reports)
    } else {
        let reports = args
            .reports
            .unwrap_or_else(|| crate::root::default("reports"));
        (Suite::load(&args.suite)?, reports)
    };
    let runs = crate::pool::only(crate::pool::run_files(&reports, &suite)?, &args.configs)?;
    let pool = crate::pool::pool(&suite, &runs, args.depth.unwrap_or(suite.k))?;
    let path = suite.judging_dir().join("pool.yaml");
    atomic::write(&path, pool.yaml().as_bytes())?;
    println!("{}", pool.summary(&path));
    Ok(Exit::Ok)
}
