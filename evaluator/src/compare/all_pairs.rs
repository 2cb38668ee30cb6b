//! `ranklab compare --all-pairs`: every pair of runs, not only each against the first.
//!
//! For runs `r_0 .. r_{n-1}` and each measure, every pair `(r_i, r_j)` with `i < j` is compared
//! query by query with the statistics of [`crate::stats::paired`] (Δ = `r_j − r_i`, its paired
//! bootstrap CI, the two-sided randomization test's p, win/tie/loss counts), and the p-values are
//! Holm-adjusted over all the comparisons of the output: every pair under every measure
//! (`n(n−1)/2 × measures` tests, one family), so that no pair is called different by chance of
//! having been one of many. Pairs are listed in run order (`(0,1), (0,2), .., (1,2), ..`), measures
//! in the order given: a total order, the same bytes for the same inputs and seed.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use serde_json::json;

use super::{Comparison, Format};
use crate::stats::{self, format_p, format_signed, holm, Paired};

/// One comparison: runs `a` < `b` (indices), measure `m`.
pub struct PairRow {
    /// Index of the first run.
    pub a: usize,
    /// Index of the second run.
    pub b: usize,
    /// Index of the measure.
    pub m: usize,
    /// The statistics, `p_holm` adjusted over every row.
    pub paired: Paired,
}

/// Every pair of runs under every measure, Holm-adjusted over all of them.
pub fn all_pairs(c: &Comparison) -> Result<Vec<PairRow>> {
    let n = c.evaluations.len();
    let mut rows = Vec::new();
    for m in 0..c.plan.measures.len() {
        let col = |r: usize| -> Vec<f64> {
            c.evaluations[r]
                .per_query
                .iter()
                .map(|q| q.values[m])
                .collect()
        };
        for a in 0..n {
            for b in a + 1..n {
                let paired = stats::paired(&col(a), &col(b), &c.plan.stats)
                    .with_context(|| format!("statistics of {}", c.plan.measures[m].name()))?;
                rows.push(PairRow { a, b, m, paired });
            }
        }
    }
    let adjusted = holm(&rows.iter().map(|r| r.paired.test.p).collect::<Vec<_>>());
    for (r, p) in rows.iter_mut().zip(adjusted) {
        r.paired.p_holm = p;
    }
    Ok(rows)
}

/// The all-pairs output in `format`.
pub fn render(c: &Comparison, format: Format) -> Result<String> {
    let rows = all_pairs(c)?;
    let label = |r: usize| c.plan.runs[r].0.as_str();
    let measure = |m: usize| c.plan.measures[m].name();
    Ok(match format {
        Format::Json => {
            let list: Vec<serde_json::Value> = rows
                .iter()
                .map(|r| {
                    let p = &r.paired;
                    json!({
                        "a": label(r.a), "b": label(r.b), "measure": measure(r.m),
                        "mean_a": c.plan.measures[r.m].mean_shown(p.baseline_mean),
                        "mean_b": c.plan.measures[r.m].mean_shown(p.mean), "delta": p.delta,
                        "ci": [p.ci.lo, p.ci.hi], "p": p.test.p, "p_holm": p.p_holm,
                        "wins": p.wins, "ties": p.ties, "losses": p.losses,
                    })
                })
                .collect();
            serde_json::to_string_pretty(&json!({
                "queries": c.queries(),
                "comparisons": rows.len(),
                "seed": c.plan.stats.seed,
                "pairs": list,
            }))? + "\n"
        }
        Format::Csv => {
            let mut out = String::from(
                "measure,a,b,mean_a,mean_b,delta,ci_lo,ci_hi,p,p_holm,wins,ties,losses\n",
            );
            for r in &rows {
                let p = &r.paired;
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                    measure(r.m),
                    label(r.a),
                    label(r.b),
                    c.plan.measures[r.m].mean_shown(p.baseline_mean),
                    c.plan.measures[r.m].mean_shown(p.mean),
                    p.delta,
                    p.ci.lo,
                    p.ci.hi,
                    p.test.p,
                    p.p_holm,
                    p.wins,
                    p.ties,
                    p.losses
                );
            }
            out
        }
        Format::Md => markdown(c, &rows),
    })
}

