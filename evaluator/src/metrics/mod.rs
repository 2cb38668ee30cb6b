//! Retrieval measures with trec_eval 10.0's exact conventions, one file per measure.
//!
//! Every measure is computed from one query's [`QueryView`]: how many documents were retrieved,
//! where in the ranking the judged documents sit ([`Hit`]s), and the query's judgments
//! ([`Judgments`]). Documents without a judgment never need to be looked at individually, and
//! when no selected measure reads non-relevant judgments only the relevant (or positive-gain)
//! ones become hits: that is what lets `ranklab eval` stream a 7-million-line run.
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
//! - a judgment below 0 marks a document pooled but not judged (infAP, bpref, relstring's `.`);
//! - a query with no relevant document scores 0 on every measure.
//!
//! Every measure of trec_eval 10.0's `all_trec` is here, plus ranklab's own dialects, off by
//! default and named as ir_measures names them (`RR@k`, `Judged@k`, `ERR@k`,
//! `nDCG(dcg=exp-log2)@k`, `RBP(p=…)`). [`Selection`] parses `-m` specifications.
//!
//! The caller orders the ranking (score descending, ties by document id descending: see
//! [`crate::trec`]); measures here only read ranks.

mod bpref;
mod counts;
mod err;
mod g;
mod gain;
mod infap;
mod iprec;
mod map;
mod ndcg;
pub mod params;
mod precision;
mod rbp;
mod recall;
mod recip_rank;
mod relstring;
mod rprec;
mod select;
mod set;
mod success;
mod unjudged;

use std::collections::HashMap;
use std::fmt;

pub use params::Params;
pub use relstring::relstring;
pub use select::{parse_measures, MeasureError, Selection, IMPLEMENTED};

/// trec_eval's default cutoffs for `P`, `recall`, `ndcg_cut`, `map_cut`, `relative_P`.
pub const DEFAULT_CUTOFFS: [usize; 9] = [5, 10, 15, 20, 30, 100, 200, 500, 1000];
/// trec_eval's default cutoffs for `success`.
pub const DEFAULT_SUCCESS_CUTOFFS: [usize; 3] = [1, 5, 10];
/// trec_eval's default cutoffs for `unj`.
pub const DEFAULT_UNJ_CUTOFFS: [usize; 3] = [5, 10, 20];
/// trec_eval's default multiples of R for `Rprec_mult`.
pub const DEFAULT_RPREC_MULTS: [f64; 10] = [0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0];

/// A non-negative real parameter (a recall point, a multiple of R, a persistence) stored by its
/// bits so that measures stay `Eq`, `Ord` and `Hash`; for non-negative numbers the bit order is
/// the numeric order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Real(u64);

impl Real {
    /// Wraps a finite, non-negative value.
    pub fn new(x: f64) -> Self {
        debug_assert!(x.is_finite() && x >= 0.0);
        Real((x + 0.0).to_bits())
    }

    /// The value.
    pub fn get(self) -> f64 {
        f64::from_bits(self.0)
    }
}

/// Which way a measure is better ([`Measure::better`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// A higher value is better (MAP, nDCG, recall...).
    Higher,
    /// A lower value is better (the unjudged count...).
    Lower,
}

