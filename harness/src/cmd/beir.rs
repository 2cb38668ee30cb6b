//! `ranklab beir`: run a BEIR-layout collection (corpus.jsonl, queries.jsonl, qrels/<split>.tsv)
//! under standard configurations and write `reports/beir/<name>/` like a suite report, with the
//! measures BEIR publishes (nDCG@10, recall@100) beside MRR.
//!
//! Every judged query is a task; a query for which a configuration retrieves nothing counts 0
//! (trec_eval's `-c`). Judgments that name a document absent from the corpus are kept and never
//! match, as in trec_eval; their count is printed.

use crate::exit::Exit;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Result};
use ranklab_engine::corpus::beir;
use ranklab_engine::lexical::{Analyzer, Bm25Params};
use ranklab_engine::models::remote::Remote;
use rayon::prelude::*;

use crate::replay::{replay, Replayer};
use crate::report::{self, scale, MeasureSet, SuiteReport};
use crate::stats::thousands;
use crate::suite::beir::{configuration, load_judged, measures, published};
use crate::suite::distractors::sample;
use crate::suite::{Configuration, Experiments, Suite};

/// Arguments of `ranklab beir`.
#[derive(Debug, clap::Args)]
pub(crate) struct BeirArgs {
    /// The collection directory (holds corpus.jsonl, queries.jsonl, qrels/).
    pub dir: PathBuf,
    /// Configurations to run, comma-separated: bm25, bm25-lucene (Anserini's analyzer at depth
    /// 1000), dense, fusion, bm25+ce (BM25's top 100
    /// reranked by ms-marco-MiniLM-L-12-v2; on SciFact 30,000 pairs, about 19 min on 2 cores
    /// the first time, seconds once cached), bm25+ce@N (only its top N reranked; it shares
    /// bm25+ce's scores and score cache), bm25+ce-ft and bm25+ce-ft@N (the same model
    /// fine-tuned on the collection's own judged queries, cross-validated: 5 folds, each fold's
    /// queries reranked by a model trained one epoch on the other folds' queries, one BM25 hard
    /// negative per positive; on SciFact about 7 min of training and 2 hours of float scoring
    /// on 2 cores the first time with RAYON_NUM_THREADS=1 (pairs scored side by side, training
    /// still on every core: just beir-finetune), the folds' models and scores cached as they
    /// finish; with --cluster the folds train on the cluster), bm25+ce-ft-int8 and
    /// bm25+ce-ft-int8@N (the same fold models scored as int8 exports through ONNX Runtime, as
    /// fast as bm25+ce, each export's biases first calibrated on 64 of its fold's training
    /// pairs, about half a minute: on SciFact about 29 min cold, just beir-finetune-int8),
    /// bm25+colbert and bm25+colbert@N (the same with the late-interaction
    /// answerai-colbert-small-v1; on SciFact about 30 min on 2 cores the first time, and a
    /// token-vector cache of about 2 GB).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "bm25,dense,fusion,bm25+ce,bm25+ce@20,bm25+colbert,bm25+colbert@20"
    )]
    pub configs: Vec<String>,
    /// Replay the configurations of this experiments file instead of --configs, as written
    /// (their own depth, BM25 and models; --configs, --depth, --k1, --b and --analyzer do not
    /// apply): e.g. what `ranklab tune FILE --write` wrote beside a tuning file over the
    /// collection (bench/scifact-tune/experiments-tune-<name>.yaml). The report is named after
    /// its `experiment:` (<REPORTS>/<name>/<experiment>.md).
    #[arg(long, short = 'x', value_name = "FILE")]
    pub experiments: Option<PathBuf>,
    /// The qrels split (qrels/<split>.tsv).
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Folder of BEIR reports: the collection's reports go to <REPORTS>/<name>/ (the name of
    /// the collection's directory), e.g. reports/beir/scifact/.
    #[arg(long, default_value_os_t = crate::suite::beir::default_reports())]
    pub reports: PathBuf,
    /// Also print the whole Markdown report on stdout (by default stdout gets a summary: the
    /// headline table, the decision and the files written).
    #[arg(long)]
    pub print: bool,
    /// BM25 term-frequency saturation of every configuration that uses BM25 (default 0.9,
    /// Anserini's; Lucene's and Elasticsearch's is 1.2).
    #[arg(long)]
    pub k1: Option<f32>,
    /// BM25 length normalization, 0..=1 (default 0.4, Anserini's; Lucene's and
    /// Elasticsearch's is 0.75).
    #[arg(long)]
    pub b: Option<f32>,
    /// Documents retrieved per query by every configuration (default 1000, as Anserini's runs;
    /// MAP is MAP@depth and recall@k needs k <= depth). bm25+ce reranks BM25's top 100 (or N)
    /// and keeps the rest of the list below them.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub depth: u64,
    /// The analyzer of every BM25 configuration: `english` (tantivy's chain, the default) or
    /// `lucene` (Lucene's StandardTokenizer, possessives, stop words, Porter stemming: Anserini's
    /// BM25). The configuration `bm25-lucene` also selects it.
    #[arg(long, value_parser = parse_analyzer)]
    pub analyzer: Option<Analyzer>,
    #[command(flatten)]
    pub cluster: super::args::ClusterArgs,
    /// Which grades the tables use: the qrels only, or also the LLM grades of
    /// <REPORTS>/<name>/judgments.yaml (`ranklab judge DIR --llm MODEL`) for documents the
    /// qrels do not judge. Either way, when that file holds LLM grades the report has a
    /// section "LLM judgments" (agreement with the qrels, and what the LLM's grades change).
    #[command(flatten)]
    pub judgments: super::args::JudgmentsArgs,
    /// Instead of the report: a corpus-size curve, <name>.scale.md (+ csv, json, svg). At each
    /// size (documents in the corpus, increasing; `all`: the whole corpus) every judged
    /// document is kept and the others are sampled with --seed, each size's sample containing
    /// the smaller's; every configuration is replayed at each size (vectors and scores computed
    /// once, at the largest). E.g. --corpus-sizes 500,1000,2000,all.
    #[arg(long, value_delimiter = ',', value_name = "N|all")]
    pub corpus_sizes: Option<Vec<String>>,
    /// Seed of the --corpus-sizes sample.
    #[arg(long, default_value_t = crate::suite::distractors::DEFAULT_SEED)]
    pub seed: u64,
}

