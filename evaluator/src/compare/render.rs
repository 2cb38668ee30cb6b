//! The output of a comparison: the one-line reading, the per-measure and per-query tables, and
//! the whole text in Markdown, CSV or JSON.

use crate::table::{Column, Table};
use anyhow::Result;

use super::{Comparison, Format};
use crate::metrics::Measure;
use crate::root::shown;
use crate::stats::{self, format_p, format_signed, Finding};
use crate::table;
use crate::trec::Evaluation;

impl Comparison {
    fn labels(&self) -> Vec<&str> {
        self.plan.runs.iter().map(|(l, _)| l.as_str()).collect()
    }

    fn measure_names(&self) -> Vec<String> {
        self.plan.measures.iter().map(Measure::name).collect()
    }

    /// Judged queries every run is paired on.
    pub fn queries(&self) -> usize {
        self.evaluations[0].per_query.len()
    }

    /// The one-line reading.
    pub fn reading(&self) -> String {
        let labels = self.labels();
        let names = self.measure_names();
        let findings: Vec<Finding<'_>> = self
            .paired
            .iter()
            .enumerate()
            .flat_map(|(m, row)| {
                let (names, labels) = (&names, &labels);
                row.iter().enumerate().filter_map(move |(r, p)| {
                    p.as_ref().map(|paired| Finding {
                        name: labels[r],
                        measure: &names[m],
                        paired,
                    })
                })
            })
            .collect();
        let shown: Vec<&str> = names.iter().map(String::as_str).collect();
        stats::reading(
            labels[0],
            "run",
            labels.len() - 1,
            &shown,
            &findings,
            stats::ALPHA,
        )
    }

    /// The per-measure table for Markdown (strings).
    pub fn summary_display(&self) -> Result<Table> {
        let ci = format!("Δ [{:.0}% CI]", self.plan.stats.confidence * 100.0);
        let (mut measure, mut run, mut mean, mut delta, mut p, mut holm, mut method, mut wtl) = (
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
            vec![],
        );
        for (m, name) in self.measure_names().iter().enumerate() {
            for (r, label) in self.labels().iter().enumerate() {
                measure.push(name.clone());
                mean.push(self.evaluations[r].summary_mean(m));
                match &self.paired[m][r] {
                    None => {
                        run.push(format!("{label} (baseline)"));
                        for col in [&mut delta, &mut p, &mut holm, &mut method, &mut wtl] {
                            col.push("—".to_string());
                        }
                    }
                    Some(s) => {
                        run.push(label.to_string());
                        delta.push(s.delta_with_ci());
                        p.push(format_p(s.test.p));
                        holm.push(format_p(s.p_holm));
                        method.push(match s.test.method {
                            stats::Method::Exact { nonzero } => format!("exact, n = {nonzero}"),
                            stats::Method::Sampled { permutations, .. } => {
                                format!(
                                    "sampled ×{}, n = {}",
                                    stats::thousands(permutations),
                                    s.test.nonzero
                                )
                            }
                        });
                        wtl.push(format!("{}/{}/{}", s.wins, s.ties, s.losses));
                    }
                }
            }
        }
        Table::new(vec![
            Column::new("measure", measure),
            Column::new("run", run),
            Column::new("mean", mean),
            Column::new(ci.as_str(), delta),
            Column::new("p", p),
            Column::new("p (Holm)", holm),
            Column::new("test", method),
            Column::new("win/tie/loss", wtl),
        ])
    }

