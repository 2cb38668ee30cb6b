//! The statistics of a suite report: for each configuration against the experiment's baseline,
//! Δ of each measure with its paired bootstrap 95% CI, the randomization-test p (raw and
//! Holm-adjusted across the configurations), win/tie/loss; the columns added to the metrics
//! table (Δ MRR, Δ recall@k, and Δ nDCG@k where measured), the one-line reading for the ADR, and the long table of every
//! comparison for `<experiment>.stats.csv`.
//!
//! Paired by task: every configuration ran the same tasks in the same order, so the i-th value
//! of each configuration belongs to the same task. Deterministic: [`stats::Options::default`]
//! (fixed seed) for every comparison.

use crate::report::table::{Column, Table};
use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Corpus;
use rayon::prelude::*;

use super::{per_task_values, suite_measures, MeasureSet};
use crate::metrics::Measure;
use crate::replay::Replay;
use crate::stats::{self, format_p, Finding, Options, Paired};
use crate::suite::{Experiments, Suite};

/// Everything the statistics of one experiment computed.
#[derive(Debug, Clone)]
pub struct Computed {
    /// Configuration names, in replay order (the rows of the metrics table).
    pub names: Vec<String>,
    /// Index of the baseline in `names`.
    pub baseline: usize,
    /// The measures' display names, in the order of the measure set.
    pub measures: Vec<String>,
    /// Indices (into `measures`) of the measures that get Δ columns: nDCG@k when measured,
    /// recall@k and MRR.
    pub delta_measures: Vec<usize>,
    /// Per-task values: `[configuration][task][measure]`.
    pub values: Vec<Vec<Vec<f64>>>,
    /// `[measure][configuration]`: the comparison with the baseline (None for the baseline).
    /// Holm's family is one measure's row.
    pub paired: Vec<Vec<Option<Paired>>>,
    /// The options used.
    pub options: Options,
}

impl Computed {
    /// Per-task values of one configuration on one measure.
    pub fn column(&self, config: usize, measure: usize) -> Vec<f64> {
        self.values[config].iter().map(|t| t[measure]).collect()
    }

    /// The baseline's name.
    pub fn baseline_name(&self) -> &str {
        &self.names[self.baseline]
    }
}

/// Indices of the measures that get Δ columns in a report: nDCG (only in a fixed set, where
/// its first nDCG cutoff is the headline of a BEIR report), recall (at the suite's k, or the first recall cutoff
/// of a fixed set) and MRR, in the set's order.
pub fn delta_measure_indices(set: &MeasureSet, k: usize) -> Vec<usize> {
    let measures: Vec<Measure> = match set {
        MeasureSet::Suite => suite_measures(k).into_iter().map(|m| m.0).collect(),
        MeasureSet::Fixed(v) => v.iter().map(|m| m.0).collect(),
    };
    let recall = measures
        .iter()
        .position(|m| matches!(m, Measure::Recall(_)));
    let mrr = measures
        .iter()
        .position(|m| matches!(m, Measure::RecipRank));
    // A suite report's ADR table stays recall@k | MRR (design.md); a fixed set (BEIR) leads
    // with nDCG.
    let ndcg = match set {
        MeasureSet::Suite => None,
        MeasureSet::Fixed(_) => measures
            .iter()
            .position(|m| matches!(m, Measure::NdcgCut(_))),
    };
    let mut out: Vec<usize> = ndcg.into_iter().chain(recall).chain(mrr).collect();
    out.sort_unstable();
    out
}

/// Computes every comparison of an experiment with [`Options::default`].
pub fn compute(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
) -> Result<Computed> {
    compute_with(corpus, suite, ex, replay, set, &Options::default())
}

