//! The ADR-ready report and the output for a person and a pipe (issue 15, items 3 and 5), on
//! temporary copies of the committed suites with BM25-only experiments (no model needed):
//! - per configuration, win/tie/loss on recall@5 and MRR, the document ranked first when the
//!   expected one was not, and the ranks as JSON numbers, all checked against values the test
//!   computes itself from the written run files (`runs/*.trec`) and judgments (`qrels.txt`);
//! - the configurations' parameters against the experiments file, the documented defaults
//!   (k1 0.9, b 0.4, depth 100, RRF k 60) and the practice file's weights as the test reads them;
//! - the paired-assertion section against `ranklab check` on the same file;
//! - the decision names the tasks lost on recall@5 with their ranks from the run files;
//! - `ranklab bench` prints a summary of under 40 lines (with as many configurations as the
//!   committed experiments: 6, 5 and 3), `--print` adds the whole report;
//! - with stderr piped, progress lines appear every `RANKLAB_PROGRESS_SECS` seconds (0 here: on
//!   every update) and none when the interval is longer than the run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;
use common::{code, stderr, stdout};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `tasks/<suite>` with its experiments, practice and paired files.
fn copy_suite(tasks: &Path, name: &str, experiments: &[(&str, &str)]) {
    common::copy_suite(
        tasks,
        name,
        experiments,
        &["search-practice.yaml", "paired.yaml"],
    );
}

fn ranklab(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ranklab"));
    cmd.args(args)
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .env_remove("RANKLAB_PROGRESS_SECS");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run ranklab")
}

const DOCIR: &str = "experiment: params
baseline: anserini
configurations:
  - name: anserini
    retriever: bm25
  - name: robertson
    retriever: bm25
    bm25: { k1: 1.2, b: 0.75 }
  - name: flat
    retriever: bm25
    bm25: { k1: 2.0, b: 0.0 }
    depth: 50
";

const BRAIN: &str = "experiment: wiring
baseline: legacy
configurations:
  - name: fusion
    retriever: bm25
  - name: legacy
    retriever: bm25
    wiring: legacy
  - name: current
    retriever: bm25
    wiring: current
";

/// Per task, the ranked document ids of a TREC run file (rank order as written).
fn read_run(path: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    for l in std::fs::read_to_string(path).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        out.entry(f[0].to_string())
            .or_default()
            .push((f[3].parse().unwrap(), f[2].to_string()));
    }
    out.into_iter()
        .map(|(t, mut v)| {
            v.sort();
            (t, v.into_iter().map(|x| x.1).collect())
        })
        .collect()
}

/// Per task, the relevant documents of a qrels file.
fn read_qrels(path: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for l in std::fs::read_to_string(path).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f[3].parse::<i32>().unwrap() >= 1 {
            out.entry(f[0].to_string())
                .or_default()
                .push(f[2].to_string());
        }
    }
    out
}

fn first_rank(ranked: &[String], relevant: &[String]) -> Option<usize> {
    ranked
        .iter()
        .position(|d| relevant.contains(d))
        .map(|p| p + 1)
}

fn recall_at(ranked: &[String], relevant: &[String], k: usize) -> f64 {
    let hit = relevant
        .iter()
        .filter(|d| ranked.iter().take(k).any(|x| x == *d))
        .count();
    hit as f64 / relevant.len() as f64
}

/// (wins, ties, losses) of `other` against `base` on per-task values.
fn wtl(base: &[f64], other: &[f64]) -> (u64, u64, u64) {
    let mut w = (0, 0, 0);
    for (b, o) in base.iter().zip(other) {
        if o > b {
            w.0 += 1;
        } else if o < b {
            w.2 += 1;
        } else {
            w.1 += 1;
        }
    }
    w
}

/// The configurations of the docir experiment `params` ([`DOCIR`]).
const CONFIGS: [&str; 3] = ["anserini", "robertson", "flat"];

/// What `ranklab run` wrote for the docir experiment `params`, read back: the JSON and Markdown
/// reports, and the qrels and run files the test computes its oracle from.
struct Written {
    json: serde_json::Value,
    md: String,
    qrels: BTreeMap<String, Vec<String>>,
    runs: BTreeMap<&'static str, BTreeMap<String, Vec<String>>>,
    tasks: Vec<String>,
}

impl Written {
    /// The rank of the first relevant document of `t` in `c`'s run file (None: not retrieved).
    fn rank(&self, c: &str, t: &str) -> Option<usize> {
        first_rank(self.runs[c].get(t).map_or(&[][..], |v| v), &self.qrels[t])
    }
}

