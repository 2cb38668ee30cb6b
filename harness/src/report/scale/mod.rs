//! The report of a corpus-size curve, `<stem>.scale.md` with its CSV, JSON and SVG, rendered
//! from a [`Curve`] that [`crate::replay::scale`] measured (one experiment replayed over corpora
//! of growing size: a suite's corpus joined by distractors, or a BEIR collection's judged
//! documents with a sample of the others). Nothing here replays.
//!
//! Statistics per size are the report's usual ones: each configuration's mean with its bootstrap
//! interval, and against the baseline, Δ with its interval and the sign-flip test, Holm-adjusted
//! across the configurations at that size and measure. A Δ is "detectable" at a size when that
//! adjusted p is below 0.05.

use std::path::PathBuf;

use anyhow::Result;
use ranklab_engine::corpus::Corpus;
use serde_json::json;

use super::table::{self, Column, Table};
use super::SuiteReport;
pub use crate::replay::scale::{Curve, Point};
use crate::stats::{self, format_p, thousands, Interval, Paired, ALPHA};
use crate::suite::{Experiments, Suite};

/// What a curve is drawn over, for its report.
pub struct Setting {
    /// The title's subject: `docir — corpus-size` or `scifact`.
    pub title: String,
    /// The stem of the files: `<stem>.scale.md`, ….
    pub stem: String,
    /// One paragraph saying how each size's corpus was made (pool, seed, superset rule).
    pub how: String,
    /// What the added documents are called: "distractors", "sampled documents".
    pub added: String,
    /// Indices into the measure set of the measures shown and plotted (the first is plotted).
    pub headline: Vec<usize>,
}

/// The report of a suite's experiment with `distractors:` (`<experiment>.scale.*`), from its
/// curve ([`crate::replay::scale::suite_curve`]) over the suite's `corpus` joined by `pool`'s
/// draw. The measures shown: nDCG@k and MRR.
pub fn suite_report(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    pool: &crate::suite::distractors::Pool,
    curve: &Curve,
) -> Result<SuiteReport> {
    let setting = Setting {
        title: format!("{} — {}", suite.name, ex.experiment),
        stem: ex.experiment.clone(),
        how: format!(
            "The suite's {} documents, joined at each size by that many distractors drawn from {} ({} documents; seed {}, each size's draw containing the smaller's), every configuration replayed on the joined corpus with its own BM25 index. Sizes below count every document of the corpus.",
            thousands(corpus.len()),
            pool_shown(pool),
            thousands(pool.drawn.len()),
            pool.seed
        ),
        added: "distractors".to_string(),
        headline: vec![2, 1],
    };
    render(&setting, curve, &stats::Options::default())
}

/// The pool as a report names it: `from` as written when it names a variable (the same on every
/// machine), else the path read, from the project's root.
fn pool_shown(pool: &crate::suite::distractors::Pool) -> String {
    if pool.written.contains("${") {
        pool.written.clone()
    } else {
        super::shown(&pool.path)
    }
}

/// The statistics of one measure at one size.
pub struct Cell {
    /// Per configuration: mean and its bootstrap interval.
    pub means: Vec<(f64, Interval)>,
    /// Per configuration: against the baseline (None for the baseline itself).
    pub paired: Vec<Option<Paired>>,
}

/// Statistics of measure `m` at every size: `[size]`.
pub fn cells(curve: &Curve, m: usize, opts: &stats::Options) -> Result<Vec<Cell>> {
    use rayon::prelude::*;
    curve
        .points
        .par_iter()
        .map(|p| {
            let col = |c: usize| -> Vec<f64> { p.values[c].iter().map(|task| task[m]).collect() };
            let means = (0..curve.configs.len())
                .map(|c| {
                    let v = col(c);
                    (stats::mean(&v), stats::mean_interval(&v, opts))
                })
                .collect();
            let base = col(curve.baseline);
            let others: Vec<usize> = (0..curve.configs.len())
                .filter(|&c| c != curve.baseline)
                .collect();
            let cols: Vec<Vec<f64>> = others.iter().map(|&c| col(c)).collect();
            let refs: Vec<&[f64]> = cols.iter().map(Vec::as_slice).collect();
            let compared = stats::against_baseline(&base, &refs, opts)?;
            let mut paired: Vec<Option<Paired>> = vec![None; curve.configs.len()];
            for (c, pr) in others.into_iter().zip(compared) {
                paired[c] = Some(pr);
            }
            Ok(Cell { means, paired })
        })
        .collect()
}

