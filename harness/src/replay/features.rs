//! The feature matrix of a learned ranker: one row per (task, candidate document), built from
//! what a replay produced.
//!
//! A task's candidates are the union of the first-stage lists the features read, each cut at
//! the configuration's depth: BM25's and dense's always (a model without `bm25` or `dense`
//! still ranks their documents), and with `external` the engine's hits inside the corpus (so a
//! document only the engine found is ranked too); the shortlists of `cross-encoder` and
//! `colbert` are cut from those lists and add none. Rows are in the ranking's tie order
//! (document id descending). A candidate is shown with its BM25 section, else its dense one,
//! else the engine's (section 0: an engine names documents, not sections). Feature names
//! as a tuning file's `learn.features` writes them, and the columns each adds:
//!
//! | name | columns |
//! |---|---|
//! | `bm25` | `bm25` (BM25 score), `bm25.rank` (1-based) |
//! | `dense` | `dense` (the bi-encoder's cosine), `dense.rank` |
//! | `lifecycle` | `lifecycle.active`, `lifecycle.superseded`, `lifecycle.deprecated` (one-hot) |
//! | `history` | `history.first-class`, `history.amendment`, `history.editorial-only` (one-hot), `history.versions` (lifecycle log entries + 1) |
//! | `age` | `age`: days between the record's `updated_at` and the newest `updated_at` of the corpus (0 without a date) |
//! | `cross-encoder` | `cross-encoder` (ms-marco-MiniLM-L-12-v2's logit over the configuration's shortlist), `cross-encoder.rank` (1-based, by logit) |
//! | `colbert` | `colbert` (answerai-colbert-small-v1's MaxSim over the configuration's shortlist), `colbert.rank` |
//! | `external` | `external` (the score the configuration's `engine:` gave, replayed from its recording), `external.rank` (1-based) |
//!
//! A document missing from a list gets that list's minimum score over its `depth` documents
//! and rank `depth + 1` (0 and `depth + 1` when the list is empty). For `cross-encoder` and
//! `colbert` the list is the configuration's rerank shortlist (its `shortlist` documents, cut
//! from the list its rerank stage reads, `shortlist_from` for a fusion weighing `rerank`),
//! scored by that model through the score cache or the recordings: a document outside the
//! shortlist gets the minimum score over the shortlist and rank `shortlist + 1`. The replay of
//! `retriever: learned` computes them from the same replays (`replay/learned_models.rs`), over
//! the configuration's `shortlist: { width, from }`. For `external` the list is the engine's
//! hits inside the corpus at the configuration's depth (hits outside the corpus are no
//! candidates and move no rank), replayed from the engine's recording; `retriever: learned`
//! replays it from the configuration's own `engine:` (`replay/learned_models.rs`).

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use ranklab_engine::corpus::{Corpus, History, Lifecycle};
use ranklab_engine::learn::{Model, Query};
use ranklab_engine::ranking::{cmp_ranked, Hit};

use crate::replay::{ConfigRun, Ranked};

/// The feature names a tuning file may list that `retriever: learned` replays.
pub(crate) const NAMES: [&str; 5] = ["bm25", "dense", "lifecycle", "history", "age"];

/// The model features (name, the model scoring the configuration's shortlist): computed by a
/// tuning from the shortlist's scores.
pub(crate) const MODEL_FEATURES: [(&str, &str); 2] = [
    ("cross-encoder", "ms-marco-MiniLM-L-12-v2"),
    ("colbert", "answerai-colbert-small-v1"),
];

/// The feature of an external engine's score and rank (the configuration's `engine:`).
pub(crate) const EXTERNAL: &str = "external";

/// The columns of `names`, in order; `at` is the file:line for an error.
pub(crate) fn columns(names: &[String], at: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for n in names {
        let cols: Vec<&str> = match n.as_str() {
            "bm25" => vec!["bm25", "bm25.rank"],
            "dense" => vec!["dense", "dense.rank"],
            "lifecycle" => vec![
                "lifecycle.active",
                "lifecycle.superseded",
                "lifecycle.deprecated",
            ],
            "history" => vec![
                "history.first-class",
                "history.amendment",
                "history.editorial-only",
                "history.versions",
            ],
            "age" => vec!["age"],
            "cross-encoder" => vec!["cross-encoder", "cross-encoder.rank"],
            "colbert" => vec!["colbert", "colbert.rank"],
            EXTERNAL => vec!["external", "external.rank"],
            _ => bail!(
                "{at}: unknown feature {n:?}; write some of {}, cross-encoder, colbert, external",
                NAMES.join(", ")
            ),
        };
        if cols.iter().any(|c| out.iter().any(|o: &String| o == c)) {
            bail!("{at}: feature {n:?} is listed twice; list it once");
        }
        out.extend(cols.iter().map(|c| c.to_string()));
    }
    if out.is_empty() {
        bail!("{at}: `learn.features` lists no feature; write e.g. [bm25, dense]");
    }
    Ok(out)
}

