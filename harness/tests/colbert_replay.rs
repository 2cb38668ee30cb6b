//! `rerank: { model: answerai-colbert-small-v1, shortlist: 20 }` in an experiments file runs the
//! late-interaction model: on the docir suite, the reranked head of every task holds the fused
//! top 20, ordered by score, each score the one the model gives (called directly) for (the
//! task's query, the section that won the document its fused rank); the tail keeps the fused
//! order; a second replay over the same cache scores no pair. Uses the real model (fetched on
//! first use) in a temporary cache whose `models/` and `runtime/` link to the real ones.

use std::path::Path;

use ranklab::replay::{replay, Replayer};
use ranklab::suite::{Experiments, Suite};
use ranklab_engine::models::{self, ModelStore};
use ranklab_engine::rerank::{ColbertReranker, CrossEncoder};

const EXPERIMENTS: &str = "experiment: colbert
description: fusion and fusion + ColBERT over the top 20
baseline: fusion
configurations:
  - name: fusion
    retriever: fusion
  - name: fusion+colbert@20
    retriever: fusion
    rerank: { model: answerai-colbert-small-v1, shortlist: 20 }
";

#[test]
fn a_colbert_rerank_stage_reorders_the_fused_top_20_by_the_models_scores() {
    let real = models::cache_root().unwrap();
    let colbert = ModelStore::at(&real)
        .ensure_model("answerai-colbert-small-v1")
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for d in ["models", "runtime"] {
        std::os::unix::fs::symlink(real.join(d), tmp.path().join(d)).unwrap();
    }
    // This test binary's only test: the variable is set before any model code reads it.
    std::env::set_var("RANKLAB_CACHE", tmp.path());

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = Suite::load(&root.join("tasks/docir")).unwrap();
    let file = tmp.path().join("experiments.yaml");
    std::fs::write(&file, EXPERIMENTS).unwrap();
    let ex = Experiments::load(&file).unwrap();
    let corpus = suite.load_corpus().unwrap();

    let engine = Replayer::build(&corpus, &[&ex]).unwrap();
    let r = replay(&engine, &suite, &ex).unwrap();
    engine.finish().unwrap();
    let fusion = &r.runs[0].per_task;
    let reranked = &r.runs[1].per_task;

    let mut direct = ColbertReranker::load(&colbert, Some(1)).unwrap();
    for (t, task) in suite.tasks.iter().enumerate() {
        let (head, tail) = reranked[t].split_at(20.min(reranked[t].len()));
        let w = head.len();
        let mut fused_head: Vec<usize> = fusion[t][..w].iter().map(|x| x.doc).collect();
        let mut got_head: Vec<usize> = head.iter().map(|x| x.doc).collect();
        fused_head.sort_unstable();
        got_head.sort_unstable();
        assert_eq!(
            got_head, fused_head,
            "task {}: the head is the fused top {w}",
            task.id
        );
        let scores: Vec<f32> = head.iter().map(|x| x.rerank_score.unwrap()).collect();
        assert!(
            scores.windows(2).all(|p| p[0] >= p[1]),
            "task {}: {scores:?}",
            task.id
        );
        let fused_tail: Vec<usize> = fusion[t][w..].iter().map(|x| x.doc).collect();
        let got_tail: Vec<usize> = tail.iter().map(|x| x.doc).collect();
        assert_eq!(
            got_tail, fused_tail,
            "task {}: the tail keeps the fused order",
            task.id
        );
        if t < 3 {
            for x in head {
                let f = fusion[t].iter().find(|f| f.doc == x.doc).unwrap();
                let passage = corpus.docs[x.doc].section_text(f.section);
                let want = direct.score(&task.query, &[passage.as_str()]).unwrap()[0];
                assert_eq!(
                    x.rerank_score.unwrap().to_bits(),
                    want.to_bits(),
                    "task {}",
                    task.id
                );
            }
        }
    }
    assert!(r.models["answerai-colbert-small-v1"].contains("no-projection"));

    let engine = Replayer::build(&corpus, &[&ex]).unwrap();
    replay(&engine, &suite, &ex).unwrap();
    let again = engine.pair_stats();
    assert_eq!(again.scored, 0, "{again}");
}