/// The sizes of `--corpus-sizes` for a corpus of `len` documents (`all`: `len`), strictly
/// increasing and at most `len`.
fn corpus_sizes(given: &[String], len: usize) -> Result<Vec<usize>> {
    let sizes = given
        .iter()
        .map(|s| match s.trim() {
            "all" => Ok(len),
            n => n.parse::<usize>().map_err(|_| {
                anyhow::anyhow!("--corpus-sizes: {n:?} is not a number of documents or `all`")
            }),
        })
        .collect::<Result<Vec<_>>>()?;
    if let Err(why) = crate::suite::distractors::check_sizes(&sizes) {
        bail!("--corpus-sizes: {why}");
    }
    if let Some(&n) = sizes.iter().find(|&&n| n > len) {
        bail!("--corpus-sizes: {n} is larger than the corpus ({len} documents); write `all` for the whole corpus");
    }
    Ok(sizes)
}

fn parse_analyzer(s: &str) -> std::result::Result<Analyzer, String> {
    Analyzer::from_name(s).ok_or_else(|| format!("unknown analyzer `{s}`: write english or lucene"))
}

/// The BM25 parameters `--k1` / `--b` ask for (None: the defaults), checked.
fn bm25_params(args: &BeirArgs) -> Result<Option<Bm25Params>> {
    if args.k1.is_none() && args.b.is_none() {
        return Ok(None);
    }
    let d = Bm25Params::default();
    let p = Bm25Params {
        k1: args.k1.unwrap_or(d.k1),
        b: args.b.unwrap_or(d.b),
        ..d
    };
    if !(p.k1.is_finite() && p.k1 >= 0.0 && (0.0..=1.0).contains(&p.b)) {
        bail!(
            "--k1 {} --b {}: BM25 needs k1 >= 0 and 0 <= b <= 1",
            p.k1,
            p.b
        );
    }
    Ok(Some(p))
}

