//! Scoring speed of a fine-tuned (float) cross-encoder (`FinetunedCrossEncoder::score`) the two
//! ways it runs, on the same pairs, in the same run: the default (one pair at a time, candle's
//! matrix products split over the machine's cores) and `RAYON_NUM_THREADS=1` (each product on
//! one thread, the pairs of a query side by side, one per core). The model is the dequantized
//! ms-marco-MiniLM-L-12-v2, which has a fold model's shape and cost; max length 512, as the fold
//! models score. Each round runs both ways as child processes (alternating which goes first),
//! times the scoring alone (not the loading) and fails unless both gave the same score bits;
//! it prints one JSON line per round.
//!
//! Usage: cargo run --release --example score_speed -p ranklab-engine -- PAIRS [ROUNDS]
//! (PAIRS: JSON lines {"query", "passage"}, grouped by query as a rerank scores them.)

use std::time::Instant;

use ranklab_engine::models;
use ranklab_engine::rerank::bert::{dequantize, tokenizer};
use ranklab_engine::rerank::finetuned::FinetunedCrossEncoder;
use ranklab_engine::rerank::CrossEncoder;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Scores every pair of `path` once; prints {"seconds", "scores"} (the scores' bits in hex).
fn child(path: &str) -> Res<()> {
    let dir = models::ensure_model("ms-marco-MiniLM-L-12-v2")?;
    let weights = dequantize(&dir.path.join("model.onnx"))?;
    let tok = tokenizer(&dir.path, 512)?;
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for line in std::fs::read_to_string(path)?.lines() {
        let v: serde_json::Value = serde_json::from_str(line)?;
        let q = v["query"].as_str().ok_or("a pair without query")?;
        let p = v["passage"].as_str().ok_or("a pair without passage")?;
        match groups.last_mut() {
            Some((last, ps)) if last == q => ps.push(p.to_string()),
            _ => groups.push((q.to_string(), vec![p.to_string()])),
        }
    }
    let mut model = FinetunedCrossEncoder::new("speed", weights, tok)?;
    let t = Instant::now();
    let mut bits = String::new();
    let mut n = 0;
    for (q, ps) in &groups {
        let refs: Vec<&str> = ps.iter().map(String::as_str).collect();
        for s in model.score(q, &refs)? {
            bits.push_str(&format!("{:08x}", s.to_bits()));
            n += 1;
        }
    }
    let seconds = t.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({"seconds": seconds, "pairs": n, "scores": bits})
    );
    Ok(())
}

fn run(path: &str, threads: &str) -> Res<serde_json::Value> {
    let o = std::process::Command::new(std::env::current_exe()?)
        .arg(path)
        .env("SCORE_SPEED_CHILD", "1")
        .env("RAYON_NUM_THREADS", threads)
        .output()?;
    if !o.status.success() {
        return Err(String::from_utf8_lossy(&o.stderr).into_owned().into());
    }
    Ok(serde_json::from_slice(&o.stdout)?)
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        return Err("usage: score_speed PAIRS [ROUNDS]".into());
    };
    if std::env::var_os("SCORE_SPEED_CHILD").is_some() {
        return child(path);
    }
    let rounds: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(2);
    let cores = std::thread::available_parallelism()?.get().to_string();
    for round in 1..=rounds {
        let (split, side) = if round % 2 == 1 {
            let a = run(path, &cores)?;
            (a, run(path, "1")?)
        } else {
            let b = run(path, "1")?;
            (run(path, &cores)?, b)
        };
        if split["scores"] != side["scores"] {
            return Err("the two ways gave different scores".into());
        }
        let pairs = split["pairs"].as_f64().unwrap_or(f64::NAN);
        let (a, b) = (
            split["seconds"].as_f64().unwrap_or(f64::NAN),
            side["seconds"].as_f64().unwrap_or(f64::NAN),
        );
        println!(
            "{}",
            serde_json::json!({
                "round": round,
                "pairs": pairs,
                "cores": cores,
                "one_at_a_time_s": a,
                "side_by_side_s": b,
                "one_at_a_time_pairs_per_s": pairs / a,
                "side_by_side_pairs_per_s": pairs / b,
                "speedup": a / b,
                "same_bits": true,
            })
        );
    }
    Ok(())
}
