//! Prompt processing of the in-process LLM reranker (SmolLM2-135M-Instruct Q4_1 on candle)
//! against llama.cpp (llama-cpp-python) on the same GGUF, the same token ids and the same
//! thread count: prompt tokens per second, one forward pass per prompt from an empty cache,
//! exactly what scoring a pair does.
//!
//! Workload: 10 rerank prompts (the default yes/no prompt, one query, ten passages of 150–450
//! tokens), 2,800-odd tokens in all. Before measuring, the benchmark checks its answer: every
//! score is finite and a second pass gives the same bits.
//!
//! Run: `CANDLE_NUM_THREADS=2 RAYON_NUM_THREADS=2 RANKLAB_LLAMA_PYTHON=<python with
//! llama_cpp> cargo bench -p ranklab-engine --bench llm` (llama.cpp gets the same thread
//! count; set candle's with the two variables, default 2 for llama.cpp). Without
//! `RANKLAB_LLAMA_PYTHON` only candle is measured. The rounds alternate candle and llama.cpp
//! (each round every prompt once) so that a busy machine slows both alike; the median round of
//! each is reported, with their ratio. llama.cpp runs `engine/benches/llm_llama_cpp.py`, which
//! reads the token ids this benchmark writes and times only its `eval` calls.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ranklab_engine::models;
use ranklab_engine::rerank::prompt::PromptTemplate;
use ranklab_engine::rerank::LlmReranker;

mod shared;

const ROUNDS: usize = 3;
const QUERY: &str = "implement idempotency keys on the payment capture endpoint";

fn passages() -> Vec<String> {
    let topics = shared::TOPICS;
    topics
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let n = 4 + i % 8; // 4..11 sentences-worth of text
            (0..n)
                .map(|j| format!("{t} (Section {}.{})", i + 1, j + 1))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One round of candle: every prompt once; returns tokens per second.
fn candle_round(m: &mut LlmReranker, prompts: &[Vec<u32>]) -> f64 {
    let tokens: usize = prompts.iter().map(Vec::len).sum();
    let t0 = Instant::now();
    for p in prompts {
        std::hint::black_box(m.score_ids(p).expect("score"));
    }
    tokens as f64 / t0.elapsed().as_secs_f64()
}

/// One round of llama.cpp in a child process; returns its tokens per second.
fn llama_round(python: &str, gguf: &Path, ids_file: &Path, threads: &str) -> f64 {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/llm_llama_cpp.py");
    let out = Command::new(python)
        .arg(script)
        .arg(gguf)
        .arg(ids_file)
        .arg(threads)
        .output()
        .expect("run the llama.cpp script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "llama.cpp script failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("TOKENS_PER_SECOND "))
        .unwrap_or_else(|| panic!("no TOKENS_PER_SECOND line in {stdout}"));
    line.trim().parse().expect("a number")
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("llm: benchmark");
        return;
    }
    let dir = models::ensure_model("smollm2-135m-instruct").unwrap_or_else(|e| panic!("{e}"));
    let t0 = Instant::now();
    let mut m =
        LlmReranker::load(&dir, &PromptTemplate::default()).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "load (Q4_1 expanded to f32): {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    let prompts: Vec<Vec<u32>> = passages()
        .iter()
        .map(|p| m.prompt_ids(QUERY, p).expect("tokenize"))
        .collect();
    let tokens: usize = prompts.iter().map(Vec::len).sum();
    let lens: Vec<usize> = prompts.iter().map(Vec::len).collect();
    println!("{} prompts, {tokens} tokens ({lens:?})", prompts.len());

    // The answer: finite scores, the same bits twice.
    let a: Vec<f32> = prompts.iter().map(|p| m.score_ids(p).unwrap()).collect();
    let b: Vec<f32> = prompts.iter().map(|p| m.score_ids(p).unwrap()).collect();
    assert!(a.iter().all(|s| s.is_finite()), "{a:?}");
    assert_eq!(
        a.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
        b.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
    );

    let python = std::env::var("RANKLAB_LLAMA_PYTHON")
        .ok()
        .filter(|p| !p.is_empty());
    let tmp = tempfile::tempdir().expect("tempdir");
    let ids_file = tmp.path().join("prompts.json");
    std::fs::write(&ids_file, serde_json::to_string(&prompts).unwrap()).unwrap();
    let gguf = dir.file("model.gguf");
    // llama.cpp gets candle's thread count (2 unless CANDLE_NUM_THREADS says otherwise).
    let threads = std::env::var("CANDLE_NUM_THREADS").unwrap_or_else(|_| "2".into());
    let (mut candle, mut llama) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        candle.push(candle_round(&mut m, &prompts));
        if let Some(py) = &python {
            llama.push(llama_round(py, &gguf, &ids_file, &threads));
        }
        println!(
            "round {}: candle {:.1} tok/s{}",
            round + 1,
            candle[round],
            llama
                .get(round)
                .map(|l| format!(", llama.cpp {l:.1} tok/s"))
                .unwrap_or_default()
        );
    }
    let c = median(candle);
    print!("median: candle {c:.1} prompt tokens/s");
    if !llama.is_empty() {
        let l = median(llama);
        print!(
            ", llama.cpp {l:.1} prompt tokens/s, candle/llama.cpp = {:.2}",
            c / l
        );
    }
    println!(" (threads: candle {threads}, llama.cpp {threads})");
}
