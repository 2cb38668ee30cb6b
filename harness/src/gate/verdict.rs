//! The comparison of a gated value with its baseline, graded as Anserini's regression checks
//! grade theirs. A row allows a change of max(tolerance, 3 × calibrated spread)
//! ([`Row::allowed`]): within it, pass (OK); a drop beyond it but within 1.5 × of it, OKISH
//! (shown, passes); a larger drop, REGRESSION (fails). A rise beyond the allowance is reported as
//! improved with the command that records it, except on a row with `"rise": "fails"` (the legacy
//! wiring's, which must keep showing its bug): there it fails. Values are compared as
//! four-decimal integers ([`Fixed`]), so the verdict never depends on float rounding.

use std::ops::Not as _;

use serde::Serialize;

use super::baseline::{Expectation, Fixed, Kind, Row};
use super::measure::{Measured, PairedFile};
use super::plan::{Key, Plan, Want};

/// The verdict of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Same value.
    Same,
    /// Higher than the baseline beyond the allowance: passes; record it with `--update`.
    Improved,
    /// Higher beyond the allowance on a row whose rise fails (a bug that should show vanished).
    Rose,
    /// Higher or lower, by no more than the allowance: passes.
    WithinTolerance,
    /// Lower by more than the allowance but no more than 1.5 × it: passes, shown as OKISH.
    Okish,
    /// Lower by more than 1.5 × the allowance: fails.
    Regression,
    /// A regression by its allowance that the paired test does not find significant at
    /// `--alpha` (Holm over the rows): passes.
    NotSignificant,
    /// Not measured in this run (a BEIR collection without `--beir`).
    Skipped,
    /// Not measured in this run: `--tasks` named one suite, and the row is another's.
    SkippedSuite,
    /// Not in the baseline yet (`--update` adds it).
    New,
    /// In the baseline, but its configuration or metric no longer exists: fails.
    Gone,
    /// Replayed from an external engine's recording made against another corpus: fails.
    Stale,
    /// Stale, shown, and passing because `--allow-stale` was given.
    StaleAllowed,
}

impl Verdict {
    /// Judges `now` against `row`.
    pub fn of(row: &Row, now: Fixed) -> Verdict {
        // In i128: no sum or product of two i64s below can overflow, whatever the values.
        let delta = i128::from(now.0) - i128::from(row.value.0);
        let allowed = i128::from(row.allowed().0);
        if delta == 0 {
            Verdict::Same
        } else if delta.abs() <= allowed {
            Verdict::WithinTolerance
        } else if delta > 0 {
            if row.rise_fails {
                Verdict::Rose
            } else {
                Verdict::Improved
            }
        } else if -2 * delta <= 3 * allowed {
            Verdict::Okish
        } else {
            Verdict::Regression
        }
    }

    /// Whether the gate fails on this row.
    pub fn fails(self) -> bool {
        matches!(
            self,
            Verdict::Regression | Verdict::Rose | Verdict::Gone | Verdict::Stale
        )
    }

    /// The verdict's name in `--json`.
    pub fn key(self) -> &'static str {
        match self {
            Verdict::Same => "pass",
            Verdict::Improved => "improved",
            Verdict::Rose => "rose",
            Verdict::WithinTolerance => "within-tolerance",
            Verdict::Okish => "okish",
            Verdict::Regression => "regression",
            Verdict::NotSignificant => "not-significant",
            Verdict::Skipped | Verdict::SkippedSuite => "skipped",
            Verdict::New => "new",
            Verdict::Gone => "gone",
            Verdict::Stale | Verdict::StaleAllowed => "stale",
        }
    }

    /// As printed in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Same => "pass",
            Verdict::Improved => "pass (improved; record with --update)",
            Verdict::Rose => "FAIL (rose: this row must keep showing the bug)",
            Verdict::WithinTolerance => "pass (within tolerance)",
            Verdict::Okish => "OKISH (beyond tolerance, within 1.5x: passes)",
            Verdict::Regression => "REGRESSION",
            Verdict::NotSignificant => "pass (a drop beyond tolerance, not significant at --alpha)",
            Verdict::Skipped => "skipped (collection not given; pass --beir DIR)",
            Verdict::SkippedSuite => "skipped (suite not given; --tasks names one suite)",
            Verdict::New => "new row (not gated yet; `ranklab gate --update` records it)",
            Verdict::Gone => "FAIL (gone)",
            Verdict::Stale => "FAIL (STALE recording)",
            Verdict::StaleAllowed => "stale recording (passes: --allow-stale)",
        }
    }
}

