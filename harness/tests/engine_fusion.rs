//! Weighted fusion over lists beyond BM25 and dense (issue 44 item 1): an external engine's list
//! (`weights: { bm25, dense, engine }` beside `engine:`), the engine's and a rerank stage's
//! together, and two rerankers over one shortlist (`rerankers:`), replayed from recordings (no
//! engine runs, no pair is scored here).
//! Properties checked:
//! - the committed run of docir's `wsum-minisearch` (tasks/docir/experiments-engine-fusion.yaml,
//!   written by `ranklab run --from-recording`) is, task by task, the hand sum
//!   0.3 · minmax(BM25) + 0.4 · minmax(dense) + 0.3 · minmax(MiniSearch), computed here from the
//!   committed runs `bm25.trec` and `dense.trec` (each list's 100 scores) and from the engine's
//!   raw responses in the committed `minisearch.recording.json` (read with serde_json, hits
//!   ordered by score descending then id descending, cut at 100), a document missing from a list
//!   at that list's minimum (0 after min-max), in score-descending, id-descending order, cut at
//!   100;
//! - the committed tuning over those three lists (`reports/docir/tune-engine-fusion.json`, from
//!   tasks/docir/tune-engine-fusion.yaml): its held-out lists partition the tasks, and every
//!   task's out-of-fold value is the reciprocal rank of its first relevant document
//!   (`reports/docir/qrels.txt`, grade > 0) in the same hand sum under its own fold's chosen
//!   weights; their mean is the reported out-of-fold MRR;
//! - the committed run of `wsum-minisearch+L12@20` (the same file), which weighs the engine and
//!   the L-12 cross-encoder's scores over the top 20 of the RRF fusion, is the hand sum
//!   0.2 · minmax(BM25) + 0.3 · minmax(dense) + 0.2 · minmax(L-12) + 0.3 · minmax(MiniSearch),
//!   the L-12 list read from the committed run `fusion+L12@20.trec` (its shortlist's logits);
//! - the committed run of `wsum+L12+colbert@20` (tasks/docir/experiments-fusion-rerank.yaml) is
//!   the hand sum over bm25.trec, dense.trec and the shortlist scores of the committed runs
//!   `fusion+L12@20.trec` and `fusion+colbert@20.trec`; the tunings of the four-list fusions
//!   (`tune-engine-rerank-fusion.json`, `tune-rerankers-fusion.json`) check as above;
//! - a `rerankers:` list with a near-miss name, without a weight, or wider than the depth is
//!   refused at the configuration's line, exit 2;
//! - an `engine` weight without `engine:` is refused at the configuration's file:line with
//!   exit 2, an unknown list name near `engine` gets "did you mean", and a fusion whose engine
//!   has no recording (none by its name, none with its engine hash) is an error naming the hash,
//!   never an empty list.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Lists = BTreeMap<String, Vec<(String, f64)>>;

fn runs_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/docir/runs")
}

/// task -> [(doc, score)] in file order, scores read as the f32 the run was written from.
fn run(name: &str) -> Lists {
    let path = runs_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let mut out: Lists = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        out.entry(f[0].to_string())
            .or_default()
            .push((f[2].to_string(), f64::from(f[4].parse::<f32>().unwrap())));
    }
    out
}

/// task -> the engine's hits from the recording's responses: score descending, then id
/// descending, at most 100, scores as f32 (what a run holds).
fn recorded(name: &str) -> Lists {
    let path = runs_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut out = BTreeMap::new();
    for x in v["exchanges"].as_array().unwrap() {
        let mut hits: Vec<(String, f64)> = x["response"]["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                let s = h["score"].as_f64().unwrap() as f32;
                (h["id"].as_str().unwrap().to_string(), f64::from(s))
            })
            .collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
        hits.truncate(100);
        out.insert(x["task"].as_str().unwrap().to_string(), hits);
    }
    out
}

/// doc -> min-max normalized score (a list of equal scores gives 0).
fn minmax(list: &[(String, f64)]) -> BTreeMap<String, f64> {
    let lo = list.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let hi = list.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    list.iter()
        .map(|(d, x)| (d.clone(), if hi > lo { (x - lo) / (hi - lo) } else { 0.0 }))
        .collect()
}

