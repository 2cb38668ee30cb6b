//! Helpers shared by the integration tests (each test file is its own crate and takes
//! `mod common;`; a file uses only some of these).
#![allow(dead_code)]

pub mod browser;
pub mod ray;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Experiments over the docir suite: three BM25 configurations, anserini's defaults (the
/// baseline), Robertson's k1 = 1.2, b = 0.75, and no length normalization (k1 = 2.0, b = 0).
/// What the report tests (`stats_report.rs`, `warranty_report.rs`) render.
pub const BM25_PARAMS_EXPERIMENTS: &str = "experiment: bm25-params
baseline: anserini
configurations:
  - name: anserini
    retriever: bm25
  - name: robertson
    retriever: bm25
    bm25: { k1: 1.2, b: 0.75 }
  - name: no-length-norm
    retriever: bm25
    bm25: { k1: 2.0, b: 0.0 }
";

/// The expected documents of each task of the gate fixture's suite
/// (`fixtures/gate/tasks/fx/suite.yaml`), copied by hand: the oracle of the gate and tune tests.
pub const FX_EXPECTED: [(&str, &[&str]); 5] = [
    ("F1", &["howto-deploy-platform"]),
    ("F2", &["adr-cache-valkey"]),
    ("F3", &["runbook-backup"]),
    ("F4", &["oncall-policy"]),
    (
        "F5",
        &["note-release-1", "note-release-2", "note-release-3"],
    ),
];

/// File contents by path relative to the tree's root.
pub type Tree = BTreeMap<PathBuf, Vec<u8>>;

/// Copies the directory tree `from` into `to` (created if missing).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Every file under `dir` with its bytes, keyed by its path relative to `dir`.
pub fn tree(dir: &Path) -> Tree {
    let mut m = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                m.insert(
                    p.strip_prefix(dir).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    m
}

/// The trec_eval test data (`trec_eval/` of `$RANKLAB_SHARED_DATA`, else of `../shared/data`
/// beside the repository): qrels.test, results.test and trec_eval's own outputs.
pub fn trec_eval_data() -> PathBuf {
    let base = match std::env::var_os("RANKLAB_SHARED_DATA") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"),
    };
    let dir = base.join("trec_eval");
    assert!(
        dir.join("qrels.test").is_file(),
        "trec_eval test data not found at {}: set RANKLAB_SHARED_DATA to the shared data directory \
         (the one holding trec_eval/ and scifact/)",
        dir.display()
    );
    dir
}

/// `harness/tests/fixtures/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fresh temporary copy of the fixture `name`.
pub fn fixture_copy(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(name), dir.path());
    dir
}

/// `ranklab gate ARGS` in `dir`, without `$GITHUB_STEP_SUMMARY`.
pub fn gate(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(dir)
        .arg("gate")
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run ranklab")
}

/// `ranklab ARGS` run in `dir`, in the test's own environment.
pub fn ranklab(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run ranklab")
}

/// A cache root under `dir` holding a copy of the default cache's models (SmolLM2 fetched
/// there first if absent), its score and grade caches empty: a judge run from it grades cold.
pub fn cache_with_llm(dir: &Path) -> PathBuf {
    let store = ranklab_engine::models::ModelStore::open_default().unwrap();
    store.ensure_model("smollm2-135m-instruct").unwrap();
    let cache = dir.join("cache");
    copy_dir(&store.root().join("models"), &cache.join("models"));
    cache
}

/// `ranklab ARGS` run in `dir` with the cache root `cache` (`RANKLAB_CACHE`): its stdout and
/// stderr, after asserting that it succeeded (the arguments and stderr in the message if not).
pub fn ranklab_cached(dir: &Path, cache: &Path, args: &[&str]) -> (String, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(dir)
        .args(args)
        .env("RANKLAB_CACHE", cache)
        .output()
        .expect("run ranklab");
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(o.status.success(), "{args:?}: {err}");
    (out, err)
}

/// `ranklab ARGS` run in the current directory: its stdout, after asserting that it succeeded
/// (its stderr in the message when it did not).
pub fn ok(args: &[&str]) -> String {
    ok_with(args, &[])
}

/// [`ok`] with the variables `env` set.
pub fn ok_with(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run ranklab");
    assert!(
        out.status.success(),
        "ranklab {args:?} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// `ranklab ARGS` run in `dir` with its own cache (`dir/cache`), without `$GITHUB_STEP_SUMMARY`.
pub fn ranklab_in(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run ranklab")
}

/// A finished process's stdout as text.
pub fn stdout(o: &std::process::Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A finished process's stderr as text.
pub fn stderr(o: &std::process::Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The line `N model load(s): ...` of a run's stderr (`Replayer::finish`'s last line); a
/// panic naming the stderr when there is none.
pub fn loads_line(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.contains(" model load"))
        .unwrap_or_else(|| panic!("no loads line:\n{stderr}"))
}

/// A finished process's exit code.
pub fn code(o: &std::process::Output) -> i32 {
    o.status.code().expect("exited")
}

/// Asserts bad input: exit 2, nothing on stdout, stderr starting with `error: <prefix>` (a
/// file, or `file:line:`) and holding each of `needles`.
pub fn assert_bad_input(o: &std::process::Output, prefix: &str, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(code(o), 2, "stdout: {}\nstderr: {err}", stdout(o));
    assert!(stdout(o).is_empty(), "{}", stdout(o));
    assert!(err.starts_with(&format!("error: {prefix}")), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in {err}");
    }
}

/// A fresh cache root under `dir` whose `models/` and `runtime/` are symlinks to the default
/// cache's (fetched there first if absent): the model files are shared read-only, while the
/// vector and score caches start empty and the default cache's are never touched.
pub fn cache_with_shared_models(dir: &Path) -> PathBuf {
    let store = ranklab_engine::models::ModelStore::open_default().unwrap();
    store.fetch_all(false).unwrap();
    let root = dir.join("cache");
    std::fs::create_dir_all(&root).unwrap();
    for sub in ["models", "runtime"] {
        std::os::unix::fs::symlink(store.root().join(sub), root.join(sub)).unwrap();
    }
    root
}

/// `tasks/<suite>` of the repository copied into `tasks/<suite>` with its corpus path made
/// absolute, the given experiments files (name, body), and those of `companions`
/// (`search-practice.yaml`, `paired.yaml`) the suite has.
pub fn copy_suite(tasks: &Path, name: &str, experiments: &[(&str, &str)], companions: &[&str]) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tasks")
        .join(name);
    let to = tasks.join(name);
    std::fs::create_dir_all(&to).unwrap();
    let suite = std::fs::read_to_string(from.join("suite.yaml")).unwrap();
    let suite: Vec<String> = suite
        .lines()
        .map(|l| match l.strip_prefix("corpus:") {
            Some(rel) => format!(
                "corpus: {}",
                from.join(rel.trim()).canonicalize().unwrap().display()
            ),
            None => l.to_string(),
        })
        .collect();
    std::fs::write(to.join("suite.yaml"), suite.join("\n") + "\n").unwrap();
    for (file, body) in experiments {
        std::fs::write(to.join(file), body).unwrap();
    }
    for f in companions {
        if from.join(f).is_file() {
            std::fs::copy(from.join(f), to.join(f)).unwrap();
        }
    }
}
