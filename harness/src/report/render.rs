//! Rendering one experiment's report from what a replay produced: the Markdown, the summary,
//! the CSV, JSON, SVG and HTML files, each part computed once.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use ranklab_engine::corpus::Corpus;

use super::checks::failures;
use super::paired_section::{paired_json, paired_markdown};
use super::table::{self, Table};
use super::trec_files::run_file;
use super::{
    adr, configs, costs, decision, explorer, external, finetune, first_ranks, llm_judgments,
    metrics_table, plots, qrels_file, shown, stats_section, tasks_markdown_table, tasks_table,
    warranty, MeasureSet, PairedResult, SuiteReport,
};
use crate::replay::Replay;
use crate::suite::{Experiments, Suite};

/// Renders the report of one experiment.
pub fn render(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
) -> Result<SuiteReport> {
    render_with(corpus, suite, ex, replay, set, &[], None)
}

/// Renders the report of one experiment, with the suite's paired assertions checked and, given
/// the suite's cost file, the cost of each rerank configuration.
pub fn render_with(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
    paired: &[PairedResult],
    costs: Option<&costs::Costs>,
) -> Result<SuiteReport> {
    // Rankings index into the corpus plus the ids external engines returned outside it.
    let all = replay.corpus_view(corpus);
    let mut parts = Parts::compute(&all, corpus, suite, ex, replay, set, paired)?;
    let tuned = super::tuned::sentences(&super::tuned::folder(suite), ex)?;
    if !tuned.is_empty() {
        parts.decision = format!("{} {tuned}", parts.decision);
    }
    let practice = |c: &crate::suite::Configuration| shown(&ex.practice_path(c));
    let stem = &ex.experiment;
    let (md, plots) = markdown(&parts, &all, suite, ex, replay, paired, &practice, costs)?;
    let mut summary = format!("{} — {}\n", suite.name, ex.experiment);
    summary.push_str(&table::markdown(&parts.headline));
    writeln!(summary, "Decision: {}", parts.decision)?;
    let mut files: Vec<(PathBuf, Vec<u8>)> = plots.files;
    let run_files = std::mem::take(&mut parts.run_files);
    files.extend(data_files(&parts, run_files, suite, stem, replay, &md)?);
    files.push((
        PathBuf::from(format!("{stem}.json")),
        json_file(&parts, suite, ex, replay, paired, &practice)?,
    ));
    let page = explorer::suite::page(&all, suite, ex, replay, set, &parts.decision);
    files.push((
        PathBuf::from(format!("{stem}.html")),
        explorer::render(&page)?.into_bytes(),
    ));
    Ok(SuiteReport {
        markdown: md,
        summary,
        stem: stem.clone(),
        files,
        failures: parts.failures,
    })
}

/// What one experiment's report is made of, each computed once and shown in the Markdown, the
/// summary, the CSV and the JSON files.
struct Parts {
    /// The metrics table with the warranty columns (the CSV and JSON files).
    metrics: Table,
    /// The metrics table with the W/T/L columns (the summary on stdout).
    headline: Table,
    /// The metrics table with the warranty, Δ/CI/p and W/T/L columns (the Markdown).
    shown: Table,
    /// The per-task table (CSV, JSON) and its Markdown form.
    tasks: Table,
    tasks_md: Table,
    /// The statistics, their section and the warranty.
    computed: stats_section::Computed,
    stats: stats_section::StatsSection,
    warranty: warranty::Warranty,
    /// Each configuration's run file, in replay order (taken for the files).
    run_files: Vec<Vec<u8>>,
    /// The corpus's size and content hash.
    corpus_len: usize,
    corpus_sha256: String,
    /// The decision (with the failed checks before it), the failed checks and the reading.
    decision: String,
    failures: Vec<String>,
    reading: String,
    /// The "LLM judgments" section (None: `judgments.yaml` holds no LLM grade).
    llm_judgments: Option<String>,
}

