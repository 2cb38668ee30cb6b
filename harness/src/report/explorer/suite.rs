//! The explorer page of a suite report: the replay's configurations, the suite's tasks and the
//! records of its corpus (title, lifecycle, `updated_at`, the section that won each document
//! its rank as the snippet's text).

use std::collections::BTreeMap;

use ranklab_engine::corpus::{Corpus, Lifecycle};

use super::{DocInfo, Page, PageTask, Side, SHOWN_DEPTH};
use crate::replay::Replay;
use crate::report::{first_relevant_rank, per_task_values, MeasureSet};
use crate::suite::{Experiments, Suite};

/// The page of one experiment's report (`all`: the corpus with the ids external engines
/// returned outside it; `decision`: the report's decision, shown under the title).
pub fn page(
    all: &Corpus,
    suite: &Suite,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
    decision: &str,
) -> Page {
    let configs: Vec<String> = replay.runs.iter().map(|r| r.config.name.clone()).collect();
    let baseline = configs.iter().position(|c| c == ex.baseline()).unwrap_or(0);
    let runs: Vec<Vec<Side>> = replay
        .runs
        .iter()
        .map(|run| {
            let values = per_task_values(all, suite, run, set);
            suite
                .tasks
                .iter()
                .zip(&run.per_task)
                .zip(values)
                .map(|((task, ranked), values)| Side {
                    values,
                    first: first_relevant_rank(all, task, ranked),
                    hits: ranked
                        .iter()
                        .take(SHOWN_DEPTH)
                        .map(|r| (all.id(r.doc).to_string(), short(r.score)))
                        .collect(),
                })
                .collect()
        })
        .collect();
    let tasks = page_tasks(suite);
    let mut page = Page {
        title: format!("{} — {}", suite.name, ex.experiment),
        notes: vec![
            format!("Decision: {decision}"),
            format!(
                "Suite {}: {} tasks, k = {}; baseline {}. Each list is shown to rank {SHOWN_DEPTH}.",
                suite.name,
                suite.tasks.len(),
                suite.k,
                ex.baseline()
            ),
        ],
        measures: set.names(suite.k),
        baseline,
        configs,
        tasks,
        docs: BTreeMap::new(),
        runs,
    };
    page.docs = docs_shown(&page, all);
    // The snippet's text: the section that won the document its rank in the first list that
    // shows it (replay order), else the document's first section.
    page.add_snippets(|t, id| {
        let i = all.index_of(id)?;
        let doc = &all.docs[i];
        let section = replay
            .runs
            .iter()
            .find_map(|run| run.per_task[t].iter().find(|r| r.doc == i))
            .map_or(0, |r| r.section);
        section_text(doc, section)
    });
    page
}

/// The snippet's text of `doc`: its section `section` (else its first), heading and body. The
/// title is shown apart: a heading that repeats it (a BEIR document's) is left out.
pub fn section_text(doc: &ranklab_engine::corpus::Document, section: usize) -> Option<String> {
    let s = doc.sections.get(section).or(doc.sections.first())?;
    Some(if s.heading == doc.title {
        s.body.clone()
    } else {
        format!("{} {}", s.heading, s.body)
    })
}

/// The page's tasks of `suite`: id, query, cutoff and judgments (no snippets yet).
pub fn page_tasks(suite: &Suite) -> Vec<PageTask> {
    suite
        .tasks
        .iter()
        .map(|t| PageTask {
            id: t.id.clone(),
            query: Some(t.query.clone()),
            k: t.k,
            judged: t.expected.clone(),
            snippets: BTreeMap::new(),
        })
        .collect()
}

/// Title, lifecycle and date of every document the page shows or judges.
fn docs_shown(page: &Page, all: &Corpus) -> BTreeMap<String, DocInfo> {
    let ids = page
        .runs
        .iter()
        .flat_map(|run| run.iter().flat_map(|s| s.hits.iter().map(|(d, _)| d)))
        .chain(page.tasks.iter().flat_map(|t| t.judged.keys()));
    let mut out = BTreeMap::new();
    for id in ids {
        if !out.contains_key(id) {
            out.insert(id.clone(), doc_info(all, id));
        }
    }
    out
}

/// What the page says of document `id` (an id the corpus lacks: no title).
pub fn doc_info(corpus: &Corpus, id: &str) -> DocInfo {
    corpus.get(id).map_or_else(DocInfo::default, |d| DocInfo {
        title: d.title.clone(),
        // BEIR documents (no date, always active) have no lifecycle to show.
        lifecycle: (d.updated_at.is_some() || d.lifecycle != Lifecycle::Active)
            .then(|| d.lifecycle.as_str().to_string()),
        date: d.updated_at.map(|x| x.to_string()),
    })
}

/// `x` as the f64 nearest its shortest decimal form, so the page shows `0.0328`, not the f32's
/// exact binary value `0.03279999911785126`.
fn short(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}
