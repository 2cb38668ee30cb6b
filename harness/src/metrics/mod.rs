//! Retrieval measures with trec_eval 10.0's exact conventions, one file per measure.
//!
//! Every measure is computed from one query's [`QueryView`]: how many documents were retrieved,
//! where in the ranking the documents with a judgment that matters sit ([`Hit`]s), and the query's
//! judgments ([`Judgments`]). Documents without a judgment, or judged non-relevant, never need
//! to be looked at individually, which is what lets `ranklab eval` stream a 7-million-line run.
//!
//! Conventions (checked against trec_eval's source and its test files, see
//! `../shared/data/README.md`):
//! - a document is relevant when its judgment is `>= rel_level` (default 1); negative judgments
//!   and unjudged documents are never relevant;
//! - `recall_k` = relevant in the top k / all relevant judgments of the query (not capped at k);
//! - `P_k` divides by k even when fewer than k documents were retrieved;
//! - `recip_rank` has no cutoff; `recip_rank_cut_k` (RR@k) is ranklab's own measure;
//! - nDCG uses the judgment value as a linear gain (independent of the relevance level) and a
//!   `log2(rank + 1)` discount; the ideal ranking is made of all positive judgments;
//! - a query with no relevant document scores 0 on every measure.
//!
//! The caller orders the ranking (score descending, ties by document id descending: see
//! [`crate::trec`]); measures here only read ranks.

mod counts;
mod map;
mod ndcg;
mod precision;
mod recall;
mod recip_rank;
mod rprec;
mod success;

use std::collections::HashMap;
use std::fmt;

/// trec_eval's default cutoffs for `P`, `recall` and `ndcg_cut`.
pub const DEFAULT_CUTOFFS: [usize; 9] = [5, 10, 15, 20, 30, 100, 200, 500, 1000];
/// trec_eval's default cutoffs for `success`.
pub const DEFAULT_SUCCESS_CUTOFFS: [usize; 3] = [1, 5, 10];

/// One measure, with its cutoff where it has one.
///
/// The derived order is trec_eval's output order (the order of its measure table), with
/// cutoffs ascending inside a family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Measure {
    /// `num_ret`: documents retrieved. Summed, not averaged, over queries.
    NumRet,
    /// `num_rel`: relevant judgments of the query. Summed over queries.
    NumRel,
    /// `num_rel_ret`: relevant documents retrieved. Summed over queries.
    NumRelRet,
    /// `map`: average precision (mean over queries).
    Map,
    /// `Rprec`: precision after R documents, R = the number of relevant judgments.
    Rprec,
    /// `recip_rank`: 1 / rank of the first relevant document, over the whole ranking.
    RecipRank,
    /// `recip_rank_cut_k`: reciprocal rank counted only when the first relevant document is
    /// within the top k (RR@k, "MRR@10" of MS MARCO). **Not a trec_eval measure**: ranklab's own,
    /// never part of `official` or `all_trec`, only computed when asked for.
    RecipRankCut(usize),
    /// `P_k`: precision at k.
    P(usize),
    /// `recall_k`: relevant retrieved in the top k / all relevant.
    Recall(usize),
    /// `ndcg`: nDCG over the whole ranking.
    Ndcg,
    /// `ndcg_cut_k`: nDCG at k.
    NdcgCut(usize),
    /// `success_k`: 1 if a relevant document is in the top k, else 0.
    Success(usize),
}

impl Measure {
    /// The name trec_eval prints for this measure (`P_5`, `recall_100`, `ndcg_cut_10`, `map`...).
    pub fn name(&self) -> String {
        match self {
            Measure::NumRet => "num_ret".into(),
            Measure::NumRel => "num_rel".into(),
            Measure::NumRelRet => "num_rel_ret".into(),
            Measure::Map => "map".into(),
            Measure::Rprec => "Rprec".into(),
            Measure::RecipRank => "recip_rank".into(),
            Measure::RecipRankCut(k) => format!("recip_rank_cut_{k}"),
            Measure::P(k) => format!("P_{k}"),
            Measure::Recall(k) => format!("recall_{k}"),
            Measure::Ndcg => "ndcg".into(),
            Measure::NdcgCut(k) => format!("ndcg_cut_{k}"),
            Measure::Success(k) => format!("success_{k}"),
        }
    }

