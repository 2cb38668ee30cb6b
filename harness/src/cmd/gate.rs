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
//! Exit codes ([`crate::exit::Exit`]): 0 every row and assertion passes (or the baseline was
//! written); 1 a regression, a gone row, a failed per-task expectation or paired assertion; 2 bad
//! input (a baseline naming an unknown suite, a bad flag, unreadable files) or a refused
//! `--update` (nothing written).

use crate::exit::Exit;
use std::path::PathBuf;

use anyhow::Result;

use crate::gate::plan::{Flags, Mode, Plan};
use crate::gate::render;
use crate::gate::update::{self, calibrate};
use crate::gate::verdict::Outcome;

/// Arguments of `ranklab gate`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Every vector and pair score comes from the recorded model outputs (reports/<suite>/runs/models/, \
reports/beir/<name>/runs/models/) and every external engine's answer from its recording, as \
`bench --from-recording` takes them: the same inputs give the same verdict on every machine. \
`--from-recording` is accepted and is the default; only what a recording lacks is computed (or \
taken from the cache), and the banner and `--json` (`model_outputs`) say how many values were \
recorded, cached and computed here, and by which int8 kernel. `--live` computes everything here \
and asks engines live. A row replayed from an engine recording made against another corpus is \
STALE and fails with the command that re-records it (`--allow-stale`: shown, passing).

The gated rows are those of the baseline file. A row allows max(tolerance, 3 x spread): a change \
within it passes; a drop beyond it but within 1.5x is OKISH (shown, passes); a larger drop fails; \
a rise beyond it passes as improved (record it with --update), except on rows with \
\"rise\": \"fails\" (the legacy wiring's, which must keep showing the bug). A baseline row whose \
configuration or metric no longer exists is gone and fails. Each shipped configuration not in \
the file yet is shown as a new row. The baseline's per-task expectations (document within \
the top N of a configuration for a task) are gated too, and every tasks/<suite>/paired*.yaml is \
run. The table is printed, and appended to $GITHUB_STEP_SUMMARY when that is set.

When the corpus, the tasks, the judgments or a gated configuration changed since the baseline, a \
banner names what changed (records added, removed, edited; tasks; judgments +N/-N; the \
configuration) and the gate still replays and grades every row.

When the judgments changed since the baseline, each row is graded against the baseline's \
rankings (kept in <baseline>.runs/) scored under today's judgments: the table shows the recorded \
value, the baseline under today's judgments, and now. A judging session alone never fails the \
gate; a ranking change still does. A failed or OKISH row names the tasks that moved, worst first \
(first relevant rank before -> after, the document that overtook it, the task's delta), ten at \
most.

