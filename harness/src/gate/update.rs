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

use super::baseline::{Accepted, Baseline, ExpectationAcceptance, Fixed, Kind, RowAcceptance};
use super::plan::{Key, Mode, Plan};
use super::verdict::{ExpectationVerdict, Outcome, Verdict};
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

/// Under `--update`: refuses, or builds and writes the new baseline (atomically).
pub fn apply(plan: &Plan, outcome: &Outcome) -> Result<Update> {
    let Mode::Update { accept } = &plan.mode else {
        return Ok(Update::NotAsked);
    };
    let failing_rows: Vec<String> = outcome
        .lines
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
        .collect();
    let failing_exps: Vec<String> = outcome
        .expectations
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
        .collect();
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
    let old = &plan.old;
    let mut new = Baseline {
        path: plan.path.clone(),
        ..Default::default()
    };
    let mut accepted = Vec::new();
    let mut dropped = Vec::new();
    for l in &outcome.lines {
        let key = l.row.key();
        let s = plan.subjects.get(&l.row.suite);
        if l.verdict == Verdict::Gone {
            dropped.push(row_name(&key));
            continue;
        }
        match (s, l.now) {
            (Some(s), Some(n)) => {
                new.suites.insert(s.name.clone(), s.entry());
                if let Some(i) = s.inputs() {
                    new.inputs.insert(s.name.clone(), i);
                }
                let acceptance = if l.verdict.fails() {
                    accepted.push(row_name(&key));
                    stamp.clone().map(|who| RowAcceptance {
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
                new.rows.insert(key, row);
            }
            // A row of a collection or suite not given this time: kept as it was (a BEIR
            // configuration's fingerprint is ranklab's own: filled in when missing).
            _ => {
                let Some(entry) = old.suites.get(&l.row.suite) else {
                    continue; // a new row that was not measured: nothing to record
                };
                new.suites.insert(l.row.suite.clone(), entry.clone());
                if let Some(i) = old.inputs.get(&l.row.suite) {
                    new.inputs.insert(l.row.suite.clone(), i.clone());
                }
                let mut row = l.row.clone();
                if row.config.is_none() && entry.kind == Kind::Beir {
                    row.config = crate::suite::beir::configuration(&row.configuration)
                        .ok()
                        .map(|c| super::config_fingerprint(&c));
                }
                new.rows.insert(key, row);
            }
        }
    }
    for e in &outcome.expectations {
        let mut x = e.expectation.clone();
        x.line = 0;
        x.accepted = match e.verdict {
            ExpectationVerdict::Fail => {
                accepted.push(format!(
                    "{}/{}/{}/{}",
                    x.suite, x.configuration, x.task, x.document
                ));
                stamp
                    .clone()
                    .map(|who| ExpectationAcceptance { rank: e.rank, who })
            }
            ExpectationVerdict::Accepted | ExpectationVerdict::Skipped => x.accepted,
            ExpectationVerdict::Pass | ExpectationVerdict::Gone => None,
        };
        if e.verdict == ExpectationVerdict::Gone {
            dropped.push(format!(
                "expectation {}/{}/{}/{}",
                x.suite, x.configuration, x.task, x.document
            ));
            continue;
        }
        new.expectations.push(x);
    }
    // Every suite a kept row or expectation names has its entry (a suite whose rows all went).
    let named: Vec<String> = new
        .rows
        .values()
        .map(|r| r.suite.clone())
        .chain(new.expectations.iter().map(|e| e.suite.clone()))
        .collect();
    for name in named {
        if !new.suites.contains_key(&name) {
            match (plan.subjects.get(&name), old.suites.get(&name)) {
                (Some(s), _) => {
                    new.suites.insert(name.clone(), s.entry());
                    if let Some(i) = s.inputs() {
                        new.inputs.insert(name, i);
                    }
                }
                (None, Some(e)) => {
                    new.suites.insert(name.clone(), e.clone());
                    if let Some(i) = old.inputs.get(&name) {
                        new.inputs.insert(name, i.clone());
                    }
                }
                (None, None) => {}
            }
        }
    }
    crate::report::atomic::write(&plan.path, new.render().as_bytes())?;
    Ok(Update::Written {
        path: plan.path.clone(),
        rows: new.rows.len(),
        accepted,
        dropped,
    })
}

/// `--calibrate N`: replays N times, writes each row's spread (largest minus smallest value)
/// into the baseline, values and tolerances unchanged.
pub fn calibrate(plan: &Plan, n: usize) -> Result<ExitCode> {
    let mut lo: BTreeMap<Key, Fixed> = BTreeMap::new();
    let mut hi: BTreeMap<Key, Fixed> = BTreeMap::new();
    for i in 0..n {
        eprintln!("gate --calibrate: replay {} of {n}", i + 1);
        for (k, v) in plan.measure_values()?.0 {
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
    crate::report::atomic::write(&plan.path, new.render().as_bytes())?;
    let _ = writeln!(
        md,
        "\nCalibrated {calibrated} row(s); spreads written to `{}`.",
        shown(&plan.path)
    );
    print!("{md}");
    Ok(ExitCode::SUCCESS)
}
