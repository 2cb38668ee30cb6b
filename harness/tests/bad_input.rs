//! The bad-input catalogue: one table of cases over every format ranklab reads (suite,
//! experiments, paired, merges and practice YAML; corpus front matter; BEIR jsonl/tsv; TREC run
//! and qrels; the gate's baseline JSON; command-line arguments). Each case copies the valid
//! fixture `tests/fixtures/bad_input/` to a temporary directory, breaks one thing, runs the built
//! binary there and checks:
//! - a broken input exits 2, and stderr names the place (`file:line[:column]`; for a whole-file
//!   condition such as an empty file, the file; for an argument, the argument) and says what to do
//!   (each case lists the words it must contain);
//! - an accepted variant (CRLF line ends, a UTF-8 byte-order mark, tabs or runs of spaces in TREC
//!   and BEIR files, non-ASCII ids, ...) exits 0;
//! - never a panic or a backtrace; nothing on stdout when it fails (no partial output); no
//!   location printed twice (`... at line L column C` after a `file:line:column` prefix).
//!
//! Decisions pinned here (and in docs/formats.md):
//! - CRLF and a BOM are accepted in every text format; TREC and BEIR qrels fields are separated
//!   by any run of spaces or tabs, as trec_eval reads them.
//! - Ids may hold any non-whitespace Unicode (`gämma`, `dé1`); ids with white space are rejected
//!   (they cannot be written to a TREC run).
//! - Numbers written as strings are rejected where a number is expected (`k: "5"`, a weight
//!   `"0.30"`, a baseline `"value": "1.0000"`, a run score `"2.5"`), with a hint to drop the
//!   quotes; a YAML number where an id is expected in `expected:` must be quoted; a BEIR `_id`
//!   written as a JSON number is accepted (some dumps do that).
//! - Duplicate keys in any YAML or JSON mapping are an error naming the second key's line.
//!
//! BM25 only (`retriever: bm25`): no ONNX model is needed.

use std::path::Path;
use std::process::Command;

/// One change to the fixture.
enum Edit {
    /// Replace the whole file.
    Write(&'static str, &'static [u8]),
    /// Replace the first occurrence of a text (which must be there).
    Sub(&'static str, &'static str, &'static str),
    /// Rewrite the file's bytes.
    Map(&'static str, fn(&[u8]) -> Vec<u8>),
}

/// What the binary must do.
enum Expect {
    /// Exit 0.
    Accepted,
    /// Exit 0; stdout contains every one of these.
    AcceptedSaying(&'static [&'static str]),
    /// Exit 1 (the input is fine, a check of the run failed); stdout contains every one of these.
    CheckFails(&'static [&'static str]),
    /// Exit 2; stderr contains `at` and every one of `says`.
    Fails {
        at: &'static str,
        says: &'static [&'static str],
    },
}

struct Case {
    name: &'static str,
    edits: Vec<Edit>,
    args: &'static [&'static str],
    expect: Expect,
}

const RUN: &[&str] = &["run", "tasks/p", "--reports", "reports"];
const CHECK: &[&str] = &["check", "tasks/p/paired.yaml"];
const TUNE: &[&str] = &[
    "tune",
    "--suite",
    "tasks/p",
    "--as-of",
    "2026-11-30",
    "--max-units",
    "4",
];
const BEIR: &[&str] = &["beir", "beir", "--configs", "bm25", "--reports", "reports"];
const EVAL: &[&str] = &["eval", "trec/qrels.txt", "trec/run.trec"];
const EVAL_C: &[&str] = &["eval", "-c", "trec/qrels.txt", "trec/run.trec"];
const GATE: &[&str] = &["gate", "--tasks", "tasks", "--baseline", "baseline.json"];

const SUITE: &str = "tasks/p/suite.yaml";
const EXPERIMENTS: &str = "tasks/p/experiments.yaml";
const PAIRED: &str = "tasks/p/paired.yaml";
const MERGES: &str = "tasks/p/merges.yaml";
const PRACTICE: &str = "tasks/p/search-practice.yaml";
const JUDGMENTS: &str = "tasks/p/judgments.yaml";
const ALPHA: &str = "corpus/alpha.md";
const BETA: &str = "corpus/beta.md";
const GAMMA: &str = "corpus/gamma.md";
const BEIR_CORPUS: &str = "beir/corpus.jsonl";
const BEIR_QUERIES: &str = "beir/queries.jsonl";
const BEIR_QRELS: &str = "beir/qrels/test.tsv";
const RUN_FILE: &str = "trec/run.trec";
const QRELS: &str = "trec/qrels.txt";
const BASELINE: &str = "baseline.json";

fn crlf(b: &[u8]) -> Vec<u8> {
    String::from_utf8(b.to_vec())
        .unwrap()
        .replace('\n', "\r\n")
        .into_bytes()
}

fn bom(b: &[u8]) -> Vec<u8> {
    [b"\xEF\xBB\xBF".as_slice(), b].concat()
}

/// The baseline cut in the middle of its first row.
fn truncate_baseline(b: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(b.to_vec()).unwrap();
    let at = text.find("\"metric\"").expect("a row");
    text.as_bytes()[..at].to_vec()
}

/// A byte that is not UTF-8 in the baseline's second line.
fn baseline_not_utf8(b: &[u8]) -> Vec<u8> {
    let text = String::from_utf8(b.to_vec()).unwrap();
    let at = text.find("gate baseline").expect("about");
    [&b[..at], b"\xff", &b[at..]].concat()
}

use Edit::{Map, Sub, Write};
use Expect::{Accepted, AcceptedSaying, CheckFails, Fails};

mod common;

/// One table row.
fn case(
    name: &'static str,
    edits: Vec<Edit>,
    args: &'static [&'static str],
    expect: Expect,
) -> Case {
    Case {
        name,
        edits,
        args,
        expect,
    }
}

