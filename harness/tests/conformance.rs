//! `ranklab eval` against trec_eval 10.0's own test files (`../shared/data/trec_eval`, or the
//! directory in `RANKLAB_SHARED_DATA`/trec_eval). Properties checked:
//! - for each of trec_eval's expected outputs (out.test, .a, .aq, .aqc with `-c` on
//!   results.trunc, .aql with `-l2 -mrelstring.20` on qrels.rel_level), ranklab prints exactly
//!   the file, every line of it, byte for byte (so every value of every measure of `all_trec`
//!   agrees to the printed precision, and per-query order, padding, counts and relstrings agree
//!   too);
//! - trec_eval's quirks: a measure given twice keeps its first parameters, `P.5.5` reads as
//!   P_5, `-c` with `-l2` sums num_rel over every judgment above 0;
//! - `-q -m map -m recip_rank -m P.5,10 -m ndcg_cut.10 -m recall.100` prints exactly trec_eval's
//!   lines for those measures;
//! - bad input (wrong field count, NaN or non-numeric score, a document twice in a query, a qrels
//!   query missing from the run without `-c`) exits 2, names file:line, prints nothing on stdout;
//!   the missing-query message and docs/eval.md say what trec_eval 10.0 does instead;
//! - a document twice is looked for where trec_eval looks (its `form_res_rels.c`): not in a run
//!   query the qrels lack (results.test with such a query appended still prints out.test.aq),
//!   not past the `-M` cut (hand-computed values), and still refused in a judged query;
//! - what trec_eval accepts (tabs, CRLF, a BOM, interleaved queries) gives the same numbers;
//! - the parallel reader (forced with `RANKLAB_EVAL_CHUNK`, on one thread and two) prints every
//!   expected file byte for byte too, on grouped copies of the runs in two orders and on the
//!   originals.
//!
//! A missing data directory fails the test: it must not pass silently.

use std::path::Path;
use std::process::{Command, Output};

mod common;
use common::trec_eval_data;

/// Runs `ranklab eval ARGS`.
fn ranklab_eval(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .arg("eval")
        .args(args)
        .output()
        .expect("run ranklab")
}

/// The stdout of `ranklab eval ARGS`, which must succeed.
fn eval_ok(args: &[&str]) -> String {
    common::ok(&[&["eval"], args].concat())
}

/// Every line: ranklab implements every measure these files hold.
fn implemented(_name: &str) -> bool {
    true
}

fn measure_of(line: &str) -> &str {
    line.split('\t').next().unwrap_or("").trim_end()
}

/// The expected file's lines for the measures `keep` selects, in file order.
fn expected_lines(file: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let text = std::fs::read_to_string(trec_eval_data().join(file)).expect("read expected output");
    text.lines()
        .filter(|l| keep(measure_of(l)))
        .map(str::to_string)
        .collect()
}

