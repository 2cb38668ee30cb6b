//! The comparison of a gated value with its baseline, graded as Anserini's regression checks
//! grade theirs. A row allows a change of max(tolerance, 3 × calibrated spread)
//! ([`Row::allowed`]): within it, pass (OK); a drop beyond it but within 1.5 × of it, OKISH
//! (shown, passes); a larger drop, REGRESSION (fails). A rise beyond the allowance is reported as
//! improved with the command that records it, except on a row with `"rise": "fails"` (the legacy
//! wiring's, which must keep showing its bug): there it fails. Values are compared as
//! four-decimal integers ([`Fixed`]), so the verdict never depends on float rounding.

use super::baseline::{Fixed, Row};

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
    /// Not measured in this run (a BEIR collection without `--beir`).
    Skipped,
    /// Not measured in this run: `--tasks` named one suite, and the row is another's.
    SkippedSuite,
    /// Not in the baseline yet (`--update` adds it).
    New,
}

impl Verdict {
    /// Judges `now` against `row`.
    pub fn of(row: &Row, now: Fixed) -> Verdict {
        let delta = now.0 - row.value.0;
        let allowed = row.allowed().0;
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
        matches!(self, Verdict::Regression | Verdict::Rose)
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
            Verdict::Skipped => "skipped (collection not given; pass --beir DIR)",
            Verdict::SkippedSuite => "skipped (suite not given; --tasks names one suite)",
            Verdict::New => "new row",
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
}

/// The gate table in Markdown.
pub fn table(lines: &[Line]) -> String {
    let mut s = String::from(
        "| suite | configuration | metric | baseline | now | delta | tolerance | verdict |\n|---|---|---|---:|---:|---:|---:|---|\n",
    );
    for l in lines {
        let base = if l.verdict == Verdict::New {
            "-".to_string()
        } else {
            l.row.value.show()
        };
        let (now, delta) = match l.now {
            Some(n) if l.verdict != Verdict::New => {
                (n.show(), Fixed(n.0 - l.row.value.0).show_signed())
            }
            Some(n) => (n.show(), "-".into()),
            None => ("-".into(), "-".into()),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            l.row.suite,
            l.row.configuration,
            l.row.metric,
            base,
            now,
            delta,
            allowance(&l.row),
            l.verdict.as_str()
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
            line: 1,
        }
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
            verdict: Verdict::Regression
        }])
        .contains("| 0.0036 (3 × spread 0.0012) |"));
    }

    #[test]
    fn table_shows_signed_delta() {
        let t = table(&[Line {
            row: row(9792, 10),
            now: Some(Fixed(9584)),
            verdict: Verdict::Regression,
        }]);
        assert!(
            t.contains("| s | c | MRR | 0.9792 | 0.9584 | -0.0208 | 0.0010 | REGRESSION |"),
            "{t}"
        );
    }
}