/// Every bad (or accepted) input, in the order of the smaller tables below.
fn cases() -> Vec<Case> {
    [
        cases_suite_and_experiments(),
        cases_task_files(),
        cases_corpus_beir_trec(),
        cases_baseline_and_cli(),
        cases_suggestions_and_types(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// suite.yaml and experiments.yaml.
#[rustfmt::skip] // a table: one case per line or two (rustfmt would spread each over six)
fn cases_suite_and_experiments() -> Vec<Case> {
    vec![
        // ---- suite.yaml
        case("suite: invalid UTF-8", vec![Write(SUITE, b"suite: p\ncorpus: ../../corpus\nk: 5\ntasks:\n  - id: T1\n    query: caf\xe9 capture\n    expected: alpha\n")], RUN,
            Fails { at: "tasks/p/suite.yaml:6", says: &["invalid UTF-8", "save the file as UTF-8"] }),
        case("suite: CRLF line ends", vec![Map(SUITE, crlf)], RUN, Accepted),
        case("suite: byte-order mark", vec![Map(SUITE, bom)], RUN, Accepted),
        case("suite: empty file", vec![Write(SUITE, b"")], RUN,
            Fails { at: "tasks/p/suite.yaml", says: &["empty", "ranklab help formats"] }),
        case("suite: no corpus", vec![Sub(SUITE, "corpus: ../../corpus\n", "")], RUN,
            Fails { at: "tasks/p/suite.yaml:1", says: &["no `corpus:`", "also when its configurations are external engines", "one record per id"] }),
        case("suite: duplicate key", vec![Sub(SUITE, "k: 5\n", "k: 5\nk: 6\n")], RUN,
            Fails { at: "tasks/p/suite.yaml:4", says: &["duplicate key `k`", "remove one"] }),
        case("suite: k as a string", vec![Sub(SUITE, "k: 5", "k: \"5\"")], RUN,
            Fails { at: "tasks/p/suite.yaml:3:4", says: &["write the number without quotes"] }),
        case("suite: k beyond any integer", vec![Sub(SUITE, "k: 5", "k: 99999999999999999999999")], RUN,
            Fails { at: "tasks/p/suite.yaml:3:4", says: &["out of range"] }),
        case("suite: huge k", vec![Sub(SUITE, "k: 5", "k: 100000")], RUN,
            Fails { at: "tasks/p/suite.yaml:3", says: &["use a cutoff no larger than"] }),
        case("suite: task k = 0", vec![Sub(SUITE, "    k: 3", "    k: 0")], RUN,
            Fails { at: "tasks/p/suite.yaml:11", says: &["must be at least 1"] }),
        case("suite: task id with a space", vec![Sub(SUITE, "id: T2", "id: T 2")], RUN,
            Fails { at: "tasks/p/suite.yaml:8", says: &["without white space"] }),
        case("suite: non-ASCII task id", vec![Sub(SUITE, "id: T2", "id: Tä2")], RUN, Accepted),
        case("suite: duplicate task id", vec![Sub(SUITE, "id: T2", "id: T1")], RUN,
            Fails { at: "tasks/p/suite.yaml:8", says: &["must be unique", "first on line 5"] }),
        case("suite: expected id not in the corpus", vec![Sub(SUITE, "expected: alpha", "expected: alpah")], RUN,
            Fails { at: "tasks/p/suite.yaml:7", says: &["\"alpah\"", "check the spelling", "did you mean `alpha`?"] }),
        case("suite: not_relevant id also expected", vec![Sub(SUITE, "expected: alpha", "expected: alpha\n    not_relevant: [alpha]")], RUN,
            Fails { at: "tasks/p/suite.yaml:5", says: &["both in `expected` and in `not_relevant`"] }),
        case("suite: not_relevant id twice", vec![Sub(SUITE, "expected: alpha", "expected: alpha\n    not_relevant: [beta, beta]")], RUN,
            Fails { at: "tasks/p/suite.yaml:5", says: &["lists \"beta\" twice in `not_relevant`"] }),
        case("suite: not_relevant id not in the corpus", vec![Sub(SUITE, "expected: alpha", "expected: alpha\n    not_relevant: [alpah]")], RUN,
            Fails { at: "tasks/p/suite.yaml:8", says: &["\"alpah\"", "check the spelling"] }),
        case("suite: not_relevant judgment accepted", vec![Sub(SUITE, "expected: alpha", "expected: alpha\n    not_relevant: [beta]")], RUN, Accepted),
        case("suite: expected id written as a number", vec![Sub(SUITE, "expected: alpha", "expected: 12345")], RUN,
            Fails { at: "tasks/p/suite.yaml:5", says: &["quote ids that look like numbers"] }),
        case("suite: grade as a string", vec![Sub(SUITE, "{ gamma: 2, beta: 1 }", "{ gamma: \"2\", beta: 1 }")], RUN,
            Fails { at: "tasks/p/suite.yaml:11", says: &["integer grade"] }),
        case("suite: duplicate id in a graded map", vec![Sub(SUITE, "{ gamma: 2, beta: 1 }", "{ gamma: 2, gamma: 1 }")], RUN,
            Fails { at: "tasks/p/suite.yaml:13", says: &["duplicate key `gamma`", "remove one"] }),
        case("suite: tab in the indentation", vec![Sub(SUITE, "  - id: T2", "\t- id: T2")], RUN,
            Fails { at: "tasks/p/suite.yaml:8:1", says: &["indent with spaces"] }),
        case("suite: misspelt field", vec![Sub(SUITE, "    query: refund", "    qurey: refund")], RUN,
            Fails { at: "tasks/p/suite.yaml:9", says: &["unknown field `qurey`", "expected one of"] }),
        case("suite: name with a path", vec![Sub(SUITE, "suite: p", "suite: ../p")], RUN,
            Fails { at: "tasks/p/suite.yaml:1", says: &["without white space or slashes"] }),
        case("suite: corpus directory missing", vec![Sub(SUITE, "corpus: ../../corpus", "corpus: ../../corpora")], RUN,
            Fails { at: "tasks/p/suite.yaml:2", says: &["expected a directory of .md records"] }),
        // ---- experiments.yaml
        case("experiments: unknown retriever", vec![Sub(EXPERIMENTS, "retriever: bm25", "retriever: bm26")], RUN,
            Fails { at: "tasks/p/experiments.yaml:5:16", says: &["unknown variant `bm26`", "expected one of"] }),
        case("experiments: duplicate configuration name", vec![Sub(EXPERIMENTS, "name: current", "name: bm25")], RUN,
            // The second one's line (attack pass, 2026-12-07: it named the first's).
            Fails { at: "tasks/p/experiments.yaml:6", says: &["must be unique"] }),
        case("experiments: unknown baseline", vec![Sub(EXPERIMENTS, "baseline: bm25", "baseline: fusion")], RUN,
            Fails { at: "tasks/p/experiments.yaml:2", says: &["not one of the configurations (bm25, current)"] }),
        case("experiments: experiment name with a path", vec![Sub(EXPERIMENTS, "experiment: e", "experiment: ../e")], RUN,
            Fails { at: "tasks/p/experiments.yaml:1", says: &["without white space or slashes"] }),
        case("experiments: empty file", vec![Write(EXPERIMENTS, b"")], RUN,
            Fails { at: "tasks/p/experiments.yaml", says: &["empty", "ranklab help formats"] }),
        case("experiments: k1 as a string", vec![Sub(EXPERIMENTS, "    retriever: bm25\n  - name: current", "    retriever: bm25\n    bm25: { k1: \"1.2\", b: 0.4 }\n  - name: current")], RUN,
            Fails { at: "tasks/p/experiments.yaml:6:", says: &["write the number without quotes"] }),
        case("experiments: depth 0", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    depth: 0")], RUN,
            Fails { at: "tasks/p/experiments.yaml:6", says: &["between 1 and"] }),
        case("experiments: rerank shortlist 0", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 0 }")], RUN,
            Fails { at: "tasks/p/experiments.yaml:6", says: &["shortlist must be at least 1"] }),
        case("experiments: rerank shortlist beyond the depth", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    depth: 10\n    rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 20 }")], RUN,
            Fails { at: "tasks/p/experiments.yaml:6", says: &["larger than the first-stage depth 10", "lower it or raise `depth`"] }),
        case("experiments: rerank batch 0", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 5, batch: 0 }")], RUN,
            Fails { at: "tasks/p/experiments.yaml:6", says: &["batch must be between 1 and 1024"] }),
        case("experiments: rerank names a model and an llm", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    rerank: { model: ms-marco-MiniLM-L-12-v2, llm: smollm2-135m-instruct, shortlist: 5 }")], RUN,
            Fails { at: "tasks/p/experiments.yaml:6", says: &["either `model:`", "not both"] }),
        case("experiments: rerank prompt file missing", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    rerank: { llm: smollm2-135m-instruct, shortlist: 5, prompt: nowhere.txt }")], RUN,
            Fails { at: "tasks/p/experiments.yaml:6", says: &["rerank prompt", "nowhere.txt", "relative to the experiments file"] }),
        case("experiments: rerank prompt without {passage}", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    rerank: { llm: smollm2-135m-instruct, shortlist: 5, prompt: search-practice.yaml }")], RUN,
            Fails { at: "tasks/p/experiments.yaml:6", says: &["has no {query} placeholder"] }),
        case("experiments: duplicate key", vec![Sub(EXPERIMENTS, "    retriever: bm25\n  - name: current", "    retriever: bm25\n    retriever: bm25\n  - name: current")], RUN,
            Fails { at: "tasks/p/experiments.yaml:6", says: &["duplicate key `retriever`", "remove one"] }),
    ]
}

