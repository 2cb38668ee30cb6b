//! `ranklab beir --cluster` on a real Ray cluster of several nodes on 127.0.0.1 (ray 2.40.0 from
//! PyPI in target/ray-venv, installed by `.ci/run`; override with RANKLAB_RAY_PYTHON). Each
//! test starts its own head node and worker nodes (`ray start`, one CPU each, each with its own
//! --temp-dir and ports) and stops them in a guard, also on panic, by killing only the
//! processes whose command line names that cluster's temporary directory. Properties checked:
//! - a 50-document BEIR collection run through a head and a worker node leaves the embedding
//!   and score caches byte-for-byte equal to a local run's, writes byte-identical reports, runs
//!   shards on both nodes, and never runs the cross-encoder locally;
//! - bad input: an address nobody answers at (exit 2, says how to start a cluster), a Python
//!   without ray (exit 2, says how to install it); nothing is written to the cache.
//!
//! Real models (bge-small-en-v1.5, ms-marco-MiniLM-L-12-v2), shared read-only from the default
//! cache; the vector and score caches of every run are temporary.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

mod common;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Python with ray: $RANKLAB_RAY_PYTHON, else target/ray-venv/bin/python. A missing one
/// fails the test with the command that installs it (nothing is skipped).
fn ray_python() -> PathBuf {
    let p = std::env::var_os("RANKLAB_RAY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/ray-venv/bin/python"));
    assert!(
        p.exists(),
        "{} is missing: python3 -m venv target/ray-venv && target/ray-venv/bin/pip install -r \
         harness/ray/requirements.txt (.ci/run does this)",
        p.display()
    );
    p
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Whether some socket of this machine listens on TCP `port` (any address).
fn listening(port: u16) -> bool {
    let hex = format!(":{port:04X} ");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() > 3 && format!("{} ", cols[1]).ends_with(&hex) && cols[3] == "0A"
            })
        })
    })
}

/// The head node's address. Each node gets a loopback address of its own (the head 127.0.0.2,
/// worker w 127.0.0.(3 + w)), as separate machines would: Ray 2.40 replaces exactly 127.0.0.1
/// with the machine's outward address (`services.resolve_ip_for_localhost`), and nodes sharing one
/// address also share the "local raylet" a client's driver attaches to.
const HEAD_IP: &str = "127.0.0.2";

/// A Ray cluster on loopback addresses, stopped on drop.
///
/// Ray 2.40 takes the head's --temp-dir for every node of a cluster; the Ray Client server, which
/// does not name it, is told apart by the GCS port it connects to.
struct Cluster {
    dir: tempfile::TempDir,
    client_port: u16,
    gcs: u16,
}

