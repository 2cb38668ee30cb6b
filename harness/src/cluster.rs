//! Model work on a Ray cluster (`--cluster ray://HOST:PORT`): the [`Remote`] the embedding and
//! score caches hand their misses to.
//!
//! ranklab runs the Ray driver kept in the repository (`harness/ray/driver.py`, built into the
//! binary, ray pinned in `harness/ray/requirements.txt`) with the Python that has ray installed,
//! writes one line per shard to it and reads one line per finished attempt back. Each shard is one
//! Ray task of one CPU running `ranklab work` (this very binary, at its path) on its node; the
//! binary and the model files (`$RANKLAB_CACHE/models`, `runtime`) must be on a path every node
//! reads — on one machine, the same paths. Every returned record file is verified by the cache
//! ([`ranklab_engine::models::remote`]); a shard that fails (a lost node, a worker error) or
//! whose file is refused is run again, asked away from the node that failed it, up to
//! [`ATTEMPTS`] times. Progress on stderr: shards done/total, records/s, ETA; at the end how many
//! shards were retried.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use ranklab_engine::models::remote::{Remote, WorkRequest};

/// The driver script (harness/ray/driver.py).
const DRIVER: &str = include_str!("../ray/driver.py");

/// The ray version the driver is pinned to (harness/ray/requirements.txt).
pub(crate) const RAY_PIN: &str = "2.40.0";

/// Attempts per shard before the run fails.
pub(crate) const ATTEMPTS: usize = 3;

/// How to install the driver's Python packages.
fn install_hint() -> String {
    format!(
        "install it in a venv: python3 -m venv target/ray-venv && target/ray-venv/bin/pip install \
         'ray[client]=={RAY_PIN}' (harness/ray/requirements.txt), then pass --ray-python \
         target/ray-venv/bin/python or set RANKLAB_RAY_PYTHON"
    )
}

/// A Ray cluster to send model work to.
pub(crate) struct Ray {
    address: String,
    python: PathBuf,
    shard_records: usize,
    binary: PathBuf,
    cache_root: PathBuf,
    /// The driver, started on the first shard and kept for the run (one client connection).
    driver: std::sync::Mutex<Option<Driver>>,
}

impl Ray {
    /// Checks `address` (`ray://HOST:PORT`, the head's Ray Client port) answers and `python`
    /// has the pinned ray, before any work starts.
    pub(crate) fn connect(
        address: &str,
        python: Option<PathBuf>,
        shard_records: usize,
    ) -> Result<Ray> {
        // ray://HOST:PORT: Ray Client, from anywhere; HOST:PORT: a GCS address, this machine
        // being a node of the cluster (the driver attaches to the raylet at HOST).
        let hostport = address.strip_prefix("ray://").unwrap_or(address);
        let start_one = "start one with `ray start --head --node-ip-address=127.0.0.1 \
                         --port=6379 --ray-client-server-port=10001` (and `ray start \
                         --address=HEAD:6379` on every other node), then pass --cluster \
                         ray://HEAD:10001";
        let addrs: Vec<_> = hostport
            .to_socket_addrs()
            .with_context(|| format!("--cluster {address}: not a HOST:PORT; {start_one}"))?
            .collect();
        if !addrs
            .iter()
            .any(|a| TcpStream::connect_timeout(a, Duration::from_secs(3)).is_ok())
        {
            bail!("--cluster {address}: no Ray cluster answers there; {start_one}");
        }
        let python = python
            .or_else(|| std::env::var_os("RANKLAB_RAY_PYTHON").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("python3"));
        let out = Command::new(&python)
            .args(["-c", "import ray, grpc; print(ray.__version__)"])
            .stdin(Stdio::null())
            .output();
        match out {
            Err(e) => bail!(
                "--cluster needs Python with ray, but {} cannot run ({e}); {}",
                python.display(),
                install_hint()
            ),
            Ok(o) if !o.status.success() => bail!(
                "ray is not installed for {} ({}); {}",
                python.display(),
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("import failed"),
                install_hint()
            ),
            Ok(o) => {
                let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
                if v != RAY_PIN {
                    bail!(
                        "{} has ray {v}; the driver is pinned to ray=={RAY_PIN}; {}",
                        python.display(),
                        install_hint()
                    );
                }
            }
        }
        let binary = std::env::current_exe().context("locating the ranklab binary")?;
        let cache_root = std::path::absolute(ranklab_engine::models::cache_root()?)
            .context("resolving the cache root")?;
        Ok(Ray {
            address: address.to_string(),
            python,
            shard_records: shard_records.max(1),
            binary,
            cache_root,
            driver: std::sync::Mutex::new(None),
        })
    }
}