/// The first size (documents) at which configuration `c`'s Δ is detectable, if any.
fn first_detectable(curve: &Curve, cells: &[Cell], c: usize) -> Option<usize> {
    cells
        .iter()
        .zip(&curve.points)
        .find(|(cell, _)| {
            cell.paired[c]
                .as_ref()
                .is_some_and(|p| p.significant(ALPHA))
        })
        .map(|(_, p)| p.documents)
}

/// A Δ as the sentences print it: 3 decimals, a true minus sign.
fn short(x: f64) -> String {
    let s = format!("{x:+.3}");
    match s.as_str() {
        "+0.000" | "-0.000" => "0.000".to_string(),
        _ => s.replace('-', "−"),
    }
}

/// One sentence per configuration other than the baseline, on measure `m`, written from the
/// figures: the side it is on at every size (or that it changes side), how the gap moves from
/// the smallest to the largest size, and the first size at which it is detectable.
pub fn sentences(curve: &Curve, cells: &[Cell], m: usize) -> Vec<String> {
    let base = &curve.configs[curve.baseline];
    let (first, last) = match (curve.points.first(), curve.points.last()) {
        (Some(f), Some(l)) => (thousands(f.documents), thousands(l.documents)),
        _ => return Vec::new(),
    };
    let measure = &curve.measures[m];
    let mut out = Vec::new();
    for (c, name) in curve.configs.iter().enumerate() {
        if c == curve.baseline {
            continue;
        }
        let deltas: Vec<f64> = cells
            .iter()
            .map(|cell| cell.paired[c].as_ref().map_or(0.0, |p| p.delta))
            .collect();
        let tie = |d: f64| d.abs() <= stats::TIE_EPSILON;
        let side = if deltas.iter().all(|&d| d < 0.0 && !tie(d)) {
            Some("behind")
        } else if deltas.iter().all(|&d| d > 0.0 && !tie(d)) {
            Some("ahead of")
        } else if deltas.iter().all(|&d| tie(d)) {
            Some("level with")
        } else {
            None
        };
        let mut s = match side {
            Some(side) if deltas.len() == 1 => {
                format!("On {measure}, {name} is {side} {base} at {first} documents")
            }
            Some(side) => format!(
                "On {measure}, {name} is {side} {base} at every size from {first} to {last} documents"
            ),
            None => {
                let at: Vec<String> = deltas
                    .iter()
                    .zip(&curve.points)
                    .map(|(d, p)| format!("{} at {}", short(*d), thousands(p.documents)))
                    .collect();
                format!(
                    "On {measure}, {name} against {base} changes side across sizes ({})",
                    at.join(", ")
                )
            }
        };
        if side.is_some() && side != Some("level with") && deltas.len() > 1 {
            let (d0, dn) = (deltas[0], deltas[deltas.len() - 1]);
            let trend = if (dn.abs() - d0.abs()).abs() < 0.0005 {
                format!("; the gap stays at about {}", short(dn))
            } else if dn.abs() < d0.abs() {
                format!("; the gap narrows from {} to {}", short(d0), short(dn))
            } else {
                format!("; the gap widens from {} to {}", short(d0), short(dn))
            };
            s.push_str(&trend);
        }
        match first_detectable(curve, cells, c) {
            Some(n) => s.push_str(&format!(
                "; the difference is first detectable (Holm-adjusted p < {ALPHA}) at {} documents.",
                thousands(n)
            )),
            None => s.push_str(&format!(
                "; at no size is the difference detectable (Holm-adjusted p < {ALPHA})."
            )),
        }
        out.push(s);
    }
    out
}

mod plot;

