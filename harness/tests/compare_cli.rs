//! `ranklab compare`, end to end through the binary. Properties checked:
//! - identical runs: Δ 0 with interval [0, 0], p = 1, and the reading says no run differs;
//! - a hand-computed case (4 queries, two lose half their reciprocal rank): Δ, exact p = 1/2,
//!   win/tie/loss, and the means agree with `ranklab eval`;
//! - a clear difference over 40 queries is sampled, significant, named in the reading, and the
//!   output is byte-identical on a second run; another seed is reported;
//! - Holm across three runs is shown beside the raw p;
//! - runs over different judged queries exit 2 naming, per run, the queries it lacks; `-c` pairs
//!   on every judged query instead;
//! - fewer than two runs, or an unknown measure (the implemented ones listed), exit 2 with
//!   nothing on stdout;
//! - CSV and JSON carry the same numbers; `--per-query` adds the per-query table;
//! - on trec_eval's own test files, the baseline's mean equals trec_eval's `all` line.
//! - the power table and sentence: MDE and queries needed equal statsmodels' on a hand-made case.
//! - Judged@k and unjudged@k per run, hand-computed on a two-query case, in Markdown and JSON;
//!   the warning when the new run's Judged@k is more than 0.02 below the baseline's, and none
//!   when it is not.

use std::process::{Command, Output};

mod common;
use common::{ok, trec_eval_data};

fn ranklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .output()
        .expect("run ranklab")
}

fn fails(args: &[&str]) -> String {
    let out = ranklab(args);
    assert_eq!(
        out.status.code(),
        Some(2),
        "ranklab {args:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        out.stdout.is_empty(),
        "no partial output: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stderr).unwrap()
}

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Self {
        Files {
            dir: tempfile::tempdir().unwrap(),
        }
    }
    fn write(&self, name: &str, body: &str) -> String {
        let p = self.dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.to_str().unwrap().to_string()
    }
}

/// Qrels: query qN judges document `rN` relevant, `xN` not.
fn qrels(n: usize) -> String {
    (1..=n)
        .map(|q| format!("q{q} 0 r{q} 1\nq{q} 0 x{q} 0\n"))
        .collect()
}

/// A run whose relevant document of query q sits at `rank(q)` (1-based; 0 = not retrieved),
/// under filler documents.
fn run(n: usize, tag: &str, rank: impl Fn(usize) -> usize) -> String {
    let mut s = String::new();
    for q in 1..=n {
        let r = rank(q);
        for pos in 1..=5 {
            let doc = if pos == r {
                format!("r{q}")
            } else {
                format!("f{q}_{pos}")
            };
            s.push_str(&format!("q{q} Q0 {doc} {pos} {} {tag}\n", 10 - pos));
        }
    }
    s
}

#[test]
fn identical_runs_do_not_differ() {
    let f = Files::new();
    let q = f.write("qrels", &qrels(6));
    let a = f.write("a.trec", &run(6, "a", |q| q % 3 + 1));
    let b = f.write("b.trec", &run(6, "b", |q| q % 3 + 1));
    let out = ok(&["compare", "--qrels", &q, &a, &b, "-m", "recip_rank"]);
    assert!(out.contains("| recip_rank | b | 0.6111 | 0.0000 [0.0000, 0.0000] | 1.0000 | 1.0000 | exact, n = 0 | 0/6/0 |"), "{out}");
    assert!(
        out.contains("No run differs significantly from the baseline `a` at 0.05 on recip_rank"),
        "{out}"
    );
}

#[test]
fn hand_computed_four_queries() {
    let f = Files::new();
    let q = f.write("qrels", &qrels(4));
    let a = f.write("base.trec", &run(4, "base", |_| 1));
    let b = f.write("new.trec", &run(4, "new", |q| if q <= 2 { 2 } else { 1 }));
    let out = ok(&[
        "compare",
        "--qrels",
        &q,
        &a,
        &b,
        "-m",
        "recip_rank",
        "-m",
        "P.1",
    ]);
    // Differences −1/2, −1/2, 0, 0: Δ = −1/4; the 4 assignments of ±1/2 ±1/2 give |Σ| = 1, 0, 0,
    // 1: p = 2/4. For P_1 the differences are −1, −1, 0, 0: same p, Δ = −1/2.
    assert!(
        out.contains("| recip_rank | base (baseline) | 1.0000 | — | — | — | — | — |"),
        "{out}"
    );
    assert!(
        out.contains("| recip_rank | new | 0.7500 | -0.2500 ["),
        "{out}"
    );
    assert!(
        out.contains("| 0.5000 | 0.5000 | exact, n = 2 | 0/2/2 |"),
        "{out}"
    );
    assert!(out.contains("| P_1 | new | 0.5000 | -0.5000 ["), "{out}");
    let eval = ok(&["eval", "-m", "recip_rank", &q, &b]);
    assert!(
        eval.contains("recip_rank            \tall\t0.7500"),
        "{eval}"
    );
}