/// Runs the command: plan (flags, collection), replay, render, write.
pub(crate) fn run(args: BeirArgs) -> Result<Exit> {
    let plan = Plan::new(&args)?;
    let rep = match &args.corpus_sizes {
        Some(given) => {
            let sizes = corpus_sizes(given, plan.collection.corpus.len())?;
            plan.curve(&sizes, args.seed, &args.split)?
        }
        None => plan.measure()?,
    };
    let dir = args.reports.join(&plan.collection.name);
    report::write_all(&dir, std::slice::from_ref(&rep))?;
    report::print_report(&rep, &dir, args.print, true);
    Ok(Exit::Ok)
}

/// A checked run of a collection: its configurations, the collection loaded as a suite, and
/// where the engines run.
struct Plan {
    /// The collection.
    collection: beir::Collection,
    /// One task per judged query.
    suite: Suite,
    /// The configurations, baseline first, with the description the report shows.
    experiments: Experiments,
    /// The cluster of `--cluster`, if any (None: models run here).
    remote: Option<Arc<dyn Remote>>,
}

impl Plan {
    /// Checks the flags (BM25 parameters, the cluster, each configuration named once and
    /// known), loads the collection (a note on stderr for judgments naming unknown documents
    /// or queries) and makes it a suite.
    fn new(args: &BeirArgs) -> Result<Plan> {
        let bm25 = bm25_params(args)?;
        let remote = args.cluster.remote()?;
        let configurations = configurations(args, bm25)?;
        let bm25_note = match bm25 {
            Some(p) => format!(" BM25 k1 {}, b {}.", p.k1, p.b),
            None => String::new(),
        };
        let (coll, suite) = load_judged(
            &args.dir,
            &args.split,
            &args.reports,
            args.judgments.judgments,
        )?;
        if !coll.unknown_docs.is_empty() || !coll.unknown_queries.is_empty() {
            eprintln!(
                "note: qrels name {} document(s) absent from the corpus (e.g. {}) and {} query(ies) absent from queries.jsonl (e.g. {}); as in trec_eval they never match",
                coll.unknown_docs.len(),
                coll.unknown_docs.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
                coll.unknown_queries.len(),
                coll.unknown_queries.iter().take(3).cloned().collect::<Vec<_>>().join(", "),
            );
        }
        let experiments = match &args.experiments {
            Some(path) => from_file(args, path)?,
            None => Experiments {
            experiment: coll.name.clone(),
            baseline: Some(configurations[0].name.clone()),
            description: Some(format!(
                "BEIR {} ({} split, {} judged queries, {} documents). Configurations: {}. Depth {}{}; queries with nothing retrieved count 0.{bm25_note}",
                coll.name,
                args.split,
                suite.tasks.len(),
                coll.corpus.len(),
                args.configs.join(", "),
                args.depth,
                match args.analyzer {
                    Some(a) => format!("; BM25 analyzer {}", a.name()),
                    None => String::new(),
                }
            ) + &published_notes(&coll.name, &args.configs)),
            configurations,
            distractors: None,
            path: args.dir.clone(),
        },
        };
        Ok(Plan {
            collection: coll,
            suite,
            experiments,
            remote,
        })
    }

    /// Replays every configuration over the collection and renders the report.
    fn measure(&self) -> Result<SuiteReport> {
        let coll = &self.collection;
        let engine = Replayer::build_with(&coll.corpus, &[&self.experiments], self.remote.clone())?;
        let r = replay(&engine, &self.suite, &self.experiments)?;
        engine.finish()?;
        report::render(
            &coll.corpus,
            &self.suite,
            &self.experiments,
            &r,
            &MeasureSet::Fixed(measures()),
        )
    }
}

