//! The statistics and plots of a suite report (`report::stats_section`, `report::plots`), on the
//! committed docir suite with three BM25 configurations (no model needed). Properties checked:
//! - the Δ columns hold one cell per configuration, `—` on the baseline's row, `Δ [lo, hi]` and
//!   `p (raw)` and `p (Holm)` on the others, and agree with the long table;
//! - the long table has one row per (configuration other than the baseline, measure);
//! - the reading is one line and names the baseline;
//! - the three SVG files are well-formed, linked from the Markdown, and byte-identical when
//!   rendered again;
//! - a suite report and `ranklab compare` on its own run files and `qrels.txt` print the same
//!   Δ, CI bounds, p, Holm p, test method and win/tie/loss for every configuration and measure
//!   both compute (recall@5, MRR): two code paths (the replay's per-task values in task order,
//!   trec_eval-style evaluation of the written runs in qrels order) that `stats/mod.rs`
//!   promises agree to the bit; and the same Judged@5 and unjudged@5 per configuration.

use std::path::{Path, PathBuf};

mod common;
use common::BM25_PARAMS_EXPERIMENTS;

use ranklab::replay::{replay, Replayer};
use ranklab::report::{plots, stats_section, MeasureSet};
use ranklab::suite::{Experiments, Suite};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn report_statistics_and_plots() {
    let tmp = tempfile::tempdir().unwrap();
    let ex_path = tmp.path().join("experiments.yaml");
    std::fs::write(&ex_path, BM25_PARAMS_EXPERIMENTS).unwrap();
    let suite = Suite::load(&root().join("tasks/docir/suite.yaml")).unwrap();
    let ex = Experiments::load(&ex_path).unwrap();
    let corpus = suite.load_corpus().unwrap();
    let engine = Replayer::build(&corpus, &[&ex]).unwrap();
    let r = replay(&engine, &suite, &ex).unwrap();
    let set = MeasureSet::Suite;

    let s = stats_section::section(&corpus, &suite, &ex, &r, &set).unwrap();
    let names: Vec<String> = s.columns.iter().map(|c| c.name().to_string()).collect();
    assert_eq!(
        names,
        [
            "Δ recall@5 [95% CI]",
            "p (raw) recall@5",
            "p (Holm) recall@5",
            "Δ MRR [95% CI]",
            "p (raw) MRR",
            "p (Holm) MRR"
        ]
    );
    for c in &s.columns {
        assert_eq!(c.len(), 3);
        assert_eq!(c.get(0).unwrap().to_string().trim_matches('"'), "—");
        let cell = c.get(1).unwrap().to_string();
        let cell = cell.trim_matches('"');
        if c.name().starts_with('Δ') {
            assert!(cell.contains(" [") && cell.ends_with(']'), "{cell}");
        } else {
            let p: f64 = cell.trim_start_matches('<').parse().expect(cell);
            assert!((0.0..=1.0).contains(&p), "{cell}");
        }
    }
    assert_eq!(s.table.height(), 2 * 6);
    assert!(!s.reading.contains('\n'));
    assert!(s.reading.contains("`anserini`"), "{}", s.reading);
    assert!(s.method.contains("Seed 42."), "{}", s.method);
    assert!(
        s.method.contains("are exact"),
        "20 tasks: every p-value is exact: {}",
        s.method
    );

    let p = plots::render(&corpus, &suite, &ex, &r, &set, "bm25-params").unwrap();
    let files: Vec<String> = p
        .files
        .iter()
        .map(|(f, _)| f.display().to_string())
        .collect();
    assert_eq!(
        files,
        [
            "bm25-params.metrics.svg",
            "bm25-params.delta.svg",
            "bm25-params.tasks.svg"
        ]
    );
    for (path, bytes) in &p.files {
        let name = path.display();
        let svg = std::str::from_utf8(bytes).unwrap();
        assert!(
            svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""),
            "{name}"
        );
        assert!(svg.ends_with("</svg>\n"), "{name}");
        assert_eq!(
            svg.matches("<text").count(),
            svg.matches("</text>").count(),
            "{name}"
        );
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{name}");
        assert!(p.markdown.contains(&format!("]({name})")), "{}", p.markdown);
    }
    let again = plots::render(&corpus, &suite, &ex, &r, &set, "bm25-params").unwrap();
    assert_eq!(p.files, again.files, "plots are not reproducible");
}