impl std::fmt::Debug for Ray {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ray")
            .field("address", &self.address)
            .field("python", &self.python)
            .finish_non_exhaustive()
    }
}

/// One line the driver prints.
#[derive(Debug, serde::Deserialize)]
struct Reply {
    #[serde(default)]
    fatal: Option<String>,
    #[serde(default)]
    ready: bool,
    #[serde(default)]
    nodes: usize,
    #[serde(default)]
    driver_node: Option<String>,
    #[serde(default)]
    shard: usize,
    #[serde(default)]
    ok: bool,
    #[serde(default)]
    node: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

impl Remote for Ray {
    fn shard_records(&self) -> usize {
        self.shard_records
    }

    fn compute(
        &self,
        work: &WorkRequest,
        accept: &mut ranklab_engine::models::remote::Accept<'_>,
    ) -> ranklab_engine::Result<()> {
        let mut slot = self.driver.lock().unwrap_or_else(|p| p.into_inner());
        let outcome = (|| -> Result<()> {
            if slot.is_none() {
                *slot = Some(self.spawn()?);
            }
            let d = slot.as_mut().expect("spawned above");
            d.calls += 1;
            let r = d.drive(&self.address, work, accept);
            r.map_err(|e| d.with_log(e))
        })();
        if outcome.is_err() {
            // A driver that failed is not reused: the next call starts a fresh one.
            if let Some(mut d) = slot.take() {
                let _ = d.child.kill();
                let _ = d.child.wait();
            }
        }
        outcome.map_err(|e| ranklab_engine::Error::Model {
            model: work.model.clone(),
            message: format!("on the cluster {}: {e:#}", self.address),
        })
    }
}

/// A node id as progress shows it: its first 12 hex digits.
fn short(node: &str) -> String {
    node.chars().take(12).collect()
}

/// The running driver: one Ray Client connection for the whole run.
struct Driver {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<BufReader<std::process::ChildStdout>>,
    dir: tempfile::TempDir,
    nodes: usize,
    /// The node whose raylet the driver attached to (a node that dies takes the driver along).
    driver_node: String,
    calls: usize,
}

impl Drop for Ray {
    fn drop(&mut self) {
        let slot = self.driver.get_mut().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = slot.take() {
            let Driver {
                mut child, stdin, ..
            } = d;
            drop(stdin);
            let _ = child.wait();
        }
    }
}

impl Ray {
    fn spawn(&self) -> Result<Driver> {
        let dir = tempfile::Builder::new()
            .prefix("ranklab-cluster-")
            .tempdir()
            .context("creating the shard directory")?;
        let driver = dir.path().join("driver.py");
        std::fs::write(&driver, DRIVER).context("writing the Ray driver")?;
        let log = std::fs::File::create(dir.path().join("driver.log"))
            .context("creating the driver log")?;
        let mut child = Command::new(&self.python)
            .arg(&driver)
            .args(["--address", &self.address, "--binary"])
            .arg(&self.binary)
            .arg("--env")
            .arg(format!("RANKLAB_CACHE={}", self.cache_root.display()))
            .args(
                std::env::var("ORT_DYLIB_PATH")
                    .ok()
                    .map(|p| format!("ORT_DYLIB_PATH={p}"))
                    .into_iter()
                    .flat_map(|e| ["--env".to_string(), e]),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting the Ray driver with {}", self.python.display()))?;
        let mut d = Driver {
            stdin: child.stdin.take().expect("piped"),
            lines: BufReader::new(child.stdout.take().expect("piped")).lines(),
            child,
            dir,
            nodes: 0,
            driver_node: String::new(),
            calls: 0,
        };
        let ready = match d.next() {
            Ok(r) => r,
            Err(e) => {
                let e = d.with_log(e);
                let _ = d.child.kill();
                let _ = d.child.wait();
                return Err(e);
            }
        };
        if !ready.ready {
            bail!("the Ray driver did not say it was ready");
        }
        d.nodes = ready.nodes;
        d.driver_node = ready.driver_node.unwrap_or_else(|| "unknown".into());
        Ok(d)
    }
}

impl Driver {
    fn next(&mut self) -> Result<Reply> {
        // Ray itself prints some news on the driver's stdout (a raylet that died, in colour):
        // the protocol's lines are the JSON objects.
        let line = loop {
            let line = self
                .lines
                .next()
                .ok_or_else(|| anyhow!("the Ray driver exited before the work was done"))?
                .context("reading the Ray driver")?;
            if line.starts_with('{') {
                break line;
            }
        };
        let r: Reply =
            serde_json::from_str(&line).with_context(|| format!("the Ray driver said {line:?}"))?;
        if let Some(f) = r.fatal {
            bail!("{f}");
        }
        Ok(r)
    }

