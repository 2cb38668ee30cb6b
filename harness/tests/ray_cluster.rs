//! `ranklab beir --cluster` on a real Ray cluster of several nodes, every one on 127.0.0.1 (ray
//! 2.40.0 from PyPI in target/ray-venv, installed by `just setup`; override with RANKLAB_RAY_PYTHON).
//!
//! One cluster for the whole file: `tests/ray/cluster.py` starts a head node (no CPU) and two
//! worker nodes of one CPU each with `ray.cluster_utils.Cluster`, all with node IP 127.0.0.1 —
//! that script says why not `ray start` (ray 2.40 rewrites 127.0.0.1 into the machine's outward
//! address there) and how it keeps Ray on loopback. The tests that use it take turns (a mutex),
//! and every one of them checks that each TCP socket the cluster's processes listen on is bound
//! to 127.0.0.1. The cluster stops when this test process exits, whichever way: the script
//! reads its stdin, and on EOF stops every process it started (and any left that name its
//! directory or its GCS port), then deletes its directory. Properties checked:
//! - a 50-document BEIR collection run through the cluster leaves the embedding and score caches
//!   byte-for-byte equal to a local run's, writes byte-identical reports, runs shards on both
//!   worker nodes, retries none, and never runs the cross-encoder locally;
//! - a worker node killed mid-run (its raylet and every process below it, while one of its
//!   shards runs) costs exactly a retry: the run completes, says shards were retried, and the
//!   cache and reports are still a local run's;
//! - record files that must be refused (keys not asked for; another cross-encoder identity),
//!   made on the worker by the driver's test hook RANKLAB_TEST_ONLY_WRONG_RECORDS, are refused
//!   and their shards retried on the other node; the cache and reports are still a local run's;
//! - `ranklab judge --llm smollm2-135m-instruct --cluster` on the collection's pool (its top-1
//!   documents, and the qrels' pairs with --also-judged) grades on both worker nodes, retries
//!   none, and leaves a grade file and grades (judge, grade, expected grade) equal to a local
//!   judge's, byte for byte; an endpoint judge with --cluster is refused (exit 2);
//! - a corpus-size curve (`beir --corpus-sizes 20,35,all`) run through the cluster writes the
//!   curve and caches of a local run, byte for byte, its embedding sharded over both workers;
//! - bad input: a worker without the model files (exit 2, names the files it lacks, no score
//!   enters the cache), an address nobody answers at (exit 2, says how to start a cluster), a
//!   Python without ray (exit 2, says how to install it); nothing is written to the cache.
//!
//! Real models (bge-small-en-v1.5, ms-marco-MiniLM-L-12-v2, SmolLM2-135M-Instruct), shared read-only from the default
//! cache; the vector and score caches of every run are temporary.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};

mod common;

use common::ray::{caches, free_port, python as ray_python, root, Cluster};

/// A BEIR-layout collection of 50 documents (docir's first 50 sections as abstracts) and 8
/// queries (the first 8 docir tasks), each judged against one document.
fn collection(dir: &Path) -> PathBuf {
    let corpus = ranklab_engine::corpus::Corpus::load(&root().join("corpora/docir")).unwrap();
    let texts: Vec<String> = corpus
        .docs
        .iter()
        .flat_map(|d| (0..d.sections.len()).map(|i| d.section_text(i)))
        .take(50)
        .collect();
    assert_eq!(texts.len(), 50);
    let suite = std::fs::read_to_string(root().join("tasks/docir/suite.yaml")).unwrap();
    let queries: Vec<&str> = suite
        .lines()
        .filter_map(|l| l.trim().strip_prefix("query: "))
        .take(8)
        .collect();
    assert_eq!(queries.len(), 8);
    let c = dir.join("tiny");
    std::fs::create_dir_all(c.join("qrels")).unwrap();
    let mut corpus_jsonl = String::new();
    for (i, t) in texts.iter().enumerate() {
        corpus_jsonl +=
            &serde_json::json!({"_id": format!("d{i:02}"), "title": "", "text": t}).to_string();
        corpus_jsonl.push('\n');
    }
    std::fs::write(c.join("corpus.jsonl"), corpus_jsonl).unwrap();
    let mut q = String::new();
    let mut qrels = String::from("query-id\tcorpus-id\tscore\n");
    for (i, text) in queries.iter().enumerate() {
        q += &serde_json::json!({"_id": format!("q{i}"), "text": text}).to_string();
        q.push('\n');
        qrels += &format!("q{i}\td{:02}\t1\n", i * 6);
    }
    std::fs::write(c.join("queries.jsonl"), q).unwrap();
    std::fs::write(c.join("qrels/test.tsv"), qrels).unwrap();
    c
}

