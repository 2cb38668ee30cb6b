//! `-m` specifications: trec_eval's syntax (`P.5,10`, `ndcg.1=3,2=9`, `iprec_at_recall.0.5`),
//! its nicknames (`official`, `all_trec`, `set`) and ir_measures' names (`nDCG@10`, `P@5`,
//! `R@100`, `RR`, `AP`, `Success@1`, `Judged@10`, `ERR@10`, `RBP(p=0.8)`).
//!
//! trec_eval's rules, followed here: a measure named twice is computed once, with the
//! parameters of the **first** specification that gave parameters (`-m P.10 -m P.5` prints
//! P_10 only; `-m all_trec -m relstring.20` prints relstring_20); a cutoff like `5.5` reads as
//! 5; parameters are sorted and may not repeat. ir_measures names add their cutoff to the
//! family instead (`-m P@5 -m P@10` prints P_5 and P_10), since that is how ir_measures lists
//! are written.

use std::collections::BTreeMap;

use super::params::{GainPairs, Params, ELEVEN_POINTS};
use super::{
    Measure, Real, DEFAULT_CUTOFFS, DEFAULT_RPREC_MULTS, DEFAULT_SUCCESS_CUTOFFS,
    DEFAULT_UNJ_CUTOFFS,
};

/// Why a measure specification was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MeasureError {
    /// The name is neither a measure ranklab implements nor a nickname.
    #[error(
        "unknown measure `{name}`{near}; ranklab implements: {implemented} \
         (nicknames official, all_trec, set; summary lines runid, num_q; ir_measures names \
         such as nDCG@10, P@5, R@100, RR, AP, Success@1, Judged@10, ERR@10, RBP(p=0.8))"
    )]
    Unknown {
        /// The name as given.
        name: String,
        /// Comma-separated list of the implemented measure names.
        implemented: String,
        /// `; did you mean ...?` for a near spelling (`ndcg@10`: `ndcg_cut.10`), or empty.
        near: String,
    },
    /// A cutoff that is not a positive integer.
    #[error("measure `{spec}`: cutoff `{cutoff}` {why} (write e.g. P.5,10)")]
    BadCutoff {
        /// The whole specification.
        spec: String,
        /// The offending cutoff.
        cutoff: String,
        /// Why: not a positive integer, or too large.
        why: &'static str,
    },
    /// The same cutoff twice in one specification (trec_eval rejects this too).
    #[error("measure `{spec}`: cutoff {cutoff} is given twice")]
    DuplicateCutoff {
        /// The whole specification.
        spec: String,
        /// The repeated cutoff.
        cutoff: String,
    },
    /// Parameters given to a measure that takes none.
    #[error("measure `{name}` takes no parameters; write `{name}`")]
    NoParams {
        /// The measure name.
        name: String,
    },
    /// A cutoff measure given without cutoffs.
    #[error("measure `{name}` needs cutoffs, e.g. `{name}.10`")]
    NeedsCutoffs {
        /// The measure name.
        name: String,
    },
    /// A malformed parameter (gain pair, real number, count).
    #[error("measure `{spec}`: {why}")]
    BadParam {
        /// The whole specification.
        spec: String,
        /// What is wrong and how to write it.
        why: String,
    },
    /// A trec_eval nickname or measure ranklab deliberately does not compute.
    #[error("measure `{name}` is not supported: {why}")]
    Refused {
        /// The name as given.
        name: String,
        /// Why, and what to use instead.
        why: String,
    },
}

/// The trec_eval measure names `Selection` accepts, in trec_eval's output order.
pub const IMPLEMENTED: [&str; 37] = [
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "recip_rank_cut",
    "iprec_at_recall",
    "P",
    "relstring",
    "recall",
    "infAP",
    "gm_bpref",
    "Rprec_mult",
    "utility",
    "11pt_avg",
    "binG",
    "G",
    "ndcg",
    "ndcg_rel",
    "Rndcg",
    "ndcg_cut",
    "map_cut",
    "relative_P",
    "success",
    "set_P",
    "set_relative_P",
    "set_recall",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "rbp",
    "rbp_resid",
    "unj",
    "runid",
];

const OFFICIAL: &[&str] = &[
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
];

