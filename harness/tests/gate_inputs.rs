//! The gate's verdict follows from what changed in the rankings, not from the machine, a stale
//! recording or a judging session (issue 41). Properties checked, each against an oracle that is
//! not the gate's own arithmetic:
//! - an unchanged copy of this repository gates with no model at all (an empty `RANKLAB_CACHE`,
//!   nothing fetched): every model output comes from `reports/<suite>/runs/models/`, the
//!   `--json` tally says `computed 0, cached 0`, and every row equals the committed baseline's
//!   value (recorded on another CPU);
//! - an engine recording made with `--record` keeps its corpus; after a record is edited the
//!   row is STALE (exit 1) and names the edited record; `--allow-stale` passes; an engine with
//!   `own_index: true` is not dated by the corpus;
//! - new judgments with no ranking change pass, graded against the kept rankings under today's
//!   judgments: `baseline_rescored` equals MRR computed here from the kept TREC file and the
//!   edited suite by hand; a ranking change (zeroed penalties) still fails, and the failed row
//!   names the tasks whose first relevant rank moved in `ranklab run`'s own run files.

mod common;
use std::path::Path;
use std::process::Command;

use common::{code, copy_dir, fixture_copy, stderr, stdout};

/// `ranklab ARGS` in `dir` with the cache `cache`, no step summary.
fn ranklab(dir: &Path, cache: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .current_dir(dir)
        .args(args)
        .env("RANKLAB_CACHE", cache)
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run ranklab")
}

/// `gate --json -` parsed.
fn gate_json(dir: &Path, cache: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut args = vec!["gate", "--json", "-"];
    args.extend_from_slice(extra);
    let o = ranklab(dir, cache, &args);
    let v = serde_json::from_str(&stdout(&o))
        .unwrap_or_else(|e| panic!("{e}: {}\n{}", stdout(&o), stderr(&o)));
    (code(&o), v)
}

fn rows<'a>(v: &'a serde_json::Value, config: &str) -> Vec<&'a serde_json::Value> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["configuration"] == config)
        .collect()
}

#[test]
fn an_unchanged_tree_gates_from_the_recording_with_no_model_present() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().unwrap();
    for d in ["tasks", "corpora", "reports", "examples"] {
        copy_dir(&root.join(d), &dir.path().join(d));
    }
    let cache = dir.path().join("empty-cache");
    let (rc, v) = gate_json(dir.path(), &cache, &[]);
    assert_eq!(rc, 0, "{v:#}");
    let m = &v["model_outputs"];
    assert_eq!(
        (m["computed"].as_u64(), m["cached"].as_u64()),
        (Some(0), Some(0)),
        "{m}"
    );
    assert!(m["recorded"].as_u64().unwrap() > 0, "{m}");
    // The oracle: the committed baseline file's values, read here as text.
    let baseline: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("reports/baseline.json")).unwrap())
            .unwrap();
    let mut compared = 0;
    for b in baseline["rows"].as_array().unwrap() {
        let Some(r) = v["rows"].as_array().unwrap().iter().find(|r| {
            r["suite"] == b["suite"]
                && r["configuration"] == b["configuration"]
                && r["metric"] == b["metric"]
                && !r["now"].is_null()
        }) else {
            continue;
        };
        assert_eq!(r["now"], b["value"], "{r}");
        compared += 1;
    }
    assert_eq!(
        compared, 4,
        "docir fusion and brain current, recall@5 and MRR"
    );
}

/// The client of docs/engines.md (Python), as external_engines.rs uses it.
fn python_client() -> String {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/engines.md"))
            .unwrap();
    let start = doc.find("```python\n").unwrap() + "```python\n".len();
    let len = doc[start..].find("```").unwrap();
    doc[start..start + len].to_string()
}

