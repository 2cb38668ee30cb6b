//! `ranklab gate`: block a change that makes retrieval worse.
//!
//! Replays every (suite, configuration, metric) row of the baseline file, grades each value
//! against its baseline ([`crate::gate::verdict`]: pass, OKISH, REGRESSION, improved, or a
//! failing rise on the legacy wiring's rows), checks the per-task expectations, runs every
//! paired assertion (`tasks/<suite>/paired*.yaml`), and prints a Markdown table, appended to
//! `$GITHUB_STEP_SUMMARY` when that is set. `--calibrate N` stores each row's spread over N
//! replays instead.
//!
//! The gated set is the baseline file's rows. `--update` rewrites the file (atomically) with
//! the values of now for: every row already in it, recall@k and MRR of each experiments file's
//! baseline configuration of every suite, each `--also SUITE/CONFIGURATION` (recall@k and MRR;
//! nDCG@10 on a BEIR collection) and, for each `--beir DIR`, nDCG@10 of `bm25` and `dense`.
//! A row stays gated until it is deleted from the file by hand; a tolerance edited by hand is
//! kept. `--update` writes nothing when a paired assertion fails.
//!
//! BEIR collections (SciFact) are opt-in with `--beir DIR`: the dense configuration embeds the
//! whole corpus, which takes minutes on first run. Rows of a collection not given are shown as
//! skipped and do not fail the gate.
//!
//! Exit codes: 0 every row and assertion passes; 1 a regression or a failed paired assertion;
//! 2 bad input (a baseline naming an unknown suite, configuration or metric; a changed corpus or
//! suite; unreadable files).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::gate::baseline::{Baseline, Fixed, Kind, Row};
use crate::gate::verdict::{table, Line, Verdict};
use crate::gate::Subject;
use crate::paired::Paired;
use crate::replay::Engine;
use crate::report::shown;

/// Arguments of `ranklab gate`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
The gated rows are those of the baseline file. A row allows max(tolerance, 3 x spread): a change \
within it passes; a drop beyond it but within 1.5x is OKISH (shown, passes); a larger drop fails; \
a rise beyond it passes as improved (record it with --update), except on rows with \
\"rise\": \"fails\" (the legacy wiring's, which must keep showing the bug). The baseline's \
per-task expectations (document within the top N of a configuration for a task) are gated too, \
and every tasks/<suite>/paired*.yaml is run. The table is printed, and appended to $GITHUB_STEP_SUMMARY when that is set.

--update rewrites the baseline (atomically) for: the rows already in it, recall@k and MRR of each \
experiments file's baseline configuration, each --also, and nDCG@10 of bm25 and dense for each \
--beir collection. It writes nothing when a paired assertion fails. Delete a row by hand to stop \
gating it; a tolerance edited by hand is kept, and so are the expectations.

--calibrate N replays N times and writes each row's spread (largest minus smallest value) into \
the baseline, for configurations whose output varies between runs.

Exit codes: 0 pass; 1 a regression, a failed per-task expectation or a failed paired assertion; 2 bad input (a baseline naming \
an unknown suite, configuration or metric; a corpus or suite changed since the baseline: review \
the change, then run --update).")]
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
    pub recording: crate::external::RecordingArgs,
    /// Replay N times (N >= 2) and store each row's spread (largest minus smallest value) in the
    /// baseline; a row then allows max(tolerance, 3 x spread). For configurations whose output
    /// varies from run to run (external engines, approximate indexes). Values are not changed.
    #[arg(long, value_name = "N", conflicts_with = "update")]
    pub calibrate: Option<usize>,
}

