//! The baseline file (`reports/baseline.json`) the CI gate compares against.
//!
//! ```json
//! {
//!   "about": "...",
//!   "suites": {
//!     "brain": { "kind": "suite", "corpus_sha256": "65870c82…", "suite_sha256": "9f1e…" }
//!   },
//!   "rows": [
//!     { "suite": "brain", "configuration": "current", "metric": "MRR", "value": 0.9792, "tolerance": 0.0010 },
//!     { "suite": "brain", "configuration": "legacy", "metric": "MRR", "value": 0.4472, "tolerance": 0.0010, "rise": "fails" },
//!     { "suite": "docir", "configuration": "minisearch", "metric": "MRR", "value": 0.6400, "tolerance": 0.0010, "spread": 0.0012 }
//!   ],
//!   "expectations": [
//!     { "suite": "docir", "configuration": "fusion", "task": "T07", "document": "pay-webhook-replay", "within": 3 }
//!   ]
//! }
//! ```
//!
//! `spread` (optional, written by `ranklab gate --calibrate N`) is the range of the row's value
//! over N replays; the row then allows max(tolerance, 3 × spread). `"rise": "fails"` (written by
//! `--update` for configurations with `wiring: legacy`, whose rows must keep showing the bug)
//! makes a rise beyond the allowance fail too. `expectations` (optional, written by hand, kept
//! by `--update`) are per-task checks: the document must be ranked within the top `within` of
//! the configuration for that task.
//!
//! The file is written with serde_json in a layout that keeps its diff reviewable
//! (`gate/baseline_json.rs`): suites in name order, rows in (suite, configuration, metric)
//! order, one row per line, every number with exactly four decimals (trec_eval's precision). Values and tolerances are held as integers in
//! units of 1e-4 ([`Fixed`]), so comparing a value with its baseline never depends on how a
//! float was rounded. Reading checks every field; errors name the file and line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use serde::{Deserialize, Serialize};

/// A number with four decimals, held as an integer count of 1e-4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fixed(pub i64);

impl Fixed {
    /// Rounds `x` to four decimals (half away from zero).
    pub fn from_f64(x: f64) -> Fixed {
        Fixed((x * 10_000.0).round() as i64)
    }
    /// As a float (for display only).
    pub fn as_f64(self) -> f64 {
        self.0 as f64 / 10_000.0
    }
    /// `0.9792`, `1.0000`.
    pub fn show(self) -> String {
        let sign = if self.0 < 0 { "-" } else { "" };
        let a = self.0.unsigned_abs();
        format!("{sign}{}.{:04}", a / 10_000, a % 10_000)
    }
    /// `+0.0208`, `-0.0208`, `0.0000`.
    pub fn show_signed(self) -> String {
        if self.0 > 0 {
            format!("+{}", self.show())
        } else {
            self.show()
        }
    }
}

/// The largest value (and tolerance, and spread) a baseline row of `metric` can hold, and why:
/// 1 for every measure that is a mean over tasks of a value in [0, 1] (MRR, recall, precision,
/// nDCG, MAP, success, bpref, R-precision, ERR, RBP, infAP, the unjudged share, trec_eval's
/// `set_*`, `iprec_at_recall_*`, `G` and `binG`); [`MAX_COUNT`] for trec_eval's counts
/// (`num_ret`, `num_rel`, ...: summed over tasks) and for a measure not known here. Every bound
/// keeps `value × 10⁴` (a [`Fixed`]) and the gate's sums of three such numbers far inside `i64`.
pub fn measure_bound(metric: &str) -> (f64, &'static str) {
    let m = metric.to_ascii_lowercase();
    const SHARES: [&str; 22] = [
        "mrr",
        "recall",
        "ndcg",
        "p@",
        "p_",
        "precision",
        "map",
        "gm_map",
        "success",
        "bpref",
        "rprec",
        "r-prec",
        "recip_rank",
        "err",
        "rbp",
        "infap",
        "iprec",
        "set_",
        "g",
        "bing",
        "unjudged",
        "hit",
    ];
    let word = m.split(['@', '_', '.']).next().unwrap_or("");
    if m.starts_with("num_") {
        (MAX_COUNT, "a count")
    } else if SHARES
        .iter()
        .any(|s| m.starts_with(s) && (s.len() > 1 || word == "g"))
    {
        (1.0, "a mean of values in [0, 1]")
    } else {
        (MAX_COUNT, "a measure ranklab bounds only loosely")
    }
}

