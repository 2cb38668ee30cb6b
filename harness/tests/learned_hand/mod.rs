//! Hand computations over engine lists, shared by the tests of the `external` learned feature
//! and of engine fusion over HTTP (`learned_engine_replay.rs`, `engine_http.rs`): run files and
//! recorded responses read with serde_json, the linear model's score from its JSON, the
//! weighted min-max sum, each written here from docs/tuning.md and docs/formats.md, not from
//! the replay's code.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use ranklab_engine::corpus::{Corpus, History, Lifecycle};
use serde_json::Value;

/// task -> [(document id, score)] in list order.
pub type Run = BTreeMap<String, Vec<(String, f32)>>;

/// A run file as task -> [(document id, score)] in file order.
pub fn read_run(path: &Path) -> Run {
    let mut out: Run = BTreeMap::new();
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        out.entry(f[0].to_string())
            .or_default()
            .push((f[2].to_string(), f[4].parse().unwrap()));
    }
    out
}

/// An engine's recorded hits per task (suite order = `tasks`), read from the recording's
/// responses at the JSON pointer `hits` (`/hits` for the command protocol, `/body/results` for
/// MiniSearch over HTTP): inside the corpus, score descending then id descending, at most 100,
/// scores as f32.
pub fn engine_lists(path: &Path, hits: &str, tasks: &[String], corpus: &Corpus) -> Run {
    let text = std::fs::read_to_string(path).unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    let exchanges = doc["exchanges"].as_array().unwrap();
    assert_eq!(exchanges.len(), tasks.len(), "one exchange per task");
    let mut out = Run::new();
    for (task, e) in tasks.iter().zip(exchanges) {
        let mut list: Vec<(String, f32)> = e["response"]
            .pointer(hits)
            .and_then(Value::as_array)
            .unwrap_or_else(|| panic!("{hits} in {e}"))
            .iter()
            .map(|h| {
                let id = h["id"].as_str().unwrap().to_string();
                (id, h["score"].as_f64().unwrap() as f32)
            })
            .collect();
        list.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        list.truncate(100);
        list.retain(|(id, _)| corpus.docs.iter().any(|d| &d.id == id));
        out.insert(task.clone(), list);
    }
    out
}

/// (score, 1-based rank) of `id` in `list` cut at 100, else (the list's minimum, 101).
pub fn in_list(list: &[(String, f32)], id: &str) -> (f64, f64) {
    let cut = &list[..list.len().min(100)];
    match cut.iter().position(|(d, _)| d == id) {
        Some(i) => (f64::from(cut[i].1), (i + 1) as f64),
        None => (
            cut.iter()
                .map(|x| f64::from(x.1))
                .fold(f64::INFINITY, f64::min),
            101.0,
        ),
    }
}

/// The linear model's score of a raw row, from its JSON: Σ weight · (x − mean) / scale.
pub fn score(model: &Value, row: &[f64]) -> f64 {
    let f = |k: &str, i: usize| model["normalization"][k][i].as_f64().unwrap();
    let w = model["weights"].as_array().unwrap();
    let mut s = 0.0;
    for (i, x) in row.iter().enumerate() {
        s += w[i].as_f64().unwrap() * ((x - f("mean", i)) / f("scale", i));
    }
    s
}

/// The ranking of every task under docir's `tune-learned-engine` model (features bm25, dense,
/// external, lifecycle, history, age): candidates the union of the three lists, ordered by
/// score (as f32) descending, then id descending.
pub fn learned(bm25: &Run, dense: &Run, engine: &Run, model: &Value, corpus: &Corpus) -> Run {
    let newest = corpus.docs.iter().filter_map(|d| d.updated_at).max();
    let one = |b: bool| if b { 1.0 } else { 0.0 };
    let mut out = Run::new();
    for (task, l) in bm25 {
        let (s, e) = (&dense[task], &engine[task]);
        let ids: BTreeSet<&str> = l
            .iter()
            .chain(s)
            .chain(e)
            .map(|(d, _)| d.as_str())
            .collect();
        let mut want: Vec<(String, f32)> = ids
            .iter()
            .map(|&id| {
                let d = corpus.docs.iter().find(|d| d.id == id).unwrap();
                let (bs, br) = in_list(l, id);
                let (ds, dr) = in_list(s, id);
                let (es, er) = in_list(e, id);
                let age = match (newest, d.updated_at) {
                    (Some(n), Some(u)) => (n - u).num_days() as f64,
                    _ => 0.0,
                };
                let row = [
                    bs,
                    br,
                    ds,
                    dr,
                    es,
                    er,
                    one(d.lifecycle == Lifecycle::Active),
                    one(d.lifecycle == Lifecycle::Superseded),
                    one(d.lifecycle == Lifecycle::Deprecated),
                    one(d.history == History::FirstClass),
                    one(d.history == History::Amendment),
                    one(d.history == History::EditorialOnly),
                    (d.lifecycle_log.len() + 1) as f64,
                    age,
                ];
                (id.to_string(), score(model, &row) as f32)
            })
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        out.insert(task.clone(), want);
    }
    out
}

/// doc -> min-max normalized score (a list of equal scores gives 0).
fn minmax(list: &[(String, f32)]) -> BTreeMap<String, f64> {
    let lo = list
        .iter()
        .map(|x| f64::from(x.1))
        .fold(f64::INFINITY, f64::min);
    let hi = list
        .iter()
        .map(|x| f64::from(x.1))
        .fold(f64::NEG_INFINITY, f64::max);
    list.iter()
        .map(|(d, x)| {
            let v = if hi > lo {
                (f64::from(*x) - lo) / (hi - lo)
            } else {
                0.0
            };
            (d.clone(), v)
        })
        .collect()
}

/// The hand sum wb · minmax(b) + wd · minmax(d) + we · minmax(e) of one task's lists (a
/// document missing from a list at 0, its minimum after min-max), ordered by the f32 sum
/// descending, then id descending, cut at 100.
pub fn weighted_sum(lists: [&[(String, f32)]; 3], w: [f64; 3]) -> Vec<(String, f64)> {
    let [b, d, e] = lists.map(minmax);
    let docs: BTreeSet<&String> = b.keys().chain(d.keys()).chain(e.keys()).collect();
    let get = |m: &BTreeMap<String, f64>, x: &str| m.get(x).copied().unwrap_or(0.0);
    let mut want: Vec<(String, f64)> = docs
        .into_iter()
        .map(|x| {
            let s = w[0] * get(&b, x) + w[1] * get(&d, x) + w[2] * get(&e, x);
            (x.clone(), s)
        })
        .collect();
    want.sort_by(|x, y| {
        (y.1 as f32)
            .total_cmp(&(x.1 as f32))
            .then_with(|| y.0.as_bytes().cmp(x.0.as_bytes()))
    });
    want.truncate(100);
    want
}

/// The task ids of a suite file, in its order (the lines `- id: X`).
pub fn task_ids(suite: &Path) -> Vec<String> {
    std::fs::read_to_string(suite)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("- id: "))
        .map(|v| v.trim().to_string())
        .collect()
}
