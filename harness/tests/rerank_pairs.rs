//! Each piece of work once: on the docir suite, each rerank model (the L-12 cross-encoder,
//! ColBERT) is asked for exactly Σ over tasks of min(its widest shortlist, candidates
//! available) pairs — L-12's widths 12 and 8 reuse the scores of width 20 — and a second replay
//! in the same cache does no model work at all.
//! Uses the real models (fetched on first use) and the real cache.

use std::path::Path;

use ranklab::replay::{replay, Replayer};
use ranklab::suite::{Experiments, Suite};

#[test]
fn docir_scores_each_pair_once_and_a_rerun_scores_none() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = Suite::load(&root.join("tasks/docir")).unwrap();
    let ex = Experiments::load(&root.join("tasks/docir/experiments.yaml")).unwrap();
    let corpus = suite.load_corpus().unwrap();
    let mut widest: std::collections::BTreeMap<String, usize> = Default::default();
    for r in ex.configurations.iter().filter_map(|c| c.rerank.as_ref()) {
        let w = widest.entry(r.model_key()).or_default();
        *w = (*w).max(r.shortlist);
    }
    assert!(
        widest.len() >= 2 && widest.values().all(|&w| w == 20),
        "the ADR experiment reranks the top 20 with each model: {widest:?}"
    );
    let widest = 20;

    let engine = Replayer::build(&corpus, &[&ex]).unwrap();
    let r = replay(&engine, &suite, &ex).unwrap();
    let fusion = r.runs.iter().find(|x| x.config.name == "fusion").unwrap();
    let models = r.shortlists.len();
    assert_eq!(models, widest_models(&ex), "every rerank model scored");
    let expected: usize = models
        * fusion
            .per_task
            .iter()
            .map(|list| list.len().min(widest))
            .sum::<usize>();
    let first = engine.pair_stats();
    assert_eq!(first.scored + first.cached, expected, "{first}");
    engine.finish().unwrap();

    // A second replay in a fresh engine over the same cache: every pair comes from the cache.
    let engine = Replayer::build(&corpus, &[&ex]).unwrap();
    let again = replay(&engine, &suite, &ex).unwrap();
    let second = engine.pair_stats();
    assert_eq!((second.scored, second.cached), (0, expected), "{second}");
    // Same inputs, same rankings.
    for (a, b) in r.runs.iter().zip(&again.runs) {
        assert_eq!(a.per_task, b.per_task, "{}", a.config.name);
    }
    // Rerank only reorders the shortlist: below it the fused order is kept.
    for run in r.runs.iter().filter(|x| x.config.rerank.is_some()) {
        let w = run.config.rerank.as_ref().unwrap().shortlist;
        for (t, list) in run.per_task.iter().enumerate() {
            let tail: Vec<usize> = list.iter().skip(w).map(|x| x.doc).collect();
            let fused: Vec<usize> = fusion.per_task[t].iter().skip(w).map(|x| x.doc).collect();
            assert_eq!(tail, fused, "{} task {t}", run.config.name);
        }
    }
}

/// The number of distinct rerank models the experiments file names.
fn widest_models(ex: &Experiments) -> usize {
    ex.configurations
        .iter()
        .filter_map(|c| c.rerank.as_ref().map(|r| r.model_key()))
        .collect::<std::collections::BTreeSet<_>>()
        .len()
}
