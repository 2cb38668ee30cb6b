//! The tuning report's figures: an SVG heat map of window MRR over the two lifecycle weights
//! (superseded × deprecated, on the grid, the history weights at their chosen values) with the
//! chosen and current points marked, and the sensitivity of MRR to each weight around the
//! chosen point. Everything is computed with [`Problem::score`], deterministic.

use std::fmt::Write as _;

use ranklab_engine::policy::Weights;

use super::grid::{hundredths, Grid};
use super::robust::weights_of;
use super::Problem;
use crate::report::plots::svg::{Anchor, Svg, INK, MUTED};

/// One cell: window MRR, or None when the cell breaks the rules or a paired assertion.
pub(crate) struct Map {
    /// Units per side (0..=max).
    pub side: u16,
    /// Unit in hundredths.
    pub unit: u16,
    /// `cells[s][d]`: (MRR, passes paired); None outside the rules (deprecated < superseded).
    pub cells: Vec<Vec<Option<(f64, bool)>>>,
}

/// Computes the map with the history weights of `at` (hundredths).
pub(crate) fn map(problem: &Problem, grid: &Grid, at: [u16; 4]) -> Map {
    let side = grid.max_units;
    let u = grid.unit_hundredths;
    let cells = (0..=side)
        .map(|s| {
            (0..=side)
                .map(|d| {
                    (d >= s).then(|| {
                        let w = weights_of([s * u, d * u, at[2], at[3]]);
                        (problem.score(&w).window.mrr(), problem.paired_ok(&w))
                    })
                })
                .collect()
        })
        .collect();
    Map {
        side,
        unit: u,
        cells,
    }
}

/// The lowest computed cell's colour: a pale blue, visibly apart from the white page that
/// blank cells (outside the rules) show.
const LOW: [f64; 3] = [200.0, 218.0, 238.0];
/// The highest: the report blue (#1f5fa8).
const HIGH: [f64; 3] = [31.0, 95.0, 168.0];
/// The page, which blank cells show (the SVG's background).
const BLANK: &str = "#ffffff";
/// Cells that break a paired assertion.
const BROKEN: &str = "#9a9a9a";

fn colour(t: f64) -> String {
    // Pale blue (low) to the report blue (high): no computed cell is white.
    let t = t.clamp(0.0, 1.0);
    let mix = |i: usize| (LOW[i] + (HIGH[i] - LOW[i]) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(0), mix(1), mix(2))
}

/// A cell's side, in pixels.
const CELL: f64 = 18.0;
/// The plot's left edge.
const LEFT: f64 = 70.0;
/// The plot's top edge.
const TOP: f64 = 84.0;

/// The left edge of column `s` (superseded, in units).
fn x(s: f64) -> f64 {
    LEFT + s * CELL
}

/// The top edge of row `d` (deprecated, in units): the largest at the top.
fn y(m: &Map, d: f64) -> f64 {
    TOP + (f64::from(m.side) - d) * CELL
}

/// The SVG of the map, chosen and current marked.
pub(crate) fn svg(m: &Map, title: &str, chosen: &Weights, current: &Weights) -> String {
    let n = f64::from(m.side) + 1.0;
    let (lo, hi) = m
        .cells
        .iter()
        .flatten()
        .flatten()
        .filter(|c| c.1)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), c| {
            (a.min(c.0), b.max(c.0))
        });
    let mut svg = Svg::new();
    svg.text((8.0, 22.0), 14.0, Anchor::Start, INK, true, title);
    let notes = [
        format!("window MRR {lo:.4} (pale blue) .. {hi:.4} (dark blue)"),
        "grey: breaks a paired assertion; blank (white): deprecated < superseded".to_string(),
    ];
    for (i, note) in notes.iter().enumerate() {
        svg.text(
            (8.0, 40.0 + 15.0 * i as f64),
            11.0,
            Anchor::Start,
            MUTED,
            false,
            note,
        );
    }
    for (s, col) in m.cells.iter().enumerate() {
        for (d, c) in col.iter().enumerate() {
            let Some((mrr, ok)) = c else { continue };
            let fill = if *ok {
                colour(if hi > lo { (mrr - lo) / (hi - lo) } else { 1.0 })
            } else {
                BROKEN.to_string()
            };
            svg.rect(x(s as f64), y(m, d as f64), CELL, CELL, &fill, Some(BLANK));
        }
    }
    axes(&mut svg, m);
    let ly = markers(&mut svg, m, chosen, current);
    // Wide enough for the bold title (about 0.62 em per character in DejaVu Sans Bold).
    let title_width = 16.0 + 14.0 * 0.62 * title.chars().count() as f64;
    svg.finish(
        (LEFT + n * CELL + 20.0).max(title_width.ceil()),
        ly + 16.0,
        title,
    )
}