/// One output column: a measure with its cutoff where it has one.
///
/// The derived order is trec_eval's output order (the order of its measure table), with
/// cutoffs ascending inside a family; ranklab's own measures come after trec_eval's.
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
    /// `gm_map`: average precision, geometric mean over queries (summary only).
    GmMap,
    /// `Rprec`: precision after R documents, R = the number of relevant judgments.
    Rprec,
    /// `bpref`: binary preference.
    Bpref,
    /// `recip_rank`: 1 / rank of the first relevant document, over the whole ranking.
    RecipRank,
    /// `recip_rank_cut_k`: reciprocal rank counted only when the first relevant document is
    /// within the top k (RR@k, "MRR@10" of MS MARCO). **Not a trec_eval measure**: ranklab's own,
    /// never part of `official` or `all_trec`, only computed when asked for.
    RecipRankCut(usize),
    /// `iprec_at_recall_x`: interpolated precision at recall x.
    IprecAtRecall(Real),
    /// `P_k`: precision at k.
    P(usize),
    /// `relstring`: the first judgments as a string (per query only; see [`relstring`]).
    Relstring,
    /// `recall_k`: relevant retrieved in the top k / all relevant.
    Recall(usize),
    /// `infAP`: inferred average precision.
    InfAp,
    /// `gm_bpref`: bpref, geometric mean over queries (summary only).
    GmBpref,
    /// `Rprec_mult_x`: precision after x·R documents.
    RprecMult(Real),
    /// `utility`: a·rel_ret + b·nonrel_ret + c·rel_not_ret + d·nonrel_not_ret.
    Utility,
    /// `11pt_avg`: interpolated precision averaged over recall points.
    Pt11Avg,
    /// `binG`: binary G.
    BinG,
    /// `G`: normalized gain.
    G,
    /// `ndcg`: nDCG over the whole ranking.
    Ndcg,
    /// `ndcg_rel`: nDCG averaged over relevant documents.
    NdcgRel,
    /// `Rndcg`: nDCG averaged at R levels.
    Rndcg,
    /// `ndcg_cut_k`: nDCG at k.
    NdcgCut(usize),
    /// `map_cut_k`: average precision counting the top k only.
    MapCut(usize),
    /// `relative_P_k`: relevant in the top k / min(k, R).
    RelativeP(usize),
    /// `success_k`: 1 if a relevant document is in the top k, else 0.
    Success(usize),
    /// `set_P`: relevant retrieved / retrieved.
    SetP,
    /// `set_relative_P`: relevant retrieved / min(retrieved, R).
    SetRelativeP,
    /// `set_recall`: relevant retrieved / R.
    SetRecall,
    /// `set_map`: relevant retrieved² / (retrieved · relevant), trec_eval's way.
    SetMap,
    /// `set_F`: F-measure of the retrieved set.
    SetF,
    /// `num_nonrel_judged_ret`: judged non-relevant documents retrieved. Summed over queries.
    NumNonrelJudgedRet,
    /// `rbp`: rank-biased precision (trec_eval's p, default 0.9).
    Rbp,
    /// `rbp_resid`: rank-biased precision's residual.
    RbpResid,
    /// `unj_k`: unjudged documents in the top k / k.
    Unj(usize),
    /// `nDCG(dcg=exp-log2)@k`: nDCG at k with gain 2^rel - 1. ranklab's own (gdeval's).
    NdcgExpCut(usize),
    /// `Judged@k`: judged documents in the top k / k. ranklab's own (ir_measures').
    Judged(usize),
    /// `ERR@k`: expected reciprocal rank at k. ranklab's own (gdeval's).
    ErrAt(usize),
    /// `RBP(p=x)`: rank-biased precision with binary gain at persistence x. ranklab's own
    /// (ir_measures' default p is 0.8; trec_eval's `rbp` uses 0.9 and graded gains).
    RbpIrm(Real),
}

