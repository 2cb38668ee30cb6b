//! ranklab's rerank stage against fastembed's `TextRerank` called directly, on the same pairs.
//!
//! Workload: one query and a shortlist of 20 passages (docir-like design-record sections),
//! scored by ms-marco-MiniLM-L-12-v2 int8 at batch size 1 (ranklab's default, see
//! `rerank::fastembed`) and at batch size 20. The ranklab side runs `rerank_shortlist` with a
//! fresh in-memory score cache every iteration, so it does all the model work plus its own
//! (candidate building, pair hashing, cache lookups and inserts, reordering). Throughput is in
//! pairs per second. The claim — ranklab stays within 10% of the bare model — compares the
//! `fastembed_direct/1thread` and `ranklab/1worker` rows (same session, same batches); the
//! `default` rows show what each side does out of the box.
//!
//! Before measuring, the benchmark checks its answer: ranklab's scores equal fastembed's,
//! bit for bit, at batch size 1, and the reordered shortlist is sorted by them.
//!
//! Run: `cargo bench -p ranklab-engine --bench rerank` (fetches the model on first use).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ranklab_engine::models;
use ranklab_engine::ranking::Hit;
use ranklab_engine::rerank::{
    rerank_shortlist, Candidate, CrossEncoderOptions, FastembedCrossEncoder, ScoreCache,
};

mod shared;

const QUERY: &str = "implement idempotency keys on the payment capture endpoint";

fn passages() -> Vec<String> {
    let topics = shared::TOPICS;
    (0..20)
        .map(|i| format!("{} Section {}.", topics[i % topics.len()], i + 1))
        .collect()
}

fn hits(n: usize) -> Vec<Hit> {
    (0..n)
        .map(|i| Hit {
            doc: i,
            score: 1.0 - i as f32 / 100.0,
            section: 0,
        })
        .collect()
}

fn check_answer(ce: &mut FastembedCrossEncoder, passages: &[String]) {
    let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
    let mut direct = ce
        .inner()
        .rerank(QUERY, refs.as_slice(), false, Some(1))
        .expect("fastembed rerank");
    direct.sort_by_key(|r| r.index);
    let hits = hits(passages.len());
    let cache = ScoreCache::in_memory(ce);
    let (out, stats) = rerank_shortlist(
        QUERY,
        &hits,
        passages.len(),
        |h| Candidate {
            doc_id: format!("d{}", h.doc),
            passage: passages[h.doc].as_str().into(),
        },
        ce,
        &cache,
    )
    .expect("ranklab rerank");
    assert_eq!(stats.scored, passages.len());
    for r in &out {
        let s = r.rerank_score.expect("every hit is shortlisted");
        assert_eq!(
            s.to_bits(),
            direct[r.hit.doc].score.to_bits(),
            "doc {}",
            r.hit.doc
        );
    }
    assert!(out
        .windows(2)
        .all(|w| w[0].rerank_score >= w[1].rerank_score));
    assert_eq!(out[0].hit.doc % 10, 0, "the idempotency-key passage wins");
}

fn ranklab(ce: &mut FastembedCrossEncoder, hits: &[Hit], passages: &[String]) -> usize {
    // A fresh cache each time: every pair goes through the model.
    let cache = ScoreCache::in_memory(ce);
    let (out, _) = rerank_shortlist(
        QUERY,
        hits,
        passages.len(),
        |h| Candidate {
            doc_id: format!("d{}", h.doc),
            passage: passages[h.doc].as_str().into(),
        },
        ce,
        &cache,
    )
    .expect("ranklab rerank");
    out.len()
}

fn bench(c: &mut Criterion) {
    let dir = models::ensure_model("ms-marco-MiniLM-L-12-v2").unwrap_or_else(|e| panic!("{e}"));
    let passages = passages();
    let refs: Vec<&str> = passages.iter().map(String::as_str).collect();
    let all_hits = hits(passages.len());
    let load = |batch_size: usize, workers: Option<usize>| {
        let options = CrossEncoderOptions {
            batch_size,
            workers,
            ..Default::default()
        };
        FastembedCrossEncoder::load(&dir, &options).unwrap_or_else(|e| panic!("{e}"))
    };

    let mut group = c.benchmark_group("rerank_l12_20_pairs");
    group.sample_size(10);
    group.throughput(Throughput::Elements(passages.len() as u64));

    // The overhead claim: the same single-threaded session, the same batches, with and
    // without ranklab's stage around it.
    for batch in [1usize, 20] {
        let mut ce = load(batch, Some(1));
        if batch == 1 {
            check_answer(&mut ce, &passages);
        }
        group.bench_function(format!("fastembed_direct/1thread/batch{batch}"), |b| {
            b.iter(|| {
                ce.inner()
                    .rerank(QUERY, refs.as_slice(), false, Some(batch))
                    .expect("fastembed rerank")
            })
        });
        group.bench_function(format!("ranklab/1worker/batch{batch}"), |b| {
            b.iter(|| ranklab(&mut ce, &all_hits, &passages))
        });
    }

    // ranklab's own work alone: the same stage with every pair already in the cache (no model
    // call), i.e. candidate building, pair hashing, lookups and reordering. This is the
    // overhead in the rows above, measured without the model's noise.
    {
        let mut ce = load(1, Some(1));
        let warm = ScoreCache::in_memory(&ce);
        let candidate = |h: &Hit| Candidate {
            doc_id: format!("d{}", h.doc),
            passage: passages[h.doc].as_str().into(),
        };
        rerank_shortlist(QUERY, &all_hits, passages.len(), candidate, &mut ce, &warm)
            .expect("fill");
        group.bench_function("ranklab_overhead_only/warm_cache", |b| {
            b.iter(|| {
                let (out, stats) =
                    rerank_shortlist(QUERY, &all_hits, passages.len(), candidate, &mut ce, &warm)
                        .expect("ranklab rerank");
                assert_eq!(stats.scored, 0);
                out.len()
            })
        });
    }

    // What each side does by default on this machine: ranklab spreads pairs over one
    // single-threaded session per core; fastembed's own default is one session with one
    // intra-op thread per core.
    let mut ce = load(1, None);
    group.bench_function("ranklab/default_workers/batch1", |b| {
        b.iter(|| ranklab(&mut ce, &all_hits, &passages))
    });
    let mut bare = {
        let model = fastembed::UserDefinedRerankingModel::new(
            dir.file("model.onnx"),
            dir.tokenizer_files().expect("tokenizer files"),
        );
        let options = fastembed::RerankInitOptionsUserDefined::new()
            .with_environment(models::ort_environment().expect("runtime"));
        fastembed::TextRerank::try_new_from_user_defined(model, options).expect("fastembed session")
    };
    for batch in [1usize, 20] {
        group.bench_function(format!("fastembed_default_session/batch{batch}"), |b| {
            b.iter(|| {
                bare.rerank(QUERY, refs.as_slice(), false, Some(batch))
                    .expect("fastembed rerank")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
