//! The metric chart: each measure per configuration, mean and 95% bootstrap interval.

use rayon::prelude::*;

use super::svg::*;
use crate::report::stats_section::Computed;
use crate::stats::{self, mean_interval};

pub(super) fn metrics_chart(c: &Computed, title: &str) -> String {
    let labels = labels(c);
    let label_w = labels
        .iter()
        .map(|(l, _)| text_width(l, 12.0))
        .fold(0.0, f64::max)
        + 14.0;
    let panel_w = 170.0;
    let gap = 30.0;
    let n_tasks = c.values.first().map_or(0, Vec::len);
    let intervals = intervals(c);
    let hi = axis_top(&intervals);
    let ticks: Vec<f64> = (0..=4).map(|i| hi * i as f64 / 4.0).collect();

    let subtitle = format!("Mean over {n_tasks} tasks per configuration (dot) with its 95% bootstrap interval (whisker)");
    let note = format!(
        "Dashed line: the baseline's mean. Intervals: {} resamples of the tasks, seed {}.",
        stats::thousands(c.options.resamples),
        c.options.seed
    );
    let panels_w = c.measures.len() as f64 * (panel_w + gap) - gap;
    let width = chart_width(label_w + panels_w, title, &subtitle, &note);
    let rows_top = 78.0;
    let rows_bottom = rows_top + c.names.len() as f64 * ROW;

    let mut svg = Svg::new();
    svg.heading(title, &subtitle);
    let x_panels = MARGIN + label_w;
    let bold_labels: Vec<(&str, bool)> = labels.iter().map(|(l, b)| (l.as_str(), *b)).collect();
    draw_row_labels(&mut svg, &bold_labels, rows_top, label_w, panels_w);
    for (m, name) in c.measures.iter().enumerate() {
        let axis = Axis {
            lo: 0.0,
            hi,
            x0: x_panels + m as f64 * (panel_w + gap),
            width: panel_w,
        };
        draw_panel_head(&mut svg, &axis, name, &ticks, rows_top, rows_bottom);
        draw_means(
            &mut svg,
            &axis,
            &intervals[m],
            c.baseline,
            rows_top,
            rows_bottom,
        );
    }
    let axis_title = "mean over tasks";
    for m in 0..c.measures.len() {
        let x = x_panels + m as f64 * (panel_w + gap) + panel_w / 2.0;
        svg.text(
            (x, rows_bottom + 32.0),
            11.0,
            Anchor::Middle,
            MUTED,
            false,
            axis_title,
        );
    }
    svg.note(rows_bottom + 54.0, &note);
    svg.finish(width, rows_bottom + 66.0, title)
}

/// Each configuration's row label, the baseline's marked (and bold).
fn labels(c: &Computed) -> Vec<(String, bool)> {
    c.names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if i == c.baseline {
                (format!("{n} (baseline)"), true)
            } else {
                (n.clone(), false)
            }
        })
        .collect()
}

/// Per measure, each configuration's mean and the bootstrap interval of its mean.
/// Measures are independent: computed over rayon's pool, collected in order.
fn intervals(c: &Computed) -> Vec<Vec<(f64, stats::Interval)>> {
    (0..c.measures.len())
        .into_par_iter()
        .map(|m| {
            (0..c.names.len())
                .map(|i| {
                    let v = c.column(i, m);
                    (stats::mean(&v), mean_interval(&v, &c.options))
                })
                .collect()
        })
        .collect()
}

/// The axes' top: 1, or the highest interval end rounded up when it is above 1.
fn axis_top(intervals: &[Vec<(f64, stats::Interval)>]) -> f64 {
    let top_value = intervals
        .iter()
        .flatten()
        .map(|(_, ci)| ci.hi)
        .fold(1.0, f64::max);
    if top_value <= 1.0 {
        1.0
    } else {
        top_value.ceil()
    }
}

/// One panel's dashed line at the baseline's mean, then each configuration's interval
/// (whisker) and mean (dot).
fn draw_means(
    svg: &mut Svg,
    axis: &Axis,
    means: &[(f64, stats::Interval)],
    baseline: usize,
    rows_top: f64,
    rows_bottom: f64,
) {
    let base = means[baseline].0;
    svg.line(
        (axis.x(base), rows_top),
        (axis.x(base), rows_bottom),
        MUTED,
        1.0,
        Some("4 3"),
    );
    for (i, (mean, ci)) in means.iter().enumerate() {
        let y = rows_top + i as f64 * ROW + ROW / 2.0;
        let colour = if i == baseline { INK } else { BLUE };
        svg.whisker(axis.x(ci.lo), axis.x(ci.hi), y, colour);
        svg.circle(axis.x(*mean), y, 4.0, colour, colour);
    }
}