/// One line of the gate's table.
#[derive(Debug, Clone)]
pub struct Line {
    /// The baseline row.
    pub row: Row,
    /// The value now (None when skipped or new).
    pub now: Option<Fixed>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why a gone row is gone, or why a recording is stale.
    pub note: Option<String>,
    /// When the suite's judgments changed since the baseline: the baseline's kept rankings
    /// scored under today's judgments, which the row is graded against (None: not asked, or
    /// no rankings kept).
    pub rescored: Option<Fixed>,
    /// Whether the suite's judgments changed since the baseline (the row is re-scored).
    pub judgments_changed: bool,
    /// For a failed or OKISH row: the tasks that moved, worst first (all of them).
    pub moved: Vec<super::rankings::Moved>,
    /// With `--alpha`: the paired sign-flip p of the row's per-task values (the baseline's kept
    /// rankings against now), raw and Holm-adjusted over the rows that have one.
    pub p: Option<(f64, f64)>,
}

impl Line {
    /// A line with no row data yet (for struct update syntax).
    fn blank() -> Line {
        Line {
            row: Row::new(Default::default(), Fixed(0), false),
            now: None,
            verdict: Verdict::Skipped,
            note: None,
            rescored: None,
            judgments_changed: false,
            moved: Vec::new(),
            p: None,
        }
    }

    /// What the row is graded against: the baseline under today's judgments when re-scored,
    /// else the baseline's value.
    pub fn reference(&self) -> Fixed {
        self.rescored.unwrap_or(self.row.value)
    }
}

/// The verdict of one per-task expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectationVerdict {
    /// Ranked within `within`.
    Pass,
    /// Failing, but within the rank accepted with `--accept-regressions`: passes.
    Accepted,
    /// Ranked below `within`, or not at all: fails.
    Fail,
    /// Its configuration, task or document no longer exists: fails.
    Gone,
    /// Its collection was not given (`--beir`) or its suite not gated (`--tasks`).
    Skipped,
}

impl ExpectationVerdict {
    /// Whether the gate fails on it.
    pub fn fails(self) -> bool {
        matches!(self, ExpectationVerdict::Fail | ExpectationVerdict::Gone)
    }
    /// The verdict's name in `--json`.
    pub fn key(self) -> &'static str {
        match self {
            ExpectationVerdict::Pass => "pass",
            ExpectationVerdict::Accepted => "accepted",
            ExpectationVerdict::Fail => "fail",
            ExpectationVerdict::Gone => "gone",
            ExpectationVerdict::Skipped => "skipped",
        }
    }
}

/// One per-task expectation, checked.
#[derive(Debug, Clone)]
pub struct ExpectationLine {
    /// The expectation as in the baseline.
    pub expectation: Expectation,
    /// The document's rank now (None: not ranked, or not measured).
    pub rank: Option<usize>,
    /// The verdict.
    pub verdict: ExpectationVerdict,
    /// Why a gone expectation is gone.
    pub note: Option<String>,
}

/// Exact counts of the verdicts: every row in exactly one of the first six.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// Rows equal to the baseline or within their allowance.
    pub passed: usize,
    /// Rows OKISH (a drop beyond the allowance, within 1.5x: passes).
    pub okish: usize,
    /// Rows risen beyond the allowance (passes; record with --update).
    pub improved: usize,
    /// Rows not in the baseline yet.
    pub new: usize,
    /// Rows not measured (collection or suite not given).
    pub skipped: usize,
    /// Rows failing: REGRESSION, a must-not-rise row risen, gone, or STALE.
    pub failed: usize,
    /// Rows replayed from a stale recording, passing under `--allow-stale`.
    pub stale_allowed: usize,
    /// Expectations holding.
    pub expectations_held: usize,
    /// Expectations failing within an accepted rank.
    pub expectations_accepted: usize,
    /// Expectations failing (or gone).
    pub expectations_failed: usize,
    /// Expectations not checked.
    pub expectations_skipped: usize,
    /// Paired assertions (per half) holding.
    pub paired_held: usize,
    /// Paired assertions (per half) failing.
    pub paired_failed: usize,
}