fn beir(coll: &Path, cache: &Path, reports: &Path, extra: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ranklab"));
    c.arg("beir").arg(coll);
    if !extra.contains(&"--configs") {
        c.args(["--configs", "bm25,dense,bm25+ce@10"]);
    }
    c.args(["--depth", "20", "--reports"])
        .arg(reports)
        .args(extra)
        .env("RANKLAB_CACHE", cache)
        .env("RANKLAB_RAY_PYTHON", ray_python());
    c
}

fn ok(o: &Output) -> String {
    let err = common::stderr(o);
    assert_eq!(common::code(o), 0, "{err}");
    err
}

/// A local run of the collection: its caches and reports.
fn local(tmp: &Path, coll: &Path) -> (common::Tree, common::Tree) {
    let cache = common::cache_with_shared_models(&tmp.join("local"));
    let reports = tmp.join("local-reports");
    ok(&beir(coll, &cache, &reports, &[]).output().unwrap());
    (caches(&cache), common::tree(&reports))
}

/// What the tests of this file share: the cluster, the collection and a local run's output.
struct Shared {
    cluster: Cluster,
    coll: PathBuf,
    local_caches: common::Tree,
    local_reports: common::Tree,
    runs: usize,
}

static SHARED: Mutex<Option<Shared>> = Mutex::new(None);

/// The shared cluster and local run, started by the first test that asks; one test at a time.
fn shared() -> MutexGuard<'static, Option<Shared>> {
    let mut g = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_none() {
        let cluster = Cluster::start(2);
        let coll = collection(&cluster.dir);
        let (local_caches, local_reports) = local(&cluster.dir, &coll);
        assert!(!local_caches.is_empty());
        *g = Some(Shared {
            cluster,
            coll,
            local_caches,
            local_reports,
            runs: 0,
        });
    }
    g
}

/// The node ids (12 hex digits, as progress shows them) shards were accepted from.
fn nodes_used(stderr: &str) -> std::collections::BTreeSet<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("cluster: shard ") && l.contains(" done (#"))
        .filter_map(|l| l.split(" on node ").nth(1))
        .filter_map(|rest| rest.split(')').next())
        .map(str::to_string)
        .collect()
}

/// The retried counts of every work request's summary line (`N shards (R retried)`).
fn retried(stderr: &str) -> Vec<usize> {
    stderr
        .lines()
        .filter_map(|l| l.split(" shards (").nth(1))
        .filter_map(|r| r.split(" retried)").next())
        .map(|n| n.parse().unwrap())
        .collect()
}

/// The loads line of `stderr` names every model loaded locally (the bi-encoder is loaded once
/// on a cold cache to learn its vector length; it computes nothing): never the cross-encoder.
fn assert_no_local_cross_encoder(stderr: &str) {
    let loads = stderr
        .lines()
        .find(|l| l.contains(" model load"))
        .unwrap_or_else(|| panic!("no loads line:\n{stderr}"));
    assert!(
        !loads.contains("ms-marco"),
        "the cross-encoder ran locally: {loads}"
    );
}

/// The node the driver attached to (12 hex digits).
fn driver_node(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|l| l.split("(the driver on node ").nth(1))
        .and_then(|r| r.split(')').next())
        .unwrap_or_else(|| panic!("no driver line:\n{stderr}"))
        .to_string()
}

impl Shared {
    /// The worker nodes' ids as progress shows them (12 hex digits).
    fn worker_ids(&self) -> std::collections::BTreeSet<String> {
        self.cluster
            .workers
            .iter()
            .map(|(id, _)| id[..12].to_string())
            .collect()
    }

    /// The folder of the next run (not created).
    fn next_dir(&mut self) -> PathBuf {
        self.runs += 1;
        self.cluster.dir.join(format!("run{}", self.runs))
    }

    /// A fresh cache and reports folder for the next cluster run.
    fn fresh(&mut self) -> (PathBuf, PathBuf) {
        let d = self.next_dir();
        std::fs::create_dir_all(&d).unwrap();
        (common::cache_with_shared_models(&d), d.join("reports"))
    }