/// The rows of the CSV and JSON files: per headline measure, size and configuration.
fn rows_table(curve: &Curve, all: &[(usize, Vec<Cell>)]) -> Result<Table> {
    let (mut measure, mut config, mut docs, mut added) = (vec![], vec![], vec![], vec![]);
    let (mut mean, mut lo, mut hi) = (vec![], vec![], vec![]);
    let mut paired: [Vec<Option<f64>>; 5] = Default::default();
    let mut detectable: Vec<Option<String>> = vec![];
    for (m, cells) in all {
        let m = *m;
        for (p, cell) in curve.points.iter().zip(cells) {
            for (c, name) in curve.configs.iter().enumerate() {
                measure.push(curve.measures[m].clone());
                config.push(name.clone());
                docs.push(p.documents as u64);
                added.push(p.added as u64);
                let (mu, ci) = cell.means[c];
                mean.push(mu);
                lo.push(ci.lo);
                hi.push(ci.hi);
                let pr = cell.paired[c].as_ref();
                let fields: [fn(&Paired) -> f64; 5] = [
                    |p| p.delta,
                    |p| p.ci.lo,
                    |p| p.ci.hi,
                    |p| p.test.p,
                    |p| p.p_holm,
                ];
                for (col, f) in paired.iter_mut().zip(fields) {
                    col.push(pr.map(f));
                }
                detectable.push(pr.map(|p| p.significant(ALPHA).to_string()));
            }
        }
    }
    let [delta, delta_lo, delta_hi, p, p_holm] = paired;
    Table::new(vec![
        Column::new("measure", measure),
        Column::new("configuration", config),
        Column::new("documents", docs),
        Column::new("added", added),
        Column::new("mean", mean),
        Column::new("ci_lo", lo),
        Column::new("ci_hi", hi),
        Column::new("delta", delta),
        Column::new("delta_ci_lo", delta_lo),
        Column::new("delta_ci_hi", delta_hi),
        Column::new("p", p),
        Column::new("p_holm", p_holm),
        Column::new("detectable", detectable),
    ])
}

/// The sizes as column headings: `35`, `1,035`, ….
fn size_labels(curve: &Curve) -> Vec<String> {
    curve
        .points
        .iter()
        .map(|p| thousands(p.documents))
        .collect()
}

/// The Markdown tables of measure `m`: means with intervals, then Δ against the baseline with
/// its interval and p, and the first size at which it is detectable.
fn measure_tables(curve: &Curve, cells: &[Cell], m: usize) -> String {
    let name = &curve.measures[m];
    let base = &curve.configs[curve.baseline];
    let sizes = size_labels(curve);
    let mut md = format!(
        "## {name} by corpus size\n\nMean over {} tasks [95% CI], per corpus size (documents).\n\n| configuration | {} |\n|---|{}\n",
        curve.tasks,
        sizes.join(" | "),
        "---:|".repeat(sizes.len())
    );
    for (c, config) in curve.configs.iter().enumerate() {
        let mark = if c == curve.baseline {
            " (baseline)"
        } else {
            ""
        };
        let row: Vec<String> = cells
            .iter()
            .map(|cell| {
                let (mean, ci) = cell.means[c];
                format!("{mean:.4} [{:.4}, {:.4}]", ci.lo, ci.hi)
            })
            .collect();
        md.push_str(&format!(
            "| {}{mark} | {} |\n",
            crate::report::table::md_cell(config),
            row.join(" | ")
        ));
    }
    md.push_str(&format!(
        "\n## Δ {name} against {base}\n\nΔ [95% CI], Holm-adjusted p; **bold** where detectable (Holm-adjusted p < {ALPHA}).\n\n| configuration | {} | first detectable at |\n|---|{}---|\n",
        sizes.join(" | "),
        "---:|".repeat(sizes.len())
    ));
    for (c, config) in curve.configs.iter().enumerate() {
        if c == curve.baseline {
            continue;
        }
        let row: Vec<String> = cells
            .iter()
            .map(|cell| match &cell.paired[c] {
                Some(p) => {
                    let text = format!("{}, p {}", p.delta_with_ci(), format_p(p.p_holm));
                    if p.significant(ALPHA) {
                        format!("**{text}**")
                    } else {
                        text
                    }
                }
                None => String::new(),
            })
            .collect();
        let first = first_detectable(curve, cells, c).map_or("not detectable".to_string(), |n| {
            format!("{} documents", thousands(n))
        });
        md.push_str(&format!(
            "| {} | {} | {first} |\n",
            crate::report::table::md_cell(config),
            row.join(" | ")
        ));
    }
    md.push('\n');
    md
}

