//! ColBERT encoding speed: ranklab (`ColbertReranker`, Rust + `ort`) against Python onnxruntime
//! on the same model file, the same texts and the same thread count, side by side in one run.
//!
//! Workload: the first `RANKLAB_COLBERT_BENCH_DOCS` (default 100) SciFact documents, each the
//! passage ranklab scores (title then text, one section), encoded as passages
//! (`[CLS] [unused1] tokens… [SEP]` cut to 300, punctuation rows dropped, rows L2-normalised) by
//! answerai-colbert-small-v1 int8 on ONE single-threaded session, one text per run (ranklab's
//! batch 1). Both runtimes are ONNX Runtime 1.32.0 (ranklab loads the library of the
//! `onnxruntime==1.32.0` wheel; the Python side is that wheel), graph optimisation level 3 on
//! both. Timed: tokenising, the model run and normalising, from the first text to the last;
//! not timed: creating the session (each side encodes one warm-up text first) and starting
//! Python. The two sides alternate, `RANKLAB_COLBERT_BENCH_REPS` (default 5) times each; the
//! figure is each side's median documents per second, and their ratio.
//!
//! Before the figures count, the answer is checked: for every document, both sides keep the
//! same number of token vectors and the sums of their values agree to 1e-3 (the int8 graph is
//! the same; the Python side's recipe is `engine/tests/colbert/reference.py`'s, written apart).
//!
//! Run (the venv of `just colbert-python`: onnxruntime 1.32.0, tokenizers, numpy):
//! `RANKLAB_COLBERT_PYTHON=$PWD/target/colbert-venv/bin/python cargo bench -p ranklab-engine --bench colbert`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ranklab_engine::corpus::beir;
use ranklab_engine::models;
use ranklab_engine::rerank::ColbertReranker;

/// The Python side: encodes the passages of a JSON list as ranklab does, prints
/// `{"secs": wall seconds of the encoding, "docs": [[rows, sum of values], ...]}`.
const PYTHON: &str = r#"
import json, string, sys, time
import numpy as np
import onnxruntime
from tokenizers import Tokenizer

model_dir, texts_path = sys.argv[1:3]
opts = onnxruntime.SessionOptions()
opts.intra_op_num_threads = 1
opts.inter_op_num_threads = 1
opts.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
session = onnxruntime.InferenceSession(f"{model_dir}/model.onnx", opts, providers=["CPUExecutionProvider"])
tok = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
tok.no_padding()
tok.no_truncation()
vocab = tok.get_vocab()
cls_id, sep_id, d_marker = vocab["[CLS]"], vocab["[SEP]"], vocab["[unused1]"]
punctuation = {vocab[c] for c in string.punctuation if c in vocab}

def encode(text):
    ids = [cls_id, d_marker, *tok.encode(text, add_special_tokens=False).ids[:297], sep_id]
    a = np.asarray([ids], dtype=np.int64)
    h = session.run(["last_hidden_state"], {"input_ids": a, "attention_mask": np.ones_like(a), "token_type_ids": np.zeros_like(a)})[0][0]
    h = h[np.array([i not in punctuation for i in ids])]
    return h / np.linalg.norm(h, axis=1, keepdims=True)

texts = json.load(open(texts_path))
encode("warm up")
start = time.perf_counter()
out = [encode(t) for t in texts]
secs = time.perf_counter() - start
print(json.dumps({"secs": secs, "docs": [[int(m.shape[0]), float(m.sum(dtype=np.float64))] for m in out]}))
"#;

/// The SciFact collection: `RANKLAB_SHARED_DATA/scifact`, or `../shared/data/scifact` beside
/// the repository (as the justfile's `shared`).
fn scifact() -> PathBuf {
    let shared = std::env::var_os("RANKLAB_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    shared.join("scifact")
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .map(|v| {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}={v}: not a count"))
        })
        .unwrap_or(default)
}

