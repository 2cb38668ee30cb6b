//! Nothing unbounded where input enters (issue 42, cases 4, 5, 6 and 11), through the built
//! binary on the small `bad_input` fixture (bm25 only: no model needed). Properties:
//! - a qrels or run that is `/dev/zero` or a FIFO, an experiments file that is a FIFO, and a BEIR
//!   `corpus.jsonl` linked to `/dev/zero` are refused at once (exit 2, naming what the file is),
//!   never read or waited on;
//! - a run line longer than 16 MiB (no newline) is refused naming the line, not buffered whole;
//! - a `suite.yaml` nested 100,000 deep is refused by the depth scan (`levels deep`), not by the
//!   parser's recursion limit after a quadratic parse;
//! - a command engine answering a 2 MB hit id is refused naming the configuration and the task;
//!   one writing 20 MiB without a newline is refused at the line bound; a 5 MB stderr line is
//!   quoted by its first 1,000 bytes; a 10 MB `version` answer reaches no report whole;
//! - messages say the real place and reason: a name written with YAML escapes at its line, a
//!   duplicated task id at its second line, `eval`'s out-of-range relevance, `-M`, cutoff and a
//!   negative `-N`.
//!
//! No assertion is timed: a run that would block is killed after a generous limit so that the
//! regression fails instead of hanging the suite.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a run may take before the test calls it hung.
const HUNG: Duration = Duration::from_secs(90);

/// `ranklab ARGS` in `dir` (cache under `dir`), killed if it runs past [`HUNG`]: the exit code
/// (None when it hung) and stderr.
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let err_path = dir.join("ranklab.err");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let code = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s.code();
        }
        if start.elapsed() > HUNG {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (code, std::fs::read_to_string(err_path).unwrap())
}

fn mkfifo(p: &Path) {
    let ok = Command::new("mkfifo").arg(p).status().unwrap().success();
    assert!(ok, "mkfifo {}", p.display());
}

