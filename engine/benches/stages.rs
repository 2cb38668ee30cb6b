//! Criterion: the engine's stages after the first-stage index, one group each:
//! - `dense`: exact cosine search (`DenseIndex::search`) of SciFact's 300 test queries over its
//!   5,183 section vectors at depth 1000 (what `ranklab beir` asks), dimension 384;
//! - `fusion`: reciprocal rank fusion (`fusion::rrf`) of the BM25 and dense lists of those
//!   queries, depth 1000 each;
//! - `policy`: the two wirings (`policy::current::rank`, `policy::legacy::rank`) over BM25's top
//!   100 for one query per record of the docir corpus (its titles), with demotion weights.
//!
//! The vectors come from the test stand-in embedder (`dense::testing::HashEmbedder`, a hashed
//! bag of words) at the real model's dimension: the search's cost depends on the matrix's
//! shape, not on the values, and the bench must not load a model. The ONNX work has its own
//! bench (`rerank`) and its side-by-side figures (bench/scifact-rerank, bench/warm-runs).
//!
//! Each group checks its answer before timing: dense search equals a full sort of every
//! document's score; the fused scores equal a hand-written sum of 1/(60 + rank) per document;
//! each wiring returns a permutation of its candidates in descending score.
//!
//! SciFact is read from `RANKLAB_SHARED_DATA` (default `../shared/data`); without it the dense
//! and fusion groups are skipped. Run: `cargo bench -p ranklab-engine --bench stages`.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ranklab_engine::corpus::{beir, Corpus};
use ranklab_engine::dense::testing::HashEmbedder;
use ranklab_engine::dense::{DenseIndex, EmbeddingCache};
use ranklab_engine::fusion::{rrf, rrf_ranked, RrfParams};
use ranklab_engine::lexical::{Bm25Params, LexicalIndex};
use ranklab_engine::policy::{current, legacy, Weights};
use ranklab_engine::ranking::{sort_hits, Hit};

const DIM: usize = 384;
const DEPTH: usize = 1000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn scifact(c: &mut Criterion) {
    let shared = std::env::var_os("RANKLAB_SHARED_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/data"));
    let dir = shared.join("scifact");
    if !dir.join("corpus.jsonl").exists() {
        eprintln!(
            "stages bench: {} absent, dense and fusion skipped",
            dir.display()
        );
        return;
    }
    let col = beir::load_collection(&dir, "test").expect("scifact");
    let corpus = &col.corpus;
    let mut embedder = HashEmbedder::new(DIM);
    let cache = EmbeddingCache::in_memory(&embedder);
    let (dense, _) = DenseIndex::build(corpus, &mut embedder, &cache).expect("dense index");
    let queries: Vec<Vec<f32>> = col
        .queries
        .iter()
        .map(|q| embedder.vector(&q.text))
        .collect();
    dense_group(c, &dense, &queries, corpus);
    let lexical = LexicalIndex::build(corpus).expect("bm25 index");
    let lists: Vec<(Vec<Hit>, Vec<Hit>)> = col
        .queries
        .iter()
        .zip(&queries)
        .map(|(q, v)| {
            let bm25 = lexical
                .search(corpus, &q.text, DEPTH, Bm25Params::default())
                .expect("bm25");
            (bm25, dense.search(v, DEPTH))
        })
        .collect();
    fusion_group(c, &lists, corpus);
}

/// SciFact's 300 queries through the dense index, one at a time and in blocks, after checking
/// its answers against a plain sort of every document.
fn dense_group(c: &mut Criterion, dense: &DenseIndex, queries: &[Vec<f32>], corpus: &Corpus) {
    let id = |d: usize| corpus.id(d);
    // The answer check: the top 100 are the first 100 of every document sorted.
    for q in queries.iter().take(20) {
        let mut all = dense.score_all(q);
        sort_hits(&mut all, id);
        all.truncate(100);
        assert_eq!(dense.search(q, 100), all);
    }
    let mut g = c.benchmark_group("dense");
    g.sample_size(20);
    g.throughput(Throughput::Elements(queries.len() as u64));
    let many = dense.search_many(queries, DEPTH);
    for (q, hits) in queries.iter().zip(&many) {
        assert_eq!(hits, &dense.search_by_string_ids(q, DEPTH));
    }
    // Before: one query at a time, string-id tie-break. After: `search` (integer id ranks)
    // and `search_many` (blocks of queries per pass over the matrix, on rayon's pool).
    g.bench_function("search_300_scifact_queries_top1000/string_ids", |b| {
        b.iter(|| {
            for q in queries {
                black_box(dense.search_by_string_ids(q, DEPTH));
            }
        })
    });
    g.bench_function("search_300_scifact_queries_top1000", |b| {
        b.iter(|| {
            for q in queries {
                black_box(dense.search(q, DEPTH));
            }
        })
    });
    g.bench_function("search_300_scifact_queries_top1000/search_many", |b| {
        b.iter(|| black_box(dense.search_many(queries, DEPTH)))
    });
    g.finish();
}

