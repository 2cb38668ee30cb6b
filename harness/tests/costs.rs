//! The cost of each rerank configuration (`reports/<suite>/costs.json`, `report::costs`):
//! - the report's section rendered from a hand-written fixture file
//!   (`fixtures/costs/costs.json`) equals the text written here by hand (figures rounded to
//!   three significant digits by hand, cold per query = shortlist × cold per pair);
//! - a model whose identity changed since it was measured shows as not measured, never with
//!   the old figures;
//! - a cost file that does not parse stops `bench` with one line naming it (exit 2, nothing
//!   written);
//! - `ranklab bench` reads the file and never rewrites it: its bytes and modification time are
//!   unchanged after a run on an empty cache and a run on a warm one, and those two runs write
//!   the same report bytes (real L-12 cross-encoder, shortlist 2, in a cache whose models link
//!   to the real ones);
//! - `bench --measure-costs` times every pair of the shortlists (35 tasks × 2 = 70 pairs, counted
//!   by hand from the suite) for the identity the report names, a later plain `bench` keeps the
//!   file and the report it wrote, a second `--measure-costs` with every model measured writes
//!   nothing, and naming a model no configuration uses is refused before anything runs (by
//!   `bench` and by `run`).
//!
//! - the same `--measure-costs` measures each configuration's cost per query (one row per
//!   configuration, percentiles ordered) and the report shows them; a second one, every
//!   configuration measured, writes nothing.
//!
//! No assertion is on a timing: figures are checked for being finite and ≥ 0 only.

use std::collections::BTreeMap;
use std::path::Path;

use ranklab::report::costs::{self, section, Costs};
use ranklab::suite::{Configuration, Experiments};

mod common;
use common::{assert_bad_input, code, stderr, stdout};

fn fixture_costs() -> Costs {
    costs::load(&common::fixture("costs")).unwrap()
}

const FOUR: &str = "experiment: costs
baseline: bm25
configurations:
  - name: bm25
    retriever: bm25
  - name: fusion+L12@20
    retriever: fusion
    rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 20 }
  - name: fusion+L12@8
    retriever: fusion
    rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 8 }
  - name: fusion+colbert@20
    retriever: fusion
    rerank: { model: answerai-colbert-small-v1, shortlist: 20 }
";

fn four_configs(dir: &Path) -> Experiments {
    let file = dir.join("experiments.yaml");
    std::fs::write(&file, FOUR).unwrap();
    Experiments::load(&file).unwrap()
}

fn models(l12: &str, colbert: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("ms-marco-MiniLM-L-12-v2".to_string(), l12.to_string()),
        ("answerai-colbert-small-v1".to_string(), colbert.to_string()),
    ])
}

/// The section's table and notes (everything after the introduction paragraph).
fn table_and_notes(md: &str) -> &str {
    &md[md.find("| configuration").expect("a table")..]
}

#[test]
fn the_cost_section_renders_a_fixture_file_as_written_by_hand() {
    let tmp = tempfile::tempdir().unwrap();
    let ex = four_configs(tmp.path());
    let configs: Vec<&Configuration> = ex.configurations.iter().collect();
    let md = section(
        &configs,
        &models("L12 identity A", "colbert identity B"),
        &fixture_costs(),
        "costs",
    );
    assert!(md.starts_with("## Cost per scored pair\n\nMilliseconds per scored (query, section) pair of each rerank configuration's model, from `costs.json` beside this report: `ranklab bench --from-recording --measure-costs` (`just costs` in a checkout of ranklab) measures them and `ranklab bench` only reads them"), "{md}");
    // 52.041 -> 52.0; 0.0061669 -> 0.00617; 20 x 52.041 = 1040.82 -> 1041; 8 x 52.041 =
    // 416.328 -> 416; 0.63865 -> 0.639. The ColBERT measurement is of another identity.
    let want = "\
| configuration | rerank model | shortlist | cold ms per pair | warm ms per pair | cold ms per query | model load s |
|---|---|---:|---:|---:|---:|---:|
| bm25 | — | — | — | — | — | — |
| fusion+L12@20 | ms-marco-MiniLM-L-12-v2 | 20 | 52.0 | 0.00617 | 1041 | 0.639 |
| fusion+L12@8 | ms-marco-MiniLM-L-12-v2 | 8 | 52.0 | 0.00617 | 416 | 0.639 |
| fusion+colbert@20 | answerai-colbert-small-v1 | 20 | not measured | not measured | — | — |

- `answerai-colbert-small-v1`: not measured for its identity `colbert identity B`; run `ranklab bench --from-recording --measure-costs`.
- `ms-marco-MiniLM-L-12-v2`: 1,043 pairs, measured 2026-12-02 13:11 UTC by `ranklab bench --from-recording --measure-costs` on 2 cores (x86_64 linux), load average 1.25 at the start.

";
    assert_eq!(table_and_notes(&md), want);
}

