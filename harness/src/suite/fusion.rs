//! A fusion configuration's `fusion:` field: reciprocal rank fusion (the default) or a weighted
//! sum of normalized scores (`ranklab_engine::fusion::weighted`), and the one function that fuses
//! a task's BM25 and dense lists under either.
//!
//! ```yaml
//! fusion: { method: weighted, normalize: minmax, weights: { bm25: 0.3, dense: 0.7 } }
//! ```
//! The lists are the configuration's BM25 list and its bi-encoder's list, each at the
//! configuration's `depth`, and, when `weights` names `rerank`, the scores its `rerank:` stage
//! gives its shortlist (a document outside the shortlist gets that list's minimum, as for any
//! missing document). The shortlist is then cut from the list `shortlist_from` names (`rrf`,
//! the reciprocal rank fusion of the two, by default; `bm25` or `dense`), which is the
//! configuration's first stage, so it does not depend on the weights. When `weights` names
//! `engine`, the configuration also has `engine:` (an external engine, `docs/engines.md`) and
//! that engine's list (its hits inside the corpus, at `depth`) is fused too: replayed from a
//! recording like an engine's own configuration. Both may be named at once (bm25, dense,
//! rerank, engine); the shortlist is then still cut from `shortlist_from` (ranklab's own lists,
//! never the engine's: the shortlist, and so every pair scored, is the same whatever the
//! weights, and the same as the plain rerank configurations' over that list, whose scores are
//! cached and recorded). A list not named under `weights` has weight 0. Weights are finite and
//! ≥ 0.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use ranklab_engine::fusion::weighted::{weighted_ranked, Normalize};
use ranklab_engine::fusion::{rrf_ranked, RrfParams};
use ranklab_engine::ranking::Hit;
use serde::Deserialize;

use super::RerankSpec;

/// The lists a weighted fusion can name, in the order they are added up (`rerank`: the
/// configuration's rerank stage's scores over its shortlist; `engine`: the list of the
/// configuration's `engine:`; `cross-encoder`, `colbert`: the scores the models the fusion's
/// `rerankers:` names under those names give the same shortlist).
pub const LISTS: [&str; 6] = [
    "bm25",
    "dense",
    "rerank",
    "engine",
    "cross-encoder",
    "colbert",
];

/// The indices in [`LISTS`] of the lists a fusion's `rerankers:` may name.
pub const FAMILIES: [usize; 2] = [4, 5];

/// The index of `rerank` in [`LISTS`].
pub const RERANK: usize = 2;

/// The index of `engine` in [`LISTS`].
pub const ENGINE: usize = 3;

/// The list a `rerank` list's shortlist is cut from (`shortlist_from:`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShortlistFrom {
    /// The reciprocal rank fusion of BM25 and dense (with `rrf_k`).
    #[default]
    Rrf,
    /// The BM25 list.
    Bm25,
    /// The bi-encoder's list.
    Dense,
}

impl ShortlistFrom {
    /// The name written in configuration files.
    pub fn name(self) -> &'static str {
        match self {
            ShortlistFrom::Rrf => "rrf",
            ShortlistFrom::Bm25 => "bm25",
            ShortlistFrom::Dense => "dense",
        }
    }
}

/// How a fusion configuration combines its lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Reciprocal rank fusion with `rrf_k`.
    Rrf,
    /// Σ weight · normalized score.
    Weighted,
}

/// The `fusion:` field of a configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FusionSpec {
    /// `rrf` or `weighted`.
    pub method: Method,
    /// The normalization of `weighted` (default `minmax`).
    #[serde(default)]
    pub normalize: Option<Normalize>,
    /// The weight of each list (`weighted`; a list left out weighs 0).
    #[serde(default)]
    pub weights: BTreeMap<String, f64>,
    /// Where a `rerank` list's shortlist is cut from (default `rrf`); only with `rerank` named.
    #[serde(default)]
    pub shortlist_from: Option<ShortlistFrom>,
    /// Further reranker lists by name (`cross-encoder`, `colbert`): each a rerank stage over
    /// the same shortlist, its scores a list of its own (`weighted` only).
    #[serde(default)]
    pub rerankers: BTreeMap<String, RerankSpec>,
}

