use std::io::Cursor;

use proptest::prelude::*;

use super::block::hash_bytes;
use super::*;
use crate::metrics::{evaluate_ranking, Measure::*};
use crate::trec::run::trec_order;

fn qrels(text: &str) -> Qrels {
    Qrels::from_reader(text.as_bytes(), Path::new("qrels")).unwrap()
}

fn eval(q: &Qrels, run: &str, ms: &[Measure], opts: EvalOptions) -> Result<Evaluation, TrecError> {
    evaluate_reader(
        q,
        Cursor::new(run.as_bytes().to_vec()),
        Path::new("run"),
        ms,
        &opts,
    )
}

#[test]
fn ties_break_by_docno_descending_and_rank_column_is_ignored() {
    let q = qrels("q1 0 a 1\n");
    // b and a tie at 2.0: b (greater id) ranks first, a second; c at 3.0 leads.
    let ev = eval(
        &q,
        "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 3.0 t\n",
        &[RecipRank],
        EvalOptions::default(),
    )
    .unwrap();
    assert_eq!(ev.summary, vec![1.0 / 3.0]);
}

#[test]
fn interleaved_run_gives_the_grouped_result() {
    let q = qrels("q1 0 a 1\nq2 0 x 1\nq2 0 y 2\n");
    let ms = [Map, RecipRank, NdcgCut(3), NumRet];
    let grouped = "q1 Q0 a 1 1 t\nq1 Q0 b 1 2 t\nq2 Q0 x 1 1 t\nq2 Q0 y 1 3 t\nq2 Q0 z 1 2 t\n";
    let interleaved = "q1 Q0 a 1 1 t\nq2 Q0 x 1 1 t\nq1 Q0 b 1 2 t\nq2 Q0 y 1 3 t\nq2 Q0 z 1 2 t\n";
    let a = eval(&q, grouped, &ms, EvalOptions::default()).unwrap();
    let b = eval(&q, interleaved, &ms, EvalOptions::default()).unwrap();
    assert!(!a.interleaved && b.interleaved);
    assert_eq!(a.per_query, b.per_query);
    assert_eq!(a.summary, b.summary);
}

#[test]
fn duplicates_are_found_across_interleaved_blocks() {
    let q = qrels("q1 0 a 1\n");
    let err = eval(
        &q,
        "q1 Q0 a 1 1 t\nq2 Q0 a 1 1 t\nq1 Q0 a 1 2 t\n",
        &[Map],
        EvalOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "run:3: document `a` appears twice in query `q1` (first at line 1); trec_eval rejects such runs: keep only one line per (query, document)"
    );
}