impl Cluster {
    /// A head node and `workers` worker nodes, one CPU each.
    fn start(workers: usize) -> Cluster {
        let python = ray_python();
        let ray = python.with_file_name("ray");
        // Short: Ray's unix sockets live under the temp dir (108-byte path limit).
        let dir = tempfile::Builder::new()
            .prefix("rl")
            .tempdir_in("/tmp")
            .unwrap();
        let cluster = Cluster {
            client_port: free_port(),
            dir,
            gcs: free_port(),
        };
        let gcs = cluster.gcs;
        let mut agents = Vec::new();
        let mut node = |name: &str, ip: &str| -> Command {
            let agent = free_port();
            agents.push(agent);
            let mut c = Command::new(&ray);
            let temp = cluster.dir.path().join(name);
            c.arg("start")
                .arg(format!("--temp-dir={}", temp.display()))
                .arg(format!("--node-ip-address={ip}"))
                .args([
                    "--num-cpus=1",
                    "--object-store-memory=100000000",
                    "--disable-usage-stats",
                ])
                .arg(format!("--dashboard-agent-listen-port={}", free_port()))
                .arg(format!("--dashboard-agent-grpc-port={}", free_port()))
                .arg(format!("--metrics-export-port={}", free_port()))
                .arg(format!("--runtime-env-agent-port={agent}"))
                .env("RAY_USAGE_STATS_ENABLED", "0")
                .stdout(Stdio::null());
            c
        };
        let run = |mut c: Command, what: &str| {
            let o = c.output().unwrap();
            assert!(
                o.status.success(),
                "ray start ({what}) failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        let mut head = node("head", HEAD_IP);
        head.args(["--head", "--include-dashboard=false"])
            .arg(format!("--port={gcs}"))
            .arg(format!("--ray-client-server-port={}", cluster.client_port));
        run(head, "head");
        for w in 0..workers {
            let mut c = node(&format!("w{w}"), &format!("127.0.0.{}", 3 + w));
            c.arg(format!("--address={HEAD_IP}:{gcs}"));
            run(c, "worker");
        }
        // The Ray Client server asks the head's runtime-env agent for every new client, and
        // gives up after about 15 s; on a loaded machine the agents can take longer to start.
        for port in agents {
            let start = std::time::Instant::now();
            while !listening(port) {
                assert!(
                    start.elapsed() < std::time::Duration::from_secs(180),
                    "the runtime-env agent on port {port} never started"
                );
                std::thread::sleep(std::time::Duration::from_millis(500));
            }
        }
        cluster
    }

    fn address(&self) -> String {
        format!("ray://{HEAD_IP}:{}", self.client_port)
    }

    /// Processes whose command line satisfies `wanted`.
    fn pids(wanted: impl Fn(&str) -> bool) -> Vec<i32> {
        let mut pids = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            if wanted(&String::from_utf8_lossy(&cmd).replace('\0', " ")) {
                pids.push(pid);
            }
        }
        pids
    }

    /// Every process of this cluster.
    fn all_pids(&self) -> Vec<i32> {
        let dir = self.dir.path().to_string_lossy().into_owned();
        let gcs = format!(":{} ", self.gcs);
        Cluster::pids(|c| {
            c.contains(&dir) || (c.contains("ray.util.client.server") && c.contains(&gcs))
        })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for sig in ["-TERM", "-KILL"] {
            for pid in self.all_pids() {
                let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    }
}

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
    c.arg("beir")
        .arg(coll)
        .args([
            "--configs",
            "bm25,dense,bm25+ce@10",
            "--depth",
            "20",
            "--reports",
        ])
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

/// The vector and score caches of a cache root (the model files are shared symlinks).
fn caches(cache: &Path) -> common::Tree {
    let mut t = common::tree(&cache.join("embeddings"));
    for (k, v) in common::tree(&cache.join("scores")) {
        t.insert(Path::new("scores").join(k), v);
    }
    t.retain(|p, _| !p.to_string_lossy().contains(".lock"));
    t
}

/// A local run of the collection: its caches and reports.
fn local(tmp: &Path, coll: &Path) -> (common::Tree, common::Tree) {
    let cache = common::cache_with_shared_models(&tmp.join("local"));
    let reports = tmp.join("local-reports");
    ok(&beir(coll, &cache, &reports, &[]).output().unwrap());
    (caches(&cache), common::tree(&reports))
}

fn nodes_used(stderr: &str) -> std::collections::BTreeSet<String> {
    stderr
        .lines()
        .filter_map(|l| l.split(" on node ").nth(1))
        .filter_map(|rest| rest.split([')', ':']).next())
        .map(str::to_string)
        .collect()
}

#[test]
fn a_two_node_cluster_fills_the_cache_with_the_bytes_of_a_local_run() {
    let tmp = tempfile::tempdir().unwrap();
    let coll = collection(tmp.path());
    let (local_caches, local_reports) = local(tmp.path(), &coll);
    let cluster = Cluster::start(1);
    let cache = common::cache_with_shared_models(&tmp.path().join("cl"));
    let reports = tmp.path().join("cl-reports");
    let address = cluster.address();
    let err = ok(&beir(
        &coll,
        &cache,
        &reports,
        &["--cluster", &address, "--shard-records", "8"],
    )
    .output()
    .unwrap());
    assert!(err.contains("over 2 node(s)"), "{err}");
    assert!(
        nodes_used(&err).len() >= 2,
        "shards ran on one node only:\n{err}"
    );
    // The loads line names every model loaded locally (the bi-encoder is loaded once on a cold
    // cache to learn its vector length; it computes nothing).
    let loads = err
        .lines()
        .find(|l| l.contains(" model load"))
        .unwrap_or_else(|| panic!("no loads line:\n{err}"));
    assert!(
        !loads.contains("ms-marco"),
        "the cross-encoder ran locally: {loads}"
    );
    assert!(!local_caches.is_empty());
    assert_eq!(
        caches(&cache),
        local_caches,
        "cluster cache differs:\n{err}"
    );
    assert_eq!(common::tree(&reports), local_reports, "reports differ");
    drop(cluster);
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
