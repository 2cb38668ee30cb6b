//! `ranklab run --cluster` and `ranklab bench --cluster` on a real Ray cluster on 127.0.0.1 (a
//! head node without CPUs and one worker node of one CPU; see `common::ray`). The suite is a
//! subset of the built-in `tasks/docir`: its first 6 tasks over the 6 design records they are
//! about and their superseded versions (28 sections), with BM25, fusion (bge-small-en-v1.5) and
//! fusion reranked by ms-marco-MiniLM-L-12-v2 (top 5): 34 texts to embed and 30 pairs to score.
//! Properties checked, against a local run of the same suite (the oracle: the local code path,
//! no cluster involved):
//! - after `run --cluster`, the vector and score caches are byte-for-byte the local run's and
//!   the report tree is byte-identical; the vectors and scores were computed on the cluster
//!   (shards of both kinds, none retried; the cross-encoder never loaded locally); a local run on
//!   that cache afterwards loads no model (the cache is complete, the run continues warm);
//! - `bench --cluster` over a tasks folder holding that suite does the same;
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

/// The line `N model load(s): ...` of a run's stderr.
fn loads(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.contains(" model load"))
        .unwrap_or_else(|| panic!("no loads line:\n{stderr}"))
}

/// What a cluster run must have said: both kinds of work sent as shards, every shard done the
/// first time, the cross-encoder never loaded locally (the bi-encoder is loaded once on a cold
/// cache to learn its vector length; it computes nothing).
fn assert_computed_on_the_cluster(err: &str, address: &str) {
    for (kind, model) in [
        ("embed", "bge-small-en-v1.5"),
        ("score", "ms-marco-MiniLM-L-12-v2"),
    ] {
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
    assert!(summaries.len() >= 2, "{err}");
    assert!(
        summaries
            .iter()
            .all(|l| l.contains(" shards (0 retried), ")),
        "{err}"
    );
    assert!(
        !loads(err).contains("ms-marco"),
        "the cross-encoder ran locally: {}",
        loads(err)
    );
}

#[test]
fn run_and_bench_with_cluster_fill_the_cache_with_the_bytes_of_a_local_run() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = mini_suite(tmp.path());
    let suite = tasks.join("docir");
    let suite = suite.to_str().unwrap();
    let tasks = tasks.to_str().unwrap();

    let local_cache = common::cache_with_shared_models(&tmp.path().join("local"));
    let local_reports = tmp.path().join("local-reports");
    let err = ok(&ranklab(&["run", suite], &local_reports, &local_cache, &[]));
    assert!(loads(&err).contains("ms-marco"), "{err}");
    let local_caches = caches(&local_cache);
    // One vector file and one score file, and the reports of the one experiment.
    assert_eq!(local_caches.len(), 2, "{:?}", local_caches.keys());
    let local_tree = common::tree(&local_reports);
    assert!(local_tree.contains_key(Path::new("docir/retrieval.md")));

    let cluster = Cluster::start(1);
    let address = cluster.address();
    let on_cluster = ["--cluster", &address, "--shard-records", "16"];

    let cache = common::cache_with_shared_models(&tmp.path().join("run"));
    let reports = tmp.path().join("run-reports");
    let err = ok(&ranklab(&["run", suite], &reports, &cache, &on_cluster));
    assert_computed_on_the_cluster(&err, &address);
    assert_eq!(caches(&cache), local_caches, "run --cluster: caches differ");
    assert_eq!(
        common::tree(&reports),
        local_tree,
        "run --cluster: reports differ"
    );

    let cache_b = common::cache_with_shared_models(&tmp.path().join("bench"));
    let reports_b = tmp.path().join("bench-reports");
    let args = ["bench", "--tasks", tasks];
    let err = ok(&ranklab(&args, &reports_b, &cache_b, &on_cluster));
    assert_computed_on_the_cluster(&err, &address);
    assert_eq!(
        caches(&cache_b),
        local_caches,
        "bench --cluster: caches differ"
    );
    assert_eq!(
        common::tree(&reports_b),
        local_tree,
        "bench --cluster: reports differ"
    );
    drop(cluster);

    // Warm: a local run on the cache the cluster filled computes nothing.
    let again = tmp.path().join("again-reports");
    let err = ok(&ranklab(&["run", suite], &again, &cache, &[]));
    assert_eq!(
        loads(&err),
        "0 model loads: every vector and score came from the cache",
        "{err}"
    );
    assert_eq!(common::tree(&again), local_tree);
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
