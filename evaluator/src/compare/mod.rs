//! Comparing TREC runs (`ranklab compare`): are these runs (ours or another system's) really
//! different? Evaluates every run against the same qrels and compares each with the first (the
//! baseline), query by query, with the statistics of [`crate::stats`]: Δ of the mean, its paired bootstrap 95% CI,
//! the two-sided paired randomization-test p (raw and Holm-adjusted across the runs), and
//! win/tie/loss counts; then the one-line reading. Per run, also Judged@k and the unjudged
//! documents of its top k ([`judged`]), with the suite reports' warning when a run's Judged@k is
//! below the baseline's by more than [`crate::warranty::JUDGED_MARGIN`].
//!
//! The arguments are resolved into a checked plan (at least two runs, known measures) before any
//! file is read, and nothing is printed until every run has been evaluated: an error leaves no
//! partial output (exit 2). Runs are paired on the qrels' queries: without `-c` every run must
//! have every judged query (the error names, per run, the queries it lacks); with `-c` a missing
//! query counts 0 in every measure, as in trec_eval `-c`. Queries the qrels do not judge are
//! ignored. Same inputs, same seed: byte-identical output.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::metrics::{Measure, Selection};
use crate::stats::{self, Options, Paired};
use crate::trec::{evaluate_run, EvalOptions, Evaluation, Qrels};

pub mod all_pairs;
mod judged;
mod power;
mod render;

pub use judged::Judgments;

/// Cutoff of Judged@k when no `--judged-at` is given.
pub const DEFAULT_JUDGED_K: usize = 10;

/// Measures compared when no `-m` is given.
pub const DEFAULT_MEASURES: [&str; 5] = ["map", "recip_rank", "P.10", "recall.100", "ndcg_cut.10"];

/// Output format (`--format`; the CLI's `clap::ValueEnum` for it is `FormatArg` in the harness's `cmd/args.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Markdown tables, the reading and the method notes.
    Md,
    /// CSV: the per-measure table (with --per-query: the per-query table instead).
    Csv,
    /// JSON: one object with the settings, the per-measure rows, the reading, the per-query rows.
    Json,
}

/// The checked plan of a comparison.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The measures, trec_eval order.
    pub measures: Vec<Measure>,
    /// The runs, baseline first, with their display labels.
    pub runs: Vec<(String, PathBuf)>,
    /// Evaluation settings (always `complete`; the plan checks coverage itself).
    pub eval: EvalOptions,
    /// Whether missing queries count 0 (`-c`).
    pub complete: bool,
    /// Statistics settings.
    pub stats: Options,
    /// Cutoff of Judged@k and the unjudged count (`--judged-at`).
    pub judged_k: usize,
}

impl Plan {
    /// Resolves the arguments of `ranklab compare`: the run files (baseline first), the `-m`
    /// specs (none: [`DEFAULT_MEASURES`]), the relevance level, `-c`, the seed and the cutoff of
    /// Judged@k.
    pub fn new(
        run_paths: &[PathBuf],
        measure_specs: &[String],
        rel_level: i32,
        complete: bool,
        seed: u64,
        judged_k: usize,
    ) -> Result<Self> {
        if run_paths.len() < 2 {
            bail!(
                "compare needs at least two runs (the first is the baseline), got {}; usage: ranklab compare --qrels QRELS RUN_A RUN_B [RUN_C ...]",
                run_paths.len()
            );
        }
        let specs: Vec<&str> = if measure_specs.is_empty() {
            DEFAULT_MEASURES.to_vec()
        } else {
            measure_specs.iter().map(String::as_str).collect()
        };
        let selection = Selection::from_specs(&specs).context("invalid -m")?;
        let measures = selection.measures.clone();
        if measures.is_empty() {
            bail!("invalid -m: {} name(s) no measure to compare (runid and num_q are summary lines); add e.g. -m map", specs.join(" "));
        }
        Ok(Plan {
            measures,
            runs: labels(run_paths),
            eval: EvalOptions {
                rel_level,
                complete: true,
                // Judged@k reads every judged document, relevant or not.
                all_judged: true,
                params: selection.params.clone(),
                ..EvalOptions::default()
            },
            complete,
            stats: Options {
                seed,
                ..Options::default()
            },
            judged_k,
        })
    }
}

/// Display labels: the file stem, or the path as given when two runs share a stem.
fn labels(paths: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let stem = |p: &Path| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| p.display().to_string())
    };
    let stems: Vec<String> = paths.iter().map(|p| stem(p)).collect();
    paths
        .iter()
        .zip(&stems)
        .map(|(p, s)| {
            let unique = stems.iter().filter(|t| *t == s).count() == 1;
            (
                if unique {
                    s.clone()
                } else {
                    p.display().to_string()
                },
                p.clone(),
            )
        })
        .collect()
}