/// One list's (score, rank) per document, and what a missing document gets.
struct ListIndex {
    at: BTreeMap<usize, (f64, f64)>,
    missing: (f64, f64),
}

fn index(list: &[Ranked], depth: usize) -> ListIndex {
    index_hits(&crate::replay::as_hits(list), depth)
}

fn index_hits(list: &[Hit], depth: usize) -> ListIndex {
    let cut = &list[..list.len().min(depth)];
    let at = cut
        .iter()
        .enumerate()
        .map(|(i, r)| (r.doc, (f64::from(r.score), (i + 1) as f64)))
        .collect();
    let min = cut
        .iter()
        .map(|r| f64::from(r.score))
        .min_by(f64::total_cmp)
        .unwrap_or(0.0);
    ListIndex {
        at,
        missing: (min, (depth + 1) as f64),
    }
}

/// The newest `updated_at` of the corpus (the reference of `age`).
pub(crate) fn newest(corpus: &Corpus) -> Option<chrono::NaiveDate> {
    corpus.docs.iter().filter_map(|d| d.updated_at).max()
}

/// The value of column `c` for document `doc`.
fn value(
    c: &str,
    doc: usize,
    corpus: &Corpus,
    lists: &[(&str, &ListIndex)],
    now: Option<chrono::NaiveDate>,
) -> f64 {
    let d = &corpus.docs[doc];
    let one = |b: bool| if b { 1.0 } else { 0.0 };
    for (name, l) in lists {
        let (score, rank) = l.at.get(&doc).copied().unwrap_or(l.missing);
        if c == *name {
            return score;
        }
        if c.strip_suffix(".rank") == Some(name) {
            return rank;
        }
    }
    match c {
        "lifecycle.active" => one(d.lifecycle == Lifecycle::Active),
        "lifecycle.superseded" => one(d.lifecycle == Lifecycle::Superseded),
        "lifecycle.deprecated" => one(d.lifecycle == Lifecycle::Deprecated),
        "history.first-class" => one(d.history == History::FirstClass),
        "history.amendment" => one(d.history == History::Amendment),
        "history.editorial-only" => one(d.history == History::EditorialOnly),
        "history.versions" => (d.lifecycle_log.len() + 1) as f64,
        "age" => match (now, d.updated_at) {
            (Some(n), Some(u)) => (n - u).num_days() as f64,
            _ => 0.0,
        },
        _ => unreachable!("columns are checked"),
    }
}

/// One task's rows: its candidates (document indices, in row order) and the [`Query`].
pub(crate) struct TaskRows {
    /// The candidate of each row.
    pub docs: Vec<usize>,
    /// The section each candidate is shown with (its BM25 section, else its dense one).
    pub sections: Vec<usize>,
    /// Features, grades, tie keys.
    pub query: Query,
}

/// A model's scores over a configuration's shortlist: the feature name (`colbert`), the replay
/// of the configuration with that model as its rerank stage, and the shortlist's width; or,
/// for [`EXTERNAL`], the replay of the configuration's engine and its depth.
pub(crate) struct ModelList<'a> {
    /// The feature name ([`MODEL_FEATURES`]).
    pub name: &'static str,
    /// The replayed rerank configuration (its `rerank_score`s are the shortlist's scores).
    pub run: &'a ConfigRun,
    /// The shortlist's width.
    pub width: usize,
}

/// Every task's rows from the replayed `bm25` and `dense` runs (suite order) and the model
/// lists; `grades[t]` maps a document id to its grade.
pub(crate) fn build(
    columns: &[String],
    bm25: &ConfigRun,
    dense: &ConfigRun,
    models: &[ModelList],
    corpus: &Corpus,
    depth: usize,
    grades: &[BTreeMap<String, i32>],
) -> Vec<TaskRows> {
    let now = newest(corpus);
    bm25.per_task
        .iter()
        .zip(&dense.per_task)
        .zip(grades)
        .enumerate()
        .map(|(t, ((l, s), g))| {
            let extra: Vec<Extra> = models
                .iter()
                .map(|m| {
                    if m.name == EXTERNAL {
                        let mut hits = crate::replay::as_hits(&m.run.per_task[t]);
                        hits.retain(|h| h.doc < corpus.len());
                        hits.truncate(m.width);
                        let index = index_hits(&hits, m.width);
                        (m.name, index, hits)
                    } else {
                        let list = super::fused::rerank_list(&m.run.per_task[t], corpus.id_rank());
                        (m.name, index_hits(&list, m.width), Vec::new())
                    }
                })
                .collect();
            task_rows_with(columns, l, s, &extra, corpus, depth, g, now)
        })
        .collect()
}

