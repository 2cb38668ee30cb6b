//! `ranklab gate`: block a change that makes retrieval worse.
//!
//! Built as `ranklab compare` is: a checked plan from the flags and the baseline
//! ([`crate::gate::plan`]), then measuring ([`crate::gate::measure`]: one replay per suite, every
//! paired assertion), then verdicts ([`crate::gate::verdict`]: pass, OKISH, REGRESSION,
//! improved, a failing rise on the legacy wiring's rows, new, gone, skipped; per-task
//! expectations), then the baseline update if asked ([`crate::gate::update`]), then rendering
//! ([`crate::gate::render`]: Markdown on stdout and appended to `$GITHUB_STEP_SUMMARY`, and
//! `--json`).
//!
//! Changed inputs do not stop the gate: when the corpus, tasks, judgments or a gated
//! configuration changed since the baseline, a banner names the change ([`crate::gate::changes`])
//! and every row is still replayed and graded. `--update` refuses while a row fails or an
//! expectation fails, unless `--accept-regressions WHY` records who, when and why.
//!
//! Exit codes: 0 every row and assertion passes (or the baseline was written); 1 a regression,
//! a gone row, a failed per-task expectation or paired assertion, or a refused `--update`; 2 bad
//! input (a baseline naming an unknown suite, a bad flag, unreadable files).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::gate::plan::{Flags, Mode, Plan};
use crate::gate::render;
use crate::gate::update::{self, calibrate};
use crate::gate::verdict::Outcome;

/// Arguments of `ranklab gate`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The gated rows are those of the baseline file. A row allows max(tolerance, 3 x spread): a change \
within it passes; a drop beyond it but within 1.5x is OKISH (shown, passes); a larger drop fails; \
a rise beyond it passes as improved (record it with --update), except on rows with \
\"rise\": \"fails\" (the legacy wiring's, which must keep showing the bug). A baseline row whose \
configuration or metric no longer exists is gone and fails. Each suite's baseline configuration \
not in the file yet is shown as a new row. The baseline's per-task expectations (document within \
the top N of a configuration for a task) are gated too, and every tasks/<suite>/paired*.yaml is \
run. The table is printed, and appended to $GITHUB_STEP_SUMMARY when that is set.

When the corpus, the tasks, the judgments or a gated configuration changed since the baseline, a \
banner names what changed (records added, removed, edited; tasks; judgments +N/-N; the \
configuration) and the gate still replays and grades every row.

--update rewrites the baseline (atomically) for: the rows already in it, recall@k and MRR of each \
experiments file's baseline configuration, each --also, and nDCG@10 of bm25 and dense for each \
--beir collection. It refuses (exit 1, nothing written, the failures named) while a row regresses \
or an expectation fails, unless --accept-regressions \"why\" is given: then the baseline records \
per accepted row the old and new value, who, when and why, and every gate shows it while the value \
stands. A failed paired assertion always refuses. Delete a row by hand to stop gating it; a \
tolerance edited by hand is kept, and so are the expectations.

--calibrate N replays N times and writes each row's spread (largest minus smallest value) into \
the baseline, for configurations whose output varies between runs.

--json FILE writes the result as JSON (`-`: to stdout, instead of the Markdown).

