//! TREC pooling (`ranklab pool`): per task, the unjudged documents in the top K of every
//! configuration's run (`reports/<suite>/runs/*.trec`), to be judged.
//!
//! Order inside a task (total): more configurations surfacing the document first, then its best
//! (smallest) rank, then the sum of its ranks over the configurations that surfaced it, then
//! document id in byte order. Tasks in suite order. The sheet (`tasks/<suite>/pool.yaml`) is
//! written atomically; the same runs give the same bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::suite::Suite;
use crate::trec::read_run;

/// One pooled document of a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pooled {
    /// Document id.
    pub doc: String,
    /// Configurations that have it in their top K (name order).
    pub configurations: Vec<String>,
    /// Its best rank among them (1-based).
    pub best_rank: usize,
    /// Sum of its ranks over those configurations (the order's third key).
    pub rank_sum: usize,
}

/// The pool of a suite.
#[derive(Debug, Clone)]
pub struct Pool {
    /// Suite name.
    pub suite: String,
    /// Depth K.
    pub depth: usize,
    /// Per task (suite order): id, query, pooled documents.
    pub tasks: Vec<(String, String, Vec<Pooled>)>,
    /// Configuration names (the run files found), name order.
    pub configurations: Vec<String>,
}

/// The run files of a suite's report: `<reports>/<suite>/runs/*.trec`, name order.
pub fn run_files(reports: &Path, suite: &Suite) -> Result<Vec<PathBuf>> {
    let dir = reports.join(&suite.name).join("runs");
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&dir) {
        for e in rd {
            let p = e
                .with_context(|| format!("listing {}", dir.display()))?
                .path();
            if p.extension().is_some_and(|x| x == "trec") {
                out.push(p);
            }
        }
    }
    out.sort();
    if out.is_empty() {
        bail!(
            "{}: no runs yet (no *.trec); run `ranklab run {}` first, then pool",
            dir.display(),
            suite.dir().display()
        );
    }
    Ok(out)
}

/// The runs of `runs` named by `names` (configuration = the file stem), in `runs`' order; all of
/// them when `names` is empty. A name with no run is an error listing the runs there are.
pub fn only(runs: Vec<PathBuf>, names: &[String]) -> Result<Vec<PathBuf>> {
    if names.is_empty() {
        return Ok(runs);
    }
    let stem = |p: &PathBuf| {
        p.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    for n in names {
        if !runs.iter().any(|p| &stem(p) == n) {
            let dir = runs
                .first()
                .and_then(|p| p.parent())
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            bail!(
                "--configs {n}: no run {n}.trec in {dir}; the runs there are: {} (run the configuration first, or name one of those)",
                runs.iter().map(stem).collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(runs
        .into_iter()
        .filter(|p| names.contains(&stem(p)))
        .collect())
}

/// Pools the suite's runs at `depth`.
pub fn pool(suite: &Suite, runs: &[PathBuf], depth: usize) -> Result<Pool> {
    if depth == 0 {
        bail!("--depth 0: the pool depth must be at least 1");
    }
    // task -> doc -> (configurations, ranks)
    type Surfaced = (Vec<String>, Vec<usize>);
    let mut found: BTreeMap<&str, BTreeMap<String, Surfaced>> = BTreeMap::new();
    let mut configurations = Vec::new();
    for path in runs {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let queries = read_run(path).with_context(|| format!("reading {}", path.display()))?;
        for q in &queries {
            let Some(task) = suite.tasks.iter().find(|t| t.id == q.qid) else {
                continue;
            };
            for (i, (doc, _)) in q.docs.iter().take(depth).enumerate() {
                if task.expected.contains_key(doc) {
                    continue;
                }
                let e = found
                    .entry(task.id.as_str())
                    .or_default()
                    .entry(doc.clone())
                    .or_default();
                e.0.push(name.clone());
                e.1.push(i + 1);
            }
        }
        configurations.push(name);
    }
    configurations.sort();
    let tasks = suite
        .tasks
        .iter()
        .map(|t| {
            let mut docs: Vec<Pooled> = found
                .remove(t.id.as_str())
                .unwrap_or_default()
                .into_iter()
                .map(|(doc, (mut configurations, ranks))| {
                    configurations.sort();
                    Pooled {
                        doc,
                        configurations,
                        best_rank: ranks.iter().copied().min().unwrap_or(0),
                        rank_sum: ranks.iter().sum(),
                    }
                })
                .collect();
            docs.sort_by(|a, b| {
                b.configurations
                    .len()
                    .cmp(&a.configurations.len())
                    .then(a.best_rank.cmp(&b.best_rank))
                    .then(a.rank_sum.cmp(&b.rank_sum))
                    .then(a.doc.as_bytes().cmp(b.doc.as_bytes()))
            });
            (t.id.clone(), t.query.clone(), docs)
        })
        .collect();
    Ok(Pool {
        suite: suite.name.clone(),
        depth,
        tasks,
        configurations,
    })
}

fn yaml_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

impl Pool {
    /// Documents to judge, over all tasks.
    pub fn documents(&self) -> usize {
        self.tasks.iter().map(|t| t.2.len()).sum()
    }

    /// Per configuration, the pooled documents it surfaced.
    pub fn per_configuration(&self) -> Vec<(String, usize)> {
        self.configurations
            .iter()
            .map(|c| {
                let n = self
                    .tasks
                    .iter()
                    .flat_map(|t| &t.2)
                    .filter(|p| p.configurations.contains(c))
                    .count();
                (c.clone(), n)
            })
            .collect()
    }

    /// The judging sheet (`pool.yaml`).
    pub fn yaml(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# Unjudged documents in the top {} of every configuration (ranklab pool); judge them with `ranklab judge`.",
            self.depth
        );
        let _ = writeln!(s, "suite: {}", yaml_str(&self.suite));
        let _ = writeln!(s, "depth: {}", self.depth);
        let _ = writeln!(
            s,
            "configurations: [{}]",
            self.configurations
                .iter()
                .map(|c| yaml_str(c))
                .collect::<Vec<_>>()
                .join(", ")
        );
        s.push_str("tasks:\n");
        for (id, query, docs) in &self.tasks {
            let _ = writeln!(s, "  - id: {}", yaml_str(id));
            let _ = writeln!(s, "    query: {}", yaml_str(query));
            if docs.is_empty() {
                s.push_str("    documents: []\n");
                continue;
            }
            s.push_str("    documents:\n");
            for p in docs {
                let _ = writeln!(
                    s,
                    "      - {{ id: {}, best_rank: {}, configurations: [{}] }}",
                    yaml_str(&p.doc),
                    p.best_rank,
                    p.configurations
                        .iter()
                        .map(|c| yaml_str(c))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        s
    }

    /// The one-line summary printed on stdout.
    pub fn summary(&self, path: &Path) -> String {
        format!(
            "{}: {} tasks, {} documents to judge (top {} of {} configurations); per configuration: {}",
            crate::report::shown(path),
            self.tasks.len(),
            self.documents(),
            self.depth,
            self.configurations.len(),
            self.per_configuration()
                .iter()
                .map(|(c, n)| format!("{c} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