/// The largest count (or value of a measure without a tighter bound) a baseline row can hold.
pub const MAX_COUNT: f64 = 1e9;

/// The tolerance a new row gets: absorbs floating-point differences of the ONNX models across
/// machines, and is smaller than the effect of one task of a 100-task suite moving one rank
/// within the top 5 (1/5 - 1/6 = 0.033, divided by 100 tasks = 0.0033 of MRR).
pub const DEFAULT_TOLERANCE: Fixed = Fixed(10);

/// What a baseline entry was measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A suite under `tasks/` (always gated).
    Suite,
    /// A BEIR collection (gated only when `--beir DIR` names it).
    Beir,
}

/// The fingerprint of one suite's inputs when the baseline was recorded.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteEntry {
    /// Suite or BEIR collection.
    pub kind: Kind,
    /// `Corpus::content_hash()` of its corpus.
    pub corpus_sha256: String,
    /// [`crate::gate::suite_hash`] of its tasks.
    pub suite_sha256: String,
    /// Whether its rows were recorded with the LLM grades of `judgments.yaml`
    /// (`gate --update --judgments all`); written only when true.
    #[serde(default)]
    pub llm_grades: bool,
}

/// Per-record, per-task and per-judgment fingerprints of one suite's inputs (the `inputs`
/// section), from which the gate names what changed since the baseline: records added, removed
/// or edited, tasks added, removed or changed, judgments added or removed, recordings changed.
/// A BEIR collection records its recordings only (its corpus has thousands of records: its
/// banner gives the corpus hash); its other maps are empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Inputs {
    /// Record id -> the first 16 hex digits of the sha256 of its content (id, metadata, text).
    pub records: BTreeMap<String, String>,
    /// Task id -> the first 16 hex digits of the sha256 of its query and cutoff.
    pub tasks: BTreeMap<String, String>,
    /// Task id -> document -> grade: every judgment (suite.yaml's and judgments.yaml's).
    pub judgments: BTreeMap<String, BTreeMap<String, i32>>,
    /// Recording under `reports/<suite>/runs/` -> the first 16 hex digits of its sha256
    /// ([`super::recordings`]); absent in baselines written before they were recorded.
    #[serde(default)]
    pub recordings: BTreeMap<String, String>,
}

/// Who accepted a regression with `gate --update --accept-regressions WHY`, when and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `git config user.name`, else `$USER`.
    pub by: String,
    /// UTC date-time, `2026-12-02T04:30:00Z`.
    pub at: String,
    /// The reason given.
    pub why: String,
}

/// A regression accepted on a row: the value before and the value recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowAcceptance {
    /// The baseline value before.
    pub from: Fixed,
    /// The value recorded (the row's `value`).
    pub to: Fixed,
    /// Who, when, why.
    pub who: Accepted,
}

/// A failed expectation accepted: the rank it had then (None: not ranked); it passes while its
/// rank is no worse than that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectationAcceptance {
    /// The rank accepted (None: not ranked at all).
    pub rank: Option<usize>,
    /// Who, when, why.
    pub who: Accepted,
}