Exit codes: 0 pass (or the baseline written); 1 a regression, a gone row, a failed per-task \
expectation or paired assertion, or a refused --update; 2 bad input (a baseline naming an unknown \
suite, a bad flag, unreadable files).")]
pub(crate) struct GateArgs {
    /// The baseline file: the gated rows, their values and tolerances.
    #[arg(long, default_value_os_t = crate::root::default("reports/baseline.json"))]
    pub baseline: PathBuf,
    /// Directory holding one folder per suite (suite.yaml, experiments*.yaml, paired*.yaml),
    /// or one suite (its folder or its suite.yaml): then only that suite's rows are gated.
    #[arg(long, default_value_os_t = crate::root::default("tasks"))]
    pub tasks: PathBuf,
    /// Rewrite the baseline with the values of now (after review). Adds each suite's baseline
    /// configuration and every --also; keeps every row already gated and its tolerance.
    #[arg(long)]
    pub update: bool,
    /// With --update: also gate this configuration (e.g. `brain/current`, the shipped wiring).
    #[arg(long, value_name = "SUITE/CONFIGURATION", requires = "update")]
    pub also: Vec<String>,
    /// A BEIR collection directory to gate too (e.g. ../shared/data/scifact): nDCG@10 of bm25
    /// and dense. Opt-in: dense embeds the whole corpus (minutes on first run, cached after).
    #[arg(long, value_name = "DIR")]
    pub beir: Vec<PathBuf>,
    /// The qrels split of --beir collections.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Root of the report tree: external configurations' recordings are read from
    /// <REPORTS>/<suite>/runs/ (with --from-recording).
    #[arg(long, default_value_os_t = crate::root::default("reports"))]
    pub reports: PathBuf,
    #[command(flatten)]
    pub recording: super::args::RecordingArgs,
    /// Replay N times (N >= 2) and store each row's spread (largest minus smallest value) in the
    /// baseline; a row then allows max(tolerance, 3 x spread). For configurations whose output
    /// varies from run to run (external engines, approximate indexes). Values are not changed.
    #[arg(long, value_name = "N", conflicts_with = "update")]
    pub calibrate: Option<usize>,
    /// With --update: write the baseline even though rows regress or expectations fail, and
    /// record per accepted row the old and new value, who (git user.name, else $USER), when
    /// (UTC) and this reason. Without it, --update refuses while anything fails.
    #[arg(long, value_name = "WHY", requires = "update")]
    pub accept_regressions: Option<String>,
    /// With --update: which grades the suites' rows are recorded on: people's only (the
    /// default), or also the LLM grades of judgments.yaml (`ranklab judge --llm`). The
    /// baseline records the choice per suite (`"llm_grades": true`) and every later gate
    /// takes the same grades; a suite recorded without them has its LLM grades ignored, with a
    /// note.
    #[arg(
        long = "judgments",
        value_name = "WHICH",
        default_value = "human",
        requires = "update"
    )]
    pub judgments: crate::judgments::Selection,
    /// Gate two TREC runs instead of the suites: this qrels file judges both. With
    /// --baseline-run and --run; the measures are -m (default recip_rank, recall.10,
    /// ndcg_cut.10), each a row graded as a baseline row is, on every query of the qrels.
    #[arg(long, value_name = "QRELS", requires_all = ["baseline_run", "run"],
          conflicts_with_all = ["update", "calibrate", "beir", "also", "accept_regressions"])]
    pub qrels: Option<PathBuf>,
    /// With --qrels: the run the team ships today (TREC format).
    #[arg(long, value_name = "RUN", requires = "qrels")]
    pub baseline_run: Option<PathBuf>,
    /// With --qrels: the run under review (TREC format).
    #[arg(long, value_name = "RUN", requires = "qrels")]
    pub run: Option<PathBuf>,
    /// With --qrels: a measure to gate, trec_eval syntax (`recip_rank`, `ndcg_cut.10`,
    /// `recall.5`...). Repeatable.
    #[arg(
        short = 'm',
        long = "measure",
        value_name = "MEASURE",
        requires = "qrels"
    )]
    pub measures: Vec<String>,
    /// With --qrels: the tolerance of every row (a drop beyond it is OKISH up to 1.5x, then a
    /// regression).
    #[arg(long, value_name = "T", default_value_t = 0.001, requires = "qrels")]
    pub tolerance: f64,
    /// With --qrels: minimum grade of a relevant document (trec_eval -l).
    #[arg(
        short = 'l',
        long = "level",
        value_name = "N",
        default_value_t = 1,
        requires = "qrels"
    )]
    pub rel_level: i32,
    /// A drop beyond the allowance fails only when the paired sign-flip randomization test,
    /// Holm-adjusted over the gated rows, rejects at this level (e.g. 0.05); the p-values are
    /// shown per row. For large query sets where a fixed tolerance fails on noise.
    #[arg(long, value_name = "A")]
    pub alpha: Option<f64>,
    /// Also write the whole result as JSON (rows, verdicts, counts, input changes, acceptances,
    /// the update's outcome) to FILE; `-` writes it to stdout instead of the Markdown.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// Runs the command: plan, measure, grade, update, render.
pub(crate) fn run(args: GateArgs) -> Result<ExitCode> {
    if let Some(qrels) = &args.qrels {
        return runs(&args, qrels);
    }
    if args.alpha.is_some() {
        anyhow::bail!("--alpha is implemented for the two-run gate (--qrels) only in this build");
    }
    let plan = Plan::new(&Flags {
        baseline: args.baseline.clone(),
        tasks: args.tasks.clone(),
        update: args.update,
        also: args.also.clone(),
        accept_regressions: args.accept_regressions.clone(),
        beir: args.beir.clone(),
        split: args.split.clone(),
        external: args.recording.mode(),
        recordings: args.recording.recordings_root(&args.reports).to_path_buf(),
        calibrate: args.calibrate,
        judgments: args.judgments,
    })?;
    if let Mode::Calibrate(n) = plan.mode {
        return calibrate(&plan, n);
    }
    let outcome = Outcome::grade(&plan, plan.measure()?);
    let update = update::apply(&plan, &outcome)?;
    let code = render::exit_code(&plan, &outcome, &update);
    let md = render::markdown(&plan, &outcome, &update);
    let json = args
        .json
        .as_deref()
        .map(|p| (p, render::json(&plan, &outcome, &update, code)));
    render::emit(&md, json)?;
    Ok(ExitCode::from(code))
}

/// `ranklab gate --qrels Q --baseline-run A --run B`: the two-run gate.
fn runs(args: &GateArgs, qrels: &std::path::Path) -> Result<ExitCode> {
    if !(args.tolerance.is_finite() && (0.0..=1.0).contains(&args.tolerance)) {
        anyhow::bail!(
            "--tolerance {}: wants a number from 0 to 1 (e.g. 0.001)",
            args.tolerance
        );
    }
    let gate = crate::gate::runs::RunsGate::run(crate::gate::runs::RunsFlags {
        qrels: qrels.to_path_buf(),
        baseline_run: args
            .baseline_run
            .clone()
            .expect("clap requires --baseline-run"),
        run: args.run.clone().expect("clap requires --run"),
        measures: args.measures.clone(),
        tolerance: crate::gate::baseline::Fixed::from_f64(args.tolerance),
        alpha: args.alpha,
        rel_level: args.rel_level,
        seed: crate::stats::DEFAULT_SEED,
    })?;
    let md = gate.markdown();
    let json = args.json.as_deref().map(|p| (p, gate.json()));
    render::emit(&md, json)?;
    Ok(ExitCode::from(gate.exit_code()))
}
