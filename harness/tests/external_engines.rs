//! External engines over the command protocol, end to end through the built binary.
//!
//! Properties checked:
//! - the Python and JavaScript clients of `docs/engines.md`, copied from the page, work as
//!   engines: ranklab's run file lists, per task, exactly the ids the client answers when asked
//!   directly (the request piped into it by hand), ordered as the page says (score descending,
//!   then id descending);
//! - `--record` then `--from-recording` (no engine: the command is made unrunnable) writes
//!   byte-identical reports;
//! - `ranklab gate --from-recording` passes on the recording and fails (exit 1) when a recorded
//!   ranking is degraded by hand;
//! - a live run beside a recording says how many tasks changed rank;
//! - a `${NAME}` in an engine's env reaches no written file;
//! - ranklab's current wiring after an external first stage re-ranks the engine's hits by the
//!   corpus's record state, matched by id (expected order computed by hand below), hits outside
//!   the corpus stay below in the engine's order, and without a stage the engine's ranking is
//!   the run as answered; the hits outside the corpus are counted in the report and its JSON.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// A secret the `py` configuration's environment names; it must reach no file.
const SECRET: &str = "s3cr3t-token-4c1f";

fn ranklab(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .current_dir(dir)
        .env("RANKLAB_TEST_SECRET", SECRET)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run ranklab")
}

/// The first fenced block of `lang` in docs/engines.md.
fn doc_block(lang: &str) -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/engines.md"))
            .unwrap();
    let start = doc
        .find(&format!("```{lang}\n"))
        .unwrap_or_else(|| panic!("docs/engines.md has no {lang} block"))
        + lang.len()
        + 4;
    let len = doc[start..].find("```").unwrap();
    doc[start..start + len].to_string()
}

/// Asks a client directly: pipes one request into it and reads its answer.
fn ask_directly(
    program: &str,
    script: &Path,
    corpus: &Path,
    task: &str,
    query: &str,
) -> Vec<(String, f64)> {
    let mut child = Command::new(program)
        .arg(script)
        .arg(corpus)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let req = format!("{{\"task\": \"{task}\", \"query\": \"{query}\", \"k\": 100}}\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(req.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["task"], task);
    let mut hits: Vec<(String, f64)> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap().to_string(),
                h["score"].as_f64().unwrap(),
            )
        })
        .collect();
    // The documented order: score descending, then id descending.
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    hits
}

fn run_ids(run: &str, task: &str) -> Vec<String> {
    run.lines()
        .filter(|l| l.split_whitespace().next() == Some(task))
        .map(|l| l.split_whitespace().nth(2).unwrap().to_string())
        .collect()
}

