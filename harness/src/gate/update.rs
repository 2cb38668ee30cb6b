//! Rewriting the baseline: `--update` (after the verdicts) and `--calibrate N`.
//!
//! `--update` never takes in a regression silently. It refuses (nothing written) while a row
//! fails (REGRESSION, a must-not-rise row risen, a row gone), an expectation fails or a paired
//! assertion fails, naming each. With `--accept-regressions WHY` it writes failing rows and
//! expectations anyway and records, per accepted row, the value before and after, who
//! (`git config user.name`, else `$USER`), when (UTC) and why; per accepted expectation the rank
//! accepted. A gone row is dropped. A failed paired assertion is never accepted (it is not in
//! the baseline; fix the code or the assertion file).
//!
//! An acceptance stays in the baseline, and every gate shows it, while the row's value is the
//! one accepted (for an expectation: while it still fails within the accepted rank); the next
//! `--update` that records another value drops it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use super::baseline::{
    Accepted, Baseline, ExpectationAcceptance, Fixed, Kind, RowAcceptance, SuiteEntry,
};
use super::plan::{Key, Mode, Plan};
use super::verdict::{ExpectationLine, ExpectationVerdict, Line, Outcome, Verdict};
use super::Subject;
use crate::report::shown;

/// What `--update` did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Update {
    /// Not an `--update` run.
    NotAsked,
    /// The baseline was written.
    Written {
        /// The file.
        path: PathBuf,
        /// Rows written.
        rows: usize,
        /// Rows and expectations accepted now (`suite/configuration/metric`,
        /// `suite/configuration/task/document`).
        accepted: Vec<String>,
        /// Gone rows dropped.
        dropped: Vec<String>,
    },
    /// Nothing was written.
    Refused {
        /// Failing rows: `suite/configuration/metric (baseline → now, verdict)`.
        rows: Vec<String>,
        /// Failing expectations.
        expectations: Vec<String>,
        /// Failing paired assertions (per half).
        paired: usize,
        /// Whether `--accept-regressions` was given (then only a paired failure refuses).
        accept_given: bool,
    },
}

/// Who is accepting: `git config user.name`, else `$USER`, else "unknown".
fn who() -> String {
    let git = std::process::Command::new("git")
        .args(["config", "user.name"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    git.or_else(|| std::env::var("USER").ok().filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "unknown".to_string())
}

fn row_name(k: &Key) -> String {
    format!("{}/{}/{}", k.0, k.1, k.2)
}

/// Under `--update`: refuses (writing nothing), or adds the model outputs computed here to the
/// recordings and builds and writes the new baseline (atomically).
pub fn apply(
    plan: &Plan,
    outcome: &Outcome,
    lists: &BTreeMap<(String, String), super::rankings::Lists>,
    pending: &[super::PendingOutputs],
) -> Result<Update> {
    let Mode::Update { accept } = &plan.mode else {
        return Ok(Update::NotAsked);
    };
    let failing_rows = failing_rows(&outcome.lines);
    let failing_exps = failing_expectations(&outcome.expectations);
    let paired = outcome.counts.paired_failed;
    if paired > 0 || (accept.is_none() && (!failing_rows.is_empty() || !failing_exps.is_empty())) {
        return Ok(Update::Refused {
            rows: failing_rows,
            expectations: failing_exps,
            paired,
            accept_given: accept.is_some(),
        });
    }
    let stamp = accept.as_ref().map(|why| Accepted {
        by: who(),
        at: chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        why: why.clone(),
    });
    let mut b = NewBaseline {
        plan,
        stamp,
        new: Baseline {
            path: plan.path.clone(),
            ..Default::default()
        },
        accepted: Vec::new(),
        dropped: Vec::new(),
    };
    for l in &outcome.lines {
        b.keep_row(l);
    }
    for e in &outcome.expectations {
        b.keep_expectation(e);
    }
    b.add_named_suites();
    for p in pending {
        p.write()?;
    }
    crate::report::atomic::write(&plan.path, b.new.render().as_bytes())?;
    keep_rankings(plan, &b.new, lists)?;
    Ok(Update::Written {
        path: plan.path.clone(),
        rows: b.new.rows.len(),
        accepted: b.accepted,
        dropped: b.dropped,
    })
}

/// Writes the rankings of each suite configuration the new baseline gates beside it
/// ([`super::rankings`]), so that a later gate can grade them under changed judgments and
/// say what moved.
fn keep_rankings(
    plan: &Plan,
    new: &Baseline,
    lists: &BTreeMap<(String, String), super::rankings::Lists>,
) -> Result<()> {
    for r in new.rows.values() {
        let key = (r.suite.clone(), r.configuration.clone());
        let suite = plan.subjects.get(&r.suite);
        if let (Some(l), true) = (
            lists.get(&key),
            suite.is_some_and(|s| s.kind == Kind::Suite),
        ) {
            super::rankings::write_copy(&plan.path, &r.suite, &r.configuration, l)?;
        }
    }
    Ok(())
}

/// The failing rows: `suite/configuration/metric (baseline → now, verdict)`.
fn failing_rows(lines: &[Line]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.verdict.fails())
        .map(|l| {
            let k = l.row.key();
            match l.now {
                Some(n) => format!(
                    "{} ({} → {}, {})",
                    row_name(&k),
                    l.row.value.show(),
                    n.show(),
                    l.verdict.as_str()
                ),
                None => format!("{} ({})", row_name(&k), l.verdict.as_str()),
            }
        })
        .collect()
}

/// The failing expectations, with the rank they have now.
fn failing_expectations(expectations: &[ExpectationLine]) -> Vec<String> {
    expectations
        .iter()
        .filter(|e| e.verdict.fails())
        .map(|e| {
            let x = &e.expectation;
            format!(
                "{}/{} task {} document {} within {} (rank {})",
                x.suite,
                x.configuration,
                x.task,
                x.document,
                x.within,
                e.rank.map_or("none".to_string(), |r| r.to_string())
            )
        })
        .collect()
}

/// The baseline `--update` writes, as it is built, with what was accepted and dropped.
struct NewBaseline<'a> {
    plan: &'a Plan,
    /// Who accepts, when and why (`--accept-regressions`).
    stamp: Option<Accepted>,
    new: Baseline,
    accepted: Vec<String>,
    dropped: Vec<String>,
}

