//! A cache record that holds a NaN (or an infinity) under a checksum recomputed to match is never
//! used (issue 25, item 8). Before, the checksum was the only check: such a vector or score was
//! served as a hit, and NaN scores reached the run file. Properties checked, for the embedding
//! cache and the cross-encoder score cache:
//! - the poisoned record is discarded and recomputed: the value served equals the stand-in
//!   model's own value computed directly in the test (the oracle), it is finite, and the
//!   lookup counts it as rebuilt;
//! - the warning is printed once for the file, on stderr, over a whole use of the cache (open,
//!   lookup, compute, explicit flush, drop): before, the flush re-read the file and warned a
//!   second time. stderr is captured by running this test binary again as a child process
//!   ([`child`]), as `harness/tests/cache_concurrency.rs` does;
//! - after the run the file is clean: reopened, nothing is discarded and the value is the
//!   recomputed one (the poison was not merged back from disk by the flush);
//! - the paired half: the same file without the patch opens with no warning and serves the
//!   value from the cache (no model work).
//!
//! The file is patched by hand from its documented layout (`engine/src/models/record_file.rs`):
//! magic (8), header length (u32 LE), header, header sum (32), then records of
//! key (32) | payload | sha256(key | payload). The key of an embedding is sha256(text); the key
//! of a score is sha256(sha256(query) | sha256(passage)).

use std::path::{Path, PathBuf};
use std::process::Command;

use ranklab_engine::dense::testing::HashEmbedder;
use ranklab_engine::dense::EmbeddingCache;
use ranklab_engine::rerank::testing::OverlapCrossEncoder;
use ranklab_engine::rerank::{Candidate, ScoreCache};
use sha2::{Digest, Sha256};

const TEXTS: [&str; 3] = ["alpha beta", "gamma", "delta epsilon zeta"];
const QUERY: &str = "alpha gamma";
const DIM: usize = 8;