const SET: &[&str] = &[
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "utility",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
];

const ALL_TREC: &[&str] = &[
    "runid",
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "gm_map",
    "Rprec",
    "bpref",
    "recip_rank",
    "iprec_at_recall",
    "P",
    "relstring",
    "recall",
    "infAP",
    "gm_bpref",
    "utility",
    "11pt_avg",
    "ndcg",
    "relative_P",
    "Rprec_mult",
    "success",
    "map_cut",
    "ndcg_cut",
    "ndcg_rel",
    "Rndcg",
    "binG",
    "G",
    "set_P",
    "set_recall",
    "set_relative_P",
    "set_map",
    "set_F",
    "num_nonrel_judged_ret",
    "rbp",
    "rbp_resid",
    "unj",
];

/// How a family reads its parameters.
#[derive(Clone, Copy)]
enum Kind {
    /// No parameters.
    Single(Measure),
    /// Integer cutoffs, with trec_eval's defaults (empty: cutoffs required).
    Cuts(fn(usize) -> Measure, &'static [usize]),
    /// Real cutoffs, with defaults.
    Reals(fn(Real) -> Measure, &'static [f64]),
    /// `level=gain` pairs (rbp also `p=`).
    Gains(Measure),
    /// A list of real numbers (utility, set_F, relstring, 11pt_avg).
    Numbers(Measure),
}

fn family(name: &str) -> Option<Kind> {
    use Measure as M;
    Some(match name {
        "num_ret" => Kind::Single(M::NumRet),
        "num_rel" => Kind::Single(M::NumRel),
        "num_rel_ret" => Kind::Single(M::NumRelRet),
        "map" => Kind::Single(M::Map),
        "gm_map" => Kind::Single(M::GmMap),
        "Rprec" => Kind::Single(M::Rprec),
        "bpref" => Kind::Single(M::Bpref),
        "recip_rank" => Kind::Single(M::RecipRank),
        "recip_rank_cut" => Kind::Cuts(M::RecipRankCut, &[]),
        "iprec_at_recall" => Kind::Reals(M::IprecAtRecall, &ELEVEN_POINTS),
        "P" => Kind::Cuts(M::P, &DEFAULT_CUTOFFS),
        "relstring" => Kind::Numbers(M::Relstring),
        "recall" => Kind::Cuts(M::Recall, &DEFAULT_CUTOFFS),
        "infAP" => Kind::Single(M::InfAp),
        "gm_bpref" => Kind::Single(M::GmBpref),
        "Rprec_mult" => Kind::Reals(M::RprecMult, &DEFAULT_RPREC_MULTS),
        "utility" => Kind::Numbers(M::Utility),
        "11pt_avg" => Kind::Numbers(M::Pt11Avg),
        "binG" => Kind::Single(M::BinG),
        "G" => Kind::Gains(M::G),
        "ndcg" => Kind::Gains(M::Ndcg),
        "ndcg_rel" => Kind::Gains(M::NdcgRel),
        "Rndcg" => Kind::Gains(M::Rndcg),
        "ndcg_cut" => Kind::Cuts(M::NdcgCut, &DEFAULT_CUTOFFS),
        "map_cut" => Kind::Cuts(M::MapCut, &DEFAULT_CUTOFFS),
        "relative_P" => Kind::Cuts(M::RelativeP, &DEFAULT_CUTOFFS),
        "success" => Kind::Cuts(M::Success, &DEFAULT_SUCCESS_CUTOFFS),
        "set_P" => Kind::Single(M::SetP),
        "set_relative_P" => Kind::Single(M::SetRelativeP),
        "set_recall" => Kind::Single(M::SetRecall),
        "set_map" => Kind::Single(M::SetMap),
        "set_F" => Kind::Numbers(M::SetF),
        "num_nonrel_judged_ret" => Kind::Single(M::NumNonrelJudgedRet),
        "rbp" => Kind::Gains(M::Rbp),
        "rbp_resid" => Kind::Single(M::RbpResid),
        "unj" => Kind::Cuts(M::Unj, &DEFAULT_UNJ_CUTOFFS),
        _ => return None,
    })
}

/// What was asked of one family.
#[derive(Default)]
struct Asked {
    /// Named by a trec_eval spelling or a nickname.
    marked: bool,
    /// The first trec_eval parameters given (trec_eval keeps these).
    params: Option<String>,
    /// Cutoffs added by ir_measures names.
    extra: Vec<Measure>,
}

/// What `ranklab eval` prints: trec_eval's two summary-only lines (`runid`, `num_q`), the
/// measures in trec_eval's output order without duplicates, and their parameters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// Print `runid all <tag of the run's last line>`.
    pub runid: bool,
    /// Print `num_q all <number of queries averaged>`.
    pub num_q: bool,
    /// The measures, sorted in trec_eval's output order, without duplicates.
    pub measures: Vec<Measure>,
    /// Their parameters.
    pub params: Params,
    /// Printed names that carry parameters (`ndcg_1=3,2=9`, `relstring_20`).
    renamed: BTreeMap<Measure, String>,
}

impl Selection {
    /// trec_eval's default set (`official`): runid, num_q, num_ret, num_rel, num_rel_ret,
    /// map, gm_map, Rprec, bpref, recip_rank, iprec_at_recall at 11 points, P at the default
    /// cutoffs.
    pub fn official() -> Self {
        Self::from_specs(&["official"]).expect("official is a valid nickname")
    }