#[test]
fn devices_and_fifos_are_refused_at_once_naming_what_they_are() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    // The good half: the fixture's own files evaluate.
    let (code, err) = run(dir, &["eval", "trec/qrels.txt", "trec/run.trec"]);
    assert_eq!(code, Some(0), "{err}");
    // /dev/zero as the run, then as the qrels (it aborted on a 4 GiB allocation, rc 134).
    for args in [
        ["eval", "trec/qrels.txt", "/dev/zero"],
        ["eval", "/dev/zero", "trec/run.trec"],
    ] {
        let (code, err) = run(dir, &args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("/dev/zero") && err.contains("a character device, not a regular file"),
            "{args:?}: {err}"
        );
    }
    // A FIFO nobody writes: opening it for reading would block for ever.
    mkfifo(&dir.join("run.fifo"));
    let (code, err) = run(dir, &["eval", "trec/qrels.txt", "run.fifo"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("run.fifo") && err.contains("a FIFO"), "{err}");
    mkfifo(&dir.join("experiments.yaml"));
    let (code, err) = run(
        dir,
        &["run", "tasks/p", "-x", "experiments.yaml", "--reports", "r"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("experiments.yaml") && err.contains("a FIFO"),
        "{err}"
    );
    // A BEIR collection whose corpus.jsonl is /dev/zero.
    let beir = dir.join("bz");
    std::fs::create_dir_all(beir.join("qrels")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", beir.join("corpus.jsonl")).unwrap();
    std::fs::write(
        beir.join("queries.jsonl"),
        "{\"_id\":\"q1\",\"text\":\"x\"}\n",
    )
    .unwrap();
    std::fs::write(
        beir.join("qrels/test.tsv"),
        "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
    )
    .unwrap();
    let (code, err) = run(
        dir,
        &["beir", "bz", "--configs", "bm25", "--reports", "bzr"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("corpus.jsonl") && err.contains("a character device"),
        "{err}"
    );
}

#[test]
fn a_run_line_over_16_mib_is_refused_at_the_line_bound() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let mut long = b"q1 Q0 ".to_vec();
    long.resize(17 << 20, b'x');
    std::fs::write(dir.join("long.trec"), &long).unwrap();
    let (code, err) = run(dir, &["eval", "trec/qrels.txt", "long.trec"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("long.trec") && err.contains("line 1 is longer than 16777216 bytes"),
        "{err}"
    );
}

#[test]
fn yaml_nested_100000_deep_is_refused_by_the_depth_scan() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let suite = dir.join("tasks/p/suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap();
    let lines = text.lines().count();
    let deep = format!(
        "{text}\nextra: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    std::fs::write(&suite, deep).unwrap();
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
    assert_eq!(code, Some(2), "{err}");
    // The nesting is on the appended line: the file's lines, a blank one, then `extra:`.
    let at = format!("suite.yaml:{}: nested 100001 levels deep", lines + 2);
    assert!(err.contains(&at), "{err}");
    assert!(!err.contains("recursion limit"), "{err}");
}

/// The fixture's experiments with a second configuration `ext` run by `engine.py`, whose
/// Python text is `body` (run once per request line `req`).
fn with_engine(dir: &Path, body: &str, version: bool) {
    let engine = format!(
        "import json, sys\n{}for line in sys.stdin:\n    req = json.loads(line)\n{body}",
        if version {
            "req = json.loads(sys.stdin.readline())\nprint(json.dumps({\"version\": \"v\" * 10000000}), flush=True)\n"
        } else {
            ""
        }
    );
    std::fs::write(dir.join("engine.py"), engine).unwrap();
    std::fs::write(
        dir.join("tasks/p/experiments.yaml"),
        format!(
            "experiment: e\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: ext\n    engine: {{ command: [python3, ../../engine.py], version: {version} }}\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_command_engine_answering_a_2_mb_hit_id_is_refused_naming_configuration_and_task() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    with_engine(
        dir,
        "    print(json.dumps({\"task\": req[\"task\"], \"hits\": [{\"id\": \"x\" * 2000000, \"score\": 1.0}]}), flush=True)\n",
        false,
    );
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("configuration \"ext\"")
            && err.contains("task T1")
            && err.contains("2000000 bytes long, over ranklab's limit of 4096 bytes"),
        "{err}"
    );
    assert!(
        err.len() < 10_000,
        "the message quotes the id whole: {} bytes",
        err.len()
    );
    assert!(!dir.join("r/p/runs/ext.trec").exists());
    // The good half: a 4,096-byte id is an id.
    with_engine(
        dir,
        "    print(json.dumps({\"task\": req[\"task\"], \"hits\": [{\"id\": \"x\" * 4096, \"score\": 1.0}]}), flush=True)\n",
        false,
    );
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn engine_output_without_a_newline_is_refused_at_the_line_bound() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    with_engine(
        dir,
        "    sys.stdout.write(\"x\" * (20 << 20)); sys.stdout.flush()\n    import time; time.sleep(3600)\n",
        false,
    );
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("configuration \"ext\"")
            && err.contains("line 1 is longer than 16777216 bytes"),
        "{err}"
    );
}

#[test]
fn engine_stderr_and_version_are_kept_to_a_bounded_prefix() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    // 5 MB of stderr on one line, then an exit before answering.
    with_engine(
        dir,
        "    sys.stderr.write(\"e\" * 5000000 + \"\\n\"); sys.stderr.flush(); sys.exit(3)\n",
        false,
    );
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("exited with code 3") && err.contains("(5000000 bytes in all)"),
        "{err}"
    );
    assert!(
        err.len() < 10_000,
        "stderr quoted whole: {} bytes",
        err.len()
    );
    // A 10 MB version answer: the run goes on, and no report holds it whole.
    with_engine(
        dir,
        "    print(json.dumps({\"task\": req[\"task\"], \"hits\": [{\"id\": \"alpha\", \"score\": 1.0}]}), flush=True)\n",
        true,
    );
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
    assert_eq!(code, Some(0), "{err}");
    let mut saw_version = false;
    for (path, bytes) in common::tree(&dir.join("r")) {
        let longest = bytes
            .split(|&b| b != b'v')
            .map(<[u8]>::len)
            .max()
            .unwrap_or(0);
        assert!(
            longest <= 1000,
            "{} holds {longest} bytes of the version",
            path.display()
        );
        saw_version |= longest == 1000;
    }
    assert!(
        saw_version,
        "the version's first 1,000 bytes are in a report"
    );
}

#[test]
fn names_written_with_escapes_and_duplicate_ids_are_placed_at_their_line() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    for (written, shown) in [(r#""a\x2fb""#, r#""a/b""#), (r#""a\nb""#, r#""a\nb""#)] {
        std::fs::write(
            dir.join("tasks/p/experiments.yaml"),
            format!("experiment: e\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: {written}\n    retriever: bm25\n"),
        )
        .unwrap();
        let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
        assert_eq!(code, Some(2), "{err}");
        // The name is on line 6 (counted in the text above).
        assert!(
            err.contains(&format!("experiments.yaml:6: configuration name {shown}")),
            "{written}: {err}"
        );
    }
    let fixture = common::fixture("bad_input");
    std::fs::copy(
        fixture.join("tasks/p/experiments.yaml"),
        dir.join("tasks/p/experiments.yaml"),
    )
    .unwrap();
    // The fixture's suite has `- id: T1` on line 5 and `- id: T2` on line 8.
    let suite = std::fs::read_to_string(fixture.join("tasks/p/suite.yaml")).unwrap();
    assert_eq!(suite.lines().nth(4), Some("  - id: T1"));
    assert_eq!(suite.lines().nth(7), Some("  - id: T2"));
    std::fs::write(
        dir.join("tasks/p/suite.yaml"),
        suite.replace("  - id: T2", r#"  - id: "T\n2""#),
    )
    .unwrap();
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(r#"suite.yaml:8: task id "T\n2""#), "{err}");
    std::fs::write(
        dir.join("tasks/p/suite.yaml"),
        suite.replace("  - id: T2", "  - id: T1"),
    )
    .unwrap();
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("suite.yaml:8: duplicate task id \"T1\" (first on line 5)"),
        "{err}"
    );
}

#[test]
fn eval_says_the_real_reason_for_numbers_out_of_range() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    std::fs::write(dir.join("q.txt"), "q1 0 a 99999999999\n").unwrap();
    std::fs::write(dir.join("r.trec"), "q1 Q0 a 1 1.0 t\n").unwrap();
    let (code, err) = run(dir, &["eval", "q.txt", "r.trec"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("q.txt:1:8: relevance `99999999999` is out of range"),
        "{err}"
    );
    std::fs::write(dir.join("q.txt"), "q1 0 a 1.5\n").unwrap();
    let (_, err) = run(dir, &["eval", "q.txt", "r.trec"]);
    assert!(err.contains("relevance `1.5` is not an integer"), "{err}");
    std::fs::write(dir.join("q.txt"), "q1 0 a 1\n").unwrap();
    // -M 2^64 - 1 is a number of documents (every one); one more is too large.
    let (code, err) = run(
        dir,
        &["eval", "-M", "18446744073709551615", "q.txt", "r.trec"],
    );
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = run(
        dir,
        &["eval", "-M", "18446744073709551616", "q.txt", "r.trec"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("-M 18446744073709551616 is too large"),
        "{err}"
    );
    let (code, err) = run(
        dir,
        &["eval", "-m", "P.99999999999999999999", "q.txt", "r.trec"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("cutoff `99999999999999999999` is too large"),
        "{err}"
    );
    let (code, err) = run(dir, &["eval", "-N", "-1", "q.txt", "r.trec"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("-N wants the number of documents in the collection (0 or more")
            && !err.contains("unexpected argument"),
        "{err}"
    );
}

/// A folder where a suite's `judgments.yaml` belongs is refused naming it (exit 2): it was
/// taken for no judgments, and the report silently lost its judgments (this session's attack
/// pass). The good half: the suite without one runs.
#[test]
fn a_folder_in_place_of_judgments_yaml_is_refused_naming_it() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r"]);
    assert_eq!(code, Some(0), "{err}");
    std::fs::create_dir(dir.join("tasks/p/judgments.yaml")).unwrap();
    let (code, err) = run(dir, &["run", "tasks/p", "--reports", "r2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("judgments.yaml") && err.contains("a directory, not a regular file"),
        "{err}"
    );
    assert!(!dir.join("r2").exists(), "nothing written");
}