/// Runs the command.
pub(crate) fn run(args: GateArgs) -> Result<ExitCode> {
    let mut subjects: BTreeMap<String, Subject> = BTreeMap::new();
    for p in crate::suite::suites(&args.tasks)? {
        let mut s = Subject::from_suite(&p)?;
        s.replay = crate::replay::ReplayOptions {
            external: args.recording.mode(),
            recordings: Some(
                args.recording
                    .recordings_root(&args.reports)
                    .join(&s.name)
                    .join("runs"),
            ),
            ..Default::default()
        };
        if let Some(prev) = subjects.get(&s.name) {
            bail!(
                "{}: suite name {:?} is also used by {}; suite names must be unique",
                p.display(),
                s.name,
                prev.suite.path.display()
            );
        }
        subjects.insert(s.name.clone(), s);
    }
    for dir in &args.beir {
        let s = Subject::from_beir(dir, &args.split)?;
        if subjects.contains_key(&s.name) {
            bail!(
                "{}: collection name {:?} is also a suite name; rename one",
                dir.display(),
                s.name
            );
        }
        subjects.insert(s.name.clone(), s);
    }

    let old = match Baseline::load(&args.baseline) {
        Ok(b) => b,
        Err(_) if args.update && !args.baseline.exists() => Baseline {
            path: args.baseline.clone(),
            ..Default::default()
        },
        Err(e) => return Err(e),
    };
    // `--tasks` naming one suite (its folder or suite.yaml) gates that suite alone: the
    // baseline's other suites are shown skipped, and kept by --update.
    let one_suite = args.tasks.is_file() || args.tasks.join("suite.yaml").is_file();
    check_names(&old, &subjects, one_suite)?;
    if !args.update {
        check_fingerprints(&old, &subjects)?;
    }

    // The rows to measure: the baseline's, plus (with --update) the defaults and --also.
    let mut wanted: BTreeMap<(String, String, String), Option<Row>> = BTreeMap::new();
    for (key, row) in &old.rows {
        wanted.insert(key.clone(), Some(row.clone()));
    }
    if args.update {
        for s in subjects.values() {
            for c in &s.default_configurations {
                for m in &s.default_metrics {
                    wanted
                        .entry((s.name.clone(), c.clone(), m.clone()))
                        .or_insert(None);
                }
            }
        }
        for a in &args.also {
            let (suite, config) = a.split_once('/').with_context(|| {
                format!("--also {a:?}: write SUITE/CONFIGURATION, e.g. brain/current")
            })?;
            let s = subjects.get(suite).with_context(|| {
                format!(
                    "--also {a:?}: no suite {suite:?} (suites: {})",
                    subjects.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            })?;
            if s.configuration(config).is_none() {
                bail!("--also {a:?}: suite {suite:?} has no configuration {config:?} (configurations: {})", s.configuration_list());
            }
            for m in &s.default_metrics {
                wanted
                    .entry((suite.to_string(), config.to_string(), m.clone()))
                    .or_insert(None);
            }
        }
    }

    // Measure: one replay per subject over the configurations its rows and expectations name.
    let measure_all = || -> Result<Measured> {
        let mut values = BTreeMap::new();
        let mut ranks = vec![None; old.expectations.len()];
        for s in subjects.values() {
            let mut configs: Vec<&str> = wanted
                .keys()
                .filter(|k| k.0 == s.name)
                .map(|k| k.1.as_str())
                .collect();
            let mine: Vec<usize> = (0..old.expectations.len())
                .filter(|&i| old.expectations[i].suite == s.name)
                .collect();
            configs.extend(
                mine.iter()
                    .map(|&i| old.expectations[i].configuration.as_str()),
            );
            configs.sort_unstable();
            configs.dedup();
            let asked: Vec<(&str, &str, &str)> = mine
                .iter()
                .map(|&i| {
                    let e = &old.expectations[i];
                    (
                        e.configuration.as_str(),
                        e.task.as_str(),
                        e.document.as_str(),
                    )
                })
                .collect();
            let (v, r) = s.measure_with(&configs, &asked)?;
            for ((c, m), v) in v {
                values.insert((s.name.clone(), c, m), v);
            }
            for (&i, r) in mine.iter().zip(r) {
                ranks[i] = r;
            }
        }
        Ok((values, ranks))
    };
    if let Some(n) = args.calibrate {
        return calibrate(&args, &old, n, measure_all);
    }
    let (values, ranks) = measure_all()?;

    let mut lines = Vec::new();
    for (key, row) in &wanted {
        let now = values.get(key).copied();
        let line = match (row, now) {
            (Some(r), Some(n)) => Line {
                row: r.clone(),
                now: Some(n),
                verdict: Verdict::of(r, n),
            },
            (Some(r), None) => Line {
                row: r.clone(),
                now: None,
                verdict: match old.suites.get(&r.suite).map(|e| e.kind) {
                    Some(Kind::Suite) => Verdict::SkippedSuite,
                    _ => Verdict::Skipped,
                },
            },
            (None, n) => Line {
                row: Row::new(
                    key.clone(),
                    n.unwrap_or(Fixed(0)),
                    subjects.get(&key.0).is_some_and(|s| s.is_legacy(&key.1)),
                ),
                now: n,
                verdict: Verdict::New,
            },
        };
        lines.push(line);
    }

    // Paired assertions, every file of every suite.
    let mut paired_md = String::new();
    let mut paired_failed = 0;
    for s in subjects.values() {
        for p in &s.paired {
            let (paired, corpus) = Paired::load(p)?;
            let engine = Engine::build(&corpus, &[&paired.experiments])?;
            // Under --from-recording the pair's external answers come from the recordings too.
            let from = (s.replay.external == crate::external::Mode::FromRecording)
                .then_some(s.replay.recordings.as_deref())
                .flatten();
            let verdicts = paired.check_with(&engine, None, from)?;
            paired_failed += verdicts.iter().filter(|v| !v.pass()).count();
            let _ = write!(
                paired_md,
                "\n### Paired assertions: `{}`\n\n{}",
                shown(p),
                crate::paired::table(&verdicts)
            );
        }
    }

    let regressions: Vec<&Line> = lines.iter().filter(|l| l.verdict.fails()).collect();
    let mut md = String::from("## ranklab gate\n\n");
    let _ = writeln!(md, "Baseline `{}`.\n", shown(&args.baseline));
    md.push_str(&table(&lines));
    let mut expectations_failed = 0;
    if !old.expectations.is_empty() {
        md.push_str("\n### Per-task expectations\n\n| suite | configuration | task | document | within | rank | verdict |\n|---|---|---|---|---:|---:|---|\n");
        for (e, r) in old.expectations.iter().zip(&ranks) {
            let measured = subjects.contains_key(&e.suite);
            let pass = r.is_some_and(|r| r <= e.within);
            if measured && !pass {
                expectations_failed += 1;
            }
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                e.suite,
                e.configuration,
                e.task,
                e.document,
                e.within,
                r.map_or("-".to_string(), |r| r.to_string()),
                match (measured, pass) {
                    (false, _) => "skipped (collection not given; pass --beir DIR)",
                    (true, true) => "pass",
                    (true, false) if r.is_none() => "FAIL (not ranked)",
                    (true, false) => "FAIL",
                }
            );
        }
    }
    md.push_str(&paired_md);
    let ungated: Vec<&str> = subjects
        .values()
        .filter(|s| s.kind == Kind::Suite && !lines.iter().any(|l| l.row.suite == s.name))
        .map(|s| s.name.as_str())
        .collect();
    if !ungated.is_empty() {
        let _ = writeln!(
            md,
            "\nNot gated: suite(s) {} have no row in the baseline; `ranklab gate --update` adds their baseline configuration.",
            ungated.join(", ")
        );
    }
    if lines.iter().any(|l| l.verdict == Verdict::Improved) && !args.update {
        md.push_str(
            "\nSome values rose beyond their tolerance: after review, record them with `ranklab gate --update`.\n",
        );
    }
    if lines.iter().any(|l| l.verdict == Verdict::Okish) {
        md.push_str("\nOKISH: a drop beyond the tolerance but within 1.5x of it passes; look before it grows (a noisy configuration: `ranklab gate --calibrate 5` measures its spread).\n");
    }

    let code = if args.update {
        if paired_failed > 0 {
            let _ = writeln!(md, "\n**FAIL**: {paired_failed} paired expectation(s) failed; the baseline was not updated.");
            1
        } else {
            let mut new = Baseline {
                path: args.baseline.clone(),
                expectations: old.expectations.clone(),
                ..Default::default()
            };
            for l in &lines {
                let s = subjects.get(&l.row.suite);
                match (s, l.now) {
                    (Some(s), Some(n)) => {
                        new.suites.insert(s.name.clone(), s.entry());
                        new.rows.insert(
                            l.row.key(),
                            Row {
                                value: n,
                                line: 0,
                                rise_fails: l.row.rise_fails || s.is_legacy(&l.row.configuration),
                                ..l.row.clone()
                            },
                        );
                    }
                    // A row of a collection not given this time: kept as it was.
                    _ => {
                        new.suites
                            .insert(l.row.suite.clone(), old.suites[&l.row.suite].clone());
                        new.rows.insert(l.row.key(), l.row.clone());
                    }
                }
            }
            crate::report::atomic::write(&args.baseline, new.render().as_bytes())?;
            let _ = writeln!(
                md,
                "\nBaseline updated: {} rows written to `{}`.",
                new.rows.len(),
                shown(&args.baseline)
            );
            0
        }
    } else if !regressions.is_empty() || paired_failed > 0 || expectations_failed > 0 {
        let _ = writeln!(
            md,
            "\n**FAIL**: {} regression(s) beyond tolerance{}, {paired_failed} paired expectation(s) failed.",
            regressions.len(),
            if old.expectations.is_empty() {
                String::new()
            } else {
                format!(", {expectations_failed} per-task expectation(s) failed")
            }
        );
        if !regressions.is_empty() {
            md.push_str("\nRegressions:\n\n");
            md.push_str(&table(
                &regressions.into_iter().cloned().collect::<Vec<_>>(),
            ));
        }
        1
    } else {
        let _ = writeln!(
            md,
            "\n**PASS**: {} row(s) within tolerance{}, every paired assertion as expected.",
            lines.len(),
            if old.expectations.is_empty() {
                String::new()
            } else {
                format!(", {} per-task expectation(s) hold", old.expectations.len())
            }
        );
        0
    };

    print!("{md}");
    if let Some(p) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&p)
            .with_context(|| format!("cannot open $GITHUB_STEP_SUMMARY ({})", p.display()))?;
        writeln!(f, "{md}")
            .with_context(|| format!("cannot append to $GITHUB_STEP_SUMMARY ({})", p.display()))?;
    }
    Ok(ExitCode::from(code))
}