    fn assert_like_local(&self, cache: &Path, reports: &Path, err: &str) {
        assert_eq!(
            caches(cache),
            self.local_caches,
            "cluster cache differs:\n{err}"
        );
        assert_eq!(
            common::tree(reports),
            self.local_reports,
            "reports differ:\n{err}"
        );
    }
}

#[test]
fn a_two_node_loopback_cluster_fills_the_cache_with_the_bytes_of_a_local_run() {
    let mut g = shared();
    let s = g.as_mut().unwrap();
    let (cache, reports) = s.fresh();
    let address = s.cluster.client.clone();
    let err = ok(&beir(
        &s.coll,
        &cache,
        &reports,
        &["--cluster", &address, "--shard-records", "8"],
    )
    .output()
    .unwrap());
    s.cluster.assert_loopback_only();
    assert!(err.contains("over 2 node(s)"), "{err}");
    let workers = s.worker_ids();
    assert_eq!(
        nodes_used(&err),
        workers,
        "shards did not run on both worker nodes:\n{err}"
    );
    let r = retried(&err);
    assert!(
        !r.is_empty() && r.iter().all(|&n| n == 0),
        "a shard was retried:\n{err}"
    );
    assert_no_local_cross_encoder(&err);
    s.assert_like_local(&cache, &reports, &err);
}

#[test]
fn a_worker_node_killed_mid_run_costs_a_retry_and_nothing_else() {
    let mut g = shared();
    let s = g.as_mut().unwrap();
    let (cache, reports) = s.fresh();
    let address = s.cluster.client.clone();
    // Shards of 4: 13 for the 50 documents, so both nodes have work when the first is done.
    let mut child = beir(
        &s.coll,
        &cache,
        &reports,
        &["--cluster", &address, "--shard-records", "4"],
    )
    .stderr(Stdio::piped())
    .stdout(Stdio::null())
    .spawn()
    .unwrap();
    let mut err = String::new();
    let mut killed = None;
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        err += &line;
        err.push('\n');
        if killed.is_none() && line.starts_with("cluster: shard 1/") {
            // A worker node the driver is not attached to (a node's death takes its drivers
            // along): the script kills it once one of its shards runs.
            let driver = driver_node(&err);
            let victim = s
                .cluster
                .workers
                .iter()
                .find(|(id, _)| !id.starts_with(&driver))
                .unwrap()
                .0
                .clone();
            let r = s.cluster.command(&format!("kill-busy {victim}"));
            assert!(
                !r["busy"].as_array().unwrap().is_empty(),
                "no shard ran on the node to kill: {r}\n{err}"
            );
            killed = Some(victim);
        }
    }
    let status = child.wait().unwrap();
    let victim = killed.unwrap_or_else(|| panic!("no shard was ever done:\n{err}"));
    // The node is gone for good: the next tests get a fresh one, once the GCS knows.
    s.cluster.command(&format!("wait-dead {victim}"));
    s.cluster.workers.retain(|(id, _)| *id != victim);
    let added = s.cluster.command("add")["added"].clone();
    s.cluster.workers.push((
        added["id"].as_str().unwrap().to_string(),
        added["raylet"].as_i64().unwrap() as i32,
    ));
    assert_eq!(status.code(), Some(0), "{err}");
    let short = &victim[..12];
    assert!(
        err.lines()
            .any(|l| l.contains(&format!("on node {short}: "))
                && l.contains("retrying it away from that node")),
        "no shard of the killed node was retried:\n{err}"
    );
    assert!(
        retried(&err).iter().sum::<usize>() > 0,
        "no retry counted:\n{err}"
    );
    s.cluster.assert_loopback_only();
    s.assert_like_local(&cache, &reports, &err);
}

