//! A run whose checks fail exits 1 (issue 25, "failures change the exit code"), paired with the
//! run whose checks hold (exit 0):
//!
//! - a paired assertion not met: `ranklab run` and `ranklab bench` write their reports, exit 1,
//!   their last stdout line starts with `FAIL:` and names the assertion and its half, and the
//!   report's Decision and JSON say it; the same suite with the assertion as the fixture has it
//!   exits 0 with a `PASS:` line and reports without a `failures` key. `ranklab check`, the
//!   standalone checker, is the oracle that the flipped assertion fails and the original holds.
//! - `on_error: empty` with an engine that answers every task with an error: exit 1, `FAIL:`
//!   naming the configuration and the 3 tasks (the fixture's suite has 3), the Decision too; the
//!   same configuration with an engine that answers: exit 0.
//!
//! The fixture is `tests/fixtures/bad_input` (BM25 only: no model is needed); its paired file
//! holds assertions A1 (holds under both wirings) and A2 (inverted under legacy, holds under
//! current), both met.

mod common;

use std::path::Path;
use std::process::Output;

use common::ranklab_in as ranklab;

fn last_line(out: &Output) -> String {
    common::stdout(out)
        .lines()
        .last()
        .unwrap_or_default()
        .to_string()
}

fn report_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("reports/p/e.json")).unwrap()).unwrap()
}

fn decision(dir: &Path) -> String {
    let md = std::fs::read_to_string(dir.join("reports/p/e.md")).unwrap();
    md.lines()
        .find(|l| l.starts_with("**Decision:**"))
        .unwrap()
        .to_string()
}

#[test]
fn a_failed_paired_assertion_fails_run_and_bench_and_a_met_one_passes() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let commands: [&[&str]; 2] = [
        &["run", "tasks/p", "--reports", "reports"],
        &["bench", "--tasks", "tasks", "--reports", "reports"],
    ];

    // As the fixture has it: every expectation met (the checker agrees), exit 0.
    let check = ranklab(dir, &["check", "tasks/p/paired.yaml"]);
    assert_eq!(common::code(&check), 0, "{}", common::stdout(&check));
    for args in commands {
        let out = ranklab(dir, args);
        assert_eq!(common::code(&out), 0, "{args:?}: {}", common::stderr(&out));
        assert!(
            last_line(&out).starts_with("PASS:"),
            "{args:?}: {}",
            common::stdout(&out)
        );
        assert!(report_json(dir).get("failures").is_none());
        assert!(!decision(dir).contains("FAIL"), "{}", decision(dir));
        std::fs::remove_dir_all(dir.join("reports")).unwrap();
    }

    // A1's current half expected inverted: it holds, so the expectation fails (the checker
    // says so and exits 1), and run and bench exit 1 with the reports written.
    let paired = dir.join("tasks/p/paired.yaml");
    let text = std::fs::read_to_string(&paired).unwrap();
    let flipped = text.replacen("    current: holds\n", "    current: inverted\n", 1);
    assert_ne!(flipped, text);
    std::fs::write(&paired, flipped).unwrap();
    let check = ranklab(dir, &["check", "tasks/p/paired.yaml"]);
    assert_eq!(common::code(&check), 1, "{}", common::stdout(&check));
    for args in commands {
        let out = ranklab(dir, args);
        assert_eq!(common::code(&out), 1, "{args:?}: {}", common::stderr(&out));
        let last = last_line(&out);
        assert!(
            last.starts_with("FAIL: p: 1 of 4 paired expectations in `")
                && last.contains("tasks/p/paired.yaml` not met (A1 under current)"),
            "{args:?}: {last}"
        );
        // The per-report summary on stdout carries the Decision's FAIL too.
        assert!(
            common::stdout(&out).contains("Decision: FAIL — 1 of 4 paired expectations"),
            "{}",
            common::stdout(&out)
        );
        let d = decision(dir);
        assert!(
            d.starts_with("**Decision:** FAIL — 1 of 4 paired expectations")
                && d.contains("the run exits 1"),
            "{d}"
        );
        let failures = &report_json(dir)["failures"];
        assert_eq!(failures.as_array().map(Vec::len), Some(1), "{failures}");
        assert!(report_json(dir)["decision"]
            .as_str()
            .unwrap()
            .starts_with("FAIL"));
        std::fs::remove_dir_all(dir.join("reports")).unwrap();
    }
}

/// Answers each request for its own task with `$body` (the request's keys: k, query, task).
fn engine(body: &str) -> String {
    format!(
        "while read -r line; do t=$(printf '%s' \"$line\" | sed 's/.*\"task\":\"\\([^\"]*\\)\".*/\\1/'); printf '{{\"task\":\"%s\",{body}}}\\n' \"$t\"; done\n"
    )
}

