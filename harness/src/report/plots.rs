//! Plots of a report, as SVG written directly: no C library, no font file, no system font is
//! read to make them (text is laid out with a conservative width estimate and rendered by the
//! viewer's sans-serif font). Three files next to `<experiment>.md`:
//!
//! - `<experiment>.metrics.svg`: each measure per configuration, the mean over tasks with its 95%
//!   bootstrap interval as a whisker, the baseline's mean as a dashed line;
//! - `<experiment>.delta.svg`: Δ against the baseline of the Δ-column measures (recall@k, MRR)
//!   with the paired 95% interval, filled when the Holm-adjusted p is below 0.05;
//! - `<experiment>.tasks.svg`: a heat map of per-task rank movements, the rank of the first
//!   expected document under each configuration coloured by how far it moved from the baseline's.
//!
//! Guarantees: same inputs, same bytes (coordinates printed with one decimal, seeded intervals,
//! no timestamps); labels never overlap (every column and panel is as wide as its widest label
//! under the width estimate, which over-estimates common sans-serif fonts).

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use ranklab_engine::corpus::Corpus;

use super::stats_section::{compute, Computed};
use super::{first_relevant_rank, MeasureSet};
use crate::replay::Replay;
use crate::stats::{self, mean_interval, ALPHA};
use crate::suite::{Experiments, Suite};

/// The SVG files of a report and the Markdown that links them.
#[derive(Debug, Clone)]
pub struct Plots {
    /// `(file name relative to the report directory, SVG bytes)`.
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// A `## Plots` section with one image link per file.
    pub markdown: String,
}

/// Renders the plots of one experiment; file names start with `stem`.
pub fn render(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
    stem: &str,
) -> Result<Plots> {
    let c = compute(corpus, suite, ex, replay, set)?;
    render_computed(&c, corpus, suite, ex, replay, stem)
}

/// Renders the plots from statistics already computed (see [`super::stats_section::compute`]).
pub fn render_computed(
    c: &Computed,
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    stem: &str,
) -> Result<Plots> {
    let title = format!("{} — {}", suite.name, ex.experiment);
    let mut files = Vec::new();
    let mut md = String::from("## Plots\n\n");
    let metrics = format!("{stem}.metrics.svg");
    files.push((
        PathBuf::from(&metrics),
        metrics_chart(c, &title).into_bytes(),
    ));
    writeln!(
        md,
        "![Each measure per configuration: mean over tasks with its 95% bootstrap CI]({metrics})\n"
    )?;
    if c.names.len() > 1 {
        let delta = format!("{stem}.delta.svg");
        files.push((PathBuf::from(&delta), delta_chart(c, &title).into_bytes()));
        writeln!(
            md,
            "![Δ against the baseline with the paired 95% CI]({delta})\n"
        )?;
        let tasks = format!("{stem}.tasks.svg");
        let depth = ex
            .configurations
            .iter()
            .map(|c| c.depth())
            .max()
            .unwrap_or(0);
        let ranks = task_ranks(corpus, suite, replay);
        files.push((
            PathBuf::from(&tasks),
            tasks_chart(c, suite, &ranks, depth, &title).into_bytes(),
        ));
        writeln!(
            md,
            "![Per-task rank of the first expected document against the baseline]({tasks})\n"
        )?;
    }
    Ok(Plots {
        files,
        markdown: md,
    })
}