impl NewBaseline<'_> {
    /// A gone row is dropped; a measured row takes its value now; a row of a collection or
    /// suite not given this time is kept as it was.
    fn keep_row(&mut self, l: &Line) {
        if l.verdict == Verdict::Gone {
            self.dropped.push(row_name(&l.row.key()));
            return;
        }
        let plan = self.plan;
        match (plan.subjects.get(&l.row.suite), l.now) {
            (Some(s), Some(n)) => self.keep_measured_row(s, l, n),
            _ => self.keep_unmeasured_row(l),
        }
    }

    /// A row measured now: its value `n`, its configuration's fingerprint, and an acceptance
    /// when it fails (or the one it had, while the value is the one accepted).
    fn keep_measured_row(&mut self, s: &Subject, l: &Line, n: Fixed) {
        let key = l.row.key();
        self.add_subject(s);
        let acceptance = if l.verdict.fails() {
            self.accepted.push(row_name(&key));
            self.stamp.clone().map(|who| RowAcceptance {
                from: l.row.value,
                to: n,
                who,
            })
        } else {
            // Kept while the value is the one accepted.
            l.row.accepted.clone().filter(|a| a.to == n)
        };
        let mut row = l.row.clone();
        row.value = n;
        row.line = 0;
        row.rise_fails = l.row.rise_fails || s.is_legacy(&l.row.configuration);
        row.config = s.config_fingerprint(&l.row.configuration);
        row.accepted = acceptance;
        self.new.rows.insert(key, row);
    }

    /// A row of a collection or suite not given this time: kept as it was (a BEIR
    /// configuration's fingerprint is ranklab's own: filled in when missing).
    fn keep_unmeasured_row(&mut self, l: &Line) {
        let plan = self.plan;
        let Some(entry) = plan.old.suites.get(&l.row.suite) else {
            return; // a new row that was not measured: nothing to record
        };
        self.add_old_suite(&l.row.suite, entry);
        let mut row = l.row.clone();
        if row.config.is_none() && entry.kind == Kind::Beir {
            row.config = crate::suite::beir::configuration(&row.configuration)
                .ok()
                .map(|c| super::config_fingerprint(&c));
        }
        self.new.rows.insert(l.row.key(), row);
    }

    /// An expectation is kept (a failing one accepted, with the rank it has now), unless it is
    /// gone: then it is dropped.
    fn keep_expectation(&mut self, e: &ExpectationLine) {
        let mut x = e.expectation.clone();
        x.line = 0;
        x.accepted = match e.verdict {
            ExpectationVerdict::Fail => {
                self.accepted.push(format!(
                    "{}/{}/{}/{}",
                    x.suite, x.configuration, x.task, x.document
                ));
                self.stamp
                    .clone()
                    .map(|who| ExpectationAcceptance { rank: e.rank, who })
            }
            ExpectationVerdict::Accepted | ExpectationVerdict::Skipped => x.accepted,
            ExpectationVerdict::Pass | ExpectationVerdict::Gone => None,
        };
        if e.verdict == ExpectationVerdict::Gone {
            self.dropped.push(format!(
                "expectation {}/{}/{}/{}",
                x.suite, x.configuration, x.task, x.document
            ));
            return;
        }
        self.new.expectations.push(x);
    }

    /// Every suite a kept row or expectation names has its entry (a suite whose rows all went).
    fn add_named_suites(&mut self) {
        let named: Vec<String> = self
            .new
            .rows
            .values()
            .map(|r| r.suite.clone())
            .chain(self.new.expectations.iter().map(|e| e.suite.clone()))
            .collect();
        let plan = self.plan;
        for name in named {
            if !self.new.suites.contains_key(&name) {
                match (plan.subjects.get(&name), plan.old.suites.get(&name)) {
                    (Some(s), _) => self.add_subject(s),
                    (None, Some(e)) => self.add_old_suite(&name, e),
                    (None, None) => {}
                }
            }
        }
    }

    /// The entry and input fingerprints of a suite or collection given now.
    fn add_subject(&mut self, s: &Subject) {
        self.new.suites.insert(s.name.clone(), s.entry());
        if let Some(i) = s.inputs() {
            self.new.inputs.insert(s.name.clone(), i);
        }
    }

    /// The entry and input fingerprints of a suite as the old baseline has them.
    fn add_old_suite(&mut self, name: &str, entry: &SuiteEntry) {
        self.new.suites.insert(name.to_string(), entry.clone());
        if let Some(i) = self.plan.old.inputs.get(name) {
            self.new.inputs.insert(name.to_string(), i.clone());
        }
    }
}

