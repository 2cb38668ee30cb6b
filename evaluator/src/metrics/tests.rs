//! Metric tests. Properties checked:
//! - a table of hand-computed cases (each value worked out on paper, comment beside it);
//! - measure-name parsing and output names follow trec_eval's syntax and order;
//! - against a dense oracle that ports trec_eval's C loops (a full relevance vector per rank),
//!   every measure agrees on random rankings and graded judgments;
//! - invariants: every non-count value in [0, 1]; recall and success non-decreasing in k;
//!   average precision equals the brute-force formula (1/R) * sum of P@rank over relevant ranks.

use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

fn qrels(pairs: &[(&str, i32)]) -> HashMap<String, i32> {
    pairs.iter().map(|(d, r)| (d.to_string(), *r)).collect()
}

fn eval1(m: Measure, ranked: &[&str], judged: &[(&str, i32)], level: i32) -> f64 {
    evaluate_ranking(&[m], ranked, &qrels(judged), level)[0]
}

use Measure::*;

// log2(3) = 1.584962500721156
const L3: f64 = 1.584_962_500_721_156;

/// (name, measure, ranking, judgments, relevance level, expected value)
type Case<'a> = (
    &'a str,
    Measure,
    &'a [&'a str],
    &'a [(&'a str, i32)],
    i32,
    f64,
);

