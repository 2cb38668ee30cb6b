//! The integer grid of penalty weights.
//!
//! Each weight is an integer number of units, `0..=max_units`, and a unit is an integer number of
//! hundredths (the practice file's precision). A weight is computed once, as
//! `(units * unit_hundredths) / 100` in `f32`: the division is correctly rounded, so the weight
//! is exactly the `f32` that reading its two-decimal text back from the practice file gives. No
//! float is ever accumulated or compared for equality to walk the grid.
//!
//! Only candidates that satisfy the practice file's rules are enumerated: deprecated >=
//! superseded, editorial_only >= amendment (non-negative by construction).

use anyhow::{bail, Result};
use ranklab_engine::policy::Weights;

/// A grid point: units of (superseded, deprecated, amendment, editorial_only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Point(pub [u16; 4]);

impl Point {
    /// Total units (the "smaller weights" tie-break looks at this first).
    pub(crate) fn total(&self) -> u32 {
        self.0.iter().map(|&u| u32::from(u)).sum()
    }
}

/// The grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Grid {
    /// The unit in hundredths (5 = 0.05).
    pub unit_hundredths: u16,
    /// Largest number of units of one weight.
    pub max_units: u16,
}

impl Grid {
    /// Builds a grid from a unit written as a decimal (`0.05`) and a number of units.
    pub(crate) fn new(unit: &str, max_units: u16) -> Result<Grid> {
        let hundredths = parse_hundredths(unit)?;
        if hundredths == 0 {
            bail!("--unit {unit}: the unit must be at least 0.01");
        }
        if max_units == 0 {
            bail!("--max-units must be at least 1");
        }
        if u32::from(hundredths) * u32::from(max_units) > 10_000 {
            bail!("--unit {unit} x --max-units {max_units} reaches a weight above 100; weights are fractions of a normalized score");
        }
        Ok(Grid {
            unit_hundredths: hundredths,
            max_units,
        })
    }

    /// The weights of a point.
    pub(crate) fn weights(&self, p: Point) -> Weights {
        let w = |u: u16| (u32::from(u) * u32::from(self.unit_hundredths)) as f32 / 100.0;
        Weights {
            superseded: w(p.0[0]),
            deprecated: w(p.0[1]),
            amendment: w(p.0[2]),
            editorial_only: w(p.0[3]),
        }
    }

    /// Every valid point, in lexicographic order of units.
    pub(crate) fn points(&self) -> Vec<Point> {
        let n = self.max_units;
        let mut out = Vec::with_capacity(self.len());
        for s in 0..=n {
            for d in s..=n {
                for a in 0..=n {
                    for e in a..=n {
                        out.push(Point([s, d, a, e]));
                    }
                }
            }
        }
        out
    }

    /// How many valid points: (pairs x <= y in 0..=n) squared.
    pub(crate) fn len(&self) -> usize {
        let n = usize::from(self.max_units) + 1;
        let pairs = n * (n + 1) / 2;
        pairs * pairs
    }

    /// The unit as text (`0.05`).
    pub(crate) fn unit_text(&self) -> String {
        hundredths(u32::from(self.unit_hundredths))
    }
}

/// `5` -> `0.05`.
pub(crate) fn hundredths(h: u32) -> String {
    format!("{}.{:02}", h / 100, h % 100)
}

/// `0.05` -> 5; anything that is not a multiple of 0.01 is an error.
fn parse_hundredths(s: &str) -> Result<u16> {
    let bad = || {
        anyhow::anyhow!("--unit {s}: write a decimal with at most two decimals, e.g. 0.05 (weights are stored with two decimals)")
    };
    let (int, frac) = s.trim().split_once('.').unwrap_or((s.trim(), ""));
    if int.is_empty() && frac.is_empty()
        || frac.len() > 2
        || !int.bytes().chain(frac.bytes()).all(|c| c.is_ascii_digit())
    {
        return Err(bad());
    }
    let int: u32 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let frac: u32 = format!("{frac:0<2}").parse().map_err(|_| bad())?;
    u16::try_from(int * 100 + frac).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_grid_has_53361_valid_points() {
        let g = Grid::new("0.05", 20).unwrap();
        let pts = g.points();
        assert_eq!(pts.len(), 53_361);
        assert_eq!(g.len(), pts.len());
        assert!(pts.iter().all(|p| g.weights(*p).violation().is_none()));
        assert!(pts.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn weights_equal_their_two_decimal_text() {
        let g = Grid::new("0.05", 20).unwrap();
        for u in 0..=20u16 {
            let w = g.weights(Point([u, u, u, u])).superseded;
            let text = format!("{w:.2}");
            assert_eq!(text.parse::<f32>().unwrap(), w, "{u} units");
            assert_eq!(text, hundredths(u32::from(u) * 5));
        }
    }

    #[test]
    fn units_parse_to_hundredths() {
        assert_eq!(parse_hundredths("0.05").unwrap(), 5);
        assert_eq!(parse_hundredths(".1").unwrap(), 10);
        assert_eq!(parse_hundredths("1").unwrap(), 100);
        for bad in ["0.005", "-0.05", "abc", "", ".", "1e-2"] {
            assert!(parse_hundredths(bad).is_err(), "{bad}");
        }
        assert!(Grid::new("0", 20).is_err());
        assert!(Grid::new("0.05", 0).is_err());
    }
}