impl Measure {
    /// The name printed for this measure with default parameters (`P_5`, `recall_100`,
    /// `ndcg_cut_10`, `iprec_at_recall_0.10`, `Judged@10`...). [`Selection::name`] gives the
    /// name with parameters (`ndcg_1=3,2=9`).
    pub fn name(&self) -> String {
        match self {
            Measure::NumRet => "num_ret".into(),
            Measure::NumRel => "num_rel".into(),
            Measure::NumRelRet => "num_rel_ret".into(),
            Measure::Map => "map".into(),
            Measure::GmMap => "gm_map".into(),
            Measure::Rprec => "Rprec".into(),
            Measure::Bpref => "bpref".into(),
            Measure::RecipRank => "recip_rank".into(),
            Measure::RecipRankCut(k) => format!("recip_rank_cut_{k}"),
            Measure::IprecAtRecall(x) => format!("iprec_at_recall_{:.2}", x.get()),
            Measure::P(k) => format!("P_{k}"),
            Measure::Relstring => "relstring".into(),
            Measure::Recall(k) => format!("recall_{k}"),
            Measure::InfAp => "infAP".into(),
            Measure::GmBpref => "gm_bpref".into(),
            Measure::RprecMult(x) => format!("Rprec_mult_{:.2}", x.get()),
            Measure::Utility => "utility".into(),
            Measure::Pt11Avg => "11pt_avg".into(),
            Measure::BinG => "binG".into(),
            Measure::G => "G".into(),
            Measure::Ndcg => "ndcg".into(),
            Measure::NdcgRel => "ndcg_rel".into(),
            Measure::Rndcg => "Rndcg".into(),
            Measure::NdcgCut(k) => format!("ndcg_cut_{k}"),
            Measure::MapCut(k) => format!("map_cut_{k}"),
            Measure::RelativeP(k) => format!("relative_P_{k}"),
            Measure::Success(k) => format!("success_{k}"),
            Measure::SetP => "set_P".into(),
            Measure::SetRelativeP => "set_relative_P".into(),
            Measure::SetRecall => "set_recall".into(),
            Measure::SetMap => "set_map".into(),
            Measure::SetF => "set_F".into(),
            Measure::NumNonrelJudgedRet => "num_nonrel_judged_ret".into(),
            Measure::Rbp => "rbp".into(),
            Measure::RbpResid => "rbp_resid".into(),
            Measure::Unj(k) => format!("unj_{k}"),
            Measure::NdcgExpCut(k) => format!("nDCG(dcg=exp-log2)@{k}"),
            Measure::Judged(k) => format!("Judged@{k}"),
            Measure::ErrAt(k) => format!("ERR@{k}"),
            Measure::RbpIrm(p) => format!("RBP(p={})", p.get()),
        }
    }

    /// True for the counts (`num_ret`, `num_rel`, `num_rel_ret`, `num_nonrel_judged_ret`):
    /// summed over queries and printed as integers, like trec_eval.
    pub fn is_count(&self) -> bool {
        matches!(
            self,
            Measure::NumRet | Measure::NumRel | Measure::NumRelRet | Measure::NumNonrelJudgedRet
        )
    }

    /// True for the geometric means (`gm_map`, `gm_bpref`): a query's value is the logarithm,
    /// the summary exp of the mean, and trec_eval prints them in the summary only.
    pub fn is_geometric(&self) -> bool {
        matches!(self, Measure::GmMap | Measure::GmBpref)
    }

    /// Which way is better, for a gate: `None` for what has no better or worse (`relstring`, a
    /// string; `num_ret`, how many were returned; `num_rel`, the qrels' count, the same for
    /// every run). Lower is better for the unjudged count (`unj`), the judged non-relevant
    /// documents returned and RBP's residual (the part of the score left unknown by missing
    /// judgments); higher for every other measure.
    pub fn better(&self) -> Option<Better> {
        match self {
            Measure::Relstring | Measure::NumRet | Measure::NumRel => None,
            Measure::Unj(_) | Measure::NumNonrelJudgedRet | Measure::RbpResid => {
                Some(Better::Lower)
            }
            _ => Some(Better::Higher),
        }
    }

    /// The summary of per-query values whose mean is `mean`, as trec_eval prints it for a
    /// geometric measure (whose per-query values are logs): `exp(mean)`; otherwise `mean`.
    pub fn mean_shown(&self, mean: f64) -> f64 {
        if self.is_geometric() {
            mean.exp()
        } else {
            mean
        }
    }

    /// True when trec_eval prints the measure for each query with `-q`.
    pub fn per_query(&self) -> bool {
        !self.is_geometric()
    }

    /// True when trec_eval prints the measure in the summary (`relstring` is per query only).
    pub fn in_summary(&self) -> bool {
        !matches!(self, Measure::Relstring)
    }

