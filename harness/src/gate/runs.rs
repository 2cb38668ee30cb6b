//! The gate of two TREC runs (`ranklab gate --qrels QRELS --baseline-run A --run B`), for teams
//! whose own pipeline writes runs: the same verdicts as a suite's gate ([`Verdict::of`] with the
//! same allowance and OKISH band), the same moved tasks, table, step summary, `--json` and exit
//! codes, with the two runs evaluated by the trec_eval-exact evaluator ([`crate::compare`]).
//!
//! `--alpha A` (here and on a suite's gate): a drop beyond the allowance fails only when the
//! paired sign-flip randomization test of the two runs' per-query values, Holm-adjusted over the
//! gated rows, rejects at A ([`significant_drops`]); the p-value is shown on every row.
//!
//! Guarantees: the runs are paired on every query of the qrels, a query missing from a run
//! counting 0 in every measure (trec_eval `-c`: a query the new run lost is a loss, not a
//! smaller sample); values are compared at trec_eval's four printed decimals ([`Fixed`]); moved
//! tasks are in a total order (Δ ascending, then query id by bytes). Same inputs, same seed:
//! byte-identical output.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;

use super::baseline::{Fixed, Row, DEFAULT_TOLERANCE};
use super::rankings::{first_relevant_by, overtaken_by, push_moved_list, Moved, MOVED_SHOWN};
use super::verdict::Verdict;
use crate::compare::{compare, Comparison, Plan as ComparePlan};
use crate::metrics::Better;
use crate::report::table::md_cell;
use crate::stats;
use crate::trec::{read_run_where, Qrels, RankedQuery};

/// Measures gated when no `-m` is given: the suites' gated measures (MRR, recall at a cutoff)
/// and the BEIR gate's nDCG@10.
pub const DEFAULT_MEASURES: [&str; 3] = ["recip_rank", "recall.10", "ndcg_cut.10"];

/// What `ranklab gate --qrels` was asked.
#[derive(Debug, Clone)]
pub struct RunsFlags {
    /// The qrels file.
    pub qrels: PathBuf,
    /// The baseline run (what the team ships today).
    pub baseline_run: PathBuf,
    /// The run under review.
    pub run: PathBuf,
    /// `-m` specs (trec_eval syntax); empty: [`DEFAULT_MEASURES`].
    pub measures: Vec<String>,
    /// The allowance of every row (four decimals).
    pub tolerance: Fixed,
    /// `--alpha`: fail a drop only when it is significant at this level (Holm over the rows).
    pub alpha: Option<f64>,
    /// Minimum grade of a relevant document (trec_eval -l).
    pub rel_level: i32,
    /// Seed of the randomization test.
    pub seed: u64,
}

/// One gated measure of the run against the baseline run.
#[derive(Debug, Clone)]
pub struct RunRow {
    /// Measure name (trec_eval's).
    pub metric: String,
    /// Baseline run's mean and the allowance, as a gate row.
    pub row: Row,
    /// The run's mean.
    pub now: Fixed,
    /// The verdict before `--alpha` is applied.
    pub verdict: Verdict,
    /// Raw p of the paired randomization test.
    pub p: f64,
    /// Holm-adjusted p over the gated rows.
    pub p_holm: f64,
    /// Whether the row fails (a regression that `--alpha`, if given, finds significant).
    pub fails: bool,
    /// Tasks that dropped, worst first (all of them; rendering shows [`MOVED_SHOWN`]).
    pub moved: Vec<Moved>,
}

/// The result of a two-run gate.
#[derive(Debug, Clone)]
pub struct RunsGate {
    /// The flags it ran with.
    pub flags: RunsFlags,
    /// Labels of the two runs (file stems).
    pub labels: (String, String),
    /// Queries paired (every query of the qrels).
    pub queries: usize,
    /// One row per measure.
    pub rows: Vec<RunRow>,
}

impl RunsGate {
    /// Evaluates both runs, grades each measure and finds the moved tasks.
    pub fn run(flags: RunsFlags) -> Result<RunsGate> {
        if let Some(a) = flags.alpha {
            if !(a > 0.0 && a < 1.0) {
                bail!("--alpha {a}: wants a level strictly between 0 and 1, e.g. 0.05");
            }
        }
        let specs: Vec<String> = if flags.measures.is_empty() {
            DEFAULT_MEASURES.iter().map(|s| s.to_string()).collect()
        } else {
            flags.measures.clone()
        };
        let runs = [flags.baseline_run.clone(), flags.run.clone()];
        let plan = ComparePlan::new(&runs, &specs, flags.rel_level, true, flags.seed, 10)?;
        if let Some(m) = plan.measures.iter().find(|m| m.better().is_none()) {
            bail!(
                "-m {}: has no better or worse to gate (relstring is a string, num_ret how many were returned, num_rel the qrels' count); gate a measure of the ranking, e.g. -m map or -m num_rel_ret",
                m.name()
            );
        }
        let labels = (plan.runs[0].0.clone(), plan.runs[1].0.clone());
        let cmp = compare(plan, &flags.qrels)?;
        let mut rows = rows_of(&cmp, &flags, &labels.1);
        let p: Vec<f64> = rows.iter().map(|r| r.p).collect();
        let holm = stats::holm(&p);
        for (r, h) in rows.iter_mut().zip(holm) {
            r.p_holm = h;
            r.fails = r.verdict.fails() && flags.alpha.is_none_or(|a| h < a);
        }
        // The moved tasks need the qrels and both ranked lists once more (`compare` keeps only
        // per-query values): read them only when some measure dropped.
        let dropped = |r: &RunRow| matches!(r.verdict, Verdict::Okish | Verdict::Regression);
        if rows.iter().any(dropped) {
            let qrels = Qrels::read(&flags.qrels)?;
            let lists = [
                read_lists(&flags.baseline_run, &qrels)?,
                read_lists(&flags.run, &qrels)?,
            ];
            for (m, r) in rows.iter_mut().enumerate() {
                if dropped(r) {
                    let sign = f64::from(worse_sign(&cmp.plan.measures[m]));
                    r.moved = moved(&cmp, (m, sign), &qrels, flags.rel_level, &lists);
                }
            }
        }
        Ok(RunsGate {
            queries: cmp.evaluations[0].per_query.len(),
            flags,
            labels,
            rows,
        })
    }

