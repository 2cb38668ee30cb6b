//! `ranklab bench`: replay every suite under `tasks/` and regenerate `reports/`. All suites are
//! computed before any file is written. Exit 1 when a check of any suite failed (a paired
//! assertion not met, an engine's errors counted as empty rankings), as `ranklab run`.
//!
//! With `--measure-costs` (`just costs`), it also times each rerank model on its suite's
//! shortlists and writes `reports/<suite>/costs.json` (`report::costs`), which the reports
//! render; a plain `bench` only reads that file, so its reports stay byte-identical.

use crate::exit::Exit;
use std::path::PathBuf;

use anyhow::Result;

use super::reports::{emit, EngineArgs, Output, Plan};
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
    /// report, in under 40 lines for the whole bench: its title, the decision and the files
    /// written; the headline tables are in the reports).
    #[arg(long)]
    pub print: bool,
    /// Also time each rerank model on its suite's shortlists — cold (the model computes every
    /// pair, from empty caches), warm (every pair from the score cache) and its load — and write
    /// the figures to reports/<suite>/costs.json, which the reports show. With no MODEL: every
    /// rerank model whose identity has no measurement yet; with MODELs (rerank model keys as the
    /// reports name them): those, measured again. Not with --cluster.
    #[arg(long, value_name = "MODEL", num_args = 0..)]
    pub measure_costs: Option<Vec<String>>,
    #[command(flatten)]
    pub engines: EngineArgs,
}

/// Runs the command: plan (one cluster for every suite; suite names that would share a
/// report folder refused), replay and render every suite, then write and print.
pub(crate) fn run(args: BenchArgs) -> Result<Exit> {
    let mut plan = Plan::new(&args.engines, &args.reports)?;
    let suite_files = suites(&args.tasks)?;
    distinct_report_folders(&suite_files)?;
    let each: Vec<(PathBuf, Vec<PathBuf>)> = suite_files
        .iter()
        .map(|s| (s.clone(), Vec::new()))
        .collect();
    plan.check_environment(&each)?;
    if let Some(models) = args.measure_costs {
        known_rerank_models(&suite_files, &models)?;
        let command: Vec<String> = std::env::args().skip(1).collect();
        plan = plan.measuring(models, format!("ranklab {}", command.join(" ")), true)?;
    }
    let rendered = suite_files
        .iter()
        .map(|s| plan.render(s, &[]))
        .collect::<Result<Vec<_>>>()?;
    let out = Output {
        write: true,
        print: args.print,
        name_notes: true,
        tables: false,
    };
    emit(&rendered, &args.reports, &out)
}

/// Every model named to `--measure-costs` is the rerank model key of a configuration of some
/// suite; otherwise an error listing those there are, before anything runs.
fn known_rerank_models(suite_files: &[PathBuf], named: &[String]) -> Result<()> {
    let mut known = std::collections::BTreeSet::new();
    for path in suite_files {
        let suite = crate::suite::Suite::load(path)?;
        for ex in crate::suite::load_experiments(&suite, &[])? {
            for c in &ex.configurations {
                if let Some(r) = &c.rerank {
                    known.insert(r.model_key());
                }
            }
        }
    }
    for name in named {
        if !known.contains(name) {
            let list: Vec<&str> = known.iter().map(String::as_str).collect();
            anyhow::bail!(
                "--measure-costs {name}: no configuration of any suite reranks with it; the rerank models are: {}",
                if list.is_empty() { "none".to_string() } else { list.join(", ") }
            );
        }
    }
    Ok(())
}

/// Two suites of one name would write one report folder (`reports/<suite>/`), the second over
/// the first: refused before anything runs, naming both suite files.
fn distinct_report_folders(suite_files: &[PathBuf]) -> Result<()> {
    let mut seen: Vec<(String, PathBuf, usize)> = Vec::new();
    for path in suite_files {
        let suite = crate::suite::Suite::load(path)?;
        let text = ranklab_engine::input::read_text(&suite.path).unwrap_or_default();
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