/// paired.yaml, merges.yaml, search-practice.yaml and judgments.yaml (with `ranklab judge`).
#[rustfmt::skip] // a table: one case per line or two (rustfmt would spread each over six)
fn cases_task_files() -> Vec<Case> {
    vec![
        // ---- paired.yaml
        case("paired: same record twice", vec![Sub(PAIRED, "below: beta", "below: alpha")], CHECK,
            Fails { at: "tasks/p/paired.yaml:4", says: &["name two different records"] }),
        case("paired: unknown record", vec![Sub(PAIRED, "below: beta", "below: delta")], CHECK,
            Fails { at: "tasks/p/paired.yaml:4", says: &["unknown record \"delta\"", "did you mean `beta`?"] }),
        case("paired: unknown configuration", vec![Sub(PAIRED, "configuration: bm25", "configuration: fusion")], CHECK,
            Fails { at: "tasks/p/paired.yaml:2", says: &["is not in the experiments files"] }),
        case("paired: legacy and current name one configuration", vec![Sub(PAIRED, "configuration: bm25", "legacy: bm25\ncurrent: bm25")], CHECK,
            Fails { at: "tasks/p/paired.yaml:3", says: &["both name configuration \"bm25\"", "two different configurations"] }),
        case("paired: current names an unknown configuration", vec![Sub(PAIRED, "configuration: bm25", "legacy: bm25\ncurrent: fusion")], CHECK,
            Fails { at: "tasks/p/paired.yaml:3", says: &["configuration \"fusion\" is not in the experiments files"] }),
        case("paired: legacy without current", vec![Sub(PAIRED, "configuration: bm25", "legacy: bm25")], CHECK,
            Fails { at: "tasks/p/paired.yaml", says: &["name either `configuration:`", "both `legacy:` and `current:`", "only one of"] }),
        case("paired: unknown outcome", vec![Sub(PAIRED, "legacy: holds", "legacy: maybe")], CHECK,
            Fails { at: "tasks/p/paired.yaml:8:13", says: &["expected `holds` or `inverted`"] }),
        case("paired: query retrieves neither record", vec![Sub(PAIRED, "    query: idempotency key for a replayed capture", "    query: zebra xylophone")], CHECK,
            Fails { at: "tasks/p/paired.yaml:4", says: &["pick a query that finds them"] }),
        case("paired: no assertion expects the wirings to differ", vec![Sub(PAIRED, "legacy: inverted", "legacy: holds")], CHECK,
            Fails { at: "tasks/p/paired.yaml:3", says: &["no assertion expects the legacy and the current wiring to differ", "add one with `legacy: inverted` and `current: holds`"] }),
        case("paired: suite file missing", vec![Sub(PAIRED, "suite: suite.yaml", "suite: suites.yaml")], CHECK,
            Fails { at: "tasks/p/paired.yaml:1", says: &["cannot read", "suites.yaml"] }),
        // ---- merges.yaml (ranklab tune)
        // A merge after --as-of is ignored (a backtest), and the report says how many were.
        case("merges: date after --as-of", vec![Sub(MERGES, "merged: 2026-11-10", "merged: 2026-12-10")], TUNE,
            AcceptedSaying(&["1 of 1 merged in the window", "1 merge dated after it ignored"])),
        case("merges: every date after --as-of", vec![Sub(MERGES, "merged: 2026-11-10", "merged: 2026-12-10"), Sub(MERGES, "merged: 2026-11-01", "merged: 2026-12-01")], TUNE,
            Fails { at: "tasks/p/merges.yaml", says: &["every merge (2) is dated after the as-of date 2026-11-30", "pass a later --as-of"] }),
        case("merges: impossible date", vec![Sub(MERGES, "merged: 2026-11-01", "merged: 2026-02-30")], TUNE,
            Fails { at: "tasks/p/merges.yaml:3", says: &["write it as YYYY-MM-DD"] }),
        case("merges: unknown record", vec![Sub(MERGES, "expected: beta", "expected: delta")], TUNE,
            Fails { at: "tasks/p/merges.yaml:9", says: &["check the spelling", "did you mean `beta`?"] }),
        case("merges: duplicate id", vec![Sub(MERGES, "id: M2", "id: M1")], TUNE,
            Fails { at: "tasks/p/merges.yaml:2", says: &["must be unique"] }),
        // ---- search-practice.yaml (read by the current wiring)
        case("practice: negative weight", vec![Sub(PRACTICE, "superseded: 0.30", "superseded: -0.30")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:3", says: &["must be non-negative"] }),
        case("practice: missing weight", vec![Sub(PRACTICE, "  editorial_only: 0.15\n", "")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:3", says: &["missing field `editorial_only`"] }),
        case("practice: weight as a string", vec![Sub(PRACTICE, "deprecated: 0.60", "deprecated: \"0.60\"")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:4", says: &["write the number without quotes"] }),
        case("practice: invalid UTF-8", vec![Write(PRACTICE, b"tuned: caf\xe9\nweights:\n  superseded: 0.30\n")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:1", says: &["save the file as UTF-8"] }),
        case("practice: duplicate key", vec![Sub(PRACTICE, "  deprecated: 0.60\n", "  deprecated: 0.60\n  deprecated: 0.70\n")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:5", says: &["duplicate key `deprecated`", "remove one"] }),
        case("practice: history not a list", vec![Sub(PRACTICE, "  editorial_only: 0.15\n", "  editorial_only: 0.15\nhistory:\n  tuned: old\n")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:8", says: &["history"] }),
        case("practice: history entry without weights", vec![Sub(PRACTICE, "  editorial_only: 0.15\n", "  editorial_only: 0.15\nhistory:\n  - tuned: old\n")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:8", says: &["missing field `weights`"] }),
        case("practice: history entry against the rules", vec![Sub(PRACTICE, "  editorial_only: 0.15\n", "  editorial_only: 0.15\nhistory:\n  - tuned: old\n    weights: { superseded: 0.7, deprecated: 0.6, amendment: 0.0, editorial_only: 0.1 }\n")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:7", says: &["history entry 1", "deprecated"] }),
        case("practice: unknown key in a history entry", vec![Sub(PRACTICE, "  editorial_only: 0.15\n", "  editorial_only: 0.15\nhistory:\n  - tuned: old\n    when: yesterday\n")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:9", says: &["unknown field `when`"] }),
        case("practice: missing file, under check", vec![Write(PAIRED, b"suite: suite.yaml\nconfiguration: bm25\npractice: tuned.yaml\nassertions:\n  - id: A2\n    query: replayed capture\n    above: alpha\n    below: epsilon\n    legacy: inverted\n    current: holds\n")], CHECK,
            Fails { at: "tasks/p/tuned.yaml", says: &["reads its penalty weights from a practice file"] }),
        // ---- judgments.yaml (ranklab judge, issue 18): merged into the suite on every load
        case("judgments: unknown task", vec![Write(JUDGMENTS, b"suite: p\njudgments:\n  - { task: T9, document: beta, grade: 1, judge: A }\n")], RUN,
            Fails { at: "tasks/p/judgments.yaml:3", says: &["unknown task \"T9\""] }),
        case("judgments: unknown document", vec![Write(JUDGMENTS, b"suite: p\njudgments:\n  - { task: T1, document: beta, grade: 1, judge: A }\n  - { task: T2, document: zeta, grade: 1, judge: A }\n")], RUN,
            Fails { at: "tasks/p/judgments.yaml:4", says: &["unknown document id \"zeta\""] }),
        case("judgments: grade outside 0..3", vec![Write(JUDGMENTS, b"suite: p\njudgments:\n  - { task: T1, document: beta, grade: 4, judge: A }\n")], RUN,
            Fails { at: "tasks/p/judgments.yaml:3", says: &["outside 0..=3"] }),
        case("judgments: duplicate judgment", vec![Write(JUDGMENTS, b"suite: p\njudgments:\n  - { task: T1, document: beta, grade: 1, judge: A }\n  - { task: T1, document: beta, grade: 0, judge: B }\n")], RUN,
            Fails { at: "tasks/p/judgments.yaml:4", says: &["judged twice", "first at line 3"] }),
        case("judgments: already judged in the suite", vec![Write(JUDGMENTS, b"suite: p\njudgments:\n  - { task: T1, document: alpha, grade: 0, judge: A }\n")], RUN,
            Fails { at: "tasks/p/judgments.yaml:3", says: &["already judged in", "remove one"] }),
        case("judgments: another suite's file", vec![Write(JUDGMENTS, b"suite: q\njudgments: []\n")], RUN,
            Fails { at: "tasks/p/judgments.yaml:1", says: &["suite \"q\""] }),
        case("judgments: empty list accepted", vec![Write(JUDGMENTS, b"suite: p\njudgments: []\n")], RUN, Accepted),
        case("judge: no pool.yaml yet", vec![], &["judge", "tasks/p", "--judge", "A"],
            Fails { at: "tasks/p/pool.yaml", says: &["ranklab pool"] }),
        case("judge: empty --judge", vec![], &["judge", "tasks/p", "--judge", " "],
            Fails { at: "--judge", says: &["name who judges"] }),
    ]
}

/// The corpus's front matter, BEIR files, and TREC runs and qrels.
#[rustfmt::skip] // a table: one case per line or two (rustfmt would spread each over six)
fn cases_corpus_beir_trec() -> Vec<Case> {
    vec![
        // ---- corpus front matter
        case("corpus: 0-byte record", vec![Write(BETA, b"")], RUN,
            Fails { at: "corpus/beta.md:1", says: &["delete the file or write it"] }),
        case("corpus: invalid UTF-8", vec![Write(BETA, b"---\nid: beta\ntitle: Caf\xe9\n---\nbody\n")], RUN,
            Fails { at: "corpus/beta.md:3", says: &["save the file as UTF-8"] }),
        case("corpus: CRLF line ends", vec![Map(BETA, crlf)], RUN, Accepted),
        case("corpus: byte-order mark", vec![Map(BETA, bom)], RUN, Accepted),
        case("corpus: unknown lifecycle", vec![Sub(BETA, "lifecycle: active\nupdated", "lifecycle: retired\nupdated")], RUN,
            Fails { at: "corpus/beta.md:4:12", says: &["unknown variant `retired`", "expected one of"] }),
        case("corpus: lifecycle_log out of order", vec![Sub(BETA, "  - { date: 2026-04-01, lifecycle: active }", "  - { date: 2026-04-01, lifecycle: active }\n  - { date: 2026-02-01, lifecycle: active }")], RUN,
            Fails { at: "corpus/beta.md:9", says: &["list entries oldest first"] }),
        case("corpus: lifecycle disagrees with the log", vec![Sub(BETA, "lifecycle: active\nupdated", "lifecycle: deprecated\nupdated")], RUN,
            Fails { at: "corpus/beta.md:4", says: &["make them agree"] }),
        case("corpus: superseded_by a missing record", vec![Sub(GAMMA, "superseded_by: beta", "superseded_by: delta")], RUN,
            Fails { at: "corpus/gamma.md:7", says: &["\"delta\"", "check the spelling"] }),
        case("corpus: cites a missing record", vec![Sub(ALPHA, "cites: [beta]", "cites: [beta, delta]")], RUN,
            Fails { at: "corpus/alpha.md:8", says: &["\"delta\"", "check the spelling"] }),
        case("corpus: lifecycle_log by a missing record", vec![Sub(BETA, "lifecycle: active }", "lifecycle: active, by: delta }")], RUN,
            Fails { at: "corpus/beta.md:8", says: &["\"delta\"", "check the spelling"] }),
        case("corpus: duplicate id names both files", vec![Sub(GAMMA, "id: gamma", "id: beta")], RUN,
            Fails { at: "corpus/beta.md", says: &["corpus/gamma.md", "rename one"] }),
        case("corpus: id with a space", vec![Sub(BETA, "id: beta", "id: be ta")], RUN,
            Fails { at: "corpus/beta.md:2", says: &["no white space"] }),
        case("corpus: non-ASCII id", vec![Sub(GAMMA, "id: gamma", "id: gämma"), Sub(SUITE, "gamma: 2", "gämma: 2")], RUN, Accepted),
        case("corpus: duplicate front matter key", vec![Sub(BETA, "topic: payments\n", "topic: payments\ntopic: refunds\n")], RUN,
            Fails { at: "corpus/beta.md:7", says: &["duplicate key `topic`", "remove one"] }),
        case("corpus: front matter never closed", vec![Write(BETA, b"---\nid: beta\ntitle: Refunds\n# Refunds\nbody\n")], RUN,
            Fails { at: "corpus/beta.md:1", says: &["add a `---` line"] }),
        case("corpus: impossible date", vec![Sub(BETA, "updated_at: 2026-04-01", "updated_at: 2026-13-45")], RUN,
            Fails { at: "corpus/beta.md:5:13", says: &["write dates as YYYY-MM-DD"] }),
        // ---- BEIR
        case("beir: truncated JSON line", vec![Write(BEIR_CORPUS, b"{\"_id\": \"d1\", \"title\": \"A\", \"text\": \"capture\"}\n{\"_id\": \"d2\", \"title\": \"B\", \"text\": \"refund\"\n")], BEIR,
            Fails { at: "beir/corpus.jsonl:2:", says: &["not a valid corpus", "expects {\"_id\", \"title\", \"text\"}"] }),
        case("beir: invalid UTF-8", vec![Write(BEIR_CORPUS, b"{\"_id\": \"d1\", \"title\": \"A\", \"text\": \"capture\"}\n{\"_id\": \"d2\", \"title\": \"B\", \"text\": \"caf\xe9\"}\n")], BEIR,
            Fails { at: "beir/corpus.jsonl:2", says: &["save the file as UTF-8"] }),
        case("beir: duplicate _id names both lines", vec![Sub(BEIR_CORPUS, "\"_id\": \"d2\"", "\"_id\": \"d1\"")], BEIR,
            Fails { at: "beir/corpus.jsonl:1", says: &["beir/corpus.jsonl:2", "rename one"] }),
        case("beir: _id with a space", vec![Sub(BEIR_CORPUS, "\"_id\": \"d2\"", "\"_id\": \"d 2\"")], BEIR,
            Fails { at: "beir/corpus.jsonl:2", says: &["without white space"] }),
        case("beir: _id as a JSON number", vec![Sub(BEIR_CORPUS, "\"_id\": \"d3\"", "\"_id\": 3")], BEIR, Accepted),
        case("beir: non-ASCII ids", vec![Sub(BEIR_CORPUS, "\"_id\": \"d1\"", "\"_id\": \"dé1\""), Sub(BEIR_QRELS, "d1", "dé1")], BEIR, Accepted),
        case("beir: CRLF line ends", vec![Map(BEIR_CORPUS, crlf), Map(BEIR_QUERIES, crlf), Map(BEIR_QRELS, crlf)], BEIR, Accepted),
        case("beir: byte-order mark", vec![Map(BEIR_CORPUS, bom), Map(BEIR_QUERIES, bom), Map(BEIR_QRELS, bom)], BEIR, Accepted),
        case("beir: empty corpus", vec![Write(BEIR_CORPUS, b"")], BEIR,
            Fails { at: "beir/corpus.jsonl", says: &["empty", "BEIR corpus.jsonl"] }),
        case("beir: duplicate query _id", vec![Sub(BEIR_QUERIES, "\"_id\": \"q2\"", "\"_id\": \"q1\"")], BEIR,
            Fails { at: "beir/queries.jsonl:2", says: &["first at line 1", "must be unique"] }),
        case("beir: qrels with spaces instead of tabs", vec![Write(BEIR_QRELS, b"query-id corpus-id score\nq1  d1 1\nq2 \t d2\t1\n")], BEIR, Accepted),
        case("beir: qrels line with two fields", vec![Sub(BEIR_QRELS, "q1\td1\t1", "q1\td1")], BEIR,
            Fails { at: "beir/qrels/test.tsv:2", says: &["expected 3 fields `query-id corpus-id score`"] }),
        case("beir: qrels score not an integer", vec![Sub(BEIR_QRELS, "q2\td2\t1", "q2\td2\thigh")], BEIR,
            Fails { at: "beir/qrels/test.tsv:3", says: &["\"high\" is not an integer"] }),
        case("beir: qrels duplicate judgment", vec![Sub(BEIR_QRELS, "q2\td2\t1\n", "q2\td2\t1\nq2\td2\t0\n")], BEIR,
            Fails { at: "beir/qrels/test.tsv:4", says: &["first at line 3", "keep one judgment"] }),
        // ---- TREC run and qrels (ranklab eval)
        case("trec: NaN score", vec![Sub(RUN_FILE, "2.5", "NaN")], EVAL,
            Fails { at: "trec/run.trec:1:12", says: &["must be a decimal number"] }),
        case("trec: score out of range", vec![Sub(RUN_FILE, "2.5", "1e400")], EVAL,
            Fails { at: "trec/run.trec:1:12", says: &["must be a decimal number"] }),
        case("trec: score as a quoted string", vec![Sub(RUN_FILE, "2.5", "\"2.5\"")], EVAL,
            Fails { at: "trec/run.trec:1:12", says: &["must be a decimal number"] }),
        case("trec: duplicate document in a query", vec![Sub(RUN_FILE, "q1 Q0 d2", "q1 Q0 d1")], EVAL,
            Fails { at: "trec/run.trec:2", says: &["keep only one line per (query, document)"] }),
        case("trec: run line with five fields", vec![Sub(RUN_FILE, "1.5 r", "1.5")], EVAL,
            Fails { at: "trec/run.trec:2", says: &["expected 6 fields", "separated by spaces or tabs"] }),
        case("trec: query of the qrels missing from the run", vec![Sub(RUN_FILE, "q2 Q0 d3 1 3 r\n", "")], EVAL,
            Fails { at: "trec/qrels.txt:3", says: &["pass -c"] }),
        case("trec: query missing, with -c", vec![Sub(RUN_FILE, "q2 Q0 d3 1 3 r\n", "")], EVAL_C, Accepted),
        case("trec: tabs and runs of spaces", vec![Write(RUN_FILE, b"q1\tQ0\td1  1\t2.5 r\nq1 Q0 d2 2 1.5\tr\n  q2 \t Q0 d3 1 3 r\n"), Write(QRELS, b"q1\t0\td1\t1\nq1 0  d2 0\nq2\t0 d3 1\n")], EVAL, Accepted),
        case("trec: CRLF line ends", vec![Map(RUN_FILE, crlf), Map(QRELS, crlf)], EVAL, Accepted),
        case("trec: byte-order mark", vec![Map(RUN_FILE, bom), Map(QRELS, bom)], EVAL, Accepted),
        case("trec: non-ASCII document id", vec![Sub(RUN_FILE, "d1", "dé1"), Sub(QRELS, "d1", "dé1")], EVAL, Accepted),
        case("trec: invalid UTF-8", vec![Write(RUN_FILE, b"q1 Q0 d1 1 2.5 r\nq2 Q0 d\xff3 1 3 r\n")], EVAL,
            Fails { at: "trec/run.trec:2:8", says: &["re-encode the file"] }),
        case("trec: empty run", vec![Write(RUN_FILE, b"")], EVAL,
            Fails { at: "trec/run.trec", says: &["is empty", "one line `qid Q0 docno rank score tag`"] }),
        case("trec: qrels judgment not an integer", vec![Sub(QRELS, "q1 0 d1 1", "q1 0 d1 yes")], EVAL,
            Fails { at: "trec/qrels.txt:1:9", says: &["an integer judgment such as 0, 1 or 2"] }),
        case("trec: qrels duplicate judgment", vec![Sub(QRELS, "q1 0 d2 0", "q1 0 d1 0")], EVAL,
            Fails { at: "trec/qrels.txt:2", says: &["keep one judgment per (query, document)"] }),
        case("trec: qrels line with three fields", vec![Sub(QRELS, "q1 0 d1 1", "q1 d1 1")], EVAL,
            Fails { at: "trec/qrels.txt:1", says: &["expected 4 fields `qid iter docno rel`"] }),
    ]
}

/// The gate baseline JSON and command-line arguments (with trec_eval's flags, issue 13).
#[rustfmt::skip] // a table: one case per line or two (rustfmt would spread each over six)
fn cases_baseline_and_cli() -> Vec<Case> {
    vec![
        // ---- gate baseline JSON
        case("baseline: byte-order mark", vec![Map(BASELINE, bom)], GATE, Accepted),
        case("baseline: CRLF line ends", vec![Map(BASELINE, crlf)], GATE, Accepted),
        case("baseline: truncated", vec![Map(BASELINE, truncate_baseline)], GATE,
            Fails { at: "baseline.json:7:", says: &["EOF while parsing", "`Gate baseline`"] }),
        case("baseline: missing comma", vec![Sub(BASELINE, "\"value\": 1.0000,", "\"value\": 1.0000")], GATE,
            Fails { at: "baseline.json:7:", says: &["expected `,` or `}`", "`Gate baseline`"] }),
        case("baseline: value as a string", vec![Sub(BASELINE, "\"value\": 1.0000", "\"value\": \"1.0000\"")], GATE,
            Fails { at: "baseline.json:7:", says: &["write the number without quotes"] }),
        case("baseline: NaN value", vec![Sub(BASELINE, "\"value\": 1.0000", "\"value\": NaN")], GATE,
            Fails { at: "baseline.json:7:", says: &["expected value", "`Gate baseline`"] }),
        // A row naming a configuration or metric that no longer exists is a gone row (exit 1,
        // named in the table), and a changed corpus is gated under a banner: gate_cli.rs.
        case("baseline: negative tolerance", vec![Sub(BASELINE, "\"tolerance\": 0.0010", "\"tolerance\": -0.5")], GATE,
            Fails { at: "baseline.json:7", says: &["non-negative"] }),
        case("baseline: malformed sha256", vec![Sub(BASELINE, "\"corpus_sha256\": \"", "\"corpus_sha256\": \"zz")], GATE,
            Fails { at: "baseline.json:4", says: &["64 hex digits"] }),
        case("baseline: invalid UTF-8", vec![Map(BASELINE, baseline_not_utf8)], GATE,
            Fails { at: "baseline.json:2", says: &["save the file as UTF-8"] }),
        case("baseline: duplicate key", vec![Sub(BASELINE, "\"rows\": [", "\"rows\": [], \"rows\": [")], GATE,
            Fails { at: "baseline.json:6:", says: &["duplicate field `rows`"] }),
        case("baseline: empty file", vec![Write(BASELINE, b"")], GATE,
            Fails { at: "baseline.json", says: &["empty", "ranklab gate --update"] }),
        // ---- command-line arguments
        case("cli: unknown subcommand", vec![], &["frob"],
            Fails { at: "'frob'", says: &["--help"] }),
        case("cli: negative level", vec![], &["eval", "--level=-1", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "--level", says: &["is not in 0..="] }),
        case("cli: level beyond i32", vec![], &["eval", "-l", "99999999999", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "--level", says: &["is not in 0..="] }),
        case("cli: measure cutoff 0", vec![], &["eval", "-m", "P.0", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "`P.0`", says: &["write e.g. P.5,10"] }),
        case("cli: unknown measure", vec![], &["eval", "-m", "mapp", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "`mapp`", says: &["ranklab implements"] }),
        case("cli: missing run argument", vec![], &["eval", "trec/qrels.txt"],
            Fails { at: "<RUN>", says: &["--help"] }),
        case("cli: run file missing", vec![], &["eval", "trec/qrels.txt", "trec/nothere.trec"],
            Fails { at: "trec/nothere.trec", says: &["cannot read"] }),
        case("cli: suite missing", vec![], &["run", "tasks/q", "--reports", "reports"],
            Fails { at: "tasks/q", says: &["cannot read"] }),
        case("cli: tasks directory without suites", vec![], &["bench", "--tasks", "trec", "--reports", "reports"],
            Fails { at: "trec", says: &["expected <suite>/suite.yaml folders"] }),
        case("cli: impossible --as-of", vec![], &["tune", "--suite", "tasks/p", "--as-of", "2026-13-01"],
            Fails { at: "--as-of", says: &["write the date as YYYY-MM-DD"] }),
        case("cli: --unit finer than 0.01", vec![], &["tune", "--suite", "tasks/p", "--as-of", "2026-11-30", "--unit", "0.033"],
            Fails { at: "--unit 0.033", says: &["at most two decimals"] }),
        case("cli: huge --window-days", vec![], &["tune", "--suite", "tasks/p", "--as-of", "2026-11-30", "--max-units", "4", "--window-days", "4294967295"], Accepted),
        // ---- ranklab tune --write (issue 16): contradicting flags write nothing (a refused change: tune_cli.rs)
        case("tune: --keep without --write", vec![], &["tune", "--suite", "tasks/p", "--as-of", "2026-11-30", "--keep"],
            Fails { at: "--keep", says: &["--write"] }),
        case("tune: --keep with --force", vec![], &["tune", "--suite", "tasks/p", "--as-of", "2026-11-30", "--write", "--keep", "--force"],
            Fails { at: "--keep", says: &["--force"] }),
        case("cli: --also without --update", vec![], &["gate", "--tasks", "tasks", "--baseline", "baseline.json", "--also", "p/bm25"],
            Fails { at: "--also", says: &["--update"] }),
        case("cli: --configs names one twice", vec![], &["beir", "beir", "--configs", "bm25,bm25", "--reports", "reports"],
            Fails { at: "--configs", says: &["\"bm25\" twice", "name each configuration once"] }),
        // ---- ranklab eval: trec_eval's refusals and flags (issue 13) ----
        case("eval: P.0", vec![], &["eval", "-m", "P.0", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "`P.0`", says: &["not a positive integer"] }),
        case("eval: P.abc", vec![], &["eval", "-m", "P.abc", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "`P.abc`", says: &["cutoff `abc`", "write e.g. P.5,10"] }),
        case("eval: ndcg.x=1", vec![], &["eval", "-m", "ndcg.x=1", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "`ndcg.x=1`", says: &["gain level `x`", "ndcg.1=3,2=9"] }),
        case("eval: -M 0", vec![], &["eval", "-M", "0", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "-M", says: &["positive number of documents"] }),
        case("eval: -M negative", vec![], &["eval", "-M=-5", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "-M", says: &["positive number of documents"] }),
        case("eval: -Z refused", vec![], &["eval", "-Z", "zmeans", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "-Z zmeans", says: &["not supported"] }),
        case("eval: -R prefs refused", vec![], &["eval", "-R", "prefs", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "-R prefs", says: &["only trec_eval's `qrels`"] }),
        case("eval: -T other refused", vec![], &["eval", "-T", "tops", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "-T tops", says: &["trec_results"] }),
        case("eval: -D 1 refused", vec![], &["eval", "-D", "1", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "-D 1", says: &["only -D 0"] }),
        case("eval: prefs nickname refused", vec![], &["eval", "-m", "all_prefs", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "`all_prefs`", says: &["not supported"] }),
        case("eval: every flag trec_eval has", vec![], &["eval", "-q", "-c", "-l", "1", "-n", "-M", "10", "-N", "100", "-J", "-D", "0", "-R", "qrels", "-T", "trec_results", "-m", "all_trec", "trec/qrels.txt", "trec/run.trec"], Accepted),
        case("eval: a flag given twice (the last wins, as trec_eval)", vec![], &["eval", "-l", "2", "-l", "1", "-q", "-q", "trec/qrels.txt", "trec/run.trec"], Accepted),
        // ---- end of issue 13's block ----
    ]
}

/// Messages that suggest, and values of the wrong type (issue 15).
#[rustfmt::skip] // a table: one case per line or two (rustfmt would spread each over six)
fn cases_suggestions_and_types() -> Vec<Case> {
    vec![
        // ---- issue 15: messages that suggest; no Rust type name (every case is also checked
        // for one, see rust_type_name) ----
        case("suggest: a configuration one letter off", vec![Sub(PAIRED, "configuration: bm25", "configuration: bm52")], CHECK,
            Fails { at: "tasks/p/paired.yaml:2", says: &["did you mean `bm25`?"] }),
        case("suggest: a judgment's task one letter off", vec![Write(JUDGMENTS, b"suite: p\njudgments:\n  - { task: T9, document: beta, grade: 1, judge: A }\n")], RUN,
            Fails { at: "tasks/p/judgments.yaml:3", says: &["did you mean `T1`, `T2` or `T3`?"] }),
        case("suggest: a cited record one letter off", vec![Sub(ALPHA, "cites: [beta]", "cites: [bata]")], RUN,
            Fails { at: "corpus/alpha.md:8", says: &["\"bata\"", "did you mean `beta`?"] }),
        case("suggest: ndcg@10", vec![], &["eval", "-m", "ndcg@10", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "`ndcg@10`", says: &["did you mean `ndcg_cut.10` or `nDCG@10`?"] }),
        case("suggest: recall_5", vec![], &["eval", "-m", "recall_5", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "`recall_5`", says: &["did you mean `recall.5` or `R@5`?"] }),
        case("suggest: mapp", vec![], &["eval", "-m", "mapp", "trec/qrels.txt", "trec/run.trec"],
            Fails { at: "`mapp`", says: &["did you mean `map`"] }),
        case("suggest: a run where qrels are expected", vec![], &["eval", "trec/run.trec", "trec/qrels.txt"],
            Fails { at: "trec/run.trec:1", says: &["looks like a run", "give the qrels first, then the run"] }),
        case("suggest: qrels where a run is expected", vec![], &["eval", "trec/qrels.txt", "trec/qrels.txt"],
            Fails { at: "trec/qrels.txt:1", says: &["looks like qrels", "give the qrels first, then the run"] }),
        case("suggest: qrels where a run is expected (compare)", vec![], &["compare", "--qrels", "trec/qrels.txt", "trec/run.trec", "trec/qrels.txt"],
            Fails { at: "trec/qrels.txt:1", says: &["looks like qrels"] }),
        case("yaml: unquoted colon in a value", vec![Sub(SUITE, "query: refund a capture", "query: refund: a capture")], RUN,
            Fails { at: "tasks/p/suite.yaml:9", says: &["must be quoted", "key: \"text: more text\""] }),
        case("date: 2025-11-31 in a record", vec![Sub(BETA, "updated_at: 2026-04-01", "updated_at: 2025-11-31")], RUN,
            Fails { at: "corpus/beta.md:5", says: &["2025-11-31: the day is invalid, November 2025 has 30 days"] }),
        case("date: month 13 in a lifecycle log", vec![Sub(BETA, "{ date: 2026-04-01", "{ date: 2026-13-01")], RUN,
            Fails { at: "corpus/beta.md:8", says: &["2026-13-01: the month 13 is invalid"] }),
        case("date: 2025-11-31 in merges", vec![Sub(MERGES, "merged: 2026-11-01", "merged: 2025-11-31")], TUNE,
            Fails { at: "tasks/p/merges.yaml:3", says: &["the day is invalid, November 2025 has 30 days"] }),
        case("date: --as-of 2026-02-29", vec![], &["tune", "--suite", "tasks/p", "--as-of", "2026-02-29"],
            Fails { at: "--as-of", says: &["the day is invalid, February 2026 has 28 days"] }),
        case("types: the suite file is a list", vec![Write(SUITE, b"- suite: p\n")], RUN,
            Fails { at: "tasks/p/suite.yaml", says: &["expected a mapping of `key: value` fields"] }),
        case("types: tasks is a number", vec![Sub(SUITE, "tasks:\n", "tasks: 5\nx:\n")], RUN,
            Fails { at: "tasks/p/suite.yaml", says: &["tasks"] }),
        case("types: k is negative", vec![Sub(SUITE, "k: 5", "k: -5")], RUN,
            Fails { at: "tasks/p/suite.yaml:3", says: &["a whole number (0 or more)"] }),
        case("types: k is a fraction", vec![Sub(SUITE, "k: 5", "k: 2.5")], RUN,
            Fails { at: "tasks/p/suite.yaml:3", says: &["a whole number (0 or more)"] }),
        case("types: k is true", vec![Sub(SUITE, "k: 5", "k: true")], RUN,
            Fails { at: "tasks/p/suite.yaml:3", says: &["k"] }),
        case("types: rrf_k is a word", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    rrf_k: sixty")], RUN,
            Fails { at: "tasks/p/experiments.yaml:9:12", says: &["rrf_k", "expected a number"] }),
        case("types: bm25 is a number", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    bm25: 3")], RUN,
            Fails { at: "tasks/p/experiments.yaml:9:11", says: &["bm25", "expected a mapping of `key: value` fields"] }),
        case("types: rerank is yes", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    rerank: yes")], RUN,
            Fails { at: "tasks/p/experiments.yaml:9", says: &["rerank", "expected a mapping"] }),
        case("types: wiring is a mapping", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: { legacy: 1 }")], RUN,
            Fails { at: "tasks/p/experiments.yaml:8", says: &["wiring", "expected one of its names, not a mapping"] }),
        case("types: wiring is old", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: old")], RUN,
            Fails { at: "tasks/p/experiments.yaml:8", says: &["expected one of `none`, `legacy`, `current`"] }),
        case("types: engine is a number", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    engine: 5")], RUN,
            Fails { at: "tasks/p/experiments.yaml:9", says: &["engine", "expected a mapping"] }),
        case("types: depth is negative", vec![Sub(EXPERIMENTS, "    wiring: current", "    wiring: current\n    depth: -1")], RUN,
            Fails { at: "tasks/p/experiments.yaml:9", says: &["a whole number (0 or more)"] }),
        case("types: cites is a number", vec![Sub(ALPHA, "cites: [beta]", "cites: 5")], RUN,
            Fails { at: "corpus/alpha.md:8", says: &["cites", "expected a sequence"] }),
        case("types: lifecycle_log is text", vec![Sub(BETA, "lifecycle_log:\n  - { date: 2026-04-01, lifecycle: active }", "lifecycle_log: active")], RUN,
            Fails { at: "corpus/beta.md:7", says: &["lifecycle_log"] }),
        case("types: practice weights is a list", vec![Write(PRACTICE, b"tuned: x\nweights: [1, 2]\n")], RUN,
            Fails { at: "tasks/p/search-practice.yaml:2", says: &["expected a mapping of `key: value` fields"] }),
        case("types: merges is a mapping", vec![Write(MERGES, b"merges: { id: M1 }\n")], TUNE,
            Fails { at: "tasks/p/merges.yaml:1", says: &["merges"] }),
        case("types: assertions is a number", vec![Sub(PAIRED, "assertions:\n", "assertions: 5\nx:\n")], CHECK,
            Fails { at: "tasks/p/paired.yaml", says: &["assertions"] }),
        case("types: expected is a list of maps", vec![Sub(SUITE, "expected: alpha", "expected: [{ alpha: 1 }]")], RUN,
            Fails { at: "tasks/p/suite.yaml", says: &["`expected` must be an id, a list of ids, or a map"] }),
        case("types: baseline tolerance is a word", vec![Sub(BASELINE, "\"tolerance\": 0.0010", "\"tolerance\": \"tight\"")], GATE,
            Fails { at: "baseline.json:7:", says: &["expected a number"] }),
        case("types: baseline rows is a number", vec![Sub(BASELINE, "\"rows\": [", "\"rows\": 5, \"x\": [")], GATE,
            Fails { at: "baseline.json:6:", says: &["expected a sequence"] }),
    ]
}

fn ranklab(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .env("RUST_BACKTRACE", "1")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run ranklab")
}

fn apply(dir: &Path, edit: &Edit) -> Result<(), String> {
    match edit {
        Write(f, bytes) => std::fs::write(dir.join(f), bytes).map_err(|e| e.to_string()),
        Sub(f, old, new) => {
            let text = std::fs::read_to_string(dir.join(f)).map_err(|e| e.to_string())?;
            if !text.contains(old) {
                return Err(format!("fixture {f} has no {old:?}"));
            }
            std::fs::write(dir.join(f), text.replacen(old, new, 1)).map_err(|e| e.to_string())
        }
        Map(f, g) => {
            let bytes = std::fs::read(dir.join(f)).map_err(|e| e.to_string())?;
            std::fs::write(dir.join(f), g(&bytes)).map_err(|e| e.to_string())
        }
    }
}

/// The Rust type names a message must never show: the primitive and standard types serde
/// names (`expected usize`), and every type (and enum variant) that derives `Deserialize` in
/// ranklab's sources, collected from the sources themselves so a new type is covered too.
fn rust_type_names() -> &'static [String] {
    static NAMES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names: Vec<String> = [
            "usize",
            "isize",
            "u8",
            "u16",
            "u32",
            "u64",
            "i8",
            "i16",
            "i32",
            "i64",
            "f32",
            "f64",
            "bool",
            "String",
            "Option",
            "Vec",
            "BTreeMap",
            "HashMap",
            "PathBuf",
            "NaiveDate",
            "struct",
            "enum",
            "serde",
            "yaml_serde",
        ]
        .map(String::from)
        .to_vec();
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let sources = ["harness/src", "engine/src"]
            .iter()
            .flat_map(|d| common::tree(&root.join(d)))
            .filter(|(p, _)| p.extension().is_some_and(|e| e == "rs"));
        for (_, bytes) in sources {
            let text = String::from_utf8(bytes).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            for (i, l) in lines.iter().enumerate() {
                if !(l.trim_start().starts_with("#[derive(") && l.contains("Deserialize")) {
                    continue;
                }
                // The item after the attributes and doc comments.
                // The item after the attributes and doc comments: the first `struct` or `enum`
                // line within the next few.
                let Some((j, item)) = lines[i + 1..]
                    .iter()
                    .take(12)
                    .enumerate()
                    .map(|(j, l)| (i + 1 + j, l.trim()))
                    .find(|(_, l)| {
                        let l = l
                            .trim_start_matches("pub(crate) ")
                            .trim_start_matches("pub(super) ")
                            .trim_start_matches("pub ");
                        l.starts_with("struct ") || l.starts_with("enum ")
                    })
                else {
                    continue;
                };
                let item = item
                    .trim_start_matches("pub(crate) ")
                    .trim_start_matches("pub(super) ")
                    .trim_start_matches("pub ");
                let (kind, rest) = item.split_once(' ').unwrap_or(("", ""));
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !matches!(kind, "struct" | "enum") || name.is_empty() {
                    continue;
                }
                names.push(name);
                if kind == "enum" {
                    // Variants: the lines one level in that start with a capital, up to the
                    // enum's closing brace at its own indentation.
                    let indent = lines[j].len() - lines[j].trim_start().len();
                    let close = format!("{}}}", " ".repeat(indent));
                    for v in lines[j + 1..].iter().take_while(|l| **l != close) {
                        let t = v.trim_start();
                        if v.len() - t.len() == indent + 4
                            && t.starts_with(|c: char| c.is_ascii_uppercase())
                        {
                            names.push(t.chars().take_while(|c| c.is_alphanumeric()).collect());
                        }
                    }
                }
            }
        }
        // One-letter names (`N`) are clap's value names in usage lines, not types.
        names.retain(|n| n.len() > 1);
        names.sort();
        names.dedup();
        names
    })
}

/// The first Rust type name (a whole word) in `err`.
fn rust_type_name(err: &str) -> Option<&'static str> {
    let words: std::collections::HashSet<&str> = err
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .collect();
    rust_type_names()
        .iter()
        .find(|n| words.contains(n.as_str()))
        .map(String::as_str)
}

#[test]
fn the_type_name_list_holds_the_serde_types_and_their_variants() {
    let names = rust_type_names();
    for n in [
        "RawSuite",
        "RawTask",
        "Configuration",
        "Wiring",
        "Legacy",
        "usize",
        "f32",
        "Expected",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
}

/// `... at line 3 column 7`: a location the message already gives up front.
fn repeats_location(err: &str) -> bool {
    err.match_indices(" at line ").any(|(i, m)| {
        let rest = &err[i + m.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0 && rest[digits..].starts_with(" column ")
    })
}

fn check(pristine: &Path, case: &Case) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    common::copy_dir(pristine, dir);
    for e in &case.edits {
        apply(dir, e)?;
    }
    let out = ranklab(dir, case.args);
    let err = String::from_utf8_lossy(&out.stderr);
    let code = out.status.code();
    if err.contains("panicked") || err.contains("RUST_BACKTRACE") || err.contains("stack backtrace")
    {
        return Err(format!("panicked:\n{err}"));
    }
    if let Some(name) = rust_type_name(&err) {
        return Err(format!("stderr shows the Rust type name `{name}`:\n{err}"));
    }
    match case.expect {
        Accepted if code == Some(0) => Ok(()),
        Accepted | AcceptedSaying(_) if code != Some(0) => {
            Err(format!("expected success, got {code:?}:\n{err}"))
        }
        Accepted => unreachable!(),
        CheckFails(says) => {
            let out = String::from_utf8_lossy(&out.stdout);
            let missing: Vec<_> = says.iter().filter(|s| !out.contains(*s)).collect();
            match (code, missing.is_empty()) {
                (Some(1), true) => Ok(()),
                (Some(1), false) => Err(format!("stdout does not say {missing:?}:\n{out}")),
                _ => Err(format!("exit code {code:?}, expected 1:\n{err}")),
            }
        }
        AcceptedSaying(says) => {
            let out = String::from_utf8_lossy(&out.stdout);
            let missing: Vec<_> = says.iter().filter(|s| !out.contains(*s)).collect();
            if missing.is_empty() {
                Ok(())
            } else {
                Err(format!("stdout does not say {missing:?}:\n{out}"))
            }
        }
        Fails { at, says } => {
            let mut problems = Vec::new();
            if code != Some(2) {
                problems.push(format!("exit code {code:?}, expected 2"));
            }
            if !err.contains(at) {
                problems.push(format!("does not name {at:?}"));
            }
            for s in says {
                if !err.contains(s) {
                    problems.push(format!("does not say {s:?}"));
                }
            }
            if repeats_location(&err) {
                problems.push("repeats a location as `at line L column C`".to_string());
            }
            if !out.stdout.is_empty() {
                problems.push(format!(
                    "printed to stdout: {}",
                    String::from_utf8_lossy(&out.stdout)
                ));
            }
            if problems.is_empty() {
                Ok(())
            } else {
                Err(format!("{}\nstderr: {err}", problems.join("; ")))
            }
        }
    }
}

#[test]
fn every_bad_input_exits_2_naming_file_and_line_and_every_accepted_variant_passes() {
    // The pristine fixture, with a baseline recorded on it.
    let pristine = tempfile::tempdir().unwrap();
    common::copy_dir(&common::fixture("bad_input"), pristine.path());
    let out = ranklab(
        pristine.path(),
        &[
            "gate",
            "--tasks",
            "tasks",
            "--baseline",
            "baseline.json",
            "--update",
        ],
    );
    assert!(
        out.status.success(),
        "gate --update on the fixture: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for args in [RUN, CHECK, TUNE, BEIR, EVAL, GATE] {
        let out = ranklab(pristine.path(), args);
        assert!(
            out.status.success(),
            "the pristine fixture must pass {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    std::fs::remove_dir_all(pristine.path().join("reports")).unwrap();

    let cases = cases();
    let (mut failed, mut accepted) = (Vec::new(), 0);
    for case in &cases {
        match check(pristine.path(), case) {
            Ok(()) => accepted += matches!(case.expect, Accepted) as usize,
            Err(e) => failed.push(format!("--- {}: {e}", case.name)),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
    assert!(
        cases.len() - accepted >= 30,
        "the catalogue keeps at least 30 rejected inputs"
    );
}

// ---- External engines (issue 14): the command adapter and recordings. Kept apart from the
// table above: each case writes an experiments file whose configuration `ext` runs a small
// shell engine (`tasks/p/engine.sh`) that misbehaves in one way.

const ENGINE: &str = "tasks/p/engine.sh";
const EXT: &[u8] = b"experiment: e\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: ext\n    engine: { command: [sh, engine.sh], timeout_ms: 2000 }\n";
/// Reads requests, answers each with `$hits` for its own task (key order of ranklab's requests:
/// k, query, task).
macro_rules! answering {
    ($hits:literal) => {
        concat!(
            "while read -r line; do t=$(printf '%s' \"$line\" | sed 's/.*\"task\":\"\\([^\"]*\\)\".*/\\1/'); printf '{\"task\":\"%s\",",
            $hits,
            "}\\n' \"$t\"; done\n"
        )
        .as_bytes()
    };
}

fn external_engine_cases() -> Vec<Case> {
    let case = |name, engine: &'static [u8], args, expect| Case {
        name,
        edits: vec![Write(EXPERIMENTS, EXT), Write(ENGINE, engine)],
        args,
        expect,
    };
    let from_rec: &[&str] = &["run", "tasks/p", "--reports", "reports", "--from-recording"];
    let good =
        answering!(r#""hits":[{"id":"alpha","score":1.5},{"id":"not-in-corpus","score":0.5}]"#);
    vec![
        case("engine: a well-behaved engine", good, RUN, Accepted),
        Case {
            name: "engine: command not found",
            edits: vec![Sub(EXPERIMENTS, "retriever: bm25\n    wiring: current", "engine: { command: [no-such-engine-xyz] }")],
            args: RUN,
            expect: Fails { at: "configuration \"current\"", says: &["cannot start engine command", "no-such-engine-xyz", "installed"] },
        },
        case("engine: exits early", b"echo 'cannot open index corpus.idx' >&2; exit 3\n", RUN,
            Fails { at: "configuration \"ext\", task T1", says: &["exited with code 3", "cannot open index corpus.idx"] }),
        case("engine: a line that is not JSON", b"read -r line; echo 'ready!'; sleep 1\n", RUN,
            Fails { at: "configuration \"ext\", task T1", says: &["stdout line 1", "not JSON", "ready!"] }),
        case("engine: a response for another task", b"read -r line; echo '{\"task\":\"T9\",\"hits\":[]}'; sleep 1\n", RUN,
            Fails { at: "configuration \"ext\"", says: &["task T1", "for task \"T9\""] }),
        case("engine: no answer within timeout_ms", b"exec sleep 10\n", RUN,
            Fails { at: "configuration \"ext\", task T1", says: &["did not answer within 2000 ms", "timeout_ms"] }),
        case("engine: a score that is not a number", answering!(r#""hits":[{"id":"alpha","score":"high"}]"#), RUN,
            Fails { at: "configuration \"ext\"", says: &["task T1", "\"high\"", "not a number"] }),
        case("engine: a NaN score", answering!(r#""hits":[{"id":"alpha","score":NaN}]"#), RUN,
            Fails { at: "configuration \"ext\", task T1", says: &["NaN", "finite"] }),
        case("engine: a duplicate id in one response", answering!(r#""hits":[{"id":"alpha"},{"id":"alpha"}]"#), RUN,
            Fails { at: "configuration \"ext\"", says: &["task T1", "\"alpha\" appears twice"] }),
        case("engine: some hits scored, some not", answering!(r#""hits":[{"id":"alpha","score":1},{"id":"beta"}]"#), RUN,
            Fails { at: "configuration \"ext\"", says: &["task T1", "1 of 2 hits have a score"] }),
        case("engine: errors are not empty rankings", answering!(r#""error":"index offline""#), RUN,
            Fails { at: "configuration \"ext\"", says: &["engine errors: 3 (first: T1: index offline)", "on_error: empty"] }),
        Case {
            name: "engine: on_error empty counts errors as empty rankings, and the run fails",
            // bm25 stays: the fixture's paired.yaml names it, and a paired file that cannot be
            // checked would stop the run (exit 2) before the empty rankings are counted.
            edits: vec![Write(EXPERIMENTS, b"experiment: e\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: ext\n    engine: { command: [sh, engine.sh], on_error: empty }\n"), Write(ENGINE, answering!(r#""error":"index offline""#))],
            args: RUN,
            expect: CheckFails(&["FAIL: p: configuration `ext` answered 3 of 3 tasks with an error, counted as empty rankings (`on_error: empty`)"]),
        },
        Case {
            name: "engine: neither retriever nor engine",
            edits: vec![Sub(EXPERIMENTS, "    retriever: bm25\n    wiring: current", "    wiring: current")],
            args: RUN,
            expect: Fails { at: "tasks/p/experiments.yaml:6", says: &["neither `retriever`", "`engine`"] },
        },
        Case {
            name: "engine: an unset ${VARIABLE}",
            edits: vec![Write(EXPERIMENTS, b"experiment: e\nconfigurations:\n  - name: ext\n    engine: { command: [sh, engine.sh], env: { TOKEN: \"${RANKLAB_TEST_UNSET_TOKEN}\" } }\n"), Write(ENGINE, good)],
            args: RUN,
            expect: Fails { at: "tasks/p/experiments.yaml:4: configuration \"ext\"", says: &["RANKLAB_TEST_UNSET_TOKEN", "not set", "nothing was run"] },
        },
        case("engine: --from-recording without a recording", good, from_rec,
            Fails { at: "configuration \"ext\"", says: &["no recording at reports/p/runs/ext.recording.json", "--record"] }),
        Case {
            // There but not UTF-8: said "no recording at", sending the user after a file that
            // is there (this session's attack pass).
            name: "engine: a recording that is not UTF-8",
            edits: vec![
                Write(EXPERIMENTS, EXT),
                Write(ENGINE, good),
                Write("reports/p/runs/ext.recording.json", b"{\"configuration\":\"ext\xff\"}\n"),
            ],
            args: from_rec,
            expect: Fails { at: "configuration \"ext\": the recording reports/p/runs/ext.recording.json cannot be read", says: &["invalid utf-8", "re-record it with --record"] },
        },
        Case {
            name: "engine: a recording that does not match its configuration",
            edits: vec![
                Write(EXPERIMENTS, EXT),
                Write(ENGINE, good),
                Write("reports/p/runs/ext.recording.json", b"{\"configuration\":\"ext\",\"hash\":\"0123456789abcdef\",\"version\":null,\"exchanges\":[]}\n"),
            ],
            args: from_rec,
            expect: Fails { at: "reports/p/runs/ext.recording.json", says: &["does not match configuration \"ext\"", "hash 0123456789ab", "re-record with --record"] },
        },
    ]
}

#[test]
fn every_bad_external_engine_exits_2_naming_configuration_and_task() {
    let pristine = common::fixture("bad_input");
    let cases = external_engine_cases();
    let failed: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            let mut edits = Vec::new();
            for e in &c.edits {
                if let Write(f, _) = e {
                    if let Some(parent) = Path::new(f).parent() {
                        edits.push(parent.to_path_buf());
                    }
                }
            }
            check_creating(&pristine, c, &edits)
                .err()
                .map(|e| format!("--- {}: {e}", c.name))
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}

/// [`check`], after creating the directories the case writes into.
fn check_creating(pristine: &Path, case: &Case, dirs: &[std::path::PathBuf]) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    common::copy_dir(pristine, tmp.path());
    for d in dirs {
        std::fs::create_dir_all(tmp.path().join(d)).unwrap();
    }
    check(tmp.path(), case)
}

// ---- External engines over HTTP (issue 14): a small Python server on 127.0.0.1 answers each
// path in one (mis)behaving way; each case points the configuration `ext` at one path.

const HTTP_SERVER: &str = r#"
import http.server, json, sys, collections
seen = collections.Counter()
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def answer(self, status, body):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_POST(self):
        req = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        ok = {"hits": {"hits": [{"_id": "alpha", "_score": 1.5}, {"_id": "beta", "_score": 0.5}]}}
        p = self.path
        if p == "/ok": self.answer(200, ok)
        elif p == "/503": self.answer(503, "upstream overloaded, try later")
        elif p == "/404": self.answer(404, '{"error": "no such index: docs"}')
        elif p == "/shape": self.answer(200, {"results": []})
        elif p == "/notjson": self.answer(200, "<html>login</html>")
        elif p == "/strscore": self.answer(200, {"hits": {"hits": [{"_id": "alpha", "_score": "high"}]}})
        elif p == "/flaky":
            seen[req] += 1
            self.answer(503 if seen[req] == 1 else 200, "busy" if seen[req] == 1 else ok)
        else: self.answer(404, "no route")
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;

/// The Python server above, stopped on drop.
struct HttpFixture {
    child: std::process::Child,
    port: String,
}

impl HttpFixture {
    fn start() -> HttpFixture {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .args(["-c", HTTP_SERVER])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs the HTTP fixture");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        HttpFixture {
            child,
            port: line.trim().to_string(),
        }
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An experiments file whose `ext` posts to `path` on the fixture server's `port` with `extra`
/// fields.
fn http_experiments(port: &str, path: &str, extra: &str) -> &'static [u8] {
    let text = format!(
        "experiment: e\nbaseline: bm25\nconfigurations:\n  - name: bm25\n    retriever: bm25\n  - name: ext\n    engine:\n      http: {{ url: \"http://127.0.0.1:{port}{path}\", body: '{{\"query\": {{\"match\": {{\"text\": \"{{{{query}}}}\"}}}}, \"size\": {{{{k}}}}}}', preset: opensearch, retries: 1{extra} }}\n"
    );
    Box::leak(text.into_bytes().into_boxed_slice())
}

/// One HTTP case: `yaml` as the experiments file, replayed with `ranklab run`.
fn http_case(name: &'static str, yaml: &'static [u8], expect: Expect) -> Case {
    Case {
        name,
        edits: vec![Write(EXPERIMENTS, yaml)],
        args: RUN,
        expect,
    }
}

/// What the engine answers (or fails to): retried, counted as errors, refused responses.
fn http_response_cases(port: &str) -> Vec<Case> {
    let ex = |path: &str, extra: &str| http_experiments(port, path, extra);
    let case = http_case;
    vec![
        case("http: a working engine", ex("/ok", ""), Accepted),
        case(
            "http: retried 503s that then succeed",
            ex("/flaky", ""),
            Accepted,
        ),
        case(
            "http: HTTP 5xx",
            ex("/503", ""),
            Fails {
                at: "configuration \"ext\"",
                says: &[
                    "engine errors: 3 (first: T1: HTTP 503: upstream overloaded, try later)",
                    "on_error: empty",
                ],
            },
        ),
        case(
            "http: on_error empty counts failed requests as empty rankings, and the run fails",
            ex("/503", "")
                .to_vec()
                .leak_sub("    engine:\n", "    engine:\n      on_error: empty\n"),
            CheckFails(&["FAIL: p: configuration `ext` answered 3 of 3 tasks with an error"]),
        ),
        case(
            "http: HTTP 4xx",
            ex("/404", ""),
            Fails {
                at: "configuration \"ext\"",
                says: &[
                    "engine errors: 3 (first: T1: HTTP 404: {\"error\": \"no such index: docs\"})",
                ],
            },
        ),
        case(
            "http: a pointer that matches nothing",
            ex("/shape", ""),
            Fails {
                at: "configuration \"ext\"",
                says: &[
                    "task T1",
                    "pointer `hits: /hits/hits` matches nothing",
                    "{\"results\":[]}",
                ],
            },
        ),
        case(
            "http: a response that is not JSON",
            ex("/notjson", ""),
            Fails {
                at: "configuration \"ext\"",
                says: &["task T1", "not JSON", "<html>login</html>"],
            },
        ),
        case(
            "http: a score that is not a number",
            ex("/strscore", ""),
            Fails {
                at: "configuration \"ext\"",
                says: &["task T1", "\"high\"", "not a number"],
            },
        ),
        case(
            "http: nothing listening",
            ex("/ok", "").to_vec().leak_replace(),
            Fails {
                at: "configuration \"ext\"",
                says: &["engine errors: 3 (first: T1: request failed"],
            },
        ),
    ]
}

/// What the configuration says wrongly, refused at load with its line.
fn http_configuration_cases(port: &str) -> Vec<Case> {
    let ex = |path: &str, extra: &str| http_experiments(port, path, extra);
    let case = http_case;
    vec![
        case(
            "http: an unknown preset",
            ex("/ok", ", preset: algolia")
                .to_vec()
                .leak_drop_first_preset(),
            Fails {
                at: "tasks/p/experiments.yaml:6",
                says: &[
                    "unknown preset \"algolia\"",
                    "opensearch, elasticsearch, solr, vespa, meilisearch, typesense, qdrant",
                ],
            },
        ),
        case(
            "http: an unknown placeholder",
            ex("/ok", "").to_vec().leak_sub("{{query}}", "{{qeury}}"),
            Fails {
                at: "tasks/p/experiments.yaml:6",
                says: &[
                    "unknown placeholder {{qeury}}",
                    "{{query}}, {{k}}, {{task}}",
                ],
            },
        ),
        case(
            "http: concurrency 0",
            ex("/ok", ", concurrency: 0"),
            Fails {
                at: "tasks/p/experiments.yaml:6",
                says: &["`concurrency: 0`", "write 1 or more"],
            },
        ),
    ]
}

#[test]
fn every_bad_http_engine_exits_2_naming_configuration_and_task() {
    let server = HttpFixture::start();
    let mut cases = http_response_cases(&server.port);
    cases.extend(http_configuration_cases(&server.port));
    let pristine = common::fixture("bad_input");
    let failed: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            check(&pristine, c)
                .err()
                .map(|e| format!("--- {}: {e}", c.name))
        })
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n")
    );
}

/// Small edits of a leaked experiments file, for the HTTP cases.
trait LeakEdit {
    fn leak_sub(self, from: &str, to: &str) -> &'static [u8];
    fn leak_replace(self) -> &'static [u8];
    fn leak_drop_first_preset(self) -> &'static [u8];
}

impl LeakEdit for Vec<u8> {
    fn leak_sub(self, from: &str, to: &str) -> &'static [u8] {
        let s = String::from_utf8(self).unwrap().replacen(from, to, 1);
        Box::leak(s.into_bytes().into_boxed_slice())
    }
    /// Points the url at a port nothing listens on (port 9, discard, is closed on loopback).
    fn leak_replace(self) -> &'static [u8] {
        let s = String::from_utf8(self).unwrap();
        let start = s.find("127.0.0.1:").unwrap() + "127.0.0.1:".len();
        let end = start + s[start..].find('/').unwrap();
        let s = format!("{}9{}", &s[..start], &s[end..]);
        Box::leak(s.into_bytes().into_boxed_slice())
    }
    fn leak_drop_first_preset(self) -> &'static [u8] {
        self.leak_sub(", preset: opensearch", "")
    }
}