#[test]
fn clear_difference_is_sampled_significant_and_reproducible() {
    let f = Files::new();
    let q = f.write("qrels", &qrels(40));
    let a = f.write(
        "bm25.trec",
        &run(40, "bm25", |q| if q % 4 == 0 { 1 } else { 3 }),
    );
    let b = f.write(
        "dense.trec",
        &run(40, "dense", |q| if q % 5 == 0 { 2 } else { 1 }),
    );
    let args = ["compare", "--qrels", &q, &a, &b, "-m", "recip_rank"];
    let out = ok(&args);
    // 32 queries differ (8 tie at rank 1): more than 20, so the p-value is sampled.
    assert!(out.contains("sampled ×100,000, n = 32"), "{out}");
    assert!(
        out.contains("`dense` is higher on recip_rank (Δ +"),
        "{out}"
    );
    assert!(out.contains("Seed 42."), "{out}");
    assert_eq!(out, ok(&args), "second run differs");
    let seeded = ok(&[
        "compare",
        "--qrels",
        &q,
        &a,
        &b,
        "-m",
        "recip_rank",
        "--seed",
        "7",
    ]);
    assert!(seeded.contains("Seed 7."), "{seeded}");
}

#[test]
fn holm_across_three_runs() {
    let f = Files::new();
    let q = f.write("qrels", &qrels(8));
    let a = f.write("a.trec", &run(8, "a", |_| 2));
    let b = f.write("b.trec", &run(8, "b", |_| 1));
    let c = f.write("c.trec", &run(8, "c", |q| if q == 1 { 1 } else { 2 }));
    let out = ok(&[
        "compare",
        "--qrels",
        &q,
        &a,
        &b,
        &c,
        "-m",
        "recip_rank",
        "--format",
        "json",
    ]);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let rows = j["summary"].as_array().unwrap();
    // b: 8 gains of 1/2, p = 2/256; c: one gain, p = 1; Holm: b ×2 = 4/256, c max(1, …) = 1.
    assert_eq!(rows[1]["p"], serde_json::json!(0.0078));
    assert_eq!(rows[1]["p_holm"], serde_json::json!(0.0156));
    assert_eq!(rows[2]["p"], serde_json::json!(1.0));
    assert_eq!(rows[2]["p_holm"], serde_json::json!(1.0));
    assert_eq!(rows[0]["p"], serde_json::Value::Null);
    assert_eq!(j["statistics"]["seed"], serde_json::json!(42));
    assert!(j["reading"]
        .as_str()
        .unwrap()
        .contains("`b` is higher on recip_rank"));
}

#[test]
fn different_query_sets_are_an_error_unless_complete() {
    let f = Files::new();
    let q = f.write("qrels", &qrels(5));
    let a = f.write("a.trec", &run(5, "a", |_| 1));
    let short: String = run(5, "b", |_| 2)
        .lines()
        .filter(|l| !l.starts_with("q4 ") && !l.starts_with("q5 "))
        .map(|l| format!("{l}\n"))
        .collect();
    let b = f.write("b.trec", &short);
    let err = fails(&["compare", "--qrels", &q, &a, &b]);
    assert!(
        err.contains("the runs cover different judged queries"),
        "{err}"
    );
    assert!(err.contains("a (") && err.contains(") has all 5"), "{err}");
    assert!(
        err.contains("b (") && err.contains(") lacks 2: q4, q5"),
        "{err}"
    );
    assert!(err.contains("pass -c"), "{err}");
    let out = ok(&["compare", "-c", "--qrels", &q, &a, &b, "-m", "recip_rank"]);
    assert!(
        out.contains("(-c: a query missing from a run counts 0; b lacks 2)"),
        "{out}"
    );
    // q1..q3 at rank 2 (1/2), q4, q5 missing (0): mean 0.3.
    assert!(out.contains("| recip_rank | b | 0.3000 |"), "{out}");
}

#[test]
fn too_few_runs_and_unknown_measures_exit_2() {
    let f = Files::new();
    let q = f.write("qrels", &qrels(2));
    let a = f.write("a.trec", &run(2, "a", |_| 1));
    let err = fails(&["compare", "--qrels", &q, &a]);
    assert!(err.contains("at least two runs"), "{err}");
    let err = fails(&["compare", "--qrels", &q, &a, &a, "-m", "mrr"]);
    assert!(
        err.contains(
            "unknown measure `mrr`; did you mean `recip_rank` or `RR`?; ranklab implements: num_ret, num_rel, num_rel_ret, map"
        ),
        "{err}"
    );
    let err = fails(&[
        "compare",
        "--qrels",
        &q,
        &a,
        &f.write("bad.trec", "q1 Q0 d1 1 NaN t\n"),
    ]);
    assert!(err.contains("bad.trec:1"), "{err}");
}

