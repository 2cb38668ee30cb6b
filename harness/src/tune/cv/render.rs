//! The report of `ranklab tune FILE`: Markdown (stdout and `reports/<suite>/tune-<name>.md`)
//! and JSON (`tune-<name>.json`, `--json`). Both are a pure function of the inputs.

use std::fmt::Write as _;

use anyhow::{bail, Result};

use serde_json::{json, Map, Value as Json};

use super::file::{Param, Value};
use super::session::Outcome;
use crate::stats::{format_p, format_signed};
use crate::suite::fusion::{FusionSpec, LISTS};
use crate::suite::Configuration;

/// Candidate `c` as `path -> value`.
fn chosen(o: &Outcome, c: usize) -> Vec<(String, Value)> {
    let point = o.plan.point(c);
    o.plan
        .dims
        .iter()
        .zip(point)
        .map(|(d, i)| (d.path.clone(), d.values[i].clone()))
        .collect()
}

fn chosen_text(o: &Outcome, c: usize) -> String {
    if let Some(k) = o.models.get(c) {
        let who = if c == o.folds.len() {
            "the model trained on all tasks"
        } else {
            "its model"
        };
        return format!("{who}, `{}`", &k[..12]);
    }
    chosen(o, c)
        .iter()
        .map(|(p, v)| format!("{p} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn chosen_json(o: &Outcome, c: usize) -> Json {
    if let Some(k) = o.models.get(c) {
        return json!({ "model": k });
    }
    let m: Map<String, Json> = chosen(o, c)
        .into_iter()
        .map(|(p, v)| {
            let v = match v {
                Value::Number(x) => json!(x),
                Value::Word(w) => json!(w),
            };
            (p, v)
        })
        .collect();
    Json::Object(m)
}

/// The fusion spec of the candidate chosen on every task.
pub(crate) fn tuned_spec(o: &Outcome, spec: &FusionSpec) -> FusionSpec {
    let mut s = spec.clone();
    for (d, i) in o.plan.dims.iter().zip(o.plan.point(o.cv.all)) {
        match (d.param, &d.values[i]) {
            (Param::Weight(l), Value::Number(x)) => {
                s.weights.insert(LISTS[l].to_string(), *x);
            }
            (Param::Normalize, Value::Word(w)) => s.normalize = super::file::normalize_of(w),
            _ => {}
        }
    }
    s
}

/// A weighted-fusion configuration `c` named `name` with `spec`, as an experiments file's
/// list item (defaults filled in); `engine` is its `engine:` lines as the experiments file
/// writes them (`super::write::engine_yaml`; empty without an engine).
pub(crate) fn configuration_yaml(
    c: &Configuration,
    name: &str,
    spec: &FusionSpec,
    engine: &str,
) -> Result<String> {
    let p = c.bm25();
    let wv = spec.weight_vector();
    let w: Vec<String> = spec
        .fused_lists()
        .into_iter()
        .map(|i| format!("{}: {}", LISTS[i], wv[i]))
        .collect();
    let (rerank, mut from) = match rerank_yaml(c, spec)? {
        Some(r) => (
            r,
            format!(", shortlist_from: {}", spec.shortlist_from().name()),
        ),
        None => (String::new(), String::new()),
    };
    if spec.names_rerankers() {
        if rerank.is_empty() {
            from = format!(", shortlist_from: {}", spec.shortlist_from().name());
        }
        from.push_str(&rerankers_yaml(spec));
    }
    // The RRF constant matters only to a shortlist cut from RRF.
    let rrf = match (!spec.cuts_shortlist(), spec.shortlist_from()) {
        (false, crate::suite::fusion::ShortlistFrom::Rrf) => format!("    rrf_k: {}\n", c.rrf().k),
        _ => String::new(),
    };
    Ok(format!(
        "  - name: {name}\n    retriever: fusion\n    embedder: {}\n    bm25: {{ k1: {}, b: {}, analyzer: {} }}\n{rrf}    depth: {}\n{engine}{rerank}    fusion: {{ method: weighted, normalize: {}, weights: {{ {} }}{from} }}\n",
        c.embedder().unwrap_or_default(),
        p.k1,
        p.b,
        p.analyzer.name(),
        c.depth(),
        spec.normalize().name(),
        w.join(", ")
    ))
}

/// `, rerankers: { cross-encoder: { model: ID, shortlist: N }, ... }`: a fusion's further
/// reranker lists, as its `fusion:` mapping holds them (checked plain model stages).
fn rerankers_yaml(spec: &FusionSpec) -> String {
    let parts: Vec<String> = spec
        .reranker_lists()
        .into_iter()
        .map(|(i, r)| {
            let batch = r.batch.map_or(String::new(), |b| format!(", batch: {b}"));
            format!(
                "{}: {{ model: {}, shortlist: {}{batch} }}",
                LISTS[i], r.model, r.shortlist
            )
        })
        .collect();
    format!(", rerankers: {{ {} }}", parts.join(", "))
}

/// The `rerank:` line of a fusion that weighs its rerank stage (`None` when it does not): the
/// stage's model, shortlist and batch. A stage `--write` cannot write as one line (an LLM or
/// an endpoint, a prompt, fine-tuning) is refused with what to do.
fn rerank_yaml(c: &Configuration, spec: &FusionSpec) -> Result<Option<String>> {
    if !spec.names_rerank() {
        return Ok(None);
    }
    let Some(r) = &c.rerank else {
        bail!(
            "--write: configuration {:?} weighs `rerank` without a rerank stage",
            c.name
        );
    };
    if r.scorer != crate::suite::Scorer::Model || r.prompt.is_some() || r.finetune.is_some() {
        bail!("--write writes a rerank stage of a cross-encoder or ColBERT model (`rerank: {{ model, shortlist }}`); {:?}'s is an LLM, an endpoint or fine-tuned: the report is written, copy the chosen weights into the configuration by hand", c.name);
    }
    let batch = r.batch.map_or(String::new(), |b| format!(", batch: {b}"));
    Ok(Some(format!(
        "    rerank: {{ model: {}, shortlist: {}{batch} }}\n",
        r.model, r.shortlist
    )))
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The Markdown report.
pub(crate) fn markdown(o: &Outcome, as_written: &str) -> String {
    let f = &o.plan.file;
    let m = &f.measure;
    let p = &o.paired;
    let mut md = format!(
        "# Tuning `{}`: `{}` on {}, {m}, {} task folds (seed {})\n\n",
        f.tune,
        o.configuration,
        o.suite,
        o.folds.len(),
        f.seed
    );
    let grid: Vec<String> = o
        .plan
        .dims
        .iter()
        .map(|d| format!("`{}` ({} values)", d.path, d.values.len()))
        .collect();
    if let Some(l) = &f.learn {
        let _ = writeln!(
            md,
            "Learned: {}, trained on the features of `{}`'s lists ({}). Per fold, a model is trained on the other folds' tasks only and scores the fold's held-out tasks: out of fold, no task is scored by a model that saw it. The model trained on all tasks is `tune-{}.model.json`.\n",
            l.describe(f.seed),
            o.configuration,
            as_written,
            f.tune
        );
    } else {
        let _ = writeln!(
        md,
        "Grid: {} = {} candidates, each scored on the {} tasks from lists computed once (`{}` as written: {}). Per fold, the candidate is chosen on the other folds' tasks by the plateau rule (ε {}) and scores the fold's held-out tasks: out of fold, no task is scored by a choice that saw it.\n",
        grid.join(" × "),
        o.plan.candidates(),
        o.tasks.len(),
        o.configuration,
        as_written,
        f.epsilon
    );
    }
    let _ = writeln!(md, "| | {m} |\n|---|---:|");
    // The configuration whose lists were tuned, by the name the header gives it
    // (`<configuration>-weighted` when the file sets `fusion:`), so that it is never read as
    // the shipped configuration of the same base name.
    let _ = writeln!(
        md,
        "| `{}` as written{} (in-sample) | {:.4} |",
        o.configuration,
        if f.learn.is_some() {
            ", whose lists give the features"
        } else {
            ""
        },
        mean(&o.written)
    );
    let _ = writeln!(
        md,
        "| chosen on all tasks: {} (in-sample) | {:.4} |",
        chosen_text(o, o.cv.all),
        o.cv.all_value
    );
    let _ = writeln!(
        md,
        "| **out of fold** (each task under its fold's choice) | **{:.4}** |",
        p.mean
    );
    let _ = writeln!(
        md,
        "| shipped `{}` | {:.4} |\n",
        o.shipped.0, p.baseline_mean
    );
    let detectable = p.significant(crate::stats::ALPHA);
    let _ = writeln!(
        md,
        "Out of fold against `{}`: Δ {} (95% CI [{}, {}]), p {} (two-sided paired randomization test), wins/ties/losses {}/{}/{} of {} tasks; {}. {}\n",
        o.shipped.0,
        format_signed(p.delta),
        format_signed(p.ci.lo),
        format_signed(p.ci.hi),
        format_p(p.test.p),
        p.wins,
        p.ties,
        p.losses,
        p.n,
        match o.power.mde {
            Some(x) => format!("the smallest Δ this suite detects with 80% power is {x:.4}"),
            None => "no noise estimate (every difference is zero)".to_string(),
        },
        match (detectable, p.delta > 0.0) {
            (true, true) if f.learn.is_some() => format!("The learned ranker is detectably better out of fold (the model trained on all tasks: `tune-{}.model.json`).", f.tune),
            (true, true) => "The tuned configuration is detectably better out of fold: `--write` adds it.".to_string(),
            (true, false) => format!("Tuning is detectably worse out of fold: keep `{}`.", o.shipped.0),
            _ => format!("No detectable out-of-fold difference: keep `{}`; `--write` writes nothing.", o.shipped.0),
        }
    );
    folds_table(&mut md, o);
    tasks_table(&mut md, o);
    md
}

fn folds_table(md: &mut String, o: &Outcome) {
    let m = &o.plan.file.measure;
    let _ = writeln!(md, "## Folds\n\n| fold | held out | chosen | {m} on its training tasks | {m} held out |\n|---:|---|---|---:|---:|");
    for (i, f) in o.folds.iter().enumerate() {
        let ids: Vec<&str> = f.held_out.iter().map(|&t| o.tasks[t].as_str()).collect();
        let held: Vec<f64> = f.held_out.iter().map(|&t| o.cv.out_of_fold[t]).collect();
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.4} | {:.4} |",
            i + 1,
            ids.join(" "),
            chosen_text(o, o.cv.chosen[i]),
            o.cv.train_value[i],
            mean(&held)
        );
    }
    let mut distinct = o.cv.chosen.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let _ = writeln!(
        md,
        "\n{} distinct choice{} over {} folds{}.\n",
        distinct.len(),
        if distinct.len() == 1 { "" } else { "s" },
        o.folds.len(),
        if distinct.len() == 1 { " (stable)" } else { "" }
    );
}

fn tasks_table(md: &mut String, o: &Outcome) {
    let m = &o.plan.file.measure;
    let _ = writeln!(
        md,
        "## Per task\n\n| task | fold | {m} out of fold | {m} `{}` |\n|---|---:|---:|---:|",
        o.shipped.0
    );
    for (t, id) in o.tasks.iter().enumerate() {
        let fold = o
            .folds
            .iter()
            .position(|f| f.held_out.contains(&t))
            .unwrap_or(0)
            + 1;
        let _ = writeln!(
            md,
            "| {id} | {fold} | {:.4} | {:.4} |",
            o.cv.out_of_fold[t], o.shipped.1[t]
        );
    }
}

/// The JSON report.
pub(crate) fn json(o: &Outcome, as_written: &str) -> Json {
    let f = &o.plan.file;
    let m = f.measure.clone();
    let p = &o.paired;
    let folds: Vec<Json> = o
        .folds
        .iter()
        .enumerate()
        .map(|(i, fold)| {
            json!({
                "held_out": fold.held_out.iter().map(|&t| o.tasks[t].clone()).collect::<Vec<_>>(),
                "chosen": chosen_json(o, o.cv.chosen[i]),
                "train_value": o.cv.train_value[i],
            })
        })
        .collect();
    let per_task: Map<String, Json> = o
        .tasks
        .iter()
        .zip(&o.cv.out_of_fold)
        .map(|(t, v)| (t.clone(), json!(v)))
        .collect();
    let shipped: Map<String, Json> = o
        .tasks
        .iter()
        .zip(&o.shipped.1)
        .map(|(t, v)| (t.clone(), json!(v)))
        .collect();
    json!({
        "tune": f.tune,
        "suite": o.suite,
        "configuration": o.configuration,
        "as_written": as_written,
        "measure": m,
        "seed": f.seed,
        "epsilon": f.epsilon,
        "candidates": o.plan.candidates(),
        "learn": f.learn.as_ref().map(|l| l.describe(f.seed)),
        "folds": folds,
        "per_task": per_task,
        "out_of_fold": { m.clone(): p.mean },
        "in_sample": { "chosen": chosen_json(o, o.cv.all), m.clone(): o.cv.all_value, "as_written": mean(&o.written) },
        "shipped": { "configuration": o.shipped.0, m.clone(): p.baseline_mean, "per_task": shipped },
        "comparison": {
            "delta": p.delta, "ci": [p.ci.lo, p.ci.hi], "p": p.test.p,
            "wins": p.wins, "ties": p.ties, "losses": p.losses,
            "mde": o.power.mde, "tasks_needed": o.power.tasks_needed,
        },
    })
}