    /// True for the counts (`num_ret`, `num_rel`, `num_rel_ret`): summed over queries and
    /// printed as integers, like trec_eval.
    pub fn is_count(&self) -> bool {
        matches!(self, Measure::NumRet | Measure::NumRel | Measure::NumRelRet)
    }

    /// The value of this measure for one query.
    pub fn compute(&self, q: &QueryView<'_>) -> f64 {
        match *self {
            Measure::NumRet => counts::num_ret(q),
            Measure::NumRel => counts::num_rel(q),
            Measure::NumRelRet => counts::num_rel_ret(q),
            Measure::Map => map::average_precision(q),
            Measure::Rprec => rprec::r_precision(q),
            Measure::RecipRank => recip_rank::reciprocal_rank(q),
            Measure::RecipRankCut(k) => recip_rank::reciprocal_rank_at(q, k),
            Measure::P(k) => precision::precision_at(q, k),
            Measure::Recall(k) => recall::recall_at(q, k),
            Measure::Ndcg => ndcg::ndcg(q),
            Measure::NdcgCut(k) => ndcg::ndcg_at(q, k),
            Measure::Success(k) => success::success_at(q, k),
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A retrieved document whose judgment matters to some measure: relevant at the relevance level,
/// or with a positive gain for nDCG.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// 0-based position in the ranking (rank 1 is 0).
    pub rank: usize,
    /// The document's judgment in the qrels.
    pub rel: i32,
}

/// What the measures need from one query's judgments, for a given relevance level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judgments {
    /// Judgments `>= rel_level` (and `>= 0`): trec_eval's `num_rel`.
    pub num_rel: usize,
    /// The positive judgments, largest first: the ideal ranking's gains for nDCG.
    pub ideal_gains: Vec<i32>,
}

impl Judgments {
    /// Summarizes one query's judgment values (one per judged document).
    pub fn from_values(values: impl IntoIterator<Item = i32>, rel_level: i32) -> Self {
        let mut num_rel = 0;
        let mut ideal_gains = Vec::new();
        for v in values {
            if is_relevant(v, rel_level) {
                num_rel += 1;
            }
            if v > 0 {
                ideal_gains.push(v);
            }
        }
        ideal_gains.sort_unstable_by(|a, b| b.cmp(a));
        Judgments {
            num_rel,
            ideal_gains,
        }
    }
}

/// One query as the measures see it.
#[derive(Debug, Clone, Copy)]
pub struct QueryView<'a> {
    /// Documents retrieved.
    pub num_ret: usize,
    /// Retrieved documents whose judgment [`matters`], by ascending rank.
    pub hits: &'a [Hit],
    /// The query's judgments.
    pub judgments: &'a Judgments,
    /// Minimum judgment for a document to be relevant.
    pub rel_level: i32,
}

impl QueryView<'_> {
    /// True when the hit is relevant at this view's relevance level.
    #[inline]
    pub fn relevant(&self, hit: &Hit) -> bool {
        is_relevant(hit.rel, self.rel_level)
    }

    /// Relevant hits by ascending rank.
    pub fn relevant_hits(&self) -> impl Iterator<Item = &Hit> + '_ {
        self.hits.iter().filter(move |h| self.relevant(h))
    }
}

/// trec_eval's relevance test: a judged document (judgment `>= 0`) whose judgment reaches the
/// level. Unjudged documents and negative judgments are never relevant.
#[inline]
pub fn is_relevant(rel: i32, rel_level: i32) -> bool {
    rel >= 0 && rel >= rel_level
}

/// True when a retrieved document with this judgment can change some measure: it is relevant or
/// has a positive nDCG gain. Only such documents need to become [`Hit`]s.
#[inline]
pub fn matters(rel: i32, rel_level: i32) -> bool {
    rel > 0 || is_relevant(rel, rel_level)
}