/// `[configuration][task]`: 1-based rank of the first expected document, if retrieved.
pub fn task_ranks(corpus: &Corpus, suite: &Suite, replay: &Replay) -> Vec<Vec<Option<usize>>> {
    replay
        .runs
        .iter()
        .map(|r| {
            suite
                .tasks
                .iter()
                .zip(&r.per_task)
                .map(|(t, ranked)| first_relevant_rank(corpus, t, ranked))
                .collect()
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// SVG writing.

const FONT: &str = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif";
const INK: &str = "#222222";
const MUTED: &str = "#666666";
const GRID: &str = "#e3e3e3";
const BAND: &str = "#f5f5f5";
const BLUE: &str = "#1f5fa8";
const GREEN: &str = "#2e8b3e";
const RED: &str = "#c0392b";

/// Width of `s` at font size `size`, over-estimated (0.62 em a character; common sans-serif
/// fonts average 0.5–0.6 em for this kind of text).
fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.62
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// Cuts `s` to at most `max` characters, marking the cut with an ellipsis.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[derive(Clone, Copy)]
enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

struct Svg {
    body: String,
}

impl Svg {
    fn new() -> Self {
        Svg {
            body: String::new(),
        }
    }

    fn text(
        &mut self,
        (x, y): (f64, f64),
        size: f64,
        anchor: Anchor,
        fill: &str,
        bold: bool,
        s: &str,
    ) {
        let weight = if bold { " font-weight=\"bold\"" } else { "" };
        let _ = writeln!(
            self.body,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size:.0}" text-anchor="{}" fill="{fill}"{weight}>{}</text>"#,
            anchor.name(),
            esc(s)
        );
    }

    fn line(
        &mut self,
        (x1, y1): (f64, f64),
        (x2, y2): (f64, f64),
        stroke: &str,
        width: f64,
        dash: Option<&str>,
    ) {
        let dash = dash
            .map(|d| format!(" stroke-dasharray=\"{d}\""))
            .unwrap_or_default();
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="{width:.1}"{dash}/>"#
        );
    }

    fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, fill: &str, stroke: Option<&str>) {
        let stroke = stroke
            .map(|s| format!(" stroke=\"{s}\" stroke-width=\"1\""))
            .unwrap_or_default();
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{fill}"{stroke}/>"#
        );
    }

    fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str, stroke: &str) {
        let _ = writeln!(
            self.body,
            r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>"#
        );
    }

    /// A horizontal interval with end caps.
    fn whisker(&mut self, x1: f64, x2: f64, y: f64, stroke: &str) {
        self.line((x1, y), (x2, y), stroke, 1.5, None);
        self.line((x1, y - 5.0), (x1, y + 5.0), stroke, 1.5, None);
        self.line((x2, y - 5.0), (x2, y + 5.0), stroke, 1.5, None);
    }

    fn finish(self, width: f64, height: f64, title: &str) -> String {
        let (w, h) = (width.ceil(), height.ceil());
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"{FONT}\">\n\
             <title>{}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{}</svg>\n",
            esc(title),
            self.body
        )
    }
}

/// A linear axis on `[lo, hi]` drawn over `[x0, x0 + width]`.
#[derive(Clone, Copy)]
struct Axis {
    lo: f64,
    hi: f64,
    x0: f64,
    width: f64,
}

impl Axis {
    fn x(&self, v: f64) -> f64 {
        self.x0 + (v.clamp(self.lo, self.hi) - self.lo) / (self.hi - self.lo) * self.width
    }
}

/// Tick label: up to 3 decimals, trailing zeros trimmed, a true minus sign.
fn tick_label(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    let s = if s == "-0" { "0" } else { s };
    s.replace('-', "−")
}

/// Draws vertical grid lines and tick labels under the rows.
fn draw_ticks(svg: &mut Svg, axis: &Axis, ticks: &[f64], top: f64, bottom: f64) {
    for &t in ticks {
        let x = axis.x(t);
        svg.line((x, top), (x, bottom), GRID, 1.0, None);
        svg.text(
            (x, bottom + 15.0),
            11.0,
            Anchor::Middle,
            MUTED,
            false,
            &tick_label(t),
        );
    }
    svg.line(
        (axis.x0, bottom),
        (axis.x0 + axis.width, bottom),
        MUTED,
        1.0,
        None,
    );
}

// ---------------------------------------------------------------------------------------------
// Metric chart.

