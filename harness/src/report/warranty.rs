//! How far a report's verdict can be trusted: the warranty every table carries.
//!
//! Per configuration:
//! - **Judged@k** ([`Measure::Judged`], ir_measures' `Judged@k`: documents of the top k that have a judgment, of any
//!   grade including 0, divided by k; mean over tasks, each at its own k) and the number of
//!   unjudged documents in the top k, summed over tasks. An unjudged document counts as not
//!   relevant, so a configuration that surfaces more of them may be penalized for documents
//!   nobody looked at;
//! - **power** ([`crate::stats::power`]): the smallest Δ the suite detects with 80% power at
//!   α = 0.05, and the tasks the observed Δ would need, per Δ measure;
//! - **ties at the cutoff**: tasks where documents with equal scores straddle rank k, and each Δ
//!   measure's mean over the worst and the best order of every group of tied documents (the
//!   reported value keeps trec_eval's order: score, then document id descending).
//!
//! The one-line reading gains sentences from here: the plain-words warning when a configuration's
//! Judged@k is below the baseline's by more than [`JUDGED_MARGIN`], the "only expected documents
//! are judged" sentence, and the power sentence. Deterministic: no randomness, total orders.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::report::table::{Column, Table};
use anyhow::Result;
use ranklab_engine::corpus::Corpus;

use super::stats_section::Computed;
use super::MeasureSet;
use crate::metrics::{evaluate_ranking, Measure};
use crate::replay::{Ranked, Replay};
use crate::stats::power::{self, Power, MAX_TASKS, POWER};
use crate::stats::{self, thousands, ALPHA};
use crate::suite::Suite;

pub use ranklab_eval::warranty::{
    judged_columns, judged_warning, power_sentence, JudgedCount, JUDGED_MARGIN,
};

/// The warranty of one configuration.
#[derive(Debug, Clone)]
pub struct ConfigWarranty {
    /// Configuration name.
    pub name: String,
    /// Mean Judged@k over tasks.
    pub judged: f64,
    /// Unjudged documents in the top k, summed over tasks.
    pub unjudged: usize,
    /// Tasks where documents with equal scores straddle the cutoff k.
    pub tie_tasks: usize,
    /// Per measure of the set: the mean over tasks under the worst and the best order of ties.
    pub tie_range: Vec<(f64, f64)>,
    /// Per measure of the set: power against the baseline (None on the baseline's row).
    pub power: Vec<Option<Power>>,
}

/// The warranty of one report.
#[derive(Debug, Clone)]
pub struct Warranty {
    /// The suite's cutoff (column names; each task uses its own k).
    pub k: usize,
    /// Tasks.
    pub tasks: usize,
    /// Index of the baseline in `configs`.
    pub baseline: usize,
    /// Per configuration, replay order.
    pub configs: Vec<ConfigWarranty>,
    /// Measure display names, the set's order.
    pub measures: Vec<String>,
    /// Indices of the measures with Δ columns.
    pub delta_measures: Vec<usize>,
    /// True when every judgment is a relevant one (grade >= 1): nothing was judged non-relevant.
    pub only_relevant_judged: bool,
    /// `ranklab pool <dir>` when the suite is a `tasks/<suite>` directory.
    pub pool_command: Option<String>,
}

/// Ranked lists reordered inside every group of equal scores: relevant first (grade descending)
/// for the best order, last for the worst; otherwise the original order.
fn tie_order<'a>(
    ids: &[&'a str],
    scores: &[f32],
    grade: &dyn Fn(&str) -> i32,
    best: bool,
) -> Vec<&'a str> {
    let mut out = Vec::with_capacity(ids.len());
    let mut i = 0;
    while i < ids.len() {
        let mut j = i + 1;
        while j < ids.len() && scores[j] == scores[i] {
            j += 1;
        }
        let mut group: Vec<&str> = ids[i..j].to_vec();
        // Stable: equal grades keep the ranking's order.
        if best {
            group.sort_by_key(|id| std::cmp::Reverse(grade(id)));
        } else {
            group.sort_by_key(|id| grade(id));
        }
        out.extend(group);
        i = j;
    }
    out
}

/// True when a group of equal scores holds documents of different grades: only then does
/// [`tie_order`] change the ranking.
fn mixed_ties(ids: &[&str], scores: &[f32], grade: &dyn Fn(&str) -> i32) -> bool {
    scores
        .windows(2)
        .zip(ids.windows(2))
        .any(|(s, i)| s[0] == s[1] && grade(i[0]) != grade(i[1]))
}

/// True when documents with equal scores sit on both sides of rank `k`.
pub fn tie_straddles(ranked: &[Ranked], k: usize) -> bool {
    k >= 1 && ranked.len() > k && ranked[k - 1].score == ranked[k].score
}

