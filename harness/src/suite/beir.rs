//! A BEIR collection (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) as a suite: every judged
//! query a task, the standard configurations `ranklab beir` and the gate run, and the measures
//! BEIR publishes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::beir;
use ranklab_engine::lexical::{Analyzer, Bm25Params};

use super::{Configuration, RerankSpec, Retriever, Suite, Task};
use crate::metrics::Measure;
use ranklab_engine::policy::Wiring;

/// The configurations `ranklab beir` knows.
pub const CONFIGS: [&str; 7] = [
    "bm25",
    "bm25-lucene",
    "dense",
    "fusion",
    "bm25+ce",
    "bm25+ce-ft",
    "bm25+colbert",
];

/// How `bm25+ce-ft` fine-tunes ms-marco-MiniLM-L-12-v2: the judged queries split into 5 folds
/// (seed 42), each fold's queries reranked by a model trained one epoch on the other folds'
/// queries, one hard negative per positive (BM25's top non-relevant document). One negative,
/// not the suites' three, halves the training pairs of a collection of hundreds of queries.
pub const FINETUNE: super::FinetuneSpec = super::FinetuneSpec {
    folds: 5,
    epochs: 1,
    negatives: 1,
    seed: 42,
    lr: None,
    batch: None,
    precision: None,
};

/// The second stages `ranklab beir` puts on BM25: the configuration's prefix and the model
/// reranking BM25's top 100 (or, with `@N`, its top N).
/// `bm25+ce-ft` is listed before `bm25+ce`, whose prefix it shares.
/// `bm25+ce-ft-int8` is `bm25+ce-ft` with its fold models scored as int8 exports (the same
/// fold models: training does not depend on how they score).
const RERANKERS: [(&str, &str); 4] = [
    ("bm25+ce-ft-int8", "ms-marco-MiniLM-L-12-v2"),
    ("bm25+ce-ft", "ms-marco-MiniLM-L-12-v2"),
    ("bm25+ce", "ms-marco-MiniLM-L-12-v2"),
    ("bm25+colbert", "answerai-colbert-small-v1"),
];

/// The configuration `ranklab beir` runs under `name` (one of [`CONFIGS`]).
pub fn configuration(name: &str) -> Result<Configuration> {
    let base = Configuration {
        name: name.to_string(),
        retriever: Retriever::Bm25,
        engine: None,
        embedder: None,
        bm25: None,
        rrf_k: None,
        fusion: None,
        depth: Some(100),
        rerank: None,
        wiring: Wiring::None,
        practice: None,
        model: None,
        shortlist: None,
        learned: None,
    };
    Ok(match name {
        "bm25" => base,
        "bm25-lucene" => Configuration {
            bm25: Some(Bm25Params {
                analyzer: Analyzer::Lucene,
                ..Bm25Params::default()
            }),
            depth: Some(1000),
            ..base
        },
        "dense" => Configuration {
            retriever: Retriever::Dense,
            ..base
        },
        "fusion" => Configuration {
            retriever: Retriever::Fusion,
            ..base
        },
        other => {
            let Some((model, shortlist)) = rerank_of(other) else {
                bail!(
                    "unknown configuration {other:?}; known: {}, or bm25+ce@N / bm25+ce-ft@N / bm25+ce-ft-int8[@N] / \
                     bm25+colbert@N (N in 1..=100: rerank only BM25's top N)",
                    CONFIGS.join(", ")
                );
            };
            let finetune = other.starts_with("bm25+ce-ft").then_some(FINETUNE);
            let finetune = match finetune {
                Some(f) if other.starts_with("bm25+ce-ft-int8") => Some(super::FinetuneSpec {
                    precision: Some(super::Precision::Int8),
                    ..f
                }),
                f => f,
            };
            Configuration {
                rerank: Some(RerankSpec {
                    finetune,
                    ..RerankSpec::cross_encoder(model, shortlist)
                }),
                ..base
            }
        }
    })
}