/// The hand sum Σ w_i · minmax(list_i) of one task's lists (wb · minmax(b) + wd · minmax(d) +
/// we · minmax(e) for bm25, dense and the engine), a document missing from a list at 0 there,
/// ordered by the f32 sum descending, then id descending, cut at 100.
fn hand_sum(lists: &[&[(String, f64)]], w: &[f64]) -> Vec<(String, f64)> {
    let normalized: Vec<BTreeMap<String, f64>> = lists.iter().map(|l| minmax(l)).collect();
    let docs: BTreeSet<&String> = normalized.iter().flat_map(|m| m.keys()).collect();
    let get = |m: &BTreeMap<String, f64>, x: &str| m.get(x).copied().unwrap_or(0.0);
    let mut want: Vec<(String, f64)> = docs
        .into_iter()
        .map(|x| {
            let s = w.iter().zip(&normalized).map(|(w, m)| w * get(m, x)).sum();
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

/// Checks the committed tuning `reports/docir/<file>`: its held-out lists partition the tasks,
/// and every task's out-of-fold value is the reciprocal rank of its first relevant document
/// (`reports/docir/qrels.txt`, grade > 0) in the hand sum of `lists` (task -> list, one per
/// weight name of `names`) under its own fold's chosen weights; their mean is the reported
/// out-of-fold MRR.
fn check_tuning(file: &str, names: &[&str], lists: &[&Lists]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/docir");
    let mut relevant: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in std::fs::read_to_string(root.join("qrels.txt"))
        .unwrap()
        .lines()
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f[3].parse::<i32>().unwrap() > 0 {
            relevant.entry(f[0].into()).or_default().insert(f[2].into());
        }
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join(file)).unwrap()).unwrap();
    let mut seen = BTreeSet::new();
    let mut sum = 0.0;
    for fold in json["folds"].as_array().unwrap() {
        let c = &fold["chosen"];
        let w: Vec<f64> = names
            .iter()
            .map(|l| c[format!("fusion.weights.{l}")].as_f64().unwrap())
            .collect();
        for t in fold["held_out"].as_array().unwrap() {
            let t = t.as_str().unwrap();
            assert!(seen.insert(t.to_string()), "{t} held out twice");
            let task_lists: Vec<&[(String, f64)]> = lists.iter().map(|l| &l[t][..]).collect();
            let ranked = hand_sum(&task_lists, &w);
            let rr = ranked
                .iter()
                .position(|(d, _)| relevant[t].contains(d))
                .map_or(0.0, |i| 1.0 / (i + 1) as f64);
            let got = json["per_task"][t].as_f64().unwrap();
            assert!((got - rr).abs() < 1e-12, "{file} {t}: {got} vs hand {rr}");
            sum += rr;
        }
    }
    assert_eq!(
        seen.len(),
        lists[0].len(),
        "the held-out lists cover every task"
    );
    let mean = sum / seen.len() as f64;
    let reported = json["out_of_fold"]["MRR"].as_f64().unwrap();
    assert!((mean - reported).abs() < 1e-12, "{mean} vs {reported}");
}

/// task -> the first `n` lines of committed run `name`: for a plain rerank configuration over
/// a shortlist of `n`, its reranker's scores (below them the run holds first-stage scores).
fn shortlist(name: &str, n: usize) -> Lists {
    run(name)
        .into_iter()
        .map(|(t, mut l)| {
            l.truncate(n);
            (t, l)
        })
        .collect()
}

#[test]
fn docir_engine_tuning_out_of_fold_values_are_reciprocal_ranks_under_each_folds_weights() {
    let (bm25, dense) = (run("bm25.trec"), run("dense.trec"));
    let engine = recorded("minisearch.recording.json");
    let names = ["bm25", "dense", "engine"];
    check_tuning("tune-engine-fusion.json", &names, &[&bm25, &dense, &engine]);
    // The four-list tuning (bm25, dense, the L-12's shortlist scores, MiniSearch).
    let l12 = shortlist("fusion+L12@20.trec", 20);
    let names = ["bm25", "dense", "rerank", "engine"];
    let lists = [&bm25, &dense, &l12, &engine];
    check_tuning("tune-engine-rerank-fusion.json", &names, &lists);
}

/// Two rerankers over one shortlist (`rerankers: { cross-encoder, colbert }`, docir's
/// `wsum+L12+colbert@20` in tasks/docir/experiments-fusion-rerank.yaml, weights 0.3, 0.3, 0.2,
/// 0.2): its committed run is the hand sum of bm25.trec, dense.trec and the first 20 lines of
/// the committed runs `fusion+L12@20.trec` and `fusion+colbert@20.trec` (each model's scores
/// over the top 20 of the same RRF fusion); and the committed tuning of its four weights
/// (`tune-rerankers-fusion.json`) holds out every task once, each scored under its fold's
/// weights in the same hand sum.
#[test]
fn docir_two_rerankers_fusion_is_the_hand_sum_of_both_rerank_runs_scores() {
    let (bm25, dense) = (run("bm25.trec"), run("dense.trec"));
    let (l12, colbert) = (
        shortlist("fusion+L12@20.trec", 20),
        shortlist("fusion+colbert@20.trec", 20),
    );
    let got = run("wsum+L12+colbert@20.trec");
    assert_eq!(got.len(), bm25.len());
    for (task, g) in &got {
        let lists: [&[(String, f64)]; 4] = [&bm25[task], &dense[task], &l12[task], &colbert[task]];
        let want = hand_sum(&lists, &[0.3, 0.3, 0.2, 0.2]);
        assert_eq!(g.len(), want.len(), "{task}");
        for (i, ((gd, gs), (wd, ws))) in g.iter().zip(&want).enumerate() {
            assert_eq!(gd, wd, "{task} rank {}", i + 1);
            assert!((gs - ws).abs() < 1e-5, "{task} {gd}: {gs} vs {ws}");
        }
    }
    // ColBERT's list moved something: without it the order differs on some task.
    let moved = got.iter().any(|(task, g)| {
        let three: [&[(String, f64)]; 3] = [&bm25[task], &dense[task], &l12[task]];
        let w = hand_sum(&three, &[0.3, 0.3, 0.2]);
        g.iter().map(|x| &x.0).ne(w.iter().map(|x| &x.0))
    });
    assert!(moved, "the ColBERT list changed no task's order");
    let names = ["bm25", "dense", "cross-encoder", "colbert"];
    let lists = [&bm25, &dense, &l12, &colbert];
    check_tuning("tune-rerankers-fusion.json", &names, &lists);
}

#[test]
fn docir_engine_weighted_run_is_the_hand_sum_of_bm25_dense_and_the_recorded_engine() {
    let (bm25, dense) = (run("bm25.trec"), run("dense.trec"));
    let engine = recorded("minisearch.recording.json");
    let got = run("wsum-minisearch.trec");
    assert_eq!(got.len(), bm25.len());
    assert_eq!(engine.len(), bm25.len());
    for (task, g) in &got {
        let want = hand_sum(
            &[&bm25[task], &dense[task], &engine[task]],
            &[0.3, 0.4, 0.3],
        );
        assert_eq!(g.len(), want.len(), "{task}");
        for (i, ((gd, gs), (wd, ws))) in g.iter().zip(&want).enumerate() {
            assert_eq!(gd, wd, "{task} rank {}", i + 1);
            assert!((gs - ws).abs() < 1e-5, "{task} {gd}: {gs} vs {ws}");
        }
    }
}

/// The committed run of docir's `wsum-minisearch+L12@20` (weights bm25 0.2, dense 0.3, rerank
/// 0.2, engine 0.3; tasks/docir/experiments-engine-fusion.yaml) against the hand sum over four
/// lists: bm25.trec, dense.trec, MiniSearch's raw recorded responses, and the reranker's list,
/// read from the committed run `fusion+L12@20.trec` (experiments.yaml: the L-12 cross-encoder
/// over the top 20 of the same RRF fusion, the shortlist this fusion cuts): its first 20 lines
/// per task, whose scores are the logits (below them the run holds first-stage scores).
#[test]
fn docir_engine_and_rerank_weighted_run_is_the_hand_sum_of_four_lists() {
    let (bm25, dense) = (run("bm25.trec"), run("dense.trec"));
    let engine = recorded("minisearch.recording.json");
    let rerank = shortlist("fusion+L12@20.trec", 20);
    let got = run("wsum-minisearch+L12@20.trec");
    assert_eq!(got.len(), bm25.len());
    for (task, g) in &got {
        let lists: [&[(String, f64)]; 4] =
            [&bm25[task], &dense[task], &rerank[task], &engine[task]];
        let want = hand_sum(&lists, &[0.2, 0.3, 0.2, 0.3]);
        assert_eq!(g.len(), want.len(), "{task}");
        for (i, ((gd, gs), (wd, ws))) in g.iter().zip(&want).enumerate() {
            assert_eq!(gd, wd, "{task} rank {}", i + 1);
            assert!((gs - ws).abs() < 1e-5, "{task} {gd}: {gs} vs {ws}");
        }
    }
    // The reranker's list moved something: without it the order differs on some task.
    let moved = got.iter().any(|(task, g)| {
        let three: [&[(String, f64)]; 3] = [&bm25[task], &dense[task], &engine[task]];
        let w = hand_sum(&three, &[0.2, 0.3, 0.3]);
        g.iter().map(|x| &x.0).ne(w.iter().map(|x| &x.0))
    });
    assert!(moved, "the rerank list changed no task's order");
}

/// Runs `ranklab run tasks/docir -x x.yaml --from-recording` on a file holding `configuration`
/// after a BM25 configuration, in a temporary report tree that reads docir's recordings; gives
/// the exit code and stderr (the file's path written `x.yaml`).
fn replay(configuration: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.yaml");
    std::fs::write(
        &x,
        format!(
            "experiment: x\nconfigurations:\n  - name: a\n    retriever: bm25\n{configuration}"
        ),
    )
    .unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let reports = dir.path().join("reports");
    let o = common::ranklab(
        &root,
        &[
            "run",
            "tasks/docir",
            "-x",
            x.to_str().unwrap(),
            "--from-recording",
            "--reports",
            reports.to_str().unwrap(),
            "--recordings",
            root.join("reports").to_str().unwrap(),
        ],
    );
    let e = common::stderr(&o).replace(&x.display().to_string(), "x.yaml");
    (common::code(&o), e)
}

#[test]
fn an_engine_weight_needs_an_engine_and_a_near_name_gets_a_suggestion() {
    let (code, e) = replay("  - name: w\n    retriever: fusion\n    fusion: { method: weighted, weights: { bm25: 1, engine: 1 } }\n");
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("x.yaml:5: configuration \"w\" weighs the \"engine\" list and has no `engine:`"),
        "{e}"
    );
    let (code, e) = replay("  - name: w\n    retriever: fusion\n    fusion: { method: weighted, weights: { bm25: 1, engnie: 1 } }\n");
    assert_eq!(code, 2, "{e}");
    assert!(e.contains("x.yaml:5: fusion weight for \"engnie\""), "{e}");
    assert!(e.contains("did you mean \"engine\"?"), "{e}");
}

