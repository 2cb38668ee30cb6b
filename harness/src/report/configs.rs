//! The parameters every configuration of a report ran with, as the replay resolved them
//! (defaults filled in): retriever, bi-encoder, BM25 k1 / b and analyzer, RRF k, depth,
//! cross-encoder model and shortlist, wiring and the practice weights it read.
//!
//! A parameter a configuration does not use is `—` in Markdown and absent from its JSON object
//! (BM25 settings only for bm25 and fusion, RRF k only for fusion, weights only with a wiring).

use std::fmt::Write as _;

use ranklab_engine::policy::{Weights, Wiring};

use crate::replay::ConfigRun;
use crate::suite::{Configuration, Retriever};

/// The retriever's name as experiments files write it.
pub fn retriever_name(c: &Configuration) -> String {
    match c.retriever {
        Retriever::Bm25 => "bm25".to_string(),
        Retriever::Dense => "dense".to_string(),
        Retriever::Fusion => "fusion".to_string(),
        Retriever::External => match &c.engine {
            Some(e) if e.http.is_some() => "external (http)".to_string(),
            Some(_) => "external (command)".to_string(),
            None => "external".to_string(),
        },
    }
}

/// A rerank model as the configuration table names it: the id, and for a late-interaction
/// model what it is, since the pinned ColBERT lacks its projection layer (see
/// `ranklab_engine::rerank::ColbertReranker`).
fn rerank_model_text(id: &str) -> String {
    match ranklab_engine::models::pinned(id) {
        Some(p) if p.kind == ranklab_engine::models::ModelKind::LateInteraction => format!(
            "{id} (late interaction, MaxSim; the encoder without its 384→96 projection, \
             which the package lacks: 384-d hidden states, not the published model's vectors)"
        ),
        _ => id.to_string(),
    }
}

/// An f32 parameter as the shortest decimal that reads back as it (0.3, not 0.30000001).
fn num(x: f32) -> serde_json::Value {
    serde_json::Number::from_f64(x.to_string().parse::<f64>().unwrap_or(f64::NAN))
        .map_or(serde_json::Value::Null, serde_json::Value::Number)
}

fn uses_bm25(c: &Configuration) -> bool {
    c.analyzer().is_some()
}

fn weights_text(w: &Weights) -> String {
    format!(
        "superseded {}, deprecated {}, amendment {}, editorial_only {}",
        w.superseded, w.deprecated, w.amendment, w.editorial_only
    )
}

/// The `## Configurations` section.
pub fn markdown(runs: &[ConfigRun], practice: &dyn Fn(&Configuration) -> String) -> String {
    let mut md = String::from("## Configurations\n\n");
    md.push_str("The parameters each configuration ran with, defaults filled in (`—`: not used by it). Weights: the lifecycle/history penalties of the practice file, as fractions of the normalised first-stage score.\n\n");
    md.push_str("| configuration | retriever | bi-encoder | BM25 k1 / b (analyzer) | RRF k | depth | cross-encoder | shortlist | wiring | practice weights |\n|---|---|---|---|---:|---:|---|---:|---|---|\n");
    let dash = || "—".to_string();
    for r in runs {
        let c = &r.config;
        let bm25 = if uses_bm25(c) {
            let p = c.bm25();
            format!("{} / {} ({})", p.k1, p.b, p.analyzer.name())
        } else {
            dash()
        };
        let rrf = if c.retriever == Retriever::Fusion {
            c.rrf().k.to_string()
        } else {
            dash()
        };
        let (model, shortlist) = match &c.rerank {
            Some(s) => (rerank_model_text(&s.model), s.shortlist.to_string()),
            None => (dash(), dash()),
        };
        let weights = match (&r.weights, c.wiring) {
            (Some(w), wiring) if wiring != Wiring::None => {
                format!("{} (`{}`)", weights_text(w), practice(c))
            }
            _ => dash(),
        };
        let _ = writeln!(
            md,
            "| {} | {} | {} | {bm25} | {rrf} | {} | {model} | {shortlist} | {} | {weights} |",
            c.name,
            retriever_name(c),
            c.embedder().map_or_else(dash, str::to_string),
            c.depth(),
            c.wiring,
        );
    }
    md.push('\n');
    md
}

/// One JSON object per configuration, in replay order.
pub fn json(runs: &[ConfigRun], practice: &dyn Fn(&Configuration) -> String) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            let c = &r.config;
            let mut o = serde_json::Map::new();
            o.insert("name".into(), c.name.clone().into());
            o.insert("retriever".into(), retriever_name(c).into());
            if let Some(e) = c.embedder() {
                o.insert("embedder".into(), e.into());
            }
            if uses_bm25(c) {
                let p = c.bm25();
                o.insert(
                    "bm25".into(),
                    serde_json::json!({"k1": num(p.k1), "b": num(p.b), "analyzer": p.analyzer.name()}),
                );
            }
            if c.retriever == Retriever::Fusion {
                o.insert("rrf_k".into(), num(c.rrf().k));
            }
            o.insert("depth".into(), c.depth().into());
            if let Some(s) = &c.rerank {
                o.insert(
                    "rerank".into(),
                    serde_json::json!({"model": s.model, "shortlist": s.shortlist}),
                );
            }
            o.insert("wiring".into(), c.wiring.name().into());
            if let (Some(w), true) = (&r.weights, c.wiring != Wiring::None) {
                o.insert(
                    "practice".into(),
                    serde_json::json!({
                        "file": practice(c),
                        "weights": {
                            "superseded": num(w.superseded),
                            "deprecated": num(w.deprecated),
                            "amendment": num(w.amendment),
                            "editorial_only": num(w.editorial_only),
                        }
                    }),
                );
            }
            serde_json::Value::Object(o)
        })
        .collect();
    serde_json::Value::Array(rows)
}