/// The gate fixture with an external configuration `py` (the docs' Python client over the
/// fixture corpus), `own_index` as given, recorded with `--record` and gated with `--also`.
fn recorded_engine(own_index: bool) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = fixture_copy("gate");
    let cache = dir.path().join("cache");
    std::fs::write(dir.path().join("overlap.py"), python_client()).unwrap();
    std::fs::write(
        dir.path().join("tasks/fx/experiments-engines.yaml"),
        format!(
            "experiment: engines\nbaseline: py\nconfigurations:\n  - name: py\n    engine: {{ command: [python3, ../../overlap.py, ../../corpus]{} }}\n",
            if own_index { ", own_index: true" } else { "" }
        ),
    )
    .unwrap();
    let o = ranklab(dir.path(), &cache, &["run", "tasks/fx", "--record"]);
    assert!(matches!(code(&o), 0 | 1), "{}", stderr(&o));
    let rec =
        std::fs::read_to_string(dir.path().join("reports/fx/runs/py.recording.json")).unwrap();
    assert_eq!(rec.contains("\"corpus\":"), !own_index, "{rec}");
    let o = ranklab(dir.path(), &cache, &["gate", "--update", "--also", "fx/py"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let (rc, v) = gate_json(dir.path(), &cache, &[]);
    assert_eq!(rc, 0, "{v:#}");
    // A record the engine indexes is edited.
    let f = dir.path().join("corpus/runbook-backup.md");
    let mut text = std::fs::read_to_string(&f).unwrap();
    text.push_str("\nA sentence added in review.\n");
    std::fs::write(&f, text).unwrap();
    (dir, cache)
}

#[test]
fn an_engine_recording_of_another_corpus_is_stale_and_names_the_edited_record() {
    let (dir, cache) = recorded_engine(false);
    let (rc, v) = gate_json(dir.path(), &cache, &[]);
    assert_eq!(rc, 1, "{v:#}");
    let py = rows(&v, "py");
    assert_eq!(py.len(), 2);
    for r in &py {
        assert_eq!(r["verdict"], "stale", "{r}");
        let note = r["note"].as_str().unwrap();
        assert!(
            note.contains("1 record(s) edited (runbook-backup)") && note.contains("--record"),
            "{note}"
        );
    }
    // Rows of ranklab's own configurations are not stale.
    assert!(rows(&v, "legacy").iter().all(|r| r["verdict"] != "stale"));
    let (rc, v) = gate_json(dir.path(), &cache, &["--allow-stale"]);
    assert_eq!(rc, 0, "{v:#}");
    assert!(rows(&v, "py")
        .iter()
        .all(|r| r["verdict"] == "stale" && r["fails"] == false));
}

#[test]
fn an_engine_with_its_own_index_is_not_dated_by_the_corpus() {
    let (dir, cache) = recorded_engine(true);
    let (rc, v) = gate_json(dir.path(), &cache, &[]);
    assert_eq!(rc, 0, "{v:#}");
    for r in rows(&v, "py") {
        assert_ne!(r["verdict"], "stale", "{r}");
        assert!(r["note"].as_str().unwrap().contains("own_index"), "{r}");
    }
}

/// Per task, the document ids of a TREC run file in rank order (its rank column).
fn trec(path: &Path) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut m: std::collections::BTreeMap<String, Vec<(usize, String)>> = Default::default();
    for l in std::fs::read_to_string(path).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        m.entry(f[0].to_string())
            .or_default()
            .push((f[3].parse().unwrap(), f[2].to_string()));
    }
    m.into_iter()
        .map(|(q, mut v)| {
            v.sort();
            (q, v.into_iter().map(|(_, d)| d).collect())
        })
        .collect()
}

