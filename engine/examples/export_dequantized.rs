//! Writes the dequantized ms-marco-MiniLM-L-12-v2 (the float starting point of ranklab's
//! fine-tuning, `rerank::bert::dequantize`) as a HuggingFace model folder that
//! `transformers.AutoModelForSequenceClassification.from_pretrained(OUT)` and
//! sentence-transformers' `CrossEncoder(OUT)` load: `model.safetensors`, a `config.json` for
//! `BertForSequenceClassification` (one label) and the model's tokenizer files.
//!
//! With a pairs file (JSON lines {"query", "passage", "label"}) it also writes
//! `OUT/candle_logits.json`: candle's float forward (`Bert::score`, tokenizer truncating to
//! MAX_LENGTH tokens) on the first N pairs, for a check of the export against PyTorch.
//!
//! Usage: cargo run --release --example export_dequantized -p ranklab-engine -- OUT [PAIRS N [MAX_LENGTH]]

use std::collections::HashMap;
use std::path::PathBuf;

use ranklab_engine::models;
use ranklab_engine::rerank::bert::{dequantize, tokenizer, Bert, Config};

const MODEL: &str = "ms-marco-MiniLM-L-12-v2";

/// The architecture of the model (what `Config::default()` runs), as transformers names it.
fn hf_config(c: &Config) -> serde_json::Value {
    serde_json::json!({
        "architectures": ["BertForSequenceClassification"],
        "model_type": "bert",
        "vocab_size": 30522,
        "hidden_size": c.hidden,
        "num_hidden_layers": c.layers,
        "num_attention_heads": c.heads,
        "intermediate_size": 4 * c.hidden,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
        "max_position_embeddings": c.max_positions,
        "type_vocab_size": 2,
        "initializer_range": 0.02,
        "layer_norm_eps": c.eps,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        "id2label": {"0": "LABEL_0"},
        "label2id": {"LABEL_0": 0},
        "torch_dtype": "float32"
    })
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out) = args.first().map(PathBuf::from) else {
        return Err("usage: export_dequantized OUT [PAIRS N [MAX_LENGTH]]".into());
    };
    std::fs::create_dir_all(&out)?;
    let dir = models::ensure_model(MODEL)?;
    let weights = dequantize(&dir.path.join("model.onnx"))?;
    let config = Config::default();
    let map: HashMap<String, candle_core::Tensor> = weights
        .iter()
        .map(|(n, t)| (n.clone(), t.clone()))
        .collect();
    candle_core::safetensors::save(&map, out.join("model.safetensors"))?;
    std::fs::write(
        out.join("config.json"),
        serde_json::to_string_pretty(&hf_config(&config))?,
    )?;
    for f in [
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
    ] {
        std::fs::copy(dir.path.join(f), out.join(f))?;
    }
    eprintln!(
        "{} tensors ({} parameters) -> {}",
        map.len(),
        map.values().map(|t| t.elem_count()).sum::<usize>(),
        out.display()
    );

    if let (Some(pairs), Some(n)) = (args.get(1), args.get(2)) {
        let n: usize = n.parse()?;
        let max_length: usize = args.get(3).map(|s| s.parse()).transpose()?.unwrap_or(256);
        let tok = tokenizer(&dir.path, max_length)?;
        let bert = Bert::new(weights, config)?;
        let mut rows = Vec::new();
        for line in std::fs::read_to_string(pairs)?.lines().take(n) {
            let p: serde_json::Value = serde_json::from_str(line)?;
            let (q, d) = (
                p["query"].as_str().unwrap_or_default(),
                p["passage"].as_str().unwrap_or_default(),
            );
            let logit = bert.score(&tok, q, d)?;
            let tokens = tok
                .encode((q, d), true)
                .map_err(|e| e.to_string())?
                .get_ids()
                .len();
            rows.push(serde_json::json!({"logit": logit, "tokens": tokens}));
        }
        std::fs::write(
            out.join("candle_logits.json"),
            serde_json::to_string_pretty(&serde_json::json!({
                "pairs": pairs, "max_length": max_length, "rows": rows
            }))?,
        )?;
        eprintln!(
            "candle logits of {} pairs -> candle_logits.json",
            rows.len()
        );
    }
    Ok(())
}
