//! A real Ray cluster on 127.0.0.1 for the `--cluster` tests (ray 2.40.0 from PyPI in
//! target/ray-venv, installed by `.ci/run`; override with RANKLAB_RAY_PYTHON), driven through
//! `tests/ray/cluster.py`: a head node with no CPU (it runs no shard) and worker nodes of one
//! CPU each, every node IP 127.0.0.1 and every listening socket bound to it (the script says
//! why not `ray start`: ray 2.40 rewrites --node-ip-address=127.0.0.1 into the outward
//! address, and its servers then listen on every interface). The cluster stops when its value
//! is dropped or the test process exits, whichever way: the script reads its stdin, and on EOF
//! stops every process it started (and any left that name its directory or its GCS port), then
//! deletes its directory.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// The repository's root.
pub fn root() -> PathBuf {
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
         harness/ray/requirements.txt (just setup does this)",
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

/// A Ray cluster on 127.0.0.1 (see the module's doc), stopped on drop.
pub struct Cluster {
    child: Child,
    /// Taken on drop: the script sees EOF and stops the cluster.
    stdin: Option<ChildStdin>,
    stdout: std::io::Lines<BufReader<ChildStdout>>,
    /// The script's directory: Ray's temp dir, and where the tests keep their files.
    pub dir: PathBuf,
    /// `ray://127.0.0.1:PORT`, the head's Ray Client address.
    pub client: String,
    /// (node id, raylet pid) of the worker nodes alive.
    pub workers: Vec<(String, i32)>,
}

impl Cluster {
    /// A head node and `workers` worker nodes of one CPU each, on 127.0.0.1.
    pub fn start(workers: usize) -> Cluster {
        // Short: Ray's unix sockets live under it (108-byte path limit). Removed by the script.
        let dir = tempfile::Builder::new()
            .prefix("rl")
            .tempdir_in("/tmp")
            .unwrap()
            .keep();
        let log = std::fs::File::create(dir.join("cluster.log")).unwrap();
        let mut child = Command::new(python())
            .arg(root().join("harness/tests/ray/cluster.py"))
            .arg(&dir)
            .arg(workers.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut c = Cluster {
            child,
            stdin: Some(stdin),
            stdout,
            dir,
            client: String::new(),
            workers: Vec::new(),
        };
        let up = c.reply();
        c.client = up["client"].as_str().unwrap().to_string();
        assert!(c.client.starts_with("ray://127.0.0.1:"), "{up}");
        for n in up["nodes"].as_array().unwrap() {
            if !n["head"].as_bool().unwrap() {
                c.workers.push((
                    n["id"].as_str().unwrap().to_string(),
                    n["raylet"].as_i64().unwrap() as i32,
                ));
            }
        }
        assert_eq!(c.workers.len(), workers, "{up}");
        c
    }

    /// `ray://127.0.0.1:PORT`, the head's Ray Client address.
    pub fn address(&self) -> String {
        self.client.clone()
    }

    /// The last lines of the cluster's Ray Client server logs (`ray_client_server*.err|out`), to
    /// show beside a command that failed on it.
    pub fn client_logs(&self) -> String {
        let mut files: Vec<PathBuf> = Vec::new();
        for logs in ["session_latest/logs", "ray/session_latest/logs"] {
            if let Ok(d) = std::fs::read_dir(self.dir.join(logs)) {
                files.extend(d.flatten().map(|e| e.path()));
            }
        }
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

    /// The script's next JSON line; its log's tail when it has none.
    fn reply(&mut self) -> serde_json::Value {
        for line in self.stdout.by_ref() {
            let line = line.unwrap();
            if line.starts_with('{') {
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                assert!(v.get("error").is_none(), "{v}");
                return v;
            }
        }
        let _ = self.child.try_wait();
        let log = std::fs::read_to_string(self.dir.join("cluster.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(30).collect::<Vec<_>>();
        panic!(
            "the cluster script stopped:\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }

    /// Sends one command to the script (see its doc) and returns its answer.
    pub fn command(&mut self, line: &str) -> serde_json::Value {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        self.reply()
    }

    /// Every process of the cluster: those below the script.
    fn pids(&self) -> Vec<i32> {
        let mut parent = std::collections::BTreeMap::<i32, i32>::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
                continue;
            };
            // pid (comm) state ppid ...: comm may hold spaces and parentheses.
            let after = stat.rsplit_once(')').map(|(_, a)| a).unwrap_or("");
            if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
                parent.insert(pid, ppid);
            }
        }
        let mut out = vec![self.child.id() as i32];
        let mut i = 0;
        while i < out.len() {
            let p = out[i];
            out.extend(parent.iter().filter(|(_, &pp)| pp == p).map(|(&c, _)| c));
            i += 1;
        }
        out
    }

    /// Every TCP socket the cluster's processes listen on is bound to 127.0.0.1: the local
    /// addresses of /proc/net/tcp{,6} whose inode one of their fds holds.
    pub fn assert_loopback_only(&self) {
        let mut inodes = std::collections::BTreeMap::new();
        for pid in self.pids() {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                continue;
            };
            for fd in fds.flatten() {
                if let Ok(l) = std::fs::read_link(fd.path()) {
                    let l = l.to_string_lossy().into_owned();
                    if let Some(i) = l.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                        inodes.insert(i.to_string(), pid);
                    }
                }
            }
        }
        let mut listening = Vec::new();
        for (file, loopback) in [
            ("/proc/net/tcp", &["0100007F"][..]),
            // ::ffff:127.0.0.1 (an IPv4 socket of a dual-stack listener) and ::1.
            (
                "/proc/net/tcp6",
                &[
                    "0000000000000000FFFF00000100007F",
                    "00000000000000000000000001000000",
                ][..],
            ),
        ] {
            for l in std::fs::read_to_string(file).unwrap().lines().skip(1) {
                let cols: Vec<&str> = l.split_whitespace().collect();
                if cols.len() < 10 || cols[3] != "0A" {
                    continue;
                }
                if let Some(pid) = inodes.get(cols[9]) {
                    let (addr, port) = cols[1].split_once(':').unwrap();
                    let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
                    listening.push((
                        loopback.contains(&addr),
                        addr.to_string(),
                        port.to_string(),
                        cmd,
                    ));
                }
            }
        }
        assert!(
            listening.len() >= 4,
            "fewer listening sockets than the GCS, the client server and two raylets have: {listening:?}"
        );
        let outward: Vec<_> = listening.iter().filter(|l| !l.0).collect();
        assert!(
            outward.is_empty(),
            "listening beyond 127.0.0.1 (address, hex port, command): {outward:?}"
        );
    }
}

impl Drop for Cluster {
    /// Closes the script's stdin (it then stops the cluster, bounded, see its doc) and waits up
    /// to 60 s for it to exit, then kills it.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(60) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
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
