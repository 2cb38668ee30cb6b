//! LLM judgments of a BEIR collection, through the binary, with the real in-process model
//! (SmolLM2 through candle) on a four-document collection written here. A collection is data
//! ranklab never writes to: its pool and judgments live in its report folder
//! (`<reports>/<name>/`). Properties:
//! - `ranklab pool DIR --reports R` pools the unjudged documents of the runs `ranklab beir`
//!   wrote into `R/<name>/pool.yaml`; `ranklab judge DIR --reports R --llm ... --also-judged`
//!   grades them and the qrels' pairs into `R/<name>/judgments.yaml`: the pooled documents'
//!   grades count, the qrels' pairs' grades go beside them (`llm_grades:`), and the
//!   collection's folder is byte for byte what it was;
//! - the next `ranklab beir` report has the section "LLM judgments" (κ against the qrels,
//!   Kendall's τ of the two orders of the configurations), its tables still on the qrels
//!   alone ("0 by an LLM" is not what they rest on) unless `--judgments all`, whose tables
//!   count the LLM's grades: the qrels' 2 pairs plus the pool's, as the section says;
//! - the judging page is refused for a collection (exit 2: it takes a suite).

mod common;

use std::path::Path;

const CORPUS: &str = r#"{"_id": "d1", "title": "Idempotency keys", "text": "Every capture request carries an idempotency key so that a replayed capture is answered from the stored result."}
{"_id": "d2", "title": "Retry budgets", "text": "Clients retry a failed payment capture at most three times with exponential backoff."}
{"_id": "d3", "title": "Ledger snapshots", "text": "The ledger writes a snapshot every night and keeps thirty days of them."}
{"_id": "d4", "title": "Capture webhooks", "text": "A webhook tells the merchant and the ledger that a capture succeeded or failed."}
"#;

const QUERIES: &str = r#"{"_id": "q1", "text": "idempotency key for a replayed capture"}
{"_id": "q2", "text": "how often is the ledger snapshot taken"}
"#;

const QRELS: &str = "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n";

/// Every file under `dir` with its bytes, sorted by path.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in walk(dir) {
        out.push((
            e.strip_prefix(dir).unwrap().display().to_string(),
            std::fs::read(&e).unwrap(),
        ));
    }
    out.sort();
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

use common::ranklab_cached as run;

#[test]
fn a_collection_is_pooled_judged_and_reported_in_its_report_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = common::cache_with_llm(tmp.path());
    let coll = tmp.path().join("tiny");
    std::fs::create_dir_all(coll.join("qrels")).unwrap();
    std::fs::write(coll.join("corpus.jsonl"), CORPUS).unwrap();
    std::fs::write(coll.join("queries.jsonl"), QUERIES).unwrap();
    std::fs::write(coll.join("qrels/test.tsv"), QRELS).unwrap();
    let before = files(&coll);
    let beir = [
        "beir",
        "tiny",
        "--configs",
        "bm25,bm25-lucene",
        "--depth",
        "4",
        "--reports",
        "reports",
    ];
    run(tmp.path(), &cache, &beir);
    let (out, _) = run(
        tmp.path(),
        &cache,
        &["pool", "tiny", "--reports", "reports", "--depth", "2"],
    );
    assert!(out.contains("reports/tiny/pool.yaml"), "{out}");
    let pool = std::fs::read_to_string(tmp.path().join("reports/tiny/pool.yaml")).unwrap();
    // The top 2 of each query hold its judged document and at least one other.
    let pooled = pool.matches("best_rank").count();
    assert!((2..=4).contains(&pooled), "{pool}");

    let (out, err) = run(
        tmp.path(),
        &cache,
        &[
            "judge",
            "tiny",
            "--reports",
            "reports",
            "--llm",
            "smollm2-135m-instruct",
            "--also-judged",
        ],
    );
    assert!(
        err.contains(&format!("{} pairs graded, 0 from cache", pooled + 2)),
        "{err}"
    );
    assert!(
        out.contains(&format!("{pooled} grades of unjudged documents"))
            && out.contains("2 kept beside"),
        "{out}"
    );
    let j = ranklab::judgments::Judgments::load(
        &tmp.path().join("reports/tiny/judgments.yaml"),
        "tiny",
    )
    .unwrap();
    assert_eq!(j.judgments.len(), pooled);
    assert!(j.judgments.iter().all(|g| g.is_llm()));
    let mut beside: Vec<(&str, &str)> = j
        .llm_grades
        .iter()
        .map(|g| (g.task.as_str(), g.document.as_str()))
        .collect();
    beside.sort();
    assert_eq!(beside, [("q1", "d1"), ("q2", "d3")]);
    assert_eq!(
        files(&coll),
        before,
        "the collection's folder was written to"
    );

    // The report: the section, and tables on the qrels alone by default.
    run(tmp.path(), &cache, &beir);
    let md = std::fs::read_to_string(tmp.path().join("reports/tiny/tiny.md")).unwrap();
    assert!(md.contains("## LLM judgments"), "{md}");
    assert!(md.contains("κ") && md.contains("Kendall"), "{md}");
    assert!(
        md.contains(&format!("Judgments: 2 by people, {pooled} by an LLM")),
        "{}",
        &md[md.find("## LLM judgments").unwrap()..]
    );
    let qrels = std::fs::read_to_string(tmp.path().join("reports/tiny/qrels.txt")).unwrap();
    assert_eq!(qrels.lines().count(), 2, "{qrels}");
    let mut all = beir.to_vec();
    all.extend(["--judgments", "all"]);
    run(tmp.path(), &cache, &all);
    let qrels = std::fs::read_to_string(tmp.path().join("reports/tiny/qrels.txt")).unwrap();
    assert_eq!(qrels.lines().count(), 2 + pooled, "{qrels}");

    // No page for a collection.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["judge", "tiny"])
        .current_dir(tmp.path())
        .env("RANKLAB_CACHE", &cache)
        .output()
        .unwrap();
    assert_eq!(common::code(&o), 2, "{}", common::stderr(&o));
    assert!(common::stderr(&o).contains("takes a suite"));
}