/// One gated (suite, configuration, metric) triple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Suite name (`suite:` of suite.yaml, or the BEIR collection's name).
    pub suite: String,
    /// Configuration name.
    pub configuration: String,
    /// Metric column name (`recall@5`, `MRR`, `nDCG@10`, ...).
    pub metric: String,
    /// The recorded value.
    pub value: Fixed,
    /// How far below `value` the metric may fall and still pass.
    pub tolerance: Fixed,
    /// The range of the value over `--calibrate N` replays, if calibrated.
    pub spread: Option<Fixed>,
    /// Whether a rise beyond the allowance fails (rows of the legacy wiring).
    pub rise_fails: bool,
    /// The fingerprint of the configuration the value was measured with
    /// ([`crate::gate::config_fingerprint`]); None in baselines written before it was recorded.
    pub config: Option<String>,
    /// A regression accepted with `--accept-regressions`, kept while the value is unchanged.
    pub accepted: Option<RowAcceptance>,
    /// Line in the file (0 for rows not read from a file).
    pub line: usize,
}

impl Row {
    /// A row as `--update` first writes it: the default tolerance, no spread.
    pub fn new(key: (String, String, String), value: Fixed, rise_fails: bool) -> Row {
        Row {
            suite: key.0,
            configuration: key.1,
            metric: key.2,
            value,
            tolerance: DEFAULT_TOLERANCE,
            spread: None,
            rise_fails,
            config: None,
            accepted: None,
            line: 0,
        }
    }

    /// The change allowed either way: max(tolerance, 3 × spread).
    pub fn allowed(&self) -> Fixed {
        Fixed(
            self.tolerance
                .0
                .max(self.spread.map_or(0, |s| s.0).saturating_mul(3)),
        )
    }

    /// The (suite, configuration, metric) key.
    pub fn key(&self) -> (String, String, String) {
        (
            self.suite.clone(),
            self.configuration.clone(),
            self.metric.clone(),
        )
    }
}

/// A loaded (or about to be written) baseline.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    /// Where it was read from.
    pub path: PathBuf,
    /// Per suite name.
    pub suites: BTreeMap<String, SuiteEntry>,
    /// Per (suite, configuration, metric), sorted.
    pub rows: BTreeMap<(String, String, String), Row>,
    /// Line of each suite's entry.
    pub suite_lines: BTreeMap<String, usize>,
    /// Per-task expectations, file order.
    pub expectations: Vec<Expectation>,
    /// Per suite: its records', tasks' and judgments' fingerprints (absent in old baselines).
    pub inputs: BTreeMap<String, Inputs>,
}

/// A per-task expectation: `document` within the top `within` of `configuration` for `task`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// Suite name.
    pub suite: String,
    /// Configuration name.
    pub configuration: String,
    /// Task id.
    pub task: String,
    /// Document id.
    pub document: String,
    /// The largest rank that passes (1-based).
    pub within: usize,
    /// A failure accepted with `--accept-regressions`.
    pub accepted: Option<ExpectationAcceptance>,
    /// Line in the file.
    pub line: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpectation {
    suite: String,
    configuration: String,
    task: String,
    document: String,
    within: usize,
    #[serde(default)]
    accepted: Option<RawAccepted>,
}

/// `"accepted"` of a row (`from`, `to`) or of an expectation (`rank`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAccepted {
    #[serde(default)]
    from: Option<f64>,
    #[serde(default)]
    to: Option<f64>,
    #[serde(default)]
    rank: Option<usize>,
    by: String,
    at: String,
    why: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    #[allow(dead_code)]
    about: Option<String>,
    suites: BTreeMap<String, SuiteEntry>,
    rows: Vec<RawRow>,
    #[serde(default)]
    expectations: Vec<RawExpectation>,
    #[serde(default)]
    inputs: BTreeMap<String, Inputs>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    suite: String,
    configuration: String,
    metric: String,
    value: f64,
    tolerance: f64,
    #[serde(default)]
    spread: Option<f64>,
    #[serde(default)]
    rise: Option<String>,
    #[serde(default)]
    config: Option<String>,
    #[serde(default)]
    accepted: Option<RawAccepted>,
}

