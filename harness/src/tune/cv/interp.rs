//! Tuning a rerank stage's `interpolate: α` (`rerank.interpolate` in a tuning file's space).
//!
//! One replay gives, per task, the configuration's first-stage list (the configuration without
//! its rerank stage) and its reranker's scores of the shortlist (the configuration with a plain
//! rerank stage: the same pairs, from the same cache or recordings). Every candidate α then
//! orders each task's shortlist by `ranklab_engine::fusion::interpolate` (the function the
//! replay uses), the rest of the list below it unchanged, without scoring a pair again. The
//! cross-validation, the comparison with the shipped configuration and the report are those of
//! a weighted-fusion tuning ([`super::session`]).

use std::collections::HashMap;

use anyhow::{bail, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::fusion::interpolate::interpolate;
use ranklab_engine::fusion::weighted::Normalize;
use ranklab_engine::ranking::Hit;

use super::file::{Plan, Value};
use super::lists::Scorer;
use super::session::{replay_these, write_reports, Outcome, Request, Setting};
use super::{cross_validate, folds, render};
use crate::replay::{as_hits, ConfigRun};
use crate::stats::{self, power};
use crate::suite::{Configuration, RerankSpec};

/// One task's shortlist and what lies below it.
struct Task {
    /// The first-stage hits of the shortlist, in first-stage order.
    head: Vec<Hit>,
    /// The reranker's score of each of them.
    logits: Vec<f32>,
    /// The first-stage hits below the shortlist.
    tail: Vec<Hit>,
}

impl Task {
    /// The task's ranking under `alpha`.
    fn ranking(&self, alpha: f64, how: Normalize, id_rank: &[u32]) -> Vec<Hit> {
        let mut out: Vec<Hit> = interpolate(&self.head, &self.logits, alpha, how, id_rank)
            .into_iter()
            .map(|i| i.hit)
            .collect();
        out.extend(self.tail.iter().cloned());
        out
    }
}

/// The tasks of one replay: `first` the first stage, `reranked` the plain rerank.
fn tasks(first: &ConfigRun, reranked: &ConfigRun, width: usize) -> Result<Vec<Task>> {
    first
        .per_task
        .iter()
        .zip(&reranked.per_task)
        .map(|(f, r)| {
            let hits = as_hits(f);
            let w = width.min(hits.len());
            let logit: HashMap<usize, f32> = r
                .iter()
                .filter_map(|x| x.rerank_score.map(|s| (x.doc, s)))
                .collect();
            let logits = hits[..w]
                .iter()
                .map(|h| logit.get(&h.doc).copied())
                .collect::<Option<Vec<f32>>>();
            let Some(logits) = logits else {
                bail!("internal error: a shortlisted document has no reranker score; please report it");
            };
            Ok(Task {
                head: hits[..w].to_vec(),
                logits,
                tail: hits[w..].to_vec(),
            })
        })
        .collect()
}

/// The configuration's rerank stage, or why it cannot be tuned here.
fn stage_of(c: &Configuration, at: &str) -> Result<RerankSpec> {
    match &c.rerank {
        Some(r) => Ok(r.clone()),
        None => bail!("{at}: configuration {:?} has no rerank stage; `rerank.interpolate` tunes the weight of a reranker (write `rerank: {{ model: ..., shortlist: N, interpolate: 0.5 }}`)", c.name),
    }
}

/// The three configurations replayed: the first stage alone, the plain rerank, as written.
fn replayed(c: &Configuration, r: &RerankSpec) -> Vec<Configuration> {
    let first = Configuration {
        name: format!("{}~first", c.name),
        rerank: None,
        ..c.clone()
    };
    let plain = Configuration {
        name: format!("{}~rerank", c.name),
        rerank: Some(RerankSpec {
            interpolate: None,
            ..r.clone()
        }),
        ..c.clone()
    };
    vec![first, plain, c.clone()]
}

/// Runs a tuning of `rerank.interpolate`; the Markdown report and the outcome.
pub(super) fn tune(
    req: &Request,
    plan: Plan,
    setting: Setting,
    at: &dyn Fn(&str) -> String,
) -> Result<(String, Outcome)> {
    let Setting {
        suite,
        c,
        shipped,
        measures,
        reports,
        ex,
        corpus,
    } = setting;
    let stage = stage_of(&c, &at("configuration"))?;
    let scorer = Scorer::new(&suite, &measures, &plan.file.measure, &at("measure"))?;
    let corpus = match corpus {
        Some(c) => c,
        None => suite.load_corpus()?,
    };
    let mut configurations = replayed(&c, &stage);
    if shipped.name != c.name {
        configurations.push(shipped.clone());
    }
    let runs = replay_these(req, &suite, &corpus, &c, configurations, &ex, &reports)?;
    let tasks = tasks(&runs[0], &runs[1], stage.shortlist)?;
    let how = crate::replay::interpolated::normalization(&c);
    check_fast_path(&tasks, &stage, how, &runs[2], &corpus)?;
    let alphas: Vec<f64> = plan.dims[0]
        .values
        .iter()
        .map(|v| match v {
            Value::Number(x) => *x,
            Value::Word(_) => unreachable!("checked when the file was read"),
        })
        .collect();
    let n = tasks.len();
    let values: Vec<f64> = alphas
        .iter()
        .flat_map(|&a| {
            tasks
                .iter()
                .enumerate()
                .map(|(t, task)| scorer.value(t, &task.ranking(a, how, corpus.id_rank()), &corpus))
                .collect::<Vec<_>>()
        })
        .collect();
    let folds = folds::split(n, plan.file.folds, plan.file.seed);
    let cv = cross_validate(&[alphas.len()], &values, n, &folds, plan.file.epsilon);
    let per = |r: &ConfigRun| -> Vec<f64> {
        (0..n)
            .map(|t| scorer.value_ranked(t, &r.per_task[t], &corpus))
            .collect()
    };
    let written = per(&runs[2]);
    let shipped_values = per(runs.get(3).unwrap_or(&runs[2]));
    let paired = stats::paired(&shipped_values, &cv.out_of_fold, &stats::Options::default())?;
    let diffs = stats::differences(&shipped_values, &cv.out_of_fold)?;
    let outcome = Outcome {
        suite: suite.name.clone(),
        configuration: c.name.clone(),
        tasks: suite.tasks.iter().map(|t| t.id.clone()).collect(),
        cv,
        folds,
        written,
        shipped: (shipped.name.clone(), shipped_values),
        paired,
        power: power::analyse(&diffs, stats::ALPHA),
        plan,
        models: Vec::new(),
    };
    let as_written = describe(&stage, how);
    let md = render::markdown(&outcome, &as_written);
    write_reports(
        req,
        &outcome,
        &md,
        &render::json(&outcome, &as_written),
        &reports,
    )?;
    if req.write {
        super::write::check_detectable(&outcome)?;
        let path = super::write::interpolated(&outcome, &c, &ex, alphas[outcome.cv.all])?;
        eprintln!("wrote {}", path.display());
    }
    Ok((md, outcome))
}

/// `ms-marco-MiniLM-L-12-v2 @20, interpolate 0.5 (minmax)`.
fn describe(r: &RerankSpec, how: Normalize) -> String {
    match r.interpolate {
        Some(a) => format!(
            "{} @{}, interpolate {a} ({})",
            r.model_key(),
            r.shortlist,
            how.name()
        ),
        None => format!("{} @{}, not interpolated", r.model_key(), r.shortlist),
    }
}

/// Under the configuration's own α, the candidates' ranking must be the replay's, task by task
/// (documents and scores); a difference is an internal error.
fn check_fast_path(
    tasks: &[Task],
    stage: &RerankSpec,
    how: Normalize,
    run: &ConfigRun,
    corpus: &Corpus,
) -> Result<()> {
    let Some(a) = stage.interpolate else {
        return Ok(());
    };
    for (t, (task, ranked)) in tasks.iter().zip(&run.per_task).enumerate() {
        if task.ranking(a, how, corpus.id_rank()) != as_hits(ranked) {
            bail!("internal error: the tuning's fast path ranks task {} differently from the replay; please report it", t + 1);
        }
    }
    Ok(())
}
