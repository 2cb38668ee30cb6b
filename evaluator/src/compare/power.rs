//! Power of a comparison (`ranklab compare`): per measure and run, the smallest Δ the queries
//! detect with 80% power at α = 0.05 (two-sided paired t-test on the per-query differences,
//! [`crate::stats::power`]) and the queries the observed Δ would need; the sentence printed
//! after the reading.

use crate::table::{Column, Table};
use anyhow::Result;

use super::Comparison;
use crate::metrics::Measure;
use crate::stats::power::{self, Power};
use crate::stats::{self, ALPHA};
use crate::warranty::power_sentence;

impl Comparison {
    /// `[measure][run]`: power against the baseline (None for the baseline).
    pub fn power(&self) -> Result<Vec<Vec<Option<Power>>>> {
        let mut out = Vec::with_capacity(self.plan.measures.len());
        for m in 0..self.plan.measures.len() {
            let col = |r: usize| -> Vec<f64> {
                self.evaluations[r]
                    .per_query
                    .iter()
                    .map(|q| q.values[m])
                    .collect()
            };
            let base = col(0);
            let mut row = vec![None];
            for r in 1..self.evaluations.len() {
                let d = stats::differences(&base, &col(r))?;
                row.push(Some(power::analyse(&d, ALPHA)));
            }
            out.push(row);
        }
        Ok(out)
    }

    /// The power sentence.
    pub fn power_reading(&self) -> Result<String> {
        let p = self.power()?;
        let names: Vec<String> = self.plan.measures.iter().map(Measure::name).collect();
        let rows: Vec<(&str, Vec<(&str, Power)>)> = names
            .iter()
            .zip(&p)
            .map(|(n, row)| {
                (
                    n.as_str(),
                    row.iter()
                        .zip(&self.plan.runs)
                        .filter_map(|(p, (l, _))| p.map(|p| (l.as_str(), p)))
                        .collect(),
                )
            })
            .collect();
        Ok(power_sentence(
            &format!("With {} queries these runs detect", self.queries()),
            "by run: see the power table",
            "run",
            "queries",
            &rows,
        )
        .unwrap_or_default())
    }

    /// One row per (measure, run other than the baseline): Δ, sd of the differences, MDE and
    /// queries needed (`numeric`: nulls where there is none; else `—`).
    pub fn power_table(&self, numeric: bool) -> Result<Table> {
        let p = self.power()?;
        let (mut measure, mut run, mut delta, mut sd) = (vec![], vec![], vec![], vec![]);
        let (mut mde, mut need): (Vec<Option<f64>>, Vec<Option<u64>>) = (vec![], vec![]);
        for (m, row) in p.iter().enumerate() {
            for (r, x) in row.iter().enumerate() {
                let Some(x) = x else { continue };
                measure.push(self.plan.measures[m].name());
                run.push(self.plan.runs[r].0.clone());
                delta.push(x.delta);
                sd.push(x.sd);
                mde.push(x.mde);
                need.push(x.tasks_needed.map(|n| n as u64));
            }
        }
        let mut cols = vec![
            Column::new("measure", measure),
            Column::new("run", run),
            Column::new("Δ", delta),
            Column::new("sd of differences", sd),
        ];
        if numeric {
            cols.push(Column::new("mde", mde));
            cols.push(Column::new("queries_needed", need));
        } else {
            let dash = |s: Option<String>| s.unwrap_or_else(|| "—".into());
            cols.push(Column::new(
                "MDE (80% power)",
                mde.iter()
                    .map(|m| dash(m.map(|m| format!("{m:.4}"))))
                    .collect::<Vec<_>>(),
            ));
            cols.push(Column::new(
                "queries for Δ",
                need.iter()
                    .map(|n| dash(n.map(|n| stats::thousands(n as usize))))
                    .collect::<Vec<_>>(),
            ));
        }
        Table::new(cols)
    }
}