impl FusionSpec {
    /// The normalization (`minmax` by default).
    pub fn normalize(&self) -> Normalize {
        self.normalize.unwrap_or(Normalize::Minmax)
    }

    /// The weights in the order of [`LISTS`] (0 for a list not named).
    pub fn weight_vector(&self) -> [f64; LISTS.len()] {
        LISTS.map(|l| self.weights.get(l).copied().unwrap_or(0.0))
    }

    /// Whether the weights name the rerank stage's list (then it is fused, and the rerank stage
    /// no longer reorders the shortlist by itself).
    pub fn names_rerank(&self) -> bool {
        self.method == Method::Weighted && self.weights.contains_key(LISTS[RERANK])
    }

    /// Whether the fusion names further reranker lists (`rerankers:`).
    pub fn names_rerankers(&self) -> bool {
        self.method == Method::Weighted && !self.rerankers.is_empty()
    }

    /// Whether a shortlist is cut and scored: the weights name `rerank` or `rerankers:` names a
    /// list. The configuration's first stage is then the shortlist's list (`shortlist_from`).
    pub fn cuts_shortlist(&self) -> bool {
        self.names_rerank() || self.names_rerankers()
    }

    /// The reranker lists of `rerankers:` with their indices in [`LISTS`], in that order.
    pub fn reranker_lists(&self) -> Vec<(usize, &RerankSpec)> {
        FAMILIES
            .iter()
            .filter_map(|&i| Some((i, self.rerankers.get(LISTS[i])?)))
            .filter(|_| self.method == Method::Weighted)
            .collect()
    }

    /// Whether the weights name the configuration's external engine's list.
    pub fn names_engine(&self) -> bool {
        self.method == Method::Weighted && self.weights.contains_key(LISTS[ENGINE])
    }

    /// The indices in [`LISTS`] of the lists fused, in the order they are added up: bm25,
    /// dense, then `rerank` and `engine` when named, then the `rerankers:` lists.
    pub fn fused_lists(&self) -> Vec<usize> {
        let mut out = vec![0, 1];
        out.extend(self.names_rerank().then_some(RERANK));
        out.extend(self.names_engine().then_some(ENGINE));
        out.extend(self.reranker_lists().into_iter().map(|(i, _)| i));
        out
    }

    /// How many lists are fused: 2 (bm25, dense), one more for each of `rerank`, `engine` and
    /// each `rerankers:` list.
    pub fn list_count(&self) -> usize {
        self.fused_lists().len()
    }

    /// The list a `rerank` list's shortlist is cut from.
    pub fn shortlist_from(&self) -> ShortlistFrom {
        self.shortlist_from.unwrap_or_default()
    }

    /// Checks the spec against the rest of its configuration (`has_rerank`: it has a `rerank:`
    /// stage; `interpolates`: that stage has `interpolate:`); `at` is its `file:line`.
    pub fn check_with(&self, has_rerank: bool, interpolates: bool, at: &str) -> Result<()> {
        self.check(at)?;
        if self.names_rerank() && !has_rerank {
            bail!("{at}: fusion weight for \"rerank\" names the scores of the configuration's rerank stage, and it has none; add `rerank: {{ model: ..., shortlist: N }}` or remove the weight");
        }
        if self.names_rerank() && interpolates {
            bail!("{at}: a fusion that weighs the \"rerank\" list already combines the reranker with the first stages; remove `interpolate` from `rerank:`");
        }
        if self.names_engine() && has_rerank && !self.names_rerank() {
            bail!("{at}: a fusion that weighs the \"engine\" list fuses its rerank stage only as a list of its own; add a weight for \"rerank\" (e.g. `rerank: 0.2`) or remove `rerank:`");
        }
        if self.shortlist_from.is_some() && !self.cuts_shortlist() {
            bail!("{at}: `shortlist_from` says where the shortlist of the \"rerank\" list (or of `rerankers:`) is cut from; it needs a weight for \"rerank\" or a `rerankers:` list (or remove it)");
        }
        Ok(())
    }

