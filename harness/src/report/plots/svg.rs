//! SVG primitives shared by the charts: colours, text width estimate, escaping, the `Svg`
//! writer, a linear axis and its ticks.

use std::fmt::Write as _;

pub(crate) const FONT: &str = "DejaVu Sans, Verdana, Arial, Helvetica, sans-serif";
pub(crate) const INK: &str = "#222222";
pub(crate) const MUTED: &str = "#666666";
pub(crate) const GRID: &str = "#e3e3e3";
pub(crate) const BAND: &str = "#f5f5f5";
pub(crate) const BLUE: &str = "#1f5fa8";
pub(crate) const GREEN: &str = "#2e8b3e";
pub(crate) const RED: &str = "#c0392b";

/// Width of `s` at font size `size`, over-estimated (0.62 em a character; common sans-serif
/// fonts average 0.5–0.6 em for this kind of text).
pub(crate) fn text_width(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.62
}

/// `s` as XML character data or an attribute value: markup characters as entities, control
/// characters (which XML 1.0 cannot hold at all, escaped or not, but tab, LF and CR) as U+FFFD,
/// so the SVG stays well-formed whatever a name holds.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            c if c.is_control() => o.push('\u{FFFD}'),
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
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Anchor::Start => "start",
            Anchor::Middle => "middle",
            Anchor::End => "end",
        }
    }
}

pub(crate) struct Svg {
    body: String,
}

impl Svg {
    pub(crate) fn new() -> Self {
        Svg {
            body: String::new(),
        }
    }

    pub(crate) fn text(
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

    pub(crate) fn line(
        &mut self,
        (x1, y1): (f64, f64),
        (x2, y2): (f64, f64),
        stroke: &str,
        width: f64,
        dash: Option<&str>,
    ) {
        let dash = dash_attr(dash);
        let _ = writeln!(
            self.body,
            r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{stroke}" stroke-width="{width:.1}"{dash}/>"#
        );
    }

    pub(crate) fn rect(
        &mut self,
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        fill: &str,
        stroke: Option<&str>,
    ) {
        let stroke = stroke
            .map(|s| format!(" stroke=\"{s}\" stroke-width=\"1\""))
            .unwrap_or_default();
        let _ = writeln!(
            self.body,
            r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{fill}"{stroke}/>"#
        );
    }

    pub(crate) fn circle(&mut self, cx: f64, cy: f64, r: f64, fill: &str, stroke: &str) {
        let _ = writeln!(
            self.body,
            r#"<circle cx="{cx:.1}" cy="{cy:.1}" r="{r:.1}" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>"#
        );
    }

    /// A polyline through `points` (no fill); dashed when `dash` is given.
    pub(crate) fn polyline(
        &mut self,
        points: &[(f64, f64)],
        stroke: &str,
        width: f64,
        dash: Option<&str>,
    ) {
        let dash = dash_attr(dash);
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}" fill="none" stroke="{stroke}" stroke-width="{width:.1}"{dash}/>"#,
            points_attr(points)
        );
    }

    /// A filled polygon through `points` at `opacity`, without a stroke (a confidence band).
    pub(crate) fn polygon(&mut self, points: &[(f64, f64)], fill: &str, opacity: f64) {
        let _ = writeln!(
            self.body,
            r#"<polygon points="{}" fill="{fill}" fill-opacity="{opacity:.2}" stroke="none"/>"#,
            points_attr(points)
        );
    }

    /// A horizontal interval with end caps.
    pub(crate) fn whisker(&mut self, x1: f64, x2: f64, y: f64, stroke: &str) {
        self.line((x1, y), (x2, y), stroke, 1.5, None);
        self.line((x1, y - 5.0), (x1, y + 5.0), stroke, 1.5, None);
        self.line((x2, y - 5.0), (x2, y + 5.0), stroke, 1.5, None);
    }

    /// The chart's title (15 px, bold) and subtitle (12 px, muted), top left.
    pub(crate) fn heading(&mut self, title: &str, subtitle: &str) {
        self.text((MARGIN, 24.0), 15.0, Anchor::Start, INK, true, title);
        self.text((MARGIN, 44.0), 12.0, Anchor::Start, MUTED, false, subtitle);
    }

    /// A note under the chart (11 px, muted), at the left margin, on the baseline `y`.
    pub(crate) fn note(&mut self, y: f64, note: &str) {
        self.text((MARGIN, y), 11.0, Anchor::Start, MUTED, false, note);
    }

    pub(crate) fn finish(self, width: f64, height: f64, title: &str) -> String {
        let (w, h) = (width.ceil(), height.ceil());
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" font-family=\"{FONT}\">\n\
             <title>{}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n{}</svg>\n",
            esc(title),
            self.body
        )
    }
}