/// Evaluates one query whose documents are `ranked` in final order (rank 1 first; the caller has
/// ordered them) against its judgments `judged` (document id -> judgment). Returns one value per
/// measure, in the order of `measures`.
///
/// `ranked` should not contain a document twice (trec_eval rejects such runs); if it does, each
/// occurrence counts.
pub fn evaluate_ranking(
    measures: &[Measure],
    ranked: &[&str],
    judged: &HashMap<String, i32>,
    rel_level: i32,
) -> Vec<f64> {
    let hits: Vec<Hit> = ranked
        .iter()
        .enumerate()
        .filter_map(|(rank, doc)| {
            let rel = *judged.get(*doc)?;
            matters(rel, rel_level).then_some(Hit { rank, rel })
        })
        .collect();
    let judgments = Judgments::from_values(judged.values().copied(), rel_level);
    let view = QueryView {
        num_ret: ranked.len(),
        hits: &hits,
        judgments: &judgments,
        rel_level,
    };
    evaluate_view(measures, &view)
}

/// Evaluates one query already reduced to a [`QueryView`] (the fast path of `ranklab eval`).
pub fn evaluate_view(measures: &[Measure], view: &QueryView<'_>) -> Vec<f64> {
    measures.iter().map(|m| m.compute(view)).collect()
}

/// Why a measure specification was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// The name is neither a measure ranklab implements nor a nickname.
    #[error(
        "unknown measure `{name}`; ranklab implements: {implemented} \
         (and the nicknames official, all_trec; summary lines runid, num_q)"
    )]
    Unknown {
        /// The name as given.
        name: String,
        /// Comma-separated list of the implemented measure names.
        implemented: String,
    },
    /// A cutoff that is not a positive integer.
    #[error("measure `{spec}`: cutoff `{cutoff}` is not a positive integer (write e.g. P.5,10)")]
    BadCutoff {
        /// The whole specification.
        spec: String,
        /// The offending cutoff.
        cutoff: String,
    },
    /// The same cutoff twice in one specification (trec_eval rejects this too).
    #[error("measure `{spec}`: cutoff {cutoff} is given twice")]
    DuplicateCutoff {
        /// The whole specification.
        spec: String,
        /// The repeated cutoff.
        cutoff: usize,
    },
    /// Parameters given to a measure that takes none.
    #[error("measure `{name}` takes no parameters (ranklab does not implement trec_eval's custom gains); write `{name}`")]
    NoParams {
        /// The measure name.
        name: String,
    },
    /// A ranklab-only cutoff measure given without cutoffs.
    #[error("measure `{name}` needs cutoffs, e.g. `{name}.10`")]
    NeedsCutoffs {
        /// The measure name.
        name: String,
    },
}

/// The measure names `parse_measures` accepts, in trec_eval's order.
pub const IMPLEMENTED: [&str; 12] = [
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "Rprec",
    "recip_rank",
    "recip_rank_cut",
    "P",
    "recall",
    "ndcg",
    "ndcg_cut",
    "success",
];

/// What `ranklab eval` prints: trec_eval's two summary-only lines (`runid`, `num_q`) and the
/// measures, in trec_eval's output order without duplicates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Print `runid all <tag of the run's last line>`.
    pub runid: bool,
    /// Print `num_q all <number of queries averaged>`.
    pub num_q: bool,
    /// The measures, sorted in trec_eval's output order, without duplicates.
    pub measures: Vec<Measure>,
}

impl Selection {
    /// trec_eval's default set (`official`) restricted to what ranklab implements: runid, num_q,
    /// num_ret, num_rel, num_rel_ret, map, Rprec, recip_rank, P at the default cutoffs.
    pub fn official() -> Self {
        Self::from_specs(&["official"]).expect("official is a valid nickname")
    }

    /// Builds a selection from `-m` arguments (trec_eval syntax: `map`, `P.5,10`, `ndcg_cut.10`,
    /// nicknames `official` and `all_trec`). Repeated measures merge (the union of their
    /// cutoffs); an empty list means `official`, as in trec_eval.
    pub fn from_specs<S: AsRef<str>>(specs: &[S]) -> Result<Self, MeasureError> {
        let mut sel = Selection::default();
        if specs.is_empty() {
            return Self::from_specs(&["official"]);
        }
        for spec in specs {
            sel.add(spec.as_ref())?;
        }
        sel.measures.sort_unstable();
        sel.measures.dedup();
        Ok(sel)
    }