const ABOUT: &str = "ranklab gate baseline: the gated (suite, configuration, metric) values. `ranklab gate` fails a row whose value drops by more than 1.5 x its allowance (its tolerance, or 3 x its calibrated spread when larger; a smaller drop beyond the allowance is OKISH and passes); a row with \"rise\": \"fails\" (the legacy wiring's, which must keep showing the bug) also fails when it rises beyond its allowance. Regenerate with `ranklab gate --update` after review; edit a tolerance by hand, --update keeps it.";

fn json_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

impl Baseline {
    /// Reads and checks a baseline file (fields, numbers, duplicates, suites of the rows).
    pub fn load(path: &Path) -> Result<Baseline> {
        let bytes = ranklab_engine::input::read(path, ranklab_engine::input::MAX_WHOLE_BYTES).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                match crate::root::not_found_hint() {
                    Some(hint) => anyhow!("{}: no baseline file, and {hint}", path.display()),
                    None => anyhow!("{}{}: no baseline file; record one with `ranklab gate --update` (after reviewing the numbers)", path.display(), crate::root::tried(path)),
                }
            } else {
                anyhow!("cannot read {}{}: {e}", path.display(), crate::root::tried(path))
            }
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
            anyhow!(
                "{}:{line}: invalid UTF-8; save the file as UTF-8 (or regenerate it with `ranklab gate --update`)",
                path.display()
            )
        })?;
        let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
        if text.trim().is_empty() {
            bail!(
                "{}: the baseline file is empty; record one with `ranklab gate --update` (after reviewing the numbers)",
                path.display()
            );
        }
        Self::parse(path, text)
    }

    /// Parses a baseline from `text` (read from `path`).
    pub fn parse(path: &Path, text: &str) -> Result<Baseline> {
        let raw = read_raw(path, text)?;
        let mut b = Baseline {
            path: path.to_path_buf(),
            ..Default::default()
        };
        for (name, entry) in raw.suites {
            b.add_suite(text, name, entry)?;
        }
        for r in raw.rows {
            b.add_row(text, r)?;
        }
        for e in raw.expectations {
            b.add_expectation(text, e)?;
        }
        for (name, inputs) in raw.inputs {
            b.add_inputs(text, name, inputs)?;
        }
        Ok(b)
    }

    /// Adds a suite's entry once its hashes are checked.
    fn add_suite(&mut self, text: &str, name: String, entry: SuiteEntry) -> Result<()> {
        let line = find_line(text, &[&format!("{}:", json_str(&name))]);
        for (field, h) in [
            ("corpus_sha256", &entry.corpus_sha256),
            ("suite_sha256", &entry.suite_sha256),
        ] {
            if h.len() != 64 || !h.bytes().all(|c| c.is_ascii_hexdigit()) {
                bail!("{}:{line}: suite {name:?}: `{field}` must be 64 hex digits (a sha256), found {h:?}", self.path.display());
            }
        }
        self.suite_lines.insert(name.clone(), line);
        self.suites.insert(name, entry);
        Ok(())
    }

    /// Adds a row once its suite, numbers, `rise`, `config` and `accepted` are checked; a
    /// (suite, configuration, metric) listed twice is an error naming both lines.
    fn add_row(&mut self, text: &str, r: RawRow) -> Result<()> {
        let needles = [
            format!("\"suite\": {}", json_str(&r.suite)),
            format!("\"configuration\": {}", json_str(&r.configuration)),
            format!("\"metric\": {}", json_str(&r.metric)),
        ];
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        let line = find_line(text, &needles);
        let at = format!("{}:{line}", self.path.display());
        if !self.suites.contains_key(&r.suite) {
            bail!("{at}: row names suite {:?}, which has no entry under \"suites\"; add it or run `ranklab gate --update`", r.suite);
        }
        for (field, x) in [
            ("value", r.value),
            ("tolerance", r.tolerance),
            ("spread", r.spread.unwrap_or(0.0)),
        ] {
            if !x.is_finite() || x < 0.0 {
                bail!("{at}: `{field}` is {x}; it must be a non-negative number");
            }
            let (hi, what) = measure_bound(&r.metric);
            if x > hi {
                bail!(
                    "{at}: `{field}` is {x}, above {hi}: {} is {what}, so no value, tolerance or spread of it can be larger; restore the row (git checkout) or run `ranklab gate --update`",
                    r.metric
                );
            }
        }
        let rise_fails = parse_rise(&at, r.rise.as_deref())?;
        if let Some(c) = &r.config {
            if c.len() != 16 || !c.bytes().all(|b| b.is_ascii_hexdigit()) {
                bail!("{at}: `config` must be 16 hex digits (a configuration fingerprint written by `ranklab gate --update`), found {c:?}");
            }
        }
        let accepted = r.accepted.map(|a| row_acceptance(&at, a)).transpose()?;
        let row = Row {
            suite: r.suite,
            configuration: r.configuration,
            metric: r.metric,
            value: Fixed::from_f64(r.value),
            tolerance: Fixed::from_f64(r.tolerance),
            spread: r.spread.map(Fixed::from_f64),
            rise_fails,
            config: r.config,
            accepted,
            line,
        };
        if let Some(prev) = self.rows.insert(row.key(), row.clone()) {
            // This row is the second one: its line is the next that matches after the first's.
            let second = find_line_after(text, &needles, prev.line);
            bail!(
                "{}:{second}: ({}, {}, {}) is listed twice (also on line {}); keep one row",
                self.path.display(),
                row.suite,
                row.configuration,
                row.metric,
                prev.line
            );
        }
        Ok(())
    }

    /// Adds a per-task expectation once its suite, `within`, uniqueness and `accepted` are
    /// checked.
    fn add_expectation(&mut self, text: &str, e: RawExpectation) -> Result<()> {
        let line = find_line(
            text,
            &[
                &format!("\"task\": {}", json_str(&e.task)),
                &format!("\"document\": {}", json_str(&e.document)),
                &format!("\"configuration\": {}", json_str(&e.configuration)),
            ],
        );
        let at = format!("{}:{line}", self.path.display());
        if !self.suites.contains_key(&e.suite) {
            bail!("{at}: expectation names suite {:?}, which has no entry under \"suites\"; add it or run `ranklab gate --update`", e.suite);
        }
        if e.within == 0 {
            bail!("{at}: `within` is 0; write the largest rank that passes (1 = first)");
        }
        if let Some(prev) = self.expectations.iter().find(|p| {
            (&p.suite, &p.configuration, &p.task, &p.document)
                == (&e.suite, &e.configuration, &e.task, &e.document)
        }) {
            bail!(
                "{at}: the expectation ({}, {}, {}, {}) is listed twice (also on line {}); keep one",
                e.suite,
                e.configuration,
                e.task,
                e.document,
                prev.line
            );
        }
        let accepted = e
            .accepted
            .map(|a| expectation_acceptance(&at, a))
            .transpose()?;
        self.expectations.push(Expectation {
            suite: e.suite,
            configuration: e.configuration,
            task: e.task,
            document: e.document,
            within: e.within,
            accepted,
            line,
        });
        Ok(())
    }

    /// Adds a suite's input fingerprints; the suite must have an entry.
    fn add_inputs(&mut self, text: &str, name: String, inputs: Inputs) -> Result<()> {
        if !self.suites.contains_key(&name) {
            let line = find_line(text, &[&format!("{}: {{", json_str(&name))]);
            bail!(
                "{}:{line}: `inputs` names suite {name:?}, which has no entry under \"suites\"; remove it or run `ranklab gate --update`",
                self.path.display()
            );
        }
        self.inputs.insert(name, inputs);
        Ok(())
    }

    /// The file's text: stable order, one row per line, four decimals (written with serde_json
    /// in the layout of [`super::baseline_json`]).
    pub fn render(&self) -> String {
        super::baseline_json::render(self, ABOUT)
    }

    /// The suites named by rows, in name order.
    pub fn row_suites(&self) -> BTreeSet<&str> {
        self.rows.values().map(|r| r.suite.as_str()).collect()
    }
}