    /// Whether the gate fails.
    pub fn failed(&self) -> bool {
        self.rows.iter().any(|r| r.fails)
    }

    /// The exit code: 1 when a row fails, else 0.
    pub fn exit_code(&self) -> u8 {
        u8::from(self.failed())
    }
}

/// The gated rows of a comparison: per measure, the baseline run's mean as the row's value.
fn rows_of(cmp: &Comparison, flags: &RunsFlags, label: &str) -> Vec<RunRow> {
    cmp.plan
        .measures
        .iter()
        .enumerate()
        .map(|(m, measure)| {
            let paired = cmp.paired[m][1]
                .as_ref()
                .expect("the second run is compared with the first");
            // trec_eval's value (a geometric mean for gm_*, whose per-query values are logs).
            let (before, after) = (
                measure.mean_shown(paired.baseline_mean),
                measure.mean_shown(paired.mean),
            );
            let mut row = Row::new(
                (
                    "runs".to_string(),
                    label.to_string(),
                    measure.name().to_string(),
                ),
                Fixed::from_f64(before),
                false,
            );
            row.tolerance = flags.tolerance;
            let now = Fixed::from_f64(after);
            // Graded the way the measure is better: a lower-is-better measure's rise is its drop.
            let sign = i64::from(worse_sign(measure));
            let graded = Row {
                value: Fixed(sign * row.value.0),
                ..row.clone()
            };
            let verdict = Verdict::of(&graded, Fixed(sign * now.0));
            RunRow {
                metric: measure.name(),
                verdict,
                row,
                now,
                p: paired.test.p,
                p_holm: paired.test.p,
                fails: false,
                moved: Vec::new(),
            }
        })
        .collect()
}

/// 1 for a measure that is better higher, -1 for one that is better lower (its values are
/// graded negated, so a rise is a drop).
fn worse_sign(m: &crate::metrics::Measure) -> i8 {
    match m.better() {
        Some(Better::Lower) => -1,
        _ => 1,
    }
}

/// A run's ranked lists of the judged queries by query id (the others are not evaluated, so
/// not read: a document twice in one of them is no error, as in `ranklab eval`).
fn read_lists(path: &Path, qrels: &Qrels) -> Result<HashMap<String, RankedQuery>> {
    Ok(read_run_where(path, |q| qrels.query(q).is_some())
        .with_context(|| format!("reading {}", path.display()))?
        .into_iter()
        .map(|q| (q.qid.clone(), q))
        .collect())
}

/// The tasks whose value on measure `m` got worse (dropped; rose when `sign` is -1, a
/// lower-is-better measure), worst first; `delta` is the change times `sign`.
fn moved(
    cmp: &Comparison,
    (m, sign): (usize, f64),
    qrels: &Qrels,
    rel_level: i32,
    lists: &[HashMap<String, RankedQuery>; 2],
) -> Vec<Moved> {
    let before = &cmp.evaluations[0].per_query;
    let after = &cmp.evaluations[1].per_query;
    let mut out: Vec<Moved> = before
        .iter()
        .zip(after)
        .filter_map(|(b, a)| {
            let delta = sign * (a.values[m] - b.values[m]);
            if delta >= -stats::TIE_EPSILON {
                return None;
            }
            let relevant: HashSet<&str> = qrels
                .query(&b.qid)
                .map(|q| {
                    q.judgments
                        .iter()
                        .filter(|(_, g)| *g >= rel_level)
                        .map(|(d, _)| d.as_str())
                        .collect()
                })
                .unwrap_or_default();
            let ranked = |l: &HashMap<String, RankedQuery>| -> Vec<String> {
                l.get(&b.qid)
                    .map(|q| q.docs.iter().map(|(d, _)| d.clone()).collect())
                    .unwrap_or_default()
            };
            let (old, new) = (ranked(&lists[0]), ranked(&lists[1]));
            let (rb, ra) = (
                first_relevant_by(&old, |d| relevant.contains(d)),
                first_relevant_by(&new, |d| relevant.contains(d)),
            );
            Some(Moved {
                task: b.qid.clone(),
                query: String::new(),
                before: rb,
                after: ra,
                overtaken_by: overtaken_by(&old, &new, rb, ra),
                delta,
            })
        })
        .collect();
    out.sort_by(|x, y| {
        x.delta
            .total_cmp(&y.delta)
            .then_with(|| x.task.as_bytes().cmp(y.task.as_bytes()))
    });
    out
}