/// RRF over each SciFact query's BM25 and dense lists, by hash map and by ordinal array, after
/// checking the fused scores against the documented rule.
fn fusion_group(c: &mut Criterion, lists: &[(Vec<Hit>, Vec<Hit>)], corpus: &Corpus) {
    let id = |d: usize| corpus.id(d);
    let params = RrfParams {
        k: 60.0,
        depth: DEPTH,
    };
    // The answer check: every fused score is the sum of 1/(60 + rank) over the lists holding
    // the document, ranks 1-based with equal scores sharing a rank (fusion's documented rule).
    for (a, b) in lists.iter().take(20) {
        let mut want: HashMap<usize, f64> = HashMap::new();
        for list in [a, b] {
            let mut rank = 0;
            for (i, h) in list.iter().enumerate() {
                if i == 0 || h.score != list[i - 1].score {
                    rank = i + 1;
                }
                *want.entry(h.doc).or_default() += 1.0 / (60.0 + rank as f64);
            }
        }
        let fused = rrf(&[a, b], params, id);
        assert_eq!(fused.len(), want.len());
        for h in &fused {
            assert_eq!(h.score, want[&h.doc] as f32, "doc {}", id(h.doc));
        }
    }
    let mut g = c.benchmark_group("fusion");
    g.sample_size(20);
    g.throughput(Throughput::Elements(lists.len() as u64));
    for (a, d) in lists {
        assert_eq!(
            rrf_ranked(&[a, d], params, corpus.id_rank()),
            rrf(&[a, d], params, id)
        );
    }
    // Before: `rrf` (a hash map, string ids); after: `rrf_ranked` (ordinal array, id ranks).
    g.bench_function("rrf_bm25_dense_300_scifact_queries_depth1000", |b| {
        b.iter(|| {
            for (a, d) in lists {
                black_box(rrf(&[a, d], params, id));
            }
        })
    });
    g.bench_function("rrf_bm25_dense_300_scifact_queries_depth1000/ranked", |b| {
        b.iter(|| {
            for (a, d) in lists {
                black_box(rrf_ranked(&[a, d], params, corpus.id_rank()));
            }
        })
    });
    g.finish();
}

fn policy(c: &mut Criterion) {
    let corpus = Corpus::load(&root().join("corpora/docir")).expect("docir corpus");
    let index = LexicalIndex::build(&corpus).expect("bm25 index");
    let candidates: Vec<(String, Vec<Hit>)> = corpus
        .docs
        .iter()
        .map(|d| {
            let hits = index
                .search(&corpus, &d.title, 100, Bm25Params::default())
                .expect("bm25");
            (d.title.clone(), hits)
        })
        .filter(|(_, h)| !h.is_empty())
        .collect();
    let weights = Weights {
        superseded: 0.3,
        deprecated: 0.5,
        amendment: 0.05,
        editorial_only: 0.1,
    };
    // The answer check: a permutation of the candidates, scores descending.
    for (query, hits) in &candidates {
        for out in [
            current::rank(&corpus, hits, &weights),
            legacy::rank(&corpus, query, hits, &weights),
        ] {
            let mut a: Vec<usize> = out.iter().map(|h| h.doc).collect();
            let mut b: Vec<usize> = hits.iter().map(|h| h.doc).collect();
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "query {query:?}");
            assert!(out.windows(2).all(|w| w[0].score >= w[1].score));
        }
    }
    let mut g = c.benchmark_group("policy");
    g.throughput(Throughput::Elements(candidates.len() as u64));
    g.bench_function("current_rank_docir_top100", |b| {
        b.iter(|| {
            for (_, hits) in &candidates {
                black_box(current::rank(&corpus, hits, &weights));
            }
        })
    });
    g.bench_function("legacy_rank_docir_top100", |b| {
        b.iter(|| {
            for (query, hits) in &candidates {
                black_box(legacy::rank(&corpus, query, hits, &weights));
            }
        })
    });
    g.finish();
}

criterion_group!(benches, scifact, policy);
criterion_main!(benches);