/// The file as serde reads it; a syntax or type error names the file, line and column once.
fn read_raw(path: &Path, text: &str) -> Result<RawFile> {
    serde_json::from_str(text).map_err(|e| {
        // serde_json's message ends with " at line L column C": shown once, up front.
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        let hint = if msg.starts_with("invalid type: string") && msg.ends_with("expected f64") {
            "; write the number without quotes"
        } else {
            ""
        };
        let msg = ranklab_engine::yaml::plain(&msg);
        anyhow!(
            "{}:{}:{}: {msg}{hint} (see `ranklab help formats`, `Gate baseline`)",
            path.display(),
            e.line(),
            e.column()
        )
    })
}

/// A row's `rise`: absent or `"passes"` (false), `"fails"` (true); anything else is an error
/// at `at`.
fn parse_rise(at: &str, rise: Option<&str>) -> Result<bool> {
    match rise {
        None | Some("passes") => Ok(false),
        Some("fails") => Ok(true),
        Some(other) => bail!(
            "{at}: `rise` is {other:?}; write \"fails\" (a rise beyond the allowance fails: rows that must keep showing a bug) or leave it out"
        ),
    }
}

impl RawAccepted {
    /// Who, when and why.
    fn who(self) -> Accepted {
        Accepted {
            by: self.by,
            at: self.at,
            why: self.why,
        }
    }
}