    /// Checks `rerankers:` (a weighted fusion's further reranker lists): each name is one of
    /// the families, has a weight, and names a plain model stage no wider than `depth`; each
    /// family weighed has its model named. `at` is the configuration's `file:line`.
    pub fn check_rerankers(&self, depth: usize, at: &str) -> Result<()> {
        let families: Vec<&str> = FAMILIES.iter().map(|&i| LISTS[i]).collect();
        if self.method == Method::Rrf && !self.rerankers.is_empty() {
            bail!("{at}: `rerankers:` names lists of a weighted fusion; write `method: weighted` with a weight for each");
        }
        for (name, r) in &self.rerankers {
            if !families.contains(&name.as_str()) {
                bail!("{at}: fusion reranker {name:?}: `rerankers:` names the lists {} (each a model over the shortlist){}", families.join(", "), did_you_mean(name));
            }
            if !self.weights.contains_key(name) {
                bail!("{at}: fusion reranker {name:?} has no weight; add `{name}: <weight>` to `weights` (0 to leave it out)");
            }
            if r.scorer != super::Scorer::Model || r.finetune.is_some() || r.interpolate.is_some() {
                bail!("{at}: fusion reranker {name:?}: a list of `rerankers:` is `{{ model: ID, shortlist: N }}` (a cross-encoder or ColBERT model); an LLM, an endpoint, `finetune` or `interpolate` belong to `rerank:`");
            }
            if r.shortlist == 0 || r.shortlist > depth {
                bail!("{at}: fusion reranker {name:?}: shortlist {} must be between 1 and the depth {depth}", r.shortlist);
            }
        }
        for name in families {
            if self.weights.contains_key(name) && !self.rerankers.contains_key(name) {
                bail!("{at}: fusion weight for {name:?} names the list of a model over the shortlist; name its model in `rerankers: {{ {name}: {{ model: ID, shortlist: N }} }}` or remove the weight");
            }
        }
        Ok(())
    }

    /// Checks the spec; `at` is the configuration's `file:line`.
    pub fn check(&self, at: &str) -> Result<()> {
        match self.method {
            Method::Rrf => {
                if self.normalize.is_some()
                    || !self.weights.is_empty()
                    || self.shortlist_from.is_some()
                {
                    bail!("{at}: `fusion: {{ method: rrf }}` takes no `normalize`, `weights` or `shortlist_from` (those are for `method: weighted`); RRF's constant is `rrf_k`");
                }
            }
            Method::Weighted => {
                for (name, w) in &self.weights {
                    if !LISTS.contains(&name.as_str()) {
                        bail!("{at}: fusion weight for {name:?}: a weighted fusion combines the lists {} (rerank: the rerank stage's scores; engine: the configuration's `engine:`; cross-encoder, colbert: the models `rerankers:` names); name only those{}", LISTS.join(", "), did_you_mean(name));
                    }
                    if !(w.is_finite() && *w >= 0.0) {
                        bail!("{at}: fusion weight {name}: {w} must be a finite number >= 0 (write e.g. 0.3)");
                    }
                }
            }
        }
        Ok(())
    }