/// One task's share of a configuration's warranty.
struct TaskShare {
    judged: f64,
    unjudged: usize,
    tie: bool,
    worst: Vec<f64>,
    best: Vec<f64>,
}

fn task_share(
    corpus: &Corpus,
    set: &MeasureSet,
    task: &crate::suite::Task,
    ranked: &[Ranked],
    judgments: &HashMap<String, i32>,
) -> TaskShare {
    let ids: Vec<&str> = ranked.iter().map(|r| corpus.id(r.doc)).collect();
    // i13's Judged@k (metrics/unjudged.rs): judged documents of the top k / k.
    let judged = evaluate_ranking(&[Measure::Judged(task.k)], &ids, judgments, 1)[0];
    let j = (judged * task.k as f64).round() as usize;
    let scores: Vec<f32> = ranked.iter().map(|r| r.score).collect();
    let grade = |id: &str| task.expected.get(id).copied().unwrap_or(0);
    let measures = set.for_task(task);
    // When no group of equal scores holds documents of different grades, both orders are the
    // ranking itself (the sorts are stable): evaluated once.
    let (worst, best) = if mixed_ties(&ids, &scores, &grade) {
        let worst = tie_order(&ids, &scores, &grade, false);
        let best = tie_order(&ids, &scores, &grade, true);
        (
            evaluate_ranking(&measures, &worst, judgments, 1),
            evaluate_ranking(&measures, &best, judgments, 1),
        )
    } else {
        let v = evaluate_ranking(&measures, &ids, judgments, 1);
        (v.clone(), v)
    };
    TaskShare {
        judged,
        unjudged: ids.len().min(task.k) - j,
        tie: tie_straddles(ranked, task.k),
        worst,
        best,
    }
}

/// Computes the warranty of a report from its replay and statistics.
pub fn compute(
    corpus: &Corpus,
    suite: &Suite,
    replay: &Replay,
    set: &MeasureSet,
    c: &Computed,
) -> Result<Warranty> {
    use rayon::prelude::*;
    let judgments: Vec<HashMap<String, i32>> = suite
        .tasks
        .iter()
        .map(|t| t.expected.iter().map(|(k, v)| (k.clone(), *v)).collect())
        .collect();
    let mut configs = Vec::with_capacity(replay.runs.len());
    for (ci, run) in replay.runs.iter().enumerate() {
        // Tasks in parallel; their shares are summed in task order (the same bytes as one
        // thread).
        let shares: Vec<TaskShare> = suite
            .tasks
            .par_iter()
            .zip(&run.per_task)
            .zip(&judgments)
            .map(|((task, ranked), judgments)| task_share(corpus, set, task, ranked, judgments))
            .collect();
        let mut judged_sum = 0.0;
        let mut unjudged = 0;
        let mut tie_tasks = 0;
        let mut worst = vec![0.0; c.measures.len()];
        let mut best = vec![0.0; c.measures.len()];
        for share in shares {
            judged_sum += share.judged;
            unjudged += share.unjudged;
            tie_tasks += usize::from(share.tie);
            for (acc, values) in [(&mut worst, &share.worst), (&mut best, &share.best)] {
                for (a, v) in acc.iter_mut().zip(values) {
                    *a += v;
                }
            }
        }
        let n = suite.tasks.len().max(1) as f64;
        let power = (0..c.measures.len())
            .into_par_iter()
            .map(|m| {
                if ci == c.baseline {
                    return Ok(None);
                }
                let diffs = stats::differences(&c.column(c.baseline, m), &c.column(ci, m))?;
                Ok(Some(power::analyse(&diffs, ALPHA)))
            })
            .collect::<Result<Vec<_>, stats::StatsError>>()?;
        configs.push(ConfigWarranty {
            name: run.config.name.clone(),
            judged: judged_sum / n,
            unjudged,
            tie_tasks,
            tie_range: worst
                .iter()
                .zip(&best)
                .map(|(w, b)| (w / n, b / n))
                .collect(),
            power,
        });
    }
    let only_relevant_judged = suite
        .tasks
        .iter()
        .all(|t| t.expected.values().all(|&g| g >= 1));
    let pool_command = (suite.path.file_name().is_some_and(|f| f == "suite.yaml"))
        .then(|| {
            suite
                .path
                .parent()
                .map(|d| format!("ranklab pool {}", super::shown(d)))
        })
        .flatten();
    Ok(Warranty {
        k: suite.k,
        tasks: suite.tasks.len(),
        baseline: c.baseline,
        configs,
        measures: c.measures.clone(),
        delta_measures: c.delta_measures.clone(),
        only_relevant_judged,
        pool_command,
    })
}

fn mde_cell(p: &Option<Power>) -> String {
    match p {
        None => "—".into(),
        Some(p) => match p.mde {
            Some(m) => format!("{m:.4}"),
            None => "— (no difference)".into(),
        },
    }
}