    /// True when the measure reads judged documents below the relevance level (or judgments
    /// below 0), so the evaluator must keep every judged document, not only the relevant ones.
    pub fn reads_nonrelevant(&self) -> bool {
        matches!(
            self,
            Measure::Bpref
                | Measure::GmBpref
                | Measure::InfAp
                | Measure::Relstring
                | Measure::NumNonrelJudgedRet
                | Measure::RbpResid
                | Measure::Unj(_)
                | Measure::Judged(_)
        )
    }

    /// The value of this measure for one query (`relstring` has no number: 0).
    pub fn compute(&self, q: &QueryView<'_>) -> f64 {
        match *self {
            Measure::NumRet => counts::num_ret(q),
            Measure::NumRel => counts::num_rel(q),
            Measure::NumRelRet => counts::num_rel_ret(q),
            Measure::Map => map::average_precision(q),
            Measure::GmMap => map::log_average_precision(q),
            Measure::Rprec => rprec::r_precision(q),
            Measure::Bpref => bpref::bpref(q),
            Measure::RecipRank => recip_rank::reciprocal_rank(q),
            Measure::RecipRankCut(k) => recip_rank::reciprocal_rank_at(q, k),
            Measure::IprecAtRecall(x) => iprec::iprec_at_recall(q, x.get()),
            Measure::P(k) => precision::precision_at(q, k),
            Measure::Relstring => 0.0,
            Measure::Recall(k) => recall::recall_at(q, k),
            Measure::InfAp => infap::inferred_ap(q),
            Measure::GmBpref => bpref::log_bpref(q),
            Measure::RprecMult(x) => rprec::r_precision_mult(q, x.get()),
            Measure::Utility => set::utility(q),
            Measure::Pt11Avg => iprec::eleven_point_average(q, &q.params.pt11_points),
            Measure::BinG => g::bin_g(q),
            Measure::G => g::g(q),
            Measure::Ndcg => ndcg::ndcg(q),
            Measure::NdcgRel => ndcg::ndcg_rel(q),
            Measure::Rndcg => ndcg::rndcg(q),
            Measure::NdcgCut(k) => ndcg::ndcg_at(q, k),
            Measure::MapCut(k) => map::average_precision_at(q, k),
            Measure::RelativeP(k) => precision::relative_precision_at(q, k),
            Measure::Success(k) => success::success_at(q, k),
            Measure::SetP => set::set_p(q),
            Measure::SetRelativeP => set::set_relative_p(q),
            Measure::SetRecall => set::set_recall(q),
            Measure::SetMap => set::set_map(q),
            Measure::SetF => set::set_f(q),
            Measure::NumNonrelJudgedRet => counts::num_nonrel_judged_ret(q),
            Measure::Rbp => rbp::rbp(q, q.params.rbp_p),
            Measure::RbpResid => rbp::rbp_resid(q),
            Measure::Unj(k) => unjudged::unjudged_at(q, k),
            Measure::NdcgExpCut(k) => ndcg::ndcg_exp_at(q, k),
            Measure::Judged(k) => unjudged::judged_at(q, k),
            Measure::ErrAt(k) => err::err_at(q, k),
            Measure::RbpIrm(p) => rbp::rbp_binary(q, p.get()),
        }
    }
}

impl fmt::Display for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A retrieved document with a judgment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    /// 0-based position in the ranking (rank 1 is 0).
    pub rank: usize,
    /// The document's judgment in the qrels (below 0: pooled, not judged).
    pub rel: i32,
}

/// What the measures need from one query's judgments, for a given relevance level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Judgments {
    /// Judgments `>= rel_level` (and `>= 0`): trec_eval's `num_rel`.
    pub num_rel: usize,
    /// The positive judgments, largest first: the ideal ranking's gains for nDCG.
    pub ideal_gains: Vec<i32>,
    /// `(level, judged documents at it)` for every level `>= 0` that has judgments, ascending:
    /// trec_eval's `rel_levels` without its empty levels (which change no measure).
    pub rel_levels: Vec<(i32, u32)>,
    /// Judgments `> 0`, whatever the level (trec_eval's `num_rel` summary under `-c`).
    pub num_positive: usize,
}

