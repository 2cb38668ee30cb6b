//! Bad input to an endpoint rerank stage stops `ranklab run` with one clear line, exit 2, and no
//! report written (no partial ranking is ever shown as a result). No real server is involved:
//! the endpoint is a loopback port nothing listens on, a replay from recordings that do not
//! exist, or a stand-in server inside the test (a `TcpListener` on 127.0.0.1:0 answering every
//! request with canned JSON, [`stand_in`]) for the malformed responses, which
//! `external/rerank/answer.rs` also unit-tests one by one.
//!
//! - an endpoint that refuses every connection: the request and its retries fail, exit 2, the
//!   message names the endpoint, the query and passage, and the failure;
//! - a well-formed HTTP 200 that cannot give a score, end to end (the stand-in was asked, and
//!   nothing was scored by default): a `completions` answer with no log-probabilities
//!   (`logprobs: null`, as llama-cpp-python without `--logits_all`); a `chat` and a
//!   `completions` answer whose alternatives hold neither "yes" nor "no"; a `/rerank` response
//!   that leaves out the last document sent, and one that names document 0 twice (each built
//!   from the request's own `documents`, so it is wrong whatever the shortlist's length). Each:
//!   exit 2, one line on stderr naming the endpoint and what is missing, no report folder;
//! - `--from-recording` with no recording of the stage: exit 2, naming the recordings folder
//!   and `--record`; the endpoint's `${NAME}` need not be set;
//! - `prompt:` on `api: rerank`, `concurrency: 0` and `passage_chars: 0`: refused at load,
//!   naming the file.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

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

/// A stand-in endpoint: a server on 127.0.0.1:0 that answers every request with HTTP 200 and
/// the JSON `answer` gives for the request's body, closing each connection after its answer.
/// Its URL (`http://127.0.0.1:PORT/v1`) and the count of requests answered; the thread lives
/// until the test process ends.
fn stand_in(answer: fn(&Value) -> Value) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let count = Arc::clone(&count);
            std::thread::spawn(move || {
                if answer_one(stream, answer).is_ok() {
                    count.fetch_add(1, Ordering::SeqCst);
                }
            });
        }
    });
    (url, asked)
}

/// Reads one request (head, then `Content-Length` bytes of body) and writes the answer.
fn answer_one(stream: TcpStream, answer: fn(&Value) -> Value) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let out = answer(&request).to_string();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{out}",
        out.len()
    )?;
    stream.flush()
}

/// Runs the stage `api` against a stand-in answering with `answer` and asserts bad input: exit
/// 2, one line on stderr holding the endpoint and each of `needles`, the stand-in asked, no
/// report written.
fn assert_refused(api: &str, answer: fn(&Value) -> Value, needles: &[&str]) {
    let tmp = common::fixture_copy("bad_input");
    let dir = tmp.path();
    let (url, asked) = stand_in(answer);
    write_experiments(
        dir,
        &format!(
            "{{ llm: {{ endpoint: \"{url}\", model: m, api: {api}, retries: 0 }}, shortlist: 3 }}"
        ),
    );
    let out = ranklab(dir, &RUN);
    let mut all = vec![format!("rerank endpoint {url} ({api})")];
    all.extend(needles.iter().map(|n| n.to_string()));
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    common::assert_bad_input(&out, "", &all);
    let err = common::stderr(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(asked.load(Ordering::SeqCst) > 0, "the stand-in was asked");
    assert!(!dir.join("reports").exists(), "no report written");
}

#[test]
fn a_completions_answer_without_logprobs_is_exit_2_naming_what_is_missing() {
    assert_refused(
        "completions",
        |_| json!({"object": "text_completion", "model": "m", "choices": [{"index": 0, "text": " yes", "logprobs": null, "finish_reason": "length"}]}),
        &[
            "has no log-probabilities",
            "choices[0].logprobs.top_logprobs[0] is missing",
            "--logits_all",
        ],
    );
}

#[test]
fn answers_whose_alternatives_hold_neither_yes_nor_no_are_exit_2() {
    assert_refused(
        "chat",
        |_| {
            json!({"object": "chat.completion", "model": "m", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "Maybe"},
            "logprobs": {"content": [{"token": "Maybe", "logprob": -0.1, "top_logprobs": [
                {"token": "Maybe", "logprob": -0.1}, {"token": "Perhaps", "logprob": -2.5}]}]}}]})
        },
        &[
            "neither \"yes\" nor \"no\"",
            "\"Maybe\"",
            "raise `top_logprobs`",
        ],
    );
    assert_refused(
        "completions",
        |_| {
            json!({"object": "text_completion", "model": "m", "choices": [{"index": 0, "text": "Maybe",
            "logprobs": {"tokens": ["Maybe"], "token_logprobs": [-0.1],
                "top_logprobs": [{"Maybe": -0.1, "Perhaps": -2.5}]}}]})
        },
        &["neither \"yes\" nor \"no\"", "\"Perhaps\""],
    );
}

/// The number of documents a `/rerank` request sent.
fn documents(request: &Value) -> usize {
    request["documents"].as_array().map_or(0, Vec::len)
}

#[test]
fn a_rerank_response_with_a_missing_or_a_duplicate_index_is_exit_2() {
    // Every document but the last: one of n has no result.
    assert_refused(
        "rerank",
        |r| {
            let n = documents(r);
            json!({"results": (0..n.saturating_sub(1))
                .map(|i| json!({"index": i, "relevance_score": 0.5}))
                .collect::<Vec<_>>()})
        },
        &["1 of ", "documents have no result", "send no top_n"],
    );
    // Document 0 twice, then the others.
    assert_refused(
        "rerank",
        |r| {
            let n = documents(r);
            let mut results = vec![json!({"index": 0, "relevance_score": 0.9})];
            results.extend((0..n).map(|i| json!({"index": i, "relevance_score": 0.5})));
            json!({"results": results})
        },
        &["result index 0 appears twice"],
    );
}