/// Every verdict of a gate run.
pub struct Outcome {
    /// One line per row, sorted by key.
    pub lines: Vec<Line>,
    /// One line per expectation, baseline order.
    pub expectations: Vec<ExpectationLine>,
    /// The paired assertion files and their verdicts.
    pub paired: Vec<PairedFile>,
    /// The counts.
    pub counts: Counts,
}

impl Outcome {
    /// Grades every row, expectation and paired assertion of `plan` from `measured`.
    pub fn grade(plan: &Plan, measured: Measured) -> Outcome {
        let mut lines: Vec<Line> = plan
            .wanted
            .iter()
            .map(|(key, want)| {
                let mut l = grade_row(plan, key, want, measured.values.get(key).copied());
                regrade(plan, &measured, &mut l);
                l
            })
            .collect();
        if let Some(alpha) = plan.alpha {
            significance(plan, &measured, &mut lines, alpha);
        }
        let expectations: Vec<ExpectationLine> = plan
            .old
            .expectations
            .iter()
            .zip(&measured.ranks)
            .zip(&plan.expectation_gone)
            .map(|((e, &rank), gone)| grade_expectation(plan, e, rank, gone))
            .collect();
        let counts = Counts::of(&lines, &expectations, &measured.paired);
        Outcome {
            lines,
            expectations,
            paired: measured.paired,
            counts,
        }
    }

    /// Whether the gate fails: a row, an expectation or a paired assertion.
    pub fn failed(&self) -> bool {
        self.counts.failed > 0
            || self.counts.expectations_failed > 0
            || self.counts.paired_failed > 0
    }
}

/// A row's line: gone, graded against its baseline value `now`, skipped (not measured), or
/// new (not in the baseline).
fn grade_row(plan: &Plan, key: &Key, want: &Want, now: Option<Fixed>) -> Line {
    match (&want.row, now) {
        (Some(r), _) if want.gone.is_some() => Line {
            row: r.clone(),
            now: None,
            verdict: Verdict::Gone,
            note: want.gone.clone(),
            ..Line::blank()
        },
        (Some(r), Some(n)) => Line {
            row: r.clone(),
            now: Some(n),
            verdict: Verdict::of(r, n),
            ..Line::blank()
        },
        (Some(r), None) => Line {
            row: r.clone(),
            now: None,
            verdict: match plan.old.suites.get(&r.suite).map(|e| e.kind) {
                Some(Kind::Suite) => Verdict::SkippedSuite,
                _ => Verdict::Skipped,
            },
            ..Line::blank()
        },
        (None, n) => {
            let s = plan.subjects.get(&key.0);
            let mut row = Row::new(
                key.clone(),
                n.unwrap_or(Fixed(0)),
                s.is_some_and(|s| s.is_legacy(&key.1)),
            );
            row.config = s.and_then(|s| s.config_fingerprint(&key.1));
            Line {
                row,
                now: n,
                verdict: Verdict::New,
                ..Line::blank()
            }
        }
    }
}