/// The model and shortlist width of a rerank configuration (`bm25+ce`, `bm25+colbert@20`):
/// None for any other name, or a width outside 1..=100.
fn rerank_of(name: &str) -> Option<(&'static str, usize)> {
    RERANKERS.iter().find_map(|&(prefix, model)| {
        let width = match name.strip_prefix(prefix)? {
            "" => Some(100),
            w => w
                .strip_prefix('@')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| (1..=100).contains(n)),
        };
        width.map(|w| (model, w))
    })
}

/// A published figure the configuration `config` can be read against on the collection named
/// `collection`, and why it is not like-for-like; None when ranklab knows none. The report's
/// description carries it.
pub fn published(collection: &str, config: &str) -> Option<String> {
    let (model, width) = rerank_of(config)?;
    (collection == "scifact" && model == "answerai-colbert-small-v1").then(|| {
        format!(
            "`{config}` against the model card of answerai-colbert-small-v1 \
             (https://huggingface.co/answerdotai/answerai-colbert-small-v1), SciFact nDCG@10 \
             0.7477: not like-for-like, as the card's is full ColBERT retrieval over the whole \
             corpus with the model's 96-d projected vectors, and this is BM25's top {width} \
             reranked by MaxSim over the encoder's 384-d states (the pinned ONNX has no 384→96 \
             projection; docs/models.md)."
        )
    })
}

/// The measures of a BEIR report.
pub fn measures() -> Vec<(Measure, String)> {
    vec![
        (Measure::NdcgCut(10), "nDCG@10".into()),
        (Measure::Recall(100), "recall@100".into()),
        (Measure::Recall(1000), "recall@1000".into()),
        (Measure::RecipRank, "MRR".into()),
        (Measure::Map, "MAP".into()),
        (Measure::P(10), "P@10".into()),
    ]
}

/// A BEIR collection as a suite: every judged query a task (k = 10), its judgments expected.
pub fn collection_suite(coll: &beir::Collection, dir: &Path, split: &str) -> Result<Suite> {
    let mut expected: BTreeMap<&str, BTreeMap<String, i32>> = BTreeMap::new();
    for j in &coll.qrels {
        expected
            .entry(j.query.as_str())
            .or_default()
            .insert(j.doc.clone(), j.grade);
    }
    let tasks: Vec<Task> = coll
        .queries
        .iter()
        .map(|q| Task {
            id: q.id.clone(),
            query: q.text.clone(),
            expected: expected.get(q.id.as_str()).cloned().unwrap_or_default(),
            k: 10,
            note: None,
            line: 0,
        })
        .collect();
    if tasks.is_empty() {
        bail!(
            "{}: no query of queries.jsonl is judged in qrels/{split}.tsv",
            dir.display()
        );
    }
    Ok(Suite {
        name: coll.name.clone(),
        description: format!("BEIR collection {} ({split} split)", coll.name),
        path: dir.join("qrels").join(format!("{split}.tsv")),
        corpus_path: dir.join("corpus.jsonl"),
        k: 10,
        tasks,
        judgments: None,
        judging: None,
    })
}

/// Whether `dir` is laid out as a BEIR collection (corpus.jsonl, queries.jsonl, qrels/).
pub fn is_collection(dir: &Path) -> bool {
    dir.join("corpus.jsonl").is_file()
        && dir.join("queries.jsonl").is_file()
        && dir.join("qrels").is_dir()
}

/// The tree of BEIR reports `ranklab beir`, `pool`, `judge` and `gate` use by default:
/// `reports/beir` under the project root.
pub fn default_reports() -> PathBuf {
    crate::root::default("reports/beir")
}