#[test]
fn new_judgments_alone_pass_and_a_ranking_change_still_fails_naming_the_tasks() {
    let dir = fixture_copy("gate");
    let cache = dir.path().join("cache");
    let o = ranklab(
        dir.path(),
        &cache,
        &["gate", "--update", "--also", "fx/current"],
    );
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let kept = trec(&dir.path().join("reports/baseline.runs/fx/current.trec"));
    // A person's grade for a document current ranks first for F4 but was not judged: the
    // ranking does not move, MRR rises on F4.
    let f4 = &kept["F4"];
    let first = f4[0].clone();
    assert_ne!(first, "oncall-policy", "{f4:?}");
    let suite = dir.path().join("tasks/fx/suite.yaml");
    let text = std::fs::read_to_string(&suite).unwrap().replace(
        "    expected: oncall-policy",
        &format!("    expected: [oncall-policy, {first}]"),
    );
    std::fs::write(&suite, text).unwrap();
    // The oracle: MRR of the kept rankings under the edited judgments, computed here.
    let expected: std::collections::BTreeMap<&str, Vec<&str>> = [
        ("F1", vec!["howto-deploy-platform"]),
        ("F2", vec!["adr-cache-valkey"]),
        ("F3", vec!["runbook-backup"]),
        ("F4", vec!["oncall-policy", first.as_str()]),
        (
            "F5",
            vec!["note-release-1", "note-release-2", "note-release-3"],
        ),
    ]
    .into();
    let mrr = expected
        .iter()
        .map(|(t, rel)| {
            kept[*t]
                .iter()
                .position(|d| rel.contains(&d.as_str()))
                .map_or(0.0, |p| 1.0 / (p + 1) as f64)
        })
        .sum::<f64>()
        / 5.0;
    let (rc, v) = gate_json(dir.path(), &cache, &[]);
    assert_eq!(rc, 0, "{v:#}");
    let row = rows(&v, "current")
        .into_iter()
        .find(|r| r["metric"] == "MRR")
        .unwrap()
        .clone();
    let rescored = row["baseline_rescored"].as_f64().unwrap();
    assert!(
        (rescored - (mrr * 1e4).round() / 1e4).abs() < 1e-9,
        "{rescored} vs {mrr}"
    );
    assert!(rescored > row["baseline"].as_f64().unwrap(), "{row}");
    assert_eq!(row["now"], row["baseline_rescored"], "{row}");

    // Now the rankings change too: every penalty zero.
    let practice = dir.path().join("tasks/fx/search-practice.yaml");
    let text = std::fs::read_to_string(&practice).unwrap();
    let zeroed: String = text
        .lines()
        .map(|l| match l.split_once(':') {
            Some((k, _)) if l.starts_with("  ") => format!("{k}: 0.0\n"),
            _ => format!("{l}\n"),
        })
        .collect();
    std::fs::write(&practice, zeroed).unwrap();
    let (rc, v) = gate_json(dir.path(), &cache, &[]);
    assert_eq!(rc, 1, "{v:#}");
    let row = rows(&v, "current")
        .into_iter()
        .find(|r| r["metric"] == "MRR")
        .unwrap()
        .clone();
    assert_eq!(row["fails"], true, "{row}");
    // The oracle for what moved: `ranklab run`'s own run file of the zeroed configuration.
    let o = ranklab(dir.path(), &cache, &["run", "tasks/fx"]);
    assert!(matches!(code(&o), 0 | 1), "{}", stderr(&o));
    let now = trec(&dir.path().join("reports/fx/runs/current.trec"));
    let first_rel = |lists: &std::collections::BTreeMap<String, Vec<String>>, t: &str| {
        lists[t]
            .iter()
            .position(|d| expected[t].contains(&d.as_str()))
            .map(|p| p + 1)
    };
    let moved_here: Vec<&str> = expected
        .keys()
        .copied()
        .filter(|t| first_rel(&kept, t) != first_rel(&now, t))
        .collect();
    assert!(!moved_here.is_empty());
    let named: Vec<&str> = row["moved"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["task"].as_str().unwrap())
        .collect();
    let mut sorted = named.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, moved_here, "{row}");
    let mut last = f64::NEG_INFINITY;
    for m in row["moved"].as_array().unwrap() {
        let t = m["task"].as_str().unwrap();
        assert_eq!(m["before"].as_u64(), first_rel(&kept, t).map(|r| r as u64));
        assert_eq!(m["after"].as_u64(), first_rel(&now, t).map(|r| r as u64));
        // Worst first; the task's delta is its reciprocal rank now minus before.
        let d = m["delta"].as_f64().unwrap();
        let rr = |r: Option<usize>| r.map_or(0.0, |r| 1.0 / r as f64);
        assert!(
            (d - (rr(first_rel(&now, t)) - rr(first_rel(&kept, t)))).abs() < 1e-9,
            "{m}"
        );
        assert!(d >= last, "{row}");
        last = d;
    }
}
