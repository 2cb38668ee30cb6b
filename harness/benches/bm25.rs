//! Criterion: BM25 search over the docir corpus (one group per stage: index build, search).
//! Each benchmark also checks the answer it computes, so a broken engine cannot look fast.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use ranklab::suite::Suite;
use ranklab_engine::lexical::{Bm25Params, LexicalIndex};

fn bm25(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let suite = Suite::load(&root.join("tasks/docir")).expect("docir suite");
    let corpus = suite.load_corpus().expect("docir corpus");
    let mut g = c.benchmark_group("bm25");
    g.bench_function("index_docir", |b| {
        b.iter(|| LexicalIndex::build(&corpus).expect("index"))
    });
    let index = LexicalIndex::build(&corpus).expect("index");
    // The answer check: BM25 must retrieve an expected document in the top 10 for most tasks.
    let found = suite
        .tasks
        .iter()
        .filter(|t| {
            let hits = index
                .search(&corpus, &t.query, 10, Bm25Params::default())
                .expect("search");
            hits.iter()
                .any(|h| t.expected.contains_key(corpus.id(h.doc)))
        })
        .count();
    assert!(
        found * 2 > suite.tasks.len(),
        "BM25 finds only {found} of {} tasks",
        suite.tasks.len()
    );
    g.bench_function("search_all_docir_tasks", |b| {
        b.iter(|| {
            for t in &suite.tasks {
                std::hint::black_box(
                    index
                        .search(&corpus, &t.query, 100, Bm25Params::default())
                        .expect("search"),
                );
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bm25);
criterion_main!(benches);