/// The collection at `dir` (qrels of `split`) and its suite, with its judging folder — its
/// report folder `<reports>/<name>/`, which holds `pool.yaml` and `judgments.yaml` (the
/// collection itself is data ranklab never writes to) — and the grades there that
/// `selection` names ([`with_judgments`]).
pub fn load_judged(
    dir: &Path,
    split: &str,
    reports: &Path,
    selection: crate::judgments::Selection,
) -> Result<(beir::Collection, Suite)> {
    let coll = beir::load_collection(dir, split)
        .with_context(|| format!("loading the BEIR collection {}", dir.display()))?;
    let suite = collection_suite(&coll, dir, split)?;
    let suite = with_judgments(suite, reports.join(&coll.name), selection)?;
    Ok((coll, suite))
}

/// `suite` (a collection's, from [`collection_suite`]) with its judging folder `judging` and
/// the grades of `judgments.yaml` there, if any, that `selection` names merged into its tasks
/// (a grade of a document the qrels judge is kept beside for agreement, as for a suite).
fn with_judgments(
    mut suite: Suite,
    judging: PathBuf,
    selection: crate::judgments::Selection,
) -> Result<Suite> {
    let file = judging.join(crate::judgments::FILE);
    if file.is_file() {
        let j = crate::judgments::Judgments::load(&file, &suite.name)?;
        let qrels = suite.path.clone();
        suite.judgments = Some(super::merge_judgments(
            &mut suite.tasks,
            j,
            selection,
            &qrels,
        )?);
    }
    suite.judging = Some(judging);
    Ok(suite)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ce_ft_int8_is_ce_ft_scored_in_int8_and_its_width_reads_as_ce_fts() {
        let r = |n: &str| configuration(n).unwrap().rerank.unwrap();
        let (float, int8) = (r("bm25+ce-ft@20"), r("bm25+ce-ft-int8@20"));
        assert_eq!(int8.shortlist, 20);
        assert_eq!(float.finetune.unwrap().precision, None);
        let f = int8.finetune.unwrap();
        assert_eq!(f.precision, Some(crate::suite::Precision::Int8));
        // The same training: only how the folds score differs.
        assert_eq!(
            super::super::FinetuneSpec {
                precision: None,
                ..f
            },
            FINETUNE
        );
        assert_eq!(r("bm25+ce-ft-int8").shortlist, 100);
        assert!(configuration("bm25+ce-ft-int8@0").is_err());
        assert!(configuration("bm25+ce-ft-int4").is_err());
    }

    #[test]
    fn a_rerank_width_can_be_named_and_a_bad_one_is_refused() {
        let c = configuration("bm25+ce@20").unwrap();
        assert_eq!(c.rerank.unwrap().shortlist, 20);
        assert_eq!(
            configuration("bm25+ce").unwrap().rerank.unwrap().shortlist,
            100
        );
        for bad in [
            "bm25+ce@0",
            "bm25+ce@101",
            "bm25+ce@x",
            "bm25+ce@",
            "bm25+colbert@0",
        ] {
            let err = configuration(bad).unwrap_err().to_string();
            assert!(err.contains("bm25+ce@N"), "{bad}: {err}");
        }
    }

    #[test]
    fn colbert_reranks_bm25s_top_100_or_top_n_with_the_late_interaction_model() {
        for (name, width) in [("bm25+colbert", 100), ("bm25+colbert@20", 20)] {
            let c = configuration(name).unwrap();
            assert_eq!(c.retriever, Retriever::Bm25, "{name}");
            let r = c.rerank.unwrap();
            assert_eq!(
                (r.model.as_str(), r.shortlist),
                ("answerai-colbert-small-v1", width),
                "{name}"
            );
        }
        assert!(configuration("bm25+colbertx").is_err());
    }

    #[test]
    fn the_colbert_rows_on_scifact_carry_the_model_cards_figure_and_others_none() {
        let note = published("scifact", "bm25+colbert@20").unwrap();
        assert!(note.contains("0.7477") && note.contains("top 20"), "{note}");
        assert!(note.contains("no 384→96"), "{note}");
        assert_eq!(published("nfcorpus", "bm25+colbert"), None);
        assert_eq!(published("scifact", "bm25+ce"), None);
        assert_eq!(published("scifact", "bm25"), None);
    }
}