/// A measured baseline row, graded again with what the plain comparison does not know: against
/// the baseline's rankings under today's judgments when the judgments changed, STALE when its
/// recording rests on another corpus, and, when it fails or is OKISH, the tasks that moved.
fn regrade(plan: &Plan, measured: &Measured, l: &mut Line) {
    let (Some(now), true) = (
        l.now,
        matches!(l.verdict, Verdict::New | Verdict::Gone).not(),
    ) else {
        return;
    };
    let key = (l.row.suite.clone(), l.row.configuration.clone());
    let Some(s) = plan.subjects.get(&l.row.suite) else {
        return;
    };
    let m = s.metric_names().iter().position(|n| *n == l.row.metric);
    let kept = plan.kept.get(&key);
    l.judgments_changed = plan.judgments_changed.contains(&l.row.suite);
    if let (true, Some(kept), Some(m)) = (l.judgments_changed, kept, m) {
        let v = super::rankings::score(&s.suite, &s.measures, m, kept);
        l.rescored = Some(Fixed::from_f64(v));
        let against = Row {
            value: Fixed::from_f64(v),
            ..l.row.clone()
        };
        l.verdict = Verdict::of(&against, now);
    }
    if let Some(st) = measured.stale.get(&key) {
        l.note = st.note();
        if st.is_stale() {
            l.verdict = if plan.allow_stale {
                Verdict::StaleAllowed
            } else {
                Verdict::Stale
            };
        }
    }
    if matches!(
        l.verdict,
        Verdict::Regression | Verdict::Okish | Verdict::Rose
    ) {
        if let (Some(kept), Some(lists), Some(m)) = (kept, measured.lists.get(&key), m) {
            l.moved = super::rankings::moved(&s.suite, &s.measures, m, kept, lists);
        }
    }
}

/// `--alpha`: each row with kept rankings gets the two-sided paired sign-flip p of its per-task
/// values (the baseline's kept rankings under today's judgments against now), Holm-adjusted over
/// those rows; a REGRESSION whose adjusted p is not below `alpha` passes as not significant. A
/// row without kept rankings (a BEIR collection's, a baseline written before they were kept) has
/// no p and is graded by its allowance alone.
fn significance(plan: &Plan, measured: &Measured, lines: &mut [Line], alpha: f64) {
    let opts = crate::stats::Options::default();
    let raw: Vec<(usize, f64)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| {
            let key = (l.row.suite.clone(), l.row.configuration.clone());
            let s = plan.subjects.get(&l.row.suite)?;
            let m = s.metric_names().iter().position(|n| *n == l.row.metric)?;
            let (kept, now) = (plan.kept.get(&key)?, measured.lists.get(&key)?);
            let was = super::rankings::per_task(&s.suite, &s.measures, m, kept);
            let is = super::rankings::per_task(&s.suite, &s.measures, m, now);
            let d = crate::stats::differences(&was, &is).ok()?;
            Some((i, crate::stats::sign_flip_test(&d, &opts).p))
        })
        .collect();
    let holm = crate::stats::holm(&raw.iter().map(|(_, p)| *p).collect::<Vec<_>>());
    for ((i, p), h) in raw.into_iter().zip(holm) {
        let l = &mut lines[i];
        l.p = Some((p, h));
        if l.verdict == Verdict::Regression && h >= alpha {
            l.verdict = Verdict::NotSignificant;
        }
    }
}

/// An expectation's line: skipped (its collection not given), gone, held (ranked within),
/// accepted (failing no worse than the rank accepted), or failed.
fn grade_expectation(
    plan: &Plan,
    e: &Expectation,
    rank: Option<usize>,
    gone: &Option<String>,
) -> ExpectationLine {
    let verdict = if !plan.subjects.contains_key(&e.suite) {
        ExpectationVerdict::Skipped
    } else if gone.is_some() {
        ExpectationVerdict::Gone
    } else if rank.is_some_and(|r| r <= e.within) {
        ExpectationVerdict::Pass
    } else if e.accepted.as_ref().is_some_and(|a| match a.rank {
        None => true,
        Some(limit) => rank.is_some_and(|r| r <= limit),
    }) {
        ExpectationVerdict::Accepted
    } else {
        ExpectationVerdict::Fail
    };
    ExpectationLine {
        expectation: e.clone(),
        rank,
        verdict,
        note: gone.clone(),
    }
}