#[test]
fn missing_query_is_an_error_unless_complete() {
    let q = qrels("q1 0 a 1\nq2 0 b 1\nq2 0 c 1\nq3 0 d 1\n");
    let run = "q1 Q0 a 1 1 t\nq9 Q0 a 1 1 t\n";
    let err = eval(&q, run, &[Map], EvalOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("qrels:2: query `q2` of the qrels has no results in run run (1 more"),
        "{err}"
    );
    let ev = eval(
        &q,
        run,
        &[Map, NumRel, NumRet],
        EvalOptions {
            complete: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(ev.num_q, 3);
    assert_eq!(ev.summary, vec![1.0 / 3.0, 4.0, 1.0]);
    assert!(ev.per_query[1].missing && !ev.per_query[0].missing);
    assert_eq!(ev.per_query[1].values, vec![0.0, 2.0, 0.0]);
}

#[test]
fn runid_is_the_last_lines_tag() {
    let q = qrels("q1 0 a 1\n");
    let ev = eval(
        &q,
        "q1 Q0 a 1 1 first\nq1 Q0 b 1 0 last\n",
        &[Map],
        EvalOptions::default(),
    )
    .unwrap();
    assert_eq!(ev.runid, "last");
}

#[test]
fn hash_spreads_numeric_ids() {
    let mask = 2047u64;
    let mut buckets = std::collections::HashSet::new();
    for i in 0..1000u32 {
        buckets.insert(hash_bytes(format!("{}", 7_000_000 + i).as_bytes()) & mask);
    }
    assert!(
        buckets.len() > 700,
        "{} distinct buckets of 1000",
        buckets.len()
    );
}

/// A random judged query with ties: documents from a small pool, scores from a few values.
/// `(docno, score)` in run order, and `(docno, judgment)`.
type Case = (Vec<(String, f64)>, Vec<(String, i32)>);

fn arb_case() -> impl Strategy<Value = Case> {
    (
        proptest::sample::subsequence((0..60).collect::<Vec<u32>>(), 0..50).prop_shuffle(),
        proptest::collection::vec(0u8..6, 50),
        proptest::collection::hash_map(0u32..60, -1i32..=3, 0..40),
    )
        .prop_map(|(docs, scores, judged)| {
            (
                docs.iter()
                    .zip(&scores)
                    .map(|(d, s)| (format!("d{d}"), *s as f64 * 0.5 - 1.0))
                    .collect(),
                judged
                    .into_iter()
                    .map(|(d, r)| (format!("d{d}"), r))
                    .collect(),
            )
        })
}

proptest! {
    /// The streaming evaluator (counting ranks or sorting, whichever applies) and the
    /// buffered fallback for interleaved runs both agree with a plain sort in trec_eval's
    /// order followed by `evaluate_ranking`.
    #[test]
    fn streaming_and_buffered_agree_with_sort_then_evaluate(
        (docs, judged) in arb_case(),
        level in 0i32..=2,
    ) {
        let mut qrels_text = "r 0 z 1\n".to_string();
        for (d, r) in &judged {
            qrels_text += &format!("q 0 {d} {r}\n");
        }
        let q = qrels(&qrels_text);
        let lines: Vec<String> = docs.iter().map(|(d, s)| format!("q Q0 {d} 0 {s} t\n")).collect();
        let other = "r Q0 z 0 1 t\n".to_string();
        let grouped = lines.concat() + &other;
        // q, r, then the rest of q: interleaved as soon as q has two lines
        let mut interleaved = lines.first().cloned().unwrap_or_default() + &other;
        interleaved += &lines.iter().skip(1).cloned().collect::<String>();
        let ms = [Map, RecipRank, P(5), Recall(10), Ndcg, NdcgCut(5), Rprec, NumRelRet, Success(3), Bpref, InfAp, Unj(5), NumNonrelJudgedRet, G, Rndcg, NdcgRel];
        let opts = EvalOptions { rel_level: level, complete: true, all_judged: true, ..Default::default() };
        let mut sorted: Vec<(&str, f64)> = docs.iter().map(|(d, s)| (d.as_str(), *s)).collect();
        sorted.sort_by(|a, b| trec_order(*a, *b));
        let ranked: Vec<&str> = sorted.iter().map(|x| x.0).collect();
        let qi = q.position("q");
        let want = match qi {
            Some(i) => evaluate_ranking(&ms, &ranked, &q.queries()[i].to_map(), level),
            None => vec![],
        };
        for (name, run) in [("grouped", &grouped), ("interleaved", &interleaved)] {
            let ev = eval(&q, run, &ms, opts.clone()).unwrap();
            prop_assert_eq!(ev.interleaved, name == "interleaved" && docs.len() >= 2 && qi.is_some());
            if let Some(i) = qi {
                prop_assert_eq!(&ev.per_query[i].values, &want, "{}", name);
            }
        }
    }
}

// ---- the parallel reader against the sequential one ----

/// Evaluates the file at `path` with the parallel reader in chunks of `chunk` bytes; also says
/// whether the parallel reader gave the results (`false`: it left them to the sequential one).
fn chunked(
    q: &Qrels,
    path: &Path,
    ms: &[Measure],
    opts: &EvalOptions,
    chunk: usize,
) -> (Result<Evaluation, TrecError>, bool) {
    let file = File::open(path).unwrap();
    let size = file.metadata().unwrap().len() as usize;
    let mut fast = false;
    let ev = evaluate_with(q, &file, path, ms, opts, |ctx| {
        let r = parallel::evaluate(ctx, &file, size, chunk);
        fast = r.is_some();
        r
    });
    (ev, fast)
}

/// The qrels of the random runs: q0, q1, q2 judged over d0..d29 (judgments -1..=3, about a
/// quarter of the documents unjudged); q3 and q4 of the runs are unjudged queries.
fn random_run_qrels() -> Qrels {
    let mut text = String::new();
    for q in 0..3i32 {
        for d in 0..30i32 {
            if (d * 7 + q * 3) % 4 != 0 {
                text += &format!("q{q} 0 d{d} {}\n", (d + q) % 5 - 1);
            }
        }
    }
    qrels(&text)
}

/// One query's lines of a random run: query 0..5, documents from d0..d29, scores from a few
/// values (ties).
type QuerySpec = (u8, Vec<u8>, Vec<u8>);

fn arb_query() -> impl Strategy<Value = QuerySpec> {
    (
        0u8..5,
        proptest::sample::subsequence((0..30).collect::<Vec<u8>>(), 0..25).prop_shuffle(),
        proptest::collection::vec(0u8..4, 25),
    )
}

/// A random run file: queries (a query may come back, which makes the run interleaved or holds
/// a duplicate), optionally with its lines shuffled, a BOM, CRLF ends, comment and blank lines,
/// no final newline, a malformed line.
#[allow(clippy::too_many_arguments)]
fn random_run(
    queries: &[QuerySpec],
    shuffle: Option<u64>,
    bom: bool,
    crlf: bool,
    comments: &[usize],
    final_newline: bool,
    bad: Option<usize>,
) -> Vec<u8> {
    let mut lines: Vec<String> = Vec::new();
    for (i, (q, docs, scores)) in queries.iter().enumerate() {
        for (d, s) in docs.iter().zip(scores) {
            lines.push(format!("q{q} Q0 d{d} 0 {} tag{i}", *s as f64 * 0.25));
        }
    }
    if let Some(mut seed) = shuffle {
        for i in (1..lines.len()).rev() {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lines.swap(i, (seed >> 33) as usize % (i + 1));
        }
    }
    for &c in comments {
        let at = c % (lines.len() + 1);
        lines.insert(
            at,
            if c % 2 == 0 {
                "# comment".into()
            } else {
                "  ".into()
            },
        );
    }
    if let Some(b) = bad {
        let at = b % (lines.len() + 1);
        lines.insert(at, "q1 Q0 d1 0 x tag".into());
    }
    let end = if crlf { "\r\n" } else { "\n" };
    let mut text = lines.join(end);
    if final_newline {
        text += end;
    }
    let mut bytes = if bom {
        b"\xEF\xBB\xBF".to_vec()
    } else {
        Vec::new()
    };
    bytes.extend_from_slice(text.as_bytes());
    bytes
}

proptest! {
    /// On any run, grouped or not, well-formed or not, the parallel reader (chunks of 16 to 400
    /// bytes: queries cut across many chunks, chunks inside one line) gives the sequential
    /// reader's evaluation, to the bit, or its error message; and it is the parallel reader that
    /// answers whenever the sequential one streamed the run without an error.
    #[test]
    fn parallel_reader_gives_the_sequential_readers_results(
        queries in proptest::collection::vec(arb_query(), 0..7),
        shuffle in proptest::option::weighted(0.2, any::<u64>()),
        bom in proptest::bool::weighted(0.2),
        crlf in proptest::bool::weighted(0.2),
        comments in proptest::collection::vec(0usize..400, 0..3),
        final_newline in proptest::bool::weighted(0.8),
        bad in proptest::option::weighted(0.05, 0usize..400),
        chunk in 16usize..400,
        complete in proptest::bool::weighted(0.8),
    ) {
        let q = random_run_qrels();
        let bytes = random_run(&queries, shuffle, bom, crlf, &comments, final_newline, bad);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run");
        std::fs::write(&path, &bytes).unwrap();
        let ms = [Map, RecipRank, P(5), Recall(10), NdcgCut(5), Rprec, NumRet, NumRel, NumRelRet, Bpref, InfAp, Unj(5), Relstring];
        let opts = EvalOptions { complete, all_judged: true, ..Default::default() };
        let seq = evaluate_reader(&q, Cursor::new(bytes.clone()), &path, &ms, &opts);
        let (par, fast) = chunked(&q, &path, &ms, &opts, chunk);
        match (&seq, &par) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(a, b);
                prop_assert_eq!(fast, !a.interleaved);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            _ => prop_assert!(false, "sequential {:?}, parallel {:?}", seq.is_ok(), par.is_ok()),
        }
    }
}

#[test]
fn parallel_reader_answers_for_a_grouped_run_and_leaves_an_interleaved_one() {
    let q = qrels("q1 0 a 1\nq2 0 x 1\n");
    let dir = tempfile::tempdir().unwrap();
    let grouped = dir.path().join("grouped");
    let interleaved = dir.path().join("interleaved");
    std::fs::write(&grouped, "q1 Q0 a 1 1 t\nq1 Q0 b 1 2 t\nq2 Q0 x 1 1 t\n").unwrap();
    std::fs::write(
        &interleaved,
        "q1 Q0 a 1 1 t\nq2 Q0 x 1 1 t\nq1 Q0 b 1 2 t\n",
    )
    .unwrap();
    let opts = EvalOptions::default();
    let (a, fast_a) = chunked(&q, &grouped, &[Map], &opts, 16);
    let (b, fast_b) = chunked(&q, &interleaved, &[Map], &opts, 16);
    assert!(fast_a && !fast_b);
    let (a, b) = (a.unwrap(), b.unwrap());
    assert!(!a.interleaved && b.interleaved);
    // q1: a (relevant) at rank 2 behind b; q2: x at rank 1.
    assert_eq!(a.summary, vec![(0.5 + 1.0) / 2.0]);
    assert_eq!(b.summary, a.summary);
}

/// Feeds `lines` (`qid docno score`, grouped by query) to a [`RunFeed`].
fn feed(
    q: &Qrels,
    lines: &[(&str, &str, f64)],
    ms: &[Measure],
    opts: &EvalOptions,
) -> Result<Evaluation, TrecError> {
    let mut f = RunFeed::new(q, Path::new("<run dict>"), ms, opts);
    let mut current = None;
    for &(qid, docno, score) in lines {
        if current != Some(qid) {
            f.query(qid)?;
            current = Some(qid);
        }
        f.push(docno, score);
    }
    f.finish()
}

#[test]
fn a_fed_run_gives_the_file_values() {
    let q = qrels("q1 0 a 1\nq1 0 b 0\nq2 0 x 1\nq2 0 y 2\nq3 0 m 1\n");
    let ms = [Map, RecipRank, NdcgCut(3), NumRet, NumRelRet, Relstring];
    // Ties (b and a at 2.0: b ranks first), an unjudged query (q9), q3 missing.
    let lines = [
        ("q1", "a", 2.0),
        ("q1", "b", 2.0),
        ("q1", "c", 3.0),
        ("q9", "a", 1.0),
        ("q2", "z", 2.5),
        ("q2", "y", 0.5),
        ("q2", "x", 1.0),
    ];
    let text: String = lines
        .iter()
        .map(|(q, d, s)| format!("{q} Q0 {d} 0 {s} t\n"))
        .collect();
    let opts = EvalOptions {
        complete: true,
        ..EvalOptions::default()
    };
    let fed = feed(&q, &lines, &ms, &opts).unwrap();
    let file = eval(&q, &text, &ms, opts.clone()).unwrap();
    assert_eq!(fed.per_query, file.per_query);
    assert_eq!(fed.summary, file.summary);
    assert_eq!((fed.num_q, fed.runid.as_str()), (3, ""));
    // By hand: q1 ranks c, b, a (the relevant a third): RR 1/3; q2 ranks z, x, y: RR 1/2; q3 0.
    assert_eq!(fed.per_query[0].values[1], 1.0 / 3.0);
    assert_eq!(fed.per_query[1].values[1], 0.5);
    assert_eq!(fed.summary[1], (1.0 / 3.0 + 0.5) / 3.0);
    // Without -c the missing q3 is the file's error, naming the run as the feed does.
    let err = feed(&q, &lines, &ms, &EvalOptions::default()).unwrap_err();
    assert!(
        err.to_string()
            .contains("query `q3` of the qrels has no results in run <run dict>"),
        "{err}"
    );
}

#[test]
fn a_fed_run_refuses_a_repeated_query_and_an_empty_run() {
    let q = qrels("q1 0 a 1\n");
    let opts = EvalOptions::default();
    let lines = [("q1", "a", 1.0), ("q2", "b", 1.0), ("q1", "c", 1.0)];
    let err = feed(&q, &lines, &[Map], &opts).unwrap_err();
    assert!(
        matches!(&err, TrecError::RepeatedQuery { qid, .. } if qid == "q1"),
        "{err}"
    );
    let err = feed(&q, &[], &[Map], &opts).unwrap_err();
    assert!(matches!(err, TrecError::Empty { kind: "run", .. }), "{err}");
    // A run of unjudged queries only is not empty: the missing judged query is the error.
    let err = feed(&q, &[("q2", "a", 1.0)], &[Map], &opts).unwrap_err();
    assert!(matches!(err, TrecError::MissingQuery { .. }), "{err}");
}
