//! What a configuration costs per query, end to end: the whole ranking of one task (first
//! stage, fusion, rerank, penalties) timed through the replay's own code ([`replay_with`] on a
//! suite of that one task), and queries per second.
//!
//! Each configuration of each experiments file is measured on its own, the models loaded
//! before (one warm-up task, untimed), its caches emptied once (held in memory: the disk caches
//! are not touched):
//! 1. **cold, per query** — each task alone, in suite order: every query vector and pair it
//!    needs is computed (none is in the caches yet, unless an earlier task asked the same), as
//!    for a query a deployment has never seen;
//! 2. **warm, per query** — the same task again at once, every output served from the caches
//!    (the pass must compute nothing, or the measurement is refused);
//! 3. **throughput** — cold: tasks one at a time, the tasks over the sum of their cold times;
//!    warm: one replay of every task at once from the filled caches (the replay's concurrency:
//!    BM25 and fusion on rayon's pool, the pairs pooled), tasks over its seconds.
//!
//! Peak memory is the process's resident high-water mark (`VmHWM`) over the cold passes, reset
//! first through `/proc/self/clear_refs`: corpus, indexes and loaded models included. Latency
//! percentiles are nearest-rank ([`percentile`]). An external engine's list is measured only
//! live (under `--from-recording` its round trip is a file read); an endpoint stage only when
//! its server is measured live as well; a fine-tuned stage trains its fold models in the
//! replay, which is not a query's cost: these are left out, with a line on stderr.

use std::time::Instant;

use anyhow::{bail, Result};
use ranklab_engine::dense::EmbeddingCache;
use ranklab_engine::rerank::ScoreCache;
use serde::{Deserialize, Serialize};

use super::{replay_with, ReplayOptions, Replayer};
use crate::suite::{Configuration, Experiments, Retriever, Scorer, Suite};

/// One configuration's cost per query (`costs.json`'s `configurations`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryCost {
    /// The configuration's name.
    pub configuration: String,
    /// The experiment (experiments file) it belongs to.
    pub experiment: String,
    /// Tasks timed.
    pub tasks: usize,
    /// Milliseconds per query, cold: every model output of the query computed.
    pub per_query_ms: Percentiles,
    /// Milliseconds per query, warm: every model output served from the caches.
    pub per_query_ms_warm: Percentiles,
    /// Queries per second cold, one at a time: tasks over the sum of their cold times.
    pub qps: f64,
    /// Queries per second warm, of one replay of every task at once (the replay's concurrency).
    pub qps_warm: f64,
    /// The process's peak resident memory over the per-query passes, in MiB (None where Linux's
    /// `/proc/self/status` is not there to say).
    pub peak_rss_mib: Option<f64>,
    /// When it was measured (`2026-12-05 01:40 UTC`).
    pub measured_at: String,
    /// The machine (`2 cores (x86_64 linux), load average 2.61 at the start`).
    pub machine: String,
    /// The command that measured it.
    pub command: String,
}

/// Nearest-rank percentiles of a set of latencies, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// The slowest.
    pub max: f64,
}

/// The `p`-th percentile (0 < p ≤ 100) of `sorted` (ascending, non-empty) by the nearest-rank
/// method: the value at 1-based rank ⌈p/100 · n⌉.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil().max(1.0) as usize;
    sorted[rank.min(n) - 1]
}

impl Percentiles {
    /// The percentiles of `ms` (non-empty), in any order.
    pub fn of(ms: &[f64]) -> Percentiles {
        let mut s = ms.to_vec();
        s.sort_by(f64::total_cmp);
        Percentiles {
            p50: percentile(&s, 50.0),
            p95: percentile(&s, 95.0),
            p99: percentile(&s, 99.0),
            max: s[s.len() - 1],
        }
    }
}

/// Why a configuration is left out of the measurement, if it is.
fn left_out(c: &Configuration, live: bool) -> Option<&'static str> {
    if c.retriever == Retriever::External && !live {
        return Some("an external engine's round trip is measured live only (start its engine and drop --from-recording)");
    }
    match &c.rerank {
        Some(r) if r.finetune.is_some() => Some(
            "its fold models are trained by the replay; their cost per pair is in the models' rows",
        ),
        Some(r) if matches!(r.scorer, Scorer::Endpoint(_)) && !live => {
            Some("an endpoint's cost is the live server's (measure it live)")
        }
        _ => None,
    }
}

/// The configurations of `experiments` to measure, as (experiment, configuration): those
/// `measured` (experiment name, configuration name) does not hold yet, less those
/// [`left_out`] (each said on stderr).
pub fn to_measure<'e>(
    suite: &Suite,
    experiments: &'e [Experiments],
    live: bool,
    measured: &dyn Fn(&str, &str) -> bool,
) -> Vec<(&'e Experiments, &'e Configuration)> {
    let mut out = Vec::new();
    for ex in experiments {
        for c in &ex.configurations {
            if measured(&ex.experiment, &c.name) {
                continue;
            }
            if let Some(why) = left_out(c, live) {
                eprintln!(
                    "{}: {} / {}: cost per query not measured: {why}",
                    suite.name, ex.experiment, c.name
                );
                continue;
            }
            out.push((ex, c));
        }
    }
    out
}