    /// A key that differs whenever two specs give different first-stage lists (for the list
    /// cache and the shortlists): a spec naming `rerank` has its shortlist's list as its first
    /// stage (`rrf` shares RRF's list and so its shortlist scores), and fuses after reranking.
    pub fn key(&self) -> String {
        match self.method {
            Method::Rrf => "rrf".into(),
            Method::Weighted if self.cuts_shortlist() => match self.shortlist_from() {
                ShortlistFrom::Rrf => "rrf".into(),
                from => format!("list {}", from.name()),
            },
            Method::Weighted => {
                let w = self
                    .fused_lists()
                    .into_iter()
                    .map(|i| self.weight_vector()[i])
                    .map(|x| format!("{:016x}", x.to_bits()))
                    .collect::<Vec<_>>();
                format!("weighted {} {}", self.normalize().name(), w.join(" "))
            }
        }
    }

    /// Text for tables: `weighted minmax (bm25 0.3, dense 0.7)`.
    pub fn describe(&self) -> String {
        match self.method {
            Method::Rrf => "rrf".into(),
            Method::Weighted => {
                let w = self.weight_vector();
                let parts: Vec<String> = self
                    .fused_lists()
                    .into_iter()
                    .map(|i| format!("{} {}", LISTS[i], w[i]))
                    .collect();
                let from = if self.cuts_shortlist() {
                    format!("; shortlist from {}", self.shortlist_from().name())
                } else {
                    String::new()
                };
                format!(
                    "weighted {} ({}{from})",
                    self.normalize().name(),
                    parts.join(", ")
                )
            }
        }
    }
}

/// `; did you mean "bm25"?` when `name` is within two edits of a list's name, else empty.
pub fn did_you_mean(name: &str) -> String {
    LISTS
        .iter()
        .map(|l| (edits(name, l), *l))
        .filter(|&(d, _)| d <= 2)
        .min()
        .map_or_else(String::new, |(_, l)| format!("; did you mean {l:?}?"))
}

/// Levenshtein distance (insertions, deletions, substitutions), by characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Fuses a task's BM25 list `lex` and dense list `sem` as `spec` says (RRF with `rrf` when no
/// spec or `method: rrf`), in the total order of `ranklab_engine::ranking`. For a spec naming
/// `rerank` this is the first stage the shortlist is cut from (`shortlist_from`); the fusion
/// with the reranker's list is [`fuse_reranked`], after the shortlist is scored.
pub fn fuse(
    spec: Option<&FusionSpec>,
    rrf: RrfParams,
    lex: &[Hit],
    sem: &[Hit],
    id_rank: &[u32],
) -> Vec<Hit> {
    match spec {
        Some(s) if s.cuts_shortlist() => match s.shortlist_from() {
            ShortlistFrom::Rrf => rrf_ranked(&[lex, sem], rrf, id_rank),
            ShortlistFrom::Bm25 => lex[..lex.len().min(rrf.depth)].to_vec(),
            ShortlistFrom::Dense => sem[..sem.len().min(rrf.depth)].to_vec(),
        },
        Some(s) if s.method == Method::Weighted => weighted_ranked(
            &[lex, sem],
            &s.weight_vector()[..2],
            s.normalize(),
            rrf.depth,
            id_rank,
        ),
        _ => rrf_ranked(&[lex, sem], rrf, id_rank),
    }
}

