//! The checked plan of a gate run, made from the flags and the baseline before anything is
//! replayed: the subjects (suites under `tasks/`, BEIR collections given with `--beir`), the
//! baseline, the rows to measure (the baseline's, each suite's default rows, and with
//! `--update` each `--also`), which rows and expectations are gone (their configuration, metric,
//! task or document no longer exists), and what changed in the inputs since the baseline
//! ([`super::changes`]). Bad input (an unknown suite in the baseline, a bad `--also`, an empty
//! `--accept-regressions` reason) is an error here, before any replay: exit 2, nothing written.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::baseline::{Baseline, Expectation, Kind, Row};
use super::changes::Changes;
use super::Subject;

/// A row's key: (suite, configuration, metric).
pub type Key = (String, String, String);

/// The flags of `ranklab gate`, as the plan needs them.
#[derive(Debug, Clone)]
pub struct Flags {
    /// The baseline file.
    pub baseline: PathBuf,
    /// The tasks directory, or one suite.
    pub tasks: PathBuf,
    /// `--update`.
    pub update: bool,
    /// `--also SUITE/CONFIGURATION`.
    pub also: Vec<String>,
    /// `--accept-regressions WHY`.
    pub accept_regressions: Option<String>,
    /// `--beir DIR`.
    pub beir: Vec<PathBuf>,
    /// `--split`.
    pub split: String,
    /// How external configurations are replayed.
    pub external: crate::external::Mode,
    /// Root of the recordings (`<root>/<suite>/runs`).
    pub recordings: PathBuf,
    /// `--calibrate N`.
    pub calibrate: Option<usize>,
    /// `--judgments`: with `--update`, the grades the suites' rows are recorded on.
    pub judgments: crate::judgments::Selection,
    /// `--allow-stale`: a row replayed from a stale recording is shown and passes.
    pub allow_stale: bool,
    /// `--alpha`: a drop beyond the allowance fails only when significant at this level.
    pub alpha: Option<f64>,
}

/// What the run does after measuring.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Grade against the baseline.
    Gate,
    /// Grade, then rewrite the baseline (refused on a regression unless `accept` gives why).
    Update {
        /// The reason given with `--accept-regressions`.
        accept: Option<String>,
    },
    /// Replay N times and record each row's spread.
    Calibrate(usize),
}

/// One row to measure.
#[derive(Debug, Clone)]
pub struct Want {
    /// The baseline row (None: a new row, not in the baseline yet).
    pub row: Option<Row>,
    /// Why the row cannot be measured any more (its configuration or metric is gone).
    pub gone: Option<String>,
}

/// The checked plan.
pub struct Plan {
    /// The baseline file's path.
    pub path: PathBuf,
    /// The baseline as read (empty when `--update` records a first one).
    pub old: Baseline,
    /// The suites and collections, by name.
    pub subjects: BTreeMap<String, Subject>,
    /// Every row to measure or show, sorted by key.
    pub wanted: BTreeMap<Key, Want>,
    /// Per expectation of the baseline (same order): why it cannot be checked any more.
    pub expectation_gone: Vec<Option<String>>,
    /// Gate, update or calibrate.
    pub mode: Mode,
    /// What changed since the baseline.
    pub changes: Changes,
    /// The rankings kept with the baseline, per (suite, configuration) of its rows
    /// ([`super::rankings`]); a baseline written before they were kept has none.
    pub kept: BTreeMap<(String, String), super::rankings::Lists>,
    /// The suites whose judgments changed since the baseline (their rows are graded against
    /// the kept rankings under today's judgments).
    pub judgments_changed: std::collections::BTreeSet<String>,
    /// `--allow-stale`.
    pub allow_stale: bool,
    /// `--alpha` ([`super::verdict`]: significance of a row's drop).
    pub alpha: Option<f64>,
}

impl Plan {
    /// Loads the subjects and the baseline and checks them against each other.
    pub fn new(flags: &Flags) -> Result<Plan> {
        let old = load_baseline(flags)?;
        let subjects = subjects(flags, &old)?;
        let mode = mode(flags)?;
        // `--tasks` naming one suite (its folder or suite.yaml) gates that suite alone: the
        // baseline's other suites are shown skipped, and kept by --update.
        let one_suite = flags.tasks.is_file() || flags.tasks.join("suite.yaml").is_file();
        check_suites(&old, &subjects, one_suite)?;
        let mut wanted = baseline_rows(&old, &subjects);
        let update = matches!(mode, Mode::Update { .. });
        add_default_rows(&mut wanted, &subjects, update);
        add_also_rows(&mut wanted, &subjects, &flags.also)?;
        let expectation_gone = old
            .expectations
            .iter()
            .map(|e| gone_expectation(&old, &subjects, e))
            .collect();
        let changes = Changes::of(&old, &subjects);
        if let Mode::Calibrate(n) = mode {
            check_calibrate(n, &old, &changes)?;
        }
        let kept = kept_rankings(&flags.baseline, &old, &subjects)?;
        let judgments_changed = changes
            .suites
            .iter()
            .filter(|c| {
                c.tasks.as_ref().is_some_and(|t| {
                    t.judgments_added + t.judgments_removed + t.judgments_regraded > 0
                })
            })
            .map(|c| c.suite.clone())
            .collect();
        Ok(Plan {
            path: flags.baseline.clone(),
            old,
            subjects,
            wanted,
            expectation_gone,
            mode,
            changes,
            kept,
            judgments_changed,
            allow_stale: flags.allow_stale,
            alpha: flags.alpha,
        })
    }