    /// Builds a selection from `-m` arguments; an empty list means `official`, as in trec_eval.
    pub fn from_specs<S: AsRef<str>>(specs: &[S]) -> Result<Self, MeasureError> {
        if specs.is_empty() {
            return Self::from_specs(&["official"]);
        }
        let mut sel = Selection::default();
        let mut asked: BTreeMap<&'static str, Asked> = BTreeMap::new();
        let mut own: Vec<Measure> = Vec::new();
        for spec in specs {
            let spec = spec.as_ref();
            if let Some(r) = ir_measures(spec)? {
                match r {
                    Irm::Trec(name, None) => mark(&mut sel, &mut asked, name, spec)?,
                    Irm::Trec(name, Some(m)) => {
                        asked.entry(name).or_default().extra.push(m);
                    }
                    Irm::Own(m) => own.push(m),
                }
                continue;
            }
            let (name, params) = match spec.split_once('.') {
                Some((n, p)) => (n, Some(p)),
                None => (spec, None),
            };
            if params == Some("") {
                return Err(MeasureError::BadParam {
                    spec: spec.into(),
                    why: "nothing after the `.`: write the parameters (e.g. P.10) or drop the `.`"
                        .into(),
                });
            }
            let nickname = match name {
                "official" => Some(OFFICIAL),
                "all_trec" => Some(ALL_TREC),
                "set" => Some(SET),
                "all_prefs" | "prefs" | "qrels_jg" => {
                    return Err(MeasureError::Refused {
                        name: name.into(),
                        why: "preference and judgment-group measures need trec_eval's prefs or \
                              qrels_jg formats (-R), which ranklab does not read"
                            .into(),
                    })
                }
                _ => None,
            };
            if let Some(names) = nickname {
                if params.is_some() {
                    return Err(MeasureError::NoParams { name: name.into() });
                }
                for n in names {
                    mark(&mut sel, &mut asked, n, n)?;
                }
                continue;
            }
            let key = static_name(name).ok_or_else(|| unknown(name))?;
            mark(&mut sel, &mut asked, key, spec)?;
            if let Some(p) = params {
                if matches!(family(key), Some(Kind::Single(_))) {
                    return Err(MeasureError::NoParams { name: name.into() });
                }
                let a = asked.entry(key).or_default();
                if a.params.is_none() {
                    a.params = Some(p.to_string());
                }
            }
        }
        for (name, a) in asked {
            sel.add_family(name, a)?;
        }
        sel.measures.extend(own);
        sel.measures.sort_unstable();
        sel.measures.dedup();
        Ok(sel)
    }