fn tasks_cell(p: &Option<Power>) -> String {
    match p {
        None => "—".into(),
        Some(p) if p.delta.abs() <= stats::TIE_EPSILON || p.mde.is_none() => "— (Δ 0)".into(),
        Some(p) => match p.tasks_needed {
            Some(n) => thousands(n),
            None => format!("> {}", thousands(MAX_TASKS)),
        },
    }
}

impl Warranty {
    /// True when some task of some configuration has a tie straddling its cutoff.
    pub fn any_tie(&self) -> bool {
        self.configs.iter().any(|c| c.tie_tasks > 0)
    }

    fn base(&self) -> &ConfigWarranty {
        &self.configs[self.baseline]
    }

    /// The columns added to the metrics table: `Judged@k` and `unjudged@k`.
    pub fn columns(&self) -> Vec<Column> {
        judged_columns(self.k, self.configs.iter().map(|c| (c.judged, c.unjudged))).to_vec()
    }

    /// The sentences the reading gains: judgments, then power.
    pub fn reading(&self) -> String {
        let mut out = Vec::new();
        let k = self.k;
        let base = self.base();
        if self.only_relevant_judged {
            let pool = match &self.pool_command {
                Some(cmd) => format!("; run `{cmd}` to collect them for judging"),
                None => String::new(),
            };
            out.push(format!(
                "Only expected documents are judged: {:.0}% of every top {k} is unjudged (baseline `{}`), and every unjudged document counts as not relevant{pool}.",
                (1.0 - base.judged) * 100.0,
                base.name
            ));
        }
        let act = match &self.pool_command {
            Some(cmd) => format!(" — run `{cmd}`"),
            None => String::new(),
        };
        fn count<'a>(c: &'a ConfigWarranty, delta_measures: &[usize]) -> JudgedCount<'a> {
            JudgedCount {
                name: &c.name,
                judged: c.judged,
                unjudged: c.unjudged,
                loses: delta_measures
                    .iter()
                    .any(|&m| c.power[m].is_some_and(|p| p.delta < -stats::TIE_EPSILON)),
            }
        }
        let others: Vec<JudgedCount<'_>> = self
            .configs
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != self.baseline)
            .map(|(_, c)| count(c, &self.delta_measures))
            .collect();
        let base = count(base, &self.delta_measures);
        if let Some(w) = judged_warning(&base, &others, k, self.tasks, "tasks", &act) {
            out.push(w);
        }
        if let Some(p) = self.power_sentence() {
            out.push(p);
        }
        out.join(" ")
    }

    fn power_sentence(&self) -> Option<String> {
        if self.configs.len() < 2 {
            return None;
        }
        let rows: Vec<(&str, Vec<(&str, Power)>)> = self
            .delta_measures
            .iter()
            .map(|&m| {
                (
                    self.measures[m].as_str(),
                    self.configs
                        .iter()
                        .filter_map(|c| c.power[m].map(|p| (c.name.as_str(), p)))
                        .collect(),
                )
            })
            .collect();
        power_sentence(
            &format!("With {} tasks this suite detects", self.tasks),
            "by configuration: see the warranty table",
            "configuration",
            "tasks",
            &rows,
        )
    }

    /// The warranty table: per configuration, Judged@k, unjudged, and per Δ measure the minimum
    /// detectable effect and the tasks the observed Δ needs; tie columns when any tie straddles
    /// a cutoff. `numeric` gives numbers (null where there is none) for CSV/JSON.
    pub fn table(&self, numeric: bool) -> Result<Table> {
        let mut cols = vec![Column::new(
            "configuration",
            self.configs
                .iter()
                .map(|c| c.name.clone())
                .collect::<Vec<_>>(),
        )];
        cols.extend(self.columns());
        for &m in &self.delta_measures {
            let name = &self.measures[m];
            if numeric {
                cols.push(Column::new(
                    format!("mde {name}"),
                    self.configs
                        .iter()
                        .map(|c| c.power[m].and_then(|p| p.mde))
                        .collect::<Vec<Option<f64>>>(),
                ));
                cols.push(Column::new(
                    format!("tasks needed {name}"),
                    self.configs
                        .iter()
                        .map(|c| c.power[m].and_then(|p| p.tasks_needed.map(|n| n as u64)))
                        .collect::<Vec<Option<u64>>>(),
                ));
            } else {
                cols.push(Column::new(
                    format!("MDE Δ {name}"),
                    self.configs
                        .iter()
                        .map(|c| mde_cell(&c.power[m]))
                        .collect::<Vec<_>>(),
                ));
                cols.push(Column::new(
                    format!("tasks for Δ {name}"),
                    self.configs
                        .iter()
                        .map(|c| tasks_cell(&c.power[m]))
                        .collect::<Vec<_>>(),
                ));
            }
        }
        if self.any_tie() {
            cols.push(Column::new(
                "tasks with a tie at k",
                self.configs
                    .iter()
                    .map(|c| c.tie_tasks as u32)
                    .collect::<Vec<u32>>(),
            ));
            for &m in &self.delta_measures {
                let name = &self.measures[m];
                if numeric {
                    cols.push(Column::new(
                        format!("{name} worst tie order"),
                        self.configs
                            .iter()
                            .map(|c| c.tie_range[m].0)
                            .collect::<Vec<f64>>(),
                    ));
                    cols.push(Column::new(
                        format!("{name} best tie order"),
                        self.configs
                            .iter()
                            .map(|c| c.tie_range[m].1)
                            .collect::<Vec<f64>>(),
                    ));
                } else {
                    cols.push(Column::new(
                        format!("{name} over tie orders"),
                        self.configs
                            .iter()
                            .map(|c| format!("{:.4}..{:.4}", c.tie_range[m].0, c.tie_range[m].1))
                            .collect::<Vec<_>>(),
                    ));
                }
            }
        }
        Table::new(cols)
    }

    /// The Markdown section: heading, table, how it was computed.
    pub fn markdown(&self) -> Result<String> {
        let k = self.k;
        let mut md = String::from("## How far the verdict can be trusted\n\n");
        md.push_str(&super::table::markdown(&self.table(false)?));
        let judged = if self.only_relevant_judged {
            " Only expected (relevant) documents are judged in this suite; a judged non-relevant document (grade 0) counts as judged."
        } else {
            " A judged non-relevant document (grade 0) counts as judged."
        };
        let _ = writeln!(
            md,
            "\nJudged@{k}: documents of the top k with a judgment, divided by k (ir_measures' Judged@k), mean over tasks at each task's k; unjudged@{k}: documents of the top k without one, summed over tasks; an unjudged document counts as not relevant.{judged} \
             MDE: the smallest |Δ| the suite's {} tasks detect with {:.0}% power at α = {ALPHA}, two-sided paired t-test on the per-task differences with their observed standard deviation (topic-set-size design, Sakai 2016); tasks for Δ: the fewest tasks with that power at the observed Δ and standard deviation (`— (Δ 0)`: nothing to detect).",
            self.tasks,
            POWER * 100.0
        );
        if self.any_tie() {
            let _ = writeln!(
                md,
                "\nTies: tasks whose documents at ranks k and k+1 have equal scores; the range is each measure's mean over the worst and the best order of every group of equal scores (relevant documents last, then first). The table above reports trec_eval's order (score, then document id descending)."
            );
        }
        md.push('\n');
        Ok(md)
    }

    /// Rows for the report's JSON.
    pub fn json(&self) -> Result<serde_json::Value> {
        Ok(super::table::json_rows(&self.table(true)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tie_orders_put_relevant_first_or_last_inside_equal_scores_only() {
        let ids = ["a", "b", "c", "d"];
        let scores = [3.0, 2.0, 2.0, 1.0];
        let grade = |id: &str| i32::from(id == "c");
        assert_eq!(tie_order(&ids, &scores, &grade, true), ["a", "c", "b", "d"]);
        assert_eq!(
            tie_order(&ids, &scores, &grade, false),
            ["a", "b", "c", "d"]
        );
    }

    /// The shortcut of `task_share`: without mixed ties both tie orders are the ranking itself;
    /// with them, some rankings change (both halves occur among 2,000 random rankings).
    #[test]
    fn without_mixed_ties_both_tie_orders_are_the_ranking() {
        let names: Vec<String> = (0..12).map(|i| format!("d{i}")).collect();
        let mut x: u64 = 7;
        let mut next = |m: u64| {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let (mut unchanged, mut changed) = (0, 0);
        for _ in 0..2000 {
            let n = 1 + next(12) as usize;
            let ids: Vec<&str> = names[..n].iter().map(String::as_str).collect();
            let mut scores: Vec<f32> = (0..n).map(|_| next(4) as f32).collect();
            scores.sort_by(|a, b| b.total_cmp(a));
            let grades: Vec<i32> = (0..n).map(|_| next(3) as i32).collect();
            let grade = |id: &str| grades[id[1..].parse::<usize>().unwrap()];
            let (w, b) = (
                tie_order(&ids, &scores, &grade, false),
                tie_order(&ids, &scores, &grade, true),
            );
            if mixed_ties(&ids, &scores, &grade) {
                changed += usize::from(w != ids || b != ids);
                assert!(w != b, "{ids:?} {scores:?} {grades:?}");
            } else {
                assert_eq!((&w, &b), (&ids, &ids), "{scores:?} {grades:?}");
                unchanged += 1;
            }
        }
        assert!(unchanged > 100 && changed > 100, "{unchanged} {changed}");
    }
}