#[test]
fn record_files_that_must_be_refused_are_refused_and_retried_on_the_other_node() {
    let mut g = shared();
    let s = g.as_mut().unwrap();
    let (cache, reports) = s.fresh();
    let address = s.cluster.client.clone();
    let o = beir(
        &s.coll,
        &cache,
        &reports,
        &["--cluster", &address, "--shard-records", "8"],
    )
    .env(
        "RANKLAB_TEST_ONLY_WRONG_RECORDS",
        "embed:0:keys,score:0:model",
    )
    .output()
    .unwrap();
    let err = ok(&o);
    s.cluster.assert_loopback_only();
    // Shard 0 of each request: the documents, the queries (embed), the shortlists (score).
    let refusals: Vec<&str> = err.lines().filter(|l| l.contains("was refused")).collect();
    assert_eq!(refusals.len(), 3, "{err}");
    assert_eq!(
        refusals
            .iter()
            .filter(|l| l.contains("holds a key that was not asked for"))
            .count(),
        2,
        "{err}"
    );
    assert_eq!(
        refusals
            .iter()
            .filter(|l| l.contains("another model identity"))
            .count(),
        1,
        "{err}"
    );
    assert_eq!(retried(&err), vec![1, 1, 1], "{err}");
    // Each retry ran on the node that did not make the refused file.
    let mut refused_on = refusals
        .iter()
        .map(|l| l.split(" on node ").nth(1).unwrap()[..12].to_string());
    for l in err.lines().filter(|l| l.contains(" done (#0 on node ")) {
        let accepted = l.split(" done (#0 on node ").nth(1).unwrap()[..12].to_string();
        assert_ne!(
            Some(accepted),
            refused_on.next(),
            "retried on the same node:\n{err}"
        );
    }
    s.assert_like_local(&cache, &reports, &err);
}

/// `ranklab pool` then `ranklab judge --llm` of the collection, its report folder a copy of the
/// local run's runs under `dir`, with the cache `cache` and `extra` flags; the grade files of
/// the cache and the grades written (judge, task, document, grade, expected: not the time).
fn judge(
    s: &Shared,
    dir: &Path,
    cache: &Path,
    extra: &[&str],
) -> (String, common::Tree, Vec<String>) {
    let runs = dir.join("reports/tiny/runs");
    std::fs::create_dir_all(&runs).unwrap();
    for e in std::fs::read_dir(s.cluster.dir.join("local-reports/tiny/runs")).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, runs.join(p.file_name().unwrap())).unwrap();
    }
    let reports = dir.join("reports");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ranklab"))
            .args(args)
            .arg(&s.coll)
            .arg("--reports")
            .arg(&reports)
            .args(extra.iter().filter(|_| args[0] == "judge"))
            .env("RANKLAB_CACHE", cache)
            .env("RANKLAB_RAY_PYTHON", ray_python())
            .output()
            .unwrap()
    };
    ok(&run(&["pool", "--depth", "1"]));
    let err = ok(&run(&[
        "judge",
        "--llm",
        "smollm2-135m-instruct",
        "--also-judged",
    ]));
    let mut grades = common::tree(&cache.join("scores"));
    grades.retain(|p, _| p.extension().is_some_and(|x| x == "grade"));
    assert_eq!(grades.len(), 1, "{err}");
    let j =
        ranklab::judgments::Judgments::load(&reports.join("tiny/judgments.yaml"), "tiny").unwrap();
    let written = j
        .judgments
        .iter()
        .chain(&j.llm_grades)
        .map(|g| {
            format!(
                "{} {} {} {} {:?}",
                g.judge, g.task, g.document, g.grade, g.expected
            )
        })
        .collect();
    (err, grades, written)
}