/// Computes every comparison of an experiment.
pub fn compute_with(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
    options: &Options,
) -> Result<Computed> {
    let names: Vec<String> = replay.runs.iter().map(|r| r.config.name.clone()).collect();
    let Some(baseline) = names.iter().position(|n| n == ex.baseline()) else {
        bail!(
            "{}: the baseline {:?} was not replayed",
            ex.path.display(),
            ex.baseline()
        );
    };
    let measures = set.names(suite.k);
    let values: Vec<Vec<Vec<f64>>> = replay
        .runs
        .iter()
        .map(|r| per_task_values(corpus, suite, r, set))
        .collect();
    // Every measure's family is independent of the others: computed over rayon's pool, collected
    // in measure order (each result is the same bits whatever thread computed it).
    let paired = measures
        .par_iter()
        .enumerate()
        .map(|(m, measure)| -> Result<Vec<Option<Paired>>> {
            let col = |c: usize| -> Vec<f64> { values[c].iter().map(|t| t[m]).collect() };
            let base = col(baseline);
            let others: Vec<Vec<f64>> = (0..names.len())
                .filter(|&c| c != baseline)
                .map(col)
                .collect();
            let refs: Vec<&[f64]> = others.iter().map(Vec::as_slice).collect();
            let mut family = stats::against_baseline(&base, &refs, options)
                .with_context(|| {
                    format!(
                        "statistics of {measure} against the baseline {}",
                        names[baseline]
                    )
                })?
                .into_iter();
            Ok((0..names.len())
                .map(|c| if c == baseline { None } else { family.next() })
                .collect())
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Computed {
        names,
        baseline,
        delta_measures: delta_measure_indices(set, suite.k),
        measures,
        values,
        paired,
        options: *options,
    })
}

/// The statistics section of a report.
#[derive(Debug, Clone)]
pub struct StatsSection {
    /// Columns to append to the metrics table, one value per configuration in replay order:
    /// `Δ <measure> [95% CI]`, `p (raw) <measure>` and `p (Holm) <measure>` for nDCG@k (when measured), recall@k and MRR. Strings, `—` on the
    /// baseline's row.
    pub columns: Vec<Column>,
    /// The one-line reading for the ADR.
    pub reading: String,
    /// How the numbers were computed (methods, sizes, seed, which p-values are exact).
    pub method: String,
    /// Every comparison (configuration × measure of the set): configuration, measure, n,
    /// baseline, mean, delta, ci_low, ci_high, wins, ties, losses, p, p_method, p_holm.
    pub table: Table,
}

/// The whole statistics section of one experiment.
pub fn section(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
) -> Result<StatsSection> {
    let c = compute(corpus, suite, ex, replay, set)?;
    section_of(&c)
}

/// The statistics section from computed comparisons.
pub fn section_of(c: &Computed) -> Result<StatsSection> {
    let ci_name = format!("{:.0}% CI", c.options.confidence * 100.0);
    let mut columns = Vec::new();
    for &m in &c.delta_measures {
        let name = &c.measures[m];
        let (mut delta, mut raw, mut holm) = (Vec::new(), Vec::new(), Vec::new());
        for pair in &c.paired[m] {
            match pair {
                None => {
                    delta.push("—".to_string());
                    raw.push("—".to_string());
                    holm.push("—".to_string());
                }
                Some(s) => {
                    delta.push(s.delta_with_ci());
                    raw.push(format_p(s.test.p));
                    holm.push(format_p(s.p_holm));
                }
            }
        }
        columns.push(Column::new(format!("Δ {name} [{ci_name}]"), delta));
        columns.push(Column::new(format!("p (raw) {name}"), raw));
        columns.push(Column::new(format!("p (Holm) {name}"), holm));
    }

    let findings: Vec<Finding<'_>> = c
        .delta_measures
        .iter()
        .flat_map(|&m| {
            c.paired[m].iter().enumerate().filter_map(move |(i, p)| {
                p.as_ref().map(|paired| Finding {
                    name: &c.names[i],
                    measure: &c.measures[m],
                    paired,
                })
            })
        })
        .collect();
    let shown: Vec<&str> = c
        .delta_measures
        .iter()
        .map(|&m| c.measures[m].as_str())
        .collect();
    let reading = stats::reading(
        c.baseline_name(),
        "configuration",
        c.names.len() - 1,
        &shown,
        &findings,
        stats::ALPHA,
    );

    let (exact, sampled) = findings
        .iter()
        .fold((0, 0), |(e, s), f| match f.paired.test.method {
            stats::Method::Exact { .. } => (e + 1, s),
            stats::Method::Sampled { .. } => (e, s + 1),
        });
    let which = match (exact, sampled) {
        (0, 0) => String::new(),
        (_, 0) => format!(" The {exact} p-values of the Δ columns are exact."),
        (0, _) => format!(" The {sampled} p-values of the Δ columns are sampled."),
        _ => format!(" Of the p-values of the Δ columns, {exact} are exact and {sampled} sampled."),
    };
    let method = format!("{}{which}", c.options.describe("configuration", "tasks"));
    Ok(StatsSection {
        columns,
        reading,
        method,
        table: long_table(c)?,
    })
}

/// One row per (configuration other than the baseline, measure), measures in set order.
fn long_table(c: &Computed) -> Result<Table> {
    let mut configuration = Vec::new();
    let mut measure = Vec::new();
    let mut n = Vec::new();
    let mut base = Vec::new();
    let mut mean = Vec::new();
    let mut delta = Vec::new();
    let mut lo = Vec::new();
    let mut hi = Vec::new();
    let mut wins = Vec::new();
    let mut ties = Vec::new();
    let mut losses = Vec::new();
    let mut p = Vec::new();
    let mut method = Vec::new();
    let mut holm = Vec::new();
    for (m, row) in c.paired.iter().enumerate() {
        for (i, s) in row.iter().enumerate() {
            let Some(s) = s else { continue };
            configuration.push(c.names[i].clone());
            measure.push(c.measures[m].clone());
            n.push(s.n as u32);
            base.push(s.baseline_mean);
            mean.push(s.mean);
            delta.push(s.delta);
            lo.push(s.ci.lo);
            hi.push(s.ci.hi);
            wins.push(s.wins as u32);
            ties.push(s.ties as u32);
            losses.push(s.losses as u32);
            p.push(s.test.p);
            method.push(s.test.method.name().to_string());
            holm.push(s.p_holm);
        }
    }
    Table::new(vec![
        Column::new("configuration", configuration),
        Column::new("measure", measure),
        Column::new("n", n),
        Column::new("baseline", base),
        Column::new("mean", mean),
        Column::new("delta", delta),
        Column::new("ci_low", lo),
        Column::new("ci_high", hi),
        Column::new("wins", wins),
        Column::new("ties", ties),
        Column::new("losses", losses),
        Column::new("p", p),
        Column::new("p_method", method),
        Column::new("p_holm", holm),
    ])
}
