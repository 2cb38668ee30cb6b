//! Processes sharing one vector/score cache. Properties checked:
//! - two processes writing disjoint records to one record file at the same time leave every
//!   record of both in it: two copies of this test binary (re-run as writer processes, see
//!   [`writer_process`]) each store 200 vectors of their own through the public
//!   [`EmbeddingCache`], opening it afresh and flushing for every one (each flush reads the file,
//!   merges and renames under the record file's lock); afterwards all 400 are in the file,
//!   bit-identical. Without the lock a flush can rename over a file that gained the other
//!   writer's records after it read, dropping them: with the lock removed from
//!   `engine/src/models/record_file.rs` this test failed on each of 4 tries, 180 to 192 of the
//!   400 records lost;
//! - two ranklab processes sharing one empty cache, started at the same time, both finish with
//!   correct results (the same reports as a run on its own) and leave a valid cache: a third run
//!   afterwards finds every vector and every cross-encoder score in it (no model work) and loads
//!   no model, where a cold run loaded all three. Real
//!   models; the model files are copied from the default cache (fetched if absent) so only the
//!   vector and score caches start empty. The suite's experiments are replayed without the
//!   in-process LLM configuration ([`without_llm`]): its 700 SmolLM2 pairs take minutes per
//!   process on two cores, and its scores go through the same score cache as the two rerank
//!   models kept (its own determinism is engine/tests/llm_reranker.rs's).

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use ranklab_engine::dense::testing::HashEmbedder;
use ranklab_engine::dense::EmbeddingCache;
use ranklab_engine::models::ModelStore;

mod common;

/// tasks/docir/experiments.yaml without its configurations that rerank with an LLM, written
/// to `dir`; panics if it had none (then this filter is stale and the comment above wrong).
fn without_llm(dir: &Path) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("tasks/docir/experiments.yaml")).unwrap();
    let mut doc: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
    let configs = doc["configurations"].as_sequence_mut().unwrap();
    let before = configs.len();
    configs.retain(|c| c["rerank"].get("llm").is_none());
    assert!(
        configs.len() < before,
        "tasks/docir/experiments.yaml has no LLM configuration"
    );
    let path = dir.join("experiments.yaml");
    std::fs::write(&path, yaml_serde::to_string(&doc).unwrap()).unwrap();
    path
}

fn ranklab(experiments: &Path, cache: &Path, reports: &Path) -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut c = Command::new(env!("CARGO_BIN_EXE_ranklab"));
    // Only ranklab's own configurations: the external engines of experiments-engines.yaml need
    // their servers (tests/real_engines.rs covers them); this test is about the model caches.
    c.args(["run", "tasks/docir", "-x"])
        .arg(experiments)
        .arg("--reports")
        .arg(reports)
        .current_dir(root)
        .env("RANKLAB_CACHE", cache);
    c
}

fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn two_processes_share_one_cache_and_leave_it_valid() {
    let store = ModelStore::open_default().unwrap();
    store.fetch_all(false).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let experiments = without_llm(tmp.path());
    common::copy_dir(&store.root().join("models"), &cache.join("models"));
    common::copy_dir(&store.root().join("runtime"), &cache.join("runtime"));

    let (ra, rb, rc) = (
        tmp.path().join("a"),
        tmp.path().join("b"),
        tmp.path().join("c"),
    );
    // stderr captured (not inherited): the cold runs' model loads are checked below.
    let spawn = |reports: &Path| {
        ranklab(&experiments, &cache, reports)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(&ra), spawn(&rb));
    let (ea, eb) = (
        ok(a.wait_with_output().unwrap()),
        ok(b.wait_with_output().unwrap()),
    );
    assert_eq!(
        common::tree(&ra.join("docir")),
        common::tree(&rb.join("docir")),
        "concurrent runs disagree"
    );

    // A third run: every vector and score comes from the cache the two left behind.
    let ec = ok(ranklab(&experiments, &cache, &rc).output().unwrap());
    assert!(
        ec.contains("0 misses, 0 rebuilt"),
        "vectors recomputed:\n{ec}\n--- a:\n{ea}\n--- b:\n{eb}"
    );
    assert!(
        ec.contains("0 pairs scored") && ec.contains("0 rebuilt"),
        "pairs recomputed:\n{ec}"
    );
    // Models are loaded only on a cache miss: the cold runs had to load the bi-encoder and the
    // two rerank models, L-12 and ColBERT (at least the one of them that found the cache empty
    // loaded all three; the other may have found some of the first one's work already saved);
    // the warm run, with everything cached, loads none and says so.
    let all =
        "3 model loads: bge-small-en-v1.5, answerai-colbert-small-v1, ms-marco-MiniLM-L-12-v2";
    assert!(
        ea.contains(all) || eb.contains(all),
        "no cold run loaded every model:\n--- a:\n{ea}\n--- b:\n{eb}"
    );
    assert!(
        ec.contains("0 model loads"),
        "a warm run loaded a model:\n{ec}"
    );
    assert_eq!(
        common::tree(&ra.join("docir")),
        common::tree(&rc.join("docir")),
        "cached run disagrees"
    );
}