impl Counts {
    /// The counts of each verdict of rows, expectations and paired assertions (per half).
    fn of(lines: &[Line], expectations: &[ExpectationLine], paired: &[PairedFile]) -> Counts {
        let mut c = Counts::default();
        for l in lines {
            match l.verdict {
                Verdict::Same | Verdict::WithinTolerance => c.passed += 1,
                Verdict::Okish | Verdict::NotSignificant => c.okish += 1,
                Verdict::Improved => c.improved += 1,
                Verdict::New => c.new += 1,
                Verdict::Skipped | Verdict::SkippedSuite => c.skipped += 1,
                Verdict::Regression | Verdict::Rose | Verdict::Gone | Verdict::Stale => {
                    c.failed += 1
                }
                Verdict::StaleAllowed => c.stale_allowed += 1,
            }
        }
        for e in expectations {
            match e.verdict {
                ExpectationVerdict::Pass => c.expectations_held += 1,
                ExpectationVerdict::Accepted => c.expectations_accepted += 1,
                ExpectationVerdict::Fail | ExpectationVerdict::Gone => c.expectations_failed += 1,
                ExpectationVerdict::Skipped => c.expectations_skipped += 1,
            }
        }
        for p in paired {
            for v in &p.verdicts {
                if v.pass() {
                    c.paired_held += 1;
                } else {
                    c.paired_failed += 1;
                }
            }
        }
        c
    }
}

/// The gate table in Markdown. When a suite's judgments changed since the baseline, a column
/// shows the baseline's rankings scored under today's judgments, and the delta is from it.
pub fn table(lines: &[Line]) -> String {
    let rescoring = lines.iter().any(|l| l.judgments_changed);
    let mut s = if rescoring {
        String::from(
            "| suite | configuration | metric | baseline (recorded) | baseline under today's judgments | now | delta | tolerance | verdict |\n|---|---|---|---:|---:|---:|---:|---:|---|\n",
        )
    } else {
        String::from(
            "| suite | configuration | metric | baseline | now | delta | tolerance | verdict |\n|---|---|---|---:|---:|---:|---:|---|\n",
        )
    };
    for l in lines {
        let base = if l.verdict == Verdict::New {
            "-".to_string()
        } else {
            l.row.value.show()
        };
        let (now, delta) = match l.now {
            Some(n) if l.verdict != Verdict::New => (
                n.show(),
                Fixed(n.0.saturating_sub(l.reference().0)).show_signed(),
            ),
            Some(n) => (n.show(), "-".into()),
            None => ("-".into(), "-".into()),
        };
        let mut verdict = match &l.note {
            Some(n) => format!("{}: {n}", l.verdict.as_str()),
            None => l.verdict.as_str().to_string(),
        };
        if let Some((p, holm)) = l.p {
            verdict.push_str(&format!(" (p {p:.4}, Holm {holm:.4})"));
        }
        let rescored = match (rescoring, l.rescored, l.judgments_changed) {
            (false, _, _) => String::new(),
            (true, Some(r), _) => format!(" {} |", r.show()),
            (true, None, true) => {
                " no rankings kept (`ranklab gate --update` keeps them) |".to_string()
            }
            (true, None, false) => " - |".to_string(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} |{rescored} {} | {} | {} | {} |\n",
            crate::report::table::md_cell(&l.row.suite),
            crate::report::table::md_cell(&l.row.configuration),
            crate::report::table::md_cell(&l.row.metric),
            base,
            now,
            delta,
            allowance(&l.row),
            crate::report::table::md_cell(&verdict),
        ));
    }
    s
}

