//! Two real engines ranklab does not contain, started here on loopback and stopped here:
//! MiniSearch (npm, Node.js) and PostgreSQL full-text search (Debian's server, initdb in a
//! temporary directory), each served by its adapter in `examples/engines/<name>/` over the
//! command protocol, replaying the docir suite.
//!
//! The oracle is the engine itself: for several tasks the test asks it directly — a Node
//! one-liner calling MiniSearch, SQL through `psql` — and checks that ranklab's run file lists
//! exactly those ids in that order. Needs `npm ci` in both example folders and the postgresql
//! package (`.ci/run` and `just engines` install them); a missing piece fails with what to run.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn examples(name: &str) -> PathBuf {
    let dir = root().join("examples/engines").join(name);
    assert!(
        dir.join("node_modules").is_dir(),
        "{}: run `npm ci` there first (`just engines` does; .ci/run too)",
        dir.display()
    );
    dir
}

/// Tasks asked directly (ids and queries from tasks/docir/suite.yaml).
fn sample_tasks() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(root().join("tasks/docir/suite.yaml")).unwrap();
    let mut out = Vec::new();
    let mut id = None;
    for line in text.lines() {
        let l = line.trim_start().trim_start_matches("- ");
        if let Some(v) = l.strip_prefix("id: ") {
            id = Some(v.trim().to_string());
        } else if let (Some(v), Some(i)) = (l.strip_prefix("query: "), id.take()) {
            out.push((i, v.trim().to_string()));
        }
    }
    // Every seventh task: T01, T08, T15, ... (queries of different shapes).
    out.into_iter().step_by(7).collect()
}

fn run_ids(run: &str, task: &str) -> Vec<String> {
    run.lines()
        .filter(|l| l.split_whitespace().next() == Some(task))
        .map(|l| l.split_whitespace().nth(2).unwrap().to_string())
        .collect()
}

/// A suite directory in `dir`: docir's tasks, its corpus by absolute path, and `experiments`.
fn suite_dir(dir: &Path, experiments: &str) -> PathBuf {
    let tasks = dir.join("tasks/docir");
    std::fs::create_dir_all(&tasks).unwrap();
    let suite = std::fs::read_to_string(root().join("tasks/docir/suite.yaml")).unwrap();
    let corpus = std::path::absolute(root().join("corpora/docir")).unwrap();
    let suite = suite.replacen(
        "corpus: ../../corpora/docir",
        &format!("corpus: {}", corpus.display()),
        1,
    );
    assert!(suite.contains(&corpus.display().to_string()));
    std::fs::write(tasks.join("suite.yaml"), suite).unwrap();
    std::fs::write(tasks.join("experiments.yaml"), experiments).unwrap();
    tasks
}

