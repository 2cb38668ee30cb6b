//! ranklab's ColBERT reranker (answerai-colbert-small-v1) against an independent implementation:
//! the same model file through Python onnxruntime 1.32.0 + `tokenizers` + numpy
//! (`tests/colbert/reference.py`, its own id assembly and its own MaxSim), on 100 (query,
//! passage) pairs: the first 10 SciFact queries, each against 10 corpus documents (title and
//! abstract; documents 10·i … 10·i+9 for query i, so 100 distinct passages, many longer than
//! the 300-token cut, all with punctuation).
//!
//! Asserted: every query's and passage's token ids equal the script's, and every score equals
//! the script's within [`TOLERANCE`]. Both sides run the same ONNX Runtime build single-threaded
//! on one text at a time, so the hidden states are expected to be the same; what remains is f32
//! summation order (numpy's BLAS against a plain loop) over at most 32 × 384-term dot products.
//!
//! `#[ignore]`d so that a bare `cargo test` needs no Python: `just colbert-python` makes the
//! venv (pinned wheels) and runs it with `RANKLAB_COLBERT_PYTHON` set. Run without it, it fails
//! loudly. Needs the SciFact files under `RANKLAB_SHARED_DATA` and fetches the model if absent.

use std::path::PathBuf;
use std::process::Command;

use ranklab_engine::models;
use ranklab_engine::rerank::{ColbertReranker, ColbertTokenizer, CrossEncoder};

/// Largest |ranklab − Python| accepted on a score (these scores lie between 21.3 and 26.3, at
/// most 32 = one per query vector; seen on this machine: 7.6e-6).
const TOLERANCE: f32 = 1e-4;

fn jsonl(path: PathBuf, n: usize) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .take(n)
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
#[ignore = "needs the Python venv of `just colbert-python`"]
fn colbert_scores_equal_python_onnxruntime_on_100_scifact_pairs() {
    let python = std::env::var("RANKLAB_COLBERT_PYTHON")
        .expect("set RANKLAB_COLBERT_PYTHON to a python with onnxruntime, tokenizers, numpy (just colbert-python)");
    let shared = PathBuf::from(
        std::env::var("RANKLAB_SHARED_DATA").expect("RANKLAB_SHARED_DATA (SciFact files)"),
    );
    let queries = jsonl(shared.join("scifact/queries.jsonl"), 10);
    let docs = jsonl(shared.join("scifact/corpus.jsonl"), 100);
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (i, q) in queries.iter().enumerate() {
        for d in &docs[10 * i..10 * i + 10] {
            let passage = format!(
                "{} {}",
                d["title"].as_str().unwrap_or(""),
                d["text"].as_str().unwrap_or("")
            );
            pairs.push((q["text"].as_str().expect("query text").to_string(), passage));
        }
    }
    assert_eq!(pairs.len(), 100);

    let dir = models::ensure_model("answerai-colbert-small-v1").unwrap_or_else(|e| panic!("{e}"));
    let tmp = tempfile::tempdir().unwrap();
    let input = tmp.path().join("pairs.json");
    let output = tmp.path().join("scores.json");
    let body: Vec<_> = pairs
        .iter()
        .map(|(q, p)| serde_json::json!({"query": q, "passage": p}))
        .collect();
    std::fs::write(&input, serde_json::to_vec(&body).unwrap()).unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/colbert/reference.py");
    let status = Command::new(&python)
        .arg(&script)
        .arg(&dir.path)
        .arg(&input)
        .arg(&output)
        .status()
        .unwrap_or_else(|e| panic!("running {python}: {e}"));
    assert!(status.success(), "{} failed: {status}", script.display());
    let reference: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
    assert_eq!(reference.len(), 100);

    let tokenizer = ColbertTokenizer::load(&dir).unwrap();
    let mut model = ColbertReranker::load(&dir, Some(1)).unwrap();
    let ids = |v: &serde_json::Value| -> Vec<u32> {
        v.as_array()
            .expect("ids")
            .iter()
            .map(|x| x.as_u64().expect("an id") as u32)
            .collect()
    };
    let mut max_delta = 0f32;
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    let mut long = 0;
    for (i, ((q, p), r)) in pairs.iter().zip(&reference).enumerate() {
        let qe = tokenizer.query(q).unwrap();
        let pe = tokenizer.passage(p).unwrap();
        assert_eq!(qe.ids, ids(&r["query_ids"]), "pair {i}: query ids");
        assert_eq!(pe.ids, ids(&r["passage_ids"]), "pair {i}: passage ids");
        if pe.ids.len() == ranklab_engine::rerank::DOC_LEN {
            long += 1;
        }
        let got = model.score(q, &[p.as_str()]).unwrap()[0];
        let want = r["score"].as_f64().expect("score") as f32;
        let delta = (got - want).abs();
        (lo, hi) = (lo.min(want), hi.max(want));
        max_delta = max_delta.max(delta);
        assert!(
            delta <= TOLERANCE,
            "pair {i}: ranklab {got} python {want} (|Δ| {delta})"
        );
    }
    assert!(long > 0, "some passages should reach the 300-token cut");
    eprintln!(
        "100 pairs, {long} passages cut at 300 tokens; scores {lo}..{hi}; max |Δ| = {max_delta:e}"
    );
}
