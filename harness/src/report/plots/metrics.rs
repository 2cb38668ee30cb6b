//! The metric chart: each measure per configuration, mean and 95% bootstrap interval.

use rayon::prelude::*;

use super::svg::*;
use crate::report::stats_section::Computed;
use crate::stats::{self, mean_interval};

pub(super) fn metrics_chart(c: &Computed, title: &str) -> String {
    let labels: Vec<String> = c
        .names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            if i == c.baseline {
                format!("{n} (baseline)")
            } else {
                n.clone()
            }
        })
        .collect();
    let label_w = labels
        .iter()
        .map(|l| text_width(l, 12.0))
        .fold(0.0, f64::max)
        + 14.0;
    let panel_w = 170.0;
    let gap = 30.0;
    let n_tasks = c.values.first().map_or(0, Vec::len);
    // Bootstrap interval of each configuration's mean, per measure.
    // Measures are independent: computed over rayon's pool, collected in order.
    let intervals: Vec<Vec<(f64, stats::Interval)>> = (0..c.measures.len())
        .into_par_iter()
        .map(|m| {
            (0..c.names.len())
                .map(|i| {
                    let v = c.column(i, m);
                    (stats::mean(&v), mean_interval(&v, &c.options))
                })
                .collect()
        })
        .collect();
    let top_value = intervals
        .iter()
        .flatten()
        .map(|(_, ci)| ci.hi)
        .fold(1.0, f64::max);
    let hi = if top_value <= 1.0 {
        1.0
    } else {
        top_value.ceil()
    };
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
    let bold_labels: Vec<(&str, bool)> = labels
        .iter()
        .enumerate()
        .map(|(i, l)| (l.as_str(), i == c.baseline))
        .collect();
    draw_row_labels(&mut svg, &bold_labels, rows_top, label_w, panels_w);
    for (m, name) in c.measures.iter().enumerate() {
        let axis = Axis {
            lo: 0.0,
            hi,
            x0: x_panels + m as f64 * (panel_w + gap),
            width: panel_w,
        };
        draw_panel_head(&mut svg, &axis, name, &ticks, rows_top, rows_bottom);
        let base = intervals[m][c.baseline].0;
        svg.line(
            (axis.x(base), rows_top),
            (axis.x(base), rows_bottom),
            MUTED,
            1.0,
            Some("4 3"),
        );
        for (i, (mean, ci)) in intervals[m].iter().enumerate() {
            let y = rows_top + i as f64 * ROW + ROW / 2.0;
            let colour = if i == c.baseline { INK } else { BLUE };
            svg.whisker(axis.x(ci.lo), axis.x(ci.hi), y, colour);
            svg.circle(axis.x(*mean), y, 4.0, colour, colour);
        }
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