/// A row's `accepted`: `from` and `to` (non-negative numbers), no `rank`.
fn row_acceptance(at: &str, a: RawAccepted) -> Result<RowAcceptance> {
    let (Some(from), Some(to)) = (a.from, a.to) else {
        bail!("{at}: a row's `accepted` needs `from` and `to` (the values before and after)");
    };
    if a.rank.is_some() {
        bail!("{at}: a row's `accepted` has no `rank` (that is an expectation's)");
    }
    for (field, x) in [("from", from), ("to", to)] {
        if !x.is_finite() || x < 0.0 {
            bail!("{at}: `accepted.{field}` is {x}; it must be a non-negative number");
        }
    }
    Ok(RowAcceptance {
        from: Fixed::from_f64(from),
        to: Fixed::from_f64(to),
        who: a.who(),
    })
}

/// An expectation's `accepted`: `rank` (or none: not ranked), no `from`/`to`.
fn expectation_acceptance(at: &str, a: RawAccepted) -> Result<ExpectationAcceptance> {
    if a.from.is_some() || a.to.is_some() {
        bail!("{at}: an expectation's `accepted` has `rank` (the rank accepted), not `from`/`to`");
    }
    Ok(ExpectationAcceptance {
        rank: a.rank,
        who: a.who(),
    })
}

/// The 1-based line of the first line holding every needle; failing that, of the first needle
/// alone; 0 when none is found.
/// The 1-based line of the first line after line `after` holding every needle, 0 if none.
fn find_line_after(text: &str, needles: &[&str], after: usize) -> usize {
    text.lines()
        .enumerate()
        .skip(after)
        .find(|(_, l)| needles.iter().all(|n| l.contains(n)))
        .map_or(0, |(i, _)| i + 1)
}