fn sha(parts: &[&[u8]]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn candidates() -> Vec<Candidate> {
    TEXTS
        .iter()
        .enumerate()
        .map(|(i, t)| Candidate {
            doc_id: format!("d{i}"),
            passage: (*t).into(),
        })
        .collect()
}

/// The only file in `dir`.
fn only_file(dir: &Path) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// Writes `value` into the first f32 of the payload of the record with `key`, and recomputes
/// that record's checksum as the reader checks it.
fn poison(file: &Path, key: [u8; 32], payload: usize, value: f32) {
    let mut bytes = std::fs::read(file).unwrap();
    assert_eq!(&bytes[..8], b"RLCACHE1");
    let hlen = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    let start = 12 + hlen + 32;
    let record = 64 + payload;
    assert_eq!((bytes.len() - start) % record, 0, "whole records");
    let at = (start..bytes.len())
        .step_by(record)
        .find(|&r| bytes[r..r + 32] == key)
        .expect("the record of the key is in the file");
    bytes[at + 32..at + 36].copy_from_slice(&value.to_le_bytes());
    let sum = sha(&[&bytes[at..at + 32], &bytes[at + 32..at + 32 + payload]]);
    bytes[at + 32 + payload..at + record].copy_from_slice(&sum);
    std::fs::write(file, bytes).unwrap();
}

/// The child process (a no-op unless the parent set its variables): one whole use of the cache,
/// asserting the values served equal the stand-in model's direct values; prints the counts.
#[test]
fn child() {
    let (Some(which), Some(dir)) = (
        std::env::var_os("RANKLAB_TEST_POISON"),
        std::env::var_os("RANKLAB_TEST_POISON_DIR"),
    ) else {
        return;
    };
    let dir = Path::new(&dir);
    match which.to_str().unwrap() {
        "embeddings" => {
            let mut e = HashEmbedder::new(DIM);
            let cache = EmbeddingCache::open(dir, &e).unwrap();
            let (vectors, stats) = cache.embed(&mut e, &TEXTS).unwrap();
            let direct = HashEmbedder::new(DIM);
            for (t, v) in TEXTS.iter().zip(&vectors) {
                assert!(v.iter().all(|x| x.is_finite()), "{t}: {v:?}");
                assert_eq!(v, &direct.vector(t), "{t}");
            }
            println!(
                "stats: {} computed, {} rebuilt",
                stats.misses, stats.rebuilt
            );
            cache.flush().unwrap();
        }
        "scores" => {
            let mut ce = OverlapCrossEncoder::new();
            let cache = ScoreCache::open(dir, &ce).unwrap();
            let (scores, stats) = cache.score(&mut ce, QUERY, &candidates()).unwrap();
            let direct = OverlapCrossEncoder::new();
            for (t, s) in TEXTS.iter().zip(&scores) {
                assert!(s.is_finite(), "{t}: {s}");
                assert_eq!(*s, direct.pair_score(QUERY, t), "{t}");
            }
            println!(
                "stats: {} computed, {} rebuilt",
                stats.scored, stats.rebuilt
            );
            cache.flush().unwrap();
        }
        other => panic!("unknown cache {other}"),
    }
}

fn warnings(stderr: &str) -> usize {
    stderr.matches("warning: cache file").count()
}

/// Runs [`child`] in a new process on `dir` for `which` cache: the `stats: C computed, R
/// rebuilt` line it printed, and its stderr.
fn child_stats(dir: &Path, which: &str) -> (String, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("RANKLAB_TEST_POISON", which)
        .env("RANKLAB_TEST_POISON_DIR", dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "child {which}: {stdout}{stderr}"
    );
    // libtest may print the test's name on the same line.
    let line = stdout
        .lines()
        .find_map(|l| l.find("stats: ").map(|i| l[i..].to_string()))
        .unwrap_or_default();
    (line, stderr)
}

#[test]
fn a_nan_vector_under_a_matching_checksum_is_recomputed_with_one_warning() {
    for value in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        // A valid file, written by the cache itself.
        {
            let mut e = HashEmbedder::new(DIM);
            let cache = EmbeddingCache::open(dir, &e).unwrap();
            cache.embed(&mut e, &TEXTS).unwrap();
        }
        // The paired half: unpatched, every vector comes from the file and nothing is said.
        let (stats, stderr) = child_stats(dir, "embeddings");
        assert_eq!(stats, "stats: 0 computed, 0 rebuilt", "{stderr}");
        assert_eq!(warnings(&stderr), 0, "{stderr}");

        poison(&only_file(dir), sha(&[TEXTS[1].as_bytes()]), DIM * 4, value);
        let (stats, stderr) = child_stats(dir, "embeddings");
        assert_eq!(stats, "stats: 1 computed, 1 rebuilt", "{stderr}");
        assert_eq!(warnings(&stderr), 1, "{value}: one warning: {stderr}");
        assert!(
            stderr.contains("1 entry holding a non-finite value"),
            "{stderr}"
        );
        let (stats, _) = child_stats(dir, "embeddings");
        assert_eq!(
            stats, "stats: 0 computed, 0 rebuilt",
            "the file is clean again"
        );

        // Reopened here: nothing discarded, and the record is the true vector.
        let mut e = HashEmbedder::new(DIM);
        let cache = EmbeddingCache::open(dir, &e).unwrap();
        assert_eq!(cache.discarded_at_open(), 0);
        let (v, _) = cache.embed(&mut e, &[TEXTS[1]]).unwrap();
        assert_eq!(v[0], HashEmbedder::new(DIM).vector(TEXTS[1]));
        assert_eq!(e.calls(), 0, "served from the file");
    }
}

#[test]
fn a_nan_score_under_a_matching_checksum_is_recomputed_with_one_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    {
        let mut ce = OverlapCrossEncoder::new();
        let cache = ScoreCache::open(dir, &ce).unwrap();
        cache.score(&mut ce, QUERY, &candidates()).unwrap();
    }
    let (stats, stderr) = child_stats(dir, "scores");
    assert_eq!(stats, "stats: 0 computed, 0 rebuilt", "{stderr}");
    assert_eq!(warnings(&stderr), 0, "{stderr}");

    let key = sha(&[&sha(&[QUERY.as_bytes()]), &sha(&[TEXTS[0].as_bytes()])]);
    poison(&only_file(dir), key, 4, f32::NAN);
    let (stats, stderr) = child_stats(dir, "scores");
    assert_eq!(stats, "stats: 1 computed, 1 rebuilt", "{stderr}");
    assert_eq!(warnings(&stderr), 1, "one warning: {stderr}");
    assert!(
        stderr.contains("1 entry holding a non-finite value"),
        "{stderr}"
    );

    let mut ce = OverlapCrossEncoder::new();
    let cache = ScoreCache::open(dir, &ce).unwrap();
    assert_eq!(cache.discarded_at_open(), 0);
    let (s, _) = cache.score(&mut ce, QUERY, &candidates()[..1]).unwrap();
    assert_eq!(s[0], OverlapCrossEncoder::new().pair_score(QUERY, TEXTS[0]));
    assert_eq!(ce.pairs(), 0, "served from the file");
}