/// Compares line by line and reports every difference readably.
fn assert_same_lines(what: &str, got: &str, want: &[String]) {
    let got: Vec<&str> = got.lines().collect();
    let mut diffs = Vec::new();
    for i in 0..got.len().max(want.len()) {
        let (g, w) = (got.get(i).copied(), want.get(i).map(String::as_str));
        if g != w {
            diffs.push(format!(
                "line {}:\n  ranklab:   {g:?}\n  trec_eval: {w:?}",
                i + 1
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "{what}: {} of {} lines differ\n{}",
        diffs.len(),
        want.len(),
        diffs
            .iter()
            .take(20)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(!want.is_empty(), "{what}: nothing to compare");
}

fn path(file: &str) -> String {
    trec_eval_data().join(file).to_string_lossy().into_owned()
}

#[test]
fn default_measures_match_out_test() {
    let got = eval_ok(&[&path("qrels.test"), &path("results.test")]);
    assert_same_lines("out.test", &got, &expected_lines("out.test", implemented));
}

#[test]
fn all_trec_matches_out_test_a() {
    let got = eval_ok(&["-m", "all_trec", &path("qrels.test"), &path("results.test")]);
    assert_same_lines(
        "out.test.a",
        &got,
        &expected_lines("out.test.a", implemented),
    );
}

#[test]
fn per_query_matches_out_test_aq() {
    let got = eval_ok(&[
        "-m",
        "all_trec",
        "-q",
        &path("qrels.test"),
        &path("results.test"),
    ]);
    assert_same_lines(
        "out.test.aq",
        &got,
        &expected_lines("out.test.aq", implemented),
    );
}

#[test]
fn complete_on_truncated_run_matches_out_test_aqc() {
    let got = eval_ok(&[
        "-m",
        "all_trec",
        "-q",
        "-c",
        &path("qrels.test"),
        &path("results.trunc"),
    ]);
    assert_same_lines(
        "out.test.aqc",
        &got,
        &expected_lines("out.test.aqc", implemented),
    );
}

#[test]
fn relevance_level_2_matches_out_test_aql() {
    let got = eval_ok(&[
        "-m",
        "all_trec",
        "-mrelstring.20",
        "-q",
        "-l2",
        &path("qrels.rel_level"),
        &path("results.test"),
    ]);
    assert_same_lines(
        "out.test.aql",
        &got,
        &expected_lines("out.test.aql", implemented),
    );
}

/// The whole file, byte for byte (the line comparison above reports differences readably;
/// this also pins the final newline and that nothing is added).
fn assert_whole_file(file: &str, got: &str) {
    let want = std::fs::read_to_string(trec_eval_data().join(file)).expect("read expected output");
    assert!(got == want, "{file}: output differs from trec_eval's file");
}

/// trec_eval's expected outputs and the arguments that produce them (file names in `data_dir`).
fn trec_eval_cases() -> [(&'static str, Vec<&'static str>); 5] {
    [
        ("out.test", vec!["qrels.test", "results.test"]),
        (
            "out.test.a",
            vec!["-m", "all_trec", "qrels.test", "results.test"],
        ),
        (
            "out.test.aq",
            vec!["-m", "all_trec", "-q", "qrels.test", "results.test"],
        ),
        (
            "out.test.aqc",
            vec!["-m", "all_trec", "-q", "-c", "qrels.test", "results.trunc"],
        ),
        (
            "out.test.aql",
            vec![
                "-m",
                "all_trec",
                "-mrelstring.20",
                "-q",
                "-l2",
                "qrels.rel_level",
                "results.test",
            ],
        ),
    ]
}

/// The arguments with file names made paths; a run file named in `runs` is replaced by the
/// path given there.
fn case_args(args: &[&str], runs: &[(&str, String)]) -> Vec<String> {
    args.iter()
        .map(|a| match runs.iter().find(|(name, _)| name == a) {
            Some((_, p)) => p.clone(),
            None if a.contains('.') && !a.starts_with('-') => path(a),
            None => a.to_string(),
        })
        .collect()
}

#[test]
fn every_file_matches_byte_for_byte() {
    for (file, args) in trec_eval_cases() {
        let args = case_args(&args, &[]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_whole_file(file, &eval_ok(&args));
    }
}

/// Copies of a run whose queries are grouped (what the parallel reader evaluates itself;
/// trec_eval's results.test and results.trunc interleave their queries, which it leaves to the
/// sequential reader): grouped by query id in file order, and grouped in reverse query order
/// with each query's lines reversed. trec_eval orders a query's documents itself, so its
/// outputs hold for both.
fn grouped_copies(dir: &Path, run: &str) -> [String; 2] {
    let text = std::fs::read_to_string(trec_eval_data().join(run)).expect("read run");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_by_key(|l| l.split_whitespace().next().unwrap_or("").to_string());
    let grouped = lines.join("\n") + "\n";
    let mut reversed: Vec<&str> = lines.clone();
    reversed.reverse();
    let reversed = reversed.join("\n") + "\n";
    [
        write(dir, &format!("{run}.grouped"), grouped.as_bytes()),
        write(dir, &format!("{run}.reversed"), reversed.as_bytes()),
    ]
}

/// `ranklab eval ARGS` with the parallel reader forced: chunks of `chunk` bytes on `threads`
/// threads.
fn eval_parallel(args: &[String], chunk: usize, threads: usize) -> String {
    let (chunk, threads) = (chunk.to_string(), threads.to_string());
    let mut all = vec!["eval"];
    all.extend(args.iter().map(String::as_str));
    common::ok_with(
        &all,
        &[
            ("RANKLAB_EVAL_CHUNK", &chunk),
            ("RAYON_NUM_THREADS", &threads),
        ],
    )
}

/// The parallel reader (forced on these small files with small chunks, so that queries are cut
/// across many chunks) prints trec_eval's files byte for byte, on one thread and on two, for
/// grouped runs in two orders and for the original interleaved ones.
#[test]
fn parallel_reader_prints_every_file_byte_for_byte() {
    let dir = temp_dir();
    let [test_grouped, test_reversed] = grouped_copies(dir.path(), "results.test");
    let [trunc_grouped, trunc_reversed] = grouped_copies(dir.path(), "results.trunc");
    let variants: [Vec<(&str, String)>; 3] = [
        vec![
            ("results.test", test_grouped),
            ("results.trunc", trunc_grouped),
        ],
        vec![
            ("results.test", test_reversed),
            ("results.trunc", trunc_reversed),
        ],
        vec![],
    ];
    for (file, args) in trec_eval_cases() {
        for runs in &variants {
            let args = case_args(&args, runs);
            for (chunk, threads) in [(64, 1), (64, 2), (3000, 2)] {
                let got = eval_parallel(&args, chunk, threads);
                assert!(
                    got == std::fs::read_to_string(trec_eval_data().join(file)).unwrap(),
                    "{file}: {args:?} with chunks of {chunk} bytes on {threads} threads differs"
                );
            }
        }
    }
}

#[test]
fn long_flag_forms_are_trec_evals() {
    let got = eval_ok(&[
        "--measure",
        "all_trec",
        "--query_eval_wanted",
        "--complete_rel_info_wanted",
        &path("qrels.test"),
        &path("results.trunc"),
    ]);
    assert_whole_file("out.test.aqc", &got);
    let got = eval_ok(&[
        "--measure=all_trec",
        "--measure=relstring.20",
        "-q",
        "--level_for_rel=2",
        &path("qrels.rel_level"),
        &path("results.test"),
    ]);
    assert_whole_file("out.test.aql", &got);
}

#[test]
fn first_parameters_win_and_p_5_5_reads_p_5() {
    let q = path("qrels.test");
    let r = path("results.test");
    let p10 = expected_lines("out.test.a", |m| m == "P_10");
    let p5 = expected_lines("out.test.a", |m| m == "P_5");
    assert_same_lines(
        "-m P.10 -m P.5",
        &eval_ok(&["-m", "P.10", "-m", "P.5", &q, &r]),
        &p10,
    );
    assert_same_lines("-m P.5.5", &eval_ok(&["-m", "P.5.5", &q, &r]), &p5);
}

#[test]
fn complete_with_level_2_counts_num_rel_over_judgments_above_0() {
    // qrels.rel_level's judgments above 0: 301 has 462 + 6 + 6, 302 has 77, 303 has 8 = 559;
    // at level 2 the per-query num_rel are 12, 77 and 8 (out.test.aql), but trec_eval 10.0's
    // summary under -c re-counts every judgment above 0 (m_num_rel.c, te_calc_avg_num_rel).
    let got = eval_ok(&[
        "-c",
        "-l2",
        "-m",
        "num_rel",
        &path("qrels.rel_level"),
        &path("results.trunc"),
    ]);
    assert_eq!(got, "num_rel               \tall\t559\n");
}

#[test]
fn max_docs_per_topic_truncates_like_a_shorter_run() {
    // -M 100 on results.test equals evaluating the run cut to each query's top 100 documents
    // in trec_eval's order (score descending, then docno descending).
    let run = std::fs::read_to_string(trec_eval_data().join("results.test")).unwrap();
    let mut by_q: std::collections::BTreeMap<String, Vec<(f64, String, String)>> =
        Default::default();
    for l in run.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        by_q.entry(f[0].to_string()).or_default().push((
            f[4].parse().unwrap(),
            f[2].to_string(),
            l.to_string(),
        ));
    }
    let mut cut = String::new();
    for docs in by_q.values_mut() {
        docs.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        for d in docs.iter().take(100) {
            cut += &d.2;
            cut += "\n";
        }
    }
    let dir = temp_dir();
    let r = write(dir.path(), "cut", cut.as_bytes());
    let q = path("qrels.test");
    let want = eval_ok(&["-q", "-m", "all_trec", &q, &r]);
    let got = eval_ok(&[
        "-q",
        "-m",
        "all_trec",
        "-M",
        "100",
        &q,
        &path("results.test"),
    ]);
    assert_eq!(got, want);
    // and -M 100 changes P_1000's denominator nothing, but num_ret drops to 300
    assert!(got.contains("num_ret               \tall\t300\n"), "{got}");
}

#[test]
fn nosummary_prints_only_per_query_lines() {
    let q = path("qrels.test");
    let r = path("results.test");
    let got = eval_ok(&["-q", "-n", "-m", "all_trec", &q, &r]);
    let want = expected_lines("out.test.aq", |_| true);
    let want: Vec<String> = want
        .into_iter()
        .filter(|l| !l.contains("\tall\t"))
        .collect();
    assert_same_lines("-q -n", &got, &want);
    assert_eq!(eval_ok(&["-n", &q, &r]), "");
}

#[test]
fn issue_command_prints_trec_evals_lines() {
    let got = eval_ok(&[
        "-q",
        "-m",
        "map",
        "-m",
        "recip_rank",
        "-m",
        "P.5,10",
        "-m",
        "ndcg_cut.10",
        "-m",
        "recall.100",
        &path("qrels.test"),
        &path("results.test"),
    ]);
    let want = expected_lines("out.test.aq", |m| {
        matches!(
            m,
            "map" | "recip_rank" | "P_5" | "P_10" | "ndcg_cut_10" | "recall_100"
        )
    });
    assert_eq!(want.len(), 4 * 6, "3 queries + all, 6 measures each");
    assert_same_lines(
        "-q -m map -m recip_rank -m P.5,10 -m ndcg_cut.10 -m recall.100",
        &got,
        &want,
    );
}

// ---- what trec_eval accepts gives the same numbers ----

fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write temp file");
    p.to_string_lossy().into_owned()
}

#[test]
fn tabs_crlf_bom_and_interleaving_give_trec_evals_numbers() {
    let run = std::fs::read_to_string(trec_eval_data().join("results.test")).unwrap();
    let want = eval_ok(&[
        "-q",
        "-m",
        "all_trec",
        &path("qrels.test"),
        &path("results.test"),
    ]);
    let dir = temp_dir();
    let crlf_tabs_bom = {
        let body: String = run
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join("\t") + "\r\n")
            .collect();
        let mut b = b"\xEF\xBB\xBF".to_vec();
        b.extend_from_slice(body.as_bytes());
        b
    };
    // results.test is itself interleaved (its lines alternate between queries in places);
    // a fully grouped copy must agree as well.
    let mut lines: Vec<&str> = run.lines().collect();
    lines.sort_by_key(|l| l.split_whitespace().next().unwrap_or("").to_string());
    let grouped = lines.join("\n") + "\n";
    for (name, bytes) in [
        ("crlf_tabs_bom", crlf_tabs_bom),
        ("grouped", grouped.into_bytes()),
    ] {
        let r = write(dir.path(), name, &bytes);
        let got = eval_ok(&["-q", "-m", "all_trec", &path("qrels.test"), &r]);
        assert_eq!(got, want, "{name}");
    }
}

// ---- bad input: exit 2, file:line, nothing on stdout ----

fn assert_fails(args: &[&str], needles: &[&str]) {
    let out = ranklab_eval(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "{args:?}: partial output {:?}",
        String::from_utf8_lossy(&out.stdout)
    );
    for n in needles {
        assert!(
            stderr.contains(n),
            "{args:?}: stderr lacks {n:?}:\n{stderr}"
        );
    }
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn bad_runs_exit_2_naming_file_and_line() {
    let dir = temp_dir();
    let qrels = write(dir.path(), "qrels", b"q1 0 a 1\nq2 0 b 1\n");
    let good = "q1 Q0 a 1 2.0 t\nq2 Q0 b 1 1.0 t\n";
    let cases: [(&str, String, Vec<String>); 5] = [
        (
            "field_count",
            "q1 Q0 a 1 2.0 t\nq2 Q0 b 1 1.0\n".into(),
            vec![":2: expected 6 fields".into()],
        ),
        (
            "nan",
            "q1 Q0 a 1 2.0 t\nq2 Q0 b 1 NaN t\n".into(),
            vec![":2:11: score `NaN` is not a finite number".into()],
        ),
        (
            "non_numeric",
            "q1 Q0 a 1 high t\nq2 Q0 b 1 1.0 t\n".into(),
            vec![":1:11: score `high`".into()],
        ),
        (
            "duplicate",
            "q1 Q0 a 1 2.0 t\nq1 Q0 x 2 1.5 t\nq1 Q0 a 3 1.0 t\nq2 Q0 b 1 1.0 t\n".into(),
            vec![":3: document `a` appears twice in query `q1` (first at line 1)".into()],
        ),
        ("empty", String::new(), vec!["the run file is empty".into()]),
    ];
    for (name, body, needles) in cases {
        let run = write(dir.path(), name, body.as_bytes());
        let mut needles: Vec<String> = needles.iter().map(|n| format!("{run}{n}")).collect();
        if name == "empty" {
            needles = vec![format!("{run}: the run file is empty")];
        }
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        assert_fails(&[&qrels, &run], &needles);
    }
    let run = write(dir.path(), "good", good.as_bytes());
    eval_ok(&[&qrels, &run]);
}

#[test]
fn missing_query_without_c_exits_2_naming_the_query() {
    let dir = temp_dir();
    let qrels = write(dir.path(), "qrels", b"q1 0 a 1\nq2 0 b 1\n");
    let run = write(dir.path(), "run", b"q1 Q0 a 1 2.0 t\n");
    // What the message says of trec_eval is what its 10.0 source does (trec_eval.c walks the
    // qrels queries and, without -c, keeps the last query's results for one the run lacks), and
    // what docs/eval.md says.
    assert_fails(
        &["-m", "map", &qrels, &run],
        &[
            &format!("{qrels}:2: query `q2`"),
            "pass -c",
            "leave them out of the qrels to average over the others",
            "trec_eval 10.0 does neither without -c: it gives a missing query the values of the \
             query it evaluated before",
        ],
    );
    let guide =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/eval.md"))
            .expect("read docs/eval.md");
    let guide = guide.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        guide.contains("trec_eval 10.0 does not skip such a query either")
            && guide.contains("the missing query repeats the previous query's values"),
        "docs/eval.md no longer says what trec_eval 10.0 does with a missing query"
    );
    let out = ranklab_eval(&["-m", "map", &qrels, &run]);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("stops here"));
    let out = eval_ok(&["-c", "-m", "map", &qrels, &run]);
    assert_eq!(out, "map                   \tall\t0.5000\n");
}

/// trec_eval 10.0 looks for a document listed twice only while it evaluates a query
/// (`form_res_rels.c`), and it evaluates only the queries of the qrels: a run query the qrels
/// lack is never looked at, duplicates and all. So results.test with such a query appended,
/// holding a document twice, prints trec_eval's own out.test.aq byte for byte; the same
/// duplicate in a judged query is still refused (exit 2, naming both lines).
#[test]
fn duplicate_doc_in_a_query_the_qrels_lack_is_ignored_as_trec_eval_ignores_it() {
    let run = std::fs::read_to_string(trec_eval_data().join("results.test")).unwrap();
    let dir = temp_dir();
    // The appended lines keep results.test's tag, so that the runid line is the same too.
    let unjudged = format!(
        "{run}999 Q0 DUP-1 1 5.0 STANDARD\n999 Q0 OTHER 2 4.0 STANDARD\n999 Q0 DUP-1 3 3.0 STANDARD\n"
    );
    let r = write(dir.path(), "unjudged_dup", unjudged.as_bytes());
    let got = eval_ok(&["-m", "all_trec", "-q", &path("qrels.test"), &r]);
    assert_whole_file("out.test.aq", &got);

    let judged = format!("{run}301 Q0 DUP-1 1 5.0 STANDARD\n301 Q0 DUP-1 2 3.0 STANDARD\n");
    let lines = run.lines().count();
    let r = write(dir.path(), "judged_dup", judged.as_bytes());
    assert_fails(
        &["-m", "all_trec", &path("qrels.test"), &r],
        &[&format!(
            "{r}:{}: document `DUP-1` appears twice in query `301` (first at line {})",
            lines + 2,
            lines + 1
        )],
    );
}

/// trec_eval cuts a query to its first -M documents (score descending, then docno descending)
/// before it looks for duplicates (`form_res_rels.c`), so a copy past the cut is not seen.
/// Hand-computed: judged a and c relevant (R = 2); the run ranks a (3.0), b (2.0), c (1.0), and
/// c again at 0.5 on line 4.
/// - -M 2: a, b; map = (1/1) / 2 = 0.5, num_ret 2.
/// - -M 3: a, b, c; map = (1/1 + 2/3) / 2 = 0.8333, num_rel_ret 2.
/// - -M 4: both copies of c are in: refused, naming line 4 and line 3.
/// - c twice at the same score 1.0 with -M 2: a, c are kept and the copy takes rank 3, cut:
///   map = (1/1 + 2/2) / 2 = 1.0, num_rel_ret 2 (not 3: the two copies are two ranks).
#[test]
fn duplicate_past_the_max_docs_cut_is_not_seen_as_in_trec_eval() {
    let dir = temp_dir();
    let qrels = write(dir.path(), "qrels", b"q1 0 a 1\nq1 0 c 1\n");
    let run = write(
        dir.path(),
        "run",
        b"q1 Q0 a 1 3.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 c 3 1.0 t\nq1 Q0 c 4 0.5 t\n",
    );
    let ms = ["-m", "map", "-m", "num_ret", "-m", "num_rel_ret"];
    let with = |m: &str, r: &str| {
        let mut a: Vec<&str> = ms.to_vec();
        a.extend(["-M", m, &qrels, r]);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run_at = |m: &str, r: &str| {
        let a = with(m, r);
        eval_ok(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    assert_eq!(
        run_at("2", &run),
        "num_ret               \tall\t2\nnum_rel_ret           \tall\t1\nmap                   \tall\t0.5000\n"
    );
    assert_eq!(
        run_at("3", &run),
        "num_ret               \tall\t3\nnum_rel_ret           \tall\t2\nmap                   \tall\t0.8333\n"
    );
    let a = with("4", &run);
    assert_fails(
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        &[&format!(
            "{run}:4: document `c` appears twice in query `q1` (first at line 3)"
        )],
    );
    let tie = write(
        dir.path(),
        "tie",
        b"q1 Q0 a 1 3.0 t\nq1 Q0 c 2 1.0 t\nq1 Q0 c 3 1.0 t\n",
    );
    assert_eq!(
        run_at("2", &tie),
        "num_ret               \tall\t2\nnum_rel_ret           \tall\t2\nmap                   \tall\t1.0000\n"
    );
}

#[test]
fn bad_arguments_exit_2() {
    let q = path("qrels.test");
    let r = path("results.test");
    assert_fails(
        &["-m", "nosuch", &q, &r],
        &["unknown measure `nosuch`", "ndcg_cut"],
    );
    assert_fails(&["-m", "P.0", &q, &r], &["cutoff `0`"]);
    assert_fails(&[&q, "/nonexistent/run"], &["cannot read /nonexistent/run"]);
}

/// Issue 41 (documented in docs/eval.md's differences): with `-J`, a query none of whose
/// judged documents is retrieved has interpolated precision 0 at every recall point (trec_eval
/// 10.0 prints `-nan` where round(x · R) = 0). Oracle by hand: query 1 (R = 1) retrieves only
/// unjudged x and y, so nothing is left under -J: 0 everywhere; query 2 retrieves its one
/// relevant document first: 1 everywhere; the means are 0.5. Without -J query 1 is 0 too (its
/// relevant document is not retrieved), so the flag changes nothing here but what is counted.
#[test]
fn judged_only_query_with_nothing_judged_retrieved_is_zero_not_nan() {
    let dir = tempfile::tempdir().unwrap();
    let (q, r) = (dir.path().join("qrels"), dir.path().join("run"));
    std::fs::write(&q, "1 0 d1 1\n1 0 d2 0\n2 0 e1 1\n").unwrap();
    std::fs::write(&r, "1 Q0 x 1 3 r\n1 Q0 y 2 2 r\n2 Q0 e1 1 5 r\n").unwrap();
    let out = eval_ok(&[
        "-J",
        "-q",
        "-m",
        "iprec_at_recall",
        "-m",
        "11pt_avg",
        q.to_str().unwrap(),
        r.to_str().unwrap(),
    ]);
    assert!(!out.to_lowercase().contains("nan"), "{out}");
    let mut n = 0;
    for line in out.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let want = match f[1] {
            "1" => "0.0000",
            "2" => "1.0000",
            "all" => "0.5000",
            other => panic!("query {other:?} in {out}"),
        };
        assert_eq!(f[2], want, "{line}");
        n += 1;
    }
    assert_eq!(
        n,
        3 * 12,
        "11 recall points and 11pt_avg for 1, 2 and all: {out}"
    );
}
