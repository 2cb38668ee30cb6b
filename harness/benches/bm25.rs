//! Criterion: BM25 over the docir corpus (index build, search) and, when the shared data is
//! present (`RANKLAB_SHARED_DATA`, default `../shared/data`), SciFact's 300 test queries: the
//! top-k search beside the previous full-sort search it replaced (`search_by_full_sort`).
//! Each benchmark also checks the answer it computes, so a broken engine cannot look fast.

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use ranklab::suite::Suite;
use ranklab_engine::corpus::beir;
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
    g.bench_function("search_all_docir_tasks_full_sort", |b| {
        b.iter(|| {
            for t in &suite.tasks {
                std::hint::black_box(
                    index
                        .search_by_full_sort(&corpus, &t.query, 100, Bm25Params::default())
                        .expect("search"),
                );
            }
        })
    });
    g.finish();
    scifact(c, &root);
}

/// SciFact's 300 test queries at depth 100 (what `ranklab beir` retrieves), both searches.
fn scifact(c: &mut Criterion, root: &Path) {
    let shared = std::env::var_os("RANKLAB_SHARED_DATA")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/data"));
    let dir = shared.join("scifact");
    if !dir.join("corpus.jsonl").exists() {
        eprintln!(
            "bm25 bench: {} absent, SciFact group skipped",
            dir.display()
        );
        return;
    }
    let col = beir::load_collection(&dir, "test").expect("scifact");
    let index = LexicalIndex::build(&col.corpus).expect("index");
    let p = Bm25Params::default();
    // The answer check: both searches return the same lists.
    for q in &col.queries {
        let a = index.search(&col.corpus, &q.text, 100, p).expect("search");
        let b = index
            .search_by_full_sort(&col.corpus, &q.text, 100, p)
            .expect("search");
        assert_eq!(a, b, "query {}", q.id);
    }
    let mut g = c.benchmark_group("bm25_scifact");
    g.sample_size(20);
    g.bench_function("index_scifact", |b| {
        b.iter(|| LexicalIndex::build(&col.corpus).expect("index"))
    });
    // The index a warm `ranklab beir` uses: loaded from its cache file and checked (sha256,
    // key, every section once), beside the build above. The file goes to a temporary dir.
    let cache = tempfile::tempdir().expect("tempdir");
    let analyzer = ranklab_engine::lexical::Analyzer::English;
    let (_, first) = LexicalIndex::cached(&col.corpus, analyzer, cache.path()).expect("cache");
    assert!(
        matches!(first, ranklab_engine::lexical::IndexCache::Built(_)),
        "{first:?}"
    );
    g.bench_function("index_scifact_from_cache", |b| {
        b.iter(|| {
            let (index, outcome) =
                LexicalIndex::cached(&col.corpus, analyzer, cache.path()).expect("cache");
            assert!(matches!(
                outcome,
                ranklab_engine::lexical::IndexCache::Loaded(_)
            ));
            index
        })
    });
    g.bench_function("search_300_queries_top100", |b| {
        b.iter(|| {
            for q in &col.queries {
                std::hint::black_box(index.search(&col.corpus, &q.text, 100, p).expect("search"));
            }
        })
    });
    g.bench_function("search_300_queries_top100_full_sort", |b| {
        b.iter(|| {
            for q in &col.queries {
                std::hint::black_box(
                    index
                        .search_by_full_sort(&col.corpus, &q.text, 100, p)
                        .expect("search"),
                );
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bm25);
criterion_main!(benches);
