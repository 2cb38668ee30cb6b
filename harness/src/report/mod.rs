//! Reports: what `ranklab run` and `ranklab bench` write under `reports/<suite>/`.
//!
//! - `runs/<configuration>.trec`: each configuration's ranked lists in TREC run format;
//! - `qrels.txt`: the suite's judgments in TREC qrels format, so any TREC tool can check us;
//! - `<experiment>.md` / `.csv` / `.json`: the metrics table (configuration x measure) and the
//!   per-task table (rank of the first expected document per configuration).
//!
//! Nothing that varies between runs (timings, dates, absolute paths) goes into these files: a
//! second run on unchanged inputs rewrites the same bytes. The one section with timings renders
//! them from a committed file that a run only reads (`costs.json`, [`costs`]). Every file is
//! written atomically.

pub mod adr;
pub mod atomic;
pub mod configs;
pub mod costs;
pub mod decision;
pub mod explorer;
pub mod external;
pub mod finetune;
pub mod llm_judgments;
pub mod plots;
pub mod scale;
pub mod stats_section;
pub mod tuned;
pub use ranklab_eval::table;
pub mod warranty;

pub use crate::paired::beside::PairedResult;
pub use crate::replay::values::{first_relevant_rank, per_task_values, suite_measures, MeasureSet};
pub use crate::root::shown;
pub use crate::suite::{configuration_file_names, experiment_file_names, OTHER_WRITERS};

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::report::table::{Column, Table};
use anyhow::Result;
use ranklab_engine::corpus::Corpus;

use crate::replay::{ConfigRun, Replay};
use crate::suite::{Experiments, Suite};

/// The metrics table: one row per configuration, the mean of each measure over tasks.
pub fn metrics_table(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
) -> Result<Table> {
    let names = set.names(suite.k);
    let mut configs = Vec::new();
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for run in &replay.runs {
        let mark = if run.config.name == ex.baseline() {
            " (baseline)"
        } else {
            ""
        };
        configs.push(format!("{}{mark}", run.config.name));
        let values = per_task_values(corpus, suite, run, set);
        for (m, col) in cols.iter_mut().enumerate() {
            let sum: f64 = values.iter().map(|v| v[m]).sum();
            col.push(sum / values.len().max(1) as f64);
        }
    }
    let mut columns = vec![Column::new("configuration", configs)];
    for (name, col) in names.iter().zip(cols) {
        columns.push(Column::new(name.as_str(), col));
    }
    Table::new(columns)
}

/// `[configuration][task]`: rank of the first expected document (None: not retrieved).
pub type Ranks = Vec<Vec<Option<usize>>>;
/// `[configuration][task]`: the document ranked first when the expected one was not.
pub type Firsts = Vec<Vec<Option<String>>>;

/// Per configuration (replay order), per task: the rank of the first expected document (None:
/// not retrieved) and, when that rank is not 1, the document that ranked first (None when the
/// run is empty).
pub fn first_ranks(corpus: &Corpus, suite: &Suite, replay: &Replay) -> (Ranks, Firsts) {
    let mut ranks = Vec::new();
    let mut firsts = Vec::new();
    for run in &replay.runs {
        let (r, f): (Vec<_>, Vec<_>) = suite
            .tasks
            .iter()
            .zip(&run.per_task)
            .map(|(t, ranked)| {
                let rank = first_relevant_rank(corpus, t, ranked);
                let first = (rank != Some(1))
                    .then(|| ranked.first().map(|x| corpus.id(x.doc).to_string()))
                    .flatten();
                (rank, first)
            })
            .unzip();
        ranks.push(r);
        firsts.push(f);
    }
    (ranks, firsts)
}