    /// The per-measure table for CSV and JSON (numbers; empty statistics on the baseline's rows).
    pub fn summary_data(&self) -> Result<Table> {
        let mut measure = vec![];
        let mut run = vec![];
        let mut path = vec![];
        let mut n = vec![];
        let mut mean = vec![];
        let (mut delta, mut lo, mut hi, mut p, mut holm) = (vec![], vec![], vec![], vec![], vec![]);
        let mut method: Vec<Option<String>> = vec![];
        let (mut nonzero, mut wins, mut ties, mut losses) = (vec![], vec![], vec![], vec![]);
        for (m, name) in self.measure_names().iter().enumerate() {
            for (r, (label, file)) in self.plan.runs.iter().enumerate() {
                measure.push(name.clone());
                run.push(label.clone());
                path.push(file.display().to_string());
                n.push(self.queries() as u32);
                mean.push(self.evaluations[r].summary_mean(m));
                let s = self.paired[m][r].as_ref();
                delta.push(s.map(|s| s.delta));
                lo.push(s.map(|s| s.ci.lo));
                hi.push(s.map(|s| s.ci.hi));
                p.push(s.map(|s| s.test.p));
                holm.push(s.map(|s| s.p_holm));
                method.push(s.map(|s| s.test.method.name().to_string()));
                nonzero.push(s.map(|s| s.test.nonzero as u32));
                wins.push(s.map(|s| s.wins as u32));
                ties.push(s.map(|s| s.ties as u32));
                losses.push(s.map(|s| s.losses as u32));
            }
        }
        Table::new(vec![
            Column::new("measure", measure),
            Column::new("run", run),
            Column::new("path", path),
            Column::new("queries", n),
            Column::new("mean", mean),
            Column::new("delta", delta),
            Column::new("ci_low", lo),
            Column::new("ci_high", hi),
            Column::new("p", p),
            Column::new("p_method", method),
            Column::new("p_nonzero", nonzero),
            Column::new("p_holm", holm),
            Column::new("wins", wins),
            Column::new("ties", ties),
            Column::new("losses", losses),
        ])
    }

    /// The per-query table: query, measure, one column per run, one Δ column per compared run.
    /// `numeric` keeps Δ as numbers (CSV, JSON); otherwise signed strings (Markdown).
    pub fn per_query(&self, numeric: bool) -> Result<Table> {
        let labels = self.labels();
        let names = self.measure_names();
        let mut query = vec![];
        let mut measure = vec![];
        let mut values: Vec<Vec<f64>> = vec![vec![]; labels.len()];
        for (q, qv) in self.evaluations[0].per_query.iter().enumerate() {
            for (m, name) in names.iter().enumerate() {
                query.push(qv.qid.clone());
                measure.push(name.clone());
                for (r, col) in values.iter_mut().enumerate() {
                    col.push(self.evaluations[r].per_query[q].values[m]);
                }
            }
        }
        let mut columns = vec![Column::new("query", query), Column::new("measure", measure)];
        for (label, col) in labels.iter().zip(&values) {
            columns.push(Column::new(*label, col.clone()));
        }
        for (r, label) in labels.iter().enumerate().skip(1) {
            let d: Vec<f64> = values[r]
                .iter()
                .zip(&values[0])
                .map(|(a, b)| a - b)
                .collect();
            let name = format!("Δ {label}");
            if numeric {
                columns.push(Column::new(name.as_str(), d));
            } else {
                let s: Vec<String> = d.iter().map(|&x| format_signed(x)).collect();
                columns.push(Column::new(name.as_str(), s));
            }
        }
        Table::new(columns)
    }

    /// The header sentence of the Markdown output.
    fn header(&self) -> String {
        let runs = &self.plan.runs;
        let others: Vec<String> = runs[1..]
            .iter()
            .map(|(l, p)| format!("`{l}` ({})", shown(p)))
            .collect();
        let missing: Vec<String> = runs
            .iter()
            .zip(&self.evaluations)
            .filter_map(|((l, _), e)| {
                let k = e.per_query.iter().filter(|q| q.missing).count();
                (k > 0).then(|| format!("{l} lacks {k}"))
            })
            .collect();
        let complete = if self.plan.complete {
            if missing.is_empty() {
                " (-c: every run has every judged query)".to_string()
            } else {
                format!(
                    " (-c: a query missing from a run counts 0; {})",
                    missing.join(", ")
                )
            }
        } else {
            String::new()
        };
        format!(
            "Baseline `{}` ({}); compared: {}. Qrels `{}`: {} judged queries, relevance level {}; every run paired on all of them{complete}.",
            runs[0].0,
            shown(&runs[0].1),
            others.join(", "),
            shown(&self.qrels),
            self.queries(),
            self.plan.eval.rel_level,
        )
    }