    fn add_family(&mut self, name: &'static str, a: Asked) -> Result<(), MeasureError> {
        let spec = match &a.params {
            Some(p) => format!("{name}.{p}"),
            None => name.to_string(),
        };
        let kind = family(name).expect("checked");
        let named = |sel: &mut Selection, m: Measure| {
            if let Some(p) = &a.params {
                sel.renamed.insert(m, format!("{name}_{p}"));
            }
            sel.measures.push(m);
        };
        match kind {
            Kind::Single(m) => self.measures.push(m),
            Kind::Cuts(make, default) => {
                if a.marked {
                    let cuts = match &a.params {
                        Some(p) => parse_cutoffs(&spec, p)?,
                        None if default.is_empty() => {
                            return Err(MeasureError::NeedsCutoffs { name: name.into() })
                        }
                        None => default.to_vec(),
                    };
                    self.measures.extend(cuts.into_iter().map(make));
                }
            }
            Kind::Reals(make, default) => {
                if a.marked {
                    let cuts = match &a.params {
                        Some(p) => parse_reals(&spec, p)?,
                        None => default.iter().copied().map(Real::new).collect(),
                    };
                    self.measures.extend(cuts.into_iter().map(make));
                }
            }
            Kind::Gains(m) => {
                if a.marked {
                    if let Some(p) = &a.params {
                        let (pairs, p_value) = parse_gains(&spec, p, m == Measure::Rbp)?;
                        let slot = match m {
                            Measure::Ndcg => &mut self.params.ndcg_gains,
                            Measure::NdcgRel => &mut self.params.ndcg_rel_gains,
                            Measure::Rndcg => &mut self.params.rndcg_gains,
                            Measure::G => &mut self.params.g_gains,
                            _ => &mut self.params.rbp_gains,
                        };
                        *slot = pairs;
                        if let Some(pv) = p_value {
                            self.params.rbp_p = pv;
                        }
                    }
                    named(self, m);
                }
            }
            Kind::Numbers(m) => {
                if a.marked {
                    if let Some(p) = &a.params {
                        let xs = parse_numbers(&spec, p)?;
                        let bad = |why: &str| MeasureError::BadParam {
                            spec: spec.clone(),
                            why: why.into(),
                        };
                        match m {
                            Measure::Utility => {
                                let [a, b, c, d] = xs[..] else {
                                    return Err(bad("utility takes four coefficients a,b,c,d \
                                                    (e.g. utility.1,-1,0,0)"));
                                };
                                self.params.utility = [a, b, c, d];
                            }
                            Measure::SetF => {
                                let [beta] = xs[..] else {
                                    return Err(bad("set_F takes one beta (e.g. set_F.0.5)"));
                                };
                                self.params.set_f_beta = beta;
                            }
                            Measure::Relstring => {
                                let [n] = xs[..] else {
                                    return Err(bad(
                                        "relstring takes one length (e.g. relstring.20)",
                                    ));
                                };
                                self.params.relstring_len = n.max(0.0) as usize;
                            }
                            _ => self.params.pt11_points = xs,
                        }
                    }
                    named(self, m);
                }
            }
        }
        self.measures.extend(a.extra);
        Ok(())
    }

    /// The name printed for `m` (with its parameters when they were given).
    pub fn name(&self, m: &Measure) -> String {
        self.renamed.get(m).cloned().unwrap_or_else(|| m.name())
    }

    /// True when some measure reads judged documents below the relevance level, or gains of
    /// level 0, so every judged document must become a hit.
    pub fn reads_nonrelevant(&self) -> bool {
        self.params.has_custom_gains() || self.measures.iter().any(Measure::reads_nonrelevant)
    }
}

fn mark(
    sel: &mut Selection,
    asked: &mut BTreeMap<&'static str, Asked>,
    name: &'static str,
    spec: &str,
) -> Result<(), MeasureError> {
    match name {
        "runid" => sel.runid = true,
        "num_q" => sel.num_q = true,
        _ => {
            if family(name).is_none() {
                return Err(unknown(spec));
            }
            asked.entry(name).or_default().marked = true;
        }
    }
    Ok(())
}

fn static_name(name: &str) -> Option<&'static str> {
    if name == "num_q" {
        return Some("num_q");
    }
    IMPLEMENTED.iter().copied().find(|n| *n == name)
}

fn unknown(name: &str) -> MeasureError {
    MeasureError::Unknown {
        name: name.into(),
        implemented: IMPLEMENTED.join(", "),
        near: near_measure(name),
    }
}