impl Judgments {
    /// Summarizes one query's judgment values (one per judged document).
    pub fn from_values(values: impl IntoIterator<Item = i32>, rel_level: i32) -> Self {
        let mut num_rel = 0;
        let mut ideal_gains = Vec::new();
        let mut rel_levels: Vec<(i32, u32)> = Vec::new();
        for v in values {
            if is_relevant(v, rel_level) {
                num_rel += 1;
            }
            if v > 0 {
                ideal_gains.push(v);
            }
            if v >= 0 {
                match rel_levels.iter_mut().find(|l| l.0 == v) {
                    Some(l) => l.1 += 1,
                    None => rel_levels.push((v, 1)),
                }
            }
        }
        rel_levels.sort_unstable();
        ideal_gains.sort_unstable_by(|a, b| b.cmp(a));
        Judgments {
            num_rel,
            num_positive: ideal_gains.len(),
            ideal_gains,
            rel_levels,
        }
    }
}

/// One query as the measures see it.
#[derive(Debug, Clone, Copy)]
pub struct QueryView<'a> {
    /// Documents retrieved.
    pub num_ret: usize,
    /// Retrieved documents with a judgment, by ascending rank: every judged document, or (when
    /// no measure [reads non-relevant ones](Measure::reads_nonrelevant)) only those that
    /// [`matters`] keeps.
    pub hits: &'a [Hit],
    /// The query's judgments.
    pub judgments: &'a Judgments,
    /// Minimum judgment for a document to be relevant.
    pub rel_level: i32,
    /// Parameters of the measures (gains, RBP's p, ...).
    pub params: &'a Params,
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

/// True when a retrieved document with this judgment can change a measure that does not
/// [read non-relevant documents](Measure::reads_nonrelevant) under default gains: it is
/// relevant or has a positive gain.
#[inline]
pub fn matters(rel: i32, rel_level: i32) -> bool {
    rel > 0 || is_relevant(rel, rel_level)
}

/// Evaluates one query whose documents are `ranked` in final order (rank 1 first; the caller has
/// ordered them) against its judgments `judged` (document id -> judgment), with default
/// parameters. Returns one value per measure, in the order of `measures`.
///
/// `ranked` should not contain a document twice (trec_eval rejects such runs); if it does, each
/// occurrence counts.
pub fn evaluate_ranking(
    measures: &[Measure],
    ranked: &[&str],
    judged: &HashMap<String, i32>,
    rel_level: i32,
) -> Vec<f64> {
    evaluate_ranking_with(measures, ranked, judged, rel_level, &Params::default())
}

/// [`evaluate_ranking`] with measure parameters.
pub fn evaluate_ranking_with(
    measures: &[Measure],
    ranked: &[&str],
    judged: &HashMap<String, i32>,
    rel_level: i32,
    params: &Params,
) -> Vec<f64> {
    // A query judges a handful of documents: comparing each ranked id with those few is
    // cheaper than hashing it (the same answer: the map's keys are unique).
    let small: Option<Vec<(&str, i32)>> =
        (judged.len() <= 16).then(|| judged.iter().map(|(d, &r)| (d.as_str(), r)).collect());
    let rel_of = |doc: &str| match &small {
        Some(few) => few.iter().find(|(d, _)| *d == doc).map(|&(_, r)| r),
        None => judged.get(doc).copied(),
    };
    let hits: Vec<Hit> = ranked
        .iter()
        .enumerate()
        .filter_map(|(rank, doc)| {
            Some(Hit {
                rank,
                rel: rel_of(doc)?,
            })
        })
        .collect();
    let judgments = Judgments::from_values(judged.values().copied(), rel_level);
    let view = QueryView {
        num_ret: ranked.len(),
        hits: &hits,
        judgments: &judgments,
        rel_level,
        params,
    };
    evaluate_view(measures, &view)
}

/// Evaluates one query already reduced to a [`QueryView`] (the fast path of `ranklab eval`).
pub fn evaluate_view(measures: &[Measure], view: &QueryView<'_>) -> Vec<f64> {
    measures.iter().map(|m| m.compute(view)).collect()
}

#[cfg(test)]
mod tests;
