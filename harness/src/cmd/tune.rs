//! `ranklab tune`: tune the four penalty weights of the practice file against recent merges;
//! with a tuning FILE, a weighted fusion's weights and normalization under task-fold cross-validation
//! ([`crate::tune::cv`]), or (`split: time`) the same penalty tuning described by a file.
//!
//! It reads the merges of `merges.yaml` dated in `[as_of - window_days, as_of]`, replays the
//! first stage of the shipped configuration (the one with `wiring: current`) once per merge
//! query and once per paired assertion, and then scores every point of the integer grid by
//! re-sorting those lists (see [`crate::tune`]). The objective is MRR, then recall@k; a
//! candidate that breaks a paired assertion is rejected. Among the candidates tied within
//! `--epsilon`, the robust choice ([`crate::tune::robust`]) takes the centre of the plateau's
//! core and a finer search at 0.01 around it; the current weights are kept when they are tied.
//!
//! Overfitting is made visible: beside the chosen weights (selected on the whole window, all
//! figures in-sample) it reports the weights selected on the older two thirds only, scored on
//! the newest third they never saw (held out), the current weights of the practice file, the
//! suite's own tasks under each, and a rolling validation ([`crate::tune::rolling`]). The
//! chosen, train-selected and current weights are re-checked through the real replay and
//! `Paired::check`; a disagreement with the fast path is an internal error.
//!
//! Without `--write` nothing is written. With it, the practice file is replaced atomically with
//! the chosen weights and a `tuned:` line naming the as-of date, the window and the merges;
//! a change of weights is refused (exit 2) unless the rolling validation shows tuning beating
//! the current weights, or `--force` is given. `--write --keep` writes the current weights back
//! with this tuning's provenance and decision: the loop closed without a change.
//! Output on stdout is a pure function of the inputs (as-of included): a second run prints the
//! same bytes. Timing goes to stderr.
//!
//! The flags are parsed here; the work is in [`crate::tune`].

use crate::exit::Exit;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::suite::merges::parse_date;
use crate::tune::grid::Grid;
use crate::tune::session::{tune, Request};