#[test]
fn csv_json_and_per_query() {
    let f = Files::new();
    let q = f.write("qrels", &qrels(3));
    let a = f.write("a.trec", &run(3, "a", |_| 1));
    let b = f.write("b.trec", &run(3, "b", |q| q));
    let csv = ok(&[
        "compare",
        "--qrels",
        &q,
        &a,
        &b,
        "-m",
        "recip_rank",
        "--format",
        "csv",
    ]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        "measure,run,path,queries,mean,delta,ci_low,ci_high,p,p_method,p_nonzero,p_holm,wins,ties,losses"
    );
    assert!(lines.next().unwrap().starts_with("recip_rank,a,"));
    let row: Vec<&str> = lines.next().unwrap().split(',').collect();
    // 1/2 and 1/3 lost on q2, q3: Δ = (−1/2 − 2/3)/3 = −0.3889; p = 2/4.
    assert_eq!(
        (row[4], row[5], row[8], row[9], row[10]),
        ("0.6111", "-0.3889", "0.5000", "exact", "2")
    );
    let per_query = ok(&[
        "compare",
        "--qrels",
        &q,
        &a,
        &b,
        "-m",
        "recip_rank",
        "--format",
        "csv",
        "--per-query",
    ]);
    assert_eq!(per_query, "query,measure,a,b,Δ b\nq1,recip_rank,1.0000,1.0000,0.0000\nq2,recip_rank,1.0000,0.5000,-0.5000\nq3,recip_rank,1.0000,0.3333,-0.6667\n");
    let md = ok(&[
        "compare",
        "--qrels",
        &q,
        &a,
        &b,
        "-m",
        "recip_rank",
        "--per-query",
    ]);
    assert!(
        md.contains("## Per query\n\n| query | measure | a | b | Δ b |\n"),
        "{md}"
    );
    assert!(
        md.contains("| q3 | recip_rank | 1.0000 | 0.3333 | -0.6667 |"),
        "{md}"
    );
    let json = ok(&[
        "compare",
        "--qrels",
        &q,
        &a,
        &b,
        "-m",
        "recip_rank",
        "--format",
        "json",
        "--per-query",
    ]);
    let j: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(j["summary"][1]["delta"], serde_json::json!(-0.3889));
    assert_eq!(j["per_query"].as_array().unwrap().len(), 3);
}

#[test]
fn baseline_mean_matches_trec_eval() {
    let d = trec_eval_data();
    let s = |n: &str| d.join(n).to_str().unwrap().to_string();
    // out.test.aqc: trec_eval -m all_trec -q -c qrels.test results.trunc.
    let expected = std::fs::read_to_string(d.join("out.test.aqc")).unwrap();
    // Both files have the stem `results`, so each is labelled by its path. A geometric mean is
    // trec_eval's too, not the mean of the per-query logs (attack pass, 2026-12-07), in the table
    // and in the all-pairs JSON.
    for m in ["map", "gm_map", "gm_bpref"] {
        let all = expected
            .lines()
            .find(|l| l.starts_with(&format!("{m} ")) && l.contains("\tall\t"))
            .unwrap();
        let value = all.rsplit('\t').next().unwrap();
        let out = ok(&[
            "compare",
            "-c",
            "--qrels",
            &s("qrels.test"),
            &s("results.trunc"),
            &s("results.test"),
            "-m",
            m,
        ]);
        assert!(
            out.contains(&format!(
                "| {m} | {} (baseline) | {value} |",
                s("results.trunc")
            )),
            "want {value}: {out}"
        );
        let out = ok(&[
            "compare",
            "-c",
            "--all-pairs",
            "--format",
            "json",
            "--qrels",
            &s("qrels.test"),
            &s("results.trunc"),
            &s("results.test"),
            "-m",
            m,
        ]);
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        let mean_a = j["pairs"][0]["mean_a"].as_f64().unwrap();
        assert_eq!(format!("{mean_a:.4}"), value, "{m}: {out}");
    }
}

