//! The bits a build trains and scores, to compare two builds on one machine (issue 46 item 1:
//! a change to how the matrix products run must leave fold models and `Bert::score` as they
//! were). Trains one epoch (`Hyper::default()`, `epochs: 1`) on the first `N` pairs of a pairs
//! file (JSON lines {"query", "passage", "label"}) from the dequantized
//! ms-marco-MiniLM-L-12-v2, then prints one JSON line: an FNV-1a hash of every trained weight's
//! bits (by name, in name order), the epoch loss, the process's CPU seconds for the training,
//! and the bits of `Bert::score` (float model, one pair per pass) of the trained model on the
//! first 5 pairs.
//!
//! Trains with `rerank::train_hand` (the default trainer, version 4); `RANKLAB_TRAINER=3` with
//! trainer 3 (`rerank::finetune::train`) instead. `MAX_LEN`
//! (default 256, the trainers' own) truncates every pair to fewer tokens: the same products'
//! widths on shorter rows, cheap enough to run under an emulated CPU
//! (`bench/finetune-speed/bits-avx2.sh`).
//!
//! Usage: cargo run --release --example finetune_bits -p ranklab-engine -- PAIRS [N [MAX_LEN]]

use std::time::Instant;

use ranklab_engine::models;
use ranklab_engine::rerank::bert::{dequantize, tokenizer, Bert, Config, Weights};
use ranklab_engine::rerank::finetune::{Hyper, Pair};
use ranklab_engine::rerank::train_hand::{self, train_as_env_says as train};

/// CPU seconds (user + system, all threads) of this process, from /proc/self/stat.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
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

/// FNV-1a over each weight's name and the bits of its values, in name order.
fn hash(weights: &Weights) -> Result<u64, Box<dyn std::error::Error>> {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    let mut eat = |bytes: &[u8]| {
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    };
    for (name, t) in weights {
        eat(name.as_bytes());
        for x in t.flatten_all()?.to_vec1::<f32>()? {
            eat(&x.to_bits().to_le_bytes());
        }
    }
    Ok(h)
}

fn read_pairs(path: &str, n: usize) -> Result<Vec<Pair>, Box<dyn std::error::Error>> {
    let mut pairs = Vec::new();
    for line in std::fs::read_to_string(path)?.lines().take(n) {
        let v: serde_json::Value = serde_json::from_str(line)?;
        let field = |k: &str| v[k].as_str().map(str::to_string).ok_or(format!("no {k}"));
        pairs.push(Pair {
            query: field("query")?,
            passage: field("passage")?,
            label: v["label"].as_f64().ok_or("no label")? as f32,
        });
    }
    Ok(pairs)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        return Err("usage: finetune_bits PAIRS [N [MAX_LEN]]".into());
    };
    let n: usize = args.get(1).map(|s| s.parse()).transpose()?.unwrap_or(16);
    let defaults = Hyper::default();
    let max_length: usize = args
        .get(2)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(defaults.max_length);
    let h = Hyper {
        epochs: 1,
        max_length,
        ..defaults
    };
    let dir = models::ensure_model("ms-marco-MiniLM-L-12-v2")?;
    let weights = dequantize(&dir.path.join("model.onnx"))?;
    let tok = tokenizer(&dir.path, h.max_length)?;
    let pairs = read_pairs(path, n)?;
    let t = Instant::now();
    let cpu0 = cpu_seconds();
    let trained = train(&weights, &pairs, &tok, &h, &mut |_, _, _| {})?;
    let (train_s, train_cpu_s) = (t.elapsed().as_secs_f64(), cpu_seconds() - cpu0);
    let model = Bert::new(trained.weights.clone(), Config::default())?;
    let scores = pairs
        .iter()
        .take(5)
        .map(|p| model.score(&tok, &p.query, &p.passage).map(f32::to_bits))
        .collect::<Result<Vec<u32>, String>>()?;
    println!(
        "{}",
        serde_json::json!({
            "pairs": pairs.len(),
            "max_length": h.max_length,
            "weights_fnv": format!("{:016x}", hash(&trained.weights)?),
            "epoch_loss": trained.epoch_losses[0],
            "score_bits": scores.iter().map(|b| format!("{b:08x}")).collect::<Vec<_>>(),
            "train_s": train_s,
            "train_cpu_s": train_cpu_s,
            "trainer": if train_hand::trainer_3_by_env() { "3" } else { "hand" },
            "threads": std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| "unset".into()),
        })
    );
    Ok(())
}