    /// `e` with the tail of the driver's stderr (Ray's own messages), when it has one.
    fn with_log(&self, e: anyhow::Error) -> anyhow::Error {
        let log = std::fs::read_to_string(self.dir.path().join("driver.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(8).collect();
        if tail.is_empty() {
            return e;
        }
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        e.context(format!("the driver's log ends:\n{}", tail.join("\n")))
    }

    /// Runs the shards of `work` on the cluster: each written to a file, submitted, and its
    /// record file handed to `accept` as it comes back; a failed or refused shard is retried
    /// away from its node, up to [`ATTEMPTS`] times.
    fn drive(
        &mut self,
        address: &str,
        work: &WorkRequest,
        accept: &mut ranklab_engine::models::remote::Accept<'_>,
    ) -> Result<()> {
        let n = work.shards.len();
        let mut shards = Shards::new(work, self.dir.path().to_path_buf(), self.calls);
        for (i, s) in work.shards.iter().enumerate() {
            std::fs::write(shards.file(i, "jsonl"), &s.input).context("writing a shard")?;
        }
        eprintln!(
            "cluster {address}: {} {} records of {} in {n} shards over {} node(s) \
             (the driver on node {})",
            work.kind.name(),
            shards.total,
            work.model,
            self.nodes,
            short(&self.driver_node)
        );
        for i in 0..n {
            shards.submit(&mut self.stdin, i)?;
        }
        shards.started = Instant::now();
        while shards.done < n {
            let r = self.next()?;
            shards.reply(r, &mut self.stdin, accept)?;
        }
        for i in 0..n {
            let _ = std::fs::remove_file(shards.file(i, "jsonl"));
        }
        let secs = shards.started.elapsed().as_secs_f64();
        let retried = shards.attempts.iter().filter(|&&a| a > 1).count();
        let records = shards.records;
        eprintln!(
            "cluster {address}: {n} shards ({retried} retried), {records} records in {secs:.1} s, {:.1} records/s",
            records as f64 / secs.max(1e-9)
        );
        Ok(())
    }
}

/// The shards of one call of [`Driver::drive`]: their files, attempts and progress.
struct Shards<'w> {
    work: &'w WorkRequest,
    /// The driver's folder, where the shard files are.
    dir: PathBuf,
    /// Which call of the driver this is (the shard files are `c<call>-shard-<i>.*`).
    call: usize,
    /// Per shard: attempts so far, the nodes it failed on, whether its records were accepted.
    attempts: Vec<usize>,
    avoid: Vec<Vec<String>>,
    finished: Vec<bool>,
    /// Shards and records accepted, of `total` records; since when (for the rate).
    done: usize,
    records: usize,
    total: usize,
    started: Instant,
}

impl<'w> Shards<'w> {
    fn new(work: &'w WorkRequest, dir: PathBuf, call: usize) -> Shards<'w> {
        let n = work.shards.len();
        Shards {
            work,
            dir,
            call,
            attempts: vec![0usize; n],
            avoid: vec![Vec::new(); n],
            finished: vec![false; n],
            done: 0,
            records: 0,
            total: work.shards.iter().map(|s| s.records).sum(),
            started: Instant::now(),
        }
    }

    /// The file of shard `i` with extension `ext` (`jsonl` its input, `rec` its records).
    fn file(&self, i: usize, ext: &str) -> PathBuf {
        self.dir.join(format!("c{}-shard-{i}.{ext}", self.call))
    }

    /// Sends shard `i` (its next attempt) to the driver.
    fn submit(&mut self, stdin: &mut std::process::ChildStdin, i: usize) -> Result<()> {
        self.attempts[i] += 1;
        let line = serde_json::json!({
            "shard": i,
            "attempt": self.attempts[i],
            "kind": self.work.kind.name(),
            "model": self.work.model,
            "args": self.work.args,
            "input": self.file(i, "jsonl"),
            "output": self.file(i, "rec"),
            "avoid": self.avoid[i],
        });
        writeln!(stdin, "{line}").context("writing to the Ray driver")?;
        stdin.flush().context("writing to the Ray driver")
    }

    /// Takes one reply of the driver: a finished shard's record file is handed to `accept`
    /// (progress on stderr); a failed or refused one is submitted again away from its node, or,
    /// after [`ATTEMPTS`], is an error. A reply for an unknown or finished shard is ignored.
    fn reply(
        &mut self,
        r: Reply,
        stdin: &mut std::process::ChildStdin,
        accept: &mut ranklab_engine::models::remote::Accept<'_>,
    ) -> Result<()> {
        let n = self.work.shards.len();
        let i = r.shard;
        if i >= n || self.finished[i] {
            return Ok(());
        }
        let node = r.node.clone().unwrap_or_else(|| "unknown".into());
        let short = short(&node);
        let refused = if r.ok {
            let path = self.file(i, "rec");
            let bytes =
                std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            let _ = std::fs::remove_file(&path);
            match accept(i, &bytes) {
                Ok(k) => {
                    self.finished[i] = true;
                    self.done += 1;
                    self.records += k;
                    let (done, records, total) = (self.done, self.records, self.total);
                    let secs = self.started.elapsed().as_secs_f64();
                    let rate = records as f64 / secs.max(1e-9);
                    let eta = (total - records) as f64 / rate.max(1e-9);
                    eprintln!(
                        "cluster: shard {done}/{n} done (#{i} on node {short}), \
                         {records}/{total} records, {rate:.1} records/s, ETA {eta:.0} s"
                    );
                    None
                }
                Err(why) => Some(format!("its record file was refused: {why}")),
            }
        } else {
            Some(r.error.unwrap_or_else(|| "failed".into()))
        };
        if let Some(why) = refused {
            if self.attempts[i] >= ATTEMPTS {
                bail!("shard {i} failed {ATTEMPTS} times; the last time on node {short}: {why}");
            }
            eprintln!(
                "cluster: shard #{i} on node {short}: {why}; retrying it away from that node \
                 (attempt {} of {ATTEMPTS})",
                self.attempts[i] + 1
            );
            if r.node.is_some() {
                self.avoid[i].push(node);
            }
            self.submit(stdin, i)?;
        }
        Ok(())
    }
}