fn markdown(c: &Comparison, rows: &[PairRow]) -> String {
    let label = |r: usize| crate::table::md_cell(&c.plan.runs[r].0);
    let mut md = format!(
        "Every pair of {} runs over {} queries: {} comparisons (pairs × measures), Holm-adjusted over all of them. Δ = b − a.\n\n| measure | a | b | mean a | mean b | Δ [95% CI] | p | p (Holm) | W/T/L |\n|---|---|---|---:|---:|---|---:|---:|---|\n",
        c.evaluations.len(),
        c.queries(),
        rows.len()
    );
    for r in rows {
        let p = &r.paired;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.4} | {:.4} | {} [{}, {}] | {} | {} | {}/{}/{} |",
            c.plan.measures[r.m].name(),
            label(r.a),
            label(r.b),
            c.plan.measures[r.m].mean_shown(p.baseline_mean),
            c.plan.measures[r.m].mean_shown(p.mean),
            format_signed(p.delta),
            format_signed(p.ci.lo),
            format_signed(p.ci.hi),
            format_p(p.test.p),
            format_p(p.p_holm),
            p.wins,
            p.ties,
            p.losses
        );
    }
    let differ: Vec<String> = rows
        .iter()
        .filter(|r| r.paired.significant(stats::ALPHA))
        .map(|r| {
            format!(
                "{} vs {} on {}",
                c.plan.runs[r.a].0,
                c.plan.runs[r.b].0,
                c.plan.measures[r.m].name()
            )
        })
        .collect();
    let _ = writeln!(
        md,
        "\n{}\n\nSeed {}.",
        if differ.is_empty() {
            "No pair differs detectably (Holm-adjusted p < 0.05).".to_string()
        } else {
            format!(
                "Detectably different (Holm-adjusted p < 0.05): {}.",
                differ.join("; ")
            )
        },
        c.plan.stats.seed
    );
    md
}

#[cfg(test)]
mod tests {
    use super::super::{compare, Plan};
    use super::*;

    /// Three runs over four queries, one relevant document each (`d1`), MRR by hand:
    /// run x ranks it 1st everywhere (MRR 1, 1, 1, 1), y 2nd everywhere (0.5 ×4), z 1st on q1,q2
    /// and 4th on q3,q4 (1, 1, 0.25, 0.25). Pairs in run order (x,y), (x,z), (y,z) with
    /// Δ = b − a: −0.5, −0.375, (0.5+0.5−0.25−0.25)/4 = +0.125. Holm (independent formula
    /// below): sort the raw p ascending, multiply the i-th (0-based) by (3 − i), running max,
    /// capped at 1.
    #[test]
    fn every_pair_in_run_order_with_holm_over_all_of_them() {
        let dir = tempfile::tempdir().unwrap();
        let qrels = dir.path().join("qrels");
        let mut q = String::new();
        for i in 1..=4 {
            q.push_str(&format!("q{i} 0 d1 1\n"));
        }
        std::fs::write(&qrels, q).unwrap();
        let run = |name: &str, first_at: [usize; 4]| {
            let mut s = String::new();
            for (i, &at) in first_at.iter().enumerate() {
                for r in 1..=4 {
                    let doc = if r == at {
                        "d1".to_string()
                    } else {
                        format!("x{r}")
                    };
                    s.push_str(&format!("q{} Q0 {doc} {r} {} {name}\n", i + 1, 10 - r));
                }
            }
            let p = dir.path().join(format!("{name}.trec"));
            std::fs::write(&p, s).unwrap();
            p
        };
        let runs = vec![run("x", [1; 4]), run("y", [2; 4]), run("z", [1, 1, 4, 4])];
        let plan = Plan::new(&runs, &["recip_rank".to_string()], 1, false, 42, 10).unwrap();
        let c = compare(plan, &qrels).unwrap();
        let rows = all_pairs(&c).unwrap();
        let pairs: Vec<(usize, usize)> = rows.iter().map(|r| (r.a, r.b)).collect();
        assert_eq!(pairs, [(0, 1), (0, 2), (1, 2)]);
        let deltas: Vec<f64> = rows.iter().map(|r| r.paired.delta).collect();
        for (d, want) in deltas.iter().zip([-0.5, -0.375, 0.125]) {
            assert!((d - want).abs() < 1e-12, "{deltas:?}");
        }
        let raw: Vec<f64> = rows.iter().map(|r| r.paired.test.p).collect();
        let mut order: Vec<usize> = (0..raw.len()).collect();
        order.sort_by(|&i, &j| raw[i].total_cmp(&raw[j]));
        let mut want = vec![0.0; raw.len()];
        let mut running: f64 = 0.0;
        for (rank, &i) in order.iter().enumerate() {
            running = running.max((raw[i] * (raw.len() - rank) as f64).min(1.0));
            want[i] = running;
        }
        for (r, w) in rows.iter().zip(want) {
            assert!((r.paired.p_holm - w).abs() < 1e-12);
        }
        let md = render(&c, Format::Md).unwrap();
        assert!(md.contains("3 comparisons"), "{md}");
    }
}
