//! The statistics and plots of a suite report (`report::stats_section`, `report::plots`), on the
//! committed docir suite with three BM25 configurations (no model needed). Properties checked:
//! - the Δ columns hold one cell per configuration, `—` on the baseline's row, `Δ [lo, hi]` and
//!   `p (Holm)` on the others, and agree with the long table;
//! - the long table has one row per (configuration other than the baseline, measure);
//! - the reading is one line and names the baseline;
//! - the three SVG files are well-formed, linked from the Markdown, and byte-identical when
//!   rendered again.

use std::path::{Path, PathBuf};

use ranklab::replay::{replay, Engine};
use ranklab::report::{plots, stats_section, MeasureSet};
use ranklab::suite::{Experiments, Suite};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

const EXPERIMENTS: &str = "experiment: bm25-params
baseline: anserini
configurations:
  - name: anserini
    retriever: bm25
  - name: robertson
    retriever: bm25
    bm25: { k1: 1.2, b: 0.75 }
  - name: no-length-norm
    retriever: bm25
    bm25: { k1: 2.0, b: 0.0 }
";

#[test]
fn report_statistics_and_plots() {
    let tmp = tempfile::tempdir().unwrap();
    let ex_path = tmp.path().join("experiments.yaml");
    std::fs::write(&ex_path, EXPERIMENTS).unwrap();
    let suite = Suite::load(&root().join("tasks/docir/suite.yaml")).unwrap();
    let ex = Experiments::load(&ex_path).unwrap();
    let corpus = suite.load_corpus().unwrap();
    let engine = Engine::build(&corpus, &[&ex]).unwrap();
    let r = replay(&engine, &suite, &ex).unwrap();
    let set = MeasureSet::Suite;

    let s = stats_section::section(&corpus, &suite, &ex, &r, &set).unwrap();
    let names: Vec<String> = s.columns.iter().map(|c| c.name().to_string()).collect();
    assert_eq!(
        names,
        [
            "Δ recall@5 [95% CI]",
            "p recall@5 (Holm)",
            "Δ MRR [95% CI]",
            "p MRR (Holm)"
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
            assert!(cell.contains(" (") && cell.ends_with(')'), "{cell}");
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

    let (cols, reading) = stats_section::delta_columns(&corpus, &suite, &ex, &r, &set).unwrap();
    assert_eq!(cols.len(), 4);
    assert_eq!(reading, s.reading);

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
