//! The per-task heat map of rank movements against the baseline.

use super::svg::*;
use crate::report::stats_section::Computed;
use crate::suite::Suite;

/// Most tasks drawn in the heat map; beyond it, the tasks with the largest movements.
pub(super) const MAX_TASK_ROWS: usize = 60;

/// How a task's first expected document moved under a configuration, relative to the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Movement {
    /// Neither retrieved it.
    BothMissing,
    /// Same rank.
    Same,
    /// Up (better) by this many places.
    Up(usize),
    /// Down (worse) by this many places.
    Down(usize),
    /// Retrieved now, not under the baseline.
    Found,
    /// Retrieved under the baseline, not now.
    Lost,
}

pub(super) fn movement(base: Option<usize>, now: Option<usize>) -> Movement {
    match (base, now) {
        (None, None) => Movement::BothMissing,
        (Some(_), None) => Movement::Lost,
        (None, Some(_)) => Movement::Found,
        (Some(b), Some(n)) if n < b => Movement::Up(b - n),
        (Some(b), Some(n)) if n > b => Movement::Down(n - b),
        _ => Movement::Same,
    }
}

impl Movement {
    /// Size for choosing which tasks to draw; a document found or lost counts as `depth`.
    pub(super) fn size(self, depth: usize) -> usize {
        match self {
            Movement::BothMissing | Movement::Same => 0,
            Movement::Up(k) | Movement::Down(k) => k,
            Movement::Found | Movement::Lost => depth.max(1),
        }
    }

    /// Fill colour and text colour: greens up, reds down, three steps each.
    pub(super) fn colours(self) -> (&'static str, &'static str) {
        const UP: [&str; 3] = ["#c7e9c0", "#74c476", "#1e7b34"];
        const DOWN: [&str; 3] = ["#fcbba1", "#fb6a4a", "#b3141b"];
        let step = |k: usize| {
            if k <= 1 {
                0
            } else if k <= 4 {
                1
            } else {
                2
            }
        };
        let text = |i: usize| if i == 2 { "#ffffff" } else { INK };
        match self {
            Movement::BothMissing => ("#ffffff", MUTED),
            Movement::Same => ("#eeeeee", INK),
            Movement::Up(k) => (UP[step(k)], text(step(k))),
            Movement::Down(k) => (DOWN[step(k)], text(step(k))),
            Movement::Found => (UP[2], "#ffffff"),
            Movement::Lost => (DOWN[2], "#ffffff"),
        }
    }

    pub(super) fn label(self, now: Option<usize>) -> String {
        let rank = now.map_or("–".to_string(), |r| r.to_string());
        match self {
            Movement::BothMissing | Movement::Same => rank,
            Movement::Up(k) => format!("{rank} ↑{k}"),
            Movement::Down(k) => format!("{rank} ↓{k}"),
            Movement::Found => format!("{rank} ↑"),
            Movement::Lost => format!("{rank} ↓"),
        }
    }
}

