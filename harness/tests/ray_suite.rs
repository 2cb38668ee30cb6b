//! `ranklab run --cluster` and `ranklab bench --cluster` on a real Ray cluster on 127.0.0.1 (a
//! head node without CPUs and one worker node of one CPU; see `common::ray`; every TCP socket
//! its processes listen on is checked to be bound to 127.0.0.1). The suite is a
//! subset of the built-in `tasks/docir`: its first 6 tasks over the 6 design records they are
//! about and their superseded versions (28 sections), with BM25, fusion (bge-small-en-v1.5),
//! fusion reranked by ms-marco-MiniLM-L-12-v2 (top 5) and fusion reranked by the late-interaction
//! answerai-colbert-small-v1 (top 5) — 34 texts to embed and 30 pairs to score per reranker —
//! a second experiments file of BM25 only, and a paired assertion between `bm25` and
//! `fusion+L12@5`. Properties checked, against a local run of the same command (the oracle: the
//! local code path, no cluster involved):
//! - after `run --cluster`, the vector, score and ColBERT token-vector caches are byte-for-byte
//!   the local run's and the report tree is byte-identical; the vectors and both rerankers'
//!   scores were computed on the cluster (shards of both kinds, none retried; neither reranker
//!   ever loaded locally); a local run on that cache afterwards loads no model (the cache is
//!   complete, the run continues warm);
//! - `bench --cluster` over a tasks folder holding that suite does the same;
//! - `run -x` the BM25-only file: the only model work is the paired assertion's, and it goes to
//!   the cluster too, with the same caches and reports as locally;
//! - bad input: `run` and `bench` with an address nobody answers at exit 2, say how to start a
//!   cluster, and write no cache and no report.
//!
//! Real models, shared read-only from the default cache; the vector and score caches of every
//! run are temporary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::ray::{caches, Cluster};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The design records the first 6 docir tasks expect (T01-T06), and the superseded versions
/// each of them names as its distractor.
const DOCS: [&str; 6] = [
    "pay-idempotency-v1",
    "pay-idempotency-v2",
    "pay-retries-backoff",
    "pay-retries-fixed",
    "pay-webhook-signing-v1",
    "pay-webhook-signing-v2",
];

const EXPERIMENTS: &str = "experiment: retrieval
baseline: fusion
configurations:
  - name: bm25
    retriever: bm25
  - name: fusion
    retriever: fusion
    embedder: bge-small-en-v1.5
  - name: fusion+L12@5
    retriever: fusion
    embedder: bge-small-en-v1.5
    rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 5 }
  - name: fusion+colbert@5
    retriever: fusion
    embedder: bge-small-en-v1.5
    rerank: { model: answerai-colbert-small-v1, shortlist: 5 }
";

/// Only BM25: no model work but the paired assertion's.
const LEXICAL: &str = "experiment: lexical
baseline: bm25-k1b
configurations:
  - name: bm25-k1b
    retriever: bm25
    bm25: { k1: 1.2, b: 0.75 }
  - name: bm25-anserini
    retriever: bm25
";

/// T02's query: BM25 ranks the superseded-by-nothing neighbour pay-retries-backoff first and the
/// expected record 4th; fusion reranked by the cross-encoder puts the expected record first (the
/// local run's tasks.csv, and the report's paired section says so for both wirings).
const PAIRED: &str = "suite: suite.yaml
legacy: bm25
current: fusion+L12@5
assertions:
  - id: double-charging
    query: stop double charging when the client retries a capture
    above: pay-idempotency-v2
    below: pay-retries-backoff
    legacy: inverted
    current: holds
";

