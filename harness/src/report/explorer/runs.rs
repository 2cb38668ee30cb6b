//! The explorer page of any TREC runs (`ranklab compare --html`): the runs' lists, the
//! comparison's per-query values, and the records of a corpus ranklab reads (a suite's corpus
//! folder of Markdown records, or a BEIR `corpus.jsonl`), with the query texts of a BEIR
//! `queries.jsonl` or a suite file when given (a BEIR corpus's `queries.jsonl` beside it by
//! default).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use ranklab_engine::corpus::{beir, Corpus};

use super::{DocInfo, Page, PageTask, Side, SHOWN_DEPTH};
use crate::trec::{read_run, Evaluation, Qrels};

/// What a page of runs is made from.
pub struct RunsInput<'a> {
    /// The runs' labels, baseline first.
    pub labels: Vec<String>,
    /// The run files, in the same order.
    pub paths: Vec<PathBuf>,
    /// The measures compared (their names).
    pub measures: Vec<String>,
    /// Per run, its evaluation (qrels order), values in `measures` order first.
    pub evaluations: &'a [Evaluation],
    /// The qrels.
    pub qrels: &'a Qrels,
    /// Minimum grade of a relevant document.
    pub rel_level: i32,
    /// The cutoff the page marks (compare's `--judged-at`).
    pub k: usize,
}

/// Loads the corpus at `path`: a BEIR `corpus.jsonl` (by its `.jsonl` name) or a folder of
/// Markdown records.
pub fn load_corpus(path: &Path) -> Result<Corpus> {
    if path.extension().is_some_and(|e| e == "jsonl") {
        beir::load_corpus(path)
            .with_context(|| format!("reading the BEIR corpus {}", path.display()))
    } else {
        Corpus::load(path).with_context(|| format!("reading the corpus folder {}", path.display()))
    }
}

/// Query texts by id: from `queries` (a BEIR `queries.jsonl`, or a suite file or folder), else
/// from the `queries.jsonl` beside a BEIR `corpus`, else none.
pub fn load_queries(queries: Option<&Path>, corpus: &Path) -> Result<HashMap<String, String>> {
    let beside = corpus
        .extension()
        .is_some_and(|e| e == "jsonl")
        .then(|| corpus.with_file_name("queries.jsonl"))
        .filter(|p| p.is_file());
    let Some(path) = queries.map(Path::to_path_buf).or(beside) else {
        return Ok(HashMap::new());
    };
    if path.extension().is_some_and(|e| e == "jsonl") {
        let qs = beir::load_queries(&path)
            .with_context(|| format!("reading the queries {}", path.display()))?;
        Ok(qs.into_iter().map(|q| (q.id, q.text)).collect())
    } else {
        let suite = crate::suite::Suite::load(&path)?;
        Ok(suite.tasks.into_iter().map(|t| (t.id, t.query)).collect())
    }
}

/// The page of `input` over `corpus` (None: ids only, no title or snippet), `queries` giving
/// the query texts.
pub fn page(
    input: &RunsInput<'_>,
    corpus: Option<&Corpus>,
    queries: &HashMap<String, String>,
) -> Result<Page> {
    let qids: Vec<&str> = input
        .evaluations
        .first()
        .map(|e| e.per_query.iter().map(|q| q.qid.as_str()).collect())
        .unwrap_or_default();
    let judged: Vec<BTreeMap<String, i32>> = qids
        .iter()
        .map(|q| {
            input
                .qrels
                .query(q)
                .map(|j| j.judgments.iter().cloned().collect())
                .unwrap_or_default()
        })
        .collect();
    let mut runs = Vec::with_capacity(input.paths.len());
    for (path, ev) in input.paths.iter().zip(input.evaluations) {
        let read = read_run(path).with_context(|| format!("reading {}", path.display()))?;
        let by_qid: HashMap<&str, &crate::trec::RankedQuery> =
            read.iter().map(|q| (q.qid.as_str(), q)).collect();
        let sides = qids
            .iter()
            .zip(&ev.per_query)
            .zip(&judged)
            .map(|((q, values), judged)| {
                let docs = by_qid.get(q).map_or(&[][..], |r| r.docs.as_slice());
                Side {
                    values: values.values[..input.measures.len()].to_vec(),
                    first: docs
                        .iter()
                        .position(|(d, _)| judged.get(d).is_some_and(|&g| g >= input.rel_level))
                        .map(|p| p + 1),
                    hits: docs.iter().take(SHOWN_DEPTH).cloned().collect(),
                }
            })
            .collect();
        runs.push(sides);
    }
    let tasks = qids
        .iter()
        .zip(judged)
        .map(|(q, judged)| PageTask {
            id: (*q).to_string(),
            query: queries.get(*q).cloned(),
            k: input.k,
            judged,
            snippets: BTreeMap::new(),
        })
        .collect();
    let mut page = Page {
        title: format!("compare — {}", input.labels.join(" vs ")),
        notes: vec![format!(
            "{} runs over {} judged queries; baseline {}. Each list is shown to rank {SHOWN_DEPTH}, the cutoff line at {}.",
            input.labels.len(),
            qids.len(),
            input.labels.first().map_or("", String::as_str),
            input.k
        )],
        measures: input.measures.clone(),
        baseline: 0,
        configs: input.labels.clone(),
        tasks,
        docs: BTreeMap::new(),
        runs,
    };
    let Some(corpus) = corpus else {
        return Ok(page);
    };
    page.docs = docs_of(&page, corpus);
    page.add_snippets(|_, id| {
        let d = corpus.get(id)?;
        Some(
            d.sections
                .iter()
                .map(|s| s.body.as_str())
                .collect::<Vec<_>>()
                .join(" "),
        )
    });
    Ok(page)
}

fn docs_of(page: &Page, corpus: &Corpus) -> BTreeMap<String, DocInfo> {
    let mut out = BTreeMap::new();
    let ids = page
        .runs
        .iter()
        .flat_map(|run| run.iter().flat_map(|s| s.hits.iter().map(|(d, _)| d)))
        .chain(page.tasks.iter().flat_map(|t| t.judged.keys()));
    for id in ids {
        if !out.contains_key(id) {
            out.insert(id.clone(), super::suite::doc_info(corpus, id));
        }
    }
    out
}