fn ranklab(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(args)
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .envs(env.iter().copied())
        .output()
        .expect("run ranklab");
    assert!(
        out.status.success(),
        "ranklab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn minisearch_run_file_lists_what_minisearch_returns() {
    let engine = examples("minisearch");
    let tmp = tempfile::tempdir().unwrap();
    let corpus = std::path::absolute(root().join("corpora/docir")).unwrap();
    let experiments = format!(
        "experiment: e\nconfigurations:\n  - name: minisearch\n    engine: {{ command: [node, serve.js, {}], cwd: {}, version: true }}\n",
        corpus.display(),
        std::path::absolute(&engine).unwrap().display()
    );
    suite_dir(tmp.path(), &experiments);
    ranklab(
        tmp.path(),
        &["run", "tasks/docir", "--reports", "reports"],
        &[],
    );
    let run =
        std::fs::read_to_string(tmp.path().join("reports/docir/runs/minisearch.trec")).unwrap();
    for (task, query) in sample_tasks() {
        let direct = minisearch_directly(&engine, &corpus, &query);
        assert!(!direct.is_empty(), "MiniSearch finds something for {task}");
        assert_eq!(run_ids(&run, &task), direct, "{task}: {query}");
    }
}

/// A PostgreSQL started by examples/engines/postgres/start.sh, stopped on drop.
struct Postgres {
    data: tempfile::TempDir,
    port: String,
}

impl Postgres {
    fn start(engine: &Path) -> Postgres {
        let data = tempfile::tempdir().unwrap();
        let out = Command::new(engine.join("start.sh"))
            .arg(data.path())
            .arg(root().join("corpora/docir"))
            .output()
            .expect("run start.sh");
        assert!(
            out.status.success(),
            "start.sh (needs Debian's postgresql: apt-get install -y postgresql): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let port = String::from_utf8(out.stdout).unwrap().trim().to_string();
        Postgres { data, port }
    }

    fn psql(&self, sql: &str) -> Vec<String> {
        let out = Command::new("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port,
                "-U",
                "ranklab",
                "-d",
                "postgres",
            ])
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("run psql");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let engine = root().join("examples/engines/postgres");
        let _ = Command::new(engine.join("stop.sh"))
            .arg(self.data.path())
            .status();
    }
}

#[test]
fn postgres_run_file_lists_what_postgres_returns() {
    let engine = examples("postgres");
    let pg = Postgres::start(&engine);
    let tmp = tempfile::tempdir().unwrap();
    let experiments = format!(
        "experiment: e\nconfigurations:\n  - name: postgres\n    engine:\n      command: [node, serve.js, --match, any]\n      cwd: {}\n      env: {{ PGHOST: 127.0.0.1, PGPORT: \"${{RANKLAB_PG_PORT}}\", PGUSER: ranklab, PGDATABASE: postgres }}\n      version: true\n",
        std::path::absolute(&engine).unwrap().display()
    );
    suite_dir(tmp.path(), &experiments);
    ranklab(
        tmp.path(),
        &["run", "tasks/docir", "--reports", "reports"],
        &[("RANKLAB_PG_PORT", &pg.port)],
    );
    let run = std::fs::read_to_string(tmp.path().join("reports/docir/runs/postgres.trec")).unwrap();
    let report = std::fs::read_to_string(tmp.path().join("reports/docir/e.md")).unwrap();
    assert!(report.contains("(version PostgreSQL "), "{report}");
    assert_eq!(pg.psql("SELECT count(*) FROM docs"), ["35"]);
    for (task, query) in sample_tasks() {
        let q = query.replace('\'', "''");
        let direct = pg.psql(&format!(
            "SELECT id FROM docs, to_tsquery('simple', replace(websearch_to_tsquery('english', '{q}')::text, ' & ', ' | ')) AS q \
             WHERE tsv @@ q ORDER BY ts_rank_cd(tsv, q) DESC, id DESC LIMIT 100"
        ));
        assert!(!direct.is_empty(), "PostgreSQL finds something for {task}");
        assert_eq!(run_ids(&run, &task), direct, "{task}: {query}");
    }
}

/// MiniSearch asked directly (a Node one-liner), sorted as docs/engines.md says (score
/// descending, then id descending).
fn minisearch_directly(engine: &Path, corpus: &Path, query: &str) -> Vec<String> {
    minisearch_directly_with(engine, corpus, query, "{}")
}

/// MiniSearch asked directly with MiniSearch search `options` (JSON).
fn minisearch_directly_with(
    engine: &Path,
    corpus: &Path,
    query: &str,
    options: &str,
) -> Vec<String> {
    let js = "const m = require('./index.js'); const ix = m.build(process.argv[1]); \
              const r = m.search(ix, process.argv[2], 100, JSON.parse(process.argv[3])); \
              r.sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)); \
              console.log(r.map((h) => h.id).join('\\n'));";
    let out = Command::new("node")
        .args(["-e", js])
        .arg(corpus)
        .arg(query)
        .arg(options)
        .current_dir(engine)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// MiniSearch behind HTTP (examples/engines/minisearch/http.js), stopped on drop.
struct HttpEngine(std::process::Child, String);

impl Drop for HttpEngine {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn minisearch_over_http_run_file_lists_what_minisearch_returns() {
    use std::io::BufRead;
    let engine = examples("minisearch");
    let corpus = std::path::absolute(root().join("corpora/docir")).unwrap();
    let mut child = Command::new("node")
        .arg("http.js")
        .arg(&corpus)
        .arg("0")
        .current_dir(&engine)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let server = HttpEngine(child, port.trim().to_string());
    let tmp = tempfile::tempdir().unwrap();
    let experiments = format!(
        r#"experiment: e
configurations:
  - name: ms-http
    engine:
      http: {{ url: "http://127.0.0.1:{}/search", body: '{{"q": "{{{{query}}}}", "limit": {{{{k}}}}}}', hits: /results, id: /id, score: /score, concurrency: 3 }}
"#,
        server.1
    );
    suite_dir(tmp.path(), &experiments);
    ranklab(
        tmp.path(),
        &["run", "tasks/docir", "--reports", "reports", "--record"],
        &[],
    );
    let run = std::fs::read_to_string(tmp.path().join("reports/docir/runs/ms-http.trec")).unwrap();
    for (task, query) in sample_tasks() {
        let direct = minisearch_directly(&engine, &corpus, &query);
        assert!(!direct.is_empty(), "MiniSearch finds something for {task}");
        assert_eq!(run_ids(&run, &task), direct, "{task}: {query}");
    }
    // A live run beside the recording reads the recorded HTTP responses through the same
    // pointers: MiniSearch answers the same, so no task changed rank (reading a recorded HTTP
    // response as a command-protocol response called every task changed).
    let out = ranklab(
        tmp.path(),
        &["run", "tasks/docir", "--reports", "reports"],
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ms-http: every task ranks as in the recording"),
        "{stderr}"
    );
}

/// Issue 14, item 5: the old and the new engine side by side. MiniSearch at two settings stands
/// for an engine at its last release (`minisearch-old`: no boost) and at HEAD (`minisearch-new`:
/// `--boost-title 3`); a `paired.yaml` names them as its `legacy` and `current` halves, and
/// `check`, `run`, `compare` and `gate` work between them.
///
/// Oracle: each assertion's outcome under each half is recomputed here from MiniSearch asked
/// directly (with and without `boost: { title: 3 }`), and the expectations written in the file
/// were read from the same direct calls; the test also flips one expectation and checks that
/// `check` and `gate` then fail (both halves of the pair can fail).
#[test]
fn paired_assertions_compare_and_gate_work_between_two_external_configurations() {
    let engine = examples("minisearch");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let corpus = std::path::absolute(root().join("corpora/docir")).unwrap();
    let cwd = std::path::absolute(&engine).unwrap();
    let experiments = format!(
        "experiment: release\nbaseline: minisearch-old\nconfigurations:\n  - name: minisearch-old\n    engine: {{ command: [node, serve.js, {c}], cwd: {w} }}\n  - name: minisearch-new\n    engine: {{ command: [node, serve.js, {c}, --boost-title, \"3\"], cwd: {w} }}\n",
        c = corpus.display(),
        w = cwd.display()
    );
    let tasks = suite_dir(dir, &experiments);
    // (id, query, above, below, legacy, current), from MiniSearch asked directly.
    let assertions = [
        (
            "slow-checkout",
            "figure out where the time goes when a merchant complains that checkout is slow",
            "pay-observability",
            "pay-fees-pricing",
            "inverted",
            "holds",
        ),
        (
            "double-charging",
            "stop double charging when the client retries a capture",
            "pay-idempotency-v2",
            "pay-retries-backoff",
            "inverted",
            "holds",
        ),
        (
            "marketplace",
            "let a marketplace take payments for the sellers it signs up without holding their credentials",
            "pay-oauth-platforms",
            "pay-3ds-stepup",
            "holds",
            "inverted",
        ),
    ];
    let paired = |flip: bool| {
        let mut y = String::from(
            "suite: suite.yaml\nlegacy: minisearch-old\ncurrent: minisearch-new\nassertions:\n",
        );
        for (i, (id, q, above, below, legacy, current)) in assertions.iter().enumerate() {
            let current = match (flip && i == 2, *current) {
                (true, "holds") => "inverted",
                (true, _) => "holds",
                (false, c) => c,
            };
            y.push_str(&format!(
                "  - id: {id}\n    query: {q}\n    above: {above}\n    below: {below}\n    legacy: {legacy}\n    current: {current}\n"
            ));
        }
        std::fs::write(tasks.join("paired.yaml"), y).unwrap();
    };
    paired(false);

    // The oracle: ranks of `above` and `below` in MiniSearch's own answers at both settings.
    let mut rows = Vec::new();
    for (id, q, above, below, legacy, current) in assertions {
        for (half, config, options, expected) in [
            ("legacy", "minisearch-old", "{}", legacy),
            (
                "current",
                "minisearch-new",
                r#"{"boost": {"title": 3}}"#,
                current,
            ),
        ] {
            let ids = minisearch_directly_with(&engine, &corpus, q, options);
            let rank = |d: &str| ids.iter().position(|x| x == d).map(|p| p + 1);
            let (a, b) = (rank(above), rank(below));
            let actual = match (a, b) {
                (Some(x), Some(y)) if x < y => "holds",
                (Some(_), None) => "holds",
                _ => "inverted",
            };
            assert_eq!(
                actual, expected,
                "{id} under {config}: MiniSearch answers {ids:?}"
            );
            let r = |x: Option<usize>| x.map_or("-".to_string(), |v| v.to_string());
            rows.push(format!(
                "| {id} | {half} (`{config}`) | {} | {} | {expected} | {actual} | pass |",
                r(a),
                r(b)
            ));
        }
    }
    let out = ranklab(dir, &["check", "tasks/docir"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for row in &rows {
        assert!(stdout.contains(row.as_str()), "{row}\n{stdout}");
    }

    // Flipping one expectation fails `check` (exit 1).
    paired(true);
    let out = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["check", "tasks/docir"])
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("| marketplace | current (`minisearch-new`) |") && stdout.contains("FAIL"),
        "{stdout}"
    );
    paired(false);

    // Both replayed on the suite's tasks; their run files are what MiniSearch answers, and
    // `compare` pairs them.
    ranklab(
        dir,
        &["run", "tasks/docir", "--reports", "reports", "--record"],
        &[],
    );
    for (config, options) in [
        ("minisearch-old", "{}"),
        ("minisearch-new", r#"{"boost": {"title": 3}}"#),
    ] {
        let run =
            std::fs::read_to_string(dir.join(format!("reports/docir/runs/{config}.trec"))).unwrap();
        for (task, query) in sample_tasks() {
            let direct = minisearch_directly_with(&engine, &corpus, &query, options);
            assert_eq!(run_ids(&run, &task), direct, "{config} {task}: {query}");
        }
    }
    let out = ranklab(
        dir,
        &[
            "compare",
            "--qrels",
            "reports/docir/qrels.txt",
            "reports/docir/runs/minisearch-old.trec",
            "reports/docir/runs/minisearch-new.trec",
        ],
        &[],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("minisearch-old") && stdout.contains("minisearch-new"),
        "{stdout}"
    );

    // The gate: both configurations' rows from the recordings and the paired file (asked live:
    // its queries are not the suite's tasks, so they are not in the recordings).
    let gate = |extra: &[&str]| {
        let mut args = vec![
            "gate",
            "--tasks",
            "tasks",
            "--baseline",
            "baseline.json",
            "--from-recording",
        ];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_ranklab"))
            .args(&args)
            .current_dir(dir)
            .env("RANKLAB_CACHE", dir.join("cache"))
            .output()
            .unwrap()
    };
    let out = gate(&["--update", "--also", "docir/minisearch-new"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let baseline = std::fs::read_to_string(dir.join("baseline.json")).unwrap();
    assert!(
        baseline.contains("minisearch-old") && baseline.contains("minisearch-new"),
        "{baseline}"
    );
    let out = gate(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "| slow-checkout | current (`minisearch-new`) | 1 | 2 | holds | holds | pass |"
        ),
        "{stdout}"
    );
    paired(true);
    let out = gate(&[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed paired assertion between the two engines fails the gate: {}",
        String::from_utf8_lossy(&out.stdout)
    );
}
