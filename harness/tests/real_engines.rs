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
    let js = "const m = require('./index.js'); const ix = m.build(process.argv[1]); \
              const r = m.search(ix, process.argv[2], 100); \
              r.sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)); \
              console.log(r.map((h) => h.id).join('\\n'));";
    let out = Command::new("node")
        .args(["-e", js])
        .arg(corpus)
        .arg(query)
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
