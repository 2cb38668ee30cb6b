//! Training speed of ranklab's fine-tuning (the default trainer, `rerank::train_hand::train`;
//! `Hyper::default()` but one epoch) on a pairs file (JSON lines {"query", "passage", "label"}), from the dequantized
//! ms-marco-MiniLM-L-12-v2.
//!
//! Run 1 is cold: its total counts from the start of the process, so it includes finding and
//! verifying the model (`ensure_model`), dequantizing the int8 ONNX file, loading the tokenizer
//! and reading the pairs, then the epoch. Runs 2.. are warm: the same epoch again from the same
//! starting weights in the same process (files cached, allocator warm). Each run prints one
//! JSON line on stdout (wall seconds and CPU seconds of the process, all threads); step times
//! go to stderr. Threads: rayon's (RAYON_NUM_THREADS). Trains with `rerank::train_hand` (the
//! default trainer, version 4); `RANKLAB_TRAINER=3` with trainer 3 (`rerank::finetune::train`,
//! candle's graph) instead.
//!
//! Usage: cargo run --release --example finetune_speed -p ranklab-engine -- PAIRS [RUNS]

use std::time::Instant;

use ranklab_engine::models;
use ranklab_engine::rerank::bert::{dequantize, tokenizer};
use ranklab_engine::rerank::finetune::{Hyper, Pair};
use ranklab_engine::rerank::train_hand::{self, train_as_env_says as train};

/// CPU seconds (user + system, all threads) this process has used, from /proc/self/stat; the
/// machine may be shared, and CPU time is less moved by other jobs than wall time.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name (which is in parentheses): utime and stime are the 12th
    // and 13th of them, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    if f.len() > 12 {
        (f[11] + f[12]) / 100.0
    } else {
        f64::NAN
    }
}

/// The process's peak resident memory so far, in MiB (`VmHWM` of /proc/self/status).
fn peak_rss_mb() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let start = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        return Err("usage: finetune_speed PAIRS [RUNS]".into());
    };
    let runs: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(2);
    let h = Hyper {
        epochs: 1,
        ..Hyper::default()
    };
    let dir = models::ensure_model("ms-marco-MiniLM-L-12-v2")?;
    let weights = dequantize(&dir.path.join("model.onnx"))?;
    let tok = tokenizer(&dir.path, h.max_length)?;
    let mut pairs = Vec::new();
    for line in std::fs::read_to_string(path)?.lines() {
        let v: serde_json::Value = serde_json::from_str(line)?;
        pairs.push(Pair {
            query: v["query"]
                .as_str()
                .ok_or("a pair without query")?
                .to_string(),
            passage: v["passage"]
                .as_str()
                .ok_or("a pair without passage")?
                .to_string(),
            label: v["label"].as_f64().ok_or("a pair without label")? as f32,
        });
    }
    let load_s = start.elapsed().as_secs_f64();
    let threads = std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset".into());
    eprintln!(
        "ranklab: {} pairs, batch {}, max_length {}, RAYON_NUM_THREADS={threads}; load {load_s:.2} s",
        pairs.len(),
        h.batch,
        h.max_length
    );
    for run in 1..=runs {
        let t = Instant::now();
        let cpu0 = cpu_seconds();
        let mut last = 0.0;
        let trained = train(&weights, &pairs, &tok, &h, &mut |s, total, loss| {
            let now = t.elapsed().as_secs_f64();
            eprintln!(
                "  run {run} step {s}/{total} loss {loss:.4} {:.2} s",
                now - last
            );
            last = now;
        })?;
        let train_s = t.elapsed().as_secs_f64();
        let train_cpu_s = cpu_seconds() - cpu0;
        let cold = run == 1;
        let total_s = if cold {
            start.elapsed().as_secs_f64()
        } else {
            train_s
        };
        let n = pairs.len() as f64;
        println!(
            "{}",
            serde_json::json!({
                "trainer": if train_hand::trainer_3_by_env() { "ranklab (candle, fused)" } else { "ranklab (hand)" },
                "run": if cold { "cold" } else { "warm" },
                "pairs": pairs.len(),
                "steps": trained.step_losses.len(),
                "load_s": if cold { load_s } else { 0.0 },
                "train_s": train_s,
                "total_s": total_s,
                "pairs_per_s_train": n / train_s,
                "pairs_per_s_total": n / total_s,
                "train_cpu_s": train_cpu_s,
                "total_cpu_s": if cold { cpu_seconds() } else { train_cpu_s },
                "epoch_loss": trained.epoch_losses[0],
                "threads": threads,
                "peak_rss_mb": peak_rss_mb(),
            })
        );
    }
    Ok(())
}
