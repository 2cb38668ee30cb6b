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
    let e = parse_measures("bpref").unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("unknown measure `bpref`"), "{msg}");
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
        Err(MeasureError::BadCutoff { .. })
    ));
    assert!(matches!(
        parse_measures("P.5,5"),
        Err(MeasureError::DuplicateCutoff { cutoff: 5, .. })
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
    assert_eq!(
        sel.measures,
        vec![Map, RecipRank, P(5), P(10), P(20), Recall(100), NdcgCut(10)]
    );
}

#[test]
fn official_is_trec_evals_default_for_what_we_implement() {
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
            "Rprec",
            "recip_rank",
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

fn oracle(m: Measure, rels: &[i32], judged: &HashMap<String, i32>, level: i32) -> f64 {
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
    }
}

fn all_measures() -> Vec<Measure> {
    let mut v = vec![NumRet, NumRel, NumRelRet, Map, Rprec, RecipRank, Ndcg];
    for k in [1, 2, 3, 5, 10, 20] {
        v.extend([P(k), Recall(k), NdcgCut(k), Success(k), RecipRankCut(k)]);
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
            let want = oracle(*m, &rels, &judged, level);
            prop_assert!((g - want).abs() < 1e-12, "{m}: got {g}, oracle {want}");
        }
    }

    #[test]
    fn invariants_hold((ranked, judged, level) in arb_query()) {
        let refs: Vec<&str> = ranked.iter().map(String::as_str).collect();
        let ks = [1usize, 2, 3, 5, 10, 20, 50];
        for m in all_measures().iter().filter(|m| !m.is_count()) {
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
