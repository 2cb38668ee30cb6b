//! A fold model's int8 export (`rerank::int8`) against the pinned int8 L-12 it came from: speed
//! and error, in one run.
//!
//! - **Speed**: both scored through ONNX Runtime as a rerank scores them (`score_many` per
//!   query, batch 1, one single-threaded session per core), alternating which goes first each
//!   round, the scoring alone timed (not loading or exporting); pairs/s of each and their ratio
//!   per round, and the medians.
//! - **Error**: on the same pairs, |export − the fold model in float| (candle's `Bert` over the
//!   fold's weights) and |pinned int8 L-12 − its own float weights dequantized|: max and mean;
//!   and, to say how much of the fine-tuning the export keeps, |export − pinned int8| and
//!   |fold model − starting model| (both in float).
//!
//! Usage: cargo run --release --example int8_speed -p ranklab-engine -- PAIRS FOLD.bin [ROUNDS]
//! (PAIRS: JSON lines {"query", "passage"}, grouped by query; FOLD.bin: a fold model file of
//! `<cache>/finetuned/`, its export made in a temporary folder, or in `KEEP=<folder>` and kept). Prints one JSON object.

use std::time::Instant;

use ranklab_engine::models;
use ranklab_engine::rerank::bert::{dequantize, tokenizer, Bert, Config, Weights};
use ranklab_engine::rerank::int8::{
    calibrated, ensure_export, Int8FinetunedCrossEncoder, Quantized,
};
use ranklab_engine::rerank::{finetuned, CrossEncoder, FastembedCrossEncoder};
use serde_json::json;

type Res<T> = Result<T, Box<dyn std::error::Error>>;
type Groups = Vec<(String, Vec<String>)>;

fn groups(path: &str) -> Res<Groups> {
    let mut groups: Groups = Vec::new();
    for line in std::fs::read_to_string(path)?.lines() {
        let v: serde_json::Value = serde_json::from_str(line)?;
        let q = v["query"].as_str().ok_or("a pair without query")?;
        let p = v["passage"].as_str().ok_or("a pair without passage")?;
        match groups.last_mut() {
            Some((last, ps)) if last == q => ps.push(p.to_string()),
            _ => groups.push((q.to_string(), vec![p.to_string()])),
        }
    }
    Ok(groups)
}

/// Every pair's score, and the seconds the scoring took.
fn timed(model: &mut dyn CrossEncoder, groups: &Groups) -> Res<(Vec<f32>, f64)> {
    let requests: Vec<(&str, Vec<&str>)> = groups
        .iter()
        .map(|(q, ps)| (q.as_str(), ps.iter().map(String::as_str).collect()))
        .collect();
    let t = Instant::now();
    let mut out = Vec::new();
    for r in &requests {
        out.extend(model.score_many(std::slice::from_ref(r))?.concat());
    }
    Ok((out, t.elapsed().as_secs_f64()))
}

fn float_scores(w: &Weights, tok: &tokenizers::Tokenizer, groups: &Groups) -> Res<Vec<f32>> {
    let bert = Bert::new(w.clone(), Config::default())?;
    let mut out = Vec::new();
    for (q, ps) in groups {
        for p in ps {
            out.push(bert.score(tok, q, p)?);
        }
    }
    Ok(out)
}

fn errors(a: &[f32], b: &[f32]) -> serde_json::Value {
    let d: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from((x - y).abs()))
        .collect();
    let max = d.iter().copied().fold(0.0, f64::max);
    json!({"max": max, "mean": d.iter().sum::<f64>() / d.len() as f64})
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(pairs), Some(fold)) = (args.first(), args.get(1)) else {
        return Err("usage: int8_speed PAIRS FOLD.bin [ROUNDS]".into());
    };
    let rounds: usize = args.get(2).map(|s| s.parse()).transpose()?.unwrap_or(5);
    let groups = groups(pairs)?;
    let n: usize = groups.iter().map(|(_, p)| p.len()).sum();
    let base = models::ensure_model("ms-marco-MiniLM-L-12-v2")?;
    let fold = std::path::Path::new(fold);
    let key = fold
        .file_stem()
        .and_then(|s| s.to_str())
        .ok_or("FOLD.bin")?;
    let dir = fold.parent().ok_or("FOLD.bin has no folder")?;
    let (weights, _) = finetuned::load(dir, key)?.ok_or("no such fold model")?;
    let tmp = tempfile::tempdir()?;
    // KEEP=<folder>: the export is made (and kept) there instead of a temporary folder
    let keep = std::env::var_os("KEEP").map(std::path::PathBuf::from);
    let out = keep.as_deref().unwrap_or(tmp.path());
    let t = Instant::now();
    // CAL=<pairs>: the export calibrated on those pairs (`int8::calibrated`: GPTQ's integers, the
    // biases corrected); without it each matrix rounded to its nearest steps
    let exported_weights = match std::env::var("CAL") {
        Ok(cal) => {
            let tok = tokenizer(&base.path, 512)?;
            let pairs: Vec<(String, String)> = self::groups(&cal)?
                .into_iter()
                .flat_map(|(q, ps)| ps.into_iter().map(move |p| (q.clone(), p)))
                .collect();
            calibrated(weights.clone(), &tok, &pairs)?
        }
        Err(_) => Quantized::nearest(weights.clone()),
    };
    let export = ensure_export(out, key, &base, || Ok(exported_weights))?;
    let export_seconds = t.elapsed().as_secs_f64();
    let mut pinned = FastembedCrossEncoder::open("ms-marco-MiniLM-L-12-v2")?;
    let mut exported = Int8FinetunedCrossEncoder::load(key, &base.sha256, &export)?;
    let (mut ratios, mut ours, mut theirs, mut per_round) = (vec![], vec![], vec![], vec![]);
    let (mut int8_scores, mut export_scores) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let ((a, ta), (b, tb)) = if round % 2 == 0 {
            let e = timed(&mut exported, &groups)?;
            (e, timed(&mut pinned, &groups)?)
        } else {
            let p = timed(&mut pinned, &groups)?;
            (timed(&mut exported, &groups)?, p)
        };
        let (e_ps, p_ps) = (n as f64 / ta, n as f64 / tb);
        ratios.push(e_ps / p_ps);
        ours.push(e_ps);
        theirs.push(p_ps);
        per_round.push(json!({"finetuned_int8": e_ps, "int8": p_ps, "ratio": e_ps / p_ps}));
        (export_scores, int8_scores) = (a, b);
    }
    let tok = tokenizer(&base.path, 512)?;
    let start = dequantize(&base.file("model.onnx"))?;
    let fold_float = float_scores(&weights, &tok, &groups)?;
    let base_float = float_scores(&start, &tok, &groups)?;
    let out = json!({
        "pairs": n,
        "rounds": per_round,
        "finetuned_pairs_per_s": median(ours),
        "int8_pairs_per_s": median(theirs),
        "ratio_median": median(ratios),
        "export_seconds": export_seconds,
        "export_vs_fold_float": errors(&export_scores, &fold_float),
        "int8_vs_own_float": errors(&int8_scores, &base_float),
        "export_vs_int8": errors(&export_scores, &int8_scores),
        "fold_float_vs_base_float": errors(&fold_float, &base_float),
        "fold_model": key,
        "workers": exported_workers(),
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

fn exported_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