    fn add(&mut self, spec: &str) -> Result<(), MeasureError> {
        let (name, params) = match spec.split_once('.') {
            Some((n, p)) => (n, Some(p)),
            None => (spec, None),
        };
        let nickname: Option<&[&str]> = match name {
            "official" => Some(&[
                "runid",
                "num_q",
                "num_ret",
                "num_rel",
                "num_rel_ret",
                "map",
                "Rprec",
                "recip_rank",
                "P",
            ]),
            "all_trec" => Some(&[
                "runid",
                "num_q",
                "num_ret",
                "num_rel",
                "num_rel_ret",
                "map",
                "Rprec",
                "recip_rank",
                "P",
                "recall",
                "ndcg",
                "ndcg_cut",
                "success",
            ]),
            _ => None,
        };
        if let Some(names) = nickname {
            if params.is_some() {
                return Err(MeasureError::NoParams { name: name.into() });
            }
            for n in names {
                self.add(n)?;
            }
            return Ok(());
        }
        let cutoffs = |default: &[usize]| -> Result<Vec<usize>, MeasureError> {
            match params {
                None => Ok(default.to_vec()),
                Some(p) => parse_cutoffs(spec, p),
            }
        };
        let reject_params = || match params {
            None => Ok(()),
            Some(_) => Err(MeasureError::NoParams { name: name.into() }),
        };
        let single = |m: Measure| reject_params().map(|()| vec![m]);
        let new: Vec<Measure> = match name {
            "runid" => {
                reject_params()?;
                self.runid = true;
                vec![]
            }
            "num_q" => {
                reject_params()?;
                self.num_q = true;
                vec![]
            }
            "num_ret" => single(Measure::NumRet)?,
            "num_rel" => single(Measure::NumRel)?,
            "num_rel_ret" => single(Measure::NumRelRet)?,
            "map" => single(Measure::Map)?,
            "Rprec" => single(Measure::Rprec)?,
            "recip_rank" => single(Measure::RecipRank)?,
            "ndcg" => single(Measure::Ndcg)?,
            "recip_rank_cut" => {
                if params.is_none() {
                    return Err(MeasureError::NeedsCutoffs { name: name.into() });
                }
                cutoffs(&[])?
                    .into_iter()
                    .map(Measure::RecipRankCut)
                    .collect()
            }
            "P" => cutoffs(&DEFAULT_CUTOFFS)?
                .into_iter()
                .map(Measure::P)
                .collect(),
            "recall" => cutoffs(&DEFAULT_CUTOFFS)?
                .into_iter()
                .map(Measure::Recall)
                .collect(),
            "ndcg_cut" => cutoffs(&DEFAULT_CUTOFFS)?
                .into_iter()
                .map(Measure::NdcgCut)
                .collect(),
            "success" => cutoffs(&DEFAULT_SUCCESS_CUTOFFS)?
                .into_iter()
                .map(Measure::Success)
                .collect(),
            _ => {
                return Err(MeasureError::Unknown {
                    name: name.into(),
                    implemented: IMPLEMENTED.join(", "),
                })
            }
        };
        self.measures.extend(new);
        Ok(())
    }
}

fn parse_cutoffs(spec: &str, params: &str) -> Result<Vec<usize>, MeasureError> {
    let mut out = Vec::new();
    for c in params.split(',') {
        let k: usize =
            c.trim()
                .parse()
                .ok()
                .filter(|&k| k > 0)
                .ok_or_else(|| MeasureError::BadCutoff {
                    spec: spec.into(),
                    cutoff: c.into(),
                })?;
        if out.contains(&k) {
            return Err(MeasureError::DuplicateCutoff {
                spec: spec.into(),
                cutoff: k,
            });
        }
        out.push(k);
    }
    out.sort_unstable();
    Ok(out)
}

/// Parses one trec_eval measure specification (`P.5,10`, `ndcg_cut.10`, `recall.100`,
/// `success.1,5`, `map`, `recip_rank`, bare `P` for trec_eval's default cutoffs, or the nicknames
/// `official` / `all_trec`) into measures in trec_eval's output order.
///
/// The summary-only names `runid` and `num_q` are accepted and yield no measure; use
/// [`Selection::from_specs`] to keep them.
pub fn parse_measures(spec: &str) -> Result<Vec<Measure>, MeasureError> {
    Selection::from_specs(&[spec]).map(|s| s.measures)
}

#[cfg(test)]
mod tests;
