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
use crate::suite::{Experiments, Suite};

mod delta;
mod metrics;
pub(crate) mod svg;
mod tasks;

use delta::delta_chart;
use metrics::metrics_chart;
use tasks::tasks_chart;

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

#[cfg(test)]
mod tests {
    use super::delta::symmetric_range;
    use super::svg::{esc, tick_label, truncate};
    use super::tasks::{movement, Movement};

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
        // ESC, BEL and DEL may not appear in XML 1.0 even as character references.
        assert_eq!(esc("a\u{1b}b\u{7}\u{7f}"), "a\u{FFFD}b\u{FFFD}\u{FFFD}");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