/// Arguments of `ranklab tune`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Reads merges.yaml (id, merged date, query, expected record), keeps the merges of the window \
(merges dated after --as-of are ignored, and the report says how many, so a past --as-of \
backtests), \
replays the first stage once per merge query and paired assertion, then scores every weight \
vector of the grid by re-sorting: MRR, then recall@k. Candidates that break a paired assertion \
are rejected. Among the candidates tied within --epsilon it chooses the centre of the plateau's \
core (largest margins to the plateau's edge along each weight), refines it at 0.01, and keeps \
the current weights when they are tied (\"no candidate beats the practice file\"). Prints the \
chosen weights and why, the weights selected on the older two thirds with their held-out \
figures on the newest third, the current weights, the suite's own tasks under each, a rolling \
validation (tune on the window ending at each of the last --folds merge days, score on the next \
day's merges; tuned against kept with paired statistics), the top candidates and each merge's \
rank. --write refuses to change the weights when the rolling validation does not show tuning \
beating them, unless --force; --write --keep records the tuning (provenance, decision) and keeps \
the weights.

Example: ranklab tune --suite tasks/brain --window-days 90 --as-of 2026-11-30 --write --keep

With a tuning FILE instead (ranklab tune tasks/docir/tune-fusion-weights.yaml --json out.json): \
the named configuration's lists are computed once, every candidate of the file's grid is scored \
on every task, and per seeded task fold the candidate chosen on the other folds' tasks (the same \
plateau rule) scores the held-out tasks. It prints and writes reports/<suite>/tune-<name>.md and \
.json: in-sample and out-of-fold values, each fold's choice, and out of fold against the \
shipped configuration (Δ, CI, p, wins/ties/losses, power). Paths: fusion.weights.bm25, \
fusion.weights.dense, fusion.weights.rerank (when the fusion weighs its rerank stage's list), \
fusion.weights.engine (when it weighs its `engine:`'s list, replayed from that engine's recording, \
e.g. tasks/docir/tune-engine-fusion.yaml; with rerank too: tune-engine-rerank-fusion.yaml), \
fusion.weights.cross-encoder and fusion.weights.colbert (the lists its fusion's `rerankers:` \
names over one shortlist, e.g. tasks/docir/tune-rerankers-fusion.yaml), fusion.normalize; or rerank.interpolate alone (a rerank stage's weight \
against the first stage, e.g. tasks/docir/tune-interpolate.yaml). --write adds the configuration \
chosen on all tasks as tasks/<suite>/experiments-tune-<name>.yaml, only when the out-of-fold gain \
is detectable (else exit 2, no experiments file written; the report is): a weighted fusion \
with its rerank stage and shortlist_from when it weighs rerank, and its `rerankers:`; for rerank.interpolate the \
configuration with the chosen α; for a learned tuning (learn:) a `retriever: learned` \
configuration with the model copied to tasks/<suite>/models/ (and `shortlist:` when the model \
uses the cross-encoder or colbert features; `engine:` copied as written when the model uses \
the external feature or the fusion weighs `engine`, so its recording is found by the same hash). A tuning file with `split: time` and the four paths penalty.superseded, \
penalty.deprecated, penalty.amendment, penalty.editorial_only (one grid 0, u, ..., m·u) runs \
this penalty tuning instead, on the file's window_days, as_of and rolling (e.g. \
tasks/brain/tune-penalty-weights.yaml: the report of --suite tasks/brain --as-of 2026-12-01 as \
reports/brain/tune-penalty-weights.*; --write, --keep and --force as above).

Exit codes: 0 ok; 2 bad input (every merge after --as-of, a bad date, an unknown record, an empty \
window, no --suite while the tasks folder has no suite or several suites with a merges.yaml) or \
--write refused, nothing written.")]
pub(crate) struct TuneArgs {
    /// A tuning file beside a suite (e.g. tasks/docir/tune-fusion-weights.yaml): tune its
    /// configuration's parameters under task-fold cross-validation and report the out-of-fold
    /// result against the shipped configuration (docs/tuning.md). Without it, tune the penalty
    /// weights against merges (the flags below).
    #[arg(value_name = "FILE", conflicts_with_all = ["suite", "merges", "configuration", "reports", "window_days", "as_of", "unit", "max_units", "top", "epsilon", "folds"])]
    pub file: Option<PathBuf>,
    /// With FILE: also write the JSON report to OUT.
    #[arg(long, value_name = "OUT", requires = "file")]
    pub json: Option<PathBuf>,
    /// With FILE: compute model outputs (vectors) on this machine. By default they are read
    /// from the suite's recording (reports/<suite>/runs/models/) first, the bits its committed
    /// reports rest on, as `ranklab run --from-recording` does (int8 kernels differ between
    /// CPUs in the last bits, enough to swap near-ties).
    #[arg(long, requires = "file")]
    pub live: bool,
    /// The suite: a directory holding suite.yaml, experiments*.yaml, merges.yaml, paired*.yaml
    /// and the practice file. Default: the only suite of the repository's tasks/ folder that has
    /// a merges.yaml (with none or several, tune asks for --suite).
    #[arg(long)]
    pub suite: Option<PathBuf>,
    /// The merges file (default: merges.yaml beside the suite file).
    #[arg(long)]
    pub merges: Option<PathBuf>,
    /// The configuration whose first stage is tuned (default: the one with `wiring: current`).
    #[arg(long)]
    pub configuration: Option<String>,
    /// Tune on the merges of the last N days up to --as-of (inclusive).
    #[arg(long, default_value_t = 90)]
    pub window_days: u32,
    /// The last day of the window, YYYY-MM-DD (default: today). Fix it for reproducible output.
    #[arg(long, value_name = "DATE")]
    pub as_of: Option<String>,
    /// Grid step of every weight, a multiple of 0.01.
    #[arg(long, default_value = "0.05")]
    pub unit: String,
    /// Largest number of steps of one weight (0.05 x 20 = 1.00).
    #[arg(long, default_value_t = 20)]
    pub max_units: u16,
    /// How many of the best candidates to print.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Write the chosen weights to the practice file (atomically). Without it nothing changes.
    /// Refused when the rolling validation does not show tuning beating the current weights
    /// (unless --force). With FILE: write tasks/<suite>/experiments-tune-<name>.yaml with the
    /// configuration chosen on all tasks, only when its out-of-fold gain is detectable.
    #[arg(long)]
    pub write: bool,
    /// With --write: write even when the rolling validation says tuning does not help.
    #[arg(long, requires = "write", conflicts_with = "keep")]
    pub force: bool,
    /// With --write: keep the current weights and record only this tuning's provenance (the
    /// decision, window, merges, figures) in the practice file. What to do when the rolling
    /// validation says tuning does not help.
    #[arg(long, requires = "write")]
    pub keep: bool,
    /// Candidates within this much of the best MRR and recall@k are tied; the robust choice
    /// breaks the tie.
    #[arg(long, default_value_t = crate::tune::robust::DEFAULT_EPSILON)]
    pub epsilon: f64,
    /// Also write the tuning report to DIR/<suite>/: tuning.md, tuning.csv, tuning.json and
    /// tuning.heatmap.svg (atomically).
    #[arg(long, value_name = "DIR")]
    pub reports: Option<PathBuf>,
    /// Folds of the rolling validation (pairs of consecutive merge days).
    #[arg(long, default_value_t = crate::tune::rolling::DEFAULT_FOLDS)]
    pub folds: usize,
}

/// Runs the command: the checked request from the flags, then the tuning (which scores,
/// renders and writes what is asked, see [`tune`]), then the report on stdout.
pub(crate) fn run(args: TuneArgs) -> Result<Exit> {
    if let Some(file) = &args.file {
        let req = crate::tune::cv::session::Request {
            file: file.clone(),
            json: args.json.clone(),
            write: args.write,
            live: args.live,
            keep: args.keep,
            force: args.force,
        };
        print!("{}", crate::tune::cv::session::run(&req)?);
        return Ok(Exit::Ok);
    }
    let md = tune(&request(args)?)?;
    print!("{md}");
    Ok(Exit::Ok)
}

/// The flags checked: the grid, ε in [0, 1), a window of at least a day, the as-of date (today
/// when not given) and the suite (the only one with a merges.yaml when not given).
fn request(args: TuneArgs) -> Result<Request> {
    let grid = Grid::new(&args.unit, args.max_units)?;
    if !(args.epsilon >= 0.0 && args.epsilon < 1.0) {
        bail!(
            "--epsilon {}: write a tolerance in [0, 1), e.g. 0.001",
            args.epsilon
        );
    }
    if args.window_days == 0 {
        bail!("--window-days must be at least 1");
    }
    let as_of = match &args.as_of {
        Some(s) => parse_date(s).with_context(|| {
            format!(
                "--as-of {s:?}{}: write the date as YYYY-MM-DD",
                ranklab_engine::yaml::impossible_date(s).unwrap_or_default()
            )
        })?,
        None => chrono::Local::now().date_naive(),
    };
    let suite = match args.suite {
        Some(s) => s,
        None => {
            let s = crate::tune::assemble::suite_with_merges(&crate::root::default("tasks"))?;
            eprintln!(
                "tune: no --suite given; tuning {}, the only suite with a merges.yaml",
                s.display()
            );
            s
        }
    };
    Ok(Request {
        suite,
        merges: args.merges,
        configuration: args.configuration,
        window_days: args.window_days,
        as_of,
        grid,
        top: args.top,
        write: args.write,
        force: args.force,
        keep: args.keep,
        epsilon: args.epsilon,
        folds: args.folds,
        reports: args.reports,
        stem: "tuning".to_string(),
    })
}