const EXPERIMENTS: &str = "experiment: e
baseline: bm25
configurations:
  - name: bm25
    retriever: bm25
  - name: py
    engine: { command: [python3, ../../overlap.py, ../../corpus], version: true, env: { TOKEN: \"${RANKLAB_TEST_SECRET}\" } }
  - name: js
    engine: { command: [node, ../../overlap.js, ../../corpus] }
";

/// The documented clients' run files list what each client answers when asked directly.
fn assert_runs_list_what_the_clients_answer(dir: &Path) {
    let out = ranklab(dir, &["run", "tasks/p", "--reports", "reports", "--record"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tasks = [
        ("T1", "idempotency key for a replayed capture"),
        ("T2", "refund a capture"),
        ("T3", "retry the acquirer"),
    ];
    for (program, script, config) in [
        ("python3", "overlap.py", "py"),
        ("node", "overlap.js", "js"),
    ] {
        let run =
            std::fs::read_to_string(dir.join(format!("reports/p/runs/{config}.trec"))).unwrap();
        for (task, query) in tasks {
            let direct = ask_directly(program, &dir.join(script), &dir.join("corpus"), task, query);
            assert!(!direct.is_empty(), "{config} answers {task}");
            let ids: Vec<String> = direct.into_iter().map(|h| h.0).collect();
            assert_eq!(run_ids(&run, task), ids, "{config} {task}");
        }
    }
    let report = std::fs::read_to_string(dir.join("reports/p/e.md")).unwrap();
    assert!(report.contains("`py` (version overlap.py 1)"), "{report}");
}

/// From the recording, with no engine at all: the same bytes. The recording does not hold the
/// expanded secret. Returns the recorded report tree.
fn assert_the_recording_reproduces_the_reports(dir: &Path) -> common::Tree {
    let recorded = common::tree(&dir.join("reports"));
    for (path, bytes) in &recorded {
        assert!(
            !String::from_utf8_lossy(bytes).contains(SECRET),
            "{} holds the expanded ${{RANKLAB_TEST_SECRET}}",
            path.display()
        );
    }
    std::fs::remove_file(dir.join("overlap.py")).unwrap();
    std::fs::remove_file(dir.join("overlap.js")).unwrap();
    std::fs::remove_dir_all(dir.join("reports/p")).unwrap();
    std::fs::create_dir_all(dir.join("reports/p/runs")).unwrap();
    for (rel, bytes) in &recorded {
        if rel.to_string_lossy().ends_with(".recording.json") {
            std::fs::write(dir.join("reports").join(rel), bytes).unwrap();
        }
    }
    let out = ranklab(
        dir,
        &["run", "tasks/p", "--reports", "reports", "--from-recording"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        recorded == common::tree(&dir.join("reports")),
        "reports from the recording differ"
    );
    recorded
}

/// `bench --from-recording` into an empty report tree: refused, naming --recordings; with
/// `--recordings reports`, the same bytes (recordings included) in the new tree.
fn assert_bench_from_recording(dir: &Path, recorded: &common::Tree) {
    let bench = |extra: &[&str]| {
        let mut args = vec![
            "bench",
            "--tasks",
            "tasks",
            "--reports",
            "fresh",
            "--from-recording",
        ];
        args.extend_from_slice(extra);
        ranklab(dir, &args)
    };
    let out = bench(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no recording at") && err.contains("--recordings DIR"),
        "{err}"
    );
    assert!(
        !dir.join("fresh/p").exists(),
        "nothing written by a refused bench"
    );
    let out = bench(&["--recordings", "reports"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        *recorded == common::tree(&dir.join("fresh")),
        "bench --from-recording --recordings into an empty tree differs from the recorded reports"
    );
}

/// The gate on the recording: passes; a degraded recorded ranking fails it.
fn assert_gate_on_the_recording(dir: &Path) {
    let gate = |extra: &[&str]| {
        let mut args = vec![
            "gate",
            "--tasks",
            "tasks",
            "--baseline",
            "baseline.json",
            "--from-recording",
        ];
        args.extend_from_slice(extra);
        ranklab(dir, &args)
    };
    let out = gate(&["--update", "--also", "p/py"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = gate(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let rec_path = dir.join("reports/p/runs/py.recording.json");
    let rec = std::fs::read_to_string(&rec_path).unwrap();
    let t1 = rec
        .lines()
        .find(|l| l.contains("\"task\":\"T1\"}"))
        .unwrap()
        .to_string();
    assert!(t1.contains("\"id\":\"alpha\""), "{t1}");
    std::fs::write(
        &rec_path,
        rec.replace(
            &t1,
            &t1.replace("\"id\":\"alpha\"", "\"id\":\"not-judged\""),
        ),
    )
    .unwrap();
    let out = gate(&[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a degraded recording fails the gate: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("py"));
}

/// A live run beside the (degraded) recording says what changed.
fn assert_a_live_run_says_what_changed(dir: &Path) {
    std::fs::write(dir.join("overlap.py"), doc_block("python")).unwrap();
    std::fs::write(dir.join("overlap.js"), doc_block("javascript")).unwrap();
    let out = ranklab(
        dir,
        &["run", "tasks/p", "--reports", "reports", "--dry-run"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("py: 1 tasks changed rank since the recording"),
        "{err}"
    );
    assert!(
        err.contains("js: every task ranks as in the recording"),
        "{err}"
    );
}

#[test]
fn the_documented_clients_work_and_their_recordings_reproduce_the_reports_and_gate() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    std::fs::write(dir.join("overlap.py"), doc_block("python")).unwrap();
    std::fs::write(dir.join("overlap.js"), doc_block("javascript")).unwrap();
    std::fs::write(dir.join("tasks/p/experiments.yaml"), EXPERIMENTS).unwrap();

    assert_runs_list_what_the_clients_answer(dir);
    let recorded = assert_the_recording_reproduces_the_reports(dir);
    assert_bench_from_recording(dir, &recorded);
    assert_gate_on_the_recording(dir);
    assert_a_live_run_says_what_changed(dir);
}

/// An engine that answers every task with the same five hits: four records of the bad_input
/// fixture and `ghost`, which is not in its corpus.
const FIXED_ENGINE: &str = r#"import json, sys
HITS = [("epsilon", 4.0), ("alpha", 3.5), ("gamma", 3.0), ("ghost", 2.5), ("beta", 0.0)]
for line in sys.stdin:
    task = json.loads(line)["task"]
    hits = [{"id": i, "score": s} for i, s in HITS]
    print(json.dumps({"task": task, "hits": hits}), flush=True)
"#;

/// The bad_input fixture with [`FIXED_ENGINE`] as `fixed.py` and `configurations` (YAML list
/// items) as its experiments, baseline `plain`. The fixture's paired.yaml names `bm25`, which
/// these experiments replace; a paired file that cannot be checked stops the run, so it goes.
fn fixed_engine_suite(configurations: &str) -> tempfile::TempDir {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    std::fs::write(dir.join("fixed.py"), FIXED_ENGINE).unwrap();
    std::fs::remove_file(dir.join("tasks/p/paired.yaml")).unwrap();
    std::fs::write(
        dir.join("tasks/p/experiments.yaml"),
        format!("experiment: e\nbaseline: plain\nconfigurations:\n{configurations}"),
    )
    .unwrap();
    tmp
}

#[test]
fn the_current_wiring_after_an_external_engine_reads_the_corpus_and_hits_outside_it_are_counted() {
    let tmp = fixed_engine_suite("  - name: plain\n    engine: { command: [python3, ../../fixed.py] }\n  - name: wired\n    engine: { command: [python3, ../../fixed.py] }\n    wiring: current\n");
    let dir = tmp.path();
    let out = ranklab(dir, &["run", "tasks/p", "--reports", "reports"]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let runs =
        |c: &str| std::fs::read_to_string(dir.join(format!("reports/p/runs/{c}.trec"))).unwrap();
    let (plain, wired) = (runs("plain"), runs("wired"));
    for task in ["T1", "T2", "T3"] {
        // No stage after the engine: its ranking as answered (score descending), `ghost` kept
        // in its place.
        assert_eq!(
            run_ids(&plain, task),
            ["epsilon", "alpha", "gamma", "ghost", "beta"],
            "{task}"
        );
        // The current wiring on the four records of the corpus (ghost set aside): scores
        // min-max normalized over 4.0, 3.5, 3.0, 0.0 to 1, 0.875, 0.75, 0; penalties from
        // tasks/p/search-practice.yaml and each record's front matter:
        //   epsilon superseded (0.30), first-class: 1 - 0.30 = 0.70
        //   alpha   active, first-class:            0.875
        //   gamma   superseded (0.30), amendment (0.05): 0.75 - 0.35 = 0.40
        //   beta    active, first-class:            0
        // then ghost, below every record the wiring ranked.
        assert_eq!(
            run_ids(&wired, task),
            ["alpha", "epsilon", "gamma", "beta", "ghost"],
            "{task}"
        );
    }
    // One `ghost` per task per configuration: 3 hits outside the corpus each, in the Markdown
    // and in the JSON.
    let md = std::fs::read_to_string(dir.join("reports/p/e.md")).unwrap();
    for c in ["plain", "wired"] {
        assert!(
            md.contains(&format!(
                "- `{c}`: 3 hits name documents outside the corpus (kept, unjudged: they count as misses)."
            )),
            "{md}"
        );
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reports/p/e.json")).unwrap())
            .unwrap();
    assert_eq!(
        json["external"],
        serde_json::json!([
            {"configuration": "plain", "version": null, "hits_outside_corpus": 3, "tasks_counted_empty": 0},
            {"configuration": "wired", "version": null, "hits_outside_corpus": 3, "tasks_counted_empty": 0},
        ]),
        "{json}"
    );
}

/// A recorded response that does not parse (its `task` field gone) stops the replay naming the
/// recording file it is in, the configuration and the task (it named the configuration and the
/// task only; this session's attack pass). The good half: the recording as written replays.
#[test]
fn a_recorded_response_that_does_not_parse_names_its_recording() {
    let tmp =
        fixed_engine_suite("  - name: plain\n    engine: { command: [python3, ../../fixed.py] }\n");
    let dir = tmp.path();
    let args = ["run", "tasks/p", "--reports", "reports"];
    let out = ranklab(dir, &[&args[..], &["--record"]].concat());
    assert!(out.status.success(), "{}", common::stderr(&out));
    let replay = || ranklab(dir, &[&args[..], &["--from-recording"]].concat());
    let out = replay();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let rec = dir.join("reports/p/runs/plain.recording.json");
    let text = std::fs::read_to_string(&rec).unwrap();
    // Its response's keys are sorted: `{"hits":[…],"task":"T2"}`.
    let damaged = text.replacen("],\"task\":\"T2\"}", "]}", 1);
    assert_ne!(
        damaged, text,
        "the fixture's response for T2 was found: {text}"
    );
    std::fs::write(&rec, damaged).unwrap();
    let out = replay();
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("reports/p/runs/plain.recording.json: a recorded response")
            && err.contains("configuration \"plain\"")
            && err.contains("task T2: the response has no \"task\" field"),
        "{err}"
    );
}
