//! The evidence an ADR needs below its table: per-task rank movements against the baseline,
//! the rerank score distributions (all shortlisted pairs, relevant vs not; each model's own
//! kind of score), and the identities of the models that produced the numbers.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ranklab_engine::corpus::Corpus;

use super::first_relevant_rank;
use crate::replay::{ConfigRun, Replay};
use crate::suite::{Experiments, LlmApi, RerankSpec, Scorer, Suite};

/// Per-task movements of every configuration against the baseline, as Markdown.
///
/// A movement is a task whose first relevant rank changed: `T12: 3 -> 4`, with the document
/// that overtook the relevant one (ranked below it, or absent, in the baseline and above it now)
/// or, for a gain, the document it overtook.
pub fn movements(corpus: &Corpus, suite: &Suite, ex: &Experiments, replay: &Replay) -> String {
    let Some(base) = replay.runs.iter().find(|r| r.config.name == ex.baseline()) else {
        return String::new();
    };
    let mut md = format!(
        "## Rank movements against the baseline `{}`\n\n",
        ex.baseline()
    );
    md.push_str(
        "First relevant rank per task, baseline -> configuration (`-` = not in the run).\n\n",
    );
    for run in replay
        .runs
        .iter()
        .filter(|r| r.config.name != base.config.name)
    {
        let lines = config_movements(corpus, suite, base, run);
        let _ = writeln!(
            md,
            "- **{}**: {}",
            run.config.name,
            if lines.is_empty() {
                "no task moved".to_string()
            } else {
                lines.join("; ")
            }
        );
    }
    md.push('\n');
    md
}

fn config_movements(
    corpus: &Corpus,
    suite: &Suite,
    base: &ConfigRun,
    run: &ConfigRun,
) -> Vec<String> {
    let mut out = Vec::new();
    for (i, task) in suite.tasks.iter().enumerate() {
        let (b, n) = (&base.per_task[i], &run.per_task[i]);
        let (rb, rn) = (
            first_relevant_rank(corpus, task, b),
            first_relevant_rank(corpus, task, n),
        );
        if rb == rn {
            continue;
        }
        let show = |r: Option<usize>| r.map_or("-".to_string(), |x| x.to_string());
        let pos =
            |list: &[crate::replay::Ranked], doc: usize| list.iter().position(|r| r.doc == doc);
        // The relevant document that was first in the worse list.
        let worse_is_new = rn.unwrap_or(usize::MAX) > rb.unwrap_or(usize::MAX);
        let (worse, better, better_rank) = if worse_is_new { (n, b, rb) } else { (b, n, rn) };
        let rel = better_rank.map(|r| better[r - 1].doc);
        let culprit = rel.and_then(|rel_doc| {
            let limit = pos(worse, rel_doc).unwrap_or(worse.len());
            worse[..limit]
                .iter()
                .find(|x| {
                    !task.expected.contains_key(corpus.id(x.doc))
                        && pos(better, x.doc).is_none_or(|p| Some(p) > pos(better, rel_doc))
                })
                .map(|x| corpus.id(x.doc).to_string())
        });
        let why = match (culprit, worse_is_new) {
            (Some(c), true) => format!(" ({c} overtook it)"),
            (Some(c), false) => format!(" (it overtook {c})"),
            (None, _) => String::new(),
        };
        out.push(format!("{}: {} -> {}{}", task.id, show(rb), show(rn), why));
    }
    out
}

/// Quartiles by linear interpolation between order statistics (R's type 7).
pub fn five_numbers(mut v: Vec<f32>) -> Option<[f32; 5]> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f32::total_cmp);
    let sorted: Vec<f64> = v.iter().map(|&x| x as f64).collect();
    let q = |p: f64| crate::stats::quantile(&sorted, p) as f32;
    Some([v[0], q(0.25), q(0.5), q(0.75), v[v.len() - 1]])
}

/// What a rerank stage's score is: a cross-encoder's raw logit, a late-interaction model's
/// MaxSim, an LLM's yes logit minus its no logit, a `/rerank` endpoint's relevance score.
pub fn score_kind(spec: &RerankSpec) -> &'static str {
    match &spec.scorer {
        Scorer::Model => match ranklab_engine::models::pinned(&spec.model) {
            Some(p) if p.kind == ranklab_engine::models::ModelKind::LateInteraction => "MaxSim",
            _ => "logit",
        },
        Scorer::Endpoint(e) if e.api == LlmApi::Rerank => "relevance_score",
        Scorer::Llm | Scorer::Endpoint(_) => "logit(yes) − logit(no)",
    }
}

/// Distribution of the rerank scores of every rerank configuration, as Markdown.
pub fn score_distributions(corpus: &Corpus, suite: &Suite, replay: &Replay) -> String {
    let reranked: Vec<&ConfigRun> = replay
        .runs
        .iter()
        .filter(|r| r.config.rerank.is_some())
        .collect();
    if reranked.is_empty() {
        return String::new();
    }
    let mut md = String::from("## Rerank score distributions\n\nThe scores of the shortlisted (query, section) pairs, each model's own kind (score): a cross-encoder's raw logit, a late-interaction model's MaxSim (per query token the best cosine over the section's tokens, summed), an LLM's yes logit minus its no logit. All pairs, then split by whether the document is relevant; models' scales differ, so compare within a model.\n\n| configuration | score | pairs | n | min | q1 | median | q3 | max |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n");
    for run in reranked {
        let kind = run.config.rerank.as_ref().map_or("", score_kind);
        let mut groups: BTreeMap<u8, Vec<f32>> = BTreeMap::new();
        for (task, ranked) in suite.tasks.iter().zip(&run.per_task) {
            for r in ranked {
                if let Some(s) = r.rerank_score {
                    let rel = task.expected.get(corpus.id(r.doc)).is_some_and(|&g| g >= 1);
                    groups.entry(0).or_default().push(s);
                    groups.entry(if rel { 1 } else { 2 }).or_default().push(s);
                }
            }
        }
        for (g, label) in [(0u8, "all"), (1, "relevant"), (2, "not relevant")] {
            let v = groups.remove(&g).unwrap_or_default();
            let n = v.len();
            match five_numbers(v) {
                Some(f) => {
                    let _ = writeln!(
                        md,
                        "| {} | {kind} | {label} | {n} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                        crate::report::table::md_cell(&run.config.name),
                        f[0],
                        f[1],
                        f[2],
                        f[3],
                        f[4]
                    );
                }
                None => {
                    let _ = writeln!(
                        md,
                        "| {} | {kind} | {label} | 0 | | | | | |",
                        crate::report::table::md_cell(&run.config.name)
                    );
                }
            }
        }
    }
    md.push('\n');
    md
}

/// The models that produced the report, as Markdown.
pub fn model_identities(models: &BTreeMap<String, String>) -> String {
    if models.is_empty() {
        return String::new();
    }
    let mut md =
        String::from("## Models\n\n| model | identity (file sha256 and settings) |\n|---|---|\n");
    for (id, ident) in models {
        let _ = writeln!(md, "| {id} | `{ident}` |");
    }
    md.push('\n');
    md
}

#[cfg(test)]
mod tests {
    use super::five_numbers;

    #[test]
    fn quartiles_interpolate() {
        assert_eq!(
            five_numbers(vec![4.0, 1.0, 3.0, 2.0]).unwrap(),
            [1.0, 1.75, 2.5, 3.25, 4.0]
        );
        assert_eq!(five_numbers(vec![7.0]).unwrap(), [7.0; 5]);
        assert!(five_numbers(vec![]).is_none());
    }
}