/// The weighted fusion of `lists`, one per [`FusionSpec::fused_lists`] in that order (`lex`,
/// `sem`, the reranker's list: the shortlist's documents by their reranker scores, in the
/// total order; then the engine's hits inside the corpus when the spec names `engine`), each
/// cut at `depth`: what a spec naming `rerank` ranks a task by.
pub fn fuse_reranked(
    spec: &FusionSpec,
    depth: usize,
    lists: &[&[Hit]],
    id_rank: &[u32],
) -> Vec<Hit> {
    let w = spec.weight_vector();
    let weights: Vec<f64> = spec.fused_lists().into_iter().map(|i| w[i]).collect();
    assert_eq!(weights.len(), lists.len(), "one list per fused list");
    let mut out = weighted_ranked(lists, &weights, spec.normalize(), depth, id_rank);
    out.truncate(depth);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> FusionSpec {
        yaml_serde::from_str(yaml).unwrap()
    }

    #[test]
    fn negative_and_unknown_weights_are_refused_at_the_line() {
        let e = spec("{ method: weighted, weights: { bm25: -0.1, dense: 1 } }")
            .check("x.yaml:7")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x.yaml:7: fusion weight bm25: -0.1"), "{e}");
        let e = spec("{ method: weighted, weights: { splade: 1 } }")
            .check("x.yaml:7")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"splade\""), "{e}");
        assert!(spec("{ method: rrf, weights: { bm25: 1 } }")
            .check("a:1")
            .is_err());
        assert!(
            spec("{ method: weighted, normalize: zscore, weights: { bm25: 0 } }")
                .check("a:1")
                .is_ok()
        );
    }

    /// By hand: "bm52" -> "bm25" is 2 substitutions, "dnese" -> "dense" 2, "colbret" ->
    /// "colbert" 2 (a transposition), "splade" is 5 or more from every list name (5 from
    /// "dense", "rerank" and "engine", 6 from "bm25" and "colbert": no suggestion).
    #[test]
    fn an_unknown_list_name_gets_the_nearest_known_one() {
        assert_eq!(edits("bm52", "bm25"), 2);
        assert_eq!(edits("dense", "dense"), 0);
        assert_eq!(edits("", "bm25"), 4);
        let e = spec("{ method: weighted, weights: { bm52: 1 } }")
            .check("x.yaml:3")
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("; did you mean \"bm25\"?"), "{e}");
        assert_eq!(did_you_mean("dnese"), "; did you mean \"dense\"?");
        assert_eq!(did_you_mean("colbret"), "; did you mean \"colbert\"?");
        assert_eq!(did_you_mean("splade"), "");
    }

    /// By hand: a spec weighing `engine` fuses bm25, dense and engine (LISTS indices 0, 1, 3),
    /// describes them in that order, keys on all three weights, refuses a rerank stage beside
    /// it that it does not weigh, and "engnie" is 2 edits from "engine" (a transposition: 2
    /// substitutions).
    #[test]
    fn an_engine_weight_is_a_third_list_and_refuses_a_rerank_stage_it_does_not_weigh() {
        let a = spec("{ method: weighted, weights: { bm25: 0.3, dense: 0.4, engine: 0.3 } }");
        let b = spec("{ method: weighted, weights: { bm25: 0.3, dense: 0.4, engine: 0.5 } }");
        assert_eq!(a.fused_lists(), [0, 1, ENGINE]);
        assert_eq!(a.list_count(), 3);
        assert_eq!(
            a.describe(),
            "weighted minmax (bm25 0.3, dense 0.4, engine 0.3)"
        );
        assert_ne!(a.key(), b.key());
        assert!(a.check_with(false, false, "x:1").is_ok());
        let e = a.check_with(true, false, "x:1").unwrap_err().to_string();
        assert!(
            e.starts_with("x:1: a fusion that weighs the \"engine\" list"),
            "{e}"
        );
        assert_eq!(did_you_mean("engnie"), "; did you mean \"engine\"?");
    }

    /// By hand: weighing both `engine` and `rerank` fuses four lists in LISTS order (bm25,
    /// dense, rerank, engine: indices 0, 1, 2, 3), needs the rerank stage, refuses
    /// `interpolate` on it, and keys the first stage on the shortlist's list (`rrf`, shared with
    /// the plain rerank configurations), not on the weights.
    #[test]
    fn an_engine_and_a_rerank_weight_fuse_four_lists_with_the_shortlist_cut_from_rrf() {
        let a = spec(
            "{ method: weighted, weights: { bm25: 0.2, dense: 0.3, engine: 0.3, rerank: 0.2 } }",
        );
        assert_eq!(a.fused_lists(), [0, 1, RERANK, ENGINE]);
        assert_eq!(
            a.describe(),
            "weighted minmax (bm25 0.2, dense 0.3, rerank 0.2, engine 0.3; shortlist from rrf)"
        );
        assert_eq!(a.key(), "rrf");
        assert!(a.check_with(true, false, "x:1").is_ok());
        let e = a.check_with(false, false, "x:1").unwrap_err().to_string();
        assert!(e.contains("has none"), "{e}");
        let e = a.check_with(true, true, "x:1").unwrap_err().to_string();
        assert!(e.contains("remove `interpolate`"), "{e}");
    }

    /// By hand: `rerankers:` adds its lists after bm25 and dense in LISTS order (colbert,
    /// index 5, after cross-encoder, index 4, whatever the file's order), cuts a shortlist
    /// (key `rrf`), and is checked: a weighed family needs its model, a model needs a weight,
    /// widths lie in 1..=depth, and `interpolate` belongs to `rerank:`.
    #[test]
    fn rerankers_are_lists_of_their_own_over_one_shortlist() {
        let a = spec("{ method: weighted, weights: { bm25: 0.3, dense: 0.3, cross-encoder: 0.2, colbert: 0.2 }, rerankers: { colbert: { model: c, shortlist: 20 }, cross-encoder: { model: x, shortlist: 20 } } }");
        assert_eq!(a.fused_lists(), [0, 1, 4, 5]);
        assert!(a.cuts_shortlist() && !a.names_rerank());
        assert_eq!(a.key(), "rrf");
        assert_eq!(
            a.describe(),
            "weighted minmax (bm25 0.3, dense 0.3, cross-encoder 0.2, colbert 0.2; shortlist from rrf)"
        );
        assert!(a.check("x:1").is_ok() && a.check_rerankers(100, "x:1").is_ok());
        let e = a.check_rerankers(10, "x:1").unwrap_err().to_string();
        assert!(
            e.contains("shortlist 20 must be between 1 and the depth 10"),
            "{e}"
        );
        let b = spec("{ method: weighted, weights: { bm25: 1, colbert: 1 } }");
        let e = b.check_rerankers(100, "x:1").unwrap_err().to_string();
        assert!(e.starts_with("x:1: fusion weight for \"colbert\""), "{e}");
        let c = spec("{ method: weighted, weights: { bm25: 1 }, rerankers: { colbert: { model: c, shortlist: 5 } } }");
        let e = c.check_rerankers(100, "x:1").unwrap_err().to_string();
        assert!(e.contains("has no weight"), "{e}");
        let d = spec("{ method: weighted, weights: { colbert: 1 }, rerankers: { colbert: { model: c, shortlist: 5, interpolate: 0.5 } } }");
        let e = d.check_rerankers(100, "x:1").unwrap_err().to_string();
        assert!(e.contains("belong to `rerank:`"), "{e}");
    }

    #[test]
    fn weighted_and_rrf_differ_in_key_and_result() {
        let a = spec("{ method: weighted, weights: { bm25: 0.3, dense: 0.7 } }");
        let b = spec("{ method: weighted, weights: { bm25: 0.7, dense: 0.3 } }");
        assert_ne!(a.key(), b.key());
        assert_eq!(a.describe(), "weighted minmax (bm25 0.3, dense 0.7)");
        // lex d0 > d1, sem d1 > d0: under a, dense wins (d1 0.7 > d0 0.3); under b, lexical.
        let h = |doc, score| Hit {
            doc,
            score,
            section: 0,
        };
        let lex = [h(0, 2.0), h(1, 1.0)];
        let sem = [h(1, 0.9), h(0, 0.2)];
        let p = RrfParams::default();
        assert_eq!(fuse(Some(&a), p, &lex, &sem, &[0, 1])[0].doc, 1);
        assert_eq!(fuse(Some(&b), p, &lex, &sem, &[0, 1])[0].doc, 0);
    }
}