/// Everything a comparison computed.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The plan it ran.
    pub plan: Plan,
    /// The qrels file.
    pub qrels: PathBuf,
    /// Per run, its evaluation (every qrels query, qrels order).
    pub evaluations: Vec<Evaluation>,
    /// `[measure][run]`: the comparison with the baseline (None for the baseline).
    pub paired: Vec<Vec<Option<Paired>>>,
    /// Per run, Judged@k and the unjudged documents of its top k.
    pub judged: Vec<Judgments>,
}

/// Evaluates every run and compares it with the baseline.
pub fn compare(plan: Plan, qrels_path: &Path) -> Result<Comparison> {
    let qrels = Qrels::read(qrels_path)?;
    // The compared measures, then Judged@k and unj@k (read by `judged`, not compared).
    let mut measures = plan.measures.clone();
    measures.extend(judged::measures(plan.judged_k));
    let mut evaluations = Vec::with_capacity(plan.runs.len());
    for (_, path) in &plan.runs {
        let ev = evaluate_run(&qrels, path, &measures, &plan.eval)
            .with_context(|| format!("evaluating {}", path.display()))?;
        evaluations.push(ev);
    }
    let judged = evaluations
        .iter()
        .map(|e| Judgments::of(e, plan.measures.len(), plan.judged_k))
        .collect();
    if !plan.complete {
        check_coverage(&plan, qrels_path, &evaluations)?;
    }
    let mut paired = Vec::with_capacity(plan.measures.len());
    for (m, measure) in plan.measures.iter().enumerate() {
        let col =
            |e: &Evaluation| -> Vec<f64> { e.per_query.iter().map(|q| q.values[m]).collect() };
        let base = col(&evaluations[0]);
        let others: Vec<Vec<f64>> = evaluations[1..].iter().map(col).collect();
        let refs: Vec<&[f64]> = others.iter().map(Vec::as_slice).collect();
        let family = stats::against_baseline(&base, &refs, &plan.stats)
            .with_context(|| format!("statistics of {measure}"))?;
        paired.push(
            std::iter::once(None)
                .chain(family.into_iter().map(Some))
                .collect(),
        );
    }
    Ok(Comparison {
        plan,
        qrels: qrels_path.to_path_buf(),
        evaluations,
        paired,
        judged,
    })
}

/// `ranklab compare --format json [--per-query]` as a library call (what the Python package's
/// `compare` runs): the same plan, evaluations, statistics and JSON as the command, for the run
/// files `runs`, baseline first.
#[allow(clippy::too_many_arguments)]
pub fn compare_json(
    qrels: &Path,
    runs: &[PathBuf],
    measures: &[String],
    rel_level: i32,
    complete: bool,
    seed: u64,
    judged_k: usize,
    per_query: bool,
) -> Result<String> {
    let plan = Plan::new(runs, measures, rel_level, complete, seed, judged_k)?;
    compare(plan, qrels)?.render(Format::Json, per_query)
}

/// Without `-c`: every run must have every judged query. Names, per run, the queries it lacks.
fn check_coverage(plan: &Plan, qrels: &Path, evaluations: &[Evaluation]) -> Result<()> {
    let missing: Vec<Vec<&str>> = evaluations
        .iter()
        .map(|e| {
            e.per_query
                .iter()
                .filter(|q| q.missing)
                .map(|q| q.qid.as_str())
                .collect()
        })
        .collect();
    if missing.iter().all(Vec::is_empty) {
        return Ok(());
    }
    let total = evaluations[0].per_query.len();
    let sets: BTreeSet<&Vec<&str>> = missing.iter().collect();
    let head = if sets.len() == 1 {
        format!(
            "no run has these queries of {} ({total} judged queries)",
            qrels.display()
        )
    } else {
        format!(
            "the runs cover different judged queries of {} ({total} judged queries)",
            qrels.display()
        )
    };
    let mut msg = format!("{head}:");
    for ((label, path), m) in plan.runs.iter().zip(&missing) {
        if m.is_empty() {
            msg.push_str(&format!("\n  {label} ({}) has all {total}", path.display()));
        } else {
            let shown: Vec<&str> = m.iter().take(10).copied().collect();
            let more = if m.len() > 10 {
                format!(" and {} more", m.len() - 10)
            } else {
                String::new()
            };
            msg.push_str(&format!(
                "\n  {label} ({}) lacks {}: {}{more}",
                path.display(),
                m.len(),
                shown.join(", ")
            ));
        }
    }
    msg.push_str("\npass -c to pair on every judged query, a query missing from a run counting 0 in every measure (trec_eval -c)");
    bail!(msg)
}
