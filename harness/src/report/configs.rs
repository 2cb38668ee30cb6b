//! The parameters every configuration of a report ran with, as the replay resolved them
//! (defaults filled in): retriever, bi-encoder, BM25 k1 / b and analyzer, RRF k, depth,
//! rerank model and shortlist, wiring and the practice weights it read. An LLM rerank stage
//! that asks the yes/no prompt (in-process, or an endpoint's `completions` / `chat`) also shows
//! its prompt: where the template came from (`default` or the `prompt:` file as written) and
//! the first 12 hex digits of its sha256 (`PromptTemplate::short_hash`), the hash that is part
//! of the stage's identity and so keys its score cache.
//!
//! A parameter a configuration does not use is `—` in Markdown and absent from its JSON object
//! (BM25 settings only for bm25 and fusion, RRF k only for fusion, weights only with a wiring,
//! the prompt only for a stage that sends one).

use std::fmt::Write as _;
use std::path::Path;

use ranklab_engine::policy::{Weights, Wiring};
use ranklab_engine::rerank::prompt::PromptTemplate;

use crate::replay::ConfigRun;
use crate::report::table::md_cell;
use crate::suite::{Configuration, Experiments, LlmApi, RerankSpec, Retriever, Scorer};

/// The retriever's name as experiments files write it.
pub fn retriever_name(c: &Configuration) -> String {
    match c.retriever {
        Retriever::Bm25 => "bm25".to_string(),
        Retriever::Dense => "dense".to_string(),
        Retriever::Fusion => "fusion".to_string(),
        Retriever::Learned => match &c.shortlist {
            Some(s) => format!(
                "learned (reranker features over the top {} of {})",
                s.width,
                s.from.name()
            ),
            None => "learned".to_string(),
        },
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

/// The prompt template a rerank stage asks, if it asks one (`llm: ID`, or an endpoint's
/// `completions` / `chat`): its `prompt:` file (relative to `dir`, the experiments file's
/// folder, as the replay reads it) or the default. A file that cannot be read now (the replay
/// read it) is an error naming it.
fn prompt_of(spec: &RerankSpec, dir: &Path) -> anyhow::Result<Option<PromptTemplate>> {
    let asks = match &spec.scorer {
        Scorer::Model => false,
        Scorer::Llm => true,
        Scorer::Endpoint(e) => e.api != LlmApi::Rerank,
    };
    if !asks {
        return Ok(None);
    }
    Ok(Some(match &spec.prompt {
        Some(p) => PromptTemplate::from_file(&dir.join(p))?,
        None => PromptTemplate::default(),
    }))
}

/// Where a stage's prompt came from, as its configuration writes it: `default` or the file.
fn prompt_source(spec: &RerankSpec) -> String {
    spec.prompt
        .as_ref()
        .map_or_else(|| "default".to_string(), |p| p.display().to_string())
}

/// The rerank cell of the table: the model, and for a stage that asks a prompt, which one
/// (`prompt default, sha256 1a2b3c4d5e6f`).
fn rerank_cell(spec: &RerankSpec, dir: &Path) -> anyhow::Result<String> {
    let model = match &spec.scorer {
        Scorer::Endpoint(e) => {
            format!("{} (endpoint {}, {})", spec.model, e.endpoint, e.api.name())
        }
        _ => rerank_model_text(&spec.model),
    };
    let model = match spec.interpolate {
        Some(a) => format!("{model}; interpolate {a} with the first stage"),
        None => model,
    };
    Ok(match prompt_of(spec, dir)? {
        Some(p) => format!(
            "{model}; prompt {}, sha256 `{}`",
            prompt_source(spec),
            p.short_hash()
        ),
        None => model,
    })
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

/// The `## Configurations` section of the configurations of `ex` (`runs`).
pub fn markdown(
    runs: &[ConfigRun],
    ex: &Experiments,
    practice: &dyn Fn(&Configuration) -> String,
) -> anyhow::Result<String> {
    let dir = ex.path.parent().unwrap_or(Path::new("."));
    let mut md = String::from("## Configurations\n\n");
    md.push_str("The parameters each configuration ran with, defaults filled in (`—`: not used by it). Weights: the lifecycle/history penalties of the practice file, as fractions of the normalised first-stage score.");
    let asks_prompt = runs.iter().any(|r| {
        r.config
            .rerank
            .as_ref()
            .is_some_and(|s| prompt_of(s, dir).is_ok_and(|p| p.is_some()))
    });
    if asks_prompt {
        md.push_str(" An LLM asked yes or no also names its prompt (`default` or its `prompt:` file) and the first 12 hex digits of the prompt's sha256, part of the identity that keys its scores.");
    }
    md.push_str("\n\n");
    md.push_str("| configuration | retriever | bi-encoder | BM25 k1 / b (analyzer) | RRF k | depth | rerank model | shortlist | wiring | practice weights |\n|---|---|---|---|---:|---:|---|---:|---|---|\n");
    let dash = || "—".to_string();
    for r in runs {
        let c = &r.config;
        let bm25 = if uses_bm25(c) {
            let p = c.bm25();
            format!("{} / {} ({})", p.k1, p.b, p.analyzer.name())
        } else {
            dash()
        };
        let rrf = match (&c.fusion, c.retriever) {
            (Some(f), _) if f.method == crate::suite::fusion::Method::Weighted => f.describe(),
            (_, Retriever::Fusion) => c.rrf().k.to_string(),
            _ => dash(),
        };
        let (model, shortlist) = match &c.rerank {
            Some(s) => (rerank_cell(s, dir)?, s.shortlist.to_string()),
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
            "| {} | {} | {} | {bm25} | {rrf} | {} | {} | {shortlist} | {} | {} |",
            md_cell(&c.name),
            md_cell(&retriever_name(c)),
            md_cell(&c.embedder().map_or_else(dash, str::to_string)),
            c.depth(),
            md_cell(&model),
            c.wiring,
            md_cell(&weights),
        );
    }
    md.push('\n');
    Ok(md)
}

/// One JSON object per configuration of `ex` (`runs`), in replay order.
pub fn json(
    runs: &[ConfigRun],
    ex: &Experiments,
    practice: &dyn Fn(&Configuration) -> String,
) -> anyhow::Result<serde_json::Value> {
    let dir = ex.path.parent().unwrap_or(Path::new("."));
    let rows: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| -> anyhow::Result<serde_json::Value> {
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
            if let Some(f) = c.fusion.as_ref().filter(|f| f.method == crate::suite::fusion::Method::Weighted) {
                let weights: serde_json::Map<String, serde_json::Value> =
                    f.weights.iter().map(|(k, v)| (k.clone(), (*v).into())).collect();
                o.insert(
                    "fusion".into(),
                    serde_json::json!({"method": "weighted", "normalize": f.normalize().name(), "weights": weights}),
                );
            }
            o.insert("depth".into(), c.depth().into());
            if let Some(s) = &c.rerank {
                let mut rerank = serde_json::json!({"model": s.model, "shortlist": s.shortlist});
                if let Some(p) = prompt_of(s, dir)? {
                    rerank["prompt"] =
                        serde_json::json!({"source": prompt_source(s), "sha256": p.hash()});
                }
                if let Some(a) = s.interpolate {
                    rerank["interpolate"] = a.into();
                    rerank["normalize"] =
                        crate::replay::interpolated::normalization(c).name().into();
                }
                o.insert("rerank".into(), rerank);
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
            Ok(serde_json::Value::Object(o))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(serde_json::Value::Array(rows))
}
