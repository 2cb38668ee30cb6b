//! `ranklab work embed|score`, the worker side of cluster model work. Properties checked:
//! - the record file `work embed` writes for 20 docir section texts is byte-for-byte the
//!   embedding cache file a local computation of the same texts writes (the library's
//!   `EmbeddingCache` over the real bge-small-en-v1.5, opened on an empty cache directory);
//! - the same for `work score` and the score cache, on 20 (query, section) pairs of two docir
//!   tasks' queries with the real ms-marco-MiniLM-L-12-v2;
//! - a worker without the model files exits 2 naming the files it lacks, and writes nothing;
//! - a shard line that is not `{"text": ...}` exits 2 naming the file and line.
//!
//! Real models, shared read-only from the default cache; every cache written is temporary.

use std::path::Path;
use std::process::{Command, Output};

use ranklab_engine::corpus::Corpus;
use ranklab_engine::dense::{EmbedderOptions, EmbeddingCache, FastembedEmbedder};
use ranklab_engine::models::remote::{embed_input, score_input};
use ranklab_engine::models::ModelStore;
use ranklab_engine::rerank::{Candidate, CrossEncoderOptions, FastembedCrossEncoder, ScoreCache};

mod common;

fn work(cache: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .arg("work")
        .args(args)
        .env("RANKLAB_CACHE", cache)
        .output()
        .unwrap()
}

fn sections(n: usize) -> Vec<String> {
    let corpus =
        Corpus::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpora/docir")).unwrap();
    corpus
        .docs
        .iter()
        .flat_map(|d| (0..d.sections.len()).map(|i| d.section_text(i)))
        .take(n)
        .collect()
}

/// The only file in `dir`.
fn only_file(dir: &Path) -> Vec<u8> {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read(&files[0]).unwrap()
}

#[test]
fn work_embed_writes_the_bytes_a_local_run_caches() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = common::cache_with_shared_models(tmp.path());
    let texts = sections(20);
    assert_eq!(texts.len(), 20);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let input = tmp.path().join("shard.jsonl");
    std::fs::write(&input, embed_input(&refs)).unwrap();
    let out = tmp.path().join("shard.rec");
    let o = work(
        &cache,
        &[
            "embed",
            "--model",
            "bge-small-en-v1.5",
            "--in",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--workers",
            "1",
        ],
    );
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));

    // The local path: the embedding cache of a run, on an empty directory.
    let store = ModelStore::at(&cache);
    let mut e = FastembedEmbedder::load(
        &store.model("bge-small-en-v1.5").unwrap(),
        &EmbedderOptions::default(),
    )
    .unwrap();
    let local = tmp.path().join("local");
    let c = EmbeddingCache::open(&local, &e).unwrap();
    c.embed(&mut e, &refs).unwrap();
    drop(c);
    assert_eq!(std::fs::read(&out).unwrap(), only_file(&local));
}

#[test]
fn work_score_writes_the_bytes_a_local_run_caches() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = common::cache_with_shared_models(tmp.path());
    let passages = sections(10);
    let queries = [
        "implement idempotency keys on the payment capture endpoint",
        "rotate the API keys of a merchant",
    ];
    let p: Vec<&str> = passages.iter().map(String::as_str).collect();
    let requests: Vec<(&str, Vec<&str>)> = queries.iter().map(|q| (*q, p.clone())).collect();
    let input = tmp.path().join("shard.jsonl");
    std::fs::write(&input, score_input(&requests)).unwrap();
    let out = tmp.path().join("shard.rec");
    let o = work(
        &cache,
        &[
            "score",
            "--model",
            "ms-marco-MiniLM-L-12-v2",
            "--in",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));

    let store = ModelStore::at(&cache);
    let mut ce = FastembedCrossEncoder::load(
        &store.model("ms-marco-MiniLM-L-12-v2").unwrap(),
        &CrossEncoderOptions::default(),
    )
    .unwrap();
    let local = tmp.path().join("local");
    let c = ScoreCache::open(&local, &ce).unwrap();
    let cands: Vec<Candidate> = p
        .iter()
        .enumerate()
        .map(|(i, s)| Candidate {
            doc_id: i.to_string(),
            passage: (*s).into(),
        })
        .collect();
    for q in queries {
        c.score(&mut ce, q, &cands).unwrap();
    }
    drop(c);
    let local = only_file(&local);
    assert_eq!(std::fs::read(&out).unwrap(), local);
    // 20 records of 4-byte logits after the header (each record: key 32, payload 4, sum 32).
    let hlen = u32::from_le_bytes(local[8..12].try_into().unwrap()) as usize;
    assert_eq!(local.len() - 12 - hlen - 32, 20 * 68);
}

#[test]
fn a_worker_without_the_model_files_names_them_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("shard.jsonl");
    std::fs::write(&input, embed_input(&["a text"])).unwrap();
    let out = tmp.path().join("shard.rec");
    let empty = tmp.path().join("empty-cache");
    let o = work(
        &empty,
        &[
            "embed",
            "--model",
            "bge-small-en-v1.5",
            "--in",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = common::stderr(&o);
    assert_eq!(common::code(&o), 2, "{err}");
    assert!(
        err.contains("lacks the files of model bge-small-en-v1.5"),
        "{err}"
    );
    assert!(err.contains("model.onnx"), "{err}");
    assert!(!out.exists());
    assert!(!empty.join("models").exists(), "the worker fetched a model");

    std::fs::write(&input, "{\"text\": \"a\"}\n{\"txt\": \"b\"}\n").unwrap();
    let o = work(
        &empty,
        &[
            "embed",
            "--model",
            "bge-small-en-v1.5",
            "--in",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = common::stderr(&o);
    assert_eq!(common::code(&o), 2, "{err}");
    assert!(err.contains("shard.jsonl:2"), "{err}");
}