/// `tmp/tasks/docir/`: tasks/docir/suite.yaml cut after T06, over a corpus of [`DOCS`] copied
/// from corpora/docir, each `cites:` cut to the records of [`DOCS`] (a citation must name a
/// record of the corpus); returns the tasks folder.
fn mini_suite(tmp: &Path) -> PathBuf {
    let corpus = tmp.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    for d in DOCS {
        let f = format!("{d}.md");
        let text = std::fs::read_to_string(root().join("corpora/docir").join(&f)).unwrap();
        let text: Vec<String> = text
            .lines()
            .map(|l| match l.strip_prefix("cites: [") {
                Some(ids) => {
                    let ids: Vec<&str> = ids
                        .trim_end_matches(']')
                        .split(", ")
                        .filter(|id| DOCS.contains(id))
                        .collect();
                    format!("cites: [{}]", ids.join(", "))
                }
                None => l.to_string(),
            })
            .collect();
        std::fs::write(corpus.join(&f), text.join("\n") + "\n").unwrap();
    }
    let suite = std::fs::read_to_string(root().join("tasks/docir/suite.yaml")).unwrap();
    let cut = suite.find("  - id: T07\n").expect("docir has a task T07");
    let suite = suite[..cut].replace(
        "corpus: ../../corpora/docir\n",
        &format!("corpus: {}\n", corpus.display()),
    );
    assert!(suite.contains(&corpus.display().to_string()));
    assert_eq!(suite.matches("  - id: T").count(), 6);
    let tasks = tmp.join("tasks");
    std::fs::create_dir_all(tasks.join("docir")).unwrap();
    std::fs::write(tasks.join("docir/suite.yaml"), suite).unwrap();
    std::fs::write(tasks.join("docir/experiments.yaml"), EXPERIMENTS).unwrap();
    std::fs::write(tasks.join("docir/experiments-lexical.yaml"), LEXICAL).unwrap();
    std::fs::write(tasks.join("docir/paired.yaml"), PAIRED).unwrap();
    tasks
}

/// `ranklab ARGS --reports REPORTS` with `cache` as RANKLAB_CACHE.
fn ranklab(args: &[&str], reports: &Path, cache: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .arg("--reports")
        .arg(reports)
        .args(extra)
        .env("RANKLAB_CACHE", cache)
        .env("RANKLAB_RAY_PYTHON", common::ray::python())
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    let err = common::stderr(o);
    assert_eq!(common::code(o), 0, "{err}");
    err
}

use common::loads_line as loads;

/// What a cluster run must have said: both kinds of work sent as shards (scores of every
/// reranker in `rerankers`), every shard done the first time, no reranker loaded locally (the
/// bi-encoder is loaded once on a cold cache to learn its vector length; it computes nothing).
fn assert_computed_on_the_cluster(err: &str, address: &str, rerankers: &[&str]) {
    let work = std::iter::once(("embed", "bge-small-en-v1.5"))
        .chain(rerankers.iter().map(|&m| ("score", m)));
    for (kind, model) in work {
        let sent = format!("cluster {address}: {kind} ");
        assert!(
            err.lines()
                .any(|l| l.starts_with(&sent) && l.contains(&format!(" records of {model} in "))),
            "no {kind} work for {model} went to the cluster:\n{err}"
        );
    }
    let summaries: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with(&format!("cluster {address}: ")) && l.contains(" shards ("))
        .collect();
    assert!(summaries.len() > rerankers.len(), "{err}");
    assert!(
        summaries
            .iter()
            .all(|l| l.contains(" shards (0 retried), ")),
        "{err}"
    );
    for m in rerankers {
        assert!(
            !loads(err).contains(m),
            "the reranker {m} ran locally: {}",
            loads(err)
        );
    }
}

/// The rerankers of [`EXPERIMENTS`].
const RERANKERS: [&str; 2] = ["ms-marco-MiniLM-L-12-v2", "answerai-colbert-small-v1"];

/// One command's outcome on a fresh cache under `tmp/name`.
struct Ran {
    stderr: String,
    cache: PathBuf,
    caches: common::Tree,
    reports: common::Tree,
}

/// `ranklab ARGS EXTRA` on a fresh cache (the models shared), reports under `tmp/name`; on
/// `cluster` when given (a failure then shows its Ray Client server logs).
fn fresh(tmp: &Path, name: &str, args: &[&str], cluster: Option<&Cluster>) -> Ran {
    let cache = common::cache_with_shared_models(&tmp.join(name));
    let reports = tmp.join(name).join("reports");
    let stderr = match cluster {
        None => ok(&ranklab(args, &reports, &cache, &[])),
        Some(c) => {
            let address = c.address();
            let extra = ["--cluster", &address, "--shard-records", "16"];
            let o = ranklab(args, &reports, &cache, &extra);
            let err = common::stderr(&o);
            assert_eq!(
                common::code(&o),
                0,
                "{err}\nthe cluster's Ray Client server logs:\n{}",
                c.client_logs()
            );
            err
        }
    };
    Ran {
        stderr,
        caches: caches(&cache),
        cache,
        reports: common::tree(&reports),
    }
}