/// What an unknown measure name was likely meant to be: a cutoff written `name@N` or `name_N`
/// in the wrong case or with trec_eval's family name (`ndcg@10`: `ndcg_cut.10` or `nDCG@10`;
/// `recall_5`: `recall.5`), else the implemented names a few edits away.
fn near_measure(name: &str) -> String {
    let split = name.split_once('@').or_else(|| {
        name.rsplit_once(['_', '.'])
            .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    if let Some((base, n)) = split {
        let (trec, irm) = match base.to_lowercase().as_str() {
            "ndcg" | "ndcg_cut" => ("ndcg_cut", Some("nDCG")),
            "recall" | "r" => ("recall", Some("R")),
            "p" | "prec" | "precision" => ("P", Some("P")),
            "map" | "ap" | "map_cut" => ("map_cut", Some("AP")),
            "success" => ("success", Some("Success")),
            "mrr" | "rr" | "recip_rank" | "recip_rank_cut" => ("recip_rank_cut", Some("RR")),
            "judged" => ("", Some("Judged")),
            _ => ("", None),
        };
        let mut forms = Vec::new();
        if !trec.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) {
            forms.push(format!("`{trec}.{n}`"));
        }
        if let Some(irm) = irm.filter(|i| format!("{i}@{n}") != name) {
            forms.push(format!("`{irm}@{n}`"));
        }
        if !forms.is_empty() {
            return format!("; did you mean {}?", forms.join(" or "));
        }
    }
    // MRR is trec_eval's recip_rank: no edit distance finds that (it finds `map`).
    if name.eq_ignore_ascii_case("mrr") {
        return "; did you mean `recip_rank` or `RR`?".into();
    }
    ranklab_input::suggest::did_you_mean(name, IMPLEMENTED.iter().copied())
}

/// trec_eval's cutoff reading: an integer, or a decimal read as its integer part (`5.5` is 5).
/// Refused: why, in words.
fn parse_cutoff(c: &str) -> Result<usize, &'static str> {
    const NOT: &str = "is not a positive integer";
    let c = c.trim();
    let int = match c.split_once('.') {
        Some((i, frac)) if frac.bytes().all(|b| b.is_ascii_digit()) => i,
        Some(_) => return Err(NOT),
        None => c,
    };
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return Err(NOT);
    }
    match int.parse::<usize>() {
        Ok(0) => Err(NOT),
        Ok(k) => Ok(k),
        Err(_) => Err("is too large (a cutoff is at most 18446744073709551615)"),
    }
}

fn parse_cutoffs(spec: &str, params: &str) -> Result<Vec<usize>, MeasureError> {
    let mut out = Vec::new();
    for c in params.split(',') {
        let k = parse_cutoff(c).map_err(|why| MeasureError::BadCutoff {
            spec: spec.into(),
            cutoff: c.into(),
            why,
        })?;
        if out.contains(&k) {
            return Err(MeasureError::DuplicateCutoff {
                spec: spec.into(),
                cutoff: k.to_string(),
            });
        }
        out.push(k);
    }
    out.sort_unstable();
    Ok(out)
}

fn parse_real(spec: &str, x: &str) -> Result<f64, MeasureError> {
    x.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| MeasureError::BadParam {
            spec: spec.into(),
            why: format!("`{x}` is not a number"),
        })
}

fn parse_reals(spec: &str, params: &str) -> Result<Vec<Real>, MeasureError> {
    let mut out: Vec<Real> = Vec::new();
    for x in params.split(',') {
        let v = parse_real(spec, x)?;
        if v < 0.0 {
            return Err(MeasureError::BadParam {
                spec: spec.into(),
                why: format!("`{x}` is negative"),
            });
        }
        let r = Real::new(v);
        if out.contains(&r) {
            return Err(MeasureError::DuplicateCutoff {
                spec: spec.into(),
                cutoff: x.into(),
            });
        }
        out.push(r);
    }
    out.sort_unstable();
    Ok(out)
}

fn parse_numbers(spec: &str, params: &str) -> Result<Vec<f64>, MeasureError> {
    params.split(',').map(|x| parse_real(spec, x)).collect()
}

