//! The lists a tuning scores its candidates on, computed once: the tuned configuration's BM25
//! and dense lists of every task (one replay) and, when its fusion weighs `rerank`, its rerank
//! stage's scores over the shortlist (read from the replay of the configuration as written,
//! whose shortlist does not depend on the weights), normalized once per normalization the grid
//! names; then every candidate is scored by re-weighting them (no replay, no model, per
//! candidate).

use std::collections::HashMap;

use anyhow::{bail, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::fusion::weighted::{combine, normalize, table, Normalize, Table};
use ranklab_engine::ranking::Hit;
use rayon::prelude::*;

use super::file::{normalize_of, Param, Plan, Value};
use crate::metrics::{evaluate_ranking, Measure};
use crate::replay::{ConfigRun, Ranked};
use crate::report::MeasureSet;
use crate::suite::fusion::{FusionSpec, Method, LISTS};
use crate::suite::{Configuration, Retriever, Suite};
use ranklab_engine::policy::Wiring;

/// The per-task tables of one tuning.
pub(crate) struct Lists {
    /// `tables[task][n]`: the task's lists normalized by `normalizations[n]`.
    pub tables: Vec<Vec<Table>>,
    /// The normalizations the grid uses (the configuration's own first).
    pub normalizations: Vec<Normalize>,
    /// The configuration's depth (fused lists are cut there).
    pub depth: usize,
    /// The indices in `LISTS` of the tables' columns ([`FusionSpec::fused_lists`]).
    pub fused: Vec<usize>,
}

/// The configuration's weighted fusion spec, or why it cannot be tuned on the fast path.
pub(crate) fn spec_of(c: &Configuration, at: &str) -> Result<FusionSpec> {
    match &c.fusion {
        Some(f) if f.method == Method::Weighted && c.retriever == Retriever::Fusion => {
            if (c.rerank.is_some() && !f.names_rerank()) || c.wiring != Wiring::None {
                bail!("{at}: configuration {:?} has a rerank stage its fusion does not weigh, or a wiring; ranklab tune varies only a weighted fusion's weights and normalization on lists computed once, so tune a configuration without them (or weigh the rerank stage's list: `weights: {{ ..., rerank: 0.2 }}`)", c.name);
            }
            Ok(f.clone())
        }
        _ => bail!("{at}: configuration {:?} is not a weighted fusion; write it as `retriever: fusion` with `fusion: {{ method: weighted, ... }}` (docs/formats.md) to tune its weights", c.name),
    }
}

/// The two single-list configurations whose lists `c` fuses (its BM25 and its bi-encoder, at
/// its depth).
pub(crate) fn parts(c: &Configuration) -> [Configuration; 2] {
    let part = |retriever, suffix: &str| Configuration {
        name: format!("{}~{suffix}", c.name),
        retriever,
        engine: None,
        fusion: None,
        rerank: None,
        wiring: Wiring::None,
        ..c.clone()
    };
    [
        part(Retriever::Bm25, "bm25"),
        part(Retriever::Dense, "dense"),
    ]
}

fn hits(ranked: &[Ranked]) -> Vec<Hit> {
    crate::replay::as_hits(ranked)
}

/// The plain rerank stage whose shortlist scores a fusion weighing `rerank` reads: `c`'s rerank
/// stage over the list its shortlist is cut from (`shortlist_from`), not fused. Its run holds
/// the reranker's score of every shortlisted document (the fused run keeps them only for the
/// documents within its depth).
pub(crate) fn rerank_part(c: &Configuration, spec: &FusionSpec) -> Option<Configuration> {
    use crate::suite::fusion::ShortlistFrom;
    if !spec.names_rerank() {
        return None;
    }
    let (retriever, fusion) = match spec.shortlist_from() {
        ShortlistFrom::Rrf => (Retriever::Fusion, None),
        ShortlistFrom::Bm25 => (Retriever::Bm25, None),
        ShortlistFrom::Dense => (Retriever::Dense, None),
    };
    Some(Configuration {
        name: format!("{}~rerank", c.name),
        retriever,
        engine: None,
        fusion,
        wiring: Wiring::None,
        ..c.clone()
    })
}

/// The engine's own configuration whose list a fusion weighing `engine` reads: `c`'s engine at
/// `c`'s depth, named `<c>~engine`; its recording is found by the engine's hash (the same as
/// the engine's own configuration's, `external::recording::load_by_hash`).
pub(crate) fn engine_part(c: &Configuration, spec: &FusionSpec) -> Option<Configuration> {
    if !spec.names_engine() {
        return None;
    }
    Some(Configuration {
        name: format!("{}~engine", c.name),
        retriever: Retriever::External,
        fusion: None,
        rerank: None,
        wiring: Wiring::None,
        ..c.clone()
    })
}

/// Normalizes the replayed parts (`bm25`, `dense`: per task, in suite order; and, when the
/// spec weighs `rerank`, the reranker's list read from the first of `more`, the run of
/// [`rerank_part`]; when it weighs `engine`, the engine's list read from the next, the run of
/// [`engine_part`]; then each `rerankers:` list, read from the next runs, those of
/// `replay::rerankers::companions`) once per normalization of the grid.
pub(crate) fn build(
    plan: &Plan,
    spec: &FusionSpec,
    runs: [&ConfigRun; 2],
    more: &[ConfigRun],
    corpus: &Corpus,
    depth: usize,
) -> Lists {
    let [bm25, dense] = runs;
    let (rerank_at, engine_at) = (0, usize::from(spec.names_rerank()));
    let families_at = engine_at + usize::from(spec.names_engine());
    let mut normalizations = vec![spec.normalize()];
    for d in plan.dims.iter().filter(|d| d.param == Param::Normalize) {
        for v in &d.values {
            if let Value::Word(w) = v {
                let n = normalize_of(w).expect("checked when the file was read");
                if !normalizations.contains(&n) {
                    normalizations.push(n);
                }
            }
        }
    }
    let tables = bm25
        .per_task
        .iter()
        .zip(&dense.per_task)
        .enumerate()
        .map(|(t, (l, s))| {
            let mut parts = vec![hits(l), hits(s)];
            if spec.names_rerank() {
                let w = &more[rerank_at].per_task[t];
                parts.push(crate::replay::fused::rerank_list(w, corpus.id_rank()));
            }
            if spec.names_engine() {
                // The engine's hits inside the corpus, as the replay fuses them.
                let inside: Vec<Hit> = hits(&more[engine_at].per_task[t])
                    .into_iter()
                    .filter(|h| h.doc < corpus.len())
                    .collect();
                parts.push(inside);
            }
            for r in &more[families_at..] {
                parts.push(crate::replay::fused::rerank_list(
                    &r.per_task[t],
                    corpus.id_rank(),
                ));
            }
            normalizations
                .iter()
                .map(|&n| {
                    let normalized: Vec<_> = parts.iter().map(|p| normalize(p, depth, n)).collect();
                    let refs: Vec<_> = normalized.iter().collect();
                    table(&refs, corpus.len())
                })
                .collect()
        })
        .collect();
    Lists {
        tables,
        normalizations,
        depth,
        fused: spec.fused_lists(),
    }
}

/// A candidate as settings: the weights (in `LISTS` order) and the normalization's index in
/// [`Lists::normalizations`].
pub(crate) fn settings(
    plan: &Plan,
    spec: &FusionSpec,
    lists: &Lists,
    point: &[usize],
) -> ([f64; LISTS.len()], usize) {
    let mut w = spec.weight_vector();
    let mut n = 0;
    for (d, &i) in plan.dims.iter().zip(point) {
        match (d.param, &d.values[i]) {
            (Param::Weight(l), Value::Number(x)) => w[l] = *x,
            (Param::Normalize, Value::Word(word)) => {
                let want = normalize_of(word).expect("checked");
                n = lists
                    .normalizations
                    .iter()
                    .position(|&x| x == want)
                    .expect("built");
            }
            _ => unreachable!("values checked against their parameter"),
        }
    }
    (w, n)
}

/// The fused ranking of task `t` under weights `w` and normalization `n`, cut at the depth.
pub(crate) fn ranking(
    lists: &Lists,
    t: usize,
    w: &[f64; LISTS.len()],
    n: usize,
    corpus: &Corpus,
) -> Vec<Hit> {
    let w: Vec<f64> = lists.fused.iter().map(|&i| w[i]).collect();
    let mut hits = combine(&lists.tables[t][n], &w, corpus.id_rank());
    hits.truncate(lists.depth);
    hits
}

/// What a task's ranking is scored with: the measure at the task's k and its judgments.
pub(crate) struct Scorer {
    measures: Vec<Measure>,
    judged: Vec<HashMap<String, i32>>,
}

impl Scorer {
    /// The measure named `name` (a column of the tables of `set`) for every task of `suite`.
    pub(crate) fn new(suite: &Suite, set: &MeasureSet, name: &str, at: &str) -> Result<Scorer> {
        let names = set.names(suite.k);
        let Some(i) = names.iter().position(|n| n == name) else {
            bail!(
                "{at}: measure {name:?} is not a column of the suite's tables; write one of {}",
                names.join(", ")
            );
        };
        Ok(Scorer {
            measures: suite.tasks.iter().map(|t| set.for_task(t)[i]).collect(),
            judged: suite
                .tasks
                .iter()
                .map(|t| t.expected.iter().map(|(k, v)| (k.clone(), *v)).collect())
                .collect(),
        })
    }

    /// Task `t`'s value of `hits`.
    pub(crate) fn value(&self, t: usize, hits: &[Hit], corpus: &Corpus) -> f64 {
        let ids: Vec<&str> = hits.iter().map(|h| corpus.id(h.doc)).collect();
        evaluate_ranking(&[self.measures[t]], &ids, &self.judged[t], 1)[0]
    }

    /// Task `t`'s value of a replayed ranking.
    pub(crate) fn value_ranked(&self, t: usize, ranked: &[Ranked], corpus: &Corpus) -> f64 {
        self.value(t, &hits(ranked), corpus)
    }
}

/// Every candidate's value on every task: `[candidate * tasks + task]`, candidates on rayon's
/// pool (each value depends only on its candidate and task, so the result does not depend on
/// the number of threads).
pub(crate) fn score_grid(
    plan: &Plan,
    spec: &FusionSpec,
    lists: &Lists,
    scorer: &Scorer,
    corpus: &Corpus,
) -> Vec<f64> {
    let tasks = lists.tables.len();
    (0..plan.candidates())
        .into_par_iter()
        .flat_map_iter(|c| {
            let (w, n) = settings(plan, spec, lists, &plan.point(c));
            (0..tasks)
                .map(|t| scorer.value(t, &ranking(lists, t, &w, n, corpus), corpus))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A grid may vary `fusion.weights.rerank` only when the configuration's fusion weighs its
/// rerank stage (else there is no such list); `at` gives a key's file:line.
pub(crate) fn check_paths(
    plan: &Plan,
    spec: &FusionSpec,
    at: &dyn Fn(&str) -> String,
) -> Result<()> {
    for d in &plan.dims {
        if d.param == Param::Weight(crate::suite::fusion::RERANK) && !spec.names_rerank() {
            bail!("{}: {}: the configuration's fusion does not weigh its rerank stage's list; add `rerank: <weight>` to its `fusion.weights` and a `rerank:` stage (docs/formats.md)", at(&d.path), d.path);
        }
        if let Param::Weight(l) = d.param {
            if crate::suite::fusion::FAMILIES.contains(&l) && !spec.rerankers.contains_key(LISTS[l])
            {
                bail!("{}: {}: the configuration's fusion names no {:?} list; add its model to the fusion's `rerankers:` and a weight for it (docs/formats.md)", at(&d.path), d.path, LISTS[l]);
            }
        }
        if d.param == Param::Weight(crate::suite::fusion::ENGINE) && !spec.names_engine() {
            bail!("{}: {}: the configuration's fusion does not weigh an engine's list; add `engine: <weight>` to its `fusion.weights` and an `engine:` (docs/formats.md)", at(&d.path), d.path);
        }
    }
    Ok(())
}