/// 35 queries; the second run drops the relevant document to rank 2 on 7 of them: differences
/// -0.5 (7) and 0 (28), Δ -0.1, sd sqrt(1.4/34). Oracle (statsmodels 0.15.0 TTestPower, see
/// tests/fixtures/power/make.py): MDE = 0.4874661890 x sd = 0.0989; solve_power(effect_size
/// = 0.1/sd, power 0.8) = 34.29 queries, so 35 are needed.
#[test]
fn power_table_and_sentence_match_statsmodels() {
    let f = Files::new();
    let q = f.write("qrels", &qrels(35));
    let a = f.write("a.trec", &run(35, "a", |_| 1));
    let b = f.write("b.trec", &run(35, "b", |q| if q % 5 == 0 { 2 } else { 1 }));
    let out = ok(&["compare", "--qrels", &q, &a, &b, "-m", "recip_rank"]);
    assert!(
        out.contains("| recip_rank | b | -0.1000 | 0.2029 | 0.0989 | 35 |"),
        "{out}"
    );
    assert!(
        out.contains(
            "With 35 queries these runs detect Δ recip_rank ≥ 0.10 with 80% power at α = 0.05"
        ),
        "{out}"
    );
    assert!(out.contains("every observed Δ reaches it"), "{out}");
    let json = ok(&[
        "compare",
        "--qrels",
        &q,
        &a,
        &b,
        "-m",
        "recip_rank",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["power"][0]["mde"], serde_json::json!(0.0989));
    assert_eq!(v["power"][0]["queries_needed"], serde_json::json!(35));
}

#[test]
fn judged_at_k_and_the_unjudged_warning_by_hand() {
    let f = Files::new();
    // q1 judges d1 relevant and d2 not relevant (grade 0 still counts as judged); q2 judges d3.
    let q = f.write("qrels", "q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 1\n");
    // Baseline, top 3: q1 d1 d2 d9 -> 2 judged, 1 unjudged; q2 retrieves two, d3 d8 -> 1 judged,
    // 1 unjudged. Judged@3 = (2/3 + 1/3) / 2 = 0.5000; 2 unjudged.
    let base = f.write(
        "base.trec",
        "q1 Q0 d1 1 3 b\nq1 Q0 d2 2 2 b\nq1 Q0 d9 3 1 b\nq2 Q0 d3 1 2 b\nq2 Q0 d8 2 1 b\n",
    );
    // New: q1 d7 d1 d6 -> 1 judged, 2 unjudged (RR 1/2); q2 d5 d4 d3 -> 1 judged, 2 unjudged
    // (RR 1/3). Judged@3 = 1/3 = 0.3333; 4 unjudged; 0.1667 below the baseline: a warning, and
    // a loss (Δ RR = (-1/2 - 2/3) / 2 < 0).
    let new = f.write(
        "new.trec",
        "q1 Q0 d7 1 3 n\nq1 Q0 d1 2 2 n\nq1 Q0 d6 3 1 n\nq2 Q0 d5 1 3 n\nq2 Q0 d4 2 2 n\nq2 Q0 d3 3 1 n\n",
    );
    let args = [
        "compare",
        "--qrels",
        &q,
        &base,
        &new,
        "-m",
        "recip_rank",
        "--judged-at",
        "3",
    ];
    let out = ok(&args);
    assert!(out.contains("## Judged@3\n"), "{out}");
    assert!(out.contains("| base | 0.5000 | 2 |"), "{out}");
    assert!(out.contains("| new | 0.3333 | 4 |"), "{out}");
    assert!(
        out.contains("`new` has 4 unjudged documents in its top 3 across 2 queries, the baseline 2 (Judged@3 0.3333 against 0.5000, more than 0.02 below): its loss may be relevant documents nobody judged — judge them before trusting Δ"),
        "{out}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&ok(&[&args[..], &["--format", "json"]].concat())).unwrap();
    assert_eq!(json["judged_at"], 3);
    assert_eq!(json["judged"][1]["run"], "new");
    assert_eq!(json["judged"][1]["Judged@3"], 0.3333);
    assert_eq!(json["judged"][1]["unjudged@3"], 4);
    assert_eq!(json["judged"][0]["unjudged@3"], 2);
    assert!(json["judged_reading"]
        .as_str()
        .unwrap()
        .starts_with("`new` has 4 unjudged"));

    // The other half: the baseline against itself is not below by any margin, so no warning.
    // And at k = 1 the baseline's first documents (d1, d3) are judged and the new run's (d7,
    // d5) are not: 1.0000 and 0 unjudged against 0.0000 and 2.
    let same = ok(&[
        "compare",
        "--qrels",
        &q,
        &base,
        &base,
        "-m",
        "recip_rank",
        "--judged-at",
        "3",
    ]);
    assert!(!same.contains("unjudged documents in its top"), "{same}");
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "compare", "--qrels", &q, &base, &base, "--format", "json",
    ]))
    .unwrap();
    assert_eq!(json["judged_reading"], serde_json::Value::Null);
    let at1 = ok(&["compare", "--qrels", &q, &base, &new, "--judged-at", "1"]);
    assert!(at1.contains("| base | 1.0000 | 0 |"), "{at1}");
    assert!(at1.contains("| new | 0.0000 | 2 |"), "{at1}");
    // k = 0 is refused.
    fails(&["compare", "--qrels", &q, &base, &new, "--judged-at", "0"]);
}