impl Plan {
    /// The corpus-size curve: at each of `sizes` the judged documents and a seeded sample of
    /// the others (`suite::distractors::sample`), every configuration replayed.
    fn curve(&self, sizes: &[usize], seed: u64, split: &str) -> Result<SuiteReport> {
        let coll = &self.collection;
        let keep: std::collections::HashSet<&str> = self
            .suite
            .tasks
            .iter()
            .flat_map(|t| t.expected.keys().map(String::as_str))
            .filter(|id| coll.corpus.get(id).is_some())
            .collect();
        // Each size's corpus drawn and cut on rayon's pool (cutting copies its documents); the
        // first failing size, in size order, is the error.
        let corpora: Vec<Result<_>> = sizes
            .par_iter()
            .map(|&n| sample(&coll.corpus, &keep, n, seed))
            .collect();
        let corpora = corpora.into_iter().collect::<Result<Vec<_>>>()?;
        let largest = corpora.last().expect("sizes checked not empty");
        let engine = Replayer::build_with(largest, &[&self.experiments], self.remote.clone())?;
        let curve = crate::replay::scale::measure(
            &corpora,
            engine,
            &keep,
            &self.suite,
            &self.experiments,
            &MeasureSet::Fixed(measures()),
        )?;
        let setting = scale::Setting {
            title: format!("BEIR {} ({split} split)", coll.name),
            stem: coll.name.clone(),
            how: format!(
                "{} of the {} documents are judged for the {} queries of the {split} split: every size keeps them and adds a sample of the others (seed {seed}, each size's sample containing the smaller's). Every configuration is replayed at each size, with its own BM25 index. Configurations: {}.",
                thousands(keep.len()),
                thousands(coll.corpus.len()),
                self.suite.tasks.len(),
                self.experiments
                    .configurations
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            added: "sampled documents".to_string(),
            headline: vec![0, 1],
        };
        scale::render(&setting, &curve, &crate::stats::Options::default())
    }
}

/// The published figures the configurations can be read against (one sentence each, with a
/// leading space), from [`published`].
fn published_notes(collection: &str, configs: &[String]) -> String {
    configs
        .iter()
        .filter_map(|c| published(collection, c))
        .map(|n| format!(" Published: {n}"))
        .collect()
}

/// The experiments file of `--experiments`, read and checked as `ranklab run` reads one; the
/// flags that shape `--configs`' configurations are refused beside it.
fn from_file(args: &BeirArgs, path: &std::path::Path) -> Result<Experiments> {
    if args.k1.is_some() || args.b.is_some() || args.analyzer.is_some() {
        bail!("--experiments {}: its configurations run as written; remove --k1, --b and --analyzer (set `bm25:` in the file instead)", path.display());
    }
    if args.corpus_sizes.is_some() {
        bail!(
            "--experiments {}: --corpus-sizes runs --configs; remove one of them",
            path.display()
        );
    }
    Experiments::load(path)
}

/// The configurations `--configs` names, each once, with the BM25 parameters, analyzer and
/// depth the flags ask for.
fn configurations(args: &BeirArgs, bm25: Option<Bm25Params>) -> Result<Vec<Configuration>> {
    for (i, c) in args.configs.iter().enumerate() {
        if args.configs[..i].contains(c) {
            bail!(
                "--configs names {c:?} twice; name each configuration once (each is one column of the report)"
            );
        }
    }
    args.configs
        .iter()
        .map(|c| {
            configuration(c).map(|c| {
                let mut p = bm25.or(c.bm25);
                if let Some(a) = args.analyzer {
                    p = Some(Bm25Params {
                        analyzer: a,
                        ..p.unwrap_or_default()
                    });
                }
                Configuration {
                    bm25: p,
                    depth: Some(args.depth as usize),
                    ..c
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> BeirArgs {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            beir: BeirArgs,
        }
        let mut argv = vec!["beir", "dir"];
        argv.extend_from_slice(extra);
        Cli::try_parse_from(argv).unwrap().beir
    }

    #[test]
    fn bm25_parameters_default_fill_in_and_out_of_range_is_refused() {
        assert_eq!(bm25_params(&args(&[])).unwrap(), None);
        let p = bm25_params(&args(&["--k1", "1.2", "--b", "0.75"]))
            .unwrap()
            .unwrap();
        assert_eq!((p.k1, p.b), (1.2, 0.75));
        let p = bm25_params(&args(&["--b", "0.75"])).unwrap().unwrap();
        assert_eq!((p.k1, p.b), (Bm25Params::default().k1, 0.75));
        let err = bm25_params(&args(&["--b", "1.5"])).unwrap_err();
        assert!(err.to_string().contains("0 <= b <= 1"), "{err}");
    }
}