/// Every row's value now, and each expectation's rank (None: not ranked).
type Measured = (
    BTreeMap<(String, String, String), Fixed>,
    Vec<Option<usize>>,
);

/// `--calibrate N`: replays N times, writes each row's spread (largest minus smallest value)
/// into the baseline, values and tolerances unchanged.
fn calibrate(
    args: &GateArgs,
    old: &Baseline,
    n: usize,
    measure: impl Fn() -> Result<(
        BTreeMap<(String, String, String), Fixed>,
        Vec<Option<usize>>,
    )>,
) -> Result<ExitCode> {
    if n < 2 {
        bail!("--calibrate {n}: give at least 2 replays to measure a spread, e.g. --calibrate 5");
    }
    if old.rows.is_empty() {
        bail!(
            "{}: no rows to calibrate; record the baseline with `ranklab gate --update` first",
            old.path.display()
        );
    }
    let mut lo: BTreeMap<(String, String, String), Fixed> = BTreeMap::new();
    let mut hi: BTreeMap<(String, String, String), Fixed> = BTreeMap::new();
    for i in 0..n {
        eprintln!("gate --calibrate: replay {} of {n}", i + 1);
        for (k, v) in measure()?.0 {
            let l = lo.entry(k.clone()).or_insert(v);
            *l = (*l).min(v);
            let h = hi.entry(k).or_insert(v);
            *h = (*h).max(v);
        }
    }
    let mut new = old.clone();
    let mut md = format!(
        "## ranklab gate --calibrate {n}\n\nBaseline `{}`: each row's spread over {n} replays; a row allows max(tolerance, 3 × spread).\n\n| suite | configuration | metric | baseline | lowest | highest | spread | allowed |\n|---|---|---|---:|---:|---:|---:|---:|\n",
        shown(&args.baseline)
    );
    let mut calibrated = 0;
    for (k, row) in new.rows.iter_mut() {
        let (Some(l), Some(h)) = (lo.get(k), hi.get(k)) else {
            continue; // a collection not given with --beir: left as it was
        };
        row.spread = Some(Fixed(h.0 - l.0));
        calibrated += 1;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            k.0,
            k.1,
            k.2,
            row.value.show(),
            l.show(),
            h.show(),
            Fixed(h.0 - l.0).show(),
            row.allowed().show()
        );
    }
    crate::report::atomic::write(&args.baseline, new.render().as_bytes())?;
    let _ = writeln!(
        md,
        "\nCalibrated {calibrated} row(s); spreads written to `{}`.",
        shown(&args.baseline)
    );
    print!("{md}");
    Ok(ExitCode::SUCCESS)
}