impl Parts {
    /// Computes the parts of the report of `replay` (`all`: the corpus with the ids external
    /// engines returned outside it).
    fn compute(
        all: &Corpus,
        corpus: &Corpus,
        suite: &Suite,
        ex: &Experiments,
        replay: &Replay,
        set: &MeasureSet,
        paired: &[PairedResult],
    ) -> Result<Parts> {
        let metrics = metrics_table(all, suite, ex, replay, set)?;
        let tasks = tasks_table(all, suite, replay)?;
        let tasks_md = tasks_markdown_table(all, suite, replay)?;
        let (ranks, _) = first_ranks(all, suite, replay);
        // The run files (one per configuration, in parallel) are built while the statistics are
        // computed: neither needs the other, and the pool stays busy through either's tail.
        let (computed, (run_files, corpus_sha256)) = rayon::join(
            || stats_section::compute(all, suite, ex, replay, set),
            || {
                use rayon::prelude::*;
                rayon::join(
                    || {
                        replay
                            .runs
                            .par_iter()
                            .map(|run| run_file(all, suite, run).into_bytes())
                            .collect::<Vec<Vec<u8>>>()
                    },
                    || corpus.content_hash(),
                )
            },
        );
        let computed = computed?;
        let stats = stats_section::section_of(&computed)?;
        let warranty = warranty::compute(all, suite, replay, set, &computed)?;
        // LLM grades merged into the tasks only when the run selected them (`--judgments all`).
        let selection = if suite.judgment_counts().llm > 0 {
            crate::judgments::Selection::All
        } else {
            crate::judgments::Selection::Human
        };
        let llm_judgments =
            llm_judgments::section(all, suite, selection, ex, replay, set, &computed)?;
        let task_ids: Vec<String> = suite.tasks.iter().map(|t| t.id.clone()).collect();
        let failures = failures(paired, replay, suite.tasks.len());
        let decision = decision::decision(&computed, &task_ids, &ranks, crate::stats::ALPHA);
        let decision = match decision::failed_checks(&failures) {
            Some(fail) => format!("{fail} {decision}"),
            None => decision,
        };
        let wtl = decision::wtl_columns(&computed);
        let mut headline = metrics.clone();
        for c in wtl.clone() {
            headline.with_column(c)?;
        }
        let mut metrics = metrics;
        for c in warranty.columns() {
            metrics.with_column(c)?;
        }
        let reading = match warranty.reading() {
            w if w.is_empty() => stats.reading.clone(),
            w => format!("{} {w}", stats.reading),
        };
        // The Markdown table shows the Δ/CI/p and W/T/L columns; the CSV and JSON tables stay
        // numeric.
        let mut shown = metrics.clone();
        for c in stats.columns.clone() {
            shown.with_column(c)?;
        }
        for c in wtl {
            shown.with_column(c)?;
        }
        Ok(Parts {
            metrics,
            headline,
            shown,
            tasks,
            tasks_md,
            computed,
            stats,
            warranty,
            run_files,
            corpus_len: corpus.len(),
            corpus_sha256,
            decision,
            failures,
            reading,
            llm_judgments,
        })
    }
}

/// The Markdown report, and its plots (whose files go beside it).
#[allow(clippy::too_many_arguments)]
fn markdown(
    p: &Parts,
    all: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    paired: &[PairedResult],
    practice: &dyn Fn(&crate::suite::Configuration) -> String,
    costs: Option<&costs::Costs>,
) -> Result<(String, plots::Plots)> {
    let mut md = String::new();
    writeln!(md, "# {} — {}\n", suite.name, ex.experiment)?;
    let cost = costs.and_then(|c| {
        decision::cost_sentence(&p.computed, crate::stats::ALPHA, &|name| {
            costs::cold_p50(c, &ex.experiment, name)
        })
    });
    match cost {
        Some(cost) => writeln!(md, "**Decision:** {} {cost}\n", p.decision)?,
        None => writeln!(md, "**Decision:** {}\n", p.decision)?,
    }
    if let Some(d) = &ex.description {
        writeln!(md, "{}\n", d.trim())?;
    }
    writeln!(
        md,
        "Suite `{}`: {} tasks, k = {}. Corpus `{}`: {} documents, content sha256 `{}`. Experiment `{}`; baseline `{}`. Runs: `runs/<configuration>.trec` (top {} per task), judgments: `qrels.txt`.\n",
        shown(&suite.path),
        suite.tasks.len(),
        suite.k,
        shown(&suite.corpus_path),
        p.corpus_len,
        &p.corpus_sha256[..16],
        shown(&ex.path),
        ex.baseline(),
        ex.configurations.iter().map(|c| c.depth()).max().unwrap_or(0),
    )?;
    if let Some(line) = judgments_line(suite) {
        writeln!(md, "{line}\n")?;
    }
    md.push_str(&table::markdown(&p.shown));
    writeln!(
        md,
        "\nMeans over tasks. recall@k, nDCG@k and P@k at each task's k; MRR is trec_eval's recip_rank (no cutoff); MAP is trec_eval's map. W/T/L: tasks where the configuration is above, equal to, below the baseline on that measure.\n"
    )?;
    writeln!(md, "**Reading:** {}\n", p.reading)?;
    writeln!(md, "{}\n", p.stats.method)?;
    md.push_str(&configs::markdown(&replay.runs, ex, practice)?);
    md.push_str(&paired_markdown(paired));
    md.push_str(&external::section(replay));
    md.push_str(&p.warranty.markdown()?);
    if let Some(section) = &p.llm_judgments {
        md.push_str(section);
    }
    let mut plots = plots::render_computed(&p.computed, all, suite, ex, replay, &ex.experiment)?;
    md.push_str(&plots.markdown);
    md.push_str(&adr::movements(all, suite, ex, replay));
    md.push_str(&adr::score_distributions(all, suite, replay));
    let (tuning, tuning_files) = finetune::section(replay, &ex.experiment, suite.tasks.len());
    md.push_str(&tuning);
    plots.files.extend(tuning_files);
    if let Some(costs) = costs {
        let configs: Vec<&crate::suite::Configuration> =
            replay.runs.iter().map(|r| &r.config).collect();
        md.push_str(&costs::section(
            &configs,
            &replay.models,
            costs,
            &ex.experiment,
        ));
    }
    md.push_str(&adr::model_identities(&replay.models));
    writeln!(md, "## Rank of the first expected document, per task\n")?;
    writeln!(
        md,
        "`-` = not in the run; `4 (doc)`: the expected document is first at rank 4 and `doc` ranked first.\n"
    )?;
    md.push_str(&table::markdown(&p.tasks_md));
    Ok((md, plots))
}