impl RunsGate {
    /// The verdict as printed, with `--alpha`'s reading.
    fn verdict_text(&self, r: &RunRow) -> String {
        match (self.flags.alpha, r.verdict.fails(), r.fails) {
            (Some(a), true, false) => format!(
                "pass (drop not significant: Holm p {} ≥ α {a})",
                stats::format_p(r.p_holm)
            ),
            (Some(_), true, true) => format!("{} (significant)", r.verdict.as_str()),
            // Two runs have no baseline file to record an improvement in.
            (_, false, _) if r.verdict == Verdict::Improved => "pass (improved)".to_string(),
            _ => r.verdict.as_str().to_string(),
        }
    }

    /// The Markdown report: settings, the table, the moved tasks, the one-line result.
    pub fn markdown(&self) -> String {
        let f = &self.flags;
        let mut s = format!(
            "## ranklab gate: {} against {}\n\nqrels {} ({} queries, paired; a query missing from a run counts 0), tolerance {}{}.\n\n",
            md_cell(&self.labels.1),
            md_cell(&self.labels.0),
            f.qrels.display(),
            self.queries,
            f.tolerance.show(),
            f.alpha.map_or(String::new(), |a| format!(
                ", --alpha {a}: a drop beyond the tolerance fails only when significant (paired sign-flip test, Holm over the rows)"
            )),
        );
        s.push_str("| measure | baseline | now | delta | tolerance | p (Holm) | verdict |\n|---|---:|---:|---:|---:|---:|---|\n");
        for r in &self.rows {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} ({}) | {} |",
                md_cell(&r.metric),
                r.row.value.show(),
                r.now.show(),
                Fixed(r.now.0 - r.row.value.0).show_signed(),
                r.row.tolerance.show(),
                stats::format_p(r.p),
                stats::format_p(r.p_holm),
                self.verdict_text(r)
            );
        }
        for r in self.rows.iter().filter(|r| !r.moved.is_empty()) {
            let heading = format!("{} ({})", md_cell(&r.metric), self.verdict_text(r));
            push_moved_list(&mut s, &heading, &r.moved);
        }
        let failed = self.rows.iter().filter(|r| r.fails).count();
        let _ = writeln!(
            s,
            "\n{}: {} of {} rows fail.",
            if failed > 0 { "FAIL" } else { "PASS" },
            failed,
            self.rows.len()
        );
        s
    }

    /// The `--json` document.
    pub fn json(&self) -> String {
        #[derive(Serialize)]
        struct Doc<'a> {
            mode: &'static str,
            qrels: String,
            baseline_run: String,
            run: String,
            queries: usize,
            tolerance: f64,
            alpha: Option<f64>,
            rows: Vec<JsonRow<'a>>,
            failed: usize,
            exit_code: u8,
        }
        #[derive(Serialize)]
        struct JsonRow<'a> {
            configuration: &'a str,
            metric: &'a str,
            baseline: f64,
            now: f64,
            delta: f64,
            tolerance: f64,
            p: f64,
            p_holm: f64,
            verdict: &'static str,
            fails: bool,
            moved: &'a [Moved],
            moved_more: usize,
        }
        let doc = Doc {
            mode: "runs",
            qrels: self.flags.qrels.display().to_string(),
            baseline_run: self.flags.baseline_run.display().to_string(),
            run: self.flags.run.display().to_string(),
            queries: self.queries,
            tolerance: self.flags.tolerance.as_f64(),
            alpha: self.flags.alpha,
            rows: self
                .rows
                .iter()
                .map(|r| JsonRow {
                    configuration: &self.labels.1,
                    metric: &r.metric,
                    baseline: r.row.value.as_f64(),
                    now: r.now.as_f64(),
                    delta: Fixed(r.now.0 - r.row.value.0).as_f64(),
                    tolerance: r.row.tolerance.as_f64(),
                    p: r.p,
                    p_holm: r.p_holm,
                    verdict: if r.verdict.fails() && !r.fails {
                        "not-significant"
                    } else {
                        r.verdict.key()
                    },
                    fails: r.fails,
                    moved: &r.moved[..r.moved.len().min(MOVED_SHOWN)],
                    moved_more: r.moved.len().saturating_sub(MOVED_SHOWN),
                })
                .collect(),
            failed: self.rows.iter().filter(|r| r.fails).count(),
            exit_code: self.exit_code(),
        };
        let mut text = serde_json::to_string_pretty(&doc).expect("a gate result serializes");
        text.push('\n');
        text
    }
}

/// The default tolerance of a row of the two-run gate (the suites' default).
pub fn default_tolerance() -> Fixed {
    DEFAULT_TOLERANCE
}