/// Every suite, configuration and metric the baseline names must exist (collections not given
/// with --beir are not checked: their rows are skipped).
fn check_names(b: &Baseline, subjects: &BTreeMap<String, Subject>, one_suite: bool) -> Result<()> {
    let path = b.path.display();
    for (name, entry) in &b.suites {
        let line = b.suite_lines.get(name).copied().unwrap_or(0);
        match (subjects.get(name), entry.kind) {
            (None, Kind::Suite) if one_suite => {}
            (None, Kind::Suite) => bail!(
                "{path}:{line}: the baseline names suite {name:?}, which is not a suite under the tasks directory (suites: {}); remove its entry and rows, or restore the suite",
                subjects.values().filter(|s| s.kind == Kind::Suite).map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
            ),
            (None, Kind::Beir) => {}
            (Some(s), k) if s.kind != k => bail!(
                "{path}:{line}: {name:?} is recorded as a {} but is given as a {}",
                if k == Kind::Beir { "BEIR collection" } else { "suite" },
                if s.kind == Kind::Beir { "BEIR collection" } else { "suite" }
            ),
            _ => {}
        }
    }
    for r in b.rows.values() {
        let Some(s) = subjects.get(&r.suite) else {
            continue;
        };
        if s.configuration(&r.configuration).is_none() {
            bail!(
                "{path}:{}: suite {:?} has no configuration {:?} (configurations: {}); fix the row or delete it",
                r.line,
                r.suite,
                r.configuration,
                s.configuration_list()
            );
        }
        if !s.metric_names().contains(&r.metric) {
            bail!(
                "{path}:{}: suite {:?} has no metric {:?} (metrics: {}); fix the row or delete it",
                r.line,
                r.suite,
                r.metric,
                s.metric_names().join(", ")
            );
        }
    }
    for e in &b.expectations {
        let Some(s) = subjects.get(&e.suite) else {
            continue;
        };
        let at = format!("{path}:{}", e.line);
        if s.configuration(&e.configuration).is_none() {
            bail!(
                "{at}: suite {:?} has no configuration {:?} (configurations: {}); fix the expectation or delete it",
                e.suite,
                e.configuration,
                s.configuration_list()
            );
        }
        if !s.suite.tasks.iter().any(|t| t.id == e.task) {
            bail!(
                "{at}: suite {:?} has no task {:?}{}; fix the expectation or delete it",
                e.suite,
                e.task,
                ranklab_engine::suggest::did_you_mean(
                    &e.task,
                    s.suite.tasks.iter().map(|t| t.id.as_str())
                )
            );
        }
        if s.corpus.index_of(&e.document).is_none() {
            bail!(
                "{at}: document {:?} is not in the corpus of {:?}{}; fix the expectation or delete it",
                e.document,
                e.suite,
                ranklab_engine::suggest::did_you_mean(
                    &e.document,
                    crate::suite::corpus_ids(&s.corpus)
                )
            );
        }
    }
    Ok(())
}

