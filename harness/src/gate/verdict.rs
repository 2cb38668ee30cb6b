//! The one-sided comparison of a gated value with its baseline, as Anserini's regression checks
//! do: a rise passes (and suggests `--update`), a drop within the row's tolerance passes, a drop
//! beyond it fails. Values are compared as four-decimal integers ([`Fixed`]), so the verdict
//! never depends on float rounding.

use super::baseline::{Fixed, Row};

/// The verdict of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Same value.
    Same,
    /// Higher than the baseline: passes; record it with `--update`.
    Improved,
    /// Lower, by no more than the tolerance: passes.
    WithinTolerance,
    /// Lower by more than the tolerance: fails.
    Regression,
    /// Not measured in this run (a BEIR collection without `--beir`).
    Skipped,
    /// Not in the baseline yet (`--update` adds it).
    New,
}

impl Verdict {
    /// Judges `now` against `row`.
    pub fn of(row: &Row, now: Fixed) -> Verdict {
        let delta = now.0 - row.value.0;
        if delta > 0 {
            Verdict::Improved
        } else if delta == 0 {
            Verdict::Same
        } else if -delta <= row.tolerance.0 {
            Verdict::WithinTolerance
        } else {
            Verdict::Regression
        }
    }

    /// Whether the gate fails on this row.
    pub fn fails(self) -> bool {
        self == Verdict::Regression
    }

    /// As printed in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Same => "pass",
            Verdict::Improved => "pass (improved; record with --update)",
            Verdict::WithinTolerance => "pass (within tolerance)",
            Verdict::Regression => "REGRESSION",
            Verdict::Skipped => "skipped (collection not given; pass --beir DIR)",
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
            l.row.tolerance.show(),
            l.verdict.as_str()
        ));
    }
    s
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
            line: 1,
        }
    }

    #[test]
    fn one_sided_with_tolerance() {
        let cases = [
            // (baseline, tolerance, now, verdict)
            (9792, 10, 9792, Verdict::Same),
            (9792, 10, 9793, Verdict::Improved),
            (9792, 10, 10_000, Verdict::Improved),
            (9792, 10, 9782, Verdict::WithinTolerance),
            (9792, 10, 9781, Verdict::Regression),
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
                && !Verdict::WithinTolerance.fails()
                && !Verdict::Skipped.fails()
        );
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