    /// Whether this run rewrites the baseline.
    pub fn updates(&self) -> bool {
        matches!(self.mode, Mode::Update { .. })
    }
}

/// The baseline file; none yet is an empty baseline when `--update` records a first one.
fn load_baseline(flags: &Flags) -> Result<Baseline> {
    match Baseline::load(&flags.baseline) {
        Ok(b) => Ok(b),
        Err(_) if flags.update && !flags.baseline.exists() => Ok(Baseline {
            path: flags.baseline.clone(),
            ..Default::default()
        }),
        Err(e) => Err(e),
    }
}

/// Gate, update or calibrate, from the flags; `--accept-regressions` needs `--update` and a
/// reason.
fn mode(flags: &Flags) -> Result<Mode> {
    Ok(
        match (flags.calibrate, flags.update, &flags.accept_regressions) {
            (Some(n), _, _) => Mode::Calibrate(n),
            (None, true, Some(why)) if why.trim().is_empty() => bail!(
                "--accept-regressions needs a reason, e.g. --accept-regressions \"the webhook record was cut on purpose\""
            ),
            (None, true, accept) => Mode::Update {
                accept: accept.clone(),
            },
            (None, false, Some(_)) => bail!("--accept-regressions is given with --update only"),
            (None, false, None) => Mode::Gate,
        },
    )
}

/// The rankings kept with the baseline for each suite configuration its rows name.
fn kept_rankings(
    path: &std::path::Path,
    old: &Baseline,
    subjects: &BTreeMap<String, Subject>,
) -> Result<BTreeMap<(String, String), super::rankings::Lists>> {
    let mut out = BTreeMap::new();
    for r in old.rows.values() {
        let key = (r.suite.clone(), r.configuration.clone());
        if out.contains_key(&key)
            || !subjects
                .get(&r.suite)
                .is_some_and(|s| s.kind == Kind::Suite)
        {
            continue;
        }
        let file = super::rankings::copy_file(path, &r.suite, &r.configuration);
        if let Some(lists) = super::rankings::read_run(&file)? {
            out.insert(key, lists);
        }
    }
    Ok(out)
}

/// The baseline's rows, each with why it cannot be measured any more (if so).
fn baseline_rows(old: &Baseline, subjects: &BTreeMap<String, Subject>) -> BTreeMap<Key, Want> {
    old.rows
        .iter()
        .map(|(key, row)| {
            let want = Want {
                row: Some(row.clone()),
                gone: subjects.get(&row.suite).and_then(|s| gone_row(s, row)),
            };
            (key.clone(), want)
        })
        .collect()
}

/// A row not in the baseline yet, unless it is there already.
fn want_new(wanted: &mut BTreeMap<Key, Want>, key: Key) {
    wanted.entry(key).or_insert(Want {
        row: None,
        gone: None,
    });
}

/// Each suite's default rows: new rows when the baseline lacks them (shown by the gate,
/// recorded by --update); a BEIR collection's only with --update.
fn add_default_rows(
    wanted: &mut BTreeMap<Key, Want>,
    subjects: &BTreeMap<String, Subject>,
    update: bool,
) {
    for s in subjects
        .values()
        .filter(|s| s.kind == Kind::Suite || update)
    {
        for c in &s.default_configurations {
            for m in &s.default_metrics {
                want_new(wanted, (s.name.clone(), c.clone(), m.clone()));
            }
        }
    }
}

/// The default metrics of each `--also SUITE/CONFIGURATION`, which must exist.
fn add_also_rows(
    wanted: &mut BTreeMap<Key, Want>,
    subjects: &BTreeMap<String, Subject>,
    also: &[String],
) -> Result<()> {
    for a in also {
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
            bail!(
                "--also {a:?}: suite {suite:?} has no configuration {config:?} (configurations: {})",
                s.configuration_list()
            );
        }
        for m in &s.default_metrics {
            want_new(wanted, (suite.to_string(), config.to_string(), m.clone()));
        }
    }
    Ok(())
}