/// Runs the docir experiment `params` on a temporary copy and reads back what it wrote.
fn run_docir() -> Written {
    let tmp = tempfile::tempdir().unwrap();
    copy_suite(
        &tmp.path().join("tasks"),
        "docir",
        &[("experiments.yaml", DOCIR)],
    );
    let out = ranklab(
        tmp.path(),
        &["run", "tasks/docir", "--reports", "reports"],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dir = tmp.path().join("reports/docir");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("params.json")).unwrap()).unwrap();
    let md = std::fs::read_to_string(dir.join("params.md")).unwrap();
    let qrels = read_qrels(&dir.join("qrels.txt"));
    let runs: BTreeMap<&str, BTreeMap<String, Vec<String>>> = CONFIGS
        .iter()
        .map(|c| (*c, read_run(&dir.join("runs").join(format!("{c}.trec")))))
        .collect();
    let tasks: Vec<String> = qrels.keys().cloned().collect();

    Written {
        json,
        md,
        qrels,
        runs,
        tasks,
    }
}

/// Per-task rows: ranks are numbers (null when not retrieved), `<c> first` is the run's
/// first document exactly when the expected one is not first.
fn check_first_documents(w: &Written) {
    let Written {
        json,
        md,
        runs,
        tasks,
        ..
    } = w;
    let rank = |c: &str, t: &str| w.rank(c, t);
    let configs = CONFIGS;
    let rows = json["tasks"].as_array().unwrap();
    assert_eq!(rows.len(), tasks.len());
    let mut some_first = 0;
    for row in rows {
        let t = row["task"].as_str().unwrap();
        for c in configs {
            let want = rank(c, t);
            assert_eq!(row[c].as_u64().map(|x| x as usize), want, "{t} {c}");
            assert!(
                row[c].is_number() || row[c].is_null(),
                "{t} {c}: {}",
                row[c]
            );
            let first = &row[format!("{c} first")];
            match want {
                Some(1) => assert!(first.is_null(), "{t} {c}: {first}"),
                _ => {
                    some_first += 1;
                    assert_eq!(
                        first.as_str(),
                        runs[c][t].first().map(String::as_str),
                        "{t} {c}"
                    );
                    // The Markdown cell says the same.
                    let cell = format!(
                        "{} ({})",
                        want.map_or("-".to_string(), |r| r.to_string()),
                        runs[c][t][0]
                    );
                    let line = md
                        .lines()
                        .find(|l| l.starts_with(&format!("| {t} |")))
                        .unwrap();
                    assert!(line.contains(&cell), "{line} lacks {cell}");
                }
            }
        }
    }
    assert!(
        some_first > 0,
        "no task where the expected document was not first"
    );
}

/// Win/tie/loss on recall@5 and MRR, and the decision's lost tasks, from the run files.
fn check_win_tie_loss_and_decision(w: &Written) {
    let Written {
        json,
        md,
        qrels,
        runs,
        tasks,
    } = w;
    let rank = |c: &str, t: &str| w.rank(c, t);
    for c in ["robertson", "flat"] {
        let values = |cfg: &str, f: &dyn Fn(&[String], &[String]) -> f64| -> Vec<f64> {
            tasks
                .iter()
                .map(|t| f(runs[cfg].get(t).map_or(&[][..], |v| v), &qrels[t]))
                .collect()
        };
        let rr = |r: &[String], q: &[String]| first_rank(r, q).map_or(0.0, |x| 1.0 / x as f64);
        let rec = |r: &[String], q: &[String]| recall_at(r, q, 5);
        for (measure, f) in [
            ("MRR", &rr as &dyn Fn(&[String], &[String]) -> f64),
            ("recall@5", &rec),
        ] {
            let (w, t, l) = wtl(&values("anserini", f), &values(c, f));
            let got = &json["win_tie_loss"][c][measure];
            assert_eq!(
                (
                    got["wins"].as_u64(),
                    got["ties"].as_u64(),
                    got["losses"].as_u64()
                ),
                (Some(w), Some(t), Some(l)),
                "{c} {measure}"
            );
            let line = md
                .lines()
                .find(|x| x.starts_with(&format!("| {c} |")))
                .unwrap();
            assert!(line.contains(&format!("| {w}/{t}/{l} |")), "{line}");
        }
        // The decision lists the first lost tasks on recall@5 with their ranks.
        let decision = json["decision"].as_str().unwrap();
        let lost: Vec<&String> = tasks
            .iter()
            .filter(|t| {
                recall_at(runs[c].get(*t).map_or(&[][..], |v| v), &qrels[*t], 5)
                    < recall_at(&runs["anserini"][*t], &qrels[*t], 5)
            })
            .collect();
        let show = |r: Option<usize>| r.map_or("-".to_string(), |x| x.to_string());
        for t in lost.iter().take(3) {
            let want = format!("{t}: {} -> {}", show(rank("anserini", t)), show(rank(c, t)));
            assert!(decision.contains(&want), "{decision} lacks {want}");
        }
        if lost.is_empty() {
            assert!(decision.contains(&format!("`{c}` wins")), "{decision}");
        }
    }
    assert!(md.contains(&format!(
        "**Decision:** {}",
        json["decision"].as_str().unwrap()
    )));
}

