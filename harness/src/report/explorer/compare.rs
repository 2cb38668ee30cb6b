//! `ranklab compare --html OUT`: the ranking explorer page ([`crate::report::explorer`]) of the
//! compared runs, over the corpus given with `--corpus` (a suite's corpus folder or a BEIR
//! `corpus.jsonl`; without one the page shows ids only) and the query texts of `--queries`.

use std::path::Path;

use anyhow::{Context, Result};

use super::runs;
use crate::compare::Comparison;
use crate::report::explorer;
use crate::trec::Qrels;

/// The page of `comparison`, rendered (nothing written): read every input before any output.
pub fn page(
    comparison: &Comparison,
    corpus: Option<&Path>,
    queries: Option<&Path>,
) -> Result<String> {
    let qrels = Qrels::read(&comparison.qrels)?;
    let corpus_docs = corpus.map(runs::load_corpus).transpose()?;
    let texts = runs::load_queries(queries, corpus.unwrap_or(Path::new("")))?;
    let plan = &comparison.plan;
    let input = runs::RunsInput {
        labels: plan.runs.iter().map(|(l, _)| l.clone()).collect(),
        paths: plan.runs.iter().map(|(_, p)| p.clone()).collect(),
        measures: plan.measures.iter().map(|m| m.name()).collect(),
        evaluations: &comparison.evaluations,
        qrels: &qrels,
        rel_level: plan.eval.rel_level,
        k: plan.judged_k,
    };
    let page = runs::page(&input, corpus_docs.as_ref(), &texts)?;
    explorer::render(&page)
}

/// Writes the rendered page to `out` atomically.
pub fn write(out: &Path, html: &str) -> Result<()> {
    crate::report::atomic::write(out, html.as_bytes())
        .with_context(|| format!("writing {}", out.display()))
}
