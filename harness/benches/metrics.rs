//! Criterion benchmarks of metric evaluation (`just perf`), group "metrics":
//! - `evaluate_ranking`: the in-memory API the suite replay calls, over 1,000 queries of 100
//!   ranked documents;
//! - `parse_and_evaluate_run`: `ranklab eval`'s path, reading a 500,000-line run file
//!   (500 queries x 1,000 documents, 18 MB: the parallel reader on more than one thread) from a
//!   temporary directory and evaluating it.
//!
//! Group "trec_parser", the TREC run reader alone on that file: `RunReader::for_each` (the
//! streaming parser every reader uses: fields, score, line numbers) and `read_run` (the same
//! into memory, documents in trec_eval's order per query).
//!
//! Each benchmark checks the answer it computes against a closed form before timing anything:
//! query q has its relevant document at rank `q % 10 + 1`, and odd queries have a second
//! relevant document that was never retrieved, so MRR and recall are known exactly.

use std::collections::HashMap;
use std::hint::black_box;
use std::io::Write;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ranklab::metrics::{evaluate_ranking, Measure};
use std::ops::ControlFlow;

use ranklab::trec::{evaluate_run, format_run_line, read_run, EvalOptions, Qrels, RunReader};

const MEASURES: [Measure; 5] = [
    Measure::Map,
    Measure::RecipRank,
    Measure::P(10),
    Measure::NdcgCut(10),
    Measure::Recall(100),
];

/// One synthetic query: ranked document ids (rank 1 first) and judgments.
struct Query {
    qid: String,
    ranked: Vec<String>,
    judged: HashMap<String, i32>,
}

fn queries(n: usize, depth: usize) -> Vec<Query> {
    (0..n)
        .map(|q| {
            let ranked: Vec<String> = (0..depth).map(|i| format!("d{q}_{i}")).collect();
            let mut judged = HashMap::new();
            judged.insert(ranked[q % 10].clone(), 1);
            judged.insert(ranked[(q + 3) % depth].clone(), 0);
            if q % 2 == 1 {
                judged.insert(format!("never{q}"), 1);
            }
            Query {
                qid: format!("q{q}"),
                ranked,
                judged,
            }
        })
        .collect()
}

/// The closed-form answers: (MRR, recall@100).
fn expected(n: usize) -> (f64, f64) {
    let mrr = (0..n).map(|q| 1.0 / (q % 10 + 1) as f64).sum::<f64>() / n as f64;
    let recall = (0..n)
        .map(|q| if q % 2 == 1 { 0.5 } else { 1.0 })
        .sum::<f64>()
        / n as f64;
    (mrr, recall)
}

fn mean_of(values: &[Vec<f64>], m: usize) -> f64 {
    values.iter().map(|v| v[m]).sum::<f64>() / values.len() as f64
}

fn evaluate_all(qs: &[Query]) -> Vec<Vec<f64>> {
    qs.iter()
        .map(|q| {
            let ranked: Vec<&str> = q.ranked.iter().map(String::as_str).collect();
            evaluate_ranking(&MEASURES, &ranked, &q.judged, 1)
        })
        .collect()
}

fn bench_metrics(c: &mut Criterion) {
    let mut group = c.benchmark_group("metrics");

    let qs = queries(1000, 100);
    let (mrr, recall) = expected(qs.len());
    let values = evaluate_all(&qs);
    assert!((mean_of(&values, 1) - mrr).abs() < 1e-12, "MRR");
    assert!((mean_of(&values, 4) - recall).abs() < 1e-12, "recall@100");
    group.throughput(Throughput::Elements(qs.len() as u64));
    group.bench_function("evaluate_ranking/1000q_x_100", |b| {
        b.iter(|| evaluate_all(black_box(&qs)))
    });

    let dir = tempfile::tempdir().expect("temp dir");
    let run_path = dir.path().join("run.trec");
    let qrels_path = dir.path().join("qrels.txt");
    let qs = queries(500, 1000);
    {
        let mut run = std::io::BufWriter::new(std::fs::File::create(&run_path).unwrap());
        let mut qrels = std::io::BufWriter::new(std::fs::File::create(&qrels_path).unwrap());
        for q in &qs {
            for (i, d) in q.ranked.iter().enumerate() {
                let score = (q.ranked.len() - i) as f32;
                run.write_all(format_run_line(&q.qid, d, i + 1, score, "bench").as_bytes())
                    .unwrap();
            }
            for (d, r) in &q.judged {
                writeln!(qrels, "{} 0 {d} {r}", q.qid).unwrap();
            }
        }
        run.flush().unwrap();
        qrels.flush().unwrap();
    }
    let qrels = Qrels::read(&qrels_path).expect("qrels");
    let opts = EvalOptions::default();
    let ev = evaluate_run(&qrels, &run_path, &MEASURES, &opts).expect("evaluate");
    let (mrr, recall) = expected(qs.len());
    assert_eq!(ev.num_q, qs.len());
    assert!(
        (ev.summary[1] - mrr).abs() < 1e-12,
        "MRR {} vs {mrr}",
        ev.summary[1]
    );
    assert!((ev.summary[4] - recall).abs() < 1e-12, "recall@100");
    group.throughput(Throughput::Elements((qs.len() * 1000) as u64));
    group.sample_size(20);
    group.bench_function("parse_and_evaluate_run/500q_x_1000", |b| {
        b.iter(|| evaluate_run(&qrels, black_box(&run_path), &MEASURES, &opts).expect("evaluate"))
    });
    group.finish();

    // The TREC parser alone. The answer check: every line read, the score sum is the closed
    // form (query q's document i scores 1000 - i, so each query sums 1000·1001/2), and
    // read_run returns every query with its 1,000 documents, rank 1 first.
    let parse = |path: &std::path::Path| {
        let (mut lines, mut sum) = (0u64, 0f64);
        let _ = RunReader::open(path)
            .expect("open")
            .for_each::<()>(|l| {
                lines += 1;
                sum += l.score;
                Ok(ControlFlow::Continue(()))
            })
            .expect("parse");
        (lines, sum)
    };
    let (lines, sum) = parse(&run_path);
    assert_eq!(lines, 500_000);
    assert_eq!(sum, 500.0 * (1000.0 * 1001.0 / 2.0));
    let all = read_run(&run_path).expect("read_run");
    assert_eq!(all.len(), qs.len());
    assert!(all
        .iter()
        .all(|q| q.docs.len() == 1000 && q.docs[0].1 == 1000.0));
    let mut group = c.benchmark_group("trec_parser");
    group.throughput(Throughput::Elements(lines));
    group.sample_size(20);
    group.bench_function("run_reader_for_each/500q_x_1000", |b| {
        b.iter(|| parse(black_box(&run_path)))
    });
    group.bench_function("read_run/500q_x_1000", |b| {
        b.iter(|| read_run(black_box(&run_path)).expect("read_run"))
    });
    group.finish();
}

criterion_group!(benches, bench_metrics);
criterion_main!(benches);