#[test]
fn run_and_bench_with_cluster_fill_the_cache_with_the_bytes_of_a_local_run() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp = tmp.path();
    let tasks = mini_suite(tmp);
    let suite = tasks.join("docir");
    let suite = suite.to_str().unwrap();
    let tasks = tasks.to_str().unwrap();
    let lexical = format!("{suite}/experiments-lexical.yaml");
    let lexical_only = ["run", suite, "-x", &lexical];

    let local = fresh(tmp, "local", &["run", suite], None);
    for m in RERANKERS {
        assert!(loads(&local.stderr).contains(m), "{}", local.stderr);
    }
    // The vector file, ColBERT's token-vector file and a score file per reranker; both
    // experiments' reports, with the paired section.
    assert_eq!(local.caches.len(), 4, "{:?}", local.caches.keys());
    let tok = |c: &common::Tree| {
        c.keys()
            .filter(|p| p.extension() == Some("tok".as_ref()))
            .count()
    };
    assert_eq!(tok(&local.caches), 1, "{:?}", local.caches.keys());
    let md = String::from_utf8(local.reports[Path::new("docir/retrieval.md")].clone()).unwrap();
    assert!(md.contains("| fusion+colbert@5 |"), "{md}");
    assert!(
        md.contains(
            "| double-charging | current (`fusion+L12@5`) | 1 | 4 | holds | holds | pass |"
        ),
        "{md}"
    );
    assert!(local.reports.contains_key(Path::new("docir/lexical.md")));
    let local_lexical = fresh(tmp, "local-lexical", &lexical_only, None);
    assert_eq!(local_lexical.caches.len(), 2);

    let cluster = Cluster::start(1);
    cluster.assert_loopback_only();
    let address = cluster.address();
    let on_cluster = Some(&cluster);

    let run = fresh(tmp, "run", &["run", suite], on_cluster);
    assert_computed_on_the_cluster(&run.stderr, &address, &RERANKERS);
    assert_eq!(run.caches, local.caches, "run --cluster: caches differ");
    assert_eq!(run.reports, local.reports, "run --cluster: reports differ");

    let bench = fresh(tmp, "bench", &["bench", "--tasks", tasks], on_cluster);
    assert_computed_on_the_cluster(&bench.stderr, &address, &RERANKERS);
    assert_eq!(bench.caches, local.caches, "bench --cluster: caches differ");
    assert_eq!(
        bench.reports, local.reports,
        "bench --cluster: reports differ"
    );

    // The experiments of this file use no model: the paired assertion's work goes to the cluster.
    let paired = fresh(tmp, "paired", &lexical_only, on_cluster);
    assert_computed_on_the_cluster(&paired.stderr, &address, &RERANKERS[..1]);
    assert_eq!(paired.caches, local_lexical.caches, "paired: caches differ");
    assert_eq!(
        paired.reports, local_lexical.reports,
        "paired: reports differ"
    );
    drop(cluster);

    // Warm: a local run on the cache the cluster filled computes nothing.
    let again = tmp.join("again-reports");
    let err = ok(&ranklab(&["run", suite], &again, &run.cache, &[]));
    assert_eq!(
        loads(&err),
        "0 model loads: every vector and score came from the cache",
        "{err}"
    );
    assert_eq!(common::tree(&again), local.reports);
}

#[test]
fn run_and_bench_refuse_an_address_nobody_answers_at_and_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = mini_suite(tmp.path());
    let dead = format!("ray://127.0.0.1:{}", common::ray::free_port());
    let cache = tmp.path().join("cache");
    let reports = tmp.path().join("reports");
    let suite = tasks.join("docir");
    let args: [&[&str]; 2] = [
        &["run", suite.to_str().unwrap()],
        &["bench", "--tasks", tasks.to_str().unwrap()],
    ];
    for a in args {
        let o = ranklab(a, &reports, &cache, &["--cluster", &dead]);
        let err = common::stderr(&o);
        assert_eq!(common::code(&o), 2, "{a:?}: {err}");
        assert!(err.contains("no Ray cluster answers there"), "{a:?}: {err}");
        assert!(err.contains("ray start --head"), "{a:?}: {err}");
        assert!(!cache.exists(), "{a:?}: something was written to the cache");
        assert!(!reports.exists(), "{a:?}: a report was written");
    }
}