const ROW: f64 = 26.0;
const MARGIN: f64 = 16.0;

fn metrics_chart(c: &Computed, title: &str) -> String {
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
    let intervals: Vec<Vec<(f64, stats::Interval)>> = (0..c.measures.len())
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
    let width = (MARGIN * 2.0 + label_w + panels_w)
        .max(MARGIN * 2.0 + text_width(title, 15.0))
        .max(MARGIN * 2.0 + text_width(&subtitle, 12.0))
        .max(MARGIN * 2.0 + text_width(&note, 11.0));
    let rows_top = 78.0;
    let rows_bottom = rows_top + c.names.len() as f64 * ROW;

    let mut svg = Svg::new();
    svg.text((MARGIN, 24.0), 15.0, Anchor::Start, INK, true, title);
    svg.text((MARGIN, 44.0), 12.0, Anchor::Start, MUTED, false, &subtitle);
    let x_panels = MARGIN + label_w;
    for (i, label) in labels.iter().enumerate() {
        let y = rows_top + i as f64 * ROW;
        if i % 2 == 0 {
            svg.rect(MARGIN, y, label_w + panels_w, ROW, BAND, None);
        }
        let bold = i == c.baseline;
        svg.text(
            (x_panels - 10.0, y + ROW / 2.0 + 4.0),
            12.0,
            Anchor::End,
            INK,
            bold,
            label,
        );
    }
    for (m, name) in c.measures.iter().enumerate() {
        let axis = Axis {
            lo: 0.0,
            hi,
            x0: x_panels + m as f64 * (panel_w + gap),
            width: panel_w,
        };
        svg.text(
            (axis.x0 + panel_w / 2.0, rows_top - 10.0),
            12.0,
            Anchor::Middle,
            INK,
            true,
            name,
        );
        draw_ticks(&mut svg, &axis, &ticks, rows_top, rows_bottom);
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
    svg.text(
        (MARGIN, rows_bottom + 54.0),
        11.0,
        Anchor::Start,
        MUTED,
        false,
        &note,
    );
    svg.finish(width, rows_bottom + 66.0, title)
}

// ---------------------------------------------------------------------------------------------
// Δ chart.

/// A symmetric range holding every value, from a short list of round numbers.
fn symmetric_range(extent: f64) -> f64 {
    const STEPS: [f64; 9] = [0.02, 0.04, 0.1, 0.2, 0.4, 0.6, 1.0, 2.0, 4.0];
    STEPS
        .iter()
        .copied()
        .find(|&s| extent <= s)
        .unwrap_or_else(|| (extent / 4.0).ceil() * 4.0)
}

fn delta_chart(c: &Computed, title: &str) -> String {
    let others: Vec<usize> = (0..c.names.len()).filter(|&i| i != c.baseline).collect();
    let label_w = others
        .iter()
        .map(|&i| text_width(&c.names[i], 12.0))
        .fold(0.0, f64::max)
        + 14.0;
    let panel_w = 220.0;
    let gap = 48.0;
    let measures = &c.delta_measures;
    let extent = measures
        .iter()
        .flat_map(|&m| c.paired[m].iter().flatten())
        .map(|p| p.ci.lo.abs().max(p.ci.hi.abs()).max(p.delta.abs()))
        .fold(0.0, f64::max);
    // 5% headroom, so that a whisker never ends on the frame.
    let r = symmetric_range(extent * 1.05);
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
    let width = (MARGIN * 2.0 + label_w + panels_w)
        .max(MARGIN * 2.0 + text_width(&full_title, 15.0))
        .max(MARGIN * 2.0 + text_width(&subtitle, 12.0))
        .max(MARGIN * 2.0 + text_width(&note, 11.0));
    let rows_top = 78.0;
    let rows_bottom = rows_top + others.len() as f64 * ROW;

    let mut svg = Svg::new();
    svg.text((MARGIN, 24.0), 15.0, Anchor::Start, INK, true, &full_title);
    svg.text((MARGIN, 44.0), 12.0, Anchor::Start, MUTED, false, &subtitle);
    let x_panels = MARGIN + label_w;
    for (row, &i) in others.iter().enumerate() {
        let y = rows_top + row as f64 * ROW;
        if row % 2 == 0 {
            svg.rect(MARGIN, y, label_w + panels_w, ROW, BAND, None);
        }
        svg.text(
            (x_panels - 10.0, y + ROW / 2.0 + 4.0),
            12.0,
            Anchor::End,
            INK,
            false,
            &c.names[i],
        );
    }
    for (k, &m) in measures.iter().enumerate() {
        let axis = Axis {
            lo: -r,
            hi: r,
            x0: x_panels + k as f64 * (panel_w + gap),
            width: panel_w,
        };
        svg.text(
            (axis.x0 + panel_w / 2.0, rows_top - 10.0),
            12.0,
            Anchor::Middle,
            INK,
            true,
            &format!("Δ {}", c.measures[m]),
        );
        draw_ticks(&mut svg, &axis, &ticks, rows_top, rows_bottom);
        svg.line(
            (axis.x(0.0), rows_top),
            (axis.x(0.0), rows_bottom),
            MUTED,
            1.2,
            None,
        );
        for (row, &i) in others.iter().enumerate() {
            let Some(p) = &c.paired[m][i] else { continue };
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
        svg.text(
            (axis.x0 + panel_w / 2.0, rows_bottom + 32.0),
            11.0,
            Anchor::Middle,
            MUTED,
            false,
            "Δ against the baseline",
        );
    }
    svg.text(
        (MARGIN, rows_bottom + 54.0),
        11.0,
        Anchor::Start,
        MUTED,
        false,
        &note,
    );
    svg.finish(width, rows_bottom + 66.0, &full_title)
}

// ---------------------------------------------------------------------------------------------
// Per-task rank movements.

/// Most tasks drawn in the heat map; beyond it, the tasks with the largest movements.
pub const MAX_TASK_ROWS: usize = 60;

/// How a task's first expected document moved under a configuration, relative to the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Movement {
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

fn movement(base: Option<usize>, now: Option<usize>) -> Movement {
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
    fn size(self, depth: usize) -> usize {
        match self {
            Movement::BothMissing | Movement::Same => 0,
            Movement::Up(k) | Movement::Down(k) => k,
            Movement::Found | Movement::Lost => depth.max(1),
        }
    }

    /// Fill colour and text colour: greens up, reds down, three steps each.
    fn colours(self) -> (&'static str, &'static str) {
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

    fn label(self, now: Option<usize>) -> String {
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

fn tasks_chart(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn movements() {
        assert_eq!(movement(Some(3), Some(4)), Movement::Down(1));
        assert_eq!(movement(Some(4), Some(1)), Movement::Up(3));
        assert_eq!(movement(Some(2), Some(2)), Movement::Same);
        assert_eq!(movement(None, Some(2)), Movement::Found);
        assert_eq!(movement(Some(2), None), Movement::Lost);
        assert_eq!(movement(None, None), Movement::BothMissing);
        assert_eq!(Movement::Down(1).label(Some(4)), "4 ↓1");
        assert_eq!(Movement::Lost.label(None), "– ↓");
    }

    #[test]
    fn ticks_and_ranges() {
        assert_eq!(tick_label(-0.05), "−0.05");
        assert_eq!(tick_label(0.0), "0");
        assert_eq!(tick_label(-0.0), "0");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(1.0), "1");
        assert_eq!(symmetric_range(0.0), 0.02);
        assert_eq!(symmetric_range(0.15), 0.2);
        assert_eq!(symmetric_range(1.0), 1.0);
        assert_eq!(symmetric_range(9.0), 12.0);
    }

    #[test]
    fn text_is_escaped_and_truncated() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
