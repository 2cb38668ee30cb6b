//! A corpus-size curve shares its dense scoring across sizes (issue 46): one scoring pass at
//! the largest size, each smaller size's dense lists gathered from it; and each smaller size's
//! BM25 index is the largest's restricted to its documents. Properties checked on
//! SciFact (`$RANKLAB_SHARED_DATA/scifact`, else `../shared/data/scifact`; bm25, dense and
//! fusion, the bi-encoder's vectors from this machine's model cache (`RANKLAB_CACHE` or the
//! default), embedded into it when missing: minutes cold, about 10 s warm):
//! - each smaller point of a curve is what a curve of that one size gives: a one-size curve
//!   does not share (it searches its own indexes, tantivy's of its own documents and its
//!   vectors through the vector cache), so it is the oracle of the gathered dense lists and
//!   the restricted BM25 lists, row by row (means, intervals, deltas, p-values);
//! - the curve's `all` point is the plain `ranklab beir` report of the collection (its
//!   evaluation is `per_task_values`, not the curve's), on the measures both show.
//!
//! The bit-level properties (gathered hits = the own index's hits, ties included) are the
//! engine's proptests `a_cut_index_searches_as_its_own_index_does` and
//! `restricted_index_searches_as_the_subsets_own_index`.

mod common;

use std::path::{Path, PathBuf};

fn scifact() -> PathBuf {
    let base = match std::env::var_os("RANKLAB_SHARED_DATA") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"),
    };
    let dir = base.join("scifact");
    assert!(
        dir.join("corpus.jsonl").is_file(),
        "SciFact not found at {}: set RANKLAB_SHARED_DATA to the shared data directory",
        dir.display()
    );
    dir
}

/// Runs `ranklab beir SCIFACT --configs bm25,dense,fusion` with `extra` into `out/`.
fn beir(tmp: &Path, out: &str, extra: &[&str]) {
    let dir = scifact();
    let mut args = vec![
        "beir",
        dir.to_str().unwrap(),
        "--configs",
        "bm25,dense,fusion",
        "--reports",
        out,
    ];
    args.extend_from_slice(extra);
    // The machine's model cache (not a fresh one per test, as `common::ranklab_in` gives):
    // SciFact's 5,183 abstracts take minutes to embed cold, seconds warm.
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(&args)
        .current_dir(tmp)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run ranklab");
    assert_eq!(common::code(&o), 0, "{}", common::stderr(&o));
}

/// The rows of a `.scale.csv` at `documents` documents, without the `added` column.
fn rows_at(csv: &str, documents: usize) -> Vec<String> {
    csv.lines()
        .skip(1)
        .filter(|l| l.split(',').nth(2) == Some(&documents.to_string()))
        .map(|l| {
            let mut f: Vec<&str> = l.split(',').collect();
            f.remove(3);
            f.join(",")
        })
        .collect()
}

#[test]
fn each_point_of_a_shared_curve_is_that_size_measured_alone() {
    let tmp = tempfile::tempdir().unwrap();
    beir(tmp.path(), "curve", &["--corpus-sizes", "1000,2000,all"]);
    let read = |p: &str| std::fs::read_to_string(tmp.path().join(p)).unwrap();
    let curve = read("curve/scifact/scifact.scale.csv");
    for size in [1000, 2000] {
        let out = format!("alone{size}");
        beir(tmp.path(), &out, &["--corpus-sizes", &size.to_string()]);
        let alone = read(&format!("{out}/scifact/scifact.scale.csv"));
        let (shared, own) = (rows_at(&curve, size), rows_at(&alone, size));
        assert_eq!(shared.len(), 6, "2 measures x 3 configurations:\n{curve}");
        // The deltas' Holm adjustment is over the configurations of one size: the same here.
        assert_eq!(
            shared, own,
            "size {size}: the curve's point against the size alone"
        );
    }
    // The whole corpus: the plain report (rows `bm25 (baseline)`, `dense`, `fusion`; nDCG@10
    // then recall@100).
    beir(tmp.path(), "plain", &[]);
    let plain = read("plain/scifact/scifact.csv");
    for config in ["bm25", "dense", "fusion"] {
        let row: Vec<&str> = plain
            .lines()
            .find(|l| l.split(',').next().and_then(|c| c.split(' ').next()) == Some(config))
            .unwrap_or_else(|| panic!("no {config} row in\n{plain}"))
            .split(',')
            .collect();
        for (measure, column) in [("nDCG@10", 1), ("recall@100", 2)] {
            let at_all = curve
                .lines()
                .find(|l| l.starts_with(&format!("{measure},{config},5183,")))
                .unwrap_or_else(|| panic!("no {measure} {config} at 5183 in\n{curve}"));
            assert_eq!(
                at_all.split(',').nth(4),
                Some(row[column]),
                "{measure} {config}"
            );
        }
    }
}