/// Records each writer process stores.
const PER_WRITER: usize = 200;

/// The text of writer `w`'s record `i`: the two writers' texts, hence keys, are disjoint.
fn text(w: usize, i: usize) -> String {
    format!("writer {w} record {i}")
}

/// Not a test of its own: the body of a writer process. When this binary is started with
/// `RANKLAB_TEST_WRITER=<w>` and `RANKLAB_TEST_CACHE=<dir>` (by
/// [`concurrent_writers_of_disjoint_records_keep_every_record`]), it waits for a line on stdin
/// (so both writers start together), then stores writer `w`'s records one at a time into the
/// embedding cache under `<dir>`, flushing the file after each. Otherwise it returns at once.
#[test]
fn writer_process() {
    let (Some(w), Some(dir)) = (
        std::env::var_os("RANKLAB_TEST_WRITER"),
        std::env::var_os("RANKLAB_TEST_CACHE"),
    ) else {
        return;
    };
    let w: usize = w.to_str().unwrap().parse().unwrap();
    let mut go = String::new();
    std::io::stdin().lock().read_line(&mut go).unwrap();
    let mut e = HashEmbedder::new(8);
    for i in 0..PER_WRITER {
        // Opened afresh for each record, as by a short run: a record the other writer's
        // rename dropped is not written again from this writer's memory.
        let cache = EmbeddingCache::open(Path::new(&dir), &e).unwrap();
        let (_, stats) = cache.embed(&mut e, &[&text(w, i)]).unwrap();
        assert_eq!(stats.misses, 1, "writer {w} record {i} was already there");
        cache.flush().unwrap();
    }
}

#[test]
fn concurrent_writers_of_disjoint_records_keep_every_record() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("embeddings");
    let mut writers: Vec<_> = (0..2)
        .map(|w| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "writer_process",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("RANKLAB_TEST_WRITER", w.to_string())
                .env("RANKLAB_TEST_CACHE", &dir)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in &mut writers {
        c.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    for (w, c) in writers.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "writer {w}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("1 passed"),
            "writer {w} did not run"
        );
    }

    // Oracle: the stand-in embedder's vector of each text, computed here; the file must hold
    // every record of both writers with exactly those bits, and serve all of them.
    let mut e = HashEmbedder::new(8);
    let cache = EmbeddingCache::open(&dir, &e).unwrap();
    assert_eq!(cache.discarded_at_open(), 0);
    let texts: Vec<String> = (0..2)
        .flat_map(|w| (0..PER_WRITER).map(move |i| text(w, i)))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (vectors, stats) = cache.embed(&mut e, &refs).unwrap();
    let lost: Vec<&str> = refs
        .iter()
        .zip(&vectors)
        .filter(|(t, v)| {
            let want: Vec<u32> = e.vector(t).iter().map(|x| x.to_bits()).collect();
            v.iter().map(|x| x.to_bits()).collect::<Vec<_>>() != want
        })
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(
        (stats.hits, stats.misses),
        (2 * PER_WRITER, 0),
        "records lost by concurrent writers"
    );
    assert!(lost.is_empty(), "wrong vectors for {lost:?}");
    assert_eq!(e.calls(), 0, "every vector came from the file");
}