pub(super) fn tasks_chart(
    c: &Computed,
    suite: &Suite,
    ranks: &[Vec<Option<usize>>],
    depth: usize,
    title: &str,
) -> String {
    let b = c.baseline;
    let others: Vec<usize> = (0..c.names.len()).filter(|&i| i != b).collect();
    let n = suite.tasks.len();
    let moved: Vec<usize> = (0..n)
        .map(|t| {
            others
                .iter()
                .map(|&i| movement(ranks[b][t], ranks[i][t]).size(depth))
                .sum()
        })
        .collect();
    let rows: Vec<usize> = if n <= MAX_TASK_ROWS {
        (0..n).collect()
    } else {
        let mut by_size: Vec<usize> = (0..n).filter(|&t| moved[t] > 0).collect();
        by_size.sort_by(|&x, &y| moved[y].cmp(&moved[x]).then(x.cmp(&y)));
        by_size.truncate(MAX_TASK_ROWS);
        by_size.sort_unstable();
        by_size
    };
    let changed = moved.iter().filter(|&&m| m > 0).count();

    let full_title = format!("{title}: rank of the first expected document per task");
    let subtitle = if rows.len() == n {
        format!(
            "Every task ({n}); {changed} moved under at least one configuration. Cells: rank under the configuration, ↑/↓ places moved against the baseline."
        )
    } else {
        format!(
            "The {} tasks (of {n}) whose ranks moved most; {changed} moved at all. Cells: rank under the configuration, ↑/↓ places moved against the baseline.",
            rows.len()
        )
    };
    let note =
        format!("–: not in the top {depth}. ↑ without a number: found, ↓ without a number: lost.");

    let id_w = rows
        .iter()
        .map(|&t| text_width(&suite.tasks[t].id, 11.0))
        .fold(text_width("task", 11.0), f64::max)
        + 14.0;
    let queries: Vec<String> = rows
        .iter()
        .map(|&t| truncate(suite.tasks[t].query.trim(), 46))
        .collect();
    let query_w = queries
        .iter()
        .map(|q| text_width(q, 11.0))
        .fold(text_width("query", 11.0), f64::max)
        + 14.0;
    let headers: Vec<String> = std::iter::once(format!("{} (baseline)", c.names[b]))
        .chain(others.iter().map(|&i| c.names[i].clone()))
        .collect();
    let col_w: Vec<f64> = headers
        .iter()
        .map(|h| (text_width(h, 11.0) + 16.0).max(64.0))
        .collect();
    let cells_w: f64 = col_w.iter().sum();
    let row_h = 20.0;
    let header_y = 82.0;
    let rows_top = header_y + 10.0;
    let rows_bottom = rows_top + rows.len() as f64 * row_h;

    // Legend: swatch + label, laid out left to right.
    let legend: Vec<(Movement, &str)> = vec![
        (Movement::Up(1), "↑1"),
        (Movement::Up(2), "↑2–4"),
        (Movement::Up(5), "↑5+ or found"),
        (Movement::Same, "same"),
        (Movement::Down(1), "↓1"),
        (Movement::Down(2), "↓2–4"),
        (Movement::Down(5), "↓5+ or lost"),
    ];
    let legend_w: f64 = legend
        .iter()
        .map(|(_, l)| 20.0 + text_width(l, 11.0) + 14.0)
        .sum();

    let table_w = id_w + query_w + cells_w;
    let width = (MARGIN * 2.0 + table_w)
        .max(MARGIN * 2.0 + text_width(&full_title, 15.0))
        .max(MARGIN * 2.0 + text_width(&subtitle, 12.0))
        .max(MARGIN * 2.0 + text_width(&note, 11.0))
        .max(MARGIN * 2.0 + legend_w);

    let mut svg = Svg::new();
    svg.text((MARGIN, 24.0), 15.0, Anchor::Start, INK, true, &full_title);
    svg.text((MARGIN, 44.0), 12.0, Anchor::Start, MUTED, false, &subtitle);
    let x_query = MARGIN + id_w;
    let x_cells = x_query + query_w;
    svg.text((MARGIN, header_y), 11.0, Anchor::Start, INK, true, "task");
    svg.text((x_query, header_y), 11.0, Anchor::Start, INK, true, "query");
    let mut x = x_cells;
    for (h, w) in headers.iter().zip(&col_w) {
        svg.text((x + w / 2.0, header_y), 11.0, Anchor::Middle, INK, true, h);
        x += w;
    }
    for (row, &t) in rows.iter().enumerate() {
        let y = rows_top + row as f64 * row_h;
        let baseline_y = y + row_h / 2.0 + 4.0;
        if row % 2 == 0 {
            svg.rect(MARGIN, y, id_w + query_w, row_h, BAND, None);
        }
        svg.text(
            (MARGIN + 4.0, baseline_y),
            11.0,
            Anchor::Start,
            INK,
            false,
            &suite.tasks[t].id,
        );
        svg.text(
            (x_query, baseline_y),
            11.0,
            Anchor::Start,
            MUTED,
            false,
            &queries[row],
        );
        let mut x = x_cells;
        let base = ranks[b][t];
        svg.rect(x, y, col_w[0], row_h, "#ffffff", Some("#dddddd"));
        svg.text(
            (x + col_w[0] / 2.0, baseline_y),
            11.0,
            Anchor::Middle,
            INK,
            true,
            &base.map_or("–".to_string(), |r| r.to_string()),
        );
        x += col_w[0];
        for (k, &i) in others.iter().enumerate() {
            let w = col_w[k + 1];
            let mv = movement(base, ranks[i][t]);
            let (fill, ink) = mv.colours();
            svg.rect(x, y, w, row_h, fill, Some("#ffffff"));
            svg.text(
                (x + w / 2.0, baseline_y),
                11.0,
                Anchor::Middle,
                ink,
                false,
                &mv.label(ranks[i][t]),
            );
            x += w;
        }
    }
    let mut lx = MARGIN;
    let ly = rows_bottom + 18.0;
    for (mv, label) in &legend {
        svg.rect(lx, ly, 14.0, 14.0, mv.colours().0, Some("#bbbbbb"));
        svg.text(
            (lx + 20.0, ly + 11.0),
            11.0,
            Anchor::Start,
            INK,
            false,
            label,
        );
        lx += 20.0 + text_width(label, 11.0) + 14.0;
    }
    svg.text(
        (MARGIN, ly + 34.0),
        11.0,
        Anchor::Start,
        MUTED,
        false,
        &note,
    );
    svg.finish(width, ly + 46.0, &full_title)
}