/// `--calibrate N`: replays N times, writes each row's spread (largest minus smallest value)
/// into the baseline, values and tolerances unchanged.
pub fn calibrate(plan: &Plan, n: usize) -> Result<ExitCode> {
    let mut lo: BTreeMap<Key, Fixed> = BTreeMap::new();
    let mut hi: BTreeMap<Key, Fixed> = BTreeMap::new();
    for i in 0..n {
        eprintln!("gate --calibrate: replay {} of {n}", i + 1);
        for (k, v) in plan.measure_values()?.values {
            let l = lo.entry(k.clone()).or_insert(v);
            *l = (*l).min(v);
            let h = hi.entry(k).or_insert(v);
            *h = (*h).max(v);
        }
    }
    let mut new = plan.old.clone();
    let mut md = format!(
        "## ranklab gate --calibrate {n}\n\nBaseline `{}`: each row's spread over {n} replays; a row allows max(tolerance, 3 × spread).\n\n| suite | configuration | metric | baseline | lowest | highest | spread | allowed |\n|---|---|---|---:|---:|---:|---:|---:|\n",
        shown(&plan.path)
    );
    let mut calibrated = 0;
    for (k, row) in new.rows.iter_mut() {
        let (Some(l), Some(h)) = (lo.get(k), hi.get(k)) else {
            continue; // a collection not given with --beir: left as it was
        };
        row.spread = Some(Fixed(h.0.saturating_sub(l.0)));
        calibrated += 1;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            crate::report::table::md_cell(&k.0),
            crate::report::table::md_cell(&k.1),
            crate::report::table::md_cell(&k.2),
            row.value.show(),
            l.show(),
            h.show(),
            Fixed(h.0.saturating_sub(l.0)).show(),
            row.allowed().show()
        );
    }
    crate::report::atomic::write(&plan.path, new.render().as_bytes())?;
    let _ = writeln!(
        md,
        "\nCalibrated {calibrated} row(s); spreads written to `{}`.",
        shown(&plan.path)
    );
    print!("{md}");
    Ok(ExitCode::SUCCESS)
}