/// One ranklab repetition on a fresh reranker (one single-threaded session, no token cache, its
/// memory store empty): seconds, and per document its rows and the sum of its values.
fn ranklab_once(dir: &models::ModelDir, texts: &[String]) -> (f64, Vec<(usize, f64)>) {
    let mut colbert = ColbertReranker::load(dir, Some(1)).expect("loading the model");
    colbert.vectors(&[("warm up", false)]).expect("warm-up");
    let asked: Vec<(&str, bool)> = texts.iter().map(|t| (t.as_str(), false)).collect();
    let start = Instant::now();
    let vectors = colbert.vectors(&asked).expect("encoding");
    let secs = start.elapsed().as_secs_f64();
    let docs = vectors
        .iter()
        .map(|v| (v.rows(), v.data.iter().map(|&x| f64::from(x)).sum()))
        .collect();
    (secs, docs)
}

/// One Python repetition: seconds, and per document its rows and the sum of its values.
fn python_once(python: &str, script: &Path, dir: &Path, texts: &Path) -> (f64, Vec<(usize, f64)>) {
    let out = Command::new(python)
        .arg(script)
        .arg(dir)
        .arg(texts)
        .output()
        .expect("running the Python side");
    assert!(
        out.status.success(),
        "the Python side failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("its JSON line");
    let docs = v["docs"]
        .as_array()
        .expect("docs")
        .iter()
        .map(|d| (d[0].as_u64().unwrap() as usize, d[1].as_f64().unwrap()))
        .collect();
    (v["secs"].as_f64().expect("secs"), docs)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let python = std::env::var("RANKLAB_COLBERT_PYTHON").expect(
        "set RANKLAB_COLBERT_PYTHON to a Python with onnxruntime==1.32.0, tokenizers and numpy \
         (`just colbert-python` makes target/colbert-venv)",
    );
    let (n, reps) = (
        env_usize("RANKLAB_COLBERT_BENCH_DOCS", 100),
        env_usize("RANKLAB_COLBERT_BENCH_REPS", 5),
    );
    let coll = beir::load_collection(&scifact(), "test").expect("loading SciFact");
    let texts: Vec<String> = coll.corpus.docs[..n]
        .iter()
        .map(|d| d.section_text(0))
        .collect();
    let dir = models::ensure_model("answerai-colbert-small-v1").expect("the model");
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let (script, texts_file) = (tmp.path().join("encode.py"), tmp.path().join("texts.json"));
    std::fs::write(&script, PYTHON).unwrap();
    std::fs::write(&texts_file, serde_json::to_vec(&texts).unwrap()).unwrap();

    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        let (rs, rdocs) = ranklab_once(&dir, &texts);
        let (ps, pdocs) = python_once(&python, &script, &dir.path, &texts_file);
        if rep == 0 {
            for (i, (r, p)) in rdocs.iter().zip(&pdocs).enumerate() {
                assert_eq!(r.0, p.0, "document {i}: token vectors kept differ");
                assert!(
                    (r.1 - p.1).abs() < 1e-3,
                    "document {i}: sums {r:?} vs {p:?}"
                );
            }
            assert_eq!(rdocs.len(), pdocs.len());
        }
        eprintln!(
            "rep {}: ranklab {:.1} docs/s, python {:.1} docs/s",
            rep + 1,
            n as f64 / rs,
            n as f64 / ps
        );
        ours.push(n as f64 / rs);
        theirs.push(n as f64 / ps);
    }
    let (ours, theirs) = (median(ours), median(theirs));
    println!(
        "ColBERT encoding, {n} SciFact documents, answerai-colbert-small-v1 int8, 1 thread, \
         median of {reps}:"
    );
    println!("  ranklab (Rust, ort)            {ours:8.1} docs/s");
    println!("  Python onnxruntime 1.32.0      {theirs:8.1} docs/s");
    println!("  ratio ranklab / Python         {:8.3}", ours / theirs);
}