/// Parameters: the experiments file plus the documented defaults; the p columns say which is
/// which.
fn check_parameters(w: &Written) {
    let Written { json, md, .. } = w;
    let params = json["configurations"].as_array().unwrap();
    let by: BTreeMap<&str, &serde_json::Value> = params
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p))
        .collect();
    let k1b = |c: &str| (by[c]["bm25"]["k1"].as_f64(), by[c]["bm25"]["b"].as_f64());
    assert_eq!(k1b("anserini"), (Some(0.9), Some(0.4)));
    assert_eq!(k1b("robertson"), (Some(1.2), Some(0.75)));
    assert_eq!(k1b("flat"), (Some(2.0), Some(0.0)));
    assert_eq!(by["anserini"]["depth"].as_u64(), Some(100));
    assert_eq!(by["flat"]["depth"].as_u64(), Some(50));
    assert_eq!(by["flat"]["retriever"], "bm25");
    assert!(by["flat"].get("rrf_k").is_none() && by["flat"].get("practice").is_none());
    assert!(
        md.contains("| flat | bm25 | — | 2 / 0 (english) | — | 50 | — | — | none | — |"),
        "{md}"
    );

    // p columns say which is which.
    assert!(
        md.contains("| p (raw) recall@5 | p (Holm) recall@5 |"),
        "{md}"
    );
}

#[test]
fn the_report_carries_win_tie_loss_first_documents_parameters_and_numbers() {
    let w = run_docir();
    check_first_documents(&w);
    check_win_tie_loss_and_decision(&w);
    check_parameters(&w);
}

#[test]
fn wiring_parameters_and_paired_assertions_are_in_the_report() {
    let tmp = tempfile::tempdir().unwrap();
    copy_suite(
        &tmp.path().join("tasks"),
        "brain",
        &[("experiments.yaml", BRAIN)],
    );
    let out = ranklab(
        tmp.path(),
        &["run", "tasks/brain", "--reports", "reports"],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let dir = tmp.path().join("reports/brain");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("wiring.json")).unwrap()).unwrap();
    let md = std::fs::read_to_string(dir.join("wiring.md")).unwrap();

    // The weights: the practice file's `weights:` block as the test reads its lines.
    let practice =
        std::fs::read_to_string(root().join("tasks/brain/search-practice.yaml")).unwrap();
    let weight = |name: &str| -> f64 {
        let l = practice
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{name}:")))
            .unwrap();
        l.split(':').nth(1).unwrap().trim().parse().unwrap()
    };
    let configs = json["configurations"].as_array().unwrap();
    for c in configs {
        let name = c["name"].as_str().unwrap();
        if name == "fusion" {
            assert_eq!(c["wiring"], "none");
            assert!(c.get("practice").is_none(), "{c}");
            continue;
        }
        assert_eq!(c["wiring"], name);
        let w = &c["practice"]["weights"];
        for k in ["superseded", "deprecated", "amendment", "editorial_only"] {
            assert_eq!(w[k].as_f64(), Some(weight(k)), "{name} {k}");
        }
        assert_eq!(c["practice"]["file"], "tasks/brain/search-practice.yaml");
    }

    // The paired section agrees with `ranklab check` on the same file, line by line.
    let check = ranklab(tmp.path(), &["check", "tasks/brain/paired.yaml"], &[]);
    let check_out = stdout(&check);
    let verdict_lines: Vec<&str> = check_out
        .lines()
        .filter(|l| l.ends_with("| pass |") || l.ends_with("| FAIL |"))
        .collect();
    assert!(!verdict_lines.is_empty(), "{check_out}");
    assert!(md.contains("## Paired assertions"), "{md}");
    for l in &verdict_lines {
        assert!(md.contains(l), "the report lacks `{l}`");
    }
    let rows = json["paired_assertions"].as_array().unwrap();
    assert_eq!(rows.len(), verdict_lines.len());
    for r in rows {
        let line = format!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            r["assertion"].as_str().unwrap(),
            r["wiring"].as_str().unwrap(),
            r["above_rank"]
                .as_u64()
                .map_or("-".to_string(), |x| x.to_string()),
            r["below_rank"]
                .as_u64()
                .map_or("-".to_string(), |x| x.to_string()),
            r["expected"].as_str().unwrap(),
            r["actual"].as_str().unwrap(),
            if r["pass"].as_bool().unwrap() {
                "pass"
            } else {
                "FAIL"
            }
        );
        assert!(verdict_lines.contains(&line.as_str()), "{line}");
    }
}