#[test]
fn an_llm_judge_grades_on_the_cluster_as_it_grades_locally() {
    let mut g = shared();
    let s = g.as_mut().unwrap();
    let d = s.next_dir();
    let local_cache = common::cache_with_shared_models(&d.join("local"));
    let (_, local_grades, local_written) = judge(s, &d.join("local"), &local_cache, &[]);
    assert!(local_written.len() > 8, "{local_written:?}");
    let cluster_cache = common::cache_with_shared_models(&d.join("cluster"));
    let address = s.cluster.client.clone();
    let (err, grades, written) = judge(
        s,
        &d.join("cluster"),
        &cluster_cache,
        &["--cluster", &address, "--shard-records", "4"],
    );
    s.cluster.assert_loopback_only();
    let workers = s.worker_ids();
    assert_eq!(nodes_used(&err), workers, "{err}");
    let r = retried(&err);
    assert!(!r.is_empty() && r.iter().all(|&n| n == 0), "{err}");
    assert_eq!(grades, local_grades, "the grade files differ:\n{err}");
    assert_eq!(written, local_written);

    // An endpoint is asked from here: --cluster with it is refused before anything is asked.
    let o = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .arg("judge")
        .arg(&s.coll)
        .arg("--reports")
        .arg(d.join("cluster/reports"))
        .args([
            "--llm-endpoint",
            "http://127.0.0.1:9/v1",
            "--llm-model",
            "m",
        ])
        .args(["--cluster", &address, "--also-judged"])
        .env("RANKLAB_CACHE", &cluster_cache)
        .env("RANKLAB_RAY_PYTHON", ray_python())
        .output()
        .unwrap();
    assert_eq!(common::code(&o), 2, "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("--cluster shards an in-process model's grading"));
}

#[test]
fn a_corpus_size_curve_on_the_cluster_is_bit_identical_to_a_local_one() {
    let mut g = shared();
    let s = g.as_mut().unwrap();
    let d = s.next_dir();
    let sizes = ["--corpus-sizes", "20,35,all"];
    let local_cache = common::cache_with_shared_models(&d.join("local"));
    let local_reports = d.join("local/reports");
    ok(&beir(&s.coll, &local_cache, &local_reports, &sizes)
        .output()
        .unwrap());
    let cluster_cache = common::cache_with_shared_models(&d.join("cluster"));
    let cluster_reports = d.join("cluster/reports");
    let address = s.cluster.client.clone();
    let mut args = sizes.to_vec();
    args.extend(["--cluster", &address, "--shard-records", "8"]);
    let err = ok(&beir(&s.coll, &cluster_cache, &cluster_reports, &args)
        .output()
        .unwrap());
    s.cluster.assert_loopback_only();
    assert_eq!(nodes_used(&err), s.worker_ids(), "{err}");
    assert_no_local_cross_encoder(&err);
    let reports = common::tree(&cluster_reports);
    assert!(
        reports.keys().any(|p| p.ends_with("tiny.scale.md")),
        "{:?}",
        reports.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        reports,
        common::tree(&local_reports),
        "the curves differ:\n{err}"
    );
    assert_eq!(caches(&cluster_cache), caches(&local_cache), "{err}");
}

#[test]
fn a_worker_without_the_model_files_is_refused_with_the_files_it_lacks() {
    let mut g = shared();
    let s = g.as_mut().unwrap();
    let d = s.next_dir();
    // A cache root with the bi-encoder (the local side loads it) but not the cross-encoder: the
    // workers are told to read models from it, as a node that does not share the models would.
    let store = ranklab_engine::models::ModelStore::open_default().unwrap();
    let cache = d.join("cache");
    std::fs::create_dir_all(cache.join("models")).unwrap();
    std::os::unix::fs::symlink(store.root().join("runtime"), cache.join("runtime")).unwrap();
    std::os::unix::fs::symlink(
        store.root().join("models/bge-small-en-v1.5"),
        cache.join("models/bge-small-en-v1.5"),
    )
    .unwrap();
    let reports = d.join("reports");
    let address = s.cluster.client.clone();
    let o = beir(
        &s.coll,
        &cache,
        &reports,
        &["--cluster", &address, "--configs", "bm25+ce@10"],
    )
    .output()
    .unwrap();
    let err = common::stderr(&o);
    assert_eq!(common::code(&o), 2, "{err}");
    let last = err
        .lines()
        .rev()
        .find(|l| l.starts_with("error:"))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(last.contains("failed 3 times"), "{last}");
    assert!(
        last.contains("this worker lacks the files of model ms-marco-MiniLM-L-12-v2"),
        "{last}"
    );
    for f in ["model.onnx", "tokenizer.json", "config.json"] {
        let path = cache.join("models/ms-marco-MiniLM-L-12-v2").join(f);
        assert!(
            last.contains(&path.display().to_string()),
            "{f} not named: {last}"
        );
    }
    assert!(
        !cache.join("scores").exists()
            || common::tree(&cache.join("scores"))
                .keys()
                .all(|k| k.to_string_lossy().contains(".lock")),
        "a score reached the cache"
    );
    assert!(!reports.exists(), "reports were written");
}

#[test]
fn an_address_nobody_answers_at_and_a_python_without_ray_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let coll = collection(tmp.path());
    let cache = tmp.path().join("cache");
    let reports = tmp.path().join("reports");
    let dead = format!("ray://127.0.0.1:{}", free_port());
    let o = beir(&coll, &cache, &reports, &["--cluster", &dead])
        .output()
        .unwrap();
    let err = common::stderr(&o);
    assert_eq!(common::code(&o), 2, "{err}");
    assert!(err.contains("no Ray cluster answers there"), "{err}");
    assert!(err.contains("ray start --head"), "{err}");

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let live = format!("ray://{}", listener.local_addr().unwrap());
    // A real Python without ray: a fresh venv's.
    let venv = tmp.path().join("venv");
    let made = Command::new("python3")
        .args(["-m", "venv", "--without-pip"])
        .arg(&venv)
        .status()
        .unwrap();
    assert!(made.success());
    let o = beir(&coll, &cache, &reports, &["--cluster", &live])
        .env("RANKLAB_RAY_PYTHON", venv.join("bin/python"))
        .output()
        .unwrap();
    let err = common::stderr(&o);
    assert_eq!(common::code(&o), 2, "{err}");
    assert!(err.contains("ray is not installed"), "{err}");
    assert!(err.contains("pip install 'ray[client]==2.40.0'"), "{err}");
    assert!(!cache.exists(), "something was written to the cache");
    assert!(!reports.exists());
}