#[test]
fn a_changed_identity_shows_as_not_measured() {
    let tmp = tempfile::tempdir().unwrap();
    let ex = four_configs(tmp.path());
    let configs: Vec<&Configuration> = ex.configurations.iter().collect();
    let c = fixture_costs();
    // The same fixture, the L-12 identity changed (another file sha256, say): no figure of it.
    let md = section(
        &configs,
        &models("L12 identity A2", "colbert identity B"),
        &c,
        "costs",
    );
    assert!(
        md.contains("| fusion+L12@20 | ms-marco-MiniLM-L-12-v2 | 20 | not measured | not measured | — | — |"),
        "{md}"
    );
    assert!(
        md.contains(
            "- `ms-marco-MiniLM-L-12-v2`: not measured for its identity `L12 identity A2`; run `ranklab bench --from-recording --measure-costs`."
        ),
        "{md}"
    );
    assert!(!md.contains("52.0"), "{md}");
    // The ColBERT identity the fixture does hold shows its figures (8.576 -> 8.58; 20 x 8.576 = 171.52 -> 172).
    let md = section(
        &configs,
        &models(
            "L12 identity A",
            "colbert identity measured before its settings changed",
        ),
        &c,
        "costs",
    );
    assert!(
        md.contains(
            "| fusion+colbert@20 | answerai-colbert-small-v1 | 20 | 8.58 | 0.00235 | 172 | 0.775 |"
        ),
        "{md}"
    );
    // A report with no rerank configuration has no cost section.
    let first: Vec<&Configuration> = ex.configurations.iter().take(1).collect();
    assert_eq!(section(&first, &BTreeMap::new(), &c, "costs"), "");
}

const BM25_ONLY: &str = "experiment: retrieval
baseline: bm25
configurations:
  - name: bm25
    retriever: bm25
";

const RERANK_2: &str = "experiment: retrieval
baseline: bm25
configurations:
  - name: bm25
    retriever: bm25
  - name: bm25+L12@2
    retriever: bm25
    rerank: { model: ms-marco-MiniLM-L-12-v2, shortlist: 2 }
";

#[test]
fn a_damaged_cost_file_stops_bench_with_one_line_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    common::copy_suite(
        &tmp.path().join("tasks"),
        "docir",
        &[("experiments.yaml", BM25_ONLY)],
        &[],
    );
    let dir = tmp.path().join("reports/docir");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("costs.json"), "{\n  \"about\": 1\n}\n").unwrap();
    let out = common::ranklab_in(tmp.path(), &["bench"]);
    assert_bad_input(
        &out,
        "",
        &[
            "costs.json:2:",
            "ranklab bench --from-recording --measure-costs",
        ],
    );
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(!dir.join("retrieval.md").exists(), "nothing written");
}

/// The identity the L-12 cross-encoder's score cache is keyed by.
fn l12_identity() -> String {
    use ranklab_engine::rerank::{CrossEncoder, CrossEncoderOptions, LazyCrossEncoder};
    let store = ranklab_engine::models::ModelStore::open_default().unwrap();
    let ce = LazyCrossEncoder::open(
        &store,
        "ms-marco-MiniLM-L-12-v2",
        &CrossEncoderOptions::default(),
    )
    .unwrap();
    ce.identity().to_string()
}

/// `--measure-costs` wrote a cost per query for both configurations of `RERANK_2` (experiment
/// `retrieval`, 35 tasks), with ordered nearest-rank percentiles (p50 ≤ p95 ≤ p99 ≤ max), the
/// warm pass no slower than cold at the median would be a timing assertion and is not made; the
/// report shows each row's figures as the file holds them (three significant digits).
fn per_query_rows_cover_every_configuration(measured: &costs::CostFile, md: &str) {
    let names: Vec<(&str, &str)> = measured
        .configurations
        .iter()
        .map(|r| (r.experiment.as_str(), r.configuration.as_str()))
        .collect();
    assert_eq!(
        names,
        [("retrieval", "bm25"), ("retrieval", "bm25+L12@2")],
        "sorted by experiment then configuration"
    );
    for r in &measured.configurations {
        assert_eq!(r.tasks, 35);
        assert_eq!(r.command, "ranklab bench --measure-costs");
        for p in [r.per_query_ms, r.per_query_ms_warm] {
            assert!(
                p.p50 > 0.0 && p.p50 <= p.p95 && p.p95 <= p.p99 && p.p99 <= p.max,
                "{r:?}"
            );
        }
        assert!(
            r.qps.is_finite() && r.qps > 0.0 && r.qps_warm > 0.0,
            "{r:?}"
        );
        let line = format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.configuration,
            costs::sig3(r.per_query_ms.p50),
            costs::sig3(r.per_query_ms.p95),
            costs::sig3(r.per_query_ms.p99),
            costs::sig3(r.per_query_ms_warm.p50),
            costs::sig3(r.per_query_ms_warm.p99),
            costs::sig3(r.qps),
            costs::sig3(r.qps_warm),
        );
        assert!(md.contains(&line), "{line}\n{md}");
    }
    assert!(md.contains("## Cost per query"), "{md}");
}

fn bench(dir: &Path, args: &[&str]) -> std::process::Output {
    let out = common::ranklab_in(dir, args);
    assert_eq!(code(&out), 0, "{}\n{}", stdout(&out), stderr(&out));
    out
}