/// The tolerance column: the tolerance, or `3 × spread` when that is larger.
fn allowance(r: &Row) -> String {
    match r.spread {
        Some(sp) if r.allowed() != r.tolerance => {
            format!("{} (3 × spread {})", r.allowed().show(), sp.show())
        }
        _ => r.tolerance.show(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(value: i64, tolerance: i64) -> Row {
        Row {
            suite: "s".into(),
            configuration: "c".into(),
            metric: "MRR".into(),
            value: Fixed(value),
            tolerance: Fixed(tolerance),
            spread: None,
            rise_fails: false,
            config: None,
            accepted: None,
            line: 1,
        }
    }

    #[test]
    fn extreme_numbers_do_not_overflow_into_a_pass() {
        // Issue 42 case 3: `now - value` and `3 × spread` in i64 wrapped around (a drop from
        // 9e14 showed as OKISH). Whatever the rows hold, a huge drop is a regression.
        for value in [i64::MAX, i64::MAX / 2, 9_000_000_000_000_000_000] {
            assert_eq!(
                Verdict::of(&row(value, 10), Fixed(i64::MIN)),
                Verdict::Regression
            );
            assert_eq!(Verdict::of(&row(value, 10), Fixed(0)), Verdict::Regression);
        }
        let mut r = row(0, 10);
        r.spread = Some(Fixed(i64::MAX / 2));
        assert_eq!(
            r.allowed(),
            Fixed(i64::MAX),
            "3 × spread saturates, not wraps"
        );
        assert_eq!(
            Verdict::of(&row(i64::MIN, 10), Fixed(i64::MAX)),
            Verdict::Improved
        );
    }

    #[test]
    fn one_sided_with_tolerance() {
        let cases = [
            // (baseline, tolerance, now, verdict)
            (9792, 10, 9792, Verdict::Same),
            (9792, 10, 9793, Verdict::WithinTolerance),
            (9792, 10, 9803, Verdict::Improved),
            (9792, 10, 10_000, Verdict::Improved),
            (9792, 10, 9782, Verdict::WithinTolerance),
            // Beyond 0.0010 but within 1.5 x 0.0010 = 0.0015 below: OKISH.
            (9792, 10, 9781, Verdict::Okish),
            (9792, 10, 9777, Verdict::Okish),
            (9792, 10, 9776, Verdict::Regression),
            (9792, 0, 9791, Verdict::Regression),
            (9792, 0, 9792, Verdict::Same),
            (9792, 500, 9584, Verdict::WithinTolerance),
        ];
        for (base, tol, now, want) in cases {
            assert_eq!(
                Verdict::of(&row(base, tol), Fixed(now)),
                want,
                "baseline {base} tol {tol} now {now}"
            );
        }
        assert!(
            Verdict::Regression.fails()
                && Verdict::Rose.fails()
                && !Verdict::Okish.fails()
                && !Verdict::WithinTolerance.fails()
                && !Verdict::Skipped.fails()
        );
    }

    #[test]
    fn a_spread_widens_the_allowance_and_a_legacy_rise_fails() {
        // Spread 0.0012: allowance max(0.0010, 3 x 0.0012) = 0.0036, OKISH to 0.0054 below.
        let r = Row {
            spread: Some(Fixed(12)),
            ..row(9792, 10)
        };
        assert_eq!(r.allowed(), Fixed(36));
        assert_eq!(Verdict::of(&r, Fixed(9792 - 36)), Verdict::WithinTolerance);
        assert_eq!(Verdict::of(&r, Fixed(9792 - 54)), Verdict::Okish);
        assert_eq!(Verdict::of(&r, Fixed(9792 - 55)), Verdict::Regression);
        assert_eq!(Verdict::of(&r, Fixed(9792 + 37)), Verdict::Improved);
        let legacy = Row {
            rise_fails: true,
            ..row(4472, 10)
        };
        assert_eq!(Verdict::of(&legacy, Fixed(4482)), Verdict::WithinTolerance);
        assert_eq!(Verdict::of(&legacy, Fixed(4483)), Verdict::Rose);
        assert_eq!(Verdict::of(&legacy, Fixed(4400)), Verdict::Regression);
        assert!(table(&[Line {
            row: r.clone(),
            now: Some(Fixed(9700)),
            verdict: Verdict::Regression,
            note: None,
            ..Line::blank()
        }])
        .contains("| 0.0036 (3 × spread 0.0012) |"));
    }

    #[test]
    fn table_shows_signed_delta() {
        let t = table(&[Line {
            row: row(9792, 10),
            now: Some(Fixed(9584)),
            verdict: Verdict::Regression,
            note: None,
            ..Line::blank()
        }]);
        assert!(
            t.contains("| s | c | MRR | 0.9792 | 0.9584 | -0.0208 | 0.0010 | REGRESSION |"),
            "{t}"
        );
    }
}
