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
    let rows = shown_tasks(&moved);
    let changed = moved.iter().filter(|&&m| m > 0).count();

    let full_title = format!("{title}: rank of the first expected document per task");
    let subtitle = subtitle(rows.len(), n, changed);
    let note =
        format!("–: not in the top {depth}. ↑ without a number: found, ↓ without a number: lost.");
    let table = TaskTable::new(c, suite, &rows, &others);
    let legend_w: f64 = LEGEND
        .iter()
        .map(|(_, l)| 20.0 + text_width(l, 11.0) + 14.0)
        .sum();
    let width =
        chart_width(table.width(), &full_title, &subtitle, &note).max(MARGIN * 2.0 + legend_w);

    let mut svg = Svg::new();
    svg.heading(&full_title, &subtitle);
    table.draw_header(&mut svg);
    for (row, &t) in rows.iter().enumerate() {
        table.draw_row(&mut svg, row, t, ranks, b, &others);
    }
    let ly = table.rows_bottom() + 18.0;
    draw_legend(&mut svg, ly);
    svg.note(ly + 34.0, &note);
    svg.finish(width, ly + 46.0, &full_title)
}

/// The tasks drawn: every task up to [`MAX_TASK_ROWS`], else those that moved most (in task
/// order). `moved` is each task's total movement.
fn shown_tasks(moved: &[usize]) -> Vec<usize> {
    let n = moved.len();
    if n <= MAX_TASK_ROWS {
        (0..n).collect()
    } else {
        let mut by_size: Vec<usize> = (0..n).filter(|&t| moved[t] > 0).collect();
        by_size.sort_by(|&x, &y| moved[y].cmp(&moved[x]).then(x.cmp(&y)));
        by_size.truncate(MAX_TASK_ROWS);
        by_size.sort_unstable();
        by_size
    }
}

/// Which tasks are shown (`shown` of `n`), how many moved, and how to read a cell.
fn subtitle(shown: usize, n: usize, changed: usize) -> String {
    if shown == n {
        format!(
            "Every task ({n}); {changed} moved under at least one configuration. Cells: rank under the configuration, ↑/↓ places moved against the baseline."
        )
    } else {
        format!(
            "The {shown} tasks (of {n}) whose ranks moved most; {changed} moved at all. Cells: rank under the configuration, ↑/↓ places moved against the baseline."
        )
    }
}

/// The legend's swatches and labels, left to right.
const LEGEND: [(Movement, &str); 7] = [
    (Movement::Up(1), "↑1"),
    (Movement::Up(2), "↑2–4"),
    (Movement::Up(5), "↑5+ or found"),
    (Movement::Same, "same"),
    (Movement::Down(1), "↓1"),
    (Movement::Down(2), "↓2–4"),
    (Movement::Down(5), "↓5+ or lost"),
];

/// Height of a task row.
const ROW_H: f64 = 20.0;
/// Baseline of the header row.
const HEADER_Y: f64 = 82.0;
/// Top of the first task row.
const ROWS_TOP: f64 = HEADER_Y + 10.0;

/// The table of the heat map: task id, query, then one column per configuration (the
/// baseline's first), with the widths their texts need.
struct TaskTable<'a> {
    suite: &'a Suite,
    rows: usize,
    queries: Vec<String>,
    headers: Vec<String>,
    id_w: f64,
    query_w: f64,
    col_w: Vec<f64>,
}

impl<'a> TaskTable<'a> {
    fn new(c: &Computed, suite: &'a Suite, rows: &[usize], others: &[usize]) -> TaskTable<'a> {
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
        let headers: Vec<String> = std::iter::once(format!("{} (baseline)", c.names[c.baseline]))
            .chain(others.iter().map(|&i| c.names[i].clone()))
            .collect();
        let col_w: Vec<f64> = headers
            .iter()
            .map(|h| (text_width(h, 11.0) + 16.0).max(64.0))
            .collect();
        TaskTable {
            suite,
            rows: rows.len(),
            queries,
            headers,
            id_w,
            query_w,
            col_w,
        }
    }

    fn width(&self) -> f64 {
        let cells_w: f64 = self.col_w.iter().sum();
        self.id_w + self.query_w + cells_w
    }

    fn rows_bottom(&self) -> f64 {
        ROWS_TOP + self.rows as f64 * ROW_H
    }

    fn x_query(&self) -> f64 {
        MARGIN + self.id_w
    }

    fn x_cells(&self) -> f64 {
        self.x_query() + self.query_w
    }

    /// The header row: `task`, `query`, each configuration's name over its column.
    fn draw_header(&self, svg: &mut Svg) {
        svg.text((MARGIN, HEADER_Y), 11.0, Anchor::Start, INK, true, "task");
        svg.text(
            (self.x_query(), HEADER_Y),
            11.0,
            Anchor::Start,
            INK,
            true,
            "query",
        );
        let mut x = self.x_cells();
        for (h, w) in self.headers.iter().zip(&self.col_w) {
            svg.text((x + w / 2.0, HEADER_Y), 11.0, Anchor::Middle, INK, true, h);
            x += w;
        }
    }

    /// Row `row` (task `t`): its id and query on a band every other row, the baseline's rank,
    /// then per configuration a cell coloured by the movement.
    fn draw_row(
        &self,
        svg: &mut Svg,
        row: usize,
        t: usize,
        ranks: &[Vec<Option<usize>>],
        b: usize,
        others: &[usize],
    ) {
        let y = ROWS_TOP + row as f64 * ROW_H;
        let baseline_y = y + ROW_H / 2.0 + 4.0;
        if row.is_multiple_of(2) {
            svg.rect(MARGIN, y, self.id_w + self.query_w, ROW_H, BAND, None);
        }
        svg.text(
            (MARGIN + 4.0, baseline_y),
            11.0,
            Anchor::Start,
            INK,
            false,
            &self.suite.tasks[t].id,
        );
        svg.text(
            (self.x_query(), baseline_y),
            11.0,
            Anchor::Start,
            MUTED,
            false,
            &self.queries[row],
        );
        let mut x = self.x_cells();
        let base = ranks[b][t];
        let col_w = &self.col_w;
        svg.rect(x, y, col_w[0], ROW_H, "#ffffff", Some("#dddddd"));
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
            svg.rect(x, y, w, ROW_H, fill, Some("#ffffff"));
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
}

/// The legend, on the line at `ly`: a swatch and a label per step.
fn draw_legend(svg: &mut Svg, ly: f64) {
    let mut lx = MARGIN;
    for (mv, label) in &LEGEND {
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
}
