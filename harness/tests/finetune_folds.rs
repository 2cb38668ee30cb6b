//! Fine-tuning's training data on docir's real tasks (issue 27, item 3): the leak test. Each
//! fold's pairs come from BM25's lists of the other folds' tasks only, and no negative is a
//! document its task judges relevant. Oracles: the suite's own judgments and task queries, read
//! here; set membership computed here. BM25 only: no model.

use std::collections::BTreeMap;

use ranklab::finetune::{folds, TaskData};
use ranklab::replay::{replay, Replayer};
use ranklab::suite::{Experiments, Suite};

#[test]
fn no_fold_trains_on_the_queries_it_reranks_no_leak_on_docir() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = Suite::load(&root.join("tasks/docir/suite.yaml")).unwrap();
    let corpus = suite.load_corpus().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("experiments.yaml");
    std::fs::write(
        &file,
        "experiment: e\nconfigurations:\n  - name: bm25\n    retriever: bm25\n",
    )
    .unwrap();
    let ex = Experiments::load(&file).unwrap();
    let engine = Replayer::build(&corpus, &[&ex]).unwrap();
    let r = replay(&engine, &suite, &ex).unwrap();
    let tasks: Vec<TaskData> = suite
        .tasks
        .iter()
        .zip(&r.runs[0].per_task)
        .map(|(t, ranked)| {
            let list: Vec<(String, String)> = ranked
                .iter()
                .map(|h| {
                    (
                        corpus.id(h.doc).to_string(),
                        corpus.docs[h.doc].section_text(h.section),
                    )
                })
                .collect();
            let positives: BTreeMap<String, String> = list
                .iter()
                .filter(|(id, _)| t.expected.get(id).is_some_and(|&g| g >= 1))
                .cloned()
                .collect();
            TaskData {
                id: t.id.clone(),
                query: t.query.clone(),
                judged: t.expected.clone().into_iter().collect(),
                ranked: list,
                positives,
            }
        })
        .collect();
    let f = folds(&tasks, 5, 7, 42);
    assert_eq!(f.len(), 5);
    let queries_of =
        |idx: &[usize]| -> Vec<&str> { idx.iter().map(|&i| tasks[i].query.as_str()).collect() };
    for fold in &f {
        let held = queries_of(&fold.held_out);
        assert!(
            fold.held_out.len() == 7,
            "35 tasks in 5 folds of 7: {:?}",
            fold.held_out
        );
        assert!(
            fold.pairs.iter().all(|p| !held.contains(&p.query.as_str())),
            "a leak"
        );
        assert!(fold.positives > 0 && fold.pairs.len() > fold.positives);
        // No negative is a passage of a document its task judges relevant.
        for p in fold.pairs.iter().filter(|p| p.label == 0.0) {
            let t = tasks.iter().find(|t| t.query == p.query).unwrap();
            let relevant: Vec<&String> = t.positives.values().collect();
            assert!(!relevant.contains(&&p.passage), "{} / {}", t.id, p.passage);
        }
    }
}