/// The corpus and tasks of every gated suite must be those the baseline was recorded on.
fn check_fingerprints(b: &Baseline, subjects: &BTreeMap<String, Subject>) -> Result<()> {
    for (name, entry) in &b.suites {
        let Some(s) = subjects.get(name) else {
            continue;
        };
        let now = s.entry();
        let at = format!(
            "{}:{}",
            b.path.display(),
            b.suite_lines.get(name).copied().unwrap_or(0)
        );
        if now.corpus_sha256 != entry.corpus_sha256 {
            bail!(
                "{at}: the corpus of {name:?} ({}) changed since the baseline was recorded (sha256 {} then, {} now); the recorded values no longer apply. Review the change, then run `ranklab gate --update`",
                shown(&s.suite.corpus_path),
                &entry.corpus_sha256[..16],
                &now.corpus_sha256[..16]
            );
        }
        if now.suite_sha256 != entry.suite_sha256 {
            bail!(
                "{at}: the tasks of {name:?} ({}) changed since the baseline was recorded (sha256 {} then, {} now); the recorded values no longer apply. Review the change, then run `ranklab gate --update`",
                shown(&s.suite.path),
                &entry.suite_sha256[..16],
                &now.suite_sha256[..16]
            );
        }
    }
    Ok(())
}
