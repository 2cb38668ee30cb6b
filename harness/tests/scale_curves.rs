//! Corpus-size curves (issue 28): the nested draw, distractors never judged relevant, the BEIR
//! curve's full-corpus point against the plain report, and bad input. BM25 only: no model.
//!
//! Oracles: set inclusion computed here; reciprocal ranks by hand (a distractor that outranks
//! the only expected document halves its task's reciprocal rank, 1 → 1/2); the plain `ranklab
//! beir` report of the same collection for the curve's `all` point.

mod common;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use ranklab::replay::scale;
use ranklab::replay::Replayer;
use ranklab::report::MeasureSet;
use ranklab::suite::distractors::{sample, Distractors, Pool};
use ranklab::suite::{Experiments, Suite};
use ranklab_engine::corpus::Corpus;

/// A BEIR-layout pool of `n` documents `x00`, `x01`, … about unrelated things, plus `extra`
/// (id, text) documents; no queries or qrels (a pool needs only corpus.jsonl).
fn pool(dir: &Path, n: usize, extra: &[(&str, &str)]) -> PathBuf {
    let p = dir.join("pool");
    std::fs::create_dir_all(&p).unwrap();
    let mut lines = String::new();
    for i in 0..n {
        let text = format!("notes on garden plant number {i} and its watering schedule");
        lines +=
            &serde_json::json!({"_id": format!("x{i:02}"), "title": "", "text": text}).to_string();
        lines.push('\n');
    }
    for (id, text) in extra {
        lines += &serde_json::json!({"_id": id, "title": "", "text": text}).to_string();
        lines.push('\n');
    }
    std::fs::write(p.join("corpus.jsonl"), lines).unwrap();
    p
}

/// The bad-input fixture's suite `p` with an experiments file holding `distractors` (a YAML
/// flow mapping) and BM25 only.
fn suite_with(dir: &Path, distractors: &str) -> PathBuf {
    let file = dir.join("tasks/p/experiments-scale.yaml");
    std::fs::write(
        &file,
        format!(
            "experiment: scale\nbaseline: bm25\ndistractors: {distractors}\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: bm25-b\n    retriever: bm25\n    bm25: {{ k1: 1.2, b: 0.75 }}\n"
        ),
    )
    .unwrap();
    file
}

/// `ranklab run tasks/p -x tasks/p/experiments-scale.yaml --reports out` in `dir`.
fn run_scale(dir: &Path) -> std::process::Output {
    common::ranklab_in(
        dir,
        &[
            "run",
            "tasks/p",
            "-x",
            "tasks/p/experiments-scale.yaml",
            "--reports",
            "out",
        ],
    )
}

fn ids(c: &Corpus) -> BTreeSet<String> {
    c.docs.iter().map(|d| d.id.clone()).collect()
}

#[test]
fn a_larger_sizes_draw_contains_the_smaller_s_and_every_suite_or_judged_document() {
    let tmp = common::fixture_copy("bad_input");
    pool(tmp.path(), 40, &[]);
    let file = suite_with(
        tmp.path(),
        "{ from: ../../pool, sizes: [0, 3, 10, 25, 40], seed: 7 }",
    );
    let suite = Suite::load(&tmp.path().join("tasks/p/suite.yaml")).unwrap();
    let corpus = suite.load_corpus().unwrap();
    let ex = Experiments::load(&file).unwrap();
    let spec = ex.distractors.clone().unwrap();
    let drawn = Pool::load(
        &spec,
        &file,
        spec.pool_path(&file).unwrap().unwrap(),
        &corpus,
    )
    .unwrap();
    let joined: Vec<BTreeSet<String>> = spec
        .sizes
        .iter()
        .map(|&n| ids(&drawn.joined(&corpus, n).unwrap()))
        .collect();
    for (w, sizes) in joined.windows(2).zip(spec.sizes.windows(2)) {
        assert!(
            w[0].is_subset(&w[1]),
            "size {} not inside size {}",
            sizes[0],
            sizes[1]
        );
    }
    for (set, &n) in joined.iter().zip(&spec.sizes) {
        assert_eq!(set.len(), corpus.len() + n);
        assert!(ids(&corpus).is_subset(set));
    }
    // Another seed draws other documents at the same size (40 choose 3: almost surely).
    let other = Pool::load(
        &Distractors {
            seed: 8,
            ..spec.clone()
        },
        &file,
        spec.pool_path(&file).unwrap().unwrap(),
        &corpus,
    )
    .unwrap();
    assert_ne!(ids(&other.joined(&corpus, 3).unwrap()), joined[1]);

    // A collection's sample: the judged documents at every size, nested draws.
    let whole = Corpus::load(&tmp.path().join("pool")).unwrap();
    let keep: HashSet<&str> = ["x05", "x17", "x33"].into_iter().collect();
    let samples: Vec<BTreeSet<String>> = [3, 4, 12, 30, 40]
        .iter()
        .map(|&n| ids(&sample(&whole, &keep, n, 42).unwrap()))
        .collect();
    for w in samples.windows(2) {
        assert!(w[0].is_subset(&w[1]));
    }
    for s in &samples {
        assert!(keep.iter().all(|k| s.contains(*k)));
    }
    assert_eq!(samples[0].len(), 3);
    assert_eq!(
        samples[4],
        ids(&whole),
        "the largest size is the whole corpus"
    );
    assert!(
        sample(&whole, &keep, 2, 42).is_err(),
        "below the judged documents"
    );
    assert!(sample(&whole, &keep, 41, 42).is_err(), "above the corpus");
}