/// Tick labels every fourth unit on both axes, and the axes' names.
fn axes(svg: &mut Svg, m: &Map) {
    let n = f64::from(m.side) + 1.0;
    for i in (0..=m.side).step_by(4) {
        let v = hundredths(u32::from(i) * u32::from(m.unit));
        svg.text(
            (x(f64::from(i)) + CELL / 2.0, TOP + n * CELL + 14.0),
            10.0,
            Anchor::Middle,
            MUTED,
            false,
            &v,
        );
        svg.text(
            (LEFT - 6.0, y(m, f64::from(i)) + CELL / 2.0 + 4.0),
            10.0,
            Anchor::End,
            MUTED,
            false,
            &v,
        );
    }
    svg.text(
        (LEFT + n * CELL / 2.0, TOP + n * CELL + 32.0),
        12.0,
        Anchor::Middle,
        INK,
        false,
        "superseded",
    );
    svg.text(
        (8.0, TOP - 6.0),
        12.0,
        Anchor::Start,
        INK,
        false,
        "deprecated",
    );
}

/// The current (white) and chosen (orange) points, and their legend below the plot; returns
/// the legend's baseline.
fn markers(svg: &mut Svg, m: &Map, chosen: &Weights, current: &Weights) -> f64 {
    let n = f64::from(m.side) + 1.0;
    let unit = f64::from(m.unit) / 100.0;
    // Markers at the weights' positions (cell centres for grid values).
    let mut mark = |w: &Weights, fill: &str| {
        let cx = x(f64::from(w.superseded) / unit) + CELL / 2.0;
        let cy = y(m, f64::from(w.deprecated) / unit) + CELL / 2.0;
        svg.circle(cx, cy, 6.0, fill, INK);
    };
    mark(current, "#ffffff");
    mark(chosen, "#f0a030");
    let ly = TOP + n * CELL + 52.0;
    svg.circle(LEFT + 6.0, ly - 4.0, 6.0, "#f0a030", INK);
    svg.text((LEFT + 18.0, ly), 11.0, Anchor::Start, INK, false, "chosen");
    svg.circle(LEFT + 86.0, ly - 4.0, 6.0, "#ffffff", INK);
    svg.text(
        (LEFT + 98.0, ly),
        11.0,
        Anchor::Start,
        INK,
        false,
        "current",
    );
    ly
}

