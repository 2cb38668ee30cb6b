//! The corpus-size chart: one measure against the number of documents (log scale), a line per
//! configuration through its means, its 95% bootstrap interval as a band.

use super::{Cell, Curve};
use crate::report::plots::svg::*;
use crate::stats::thousands;

/// Line colours, in configuration order; the baseline is drawn in ink, dashed.
const PALETTE: [&str; 7] = [BLUE, RED, GREEN, "#8e44ad", "#d68910", "#17a589", "#5d6d7e"];

/// Where the plot area sits and how a (log documents, value) point maps onto it.
struct Frame {
    left: f64,
    top: f64,
    w: f64,
    h: f64,
    x: (f64, f64),
    y: (f64, f64),
}

impl Frame {
    /// The frame for points at `xs` (log10 documents) and the cells' intervals: y from the
    /// lowest interval bound to the highest, each rounded out to a tenth, within 0..1.
    fn new(xs: &[f64], cells: &[Cell]) -> Self {
        let x = match (xs.first(), xs.last()) {
            (Some(&a), Some(&b)) if b > a => (a, b),
            (Some(&a), _) => (a - 0.5, a + 0.5),
            _ => (0.0, 1.0),
        };
        let lows = cells.iter().flat_map(|c| c.means.iter().map(|(_, i)| i.lo));
        let highs = cells.iter().flat_map(|c| c.means.iter().map(|(_, i)| i.hi));
        let y_lo = (lows.fold(f64::INFINITY, f64::min) * 10.0).floor() / 10.0;
        let y_hi = (highs.fold(f64::NEG_INFINITY, f64::max) * 10.0).ceil() / 10.0;
        let y = if y_hi > y_lo {
            (y_lo.max(0.0), y_hi.min(1.0).max(y_lo + 0.1))
        } else {
            (0.0, 1.0)
        };
        Frame {
            left: MARGIN + 52.0,
            top: 70.0,
            w: 520.0,
            h: 300.0,
            x,
            y,
        }
    }

    fn px(&self, v: f64) -> f64 {
        self.left + (v - self.x.0) / (self.x.1 - self.x.0) * self.w
    }

    fn py(&self, v: f64) -> f64 {
        self.top + self.h - (v - self.y.0) / (self.y.1 - self.y.0) * self.h
    }
}

/// The chart of measure `m` (its cells `[size]`), as an SVG document.
pub(super) fn chart(curve: &Curve, cells: &[Cell], m: usize, title: &str) -> String {
    let xs: Vec<f64> = curve
        .points
        .iter()
        .map(|p| (p.documents.max(1) as f64).log10())
        .collect();
    let f = Frame::new(&xs, cells);
    let measure = &curve.measures[m];
    let subtitle = format!(
        "{measure}, mean over {} tasks, against documents in the corpus (log scale); bands: 95% bootstrap intervals",
        curve.tasks
    );
    let legend_w = curve
        .configs
        .iter()
        .map(|c| text_width(c, 12.0) + 40.0)
        .fold(0.0, f64::max);
    let note = "Dashed: the baseline. Each size's corpus contains the smaller sizes' documents.";
    let width = chart_width(52.0 + f.w + 24.0 + legend_w, title, &subtitle, note);
    let height = f.top + f.h + 64.0;

    let mut svg = Svg::new();
    svg.heading(title, &subtitle);
    grid(&mut svg, &f, &xs, curve);
    series(&mut svg, &f, &xs, curve, cells);
    svg.note(height - 12.0, note);
    svg.finish(width, height, title)
}

/// The grid: horizontal lines with their values, a vertical line at each size, the x axis.
fn grid(svg: &mut Svg, f: &Frame, xs: &[f64], curve: &Curve) {
    let (left, top, plot_w, plot_h) = (f.left, f.top, f.w, f.h);
    let (y_lo, y_hi) = f.y;
    let step = if y_hi - y_lo > 0.3 { 0.1 } else { 0.05 };
    let steps = ((y_hi - y_lo) / step).round() as u32;
    for i in 0..=steps {
        let v = y_lo + step * f64::from(i);
        svg.line((left, f.py(v)), (left + plot_w, f.py(v)), GRID, 1.0, None);
        svg.text(
            (left - 6.0, f.py(v) + 4.0),
            11.0,
            Anchor::End,
            MUTED,
            false,
            &tick_label(v),
        );
    }
    for (x, p) in xs.iter().zip(&curve.points) {
        svg.line((f.px(*x), top), (f.px(*x), top + plot_h), GRID, 1.0, None);
        svg.text(
            (f.px(*x), top + plot_h + 15.0),
            11.0,
            Anchor::Middle,
            MUTED,
            false,
            &thousands(p.documents),
        );
    }
    svg.line(
        (left, top + plot_h),
        (left + plot_w, top + plot_h),
        MUTED,
        1.0,
        None,
    );
    svg.text(
        (left + plot_w / 2.0, top + plot_h + 34.0),
        12.0,
        Anchor::Middle,
        INK,
        false,
        "documents in the corpus",
    );
}

/// Each configuration: its band (the 95% intervals), its line through the means with a dot at
/// each size, and its legend entry; the baseline in ink, dashed.
fn series(svg: &mut Svg, f: &Frame, xs: &[f64], curve: &Curve, cells: &[Cell]) {
    let colour = |c: usize| {
        if c == curve.baseline {
            INK
        } else {
            PALETTE[c % PALETTE.len()]
        }
    };
    for c in 0..curve.configs.len() {
        let upper = xs
            .iter()
            .zip(cells)
            .map(|(x, cell)| (f.px(*x), f.py(cell.means[c].1.hi)));
        let lower = xs
            .iter()
            .zip(cells)
            .map(|(x, cell)| (f.px(*x), f.py(cell.means[c].1.lo)));
        let band: Vec<(f64, f64)> = upper.chain(lower.rev()).collect();
        svg.polygon(&band, colour(c), 0.10);
    }
    for c in 0..curve.configs.len() {
        let line: Vec<(f64, f64)> = xs
            .iter()
            .zip(cells)
            .map(|(x, cell)| (f.px(*x), f.py(cell.means[c].0)))
            .collect();
        let dash = (c == curve.baseline).then_some("6 4");
        svg.polyline(&line, colour(c), 2.0, dash);
        for &(x, y) in &line {
            svg.circle(x, y, 3.0, colour(c), colour(c));
        }
        let ly = f.top + 10.0 + c as f64 * 20.0;
        let lx = f.left + f.w + 24.0;
        svg.line((lx, ly), (lx + 24.0, ly), colour(c), 2.0, dash);
        svg.text(
            (lx + 30.0, ly + 4.0),
            12.0,
            Anchor::Start,
            INK,
            false,
            &curve.configs[c],
        );
    }
}