/// CSV rows as maps from column name to field.
fn csv_rows(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let fields: Vec<&str> = l.split(',').collect();
            assert_eq!(fields.len(), head.len(), "{l}");
            head.iter()
                .zip(fields)
                .map(|(h, f)| (h.to_string(), f.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn a_suite_report_and_compare_on_its_run_files_print_the_same_statistics() {
    let tmp = tempfile::tempdir().unwrap();
    let ex_path = tmp.path().join("experiments.yaml");
    std::fs::write(&ex_path, BM25_PARAMS_EXPERIMENTS).unwrap();
    let reports = tmp.path().join("reports");
    let bin = env!("CARGO_BIN_EXE_ranklab");
    let o = std::process::Command::new(bin)
        .current_dir(root())
        .arg("run")
        .arg("tasks/docir")
        .arg("-x")
        .arg(&ex_path)
        .arg("--reports")
        .arg(&reports)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = reports.join("docir");
    let report = csv_rows(&std::fs::read_to_string(dir.join("bm25-params.stats.csv")).unwrap());

    let runs = ["anserini", "robertson", "no-length-norm"];
    let o = std::process::Command::new(bin)
        .arg("compare")
        .arg("--qrels")
        .arg(dir.join("qrels.txt"))
        .args(runs.iter().map(|r| dir.join(format!("runs/{r}.trec"))))
        .args(["-m", "recall.5", "-m", "recip_rank", "--format", "csv"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let compared = csv_rows(std::str::from_utf8(&o.stdout).unwrap());

    // The suite's names for compare's measures (docir: k = 5 for every task).
    let measures = [("recall@5", "recall_5"), ("MRR", "recip_rank")];
    let mut checked = 0;
    for (suite_name, trec_name) in measures {
        for run in &runs[1..] {
            let a = report
                .iter()
                .find(|r| r["configuration"] == *run && r["measure"] == suite_name)
                .unwrap_or_else(|| panic!("no {run} {suite_name} in the report"));
            let b = compared
                .iter()
                .find(|r| r["run"] == *run && r["measure"] == trec_name)
                .unwrap_or_else(|| panic!("no {run} {trec_name} from compare"));
            for field in [
                "mean", "delta", "ci_low", "ci_high", "p", "p_method", "p_holm", "wins", "ties",
                "losses",
            ] {
                assert_eq!(a[field], b[field], "{run} {suite_name} {field}");
            }
            assert_eq!(a["n"], b["queries"], "{run} {suite_name}");
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
    // Not the trivial case: no-length-norm loses MRR on several tasks (Δ not 0, p not 1).
    let nln = |m: &str| {
        report
            .iter()
            .find(|r| r["configuration"] == "no-length-norm" && r["measure"] == m)
            .unwrap()
    };
    assert_ne!(nln("MRR")["delta"], "0.0000");
    assert_ne!(nln("MRR")["p"], "1.0000");

    // The warranty's Judged@5 and unjudged@5 (replay, task order) equal compare's (trec_eval's
    // order on the written runs), run by run.
    let warranty =
        csv_rows(&std::fs::read_to_string(dir.join("bm25-params.warranty.csv")).unwrap());
    let o = std::process::Command::new(bin)
        .arg("compare")
        .arg("--qrels")
        .arg(dir.join("qrels.txt"))
        .args(runs.iter().map(|r| dir.join(format!("runs/{r}.trec"))))
        .args(["-m", "recip_rank", "--judged-at", "5"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = String::from_utf8(o.stdout).unwrap();
    for w in &warranty {
        let row = format!(
            "| {} | {} | {} |",
            w["configuration"], w["Judged@5"], w["unjudged@5"]
        );
        assert!(md.contains(&row), "{row} not in {md}");
    }
}