/// Sensitivity: window MRR with one weight moved by -2..=+2 grid units from `at` (others
/// fixed), "-" where the move leaves the grid or breaks the rules, "x" where it breaks a pair.
pub(crate) fn sensitivity(problem: &Problem, grid: &Grid, at: [u16; 4]) -> String {
    let u = i32::from(grid.unit_hundredths);
    let top = u * i32::from(grid.max_units);
    let names = ["superseded", "deprecated", "amendment", "editorial_only"];
    let step = grid.unit_text();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "| weight | −2×{step} | −{step} | chosen | +{step} | +2×{step} |\n|---|---:|---:|---:|---:|---:|"
    );
    for (k, name) in names.iter().enumerate() {
        let _ = write!(md, "| {name} ");
        for off in [-2, -1, 0, 1, 2] {
            let v = i32::from(at[k]) + off * u;
            let mut h = at;
            let cell = if (0..=top).contains(&v) {
                h[k] = v as u16;
                let w = weights_of(h);
                if w.violation().is_some() {
                    "-".to_string()
                } else if !problem.paired_ok(&w) {
                    "x".to_string()
                } else {
                    format!("{:.4}", problem.score(&w).window.mrr())
                }
            } else {
                "-".to_string()
            };
            let _ = write!(md, "| {cell} ");
        }
        md.push_str("|\n");
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drawn cell: its top-left corner and its fill.
    type Cell = ((f64, f64), String);

    /// `(x, y) -> fill` of every `<rect>` with a position, and the page's fill.
    fn fills(svg: &str) -> (Vec<Cell>, String) {
        let attr = |tag: &str, name: &str| -> Option<String> {
            let key = format!(" {name}=\"");
            let at = tag.find(&key)? + key.len();
            Some(tag[at..at + tag[at..].find('"')?].to_string())
        };
        let mut cells = Vec::new();
        let mut page = String::new();
        for tag in svg.split("<rect").skip(1) {
            let tag = &tag[..tag.find("/>").unwrap()];
            let fill = attr(tag, "fill").unwrap();
            match (attr(tag, "x"), attr(tag, "y")) {
                (Some(x), Some(y)) => {
                    cells.push(((x.parse().unwrap(), y.parse().unwrap()), fill));
                }
                _ => page = fill,
            }
        }
        (cells, page)
    }

    fn rgb(hex: &str) -> [i32; 3] {
        let c = |i: usize| i32::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16).unwrap();
        [c(0), c(1), c(2)]
    }

    /// A 3 × 3 map by hand: superseded s on x, deprecated d on y (top = 2), cells below the
    /// diagonal blank, one cell breaking a pair. The lowest computed cell (s 0, d 0: MRR 0.2,
    /// drawn at x 70, y 84 + 2 · 18 = 120) must be drawn in a colour that is neither white nor
    /// the page's (what blank cells show), and visibly apart from it (a channel at least 15
    /// below 255); the blank cells are not drawn; the highest is the report blue.
    #[test]
    fn the_lowest_computed_cell_is_coloured_apart_from_blank() {
        let m = Map {
            side: 2,
            unit: 5,
            cells: vec![
                vec![Some((0.2, true)), Some((0.5, true)), Some((0.9, true))],
                vec![None, Some((0.3, false)), Some((0.6, true))],
                vec![None, None, Some((0.7, true))],
            ],
        };
        let w = weights_of([0, 5, 0, 0]);
        let svg = svg(&m, "t", &w, &w);
        let (cells, page) = fills(&svg);
        assert_eq!(page, "#ffffff");
        let at = |x: f64, y: f64| {
            cells
                .iter()
                .find(|(p, _)| *p == (x, y))
                .map(|(_, f)| f.clone())
        };
        let lowest = at(70.0, 120.0).expect("the lowest cell is drawn");
        assert_ne!(lowest, "#ffffff");
        assert_ne!(lowest, page);
        assert!(
            rgb(&lowest).iter().any(|&c| c <= 240),
            "{lowest} is too close to white"
        );
        // (s 1, d 0) and (s 2, d 0), (s 2, d 1) are blank: nothing drawn there.
        assert_eq!(at(88.0, 120.0), None);
        assert_eq!(at(106.0, 120.0), None);
        assert_eq!(at(106.0, 102.0), None);
        // The highest passing cell (s 0, d 2: MRR 0.9) is the report blue; the broken one grey.
        assert_eq!(at(70.0, 84.0).as_deref(), Some("#1f5fa8"));
        assert_eq!(at(88.0, 102.0).as_deref(), Some(BROKEN));
        assert_ne!(BROKEN, lowest);
        assert!(svg.contains("(pale blue)"), "{svg}");
    }
}