/// The warranty section: the added documents are unjudged; how much of the top k they fill.
fn warranty(setting: &Setting, curve: &Curve) -> String {
    let sizes = size_labels(curve);
    let mut md = format!(
        "## Warranty: the {added} are unjudged\n\nNo one judged the {added} for any task: wherever one ranks, it counts as not relevant. If one in fact answers a task, the measures at the larger sizes are too low, for every configuration that ranks it. The share of the top-k slots (each task's k) that hold one of the {added}, per configuration and size:\n\n| configuration | {} |\n|---|{}\n",
        sizes.join(" | "),
        "---:|".repeat(sizes.len()),
        added = setting.added
    );
    for (c, config) in curve.configs.iter().enumerate() {
        let row: Vec<String> = curve
            .points
            .iter()
            .map(|p| format!("{:.1}%", 100.0 * p.added_share[c]))
            .collect();
        md.push_str(&format!(
            "| {} | {} |\n",
            crate::report::table::md_cell(config),
            row.join(" | ")
        ));
    }
    md.push('\n');
    md
}

/// Renders the curve's files (`<stem>.scale.md`, `.csv`, `.json`, `.svg`) as a report whose
/// stem is `<stem>.scale`.
pub fn render(setting: &Setting, curve: &Curve, opts: &stats::Options) -> Result<SuiteReport> {
    use rayon::prelude::*;
    // The statistics of the headline measures only: the others are in the experiment's own
    // report at any one size, and bootstrap and sign-flip draws at every size are most of a
    // warm curve's time.
    let all: Vec<(usize, Vec<Cell>)> = setting
        .headline
        .par_iter()
        .map(|&m| Ok((m, cells(curve, m, opts)?)))
        .collect::<Result<_>>()?;
    let plotted = setting.headline[0];
    let said: Vec<String> = all
        .iter()
        .flat_map(|(m, cells)| sentences(curve, cells, *m))
        .collect();
    let stem = format!("{}.scale", setting.stem);
    let title = format!("{}: corpus-size curve", setting.title);
    let mut md = format!("# {title}\n\n{}\n\n", setting.how);
    for s in &said {
        md.push_str(&format!("- {s}\n"));
    }
    md.push_str(&format!(
        "\n![{} against corpus size]({stem}.svg)\n\n",
        curve.measures[plotted]
    ));
    for (m, cells) in &all {
        md.push_str(&measure_tables(curve, cells, *m));
    }
    md.push_str(&warranty(setting, curve));
    md.push_str(&format!(
        "## Notes\n\n{} The same figures are in {stem}.csv and {stem}.json.\n",
        opts.describe("configuration", "tasks")
    ));
    let rows = rows_table(curve, &all)?;
    let svg = plot::chart(curve, &all[0].1, plotted, &title);
    let json = json!({
        "title": title,
        "how": setting.how,
        "baseline": curve.configs[curve.baseline],
        "sizes": curve.points.iter().map(|p| json!({"documents": p.documents, "added": p.added})).collect::<Vec<_>>(),
        "sentences": said,
        "rows": table::json_rows(&rows),
    });
    // One line, as a Decision is one paragraph: the curve's title, then its sentences.
    let summary = match said.is_empty() {
        true => format!("{title}\n"),
        false => format!("{title}: {}\n", said.join(" ")),
    };
    Ok(SuiteReport {
        files: vec![
            (PathBuf::from(format!("{stem}.md")), md.clone().into_bytes()),
            (
                PathBuf::from(format!("{stem}.csv")),
                table::csv(&rows)?.into_bytes(),
            ),
            (
                PathBuf::from(format!("{stem}.json")),
                (serde_json::to_string_pretty(&json)? + "\n").into_bytes(),
            ),
            (PathBuf::from(format!("{stem}.svg")), svg.into_bytes()),
        ],
        markdown: md,
        summary,
        stem,
        failures: Vec::new(),
    })
}