/// Configurations named `c1..cN`, BM25 with distinct k1.
fn bm25_experiment(name: &str, n: usize) -> String {
    let mut s = format!("experiment: {name}\nconfigurations:\n");
    for i in 0..n {
        s.push_str(&format!(
            "  - name: c{i}\n    retriever: bm25\n    bm25: {{ k1: {}, b: 0.4 }}\n",
            0.5 + 0.3 * i as f64
        ));
    }
    s
}

#[test]
fn bench_prints_a_summary_under_40_lines_and_print_adds_the_reports() {
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    // As many configurations as the committed experiments (retrieval 6, engines 5, wiring 3).
    copy_suite(
        &tasks,
        "docir",
        &[
            ("experiments.yaml", &bm25_experiment("retrieval", 6)),
            ("experiments-engines.yaml", &bm25_experiment("engines", 5)),
        ],
    );
    copy_suite(&tasks, "brain", &[("experiments.yaml", BRAIN)]);
    let out = ranklab(
        tmp.path(),
        &["bench", "--tasks", "tasks", "--reports", "reports"],
        &[],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() < 40, "{} lines:\n{text}", lines.len());
    assert!(
        !lines.iter().any(|l| l.starts_with('|')),
        "bench's summary prints no table:\n{text}"
    );
    for (suite, stem, runs) in [
        ("docir", "retrieval", 6),
        ("docir", "engines", 5),
        ("brain", "wiring", 3),
    ] {
        let wrote = lines
            .iter()
            .find(|l| l.starts_with(&format!("wrote reports/{suite}/{stem}.md (+ ")))
            .unwrap_or_else(|| panic!("no wrote line for {stem}:\n{text}"));
        assert!(wrote.contains(&format!("{runs} runs")), "{wrote}");
        assert!(tmp
            .path()
            .join(format!("reports/{suite}/{stem}.md"))
            .is_file());
        // The title, then the decision: bench leaves the headline table to the report.
        assert!(
            text.contains(&format!("{suite} — {stem}\nDecision: ")),
            "{text}"
        );
    }
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.starts_with("Decision: Recommend"))
            .count(),
        3
    );
    assert!(
        !text.contains("## Rank of the first expected document"),
        "{text}"
    );

    let full = ranklab(
        tmp.path(),
        &[
            "bench",
            "--tasks",
            "tasks",
            "--reports",
            "reports",
            "--print",
        ],
        &[],
    );
    assert_eq!(code(&full), 0, "{}", stderr(&full));
    let full = stdout(&full);
    assert_eq!(
        full.matches("## Rank of the first expected document")
            .count(),
        3
    );
    let md = std::fs::read_to_string(tmp.path().join("reports/brain/wiring.md")).unwrap();
    assert!(
        full.contains(&md),
        "--print does not print the written report"
    );
}

#[test]
fn piped_progress_prints_lines_with_count_rate_and_eta_at_the_interval() {
    let tmp = tempfile::tempdir().unwrap();
    copy_suite(
        &tmp.path().join("tasks"),
        "docir",
        &[("experiments.yaml", DOCIR)],
    );
    let args = ["run", "tasks/docir", "--reports", "reports"];
    // Interval 0: a line on every update of the first stage (35 tasks), then a last line.
    let out = ranklab(tmp.path(), &args, &[("RANKLAB_PROGRESS_SECS", "0")]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("first stage: "))
        .collect();
    assert!(lines.len() >= 35, "{err}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("first stage: 35/35 done in ")),
        "{err}"
    );
    let mid = lines
        .iter()
        .find(|l| l.starts_with("first stage: 7/35 (20%), "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(mid.contains("/s, ETA "), "{mid}");
    assert!(
        !err.contains('\r') && !err.contains("\x1b["),
        "terminal codes in a pipe: {err:?}"
    );
    // An interval longer than the run: no progress line at all.
    let quiet = ranklab(tmp.path(), &args, &[("RANKLAB_PROGRESS_SECS", "3600")]);
    assert_eq!(code(&quiet), 0, "{}", stderr(&quiet));
    assert!(
        !stderr(&quiet).contains("first stage: "),
        "{}",
        stderr(&quiet)
    );
}