#[test]
fn hand_computed_cases() {
    let abcde: &[&str] = &["a", "b", "c", "d", "e"];
    let two_of_three: &[(&str, i32)] = &[("a", 1), ("c", 1), ("z", 1), ("b", 0)];
    let graded: &[(&str, i32)] = &[("a", 1), ("b", 3), ("c", 0), ("d", 2)];
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        // relevant at ranks 1 and 3, one relevant (z) never retrieved: R = 3
        ("P_1 rel at 1", P(1), abcde, two_of_three, 1, 1.0),
        ("P_2", P(2), abcde, two_of_three, 1, 0.5),
        ("P_5", P(5), abcde, two_of_three, 1, 0.4),
        ("P_10 pads with non-relevant", P(10), abcde, two_of_three, 1, 0.2),
        ("recall_1 over R=3", Recall(1), abcde, two_of_three, 1, 1.0 / 3.0),
        ("recall_5 not capped", Recall(5), abcde, two_of_three, 1, 2.0 / 3.0),
        ("map (1/1 + 2/3) / 3", Map, abcde, two_of_three, 1, (1.0 + 2.0 / 3.0) / 3.0),
        ("recip_rank", RecipRank, abcde, two_of_three, 1, 1.0),
        ("Rprec top 3 has 2", Rprec, abcde, two_of_three, 1, 2.0 / 3.0),
        ("success_1", Success(1), abcde, two_of_three, 1, 1.0),
        ("num_ret", NumRet, abcde, two_of_three, 1, 5.0),
        ("num_rel counts unretrieved z", NumRel, abcde, two_of_three, 1, 3.0),
        ("num_rel_ret", NumRelRet, abcde, two_of_three, 1, 2.0),
        // dcg = 1 + 1/log2(4); ideal = 1 + 1/log2(3) + 1/log2(4)
        ("ndcg", Ndcg, abcde, two_of_three, 1, 1.5 / (1.5 + 1.0 / L3)),
        ("ndcg_cut_1", NdcgCut(1), abcde, two_of_three, 1, 1.0),
        ("ndcg_cut_2 ideal has 2", NdcgCut(2), abcde, two_of_three, 1, 1.0 / (1.0 + 1.0 / L3)),
        // nothing relevant retrieved
        ("map zero", Map, &["x", "y"], &[("a", 1)], 1, 0.0),
        ("recip_rank zero", RecipRank, &["x", "y"], &[("a", 1)], 1, 0.0),
        ("ndcg zero", Ndcg, &["x", "y"], &[("a", 1)], 1, 0.0),
        ("num_rel unretrieved", NumRel, &["x", "y"], &[("a", 1)], 1, 1.0),
        // graded: a=1, b=3, c=0, d=2 (d unretrieved)
        // dcg = 1/1 + 3/log2(3); ideal = 3 + 2/log2(3) + 1/2
        ("ndcg linear gain", Ndcg, &["a", "b", "c"], graded, 1, (1.0 + 3.0 / L3) / (3.5 + 2.0 / L3)),
        ("ndcg ignores level", Ndcg, &["a", "b", "c"], graded, 2, (1.0 + 3.0 / L3) / (3.5 + 2.0 / L3)),
        // ideal@2 = 3 + 2/log2(3)
        ("ndcg_cut_2 graded", NdcgCut(2), &["a", "b", "c"], graded, 1, (1.0 + 3.0 / L3) / (3.0 + 2.0 / L3)),
        ("num_rel level 1", NumRel, &["a", "b", "c"], graded, 1, 3.0),
        ("num_rel level 2", NumRel, &["a", "b", "c"], graded, 2, 2.0),
        ("recip_rank level 2", RecipRank, &["a", "b", "c"], graded, 2, 0.5),
        ("P_3 level 2", P(3), &["a", "b", "c"], graded, 2, 1.0 / 3.0),
        ("map level 2: (1/2) / 2", Map, &["a", "b", "c"], graded, 2, 0.25),
        // judged, nothing relevant: every measure 0
        ("no relevant map", Map, &["a", "b"], &[("a", 0), ("b", 0)], 1, 0.0),
        ("no relevant recall", Recall(5), &["a", "b"], &[("a", 0), ("b", 0)], 1, 0.0),
        ("no relevant Rprec", Rprec, &["a", "b"], &[("a", 0), ("b", 0)], 1, 0.0),
        ("no relevant ndcg_cut", NdcgCut(10), &["a", "b"], &[("a", 0), ("b", 0)], 1, 0.0),
        // empty ranking
        ("empty P_5", P(5), &[], &[("a", 1)], 1, 0.0),
        ("empty num_ret", NumRet, &[], &[("a", 1)], 1, 0.0),
        ("empty Rprec", Rprec, &[], &[("a", 1)], 1, 0.0),
        // RR@k is cut, recip_rank is not
        ("recip_rank rank 3", RecipRank, &["x", "y", "a"], &[("a", 1)], 1, 1.0 / 3.0),
        ("RR@2 misses rank 3", RecipRankCut(2), &["x", "y", "a"], &[("a", 1)], 1, 0.0),
        ("RR@3 sees rank 3", RecipRankCut(3), &["x", "y", "a"], &[("a", 1)], 1, 1.0 / 3.0),
        ("success_2 misses rank 3", Success(2), &["x", "y", "a"], &[("a", 1)], 1, 0.0),
        ("success_5", Success(5), &["x", "y", "a"], &[("a", 1)], 1, 1.0),
        // Rprec when fewer than R retrieved: 1 relevant of the 1 looked at, over R = 3
        ("Rprec short ranking", Rprec, &["a"], &[("a", 1), ("b", 1), ("c", 1)], 1, 1.0 / 3.0),
        // negative judgment is never relevant
        ("negative judgment", RecipRank, &["a", "b"], &[("a", -1), ("b", 1)], 1, 0.5),
        ("negative not in num_rel", NumRel, &["a", "b"], &[("a", -1), ("b", 1)], 1, 1.0),
        // level 0: judged non-relevant counts as relevant, unjudged does not
        ("level 0 num_rel", NumRel, &["a", "b", "u"], &[("a", 0), ("b", 1)], 0, 2.0),
        ("level 0 P_3", P(3), &["a", "b", "u"], &[("a", 0), ("b", 1)], 0, 2.0 / 3.0),
        ("level 0 ndcg: rel 0 has no gain", Ndcg, &["a", "b"], &[("a", 0), ("b", 1)], 0, 1.0 / L3),
    ];
    let mut failures = Vec::new();
    for (name, m, ranked, judged, level, want) in &cases {
        let got = eval1(*m, ranked, judged, *level);
        if (got - want).abs() > 1e-12 {
            failures.push(format!("{name}: {m} = {got}, want {want}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// set_map for 7 of 8 relevant documents in 20 retrieved, by hand: trec_eval 10.0's
/// `m_set_map.c` divides rel_ret² by ret · rel, 7² / (20 · 8) = 49 / 160 = 0.30625 exactly. The
/// nearest double to 0.30625 is 0.306250000000000022..., which prints 0.3063 at trec_eval's
/// four decimals; set_P · set_recall = 0.35 · 0.875 rounds to 0.306249999999999966... and
/// prints 0.3062 (the fourth-decimal difference that issue 25 found against trec_eval).
#[test]
fn set_map_is_trec_evals_quotient_to_the_last_digit() {
    let ranked: Vec<String> = (0..20).map(|i| format!("d{i:02}")).collect();
    let ranked: Vec<&str> = ranked.iter().map(String::as_str).collect();
    // relevant: d00..d06 (7 retrieved) and `gone` (never retrieved): R = 8
    let mut judged: Vec<(&str, i32)> = ranked[..7].iter().map(|d| (*d, 1)).collect();
    judged.push(("gone", 1));
    let got = eval1(SetMap, &ranked, &judged, 1);
    assert_eq!(got.to_bits(), (49.0f64 / 160.0).to_bits(), "{got}");
    assert_eq!(format!("{got:6.4}"), "0.3063");
    // The product form is the wrong one at the fourth decimal (the bug this test pins).
    assert_eq!(format!("{:6.4}", (7.0f64 / 20.0) * (7.0 / 8.0)), "0.3062");
    // Nothing retrieved, or nothing relevant: 0.
    assert_eq!(eval1(SetMap, &[], &judged, 1), 0.0);
    assert_eq!(eval1(SetMap, &ranked, &[("d00", 0)], 1), 0.0);
}

#[test]
fn evaluate_ranking_keeps_measure_order() {
    let judged = qrels(&[("a", 1)]);
    let v = evaluate_ranking(&[P(1), NumRet, RecipRank], &["b", "a"], &judged, 1);
    assert_eq!(v, vec![0.0, 2.0, 0.5]);
}

#[test]
fn names_are_trec_evals() {
    let names: Vec<String> = [
        P(5),
        Recall(100),
        NdcgCut(10),
        RecipRank,
        Map,
        Success(1),
        Rprec,
        NumRet,
        NumRel,
        NumRelRet,
        Ndcg,
        RecipRankCut(10),
    ]
    .iter()
    .map(Measure::name)
    .collect();
    assert_eq!(
        names,
        [
            "P_5",
            "recall_100",
            "ndcg_cut_10",
            "recip_rank",
            "map",
            "success_1",
            "Rprec",
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "ndcg",
            "recip_rank_cut_10"
        ]
    );
}

#[test]
fn parses_trec_eval_syntax() {
    assert_eq!(parse_measures("P.5,10").unwrap(), vec![P(5), P(10)]);
    assert_eq!(parse_measures("P.10,5").unwrap(), vec![P(5), P(10)]);
    assert_eq!(parse_measures("ndcg_cut.10").unwrap(), vec![NdcgCut(10)]);
    assert_eq!(parse_measures("recall.100").unwrap(), vec![Recall(100)]);
    assert_eq!(
        parse_measures("success.1,5").unwrap(),
        vec![Success(1), Success(5)]
    );
    assert_eq!(parse_measures("map").unwrap(), vec![Map]);
    assert_eq!(parse_measures("recip_rank").unwrap(), vec![RecipRank]);
    assert_eq!(
        parse_measures("recip_rank_cut.10").unwrap(),
        vec![RecipRankCut(10)]
    );
    assert_eq!(
        parse_measures("P").unwrap(),
        DEFAULT_CUTOFFS.iter().map(|&k| P(k)).collect::<Vec<_>>()
    );
    assert_eq!(
        parse_measures("success").unwrap(),
        vec![Success(1), Success(5), Success(10)]
    );
}

#[test]
fn rejects_bad_specs_with_guidance() {
    let e = parse_measures("nosuch").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("unknown measure `nosuch`"), "{msg}");
    for name in IMPLEMENTED {
        assert!(msg.contains(name), "{msg} should list {name}");
    }
    assert!(matches!(
        parse_measures("P.0"),
        Err(MeasureError::BadCutoff { .. })
    ));
    assert!(matches!(
        parse_measures("P.x"),
        Err(MeasureError::BadCutoff { .. })
    ));
    assert!(matches!(
        parse_measures("P."),
        Err(MeasureError::BadParam { .. })
    ));
    assert!(matches!(
        parse_measures("P.5,5"),
        Err(MeasureError::DuplicateCutoff { .. })
    ));
    // trec_eval reads 5.5 as 5, so 5.5,5 repeats a cutoff
    assert!(matches!(
        parse_measures("P.5.5,5"),
        Err(MeasureError::DuplicateCutoff { .. })
    ));
    for bad in [
        "ndcg.x=1",
        "ndcg.1",
        "rbp.p=1.5",
        "utility.1,2",
        "iprec_at_recall.x",
        "nDCG(rel=2)@10",
    ] {
        assert!(
            matches!(parse_measures(bad), Err(MeasureError::BadParam { .. })),
            "{bad}: {:?}",
            parse_measures(bad)
        );
    }
    assert!(matches!(
        parse_measures("prefs"),
        Err(MeasureError::Refused { .. })
    ));
    assert!(matches!(
        parse_measures("map.5"),
        Err(MeasureError::NoParams { .. })
    ));
    assert!(matches!(
        parse_measures("recip_rank_cut"),
        Err(MeasureError::NeedsCutoffs { .. })
    ));
}

#[test]
fn selection_sorts_in_trec_eval_order_and_merges() {
    let sel = Selection::from_specs(&[
        "recall.100",
        "ndcg_cut.10",
        "P.5,10",
        "recip_rank",
        "map",
        "P.10,20",
    ])
    .unwrap();
    assert!(!sel.runid && !sel.num_q);
    // trec_eval keeps the first parameters given for P (5,10), not the union
    assert_eq!(
        sel.measures,
        vec![Map, RecipRank, P(5), P(10), Recall(100), NdcgCut(10)]
    );
}

#[test]
fn trec_eval_quirks_and_ir_measures_names() {
    // -m P.10 -m P.5: trec_eval prints P_10 only
    assert_eq!(
        Selection::from_specs(&["P.10", "P.5"]).unwrap().measures,
        vec![P(10)]
    );
    // a bare name registers no parameters: the later P.5 decides
    assert_eq!(
        Selection::from_specs(&["P", "P.5"]).unwrap().measures,
        vec![P(5)]
    );
    // P.5.5 reads as P_5
    assert_eq!(parse_measures("P.5.5").unwrap(), vec![P(5)]);
    // relstring.20 after all_trec names the column relstring_20
    let sel = Selection::from_specs(&["all_trec", "relstring.20"]).unwrap();
    assert_eq!(sel.name(&Relstring), "relstring_20");
    assert_eq!(sel.params.relstring_len, 20);
    let sel = Selection::from_specs(&["ndcg.1=3,2=9"]).unwrap();
    assert_eq!(sel.name(&Ndcg), "ndcg_1=3,2=9");
    assert_eq!(sel.params.ndcg_gains, vec![(1, 3.0), (2, 9.0)]);
    // ir_measures names: trec_eval's columns, cutoffs accumulate
    let sel = Selection::from_specs(&["nDCG@10", "P@5", "P@10", "R@100", "RR", "AP", "Success@1"])
        .unwrap();
    assert_eq!(
        sel.measures,
        vec![
            Map,
            RecipRank,
            P(5),
            P(10),
            Recall(100),
            NdcgCut(10),
            Success(1)
        ]
    );
    let sel = Selection::from_specs(&[
        "Judged@10",
        "ERR@20",
        "nDCG(dcg=exp-log2)@5",
        "RBP",
        "RR@10",
    ])
    .unwrap();
    assert_eq!(
        sel.measures,
        vec![
            RecipRankCut(10),
            NdcgExpCut(5),
            Judged(10),
            ErrAt(20),
            RbpIrm(Real::new(0.8))
        ]
    );
    assert_eq!(RbpIrm(Real::new(0.8)).name(), "RBP(p=0.8)");
}

#[test]
fn dialects_match_hand_computed_values() {
    let ranked = ["a", "b", "c"];
    // a=2, b unjudged, c=1 (d=3 unretrieved)
    let j = qrels(&[("a", 2), ("c", 1), ("d", 3)]);
    let v = evaluate_ranking(
        &[
            Judged(2),
            Judged(10),
            ErrAt(3),
            NdcgExpCut(3),
            RbpIrm(Real::new(0.5)),
        ],
        &ranked,
        &j,
        1,
    );
    // Judged@2: a only; Judged@10 divides by 10
    assert_eq!(v[0], 0.5);
    assert_eq!(v[1], 0.2);
    // ERR: R(a) = 3/16 at rank 1; R(c) = 1/16 at rank 3 after (1 - 3/16)
    let want = 3.0 / 16.0 + (13.0 / 16.0) * (1.0 / 16.0) / 3.0;
    assert!((v[2] - want).abs() < 1e-15, "{}", v[2]);
    // exp gain: dcg = 3 + 1/2; ideal = 7 + 3/log2(3) + 1/2
    let want = 3.5 / (7.5 + 3.0 / L3);
    assert!((v[3] - want).abs() < 1e-15, "{}", v[3]);
    // RBP p=0.5 binary: (1 - 0.5) * (1 + 0.25)
    assert_eq!(v[4], 0.625);
}

#[test]
fn official_is_trec_evals_default() {
    let sel = Selection::from_specs::<&str>(&[]).unwrap();
    assert_eq!(sel, Selection::official());
    assert!(sel.runid && sel.num_q);
    let names: Vec<String> = sel.measures.iter().map(Measure::name).collect();
    assert_eq!(
        names,
        [
            "num_ret",
            "num_rel",
            "num_rel_ret",
            "map",
            "gm_map",
            "Rprec",
            "bpref",
            "recip_rank",
            "iprec_at_recall_0.00",
            "iprec_at_recall_0.10",
            "iprec_at_recall_0.20",
            "iprec_at_recall_0.30",
            "iprec_at_recall_0.40",
            "iprec_at_recall_0.50",
            "iprec_at_recall_0.60",
            "iprec_at_recall_0.70",
            "iprec_at_recall_0.80",
            "iprec_at_recall_0.90",
            "iprec_at_recall_1.00",
            "P_5",
            "P_10",
            "P_15",
            "P_20",
            "P_30",
            "P_100",
            "P_200",
            "P_500",
            "P_1000"
        ]
    );
    let all = Selection::from_specs(&["all_trec"]).unwrap();
    assert!(all.measures.contains(&Success(10)) && all.measures.contains(&Ndcg));
    assert!(!all.measures.iter().any(|m| matches!(m, RecipRankCut(_))));
}

// ---- dense oracle: trec_eval's loops over a full relevance vector ----

const NONPOOL: i32 = -1;

/// Judgment per rank, `NONPOOL` for unjudged, negative judgments mapped to -2 like trec_eval.
fn dense(ranked: &[String], judged: &HashMap<String, i32>) -> Vec<i32> {
    ranked
        .iter()
        .map(|d| match judged.get(d) {
            None => NONPOOL,
            Some(&r) if r < 0 => -2,
            Some(&r) => r,
        })
        .collect()
}

fn oracle(m: Measure, rels: &[i32], judged: &HashMap<String, i32>, level: i32) -> Option<f64> {
    if let Some(v) = oracle_more(m, rels, judged, level) {
        return v;
    }
    Some(oracle_base(m, rels, judged, level))
}

/// Ports of trec_eval's dense loops for the measures beyond the original twelve (m_bpref.c,
/// m_infap.c, m_map_cut.c, m_rel_P.c, m_unjudged.c, m_binG.c, m_rbp_resid.c,
/// m_iprec_at_recall.c, m_Rprec_mult.c, m_num_nonrel_judged_ret.c). `None`: not covered here.
fn oracle_more(
    m: Measure,
    rels: &[i32],
    judged: &HashMap<String, i32>,
    level: i32,
) -> Option<Option<f64>> {
    let is_rel = |r: i32| r >= 0 && r >= level;
    let num_rel = judged.values().filter(|&&r| is_rel(r)).count();
    let num_rel_ret = rels.iter().filter(|&&r| is_rel(r)).count();
    let num_ret = rels.len();
    let v = match m {
        Bpref => oracle_bpref(rels, judged, level, num_rel),
        InfAp => oracle_infap(rels, level, num_rel),
        MapCut(k) => {
            let (mut so_far, mut sum) = (0, 0.0);
            for (i, &r) in rels.iter().enumerate().take(k) {
                if is_rel(r) {
                    so_far += 1;
                    sum += so_far as f64 / (i + 1) as f64;
                }
            }
            if so_far > 0 {
                sum / num_rel as f64
            } else {
                0.0
            }
        }
        RelativeP(k) => {
            let n = rels.iter().take(k).filter(|&&r| is_rel(r)).count();
            if k.min(num_rel) == 0 {
                0.0
            } else {
                n as f64 / k.min(num_rel) as f64
            }
        }
        Unj(k) => rels.iter().take(k).filter(|&&r| r < 0).count() as f64 / k as f64,
        NumNonrelJudgedRet => rels.iter().filter(|&&r| r >= 0 && r < level).count() as f64,
        BinG => {
            let (mut so_far, mut sum) = (0usize, 0.0);
            for (i, &r) in rels.iter().enumerate() {
                if is_rel(r) {
                    so_far += 1;
                    sum += 1.0 / ((3 + i - so_far) as f64).log2();
                }
            }
            if so_far > 0 {
                sum / num_rel as f64
            } else {
                0.0
            }
        }
        RbpResid => {
            let (mut unj, mut sum, mut cur) = (0, 0.0, 1.0);
            for &r in rels {
                if r < 0 {
                    unj += 1;
                    sum += cur;
                }
                cur *= 0.9;
            }
            if unj > 0 {
                cur + 0.1 * sum
            } else {
                0.0
            }
        }
        IprecAtRecall(x) => {
            if num_ret == 0 {
                return Some(None);
            }
            oracle_iprec_at_recall(x.get(), rels, level, num_rel, num_rel_ret)
        }
        RprecMult(x) => {
            let cut = (x.get() * num_rel as f64 + 0.9) as usize;
            if cut == 0 {
                0.0
            } else if cut > num_ret {
                num_rel_ret as f64 / cut as f64
            } else {
                rels.iter().take(cut).filter(|&&r| is_rel(r)).count() as f64 / cut as f64
            }
        }
        NumRet | NumRel | NumRelRet | P(_) | Recall(_) | Map | RecipRank | RecipRankCut(_)
        | Rprec | Success(_) | Ndcg | NdcgCut(_) => return None,
        _ => return Some(None),
    };
    Some(Some(v))
}

/// The `bpref` arm of [`oracle_more`] (its C loop, as there).
fn oracle_bpref(rels: &[i32], judged: &HashMap<String, i32>, level: i32, num_rel: usize) -> f64 {
    let num_nonrel = judged.values().filter(|&&r| r >= 0 && r < level).count();
    let (mut nonrel, mut sum) = (0usize, 0.0);
    for &r in rels {
        if r < 0 {
            continue;
        }
        if r < level {
            nonrel += 1;
        } else if nonrel > 0 {
            sum += 1.0 - nonrel.min(num_rel) as f64 / num_nonrel.min(num_rel) as f64;
        } else {
            sum += 1.0;
        }
    }
    if num_rel > 0 {
        sum / num_rel as f64
    } else {
        sum
    }
}

/// The `infap` arm of [`oracle_more`] (its C loop, as there).
fn oracle_infap(rels: &[i32], level: i32, num_rel: usize) -> f64 {
    let (mut rel, mut nonrel, mut unj, mut sum) = (0usize, 0usize, 0usize, 0.0);
    for (j, &r) in rels.iter().enumerate() {
        if r == NONPOOL {
            continue;
        }
        if r == -2 {
            unj += 1;
            continue;
        }
        if r < level {
            nonrel += 1;
        } else {
            rel += 1;
            if j == 0 {
                sum += 1.0;
            } else {
                let fj = j as f64;
                sum += 1.0 / (fj + 1.0)
                    + (fj / (fj + 1.0))
                        * ((rel - 1 + nonrel + unj) as f64 / fj)
                        * (((rel - 1) as f64 + 0.00001) / ((rel - 1 + nonrel) as f64 + 0.00002));
            }
        }
    }
    if num_rel > 0 {
        sum / num_rel as f64
    } else {
        sum
    }
}

/// The `iprec_at_recall` arm of [`oracle_more`] for a non-empty run (trec_eval's C loop,
/// backwards from the last document).
fn oracle_iprec_at_recall(
    x: f64,
    rels: &[i32],
    level: i32,
    num_rel: usize,
    num_rel_ret: usize,
) -> f64 {
    let is_rel = |r: i32| r >= 0 && r >= level;
    let num_ret = rels.len();
    let cut = (x * num_rel as f64).round() as usize;
    if cut > num_rel_ret {
        0.0
    } else {
        // the C loop, backwards from the last document
        let mut int_p = num_rel_ret as f64 / num_ret as f64;
        let mut so_far = num_rel_ret;
        let mut value = None;
        let mut i = num_ret;
        while i > 0 && so_far > 0 {
            let p = so_far as f64 / i as f64;
            if int_p < p {
                int_p = p;
            }
            if is_rel(rels[i - 1]) {
                if so_far == cut && value.is_none() {
                    value = Some(int_p);
                }
                so_far -= 1;
            }
            i -= 1;
        }
        value.unwrap_or(int_p)
    }
}

fn oracle_base(m: Measure, rels: &[i32], judged: &HashMap<String, i32>, level: i32) -> f64 {
    let is_rel = |r: i32| r >= 0 && r >= level;
    let num_rel = judged.values().filter(|&&r| is_rel(r)).count();
    let rel_in = |k: usize| rels.iter().take(k).filter(|&&r| is_rel(r)).count();
    match m {
        NumRet => rels.len() as f64,
        NumRel => num_rel as f64,
        NumRelRet => rel_in(rels.len()) as f64,
        P(k) => rel_in(k) as f64 / k as f64,
        Recall(k) => {
            if num_rel == 0 {
                0.0
            } else {
                rel_in(k) as f64 / num_rel as f64
            }
        }
        Map => {
            let (mut so_far, mut sum) = (0, 0.0);
            for (i, &r) in rels.iter().enumerate() {
                if is_rel(r) {
                    so_far += 1;
                    sum += so_far as f64 / (i + 1) as f64;
                }
            }
            if so_far > 0 {
                sum / num_rel as f64
            } else {
                0.0
            }
        }
        RecipRank | RecipRankCut(_) => {
            let cut = if let RecipRankCut(k) = m {
                k
            } else {
                usize::MAX
            };
            match rels.iter().position(|&r| is_rel(r)) {
                Some(i) if i < cut => 1.0 / (i + 1) as f64,
                _ => 0.0,
            }
        }
        Rprec => {
            let look = num_rel.min(rels.len());
            if look == 0 {
                0.0
            } else {
                rel_in(look) as f64 / num_rel as f64
            }
        }
        Success(k) => (rel_in(k) > 0) as u8 as f64,
        Ndcg | NdcgCut(_) => {
            let cut = if let NdcgCut(k) = m { k } else { usize::MAX };
            // trec_eval's rel_levels: count of judgments per non-negative level
            let max = judged.values().copied().max().unwrap_or(0).max(0) as usize;
            let mut levels = vec![0usize; max + 1];
            for &r in judged.values() {
                if r >= 0 {
                    levels[r as usize] += 1;
                }
            }
            let mut dcg = 0.0;
            for (i, &r) in rels.iter().enumerate().take(cut) {
                if r > 0 {
                    dcg += r as f64 / ((i + 2) as f64).log2();
                }
            }
            // ideal: walk levels from the top, as m_ndcg_cut.c does
            let mut ideal = 0.0;
            let mut lvl = max;
            let mut count = 0;
            let mut i = 0;
            while lvl > 0 && i < cut {
                count += 1;
                while lvl > 0 && count > levels[lvl] {
                    lvl -= 1;
                    count = 1;
                }
                if lvl == 0 {
                    break;
                }
                ideal += lvl as f64 / ((i + 2) as f64).log2();
                i += 1;
            }
            if ideal > 0.0 {
                dcg / ideal
            } else {
                0.0
            }
        }
        _ => unreachable!("oracle_more covers {m}"),
    }
}

fn all_measures() -> Vec<Measure> {
    let mut v = vec![
        NumRet,
        NumRel,
        NumRelRet,
        Map,
        Rprec,
        RecipRank,
        Ndcg,
        Bpref,
        InfAp,
        BinG,
        RbpResid,
        NumNonrelJudgedRet,
    ];
    for k in [1, 2, 3, 5, 10, 20] {
        v.extend([P(k), Recall(k), NdcgCut(k), Success(k), RecipRankCut(k)]);
        v.extend([MapCut(k), RelativeP(k), Unj(k)]);
    }
    for x in [0.0, 0.1, 0.25, 0.5, 0.9, 1.0] {
        v.extend([IprecAtRecall(Real::new(x)), RprecMult(Real::new(x * 2.0))]);
    }
    v
}

/// A random query: a ranking of distinct documents from a small pool, and graded judgments
/// (including negative ones) over the same pool.
fn arb_query() -> impl Strategy<Value = (Vec<String>, HashMap<String, i32>, i32)> {
    (
        proptest::sample::subsequence((0..40).collect::<Vec<u32>>(), 0..30).prop_shuffle(),
        proptest::collection::hash_map(0u32..40, -1i32..=3, 0..25),
        0i32..=2,
    )
        .prop_map(|(ranked, judged, level)| {
            (
                ranked.iter().map(|d| format!("d{d}")).collect(),
                judged
                    .into_iter()
                    .map(|(d, r)| (format!("d{d}"), r))
                    .collect(),
                level,
            )
        })
}

proptest! {
    #[test]
    fn agrees_with_dense_trec_eval_oracle((ranked, judged, level) in arb_query()) {
        let refs: Vec<&str> = ranked.iter().map(String::as_str).collect();
        let measures = all_measures();
        let got = evaluate_ranking(&measures, &refs, &judged, level);
        let rels = dense(&ranked, &judged);
        for (m, g) in measures.iter().zip(&got) {
            let Some(want) = oracle(*m, &rels, &judged, level) else { continue };
            prop_assert!((g - want).abs() < 1e-12, "{m}: got {g}, oracle {want}");
        }
    }

    #[test]
    fn invariants_hold((ranked, judged, level) in arb_query()) {
        let refs: Vec<&str> = ranked.iter().map(String::as_str).collect();
        let ks = [1usize, 2, 3, 5, 10, 20, 50];
        for m in all_measures().iter().filter(|m| !m.is_count() && **m != RbpResid) {
            let v = evaluate_ranking(&[*m], &refs, &judged, level)[0];
            prop_assert!((0.0..=1.0 + 1e-12).contains(&v), "{m} = {v}");
        }
        let series = |f: fn(usize) -> Measure| -> Vec<f64> {
            let ms: Vec<Measure> = ks.iter().map(|&k| f(k)).collect();
            evaluate_ranking(&ms, &refs, &judged, level)
        };
        for (name, s) in [("recall", series(Recall)), ("success", series(Success))] {
            prop_assert!(s.windows(2).all(|w| w[0] <= w[1]), "{name} not monotone: {s:?}");
        }
        // average precision, brute force: (1/R) * sum over relevant ranks r of P@r
        let rels = dense(&ranked, &judged);
        let r = judged.values().filter(|&&v| is_relevant(v, level)).count();
        let brute = if r == 0 { 0.0 } else {
            (0..rels.len())
                .filter(|&i| is_relevant(rels[i], level))
                .map(|i| evaluate_ranking(&[P(i + 1)], &refs, &judged, level)[0])
                .sum::<f64>() / r as f64
        };
        let ap = evaluate_ranking(&[Map], &refs, &judged, level)[0];
        prop_assert!((ap - brute).abs() < 1e-12, "AP {ap} vs brute force {brute}");
    }
}