/// One task's rows from its BM25 list `l` and dense list `s` (each cut at `depth`); `g` maps a
/// document id to its grade (empty when scoring, not training); `now` is [`newest`]. The one
/// feature computation both `ranklab tune` and the replay of `retriever: learned` use.
pub(crate) fn task_rows(
    columns: &[String],
    l: &[Ranked],
    s: &[Ranked],
    corpus: &Corpus,
    depth: usize,
    g: &BTreeMap<String, i32>,
    now: Option<chrono::NaiveDate>,
) -> TaskRows {
    task_rows_with(columns, l, s, &[], corpus, depth, g, now)
}

/// A list beyond BM25 and dense: its feature name, its index, and the candidates it adds
/// (the engine's hits for `external`; none for a shortlist, cut from the first stages).
type Extra<'a> = (&'a str, ListIndex, Vec<Hit>);

/// [`task_rows`] with the model lists' indexes and candidates (`extra`).
#[allow(clippy::too_many_arguments)]
fn task_rows_with(
    columns: &[String],
    l: &[Ranked],
    s: &[Ranked],
    extra: &[Extra],
    corpus: &Corpus,
    depth: usize,
    g: &BTreeMap<String, i32>,
    now: Option<chrono::NaiveDate>,
) -> TaskRows {
    let id_rank = corpus.id_rank();
    let (li, si) = (index(l, depth), index(s, depth));
    let mut section: BTreeMap<usize, usize> = BTreeMap::new();
    for r in s[..s.len().min(depth)]
        .iter()
        .chain(&l[..l.len().min(depth)])
    {
        section.insert(r.doc, r.section);
    }
    for h in extra.iter().flat_map(|(_, _, hits)| hits) {
        section.entry(h.doc).or_insert(h.section);
    }
    let mut docs: Vec<usize> = section.keys().copied().collect();
    // Tie order of the rankings: document id descending.
    docs.sort_unstable_by(|a, b| id_rank[*b].cmp(&id_rank[*a]));
    let mut lists = vec![("bm25", &li), ("dense", &si)];
    lists.extend(extra.iter().map(|(n, x, _)| (*n, x)));
    let features = docs
        .iter()
        .map(|&d| {
            columns
                .iter()
                .map(|c| value(c, d, corpus, &lists, now))
                .collect()
        })
        .collect();
    let labels = docs
        .iter()
        .map(|&d| f64::from(g.get(corpus.id(d)).copied().unwrap_or(0).max(0)))
        .collect();
    TaskRows {
        sections: docs.iter().map(|d| section[d]).collect(),
        query: Query {
            features,
            labels,
            tie: docs.iter().map(|&d| u32::MAX - id_rank[d]).collect(),
            ideal: g
                .values()
                .filter(|&&x| x > 0)
                .map(|&x| f64::from(x))
                .collect(),
        },
        docs,
    }
}