/// Why a baseline expectation cannot be checked any more: its configuration, task or document
/// is gone (None: it can, or its collection is not given).
fn gone_expectation(
    old: &Baseline,
    subjects: &BTreeMap<String, Subject>,
    e: &Expectation,
) -> Option<String> {
    let s = subjects.get(&e.suite)?;
    let at = format!("{}:{}", old.path.display(), e.line);
    if s.configuration(&e.configuration).is_none() {
        Some(format!("{at}: suite {:?} has no configuration {:?} any more (configurations: {}); restore it, or fix or delete the expectation", e.suite, e.configuration, s.configuration_list()))
    } else if !s.suite.tasks.iter().any(|t| t.id == e.task) {
        Some(format!(
            "{at}: suite {:?} has no task {:?} any more{}; restore it, or fix or delete the expectation",
            e.suite,
            e.task,
            ranklab_engine::suggest::did_you_mean(
                &e.task,
                s.suite.tasks.iter().map(|t| t.id.as_str())
            )
        ))
    } else if s.corpus.index_of(&e.document).is_none() {
        Some(format!(
            "{at}: document {:?} is not in the corpus of {:?} any more{}; restore it, or fix or delete the expectation",
            e.document,
            e.suite,
            ranklab_engine::suggest::did_you_mean(
                &e.document,
                crate::suite::corpus_ids(&s.corpus)
            )
        ))
    } else {
        None
    }
}

/// `--calibrate N` needs N >= 2, rows to calibrate, and the inputs the baseline was recorded
/// on (a spread measured on other inputs would not apply).
fn check_calibrate(n: usize, old: &Baseline, changes: &Changes) -> Result<()> {
    if n < 2 {
        bail!("--calibrate {n}: give at least 2 replays to measure a spread, e.g. --calibrate 5");
    }
    if old.rows.is_empty() {
        bail!(
            "{}: no rows to calibrate; record the baseline with `ranklab gate --update` first",
            old.path.display()
        );
    }
    if changes
        .suites
        .iter()
        .any(|s| s.corpus.is_some() || s.tasks.is_some() || !s.configurations.is_empty())
    {
        bail!(
            "{}: {}; a spread measured on other inputs would not apply: review the change, run `ranklab gate --update`, then calibrate",
            old.path.display(),
            changes.banner()[0]
        );
    }
    Ok(())
}

/// The grades a subject's rows are measured on: with `--update`, those `--judgments` names;
/// else people's and the LLM's when its baseline entry says `"llm_grades": true`, people's
/// only otherwise.
fn selection(flags: &Flags, old: &Baseline, name: &str) -> crate::judgments::Selection {
    use crate::judgments::Selection;
    if flags.update {
        flags.judgments
    } else if old.suites.get(name).is_some_and(|e| e.llm_grades) {
        Selection::All
    } else {
        Selection::Human
    }
}

/// The suites under `--tasks` and the collections of `--beir`, by name (unique), each with the
/// grades its rows were recorded on ([`selection`]).
fn subjects(flags: &Flags, old: &Baseline) -> Result<BTreeMap<String, Subject>> {
    let mut subjects: BTreeMap<String, Subject> = BTreeMap::new();
    for p in crate::suite::suites(&flags.tasks)? {
        let mut s = Subject::from_suite(&p)?;
        s.select_judgments(selection(flags, old, &s.name), flags.update);
        s.replay = crate::replay::ReplayOptions {
            external: flags.external.clone(),
            recordings: Some(flags.recordings.join(&s.name).join("runs")),
            ..Default::default()
        };
        s.keep_outputs = flags.update;
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
    for dir in &flags.beir {
        let mut s = Subject::from_beir(dir, &flags.split)?;
        s.select_judgments(selection(flags, old, &s.name), flags.update);
        // A collection's recorded model outputs are beside its reports, as a suite's are:
        // `reports/beir/<name>/runs/models/`.
        s.replay = crate::replay::ReplayOptions {
            external: flags.external.clone(),
            recordings: Some(flags.recordings.join("beir").join(&s.name).join("runs")),
            ..Default::default()
        };
        s.keep_outputs = flags.update;
        if subjects.contains_key(&s.name) {
            bail!(
                "{}: collection name {:?} is also a suite name; rename one",
                dir.display(),
                s.name
            );
        }
        subjects.insert(s.name.clone(), s);
    }
    Ok(subjects)
}

/// Why a baseline row cannot be measured any more (None: it can).
fn gone_row(s: &Subject, r: &Row) -> Option<String> {
    if s.configuration(&r.configuration).is_none() {
        Some(format!(
            "suite {:?} has no configuration {:?} (configurations: {}); restore it, or fix or delete the row (baseline line {})",
            r.suite,
            r.configuration,
            s.configuration_list(),
            r.line
        ))
    } else if !s.metric_names().contains(&r.metric) {
        Some(format!(
            "suite {:?} has no metric {:?} (metrics: {}); fix or delete the row (baseline line {})",
            r.suite,
            r.metric,
            s.metric_names().join(", "),
            r.line
        ))
    } else {
        None
    }
}

/// Every suite the baseline names must exist (collections not given with --beir are not
/// checked: their rows are skipped), and be of the kind recorded.
fn check_suites(b: &Baseline, subjects: &BTreeMap<String, Subject>, one_suite: bool) -> Result<()> {
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
    Ok(())
}
