//! A real Ray cluster on 127.0.0.1 for the `--cluster` tests (ray 2.40.0 from PyPI in
//! target/ray-venv, installed by `.ci/run`; override with RANKLAB_RAY_PYTHON): a head node with
//! no CPU (it runs no shard) and worker nodes of one CPU each, every address 127.0.0.1 (the
//! flags of bench/ray-cluster/run.sh: one --temp-dir, a port of its own for every agent). The
//! cluster is stopped on drop, also on panic, by signalling only its own processes: those whose
//! command line names its temporary directory, and the Ray Client server of its GCS port.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Python with ray: $RANKLAB_RAY_PYTHON, else target/ray-venv/bin/python. A missing one
/// fails the test with the command that installs it (nothing is skipped).
pub fn python() -> PathBuf {
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

/// A TCP port free on 127.0.0.1 now.
pub fn free_port() -> u16 {
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

/// A Ray cluster on 127.0.0.1, stopped on drop.
pub struct Cluster {
    dir: tempfile::TempDir,
    gcs: u16,
    client_port: u16,
}

impl Cluster {
    /// A head node without CPUs and `workers` worker nodes of one CPU each.
    pub fn start(workers: usize) -> Cluster {
        let ray = python().with_file_name("ray");
        // Short: Ray's unix sockets live under the temp dir (108-byte path limit).
        let dir = tempfile::Builder::new()
            .prefix("rl")
            .tempdir_in("/tmp")
            .unwrap();
        let cluster = Cluster {
            dir,
            gcs: free_port(),
            client_port: free_port(),
        };
        let mut agents = Vec::new();
        let mut start = |extra: Vec<String>| {
            let agent = free_port();
            agents.push(agent);
            let o = Command::new(&ray)
                .arg("start")
                .arg(format!(
                    "--temp-dir={}",
                    cluster.dir.path().join("ray").display()
                ))
                .args([
                    "--node-ip-address=127.0.0.1",
                    "--object-store-memory=100000000",
                    "--disable-usage-stats",
                ])
                .arg(format!("--dashboard-agent-listen-port={}", free_port()))
                .arg(format!("--dashboard-agent-grpc-port={}", free_port()))
                .arg(format!("--metrics-export-port={}", free_port()))
                .arg(format!("--runtime-env-agent-port={agent}"))
                .args(extra)
                .env("RAY_USAGE_STATS_ENABLED", "0")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .output()
                .unwrap();
            assert!(
                o.status.success(),
                "ray start failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        start(vec![
            "--head".into(),
            "--num-cpus=0".into(),
            "--include-dashboard=false".into(),
            format!("--port={}", cluster.gcs),
            format!("--ray-client-server-port={}", cluster.client_port),
        ]);
        for _ in 0..workers {
            start(vec![
                format!("--address=127.0.0.1:{}", cluster.gcs),
                "--num-cpus=1".into(),
            ]);
        }
        // The Ray Client server asks the head's runtime-env agent for every new client and gives
        // up after about 15 s; on a loaded machine the agents can take longer to start.
        for port in agents {
            let t = Instant::now();
            while !listening(port) {
                assert!(
                    t.elapsed() < Duration::from_secs(180),
                    "the runtime-env agent on port {port} never started"
                );
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        cluster
    }

    /// `ray://127.0.0.1:PORT`, the head's Ray Client address.
    pub fn address(&self) -> String {
        format!("ray://127.0.0.1:{}", self.client_port)
    }

    /// The last lines of the cluster's Ray Client server logs (`ray_client_server*.err|out`), to
    /// show beside a command that failed on it.
    pub fn client_logs(&self) -> String {
        let logs = self.dir.path().join("ray/session_latest/logs");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&logs)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            n.starts_with("ray_client_server") && (n.ends_with(".err") || n.ends_with(".out"))
        });
        files.sort();
        let mut out = String::new();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            out += &format!("--- {}\n", f.display());
            for l in &lines[lines.len().saturating_sub(60)..] {
                out += &format!("{l}\n");
            }
        }
        out
    }

    /// Every process of this cluster.
    fn pids(&self) -> Vec<i32> {
        let dir = format!("{}/", self.dir.path().display());
        let gcs = format!(":{} ", self.gcs);
        let mut pids = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let c = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if c.contains(&dir) || (c.contains("ray.util.client.server") && c.contains(&gcs)) {
                pids.push(pid);
            }
        }
        pids
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for sig in ["-TERM", "-KILL"] {
            for pid in self.pids() {
                let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

/// The vector and score caches of a cache root (`embeddings/`, `scores/`; the model files are
/// shared symlinks and left out, as are lock files).
pub fn caches(cache: &Path) -> super::Tree {
    let mut t = super::tree(&cache.join("embeddings"));
    for (k, v) in super::tree(&cache.join("scores")) {
        t.insert(Path::new("scores").join(k), v);
    }
    t.retain(|p, _| !p.to_string_lossy().contains(".lock"));
    t
}