#[test]
fn on_error_empty_with_a_failing_engine_fails_the_run_and_with_an_answering_one_passes() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    std::fs::write(
        dir.join("tasks/p/experiments.yaml"),
        "experiment: e\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: ext\n    engine: { command: [sh, engine.sh], on_error: empty, timeout_ms: 5000 }\n",
    )
    .unwrap();
    let run = &["run", "tasks/p", "--reports", "reports"];

    std::fs::write(
        dir.join("tasks/p/engine.sh"),
        engine(r#""hits":[{"id":"alpha","score":1.5}]"#),
    )
    .unwrap();
    let out = ranklab(dir, run);
    assert_eq!(common::code(&out), 0, "{}", common::stderr(&out));
    assert!(
        last_line(&out).starts_with("PASS:"),
        "{}",
        common::stdout(&out)
    );

    std::fs::write(
        dir.join("tasks/p/engine.sh"),
        engine(r#""error":"index offline""#),
    )
    .unwrap();
    let out = ranklab(dir, run);
    assert_eq!(common::code(&out), 1, "{}", common::stderr(&out));
    let said = "configuration `ext` answered 3 of 3 tasks with an error, counted as empty rankings (`on_error: empty`)";
    assert_eq!(last_line(&out), format!("FAIL: p: {said}"));
    let d = decision(dir);
    assert!(
        d.starts_with(&format!("**Decision:** FAIL — {said}")),
        "{d}"
    );
    // The report is written and still says it in its section on external engines.
    let md = std::fs::read_to_string(dir.join("reports/p/e.md")).unwrap();
    assert!(md.contains("3 tasks the engine answered with an error counted as empty rankings"));
}

/// A `paired*.yaml` beside the suite that cannot be checked (here: it names a configuration the
/// suite does not have) stops `run` with exit 2 naming the file, and no report is written; the
/// checker refuses the same file with exit 2 (the oracle). Without the broken file the run
/// passes (exit 0), so the refusal is the file's doing. Before, the file was left out of the
/// report with a note on stderr and the run exited 0.
#[test]
fn a_paired_file_that_cannot_be_checked_stops_the_run() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let good = ranklab(dir, &["run", "tasks/p", "--reports", "reports"]);
    assert_eq!(common::code(&good), 0, "{}", common::stderr(&good));
    std::fs::remove_dir_all(dir.join("reports")).unwrap();

    let text = std::fs::read_to_string(dir.join("tasks/p/paired.yaml")).unwrap();
    let broken = text.replacen(
        "configuration: bm25",
        "configuration: no-such-configuration",
        1,
    );
    assert_ne!(broken, text);
    std::fs::write(dir.join("tasks/p/paired-broken.yaml"), &broken).unwrap();
    let check = ranklab(dir, &["check", "tasks/p/paired-broken.yaml"]);
    assert_eq!(common::code(&check), 2, "{}", common::stderr(&check));

    let out = ranklab(dir, &["run", "tasks/p", "--reports", "reports"]);
    assert_eq!(common::code(&out), 2, "{}", common::stderr(&out));
    assert!(
        common::stderr(&out).contains("paired-broken.yaml"),
        "{}",
        common::stderr(&out)
    );
    assert!(!dir.join("reports/p").exists());
}

/// `ranklab models list` read by a reader that stops early (`| true` closes the pipe before
/// anything is read, `| head -c 1` after one byte) exits 0 without a panic, as `ls | head`
/// does: a check's `models list | grep -q …` under `pipefail` holds. Paired with the whole
/// listing read to the end, which names every pinned model.
#[test]
fn a_listing_whose_reader_stops_early_exits_0_without_a_panic() {
    let cache = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_ranklab");
    for reader in ["true", "head -c 1 >/dev/null", "cat >/dev/null"] {
        for json in ["", " --json"] {
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(format!(
                    "set -o pipefail; '{bin}' models list{json} | {reader}"
                ))
                .env("RANKLAB_CACHE", cache.path())
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && !stderr.contains("panicked"),
                "models list{json} | {reader}: {:?}, stderr {stderr}",
                out.status
            );
        }
    }
    let whole = std::process::Command::new(bin)
        .args(["models", "list"])
        .env("RANKLAB_CACHE", cache.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&whole.stdout);
    for id in ["ms-marco-MiniLM-L-12-v2", "answerai-colbert-small-v1"] {
        assert!(text.contains(id), "the listing names {id}: {text}");
    }
}