/// Measures each of `chosen` ([`to_measure`]) on `suite` (see the module's doc) with one
/// replayer over the suite's corpus.
pub fn measure(
    engine: &mut Replayer,
    suite: &Suite,
    chosen: &[(&Experiments, &Configuration)],
    command: &str,
) -> Result<Vec<QueryCost>> {
    let mut out = Vec::new();
    for &(ex, c) in chosen {
        let one = Experiments {
            configurations: vec![c.clone()],
            baseline: None,
            distractors: None,
            ..ex.clone()
        };
        eprintln!(
            "{}: {} / {}: cost per query, {} tasks",
            suite.name,
            ex.experiment,
            c.name,
            suite.tasks.len()
        );
        out.push(measure_one(engine, suite, &one, command)?);
    }
    Ok(out)
}

/// The four passes of one configuration (`ex` holds only it).
fn measure_one(
    engine: &mut Replayer,
    suite: &Suite,
    ex: &Experiments,
    command: &str,
) -> Result<QueryCost> {
    let machine = machine();
    let measured_at = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string();
    let opts = ReplayOptions::default();
    let one_task = |ti: usize| Suite {
        tasks: vec![suite.tasks[ti].clone()],
        ..suite.clone()
    };
    // Warm-up: the models loaded, outside every timed pass.
    if !suite.tasks.is_empty() {
        fresh_caches(engine);
        replay_with(engine, &one_task(0), ex, &opts)?;
    }
    fresh_caches(engine);
    reset_peak();
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for ti in 0..suite.tasks.len() {
        let s = one_task(ti);
        cold.push(timed(|| replay_with(engine, &s, ex, &opts))?);
        let before = computed(engine);
        warm.push(timed(|| replay_with(engine, &s, ex, &opts))?);
        check_served(engine, before, &ex.configurations[0].name)?;
    }
    let peak_rss_mib = peak_rss_mib();
    let before = computed(engine);
    let all_warm = timed(|| replay_with(engine, suite, ex, &opts))?;
    check_served(engine, before, &ex.configurations[0].name)?;
    let qps = |ms: f64| suite.tasks.len() as f64 / (ms / 1e3).max(f64::MIN_POSITIVE);
    let cold_total: f64 = cold.iter().sum();
    Ok(QueryCost {
        configuration: ex.configurations[0].name.clone(),
        experiment: ex.experiment.clone(),
        tasks: suite.tasks.len(),
        per_query_ms: Percentiles::of(&cold),
        per_query_ms_warm: Percentiles::of(&warm),
        qps: qps(cold_total),
        qps_warm: qps(all_warm),
        peak_rss_mib,
        measured_at,
        machine,
        command: command.to_string(),
    })
}

/// Milliseconds `f` took.
fn timed<T>(f: impl FnOnce() -> Result<T>) -> Result<f64> {
    let started = Instant::now();
    f()?;
    Ok(started.elapsed().as_secs_f64() * 1e3)
}

/// Empty in-memory caches for every model of `engine` (the disk caches are not touched): the
/// next replay computes every query vector and pair it needs.
fn fresh_caches(engine: &mut Replayer) {
    for d in engine.dense.values_mut() {
        d.cache = EmbeddingCache::in_memory(&*d.embedder.borrow());
    }
    for r in engine.rerankers.values_mut() {
        r.cache = ScoreCache::in_memory(&*r.model.borrow());
    }
}

/// Model outputs computed so far by `engine`'s caches (query vectors and pairs).
fn computed(engine: &Replayer) -> usize {
    let vectors: usize = engine.dense.values().map(|d| d.cache.stats().misses).sum();
    let pairs: usize = engine
        .rerankers
        .values()
        .map(|r| r.cache.stats().scored)
        .sum();
    vectors + pairs
}

/// A warm pass computed nothing since `before`.
fn check_served(engine: &Replayer, before: usize, name: &str) -> Result<()> {
    let now = computed(engine);
    if now != before {
        bail!(
            "{name}: the warm pass computed {} model outputs; the caches did not keep the cold pass's",
            now - before
        );
    }
    Ok(())
}

/// Resets the process's resident high-water mark (Linux; elsewhere nothing happens).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's resident high-water mark in MiB (`VmHWM` of `/proc/self/status`).
fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// `2 cores (x86_64 linux), load average 2.61 at the start`.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string));
    let mut s = format!(
        "{cores} core{} ({} {})",
        if cores == 1 { "" } else { "s" },
        std::env::consts::ARCH,
        std::env::consts::OS
    );
    if let Some(l) = load {
        s.push_str(&format!(", load average {l} at the start"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest rank, by hand: of 1..=20 ms, p50 is rank ⌈10⌉ = 10, p95 rank ⌈19⌉ = 19, p99
    /// rank ⌈19.8⌉ = 20; of one value, every percentile is it.
    #[test]
    fn percentiles_are_nearest_rank() {
        let ms: Vec<f64> = (1..=20).rev().map(f64::from).collect();
        let p = Percentiles::of(&ms);
        assert_eq!((p.p50, p.p95, p.p99, p.max), (10.0, 19.0, 20.0, 20.0));
        let p = Percentiles::of(&[7.5]);
        assert_eq!((p.p50, p.p95, p.p99, p.max), (7.5, 7.5, 7.5, 7.5));
        // 3 values: p50 rank ⌈1.5⌉ = 2.
        assert_eq!(Percentiles::of(&[3.0, 1.0, 2.0]).p50, 2.0);
    }
}