/// A task's ranking under `model` (score descending, then document id descending), cut at
/// `depth`: what `ranklab tune` measures and what `retriever: learned` replays.
pub(crate) fn rank(model: &Model, rows: &TaskRows, depth: usize, corpus: &Corpus) -> Vec<Hit> {
    let mut hits: Vec<Hit> = rows
        .docs
        .iter()
        .zip(&rows.sections)
        .zip(&rows.query.features)
        .map(|((&doc, &section), x)| Hit {
            doc,
            score: model.score(x) as f32,
            section,
        })
        .collect();
    let id_rank = corpus.id_rank();
    hits.sort_unstable_by(|a, b| cmp_ranked(a, b, id_rank));
    hits.truncate(depth);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;
    use ranklab_engine::corpus::markdown::parse_record;

    fn run(per_task: Vec<Vec<Ranked>>) -> ConfigRun {
        ConfigRun {
            config: yaml_serde::from_str("name: x\nretriever: bm25").unwrap(),
            per_task: vec![per_task.into_iter().next().unwrap()],
            weights: None,
        }
    }

    fn r(doc: usize, score: f32, rerank_score: Option<f32>) -> Ranked {
        Ranked {
            doc,
            score,
            section: 0,
            rerank_score,
        }
    }

    /// A corpus of four one-line records a, b, c, d.
    fn abcd() -> Corpus {
        let docs = ["a", "b", "c", "d"]
            .map(|id| {
                parse_record(
                    std::path::Path::new(&format!("{id}.md")),
                    format!("---\nid: {id}\ntitle: {id}\n---\ntext\n").as_bytes(),
                )
                .unwrap()
            })
            .to_vec();
        Corpus::new("t", docs).unwrap()
    }

    /// Four records a..d (ordinals 0..3). By hand: the BM25 list is a 3.0, b 2.0, c 1.0, d 0.5
    /// (depth 4); the dense list holds d 0.9 alone. The ColBERT run reranked a shortlist of
    /// width 2: b 7.5, a 7.0 (its `rerank_score`s, the values the score cache gave; c and d
    /// below the shortlist have none). Columns: a (7.0, rank 2), b (7.5, rank 1), c and d
    /// outside the shortlist at its minimum 7.0 and rank width + 1 = 3. Cross-encoder logits
    /// over the same shortlist: a -1.0, b -9.0: a rank 1, b rank 2, c and d -9.0 and 3.
    #[test]
    fn model_columns_are_the_shortlist_scores_and_the_minimum_outside_it() {
        let corpus = abcd();
        let bm25 = run(vec![vec![
            r(0, 3.0, None),
            r(1, 2.0, None),
            r(2, 1.0, None),
            r(3, 0.5, None),
        ]]);
        let dense = run(vec![vec![r(3, 0.9, None)]]);
        let colbert = run(vec![vec![
            r(1, 7.5, Some(7.5)),
            r(0, 7.0, Some(7.0)),
            r(2, 1.0, None),
            r(3, 0.5, None),
        ]]);
        let ce = run(vec![vec![
            r(0, -1.0, Some(-1.0)),
            r(1, -9.0, Some(-9.0)),
            r(2, 1.0, None),
        ]]);
        let models = [
            ModelList {
                name: "colbert",
                run: &colbert,
                width: 2,
            },
            ModelList {
                name: "cross-encoder",
                run: &ce,
                width: 2,
            },
        ];
        let names = ["colbert".to_string(), "cross-encoder".to_string()];
        let cols = columns(&names, "x").unwrap();
        assert_eq!(
            cols,
            [
                "colbert",
                "colbert.rank",
                "cross-encoder",
                "cross-encoder.rank"
            ]
        );
        let rows = build(
            &cols,
            &bm25,
            &dense,
            &models,
            &corpus,
            4,
            &[BTreeMap::new()],
        );
        let got: BTreeMap<&str, Vec<f64>> = rows[0]
            .docs
            .iter()
            .zip(&rows[0].query.features)
            .map(|(&d, x)| (corpus.id(d), x.clone()))
            .collect();
        assert_eq!(got["a"], [7.0, 2.0, -1.0, 1.0]);
        assert_eq!(got["b"], [7.5, 1.0, -9.0, 2.0]);
        assert_eq!(got["c"], [7.0, 3.0, -9.0, 3.0]);
        assert_eq!(got["d"], [7.0, 3.0, -9.0, 3.0]);
    }

    /// Four records a..d (ordinals 0..3); an engine hit outside the corpus is numbered 4 (as
    /// `external::as_hits` numbers it). By hand: BM25 lists a, b (depth 3), dense nothing; the
    /// engine gave (in its order) the outside hit 9.0, c 4.0, a 2.5, so its list inside the
    /// corpus is c 4.0 (rank 1), a 2.5 (rank 2): b is missing and gets the minimum 2.5 and rank
    /// depth + 1 = 4. c, which only the engine found, is a candidate (the union of every list
    /// the features read); d, in no list, is not; the outside hit is no candidate and moves no
    /// rank. The engine's own scores are taken as given (no `rerank_score` is read).
    #[test]
    fn external_columns_are_the_engine_scores_inside_the_corpus_and_the_minimum_outside_it() {
        let corpus = abcd();
        let bm25 = run(vec![vec![r(0, 3.0, None), r(1, 2.0, None)]]);
        let dense = run(vec![Vec::new()]);
        let engine = run(vec![vec![
            r(4, 9.0, None),
            r(2, 4.0, None),
            r(0, 2.5, None),
        ]]);
        let models = [ModelList {
            name: EXTERNAL,
            run: &engine,
            width: 3,
        }];
        let cols = columns(&[EXTERNAL.to_string()], "x").unwrap();
        assert_eq!(cols, ["external", "external.rank"]);
        let rows = build(
            &cols,
            &bm25,
            &dense,
            &models,
            &corpus,
            3,
            &[BTreeMap::new()],
        );
        let got: BTreeMap<&str, Vec<f64>> = rows[0]
            .docs
            .iter()
            .zip(&rows[0].query.features)
            .map(|(&d, x)| (corpus.id(d), x.clone()))
            .collect();
        assert_eq!(got.keys().copied().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(got["a"], [2.5, 2.0]);
        assert_eq!(got["b"], [2.5, 4.0]);
        assert_eq!(got["c"], [4.0, 1.0]);
    }

    /// The columns a model file may name (checked when an experiments file is read) are exactly
    /// those the feature names give here, in the order of docs/tuning.md's table.
    #[test]
    fn the_suite_checks_model_columns_against_these() {
        let all: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
        assert_eq!(
            columns(&all, "x").unwrap(),
            crate::suite::learned::KNOWN_COLUMNS.to_vec()
        );
    }
}