/// ` stroke-dasharray="…"` for a dash pattern, nothing for a solid stroke.
fn dash_attr(dash: Option<&str>) -> String {
    dash.map(|d| format!(" stroke-dasharray=\"{d}\""))
        .unwrap_or_default()
}

/// `x,y x,y …` with one decimal.
fn points_attr(points: &[(f64, f64)]) -> String {
    points
        .iter()
        .map(|(x, y)| format!("{x:.1},{y:.1}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A linear axis on `[lo, hi]` drawn over `[x0, x0 + width]`.
#[derive(Clone, Copy)]
pub(crate) struct Axis {
    pub(crate) lo: f64,
    pub(crate) hi: f64,
    pub(crate) x0: f64,
    pub(crate) width: f64,
}

impl Axis {
    pub(crate) fn x(&self, v: f64) -> f64 {
        self.x0 + (v.clamp(self.lo, self.hi) - self.lo) / (self.hi - self.lo) * self.width
    }
}

/// Tick label: up to 3 decimals, trailing zeros trimmed, a true minus sign.
pub(crate) fn tick_label(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    let s = if s == "-0" { "0" } else { s };
    s.replace('-', "−")
}

/// Draws vertical grid lines and tick labels under the rows.
pub(crate) fn draw_ticks(svg: &mut Svg, axis: &Axis, ticks: &[f64], top: f64, bottom: f64) {
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

/// A chart's width: its content's, or its title's (15 px), subtitle's (12 px) or note's
/// (11 px) when wider, plus the margins.
pub(crate) fn chart_width(content: f64, title: &str, subtitle: &str, note: &str) -> f64 {
    (MARGIN * 2.0 + content)
        .max(MARGIN * 2.0 + text_width(title, 15.0))
        .max(MARGIN * 2.0 + text_width(subtitle, 12.0))
        .max(MARGIN * 2.0 + text_width(note, 11.0))
}

/// The row labels (label, bold) of a panel chart, right-aligned before the panels, every other
/// row on a band as wide as the labels and panels.
pub(crate) fn draw_row_labels(
    svg: &mut Svg,
    labels: &[(&str, bool)],
    rows_top: f64,
    label_w: f64,
    panels_w: f64,
) {
    let x_panels = MARGIN + label_w;
    for (i, &(label, bold)) in labels.iter().enumerate() {
        let y = rows_top + i as f64 * ROW;
        if i % 2 == 0 {
            svg.rect(MARGIN, y, label_w + panels_w, ROW, BAND, None);
        }
        svg.text(
            (x_panels - 10.0, y + ROW / 2.0 + 4.0),
            12.0,
            Anchor::End,
            INK,
            bold,
            label,
        );
    }
}

/// A panel's title above its rows, then its grid lines and tick labels.
pub(crate) fn draw_panel_head(
    svg: &mut Svg,
    axis: &Axis,
    title: &str,
    ticks: &[f64],
    top: f64,
    bottom: f64,
) {
    svg.text(
        (axis.x0 + axis.width / 2.0, top - 10.0),
        12.0,
        Anchor::Middle,
        INK,
        true,
        title,
    );
    draw_ticks(svg, axis, ticks, top, bottom);
}

/// Height of one chart row.
pub(crate) const ROW: f64 = 26.0;
/// Margin around a chart.
pub(crate) const MARGIN: f64 = 16.0;
