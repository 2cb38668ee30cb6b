//! Bad input to an endpoint rerank stage stops `ranklab run` with one clear line, exit 2, and no
//! report written (no partial ranking is ever shown as a result). No server is involved: the
//! endpoint is a loopback port nothing listens on, or a replay from recordings that do not
//! exist; the malformed responses (no logprobs, no yes/no, bad /rerank indexes) are the unit
//! tests of `external/rerank.rs` and `external/rerank/answer.rs`.
//!
//! - an endpoint that refuses every connection: the request and its retries fail, exit 2, the
//!   message names the endpoint, the query and passage, and the failure;
//! - `--from-recording` with no recording of the stage: exit 2, naming the recordings folder
//!   and `--record`; the endpoint's `${NAME}` need not be set;
//! - `prompt:` on `api: rerank`, `concurrency: 0` and `passage_chars: 0`: refused at load,
//!   naming the file.

mod common;

use std::net::TcpListener;
use std::path::Path;

use common::ranklab_in as ranklab;

/// A loopback port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn write_experiments(dir: &Path, rerank: &str) {
    let body = format!(
        "experiment: llm
baseline: bm25
configurations:
  - name: bm25
    retriever: bm25
  - name: bm25+llm@3
    retriever: bm25
    rerank: {rerank}
"
    );
    std::fs::write(dir.join("tasks/p/experiments-llm.yaml"), body).unwrap();
}

const RUN: [&str; 6] = [
    "run",
    "tasks/p",
    "-x",
    "tasks/p/experiments-llm.yaml",
    "--reports",
    "reports",
];

#[test]
fn an_endpoint_that_refuses_connections_stops_the_run_with_exit_2_and_no_report() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let url = format!("http://127.0.0.1:{}/v1", closed_port());
    write_experiments(
        dir,
        &format!("{{ llm: {{ endpoint: \"{url}\", model: m, api: completions, retries: 1 }}, shortlist: 3 }}"),
    );
    let out = ranklab(dir, &RUN);
    common::assert_bad_input(
        &out,
        "",
        &[
            &format!("rerank endpoint {url} (completions)"),
            "query \"",
            "connecting to 127.0.0.1",
            "after the retries",
        ],
    );
    assert_eq!(common::stderr(&out).matches("error:").count(), 1);
    assert!(!dir.join("reports").exists(), "no report written");
}

#[test]
fn from_recording_without_a_recording_of_the_stage_is_exit_2_naming_it() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    write_experiments(
        dir,
        "{ llm: { endpoint: \"http://127.0.0.1:${RANKLAB_UNSET_LLM_PORT}/v1\", model: m, api: chat }, shortlist: 3 }",
    );
    let mut args = RUN.to_vec();
    args.push("--from-recording");
    let out = ranklab(dir, &args);
    common::assert_bad_input(
        &out,
        "",
        &["no rerank recording in", "reports/p/runs", "--record"],
    );
    assert!(!dir.join("reports").exists(), "no report written");
}

#[test]
fn a_prompt_on_api_rerank_zero_concurrency_and_zero_passage_chars_are_refused_at_load() {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    std::fs::write(dir.join("tasks/p/prompt.txt"), "{query} {passage}").unwrap();
    for (rerank, needle) in [
        (
            "{ llm: { endpoint: \"http://127.0.0.1:1/v1\", model: m, api: rerank }, prompt: prompt.txt, shortlist: 3 }",
            "`prompt:` has no effect on `api: rerank`",
        ),
        (
            "{ llm: { endpoint: \"http://127.0.0.1:1/v1\", model: m, api: chat, concurrency: 0 }, shortlist: 3 }",
            "`concurrency: 0`",
        ),
        (
            "{ llm: { endpoint: \"http://127.0.0.1:1/v1\", model: m, api: completions, passage_chars: 0 }, shortlist: 3 }",
            "`passage_chars: 0` would send nothing",
        ),
    ] {
        write_experiments(dir, rerank);
        let out = ranklab(dir, &RUN);
        common::assert_bad_input(&out, "", &["experiments-llm.yaml", needle]);
        assert!(!dir.join("reports").exists(), "no report written");
    }
}