fn task_columns(suite: &Suite) -> Vec<Column> {
    vec![
        Column::new(
            "task",
            suite.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "expected",
            suite
                .tasks
                .iter()
                .map(|t| {
                    t.expected
                        .iter()
                        .filter(|(_, &g)| g >= 1)
                        .map(|(d, _)| d.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect::<Vec<_>>(),
        ),
    ]
}

/// The per-task table of the CSV and JSON files: task, expected, then per configuration the
/// rank of the first expected document (a number, empty/null when not retrieved), then per
/// configuration `<configuration> first`: the document ranked first when the expected one
/// was not (empty/null otherwise).
pub fn tasks_table(corpus: &Corpus, suite: &Suite, replay: &Replay) -> Result<Table> {
    let (ranks, firsts) = first_ranks(corpus, suite, replay);
    let mut columns = task_columns(suite);
    for (run, r) in replay.runs.iter().zip(&ranks) {
        let r: Vec<Option<u64>> = r.iter().map(|x| x.map(|x| x as u64)).collect();
        columns.push(Column::new(run.config.name.as_str(), r));
    }
    for (run, f) in replay.runs.iter().zip(firsts) {
        columns.push(Column::new(format!("{} first", run.config.name), f));
    }
    Table::new(columns)
}

/// The per-task table of the Markdown report: the rank of the first expected document per
/// configuration, followed by the document that ranked first when it was not the expected one:
/// `4 (pay-retries-fixed)`.
pub fn tasks_markdown_table(corpus: &Corpus, suite: &Suite, replay: &Replay) -> Result<Table> {
    let (ranks, firsts) = first_ranks(corpus, suite, replay);
    let mut columns = task_columns(suite);
    for ((run, r), f) in replay.runs.iter().zip(&ranks).zip(&firsts) {
        let cells: Vec<String> = r
            .iter()
            .zip(f)
            .map(|(rank, first)| {
                let rank = rank.map_or("-".to_string(), |x| x.to_string());
                match first {
                    Some(d) => format!("{rank} ({d})"),
                    None => rank,
                }
            })
            .collect();
        columns.push(Column::new(run.config.name.as_str(), cells));
    }
    Table::new(columns)
}

/// The TREC run of one configuration.
///
/// The score column is the ranking's score. trec_eval reorders a run by score descending, then
/// docno descending; where our ranking broke a tie some other way (the current wiring's recency
/// tie-break) the written score is lowered by one ulp below the previous line's, so the file
/// reads back in exactly the replay's order. The ranks in the file are the replay's ranks.
pub fn run_file(corpus: &Corpus, suite: &Suite, run: &ConfigRun) -> String {
    let lines: usize = run.per_task.iter().map(Vec::len).sum();
    let mut s = String::with_capacity(lines * 48);
    for (task, ranked) in suite.tasks.iter().zip(&run.per_task) {
        let mut prev: Option<(f32, &str)> = None;
        for (i, r) in ranked.iter().enumerate() {
            let id = corpus.id(r.doc);
            let mut score = r.score;
            if let Some((p, pid)) = prev {
                let reads_back_in_order =
                    score < p || (score == p && id.as_bytes() < pid.as_bytes());
                if !reads_back_in_order {
                    score = p.next_down();
                }
            }
            prev = Some((score, id));
            crate::trec::push_run_line(&mut s, &task.id, id, i + 1, score, &run.config.name);
        }
    }
    s
}

/// The suite's judgments in TREC qrels format.
pub fn qrels_file(suite: &Suite) -> Result<String> {
    let rows: Vec<(String, String, i32)> = suite
        .tasks
        .iter()
        .flat_map(|t| {
            t.expected
                .iter()
                .map(|(d, g)| (t.id.clone(), d.clone(), *g))
        })
        .collect();
    let mut buf = Vec::new();
    crate::trec::write_qrels(&mut buf, &rows)?;
    Ok(String::from_utf8(buf)?)
}

/// Everything one experiment writes, rendered.
pub struct SuiteReport {
    /// The Markdown report (`--print` prints it).
    pub markdown: String,
    /// What a person reads on stdout: the title, the headline table (means and win/tie/loss)
    /// and the decision.
    pub summary: String,
    /// The experiment's name (the stem of its files).
    pub stem: String,
    /// Files to write, relative to the report directory.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// The checks of the run that failed, one phrase each (a paired file with expectations not
    /// met, an external configuration whose errors were counted as empty rankings); empty when
    /// every check held. Any makes `run` and `bench` exit 1.
    pub failures: Vec<String>,
}

impl SuiteReport {
    /// `wrote reports/docir/retrieval.md (+ 4 csv, json, 3 svg, html, 8 runs, qrels)`, `dir` being
    /// the report directory as the user should read it.
    pub fn wrote_line(&self, dir: &Path) -> String {
        let count =
            |pred: &dyn Fn(&Path) -> bool| self.files.iter().filter(|(p, _)| pred(p)).count();
        let ext = |p: &Path, e: &str| p.extension().is_some_and(|x| x == e);
        let runs = count(&|p| p.starts_with("runs") && ext(p, "trec"));
        let recordings = count(&|p| p.starts_with("runs") && !ext(p, "trec"));
        let mut parts = Vec::new();
        // A kind a report holds once is named without a count (json, qrels).
        let mut add = |n: usize, what: &str, counted: bool| match n {
            0 => {}
            1 if !counted => parts.push(what.to_string()),
            n => parts.push(format!("{n} {what}")),
        };
        add(count(&|p| ext(p, "csv")), "csv", true);
        add(
            count(&|p| ext(p, "json") && !p.starts_with("runs")),
            "json",
            false,
        );
        add(count(&|p| ext(p, "svg")), "svg", true);
        add(count(&|p| ext(p, "html")), "html", false);
        add(runs, if runs == 1 { "run" } else { "runs" }, true);
        add(
            recordings,
            if recordings == 1 {
                "recording"
            } else {
                "recordings"
            },
            true,
        );
        add(count(&|p| p == Path::new("qrels.txt")), "qrels", false);
        format!(
            "wrote {} (+ {})",
            dir.join(format!("{}.md", self.stem)).display(),
            parts.join(", ")
        )
    }
}

/// Prints one report on stdout: its summary and the files written (`written`), or, with
/// `full`, the whole Markdown report before them.
pub fn print_report(r: &SuiteReport, dir: &Path, full: bool, written: bool) {
    print_report_as(r, dir, full, written, true);
}

/// [`print_report`], with the headline table left out of the summary when `table` is false (its
/// title, decision and notes stay): `ranklab bench`'s summary of many reports fits a screen.
pub fn print_report_as(r: &SuiteReport, dir: &Path, full: bool, written: bool, table: bool) {
    if full {
        println!("{}", r.markdown);
    }
    if table {
        print!("{}", r.summary);
    } else {
        for line in r.summary.lines().filter(|l| !l.starts_with('|')) {
            println!("{line}");
        }
    }
    if written {
        println!("{}", r.wrote_line(&for_person(dir)));
    } else {
        println!("dry run: nothing written");
    }
    println!();
}

/// `path` relative to the current directory when it is below it (as a person would type it).
pub fn for_person(path: &Path) -> PathBuf {
    match std::env::current_dir() {
        Ok(cwd) if path.is_absolute() => path
            .strip_prefix(&cwd)
            .map_or_else(|_| path.to_path_buf(), Path::to_path_buf),
        _ => path.to_path_buf(),
    }
}

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
    let tuned = tuned::sentences(&tuned::folder(suite), ex)?;
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
    writeln!(md, "**Decision:** {}\n", p.decision)?;
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
        md.push_str(&costs::section(&configs, &replay.models, costs));
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

/// The failed checks of one experiment's run: per paired file, the expectations not met; per
/// external configuration, the tasks its errors turned into empty rankings (`on_error: empty`).
fn failures(paired: &[PairedResult], replay: &Replay, tasks: usize) -> Vec<String> {
    let mut out = Vec::new();
    for p in paired {
        let failed: Vec<String> = p
            .verdicts
            .iter()
            .filter(|v| !v.pass())
            .map(|v| match &v.configuration {
                None => format!("{} under {}", v.id, v.wiring),
                Some(c) => format!("{} under {} (`{c}`)", v.id, v.wiring),
            })
            .collect();
        if failed.is_empty() {
            continue;
        }
        let more = if failed.len() > 5 { ", …" } else { "" };
        out.push(format!(
            "{} of {} paired expectations in `{}` not met ({}{more})",
            failed.len(),
            p.verdicts.len(),
            shown(&p.path),
            failed[..failed.len().min(5)].join(", ")
        ));
    }
    for e in &replay.external {
        if e.empty_tasks > 0 {
            out.push(format!(
                "configuration `{}` answered {} of {tasks} tasks with an error, counted as empty rankings (`on_error: empty`)",
                e.configuration, e.empty_tasks
            ));
        }
    }
    out
}

/// The `## Paired assertions` section (empty when the suite has none).
fn paired_markdown(paired: &[PairedResult]) -> String {
    if paired.is_empty() {
        return String::new();
    }
    let mut md = String::from("## Paired assertions\n\n");
    md.push_str("The suite's paired assertions (`ranklab check`): the same query through the legacy and the current wiring on the same first stage; an assertion holds when `above` ranks above `below`.\n\n");
    for p in paired {
        let failed = p.verdicts.iter().filter(|v| !v.pass()).count();
        let _ = writeln!(
            md,
            "`{}`: {} of {} expectations met{}.\n",
            shown(&p.path),
            p.verdicts.len() - failed,
            p.verdicts.len(),
            if failed > 0 {
                format!(", {failed} FAILED")
            } else {
                String::new()
            }
        );
        md.push_str(&crate::paired::table(&p.verdicts));
        md.push('\n');
    }
    md
}

fn paired_json(paired: &[PairedResult]) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = paired
        .iter()
        .flat_map(|p| {
            p.verdicts.iter().map(|v| {
                serde_json::json!({
                    "file": shown(&p.path),
                    "assertion": v.id,
                    "wiring": v.wiring.name(),
                    "above_rank": v.above_rank,
                    "below_rank": v.below_rank,
                    "expected": v.expected.as_str(),
                    "actual": v.actual.as_str(),
                    "pass": v.pass(),
                })
            })
        })
        .collect();
    serde_json::Value::Array(rows)
}

/// Writes every file of `reports` (the experiments of one suite) under `dir` as one step,
/// keeping the directory's other files: a run killed or failing while it writes leaves the
/// previous directory whole, never files of two runs mixed. A file several reports share
/// (`qrels.txt`, a run file) takes the last report's bytes.
pub fn write_all(dir: &Path, reports: &[SuiteReport]) -> Result<()> {
    atomic::write_dir(
        dir,
        reports
            .iter()
            .flat_map(|r| r.files.iter().map(|(p, b)| (p.as_path(), b.as_slice()))),
    )
}

/// A replayed suite: its reports (nothing written yet) and what the corpus said about itself.
pub struct Rendered {
    /// The suite.
    pub suite: Suite,
    /// One report per experiment file.
    pub reports: Vec<SuiteReport>,
    /// Number of documents in the corpus.
    pub documents: usize,
    /// Ids of the records that had no front matter and took every default.
    pub without_front_matter: Vec<String>,
    /// The suite's cost file to write (`--measure-costs` measured something): its path and
    /// bytes. `None`: the file is left as it is.
    pub costs_file: Option<(PathBuf, Vec<u8>)>,
    /// The model outputs the replay was given, one file per model, to merge into
    /// `<suite>/runs/models/` (see `ranklab_engine::models::recorded`).
    pub models: Vec<ranklab_engine::models::recorded::RecordedFile>,
}

impl Rendered {
    /// The failed checks of the suite's reports ([`SuiteReport::failures`]), each once.
    pub fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in self.reports.iter().flat_map(|r| &r.failures) {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }

    /// One line saying how many records used the documented defaults, when any did.
    pub fn defaults_note(&self) -> Option<String> {
        let ids = &self.without_front_matter;
        if ids.is_empty() {
            return None;
        }
        let shown: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
        let more = if ids.len() > 5 { ", …" } else { "" };
        Some(format!(
            "{} of {} records have no front matter and use the defaults (active, first-class, no date, no cites): {}{more}",
            ids.len(),
            self.documents,
            shown.join(", ")
        ))
    }
}

/// The last line `run` and `bench` print, and whether it is a failure (exit 1): `FAIL: <suite>:
/// <what failed>; …`, or `PASS: …` when every paired expectation was met and no engine error was
/// counted as an empty ranking.
pub fn verdict_line(rendered: &[Rendered]) -> (String, bool) {
    let failed: Vec<String> = rendered
        .iter()
        .flat_map(|r| {
            r.failures()
                .into_iter()
                .map(|f| format!("{}: {f}", r.suite.name))
        })
        .collect();
    if !failed.is_empty() {
        return (format!("FAIL: {}", failed.join("; ")), true);
    }
    let reports: usize = rendered.iter().map(|r| r.reports.len()).sum();
    (
        format!(
            "PASS: {reports} report{} rendered; every paired expectation checked was met and no engine error was counted as an empty ranking",
            if reports == 1 { "" } else { "s" }
        ),
        false,
    )
}

/// The files of a suite's reports, before any is written: each is one the names checked at load
/// promise ([`experiment_file_names`], [`configuration_file_names`], `qrels.txt`), and a file two
/// reports write (`qrels.txt`, the run of a configuration two experiments share) has the same
/// bytes in both, so writing one after the other overwrites nothing.
pub fn check_files(reports: &[SuiteReport]) -> Result<()> {
    let mut seen: HashMap<&Path, (&str, &[u8])> = HashMap::new();
    for r in reports {
        let own: Vec<PathBuf> = experiment_file_names(&r.stem)
            .into_iter()
            .map(PathBuf::from)
            .chain([PathBuf::from("qrels.txt")])
            .collect();
        for (path, bytes) in &r.files {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let run = path.parent() == Some(Path::new("runs"))
                && name.as_deref().is_some_and(|n| {
                    n.ends_with(".trec") || n.ends_with(&crate::suite::recording_file_name(""))
                });
            if !run && !own.contains(path) {
                anyhow::bail!(
                    "internal error: the report of experiment {:?} writes {}, a file name the checks at load do not know (report::experiment_file_names); please report this",
                    r.stem,
                    path.display()
                );
            }
            match seen.get(path.as_path()) {
                Some((other, theirs)) if *theirs != bytes.as_slice() => anyhow::bail!(
                    "experiments {other:?} and {:?} both write reports/<suite>/{} with different contents, and one would overwrite the other; nothing was written. A configuration two experiments files share should answer the same in both (an external engine that answers one query differently from call to call?): give it a name per experiments file",
                    r.stem,
                    path.display()
                ),
                Some(_) => {}
                None => {
                    seen.insert(path, (&r.stem, bytes));
                }
            }
        }
    }
    Ok(())
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
