//! `ranklab judge --llm` and `--judgments` through the binary, on the small `bad_input` suite
//! with a hand-written pool (T1: beta, gamma; the suite file judges T1 alpha only). Properties:
//! - `--llm` naming a model that is not an LLM, and `--llm-endpoint` at a port nobody answers
//!   on, exit 2 with one message naming the model or the endpoint, nothing written (grading
//!   with the real model is `llm_judge_grading.rs`);
//! - a pool with nothing left to grade says so and exits 0 (before asking for a model);
//! - flags that need each other (`--llm-endpoint` and `--llm-model`; `--parse-text` and an
//!   endpoint; `--llm` and the page's `--judge`) are refused by clap, exit 2;
//! - `--judgments` takes `human` or `all` only; `--judgments human` is the default's output
//!   byte for byte (what `all` does is `llm_judge_provenance.rs`'s);
//! - `judge --help` documents every LLM flag.

mod common;
use common::{code, ranklab, stderr, stdout};

const POOL: &str = "suite: p\ndepth: 2\nconfigurations: [a]\ntasks:\n  - id: T1\n    query: idempotency key for a replayed capture\n    documents:\n      - { id: beta, best_rank: 1, configurations: [a] }\n      - { id: gamma, best_rank: 2, configurations: [a] }\n";

fn pooled(pool: &str) -> tempfile::TempDir {
    let tmp = common::fixture_copy("bad_input");
    std::fs::write(tmp.path().join("tasks/p/pool.yaml"), pool).unwrap();
    tmp
}

#[test]
fn a_judge_that_is_not_an_llm_or_an_endpoint_nobody_answers_exits_2_and_writes_nothing() {
    let tmp = pooled(POOL);
    let judgments = tmp.path().join("tasks/p/judgments.yaml");
    let o = ranklab(
        tmp.path(),
        &["judge", "tasks/p", "--llm", "bge-small-en-v1.5"],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("--llm bge-small-en-v1.5") && e.contains("not an llm"),
        "{e}"
    );
    assert!(!judgments.exists());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let o = ranklab(
        tmp.path(),
        &[
            "judge",
            "tasks/p",
            "--llm-endpoint",
            &url,
            "--llm-model",
            "smol",
            "--parse-text",
        ],
    );
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains(&format!("judge endpoint {url} (completions)"))
            && e.contains("nothing was written"),
        "{e}"
    );
    assert!(!judgments.exists());
}

#[test]
fn an_empty_pool_says_so_and_exits_0() {
    let tmp = pooled("suite: p\ndepth: 2\nconfigurations: [a]\ntasks: []\n");
    let o = ranklab(
        tmp.path(),
        &["judge", "tasks/p", "--llm", "smollm2-135m-instruct"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).starts_with("Nothing to grade"), "{}", stdout(&o));
    assert!(!tmp.path().join("tasks/p/judgments.yaml").exists());
}

#[test]
fn flags_that_need_each_other_are_refused() {
    let tmp = pooled(POOL);
    for (args, needle) in [
        (
            vec!["--llm-endpoint", "http://127.0.0.1:9/v1"],
            "--llm-model",
        ),
        (vec!["--llm-model", "smol"], "--llm-endpoint"),
        (vec!["--parse-text"], "--llm-endpoint"),
        (vec!["--llm", "m", "--judge", "Ada"], "--judge"),
        (vec!["--also-judged"], "--llm"),
    ] {
        let mut all = vec!["judge", "tasks/p"];
        all.extend(&args);
        let o = ranklab(tmp.path(), &all);
        assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn judgments_takes_human_or_all_and_human_is_the_default() {
    let tmp = pooled(POOL);
    let o = ranklab(
        tmp.path(),
        &[
            "run",
            "tasks/p",
            "--reports",
            "r-bogus",
            "--judgments",
            "some",
        ],
    );
    assert_eq!(code(&o), 2);
    assert!(
        stderr(&o).contains("human") && stderr(&o).contains("all"),
        "{}",
        stderr(&o)
    );
    for (dir, extra) in [
        ("r-default", vec![]),
        ("r-human", vec!["--judgments", "human"]),
    ] {
        let mut args = vec!["run", "tasks/p", "--reports", dir];
        args.extend(extra);
        let o = ranklab(tmp.path(), &args);
        assert_eq!(code(&o), 0, "{}", stderr(&o));
    }
    assert_eq!(
        common::tree(&tmp.path().join("r-default")),
        common::tree(&tmp.path().join("r-human"))
    );
}

#[test]
fn judge_help_documents_the_llm_flags() {
    let tmp = pooled(POOL);
    let o = ranklab(tmp.path(), &["judge", "--help"]);
    let h = stdout(&o);
    for flag in [
        "--llm <MODEL>",
        "--llm-endpoint <URL>",
        "--llm-model <NAME>",
        "--llm-api <API>",
        "--parse-text",
        "--also-judged",
        "llm:<model>@<prompt hash>",
    ] {
        assert!(h.contains(flag), "{flag}: {h}");
    }
    let o = ranklab(tmp.path(), &["run", "--help"]);
    assert!(stdout(&o).contains("--judgments <WHICH>"), "{}", stdout(&o));
}