    /// The whole output in `format`.
    pub fn render(&self, format: Format, per_query: bool) -> Result<String> {
        match format {
            Format::Md => {
                let mut s = String::from("# ranklab compare\n\n");
                s.push_str(&self.header());
                s.push_str("\n\n");
                s.push_str(&table::markdown(&self.summary_display()?));
                let judged = self.judged_reading().map(|w| w + " ").unwrap_or_default();
                s.push_str(&format!(
                    "\n{} {judged}{}\n\n{}\n",
                    self.reading(),
                    self.power_reading()?,
                    self.plan.stats.describe("run", "queries")
                ));
                s.push_str(&format!("\n## Judged@{}\n\n", self.plan.judged_k));
                s.push_str(&table::markdown(&self.judged_table()?));
                s.push('\n');
                s.push_str(&self.judged_note());
                s.push_str("\n## Power\n\n");
                s.push_str(&table::markdown(&self.power_table(false)?));
                s.push_str(&format!(
                    "\nMDE: the smallest |Δ| these {} queries detect with 80% power at α = {}, two-sided paired t-test on the per-query differences with their observed standard deviation (topic-set-size design, Sakai 2016); queries for Δ: the fewest queries with that power at the observed Δ and standard deviation (`—`: Δ 0 or no difference at all).\n",
                    self.queries(),
                    stats::ALPHA
                ));
                if per_query {
                    s.push_str("\n## Per query\n\n");
                    s.push_str(&table::markdown(&self.per_query(false)?));
                }
                Ok(s)
            }
            Format::Csv => table::csv(&if per_query {
                self.per_query(true)?
            } else {
                self.summary_data()?
            }),
            Format::Json => {
                let o = &self.plan.stats;
                let mut json = serde_json::json!({
                    "baseline": self.plan.runs[0].0,
                    "runs": self.plan.runs.iter().zip(&self.evaluations).map(|((l, p), e)| serde_json::json!({
                        "label": l, "path": p.display().to_string(), "runid": e.runid,
                        "missing": e.per_query.iter().filter(|q| q.missing).map(|q| q.qid.clone()).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                    "judged_at": self.plan.judged_k,
                    "judged": table::json_rows(&self.judged_table()?),
                    "judged_reading": self.judged_reading(),
                    "qrels": self.qrels.display().to_string(),
                    "queries": self.queries(),
                    "rel_level": self.plan.eval.rel_level,
                    "complete": self.plan.complete,
                    "statistics": {
                        "seed": o.seed, "permutations": o.permutations, "resamples": o.resamples,
                        "confidence": o.confidence, "exact_max_nonzero": o.exact_max, "alpha": stats::ALPHA,
                        "method": o.describe("run", "queries"),
                    },
                    "summary": table::json_rows(&self.summary_data()?),
                    "reading": self.reading(),
                    "power_reading": self.power_reading()?,
                    "power": table::json_rows(&self.power_table(true)?),
                });
                if per_query {
                    json["per_query"] = table::json_rows(&self.per_query(true)?);
                }
                Ok(serde_json::to_string_pretty(&json)? + "\n")
            }
        }
    }
}

trait SummaryMean {
    fn summary_mean(&self, m: usize) -> f64;
}

impl SummaryMean for Evaluation {
    /// The mean over queries (also for counts, which trec_eval sums: a comparison is per query);
    /// for a geometric measure (`gm_map`, `gm_bpref`, per-query logs) trec_eval's geometric mean.
    fn summary_mean(&self, m: usize) -> f64 {
        self.measures[m].mean_shown(stats::mean(
            &self
                .per_query
                .iter()
                .map(|q| q.values[m])
                .collect::<Vec<_>>(),
        ))
    }
}