#[test]
fn bench_reads_the_cost_file_and_never_rewrites_it() {
    let tmp = tempfile::tempdir().unwrap();
    common::cache_with_shared_models(tmp.path());
    common::copy_suite(
        &tmp.path().join("tasks"),
        "docir",
        &[("experiments.yaml", RERANK_2)],
        &[],
    );
    let dir = tmp.path().join("reports/docir");
    std::fs::create_dir_all(&dir).unwrap();
    let fixture = std::fs::read_to_string(common::fixture("costs").join("costs.json")).unwrap();
    let written = fixture.replace("L12 identity A", &l12_identity());
    let file = dir.join("costs.json");
    std::fs::write(&file, &written).unwrap();
    let mtime = || std::fs::metadata(&file).unwrap().modified().unwrap();
    let before = mtime();

    let cold = bench(tmp.path(), &["bench"]);
    assert!(
        stderr(&cold).contains("70 pairs scored, 0 from cache"),
        "{}",
        stderr(&cold)
    );
    let report_cold = std::fs::read(dir.join("retrieval.md")).unwrap();
    let warm = bench(tmp.path(), &["bench"]);
    assert!(
        stderr(&warm).contains("0 pairs scored, 70 from cache"),
        "{}",
        stderr(&warm)
    );
    let report_warm = std::fs::read(dir.join("retrieval.md")).unwrap();

    assert_eq!(std::fs::read_to_string(&file).unwrap(), written);
    assert_eq!(mtime(), before, "bench rewrote the cost file");
    assert!(report_cold == report_warm, "cold and warm reports differ");
    let md = String::from_utf8(report_cold).unwrap();
    assert!(
        md.contains("| bm25+L12@2 | ms-marco-MiniLM-L-12-v2 | 2 | 52.0 | 0.00617 | 104 | 0.639 |"),
        "{md}"
    );
}

#[test]
fn measure_costs_times_every_shortlisted_pair_and_bench_keeps_the_figures() {
    let tmp = tempfile::tempdir().unwrap();
    common::cache_with_shared_models(tmp.path());
    common::copy_suite(
        &tmp.path().join("tasks"),
        "docir",
        &[("experiments.yaml", RERANK_2)],
        &[],
    );
    let unknown = common::ranklab_in(tmp.path(), &["bench", "--measure-costs", "no-such-model"]);
    assert_bad_input(
        &unknown,
        "--measure-costs no-such-model",
        &["ms-marco-MiniLM-L-12-v2"],
    );
    // `run` too, before its replay (which could train every fold of a fine-tuned stage first):
    // the cache holds nothing but its linked models afterwards.
    let unknown = common::ranklab_in(
        tmp.path(),
        &["run", "tasks/docir", "--measure-costs", "no-such-model"],
    );
    assert_bad_input(
        &unknown,
        "--measure-costs \"no-such-model\"",
        &["ms-marco-MiniLM-L-12-v2", "nothing was run"],
    );
    let mut cached: Vec<String> = std::fs::read_dir(tmp.path().join("cache"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    cached.sort();
    assert_eq!(cached, ["models", "runtime"], "nothing replayed");

    let out = bench(tmp.path(), &["bench", "--measure-costs"]);
    let dir = tmp.path().join("reports/docir");
    let file = dir.join("costs.json");
    assert!(
        stdout(&out).contains("wrote reports/docir/costs.json"),
        "{}",
        stdout(&out)
    );
    let measured: costs::CostFile = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(measured.models.len(), 1);
    let m = &measured.models[0];
    assert_eq!(m.model, "ms-marco-MiniLM-L-12-v2");
    assert_eq!(m.identity, l12_identity());
    assert_eq!(m.pairs, 70, "35 tasks x shortlist 2");
    assert_eq!(m.command, "ranklab bench --measure-costs");
    for x in [m.cold_ms_per_pair, m.warm_ms_per_pair, m.model_load_s] {
        assert!(x.is_finite() && x >= 0.0, "{m:?}");
    }
    let md = std::fs::read_to_string(dir.join("retrieval.md")).unwrap();
    let row = format!(
        "| bm25+L12@2 | ms-marco-MiniLM-L-12-v2 | 2 | {} | {} | {} | {} |",
        costs::sig3(m.cold_ms_per_pair),
        costs::sig3(m.warm_ms_per_pair),
        costs::sig3(m.cold_ms_per_pair * 2.0),
        costs::sig3(m.model_load_s)
    );
    assert!(md.contains(&row), "{row}\n{md}");
    per_query_rows_cover_every_configuration(&measured, &md);

    let bytes = std::fs::read(&file).unwrap();
    bench(tmp.path(), &["bench"]);
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
    assert_eq!(
        std::fs::read_to_string(dir.join("retrieval.md")).unwrap(),
        md
    );

    let again = bench(tmp.path(), &["bench", "--measure-costs"]);
    assert!(
        stderr(&again).contains("every rerank model has a measurement"),
        "{}",
        stderr(&again)
    );
    assert!(!stdout(&again).contains("costs.json"), "{}", stdout(&again));
    assert_eq!(std::fs::read(&file).unwrap(), bytes);
}
