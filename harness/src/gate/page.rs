//! `ranklab gate --html DIR`: the ranking explorer page ([`crate::report::explorer`]) of each
//! row that failed, passed OKISH or rose where it must not, written as
//! `DIR/<suite>-<configuration>.html`: the rankings kept with the baseline
//! (`reports/baseline.runs/`) on the left and today's on the right, task by task, with the
//! records' titles, lifecycles, dates and snippets. A row without kept rankings (a BEIR
//! collection's, a baseline written before they were kept) gets no page, and the gate says so.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::rankings::{first_relevant_by, per_task, Lists};
use super::Subject;
use crate::report::explorer::suite::{doc_info, page_tasks, section_text};
use crate::report::explorer::{self, Page, Side, SHOWN_DEPTH};

/// The page of one gated configuration: `kept` (the baseline's rankings) against `now`, under
/// today's judgments; `verdict` is said under the title.
pub fn page(s: &Subject, configuration: &str, kept: &Lists, now: &Lists, verdict: &str) -> Page {
    let names = s.metric_names();
    let sides = |lists: &Lists| -> Vec<Side> {
        let values: Vec<Vec<f64>> = (0..names.len())
            .map(|m| per_task(&s.suite, &s.measures, m, lists))
            .collect();
        s.suite
            .tasks
            .iter()
            .enumerate()
            .map(|(t, task)| {
                let ids = lists.get(&task.id).map_or(&[][..], Vec::as_slice);
                Side {
                    values: values.iter().map(|v| v[t]).collect(),
                    first: first_relevant_by(ids, |d| {
                        task.expected.get(d).is_some_and(|&g| g >= 1)
                    }),
                    // A kept ranking has no scores: the rank's reverse stands in, as in
                    // the kept TREC file.
                    hits: ids
                        .iter()
                        .take(SHOWN_DEPTH)
                        .enumerate()
                        .map(|(i, d)| (d.clone(), (ids.len() - i) as f64))
                        .collect(),
                }
            })
            .collect()
    };
    let mut page = Page {
        title: format!("{} — {configuration} (ranklab gate)", s.name),
        notes: vec![
            format!("Gate verdict: {verdict}."),
            format!(
                "Left: the rankings kept with the baseline (reports/baseline.runs/); right: today's. \
                 Both are graded under today's judgments. Each list is shown to rank {SHOWN_DEPTH}; \
                 the scores are ranks reversed (the kept rankings hold no scores)."
            ),
        ],
        measures: names.clone(),
        baseline: 0,
        configs: vec![
            format!("{configuration} (baseline)"),
            format!("{configuration} (now)"),
        ],
        tasks: page_tasks(&s.suite),
        docs: std::collections::BTreeMap::new(),
        runs: vec![sides(kept), sides(now)],
    };
    let ids: Vec<String> = page
        .runs
        .iter()
        .flat_map(|run| {
            run.iter()
                .flat_map(|side| side.hits.iter().map(|(d, _)| d.clone()))
        })
        .chain(page.tasks.iter().flat_map(|t| t.judged.keys().cloned()))
        .collect();
    for id in ids {
        let info = doc_info(&s.corpus, &id);
        page.docs.entry(id).or_insert(info);
    }
    let corpus = &s.corpus;
    page.add_snippets(|_, id| section_text(corpus.get(id)?, 0));
    page
}

/// The file of one row's page under `dir`.
pub fn file(dir: &Path, suite: &str, configuration: &str) -> PathBuf {
    dir.join(format!("{suite}-{configuration}.html"))
}

/// Renders and writes `page` to `path` atomically.
pub fn write(path: &Path, page: &Page) -> Result<()> {
    let html = explorer::render(page)?;
    crate::report::atomic::write(path, html.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}