#[test]
fn a_distractor_is_never_judged_relevant() {
    // `aaa-copy` says T1's query word for word, so BM25 ranks it above alpha, T1's one expected
    // document; judged relevant it would leave T1's reciprocal rank at 1, unjudged (not
    // relevant) it makes it 1/2.
    let tmp = common::fixture_copy("bad_input");
    let copy = "idempotency key for a replayed capture idempotency key for a replayed capture";
    pool(tmp.path(), 5, &[("aaa-copy", copy)]);
    let file = suite_with(tmp.path(), "{ from: ../../pool, sizes: [0, 6], seed: 7 }");
    let suite = Suite::load(&tmp.path().join("tasks/p/suite.yaml")).unwrap();
    let corpus = suite.load_corpus().unwrap();
    let ex = Experiments::load(&file).unwrap();
    let spec = ex.distractors.clone().unwrap();
    let drawn = Pool::load(
        &spec,
        &file,
        spec.pool_path(&file).unwrap().unwrap(),
        &corpus,
    )
    .unwrap();
    let corpora: Vec<Corpus> = spec
        .sizes
        .iter()
        .map(|&n| drawn.joined(&corpus, n).unwrap())
        .collect();
    let engine = Replayer::build(corpora.last().unwrap(), &[&ex]).unwrap();
    let base: HashSet<&str> = corpus.docs.iter().map(|d| d.id.as_str()).collect();
    let curve = scale::measure(&corpora, engine, &base, &suite, &ex, &MeasureSet::Suite).unwrap();
    // The judgments name the suite's documents only.
    for t in &suite.tasks {
        assert!(
            t.expected.keys().all(|id| base.contains(id.as_str())),
            "{t:?}"
        );
    }
    let (t1, mrr, recall) = (0, 1, 0);
    assert_eq!(suite.tasks[t1].id, "T1");
    assert_eq!(curve.measures[mrr], "MRR");
    assert_eq!(
        curve.points[0].values[0][t1][mrr], 1.0,
        "alpha first among the suite's"
    );
    assert_eq!(
        curve.points[1].values[0][t1][mrr], 0.5,
        "the copy counted relevant?"
    );
    assert_eq!(curve.points[1].values[0][t1][recall], 1.0);
    assert!(curve.points[1].added_share[0] > 0.0);
    assert_eq!(curve.points[0].added_share[0], 0.0);
}

#[test]
fn a_suite_experiment_with_distractors_writes_its_curve() {
    let tmp = common::fixture_copy("bad_input");
    pool(tmp.path(), 30, &[]);
    suite_with(tmp.path(), "{ from: ../../pool, sizes: [0, 10, 30] }");
    let o = run_scale(tmp.path());
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let dir = tmp.path().join("out/p");
    for f in [
        "scale.scale.md",
        "scale.scale.csv",
        "scale.scale.json",
        "scale.scale.svg",
        "scale.md",
    ] {
        assert!(dir.join(f).is_file(), "no {f}");
    }
    let md = std::fs::read_to_string(dir.join("scale.scale.md")).unwrap();
    assert!(md.contains("| configuration | 4 | 14 | 34 |"), "{md}");
    assert!(md.contains("bm25-b"), "{md}");
    let err = common::stderr(&o);
    assert!(err.contains("corpus size 14: indexes"), "{err}");
}

/// `run_scale` with the environment variable `RANKLAB_TEST_POOL` set to `value`, or removed.
fn run_scale_with_pool_var(dir: &Path, value: Option<&Path>) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ranklab"));
    cmd.args([
        "run",
        "tasks/p",
        "-x",
        "tasks/p/experiments-scale.yaml",
        "--reports",
        "out",
    ])
    .current_dir(dir)
    .env("RANKLAB_CACHE", dir.join("cache"))
    .env_remove("GITHUB_STEP_SUMMARY");
    match value {
        Some(v) => cmd.env("RANKLAB_TEST_POOL", v),
        None => cmd.env_remove("RANKLAB_TEST_POOL"),
    };
    cmd.output().expect("run ranklab")
}