/// The files of the report other than its plots and its JSON: the runs, the recordings, the
/// qrels, the Markdown `md` and the CSV tables.
fn data_files(
    p: &Parts,
    run_files: Vec<Vec<u8>>,
    suite: &Suite,
    stem: &str,
    replay: &Replay,
    md: &str,
) -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut files = Vec::new();
    for (run, bytes) in replay.runs.iter().zip(run_files) {
        files.push((
            PathBuf::from("runs").join(format!("{}.trec", run.config.name)),
            bytes,
        ));
    }
    for s in &replay.external {
        if let Some(r) = &s.recording {
            files.push((
                PathBuf::from("runs").join(crate::suite::recording_file_name(&s.configuration)),
                r.to_bytes(),
            ));
        }
    }
    for r in &replay.rerank_recordings {
        files.push((PathBuf::from("runs").join(r.file_name()), r.to_bytes()));
    }
    files.push((PathBuf::from("qrels.txt"), qrels_file(suite)?.into_bytes()));
    files.push((PathBuf::from(format!("{stem}.md")), md.as_bytes().to_vec()));
    files.push((
        PathBuf::from(format!("{stem}.stats.csv")),
        table::csv(&p.stats.table)?.into_bytes(),
    ));
    files.push((
        PathBuf::from(format!("{stem}.csv")),
        table::csv(&p.metrics)?.into_bytes(),
    ));
    files.push((
        PathBuf::from(format!("{stem}.warranty.csv")),
        table::csv(&p.warranty.table(true)?)?.into_bytes(),
    ));
    files.push((
        PathBuf::from(format!("{stem}.tasks.csv")),
        table::csv(&p.tasks)?.into_bytes(),
    ));
    Ok(files)
}

/// The report's JSON file.
fn json_file(
    p: &Parts,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    paired: &[PairedResult],
    practice: &dyn Fn(&crate::suite::Configuration) -> String,
) -> Result<Vec<u8>> {
    let mut json = serde_json::json!({
        "suite": suite.name,
        "experiment": ex.experiment,
        "baseline": ex.baseline(),
        "k": suite.k,
        "corpus_sha256": p.corpus_sha256,
        "decision": p.decision,
        "configurations": configs::json(&replay.runs, ex, practice)?,
        "metrics": table::json_rows(&p.metrics),
        "win_tie_loss": decision::wtl_json(&p.computed),
        "tasks": table::json_rows(&p.tasks),
        "statistics": table::json_rows(&p.stats.table),
        "warranty": p.warranty.json()?,
        "paired_assertions": paired_json(paired),
        "reading": p.reading,
    });
    // Absent when every check held, so the reports of passing runs keep their bytes.
    if !p.failures.is_empty() {
        json["failures"] = serde_json::json!(p.failures);
    }
    if let Some(e) = external::json(replay) {
        json["external"] = e;
    }
    Ok((serde_json::to_string_pretty(&json)? + "\n").into_bytes())
}

/// "Judgments: 35 in `suite.yaml`, 2 given with `ranklab judge` (Ada 2) in `judgments.yaml`."
/// and, when `judgments.yaml` holds LLM grades, what every table rests on: "Every table below
/// rests on 35 judgments by people and 0 by an LLM (419 LLM grades of `judgments.yaml` left
/// out: `--judgments all` takes them)." None when there is nothing to say (no judgments file,
/// or one without a grade the run takes or leaves out).
fn judgments_line(suite: &Suite) -> Option<String> {
    let j = suite.judgments.as_ref()?;
    let mut out = Vec::new();
    if !j.judgments.is_empty() {
        let total: usize = suite.tasks.iter().map(|t| t.expected.len()).sum();
        let by: Vec<String> = j
            .by_judge()
            .into_iter()
            .map(|(who, n)| format!("{who} {n}"))
            .collect();
        out.push(format!(
            "Judgments: {} in `{}`, {} given with `ranklab judge` ({}) in `{}`.",
            total - j.judgments.len(),
            shown(&suite.path),
            j.judgments.len(),
            by.join(", "),
            shown(&j.path)
        ));
    }
    let c = suite.judgment_counts();
    if c.llm > 0 || c.llm_left_out > 0 {
        out.push(format!(
            "Every table below rests on {} judgments by people and {} by an LLM{}.",
            c.human,
            c.llm,
            if c.llm_left_out > 0 {
                format!(
                    " ({} LLM grades of `{}` left out: `--judgments all` takes them)",
                    c.llm_left_out,
                    shown(&j.path)
                )
            } else {
                " (`--judgments all`)".to_string()
            }
        ));
    }
    (!out.is_empty()).then(|| out.join(" "))
}