/// `rerankers:` names lists `cross-encoder` and `colbert` only, each weighed: a near name gets
/// "did you mean", a weighed family without its model and a reranker without a weight are
/// refused at the configuration's line, exit 2.
#[test]
fn a_rerankers_list_is_named_weighed_and_checked_at_the_line() {
    let fusion = |weights: &str, rerankers: &str| {
        format!("  - name: w\n    retriever: fusion\n    fusion: {{ method: weighted, weights: {{ {weights} }}, rerankers: {{ {rerankers} }} }}\n")
    };
    let l12 = "{ model: ms-marco-MiniLM-L-12-v2, shortlist: 20 }";
    let (code, e) = replay(&fusion("bm25: 1, colbret: 1", &format!("colbret: {l12}")));
    assert_eq!(code, 2, "{e}");
    assert!(e.contains("x.yaml:5: fusion"), "{e}");
    assert!(e.contains("did you mean \"colbert\"?"), "{e}");
    let (code, e) = replay(&fusion(
        "bm25: 1, colbert: 1",
        &format!("cross-encoder: {l12}"),
    ));
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("x.yaml:5: fusion reranker \"cross-encoder\" has no weight"),
        "{e}"
    );
    let (code, e) = replay(&fusion(
        "bm25: 1, cross-encoder: 1",
        "cross-encoder: { model: ms-marco-MiniLM-L-12-v2, shortlist: 200 }",
    ));
    assert_eq!(code, 2, "{e}");
    assert!(
        e.contains("shortlist 200 must be between 1 and the depth 100"),
        "{e}"
    );
}

/// The engine below is MiniSearch's with another depth, so its hash matches no recording: the
/// replay fails naming the missing file and the hash, and writes no report.
#[test]
fn a_fusion_whose_engine_has_no_recording_is_an_error_naming_the_hash() {
    let engine = "    engine: { command: [node, serve.js, ../../../corpora/docir], cwd: ../../examples/engines/minisearch }\n";
    let (code, e) = replay(&format!(
        "  - name: w\n    retriever: fusion\n    depth: 50\n{engine}    fusion: {{ method: weighted, weights: {{ bm25: 1, engine: 1 }} }}\n"
    ));
    assert_eq!(code, 2, "{e}");
    assert!(e.contains("configuration \"w\": no recording at"), "{e}");
    assert!(e.contains("has its engine hash"), "{e}");
}