/// `level=gain` pairs; for rbp also `p=persistence`.
fn parse_gains(
    spec: &str,
    params: &str,
    rbp: bool,
) -> Result<(GainPairs, Option<f64>), MeasureError> {
    let bad = |why: String| MeasureError::BadParam {
        spec: spec.into(),
        why,
    };
    let mut pairs = Vec::new();
    let mut p = None;
    for item in params.split(',') {
        let Some((k, v)) = item.split_once('=') else {
            return Err(bad(format!(
                "`{item}` is not a level=gain pair (write e.g. ndcg.1=3,2=9)"
            )));
        };
        let value = parse_real(spec, v)?;
        if rbp && k.trim() == "p" {
            if !(value > 0.0 && value < 1.0) {
                return Err(bad(format!("p must lie strictly between 0 and 1, not {v}")));
            }
            p = Some(value);
            continue;
        }
        let level: i32 = k.trim().parse().map_err(|_| {
            bad(format!(
                "gain level `{k}` is not an integer relevance level (write e.g. ndcg.1=3,2=9)"
            ))
        })?;
        if level < 0 {
            return Err(bad(format!(
                "gain level {level} is negative; trec_eval would give that gain to unjudged \
                 documents, ranklab refuses it"
            )));
        }
        if !pairs.iter().any(|&(l, _)| l == level) {
            pairs.push((level, value));
        }
    }
    Ok((pairs, p))
}