--update rewrites the baseline (atomically) for: the rows already in it, recall@k and MRR of the \
configurations each suite ships (`ships:` in suite.yaml; without it, each experiments file's \
baseline configuration), each --also, and nDCG@10 of bm25 and dense for each --beir collection; \
it keeps each suite row's rankings in <baseline>.runs/<suite>/<configuration>.trec, and adds the \
model outputs the rows rest on that the recording lacked to <reports>/<suite>/runs/models/ \
(<reports>/beir/<name>/runs/models/ for a collection), so that every later gate replays them. It refuses (exit 2, nothing written, the failures named) while a row regresses \
or an expectation fails, unless --accept-regressions \"why\" is given: then the baseline records \
per accepted row the old and new value, who, when and why, and every gate shows it while the value \
stands. A failed paired assertion always refuses. Delete a row by hand to stop gating it; a \
tolerance edited by hand is kept, and so are the expectations.

--calibrate N replays N times, live (engines asked, models computed here), and writes each row's spread (largest minus smallest value) into \
the baseline, for configurations whose output varies between runs.

--json FILE writes the result as JSON (`-`: to stdout, instead of the Markdown).

Exit codes: 0 pass (or the baseline written); 1 a regression, a gone row, a STALE row, a failed \
per-task expectation or paired assertion; 2 bad input (a baseline naming an unknown suite, a bad \
flag, unreadable files) or a refused --update (nothing written), as for every command.")]
pub(crate) struct GateArgs {
    /// The baseline file: the gated rows, their values and tolerances.
    #[arg(long, default_value_os_t = crate::root::default("reports/baseline.json"))]
    pub baseline: PathBuf,
    /// Directory holding one folder per suite (suite.yaml, experiments*.yaml, paired*.yaml),
    /// or one suite (its folder or its suite.yaml): then only that suite's rows are gated.
    #[arg(long, default_value_os_t = crate::root::default("tasks"))]
    pub tasks: PathBuf,
    /// Rewrite the baseline with the values of now (after review). Adds the configurations each
    /// suite ships (`ships:` in suite.yaml) and every --also; keeps every row already gated and
    /// its tolerance, and the rankings of each suite row beside the baseline.
    #[arg(long)]
    pub update: bool,
    /// With --update: also gate this configuration (e.g. `docir/minisearch`); repeatable.
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
    /// Compute every model output on this machine (or take it from the cache) and ask
    /// external engines live, instead of replaying the recordings (the default). Values then
    /// depend on this CPU's int8 kernel; for looking, not for CI.
    #[arg(long, conflicts_with_all = ["record", "from_recording"])]
    pub live: bool,
    /// A row replayed from an external engine's recording made against another corpus is
    /// STALE and fails; with this flag it is shown as stale and passes.
    #[arg(long)]
    pub allow_stale: bool,
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
    /// shown per row. For large query sets where a fixed tolerance fails on noise. A suite row is
    /// tested on its tasks (the baseline's kept rankings against now); a row with no kept
    /// rankings (a BEIR collection's) is graded by its tolerance alone.
    #[arg(long, value_name = "A")]
    pub alpha: Option<f64>,
    /// Also write the whole result as JSON (rows, verdicts, counts, input changes, acceptances,
    /// the update's outcome) to FILE; `-` writes it to stdout instead of the Markdown.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the ranking explorer page of each row that failed or passed OKISH to
    /// DIR/<suite>-<configuration>.html (self-contained, no network: open it from the CI
    /// artifacts): the rankings kept with the baseline beside today's, task by task.
    #[arg(long, value_name = "DIR", conflicts_with = "qrels")]
    pub html: Option<PathBuf>,
}

/// Runs the command: plan, measure, grade, update, render.
pub(crate) fn run(args: GateArgs) -> Result<Exit> {
    render::check_outputs(args.json.as_deref(), args.html.as_deref())?;
    if let Some(qrels) = &args.qrels {
        return runs(&args, qrels);
    }
    if let Some(a) = args.alpha {
        if !(a > 0.0 && a < 1.0) {
            anyhow::bail!("--alpha {a}: wants a level strictly between 0 and 1, e.g. 0.05");
        }
    }
    let plan = Plan::new(&Flags {
        baseline: args.baseline.clone(),
        tasks: args.tasks.clone(),
        update: args.update,
        also: args.also.clone(),
        accept_regressions: args.accept_regressions.clone(),
        beir: args.beir.clone(),
        split: args.split.clone(),
        external: match (args.live, args.recording.mode()) {
            (true, _) => crate::external::Mode::Live,
            // A recording replayed N times has no spread: calibration asks live.
            (false, crate::external::Mode::Live) if args.calibrate.is_some() => {
                crate::external::Mode::Live
            }
            // Recording replay is the gate's default: the same inputs, the same verdict, on
            // every machine (`--from-recording` is accepted and means the same).
            (false, crate::external::Mode::Live) => crate::external::Mode::FromRecording,
            (false, m) => m,
        },
        recordings: args.recording.recordings_root(&args.reports).to_path_buf(),
        calibrate: args.calibrate,
        judgments: args.judgments,
        allow_stale: args.allow_stale,
        alpha: args.alpha,
    })?;
    if let Mode::Calibrate(n) = plan.mode {
        calibrate(&plan, n)?;
        return Ok(Exit::Ok);
    }
    let mut measured = plan.measure()?;
    let (outputs, lists) = (measured.outputs.clone(), measured.lists.clone());
    let pending = std::mem::take(&mut measured.pending);
    let outcome = Outcome::grade(&plan, measured);
    if let Some(dir) = &args.html {
        pages(&plan, &outcome, &lists, dir)?;
    }
    let update = update::apply(&plan, &outcome, &lists, &pending)?;
    let code = render::exit_code(&plan, &outcome, &update);
    let md = render::markdown(&plan, &outcome, &update, &outputs);
    let json = args
        .json
        .as_deref()
        .map(|p| (p, render::json(&plan, &outcome, &update, code, &outputs)));
    render::emit(&md, json)?;
    Ok(code)
}

/// `--html DIR`: one explorer page per configuration with a row that failed, passed OKISH or
/// rose where it must not, when its rankings were kept with the baseline; the files written
/// (or why none) on stderr.
fn pages(
    plan: &Plan,
    outcome: &Outcome,
    lists: &std::collections::BTreeMap<(String, String), crate::gate::rankings::Lists>,
    dir: &std::path::Path,
) -> Result<()> {
    use crate::gate::verdict::Verdict;
    let mut verdicts: std::collections::BTreeMap<(String, String), Vec<String>> =
        std::collections::BTreeMap::new();
    for l in &outcome.lines {
        if matches!(
            l.verdict,
            Verdict::Regression | Verdict::Okish | Verdict::Rose
        ) {
            verdicts
                .entry((l.row.suite.clone(), l.row.configuration.clone()))
                .or_default()
                .push(format!("{} {}", l.row.metric, l.verdict.as_str()));
        }
    }
    for ((suite, config), said) in &verdicts {
        let key = (suite.clone(), config.clone());
        let (Some(s), Some(kept), Some(now)) = (
            plan.subjects.get(suite),
            plan.kept.get(&key),
            lists.get(&key),
        ) else {
            eprintln!(
                "note: --html: {suite}/{config} has no rankings kept with the baseline (a BEIR collection's, or a baseline older than them): no page"
            );
            continue;
        };
        let page = crate::gate::page::page(s, config, kept, now, &said.join(", "));
        let path = crate::gate::page::file(dir, suite, config);
        crate::gate::page::write(&path, &page)?;
        eprintln!("wrote {}", crate::report::shown(&path));
    }
    if verdicts.is_empty() {
        eprintln!("note: --html: no row failed or passed OKISH: no page written");
    }
    Ok(())
}

/// `ranklab gate --qrels Q --baseline-run A --run B`: the two-run gate.
fn runs(args: &GateArgs, qrels: &std::path::Path) -> Result<Exit> {
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
    Ok(Exit::failed_if(gate.failed()))
}
