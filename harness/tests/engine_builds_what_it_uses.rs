//! An engine builds only the indexes its configurations use: a dense-only run builds no BM25
//! index, a BM25-only run no section vectors and no model, the Lucene analyzer's index only
//! when a configuration names it, and fusion both BM25 and vectors. On the docir corpus with
//! the real bi-encoder (its vectors come from the cache when it is warm).

use std::path::Path;

use ranklab::replay::Replayer;
use ranklab::suite::beir::configuration;
use ranklab::suite::{Experiments, Suite};

fn experiments(names: &[&str]) -> Experiments {
    Experiments {
        experiment: "uses".into(),
        baseline: None,
        description: None,
        configurations: names.iter().map(|n| configuration(n).unwrap()).collect(),
        distractors: None,
        path: "uses.yaml".into(),
    }
}

#[test]
fn each_run_builds_the_indexes_its_configurations_use_and_no_other() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus = Suite::load(&root.join("tasks/docir"))
        .unwrap()
        .load_corpus()
        .unwrap();
    // (configurations, English BM25, Lucene BM25, bi-encoder)
    let cases: [(&[&str], bool, bool, bool); 4] = [
        (&["dense"], false, false, true),
        (&["bm25"], true, false, false),
        (&["bm25-lucene"], false, true, false),
        (&["fusion"], true, false, true),
    ];
    for (names, english, lucene, dense) in cases {
        let ex = experiments(names);
        let engine = Replayer::build(&corpus, &[&ex]).unwrap();
        let built = (
            engine.lexical.is_some(),
            engine.lexical_lucene.is_some(),
            !engine.dense.is_empty(),
        );
        assert_eq!(built, (english, lucene, dense), "{names:?}");
        assert!(engine.rerankers.is_empty());
    }
}