/// What an ir_measures name stands for.
enum Irm {
    /// A trec_eval family, with the one cutoff measure the name adds (None: the family as a
    /// whole, e.g. `AP` is `map`).
    Trec(&'static str, Option<Measure>),
    /// One of ranklab's own measures.
    Own(Measure),
}

/// ir_measures' measure names.
const IRM_NAMES: &[&str] = &[
    "nDCG",
    "P",
    "R",
    "RR",
    "AP",
    "Success",
    "Judged",
    "ERR",
    "RBP",
    "Bpref",
    "IPrec",
    "SetP",
    "SetR",
    "SetF",
    "NumRet",
    "NumRel",
    "NumRelRet",
];

/// Reads ir_measures' spellings (`nDCG@10`, `RBP(p=0.8)`); `Ok(None)` for anything else.
fn ir_measures(spec: &str) -> Result<Option<Irm>, MeasureError> {
    let (name, args, cut) = split_irm(spec)?;
    // Bare names that are also trec_eval's (P) stay trec_eval's.
    let irm_style = cut.is_some() || args.is_some() || (name != "P" && IRM_NAMES.contains(&name));
    if !irm_style || !IRM_NAMES.contains(&name) {
        if cut.is_some() || args.is_some() {
            return Err(unknown(spec));
        }
        return Ok(None);
    }
    let (dcg_exp, p) = irm_params(spec, name, args)?;
    let k = match cut {
        Some(c) => match name {
            "IPrec" => None,
            _ => Some(parse_cutoff(c).map_err(|why| MeasureError::BadCutoff {
                spec: spec.into(),
                cutoff: c.into(),
                why,
            })?),
        },
        None => None,
    };
    irm_measure(spec, name, cut, k, dcg_exp, p).map(Some)
}

/// `name(args)@cut` split into its name, its arguments and its cutoff (each part but the name
/// optional).
fn split_irm(spec: &str) -> Result<(&str, Option<&str>, Option<&str>), MeasureError> {
    let (head, cut) = match spec.rsplit_once('@') {
        Some((h, c)) => (h, Some(c)),
        None => (spec, None),
    };
    let (name, args) = match head.split_once('(') {
        Some((n, rest)) => match rest.strip_suffix(')') {
            Some(a) => (n, Some(a)),
            None => {
                return Err(MeasureError::BadParam {
                    spec: spec.into(),
                    why: "unbalanced parentheses (write e.g. RBP(p=0.8))".into(),
                })
            }
        },
        None => (head, None),
    };
    Ok((name, args, cut))
}

/// The `key=value` arguments an ir_measures name takes: nDCG's `dcg` (true: exp-log2) and
/// RBP's `p` (0.8 by default).
fn irm_params(spec: &str, name: &str, args: Option<&str>) -> Result<(bool, f64), MeasureError> {
    let bad = |why: String| MeasureError::BadParam {
        spec: spec.into(),
        why,
    };
    let mut dcg_exp = false;
    let mut p = 0.8;
    for arg in args
        .iter()
        .flat_map(|a| a.split(','))
        .filter(|a| !a.is_empty())
    {
        let (k, v) = arg
            .split_once('=')
            .ok_or_else(|| bad(format!("`{arg}` is not key=value")))?;
        match (name, k.trim(), v.trim()) {
            ("nDCG", "dcg", "exp-log2") => dcg_exp = true,
            ("nDCG", "dcg", "log2") => dcg_exp = false,
            ("RBP", "p", v) => {
                p = v
                    .parse::<f64>()
                    .ok()
                    .filter(|p| *p > 0.0 && *p < 1.0)
                    .ok_or_else(|| bad(format!("p must lie strictly between 0 and 1, not {v}")))?
            }
            (_, "rel", _) => {
                return Err(bad(
                    "ir_measures' rel= is not supported: set the relevance level with -l".into(),
                ))
            }
            _ => return Err(bad(format!("parameter `{arg}` is not supported"))),
        }
    }
    Ok((dcg_exp, p))
}

/// What the ir_measures name `name` stands for, given its cutoff as written (`cut`) and as
/// read (`k`) and its arguments.
fn irm_measure(
    spec: &str,
    name: &str,
    cut: Option<&str>,
    k: Option<usize>,
    dcg_exp: bool,
    p: f64,
) -> Result<Irm, MeasureError> {
    let bad = |why: String| MeasureError::BadParam {
        spec: spec.into(),
        why,
    };
    let needs = |k: Option<usize>| {
        k.ok_or_else(|| MeasureError::NeedsCutoffs {
            name: format!("{name}@"),
        })
    };
    let no_cut = |r: Irm| match cut {
        Some(_) => Err(bad(format!("{name} takes no @cutoff"))),
        None => Ok(r),
    };
    use Measure as M;
    let r = match name {
        "nDCG" if dcg_exp => Irm::Own(M::NdcgExpCut(needs(k)?)),
        "nDCG" => match k {
            Some(k) => Irm::Trec("ndcg_cut", Some(M::NdcgCut(k))),
            None => Irm::Trec("ndcg", None),
        },
        "P" => Irm::Trec("P", Some(M::P(needs(k)?))),
        "R" => Irm::Trec("recall", Some(M::Recall(needs(k)?))),
        "RR" => match k {
            Some(k) => Irm::Own(M::RecipRankCut(k)),
            None => Irm::Trec("recip_rank", None),
        },
        "AP" => match k {
            Some(k) => Irm::Trec("map_cut", Some(M::MapCut(k))),
            None => Irm::Trec("map", None),
        },
        "Success" => Irm::Trec("success", Some(M::Success(needs(k)?))),
        "Judged" => Irm::Own(M::Judged(needs(k)?)),
        "ERR" => Irm::Own(M::ErrAt(needs(k)?)),
        "RBP" => no_cut(Irm::Own(M::RbpIrm(Real::new(p))))?,
        "IPrec" => {
            let c = cut.ok_or_else(|| bad("IPrec needs a recall point, e.g. IPrec@0.5".into()))?;
            let x = parse_real(spec, c)?;
            if x < 0.0 {
                return Err(bad(format!("`{c}` is negative")));
            }
            Irm::Trec("iprec_at_recall", Some(M::IprecAtRecall(Real::new(x))))
        }
        "Bpref" => no_cut(Irm::Trec("bpref", None))?,
        "SetP" => no_cut(Irm::Trec("set_P", None))?,
        "SetR" => no_cut(Irm::Trec("set_recall", None))?,
        "SetF" => no_cut(Irm::Trec("set_F", None))?,
        "NumRet" => no_cut(Irm::Trec("num_ret", None))?,
        "NumRel" => no_cut(Irm::Trec("num_rel", None))?,
        _ => no_cut(Irm::Trec("num_rel_ret", None))?,
    };
    Ok(r)
}

/// Parses one measure specification into measures in trec_eval's output order.
///
/// The summary-only names `runid` and `num_q` are accepted and yield no measure; use
/// [`Selection::from_specs`] to keep them.
pub fn parse_measures(spec: &str) -> Result<Vec<Measure>, MeasureError> {
    Selection::from_specs(&[spec]).map(|s| s.measures)
}
