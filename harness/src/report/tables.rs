//! The metrics table (configuration x measure) and the per-task tables (rank of the first
//! expected document per configuration).

use anyhow::Result;
use ranklab_engine::corpus::Corpus;

use super::table::{Column, Table};
use super::{first_relevant_rank, per_task_values, MeasureSet};
use crate::replay::Replay;
use crate::suite::{Experiments, Suite};

/// The metrics table: one row per configuration, the mean of each measure over tasks.
pub fn metrics_table(
    corpus: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
) -> Result<Table> {
    let names = set.names(suite.k);
    let mut configs = Vec::new();
    let mut cols: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for run in &replay.runs {
        let mark = if run.config.name == ex.baseline() {
            " (baseline)"
        } else {
            ""
        };
        configs.push(format!("{}{mark}", run.config.name));
        let values = per_task_values(corpus, suite, run, set);
        for (m, col) in cols.iter_mut().enumerate() {
            let sum: f64 = values.iter().map(|v| v[m]).sum();
            col.push(sum / values.len().max(1) as f64);
        }
    }
    let mut columns = vec![Column::new("configuration", configs)];
    for (name, col) in names.iter().zip(cols) {
        columns.push(Column::new(name.as_str(), col));
    }
    Table::new(columns)
}

/// `[configuration][task]`: rank of the first expected document (None: not retrieved).
pub type Ranks = Vec<Vec<Option<usize>>>;
/// `[configuration][task]`: the document ranked first when the expected one was not.
pub type Firsts = Vec<Vec<Option<String>>>;

/// Per configuration (replay order), per task: the rank of the first expected document (None:
/// not retrieved) and, when that rank is not 1, the document that ranked first (None when the
/// run is empty).
pub fn first_ranks(corpus: &Corpus, suite: &Suite, replay: &Replay) -> (Ranks, Firsts) {
    let mut ranks = Vec::new();
    let mut firsts = Vec::new();
    for run in &replay.runs {
        let (r, f): (Vec<_>, Vec<_>) = suite
            .tasks
            .iter()
            .zip(&run.per_task)
            .map(|(t, ranked)| {
                let rank = first_relevant_rank(corpus, t, ranked);
                let first = (rank != Some(1))
                    .then(|| ranked.first().map(|x| corpus.id(x.doc).to_string()))
                    .flatten();
                (rank, first)
            })
            .unzip();
        ranks.push(r);
        firsts.push(f);
    }
    (ranks, firsts)
}

fn task_columns(suite: &Suite) -> Vec<Column> {
    vec![
        Column::new(
            "task",
            suite.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "expected",
            suite
                .tasks
                .iter()
                .map(|t| {
                    t.expected
                        .iter()
                        .filter(|(_, &g)| g >= 1)
                        .map(|(d, _)| d.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect::<Vec<_>>(),
        ),
    ]
}

/// The per-task table of the CSV and JSON files: task, expected, then per configuration the
/// rank of the first expected document (a number, empty/null when not retrieved), then per
/// configuration `<configuration> first`: the document ranked first when the expected one
/// was not (empty/null otherwise).
pub fn tasks_table(corpus: &Corpus, suite: &Suite, replay: &Replay) -> Result<Table> {
    let (ranks, firsts) = first_ranks(corpus, suite, replay);
    let mut columns = task_columns(suite);
    for (run, r) in replay.runs.iter().zip(&ranks) {
        let r: Vec<Option<u64>> = r.iter().map(|x| x.map(|x| x as u64)).collect();
        columns.push(Column::new(run.config.name.as_str(), r));
    }
    for (run, f) in replay.runs.iter().zip(firsts) {
        columns.push(Column::new(format!("{} first", run.config.name), f));
    }
    Table::new(columns)
}

/// The per-task table of the Markdown report: the rank of the first expected document per
/// configuration, followed by the document that ranked first when it was not the expected one:
/// `4 (pay-retries-fixed)`.
pub fn tasks_markdown_table(corpus: &Corpus, suite: &Suite, replay: &Replay) -> Result<Table> {
    let (ranks, firsts) = first_ranks(corpus, suite, replay);
    let mut columns = task_columns(suite);
    for ((run, r), f) in replay.runs.iter().zip(&ranks).zip(&firsts) {
        let cells: Vec<String> = r
            .iter()
            .zip(f)
            .map(|(rank, first)| {
                let rank = rank.map_or("-".to_string(), |x| x.to_string());
                match first {
                    Some(d) => format!("{rank} ({d})"),
                    None => rank,
                }
            })
            .collect();
        columns.push(Column::new(run.config.name.as_str(), cells));
    }
    Table::new(columns)
}
