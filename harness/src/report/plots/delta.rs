//! The Δ chart: Δ against the baseline with the paired 95% interval.

use super::svg::*;
use crate::report::stats_section::Computed;
use crate::stats::{Paired, ALPHA};

/// A symmetric range holding every value, from a short list of round numbers.
pub(super) fn symmetric_range(extent: f64) -> f64 {
    const STEPS: [f64; 9] = [0.02, 0.04, 0.1, 0.2, 0.4, 0.6, 1.0, 2.0, 4.0];
    STEPS
        .iter()
        .copied()
        .find(|&s| extent <= s)
        .unwrap_or_else(|| (extent / 4.0).ceil() * 4.0)
}

pub(super) fn delta_chart(c: &Computed, title: &str) -> String {
    let others: Vec<usize> = (0..c.names.len()).filter(|&i| i != c.baseline).collect();
    let label_w = others
        .iter()
        .map(|&i| text_width(&c.names[i], 12.0))
        .fold(0.0, f64::max)
        + 14.0;
    let panel_w = 220.0;
    let gap = 48.0;
    let measures = &c.delta_measures;
    // 5% headroom, so that a whisker never ends on the frame.
    let r = symmetric_range(extent(c) * 1.05);
    let ticks: Vec<f64> = (-2..=2).map(|i| r * i as f64 / 2.0).collect();
    let n_tasks = c.values.first().map_or(0, Vec::len);
    let full_title = format!(
        "{title}: difference from the baseline {}",
        c.baseline_name()
    );
    let subtitle = format!("Δ = configuration − baseline, mean over {n_tasks} tasks (dot), paired 95% bootstrap interval (whisker)");
    let note = format!(
        "Filled dot: Holm-adjusted p < {ALPHA} (two-sided paired randomization test); hollow: not significant. Seed {}.",
        c.options.seed
    );
    let panels_w = measures.len().max(1) as f64 * (panel_w + gap) - gap;
    let width = chart_width(label_w + panels_w, &full_title, &subtitle, &note);
    let rows_top = 78.0;
    let rows_bottom = rows_top + others.len() as f64 * ROW;

    let mut svg = Svg::new();
    svg.heading(&full_title, &subtitle);
    let x_panels = MARGIN + label_w;
    let labels: Vec<(&str, bool)> = others
        .iter()
        .map(|&i| (c.names[i].as_str(), false))
        .collect();
    draw_row_labels(&mut svg, &labels, rows_top, label_w, panels_w);
    for (k, &m) in measures.iter().enumerate() {
        let axis = Axis {
            lo: -r,
            hi: r,
            x0: x_panels + k as f64 * (panel_w + gap),
            width: panel_w,
        };
        let head = format!("Δ {}", c.measures[m]);
        draw_panel_head(&mut svg, &axis, &head, &ticks, rows_top, rows_bottom);
        let deltas: Vec<Option<&Paired>> =
            others.iter().map(|&i| c.paired[m][i].as_ref()).collect();
        draw_deltas(&mut svg, &axis, &deltas, rows_top, rows_bottom);
        svg.text(
            (axis.x0 + panel_w / 2.0, rows_bottom + 32.0),
            11.0,
            Anchor::Middle,
            MUTED,
            false,
            "Δ against the baseline",
        );
    }
    svg.note(rows_bottom + 54.0, &note);
    svg.finish(width, rows_bottom + 66.0, &full_title)
}

/// The largest distance from 0 of any Δ or interval end drawn.
fn extent(c: &Computed) -> f64 {
    c.delta_measures
        .iter()
        .flat_map(|&m| c.paired[m].iter().flatten())
        .map(|p| p.ci.lo.abs().max(p.ci.hi.abs()).max(p.delta.abs()))
        .fold(0.0, f64::max)
}

/// One panel's line at Δ = 0, then per row its interval (whisker) and Δ (dot: filled when
/// significant; green up, red down, blue when not significant). A row without a comparison
/// is left empty.
fn draw_deltas(
    svg: &mut Svg,
    axis: &Axis,
    deltas: &[Option<&Paired>],
    rows_top: f64,
    rows_bottom: f64,
) {
    svg.line(
        (axis.x(0.0), rows_top),
        (axis.x(0.0), rows_bottom),
        MUTED,
        1.2,
        None,
    );
    for (row, p) in deltas.iter().enumerate() {
        let Some(p) = p else { continue };
        let y = rows_top + row as f64 * ROW + ROW / 2.0;
        let colour = if !p.significant(ALPHA) {
            BLUE
        } else if p.delta > 0.0 {
            GREEN
        } else {
            RED
        };
        svg.whisker(axis.x(p.ci.lo), axis.x(p.ci.hi), y, colour);
        let fill = if p.significant(ALPHA) {
            colour
        } else {
            "#ffffff"
        };
        svg.circle(axis.x(p.delta), y, 4.5, fill, colour);
    }
}