/// `(key, body sha256)` of every fine-tuned model file under `cache`: the header's key and the
/// sha256 of the weights, not the training record (whose seconds and threads are the
/// machine's).
fn fold_models(cache: &Path) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(cache.join("finetuned")).unwrap() {
        let bytes = std::fs::read(e.unwrap().path()).unwrap();
        let mut parts = bytes.splitn(3, |&b| b == b'\n');
        assert_eq!(parts.next(), Some(&b"ranklab-finetuned 1"[..]));
        let header: serde_json::Value = serde_json::from_slice(parts.next().unwrap()).unwrap();
        let body = parts.next().unwrap();
        // The oracle of the body's hash is sha2 here, not the header's claim.
        use sha2::Digest;
        let digest: String = sha2::Sha256::digest(body)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(header["body_sha256"].as_str().unwrap(), digest);
        out.insert(header["key"].as_str().unwrap().to_string(), digest);
    }
    out
}

/// Issue 27, "`--cluster` trains folds on Ray workers (one fold a task)": `beir --configs
/// bm25,bm25+ce-ft@5` (5 folds over the 8 queries) with --cluster trains every fold on the
/// worker nodes (a shard per fold, both nodes used, no fold trained locally) and stores models
/// with the weights of a local run's, bit for bit, under the same keys; the runs written are a
/// local run's, byte for byte. The first attempt of fold 1 returns, by the driver's test hook,
/// a model trained on other pairs: it is refused (its key is not the one asked for), never
/// stored, and the fold is trained again on the other node.
#[test]
fn fine_tuning_folds_train_on_the_cluster_as_they_train_locally() {
    let mut g = shared();
    let s = g.as_mut().unwrap();
    let args = ["--configs", "bm25,bm25+ce-ft@5"];
    let local_dir = s.next_dir();
    std::fs::create_dir_all(&local_dir).unwrap();
    let local_cache = common::cache_with_shared_models(&local_dir);
    let local_reports = local_dir.join("reports");
    let local_err = ok(&beir(&s.coll, &local_cache, &local_reports, &args)
        .output()
        .unwrap());
    let trained_here = |err: &str| {
        err.lines()
            .filter(|l| {
                l.starts_with("fine-tuning bm25+ce-ft@5 fold ") && l.contains("loss per epoch")
            })
            .count()
    };
    assert_eq!(
        trained_here(&local_err),
        5,
        "a local run trains its 5 folds:\n{local_err}"
    );
    let (cache, reports) = s.fresh();
    let address = s.cluster.client.clone();
    let mut cmd = beir(&s.coll, &cache, &reports, &args);
    cmd.args(["--cluster", &address])
        .env("RANKLAB_TEST_ONLY_WRONG_RECORDS", "finetune:0:keys");
    let err = ok(&cmd.output().unwrap());
    s.cluster.assert_loopback_only();
    assert!(
        err.contains("finetune 5 records of ms-marco-MiniLM-L-12-v2 in 5 shards"),
        "one shard per fold:\n{err}"
    );
    assert_eq!(trained_here(&err), 0, "a fold was trained locally:\n{err}");
    assert_eq!(nodes_used(&err), s.worker_ids(), "{err}");
    let refusals: Vec<&str> = err.lines().filter(|l| l.contains("was refused")).collect();
    assert_eq!(refusals.len(), 1, "{err}");
    assert!(refusals[0].contains("shard #0"), "{err}");
    assert!(refusals[0].contains("holds the model"), "{err}");
    let local = fold_models(&local_cache);
    assert_eq!(local.len(), 5);
    assert_eq!(fold_models(&cache), local, "{err}");
    let runs = |r: &Path| common::tree(&r.join("tiny/runs"));
    assert!(!runs(&local_reports).is_empty());
    assert_eq!(runs(&reports), runs(&local_reports), "{err}");
}