/// The 1-based line of the first line holding every needle (else the first holding the first
/// needle), 0 if none.
fn find_line(text: &str, needles: &[&str]) -> usize {
    let pos = |pred: &dyn Fn(&str) -> bool| text.lines().position(pred).map(|i| i + 1);
    pos(&|l| needles.iter().all(|n| l.contains(n)))
        .or_else(|| needles.first().and_then(|n| pos(&|l| l.contains(n))))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Baseline {
        let mut b = Baseline::default();
        let h = "a".repeat(64);
        b.suites.insert(
            "brain".into(),
            SuiteEntry {
                kind: Kind::Suite,
                corpus_sha256: h.clone(),
                suite_sha256: h,
                llm_grades: false,
            },
        );
        for (c, m, v) in [
            ("current", "recall@5", 1.0),
            ("current", "MRR", 0.979166),
            ("legacy", "MRR", 0.875),
        ] {
            let r = Row {
                suite: "brain".into(),
                configuration: c.into(),
                metric: m.into(),
                value: Fixed::from_f64(v),
                tolerance: DEFAULT_TOLERANCE,
                spread: None,
                rise_fails: c == "legacy",
                config: None,
                accepted: None,
                line: 0,
            };
            b.rows.insert(r.key(), r);
        }
        b
    }

    #[test]
    fn fixed_shows_four_decimals() {
        assert_eq!(Fixed::from_f64(1.0).show(), "1.0000");
        assert_eq!(Fixed::from_f64(0.979166).show(), "0.9792");
        assert_eq!(Fixed(-208).show_signed(), "-0.0208");
        assert_eq!(Fixed(208).show_signed(), "+0.0208");
        assert_eq!(Fixed(0).show_signed(), "0.0000");
    }

    #[test]
    fn values_beyond_their_measures_range_are_refused_at_their_line() {
        // Issue 42 case 3: 9e14 (and 1e15, 1e300) as an MRR overflowed the gate's arithmetic
        // into a passing "OKISH". MRR is a mean of reciprocal ranks, each in [0, 1].
        let text = sample().render();
        let line = text
            .lines()
            .position(|l| l.contains(r#""configuration": "current", "metric": "MRR""#))
            .unwrap()
            + 1;
        for (field, bad) in [
            ("value", r#""value": 9e14"#),
            ("value", r#""value": 1e300"#),
            ("value", r#""value": 1.0001"#),
            ("tolerance", r#""tolerance": 2"#),
        ] {
            let from = if field == "value" {
                r#""value": 0.9792"#
            } else {
                r#""value": 0.9792, "tolerance": 0.0010"#
            };
            let to = if field == "value" {
                bad.to_string()
            } else {
                format!(r#""value": 0.9792, {bad}"#)
            };
            let e = Baseline::parse(Path::new("b.json"), &text.replace(from, &to))
                .unwrap_err()
                .to_string();
            assert!(e.starts_with(&format!("b.json:{line}: `{field}`")), "{e}");
            assert!(e.contains("above 1"), "{e}");
        }
        // 1.0000 itself, the largest MRR (every task's first hit relevant), is accepted.
        let one = text.replace(r#""value": 0.9792"#, r#""value": 1.0"#);
        Baseline::parse(Path::new("b.json"), &one).unwrap();
        assert_eq!(measure_bound("nDCG@10").0, 1.0);
        assert_eq!(measure_bound("recall@1000").0, 1.0);
        assert_eq!(measure_bound("num_rel_ret").0, MAX_COUNT);
    }

    #[test]
    fn renders_sorted_rows_one_per_line_and_reads_back() {
        let b = sample();
        let text = b.render();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.iter().any(|l| l.contains("\"configuration\": \"current\", \"metric\": \"MRR\", \"value\": 0.9792, \"tolerance\": 0.0010")), "{text}");
        let back = Baseline::parse(Path::new("b.json"), &text).unwrap();
        assert_eq!(back.render(), text);
        let mrr = &back.rows[&("brain".into(), "legacy".into(), "MRR".into())];
        assert_eq!((mrr.value, mrr.line), (Fixed(8750), 9), "{text}");
    }

    #[test]
    fn spreads_rises_and_expectations_read_back_and_bad_ones_name_their_line() {
        let mut b = sample();
        let key = (
            "brain".to_string(),
            "current".to_string(),
            "MRR".to_string(),
        );
        b.rows.get_mut(&key).unwrap().spread = Some(Fixed(12));
        b.expectations.push(Expectation {
            suite: "brain".into(),
            configuration: "current".into(),
            task: "B01".into(),
            document: "aar-gcp-exodus".into(),
            within: 1,
            accepted: None,
            line: 0,
        });
        let text = b.render();
        assert!(
            text.contains(r#""value": 0.9792, "tolerance": 0.0010, "spread": 0.0012 }"#),
            "{text}"
        );
        assert!(text.contains(r#""configuration": "legacy", "metric": "MRR", "value": 0.8750, "tolerance": 0.0010, "rise": "fails" }"#), "{text}");
        let back = Baseline::parse(Path::new("b.json"), &text).unwrap();
        assert_eq!(back.rows[&key].allowed(), Fixed(36));
        assert_eq!(back.expectations.len(), 1);
        assert_eq!(back.render(), text);
        let line = text.lines().position(|l| l.contains("\"B01\"")).unwrap() + 1;
        let zero = text.replace(r#""within": 1"#, r#""within": 0"#);
        let e = Baseline::parse(Path::new("b.json"), &zero)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("b.json:{line}: `within` is 0")),
            "{e}"
        );
        let rise = text.replace(r#""rise": "fails""#, r#""rise": "sometimes""#);
        let e = Baseline::parse(Path::new("b.json"), &rise)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`rise` is \"sometimes\""), "{e}");
    }

    #[test]
    fn duplicate_row_names_both_lines() {
        let text = sample().render();
        let dup = text.replace("\"legacy\"", "\"current\"");
        let e = Baseline::parse(Path::new("b.json"), &dup)
            .unwrap_err()
            .to_string();
        assert!(e.contains("b.json:") && e.contains("listed twice"), "{e}");
        // Oracle: the lines of the two rows, found in the text by hand-written needles.
        let metric = e
            .split("(brain, current, ")
            .nth(1)
            .unwrap()
            .split(')')
            .next()
            .unwrap();
        let lines: Vec<usize> = dup
            .lines()
            .enumerate()
            .filter(|(_, l)| {
                l.contains("\"configuration\": \"current\"")
                    && l.contains(&format!("\"metric\": \"{metric}\""))
            })
            .map(|(i, _)| i + 1)
            .collect();
        assert_eq!(lines.len(), 2, "{dup}");
        let want = format!("b.json:{}: ", lines[1]);
        assert!(e.starts_with(&want), "{e}");
        assert!(e.contains(&format!("(also on line {})", lines[0])), "{e}");
    }

    #[test]
    fn a_row_of_an_undeclared_suite_is_an_error_with_its_line() {
        let text = sample().render().replace(
            "\"suite\": \"brain\", \"configuration\": \"legacy\"",
            "\"suite\": \"nope\", \"configuration\": \"legacy\"",
        );
        let e = Baseline::parse(Path::new("b.json"), &text)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("b.json:9:") && e.contains("\"nope\""), "{e}");
    }

    #[test]
    fn malformed_json_names_line_and_column() {
        let e = Baseline::parse(
            Path::new("b.json"),
            "{\n  \"suites\": {},\n  \"rows\": [ { \"suite\": 1 } ]\n}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("b.json:3:"), "{e}");
    }
}

#[cfg(test)]
mod formats_reference {
    /// docs/formats.md names every field of the gate baseline (read from the serde types).
    #[test]
    fn formats_md_names_every_field() {
        let reference = include_str!("../../../docs/formats.md");
        ranklab_engine::yaml::shape::documented::<super::RawFile>(reference, "Gate baseline", &[])
            .unwrap();
    }
}