/// Both halves: a pool named by a set variable is drawn (the curve names `from` as written, the
/// same on every machine); named by an unset one, the curve is not drawn, the run says so and
/// succeeds, and the curve files already there keep their bytes.
#[test]
fn a_pool_named_by_a_variable_is_drawn_when_set_and_left_alone_when_not() {
    let tmp = common::fixture_copy("bad_input");
    let pool_dir = pool(tmp.path(), 30, &[]);
    suite_with(
        tmp.path(),
        "{ from: \"${RANKLAB_TEST_POOL}\", sizes: [0, 10, 30] }",
    );
    let o = run_scale_with_pool_var(tmp.path(), Some(&pool_dir));
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let curve = tmp.path().join("out/p/scale.scale.md");
    let drawn = std::fs::read(&curve).unwrap();
    let md = String::from_utf8(drawn.clone()).unwrap();
    assert!(
        md.contains("drawn from ${RANKLAB_TEST_POOL} (30 documents"),
        "{md}"
    );
    assert!(md.contains("| configuration | 4 | 14 | 34 |"), "{md}");

    std::fs::write(&curve, "committed earlier\n").unwrap();
    let o = run_scale_with_pool_var(tmp.path(), None);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let out = common::stdout(&o) + &common::stderr(&o);
    assert!(
        out.contains("the corpus-size curve was not drawn")
            && out.contains("RANKLAB_TEST_POOL, not set here"),
        "{out}"
    );
    assert_eq!(std::fs::read(&curve).unwrap(), b"committed earlier\n");
    assert!(tmp.path().join("out/p/scale.md").is_file());
}

/// A bad `distractors:` block, the pool's extra documents and what the error must say.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn bad_distractors_are_refused_with_one_line_and_nothing_written() {
    let cases: [Case; 5] = [
        (
            "{ from: ../../pool, sizes: [20, 10] }",
            &[],
            &["strictly increasing", "10 comes after 20"],
        ),
        (
            "{ from: ../../pool, sizes: [0, 50] }",
            &[],
            &["size 50 is larger than the pool", "30 documents"],
        ),
        (
            "{ from: ../../corpus-nowhere, sizes: [0, 5] }",
            &[],
            &["is not a corpus"],
        ),
        (
            "{ from: ../../pool, sizes: [0, 5] }",
            &[("alpha", "same id as a record")],
            &["\"alpha\"", "also a document of the suite's corpus"],
        ),
        (
            "{ from: ../../pool, sizes: [0, 5], seeds: 3 }",
            &[],
            &["seeds"],
        ),
    ];
    for (distractors, extra, needles) in cases {
        let tmp = common::fixture_copy("bad_input");
        pool(tmp.path(), 30 - extra.len(), extra);
        suite_with(tmp.path(), distractors);
        let o = run_scale(tmp.path());
        common::assert_bad_input(&o, "tasks/p/experiments-scale.yaml", needles);
        assert_eq!(
            common::stderr(&o).lines().count(),
            1,
            "{}",
            common::stderr(&o)
        );
        assert!(
            !tmp.path().join("out").exists(),
            "{distractors}: something was written"
        );
    }
}

#[test]
fn the_curves_whole_corpus_point_is_the_plain_report_and_bad_sizes_are_refused() {
    let tmp = common::fixture_copy("bad_input");
    let coll = tmp.path().join("beir");
    let run = |extra: &[&str]| {
        let mut args = vec!["beir", "beir", "--configs", "bm25", "--reports", "out"];
        args.extend_from_slice(extra);
        common::ranklab_in(tmp.path(), &args)
    };
    let o = run(&[]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let o = run(&["--corpus-sizes", "2,all"]);
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
    let plain = std::fs::read_to_string(tmp.path().join("out/beir/beir.csv")).unwrap();
    let curve = std::fs::read_to_string(tmp.path().join("out/beir/beir.scale.csv")).unwrap();
    // The plain report's bm25 row: configuration, then nDCG@10, recall@100, … in measures()'s order.
    let row: Vec<&str> = plain
        .lines()
        .find(|l| l.starts_with("bm25"))
        .unwrap()
        .split(',')
        .collect();
    // The curve's measures are the headline ones (nDCG@10, recall@100).
    for (measure, column) in [("nDCG@10", 1), ("recall@100", 2)] {
        let at_all = curve
            .lines()
            .find(|l| l.starts_with(&format!("{measure},bm25,3,")))
            .unwrap_or_else(|| panic!("no {measure} at 3 documents in\n{curve}"));
        assert_eq!(
            at_all.split(',').nth(4),
            Some(row[column]),
            "{measure}: {at_all} vs {row:?}"
        );
    }
    assert!(
        coll.join("corpus.jsonl").is_file(),
        "the collection is untouched"
    );
    for (sizes, needle) in [
        ("1,all", "between the 2 judged documents"),
        ("3,2", "strictly increasing"),
        ("2,10", "10 is larger than the corpus (3 documents)"),
        ("2,many", "\"many\" is not a number"),
    ] {
        let o = run(&["--corpus-sizes", sizes]);
        assert_eq!(common::code(&o), 2, "{sizes}: {}", common::stderr(&o));
        assert!(
            common::stderr(&o).contains(needle),
            "{sizes}: {}",
            common::stderr(&o)
        );
    }
}
