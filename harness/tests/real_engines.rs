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

/// A suite file's text without its `ships:` line.
fn without_ships(suite: &str) -> String {
    suite
        .lines()
        .filter(|l| !l.starts_with("ships:"))
        .map(|l| format!("{l}\n"))
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
    // Only `experiments` is copied, so `ships:` (docir's fusion) would name a configuration the
    // copy lacks: left out, the gate gates the experiments file's baseline configuration.
    let suite = without_ships(&suite);
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

/// A paired assertion judged on MiniSearch's own answer to `query` (asked directly with
/// `options`), by the rule `ranklab check` applies: "holds" when `above` ranks above `below` or
/// `below` is not retrieved, else "inverted"; with both 1-based ranks and the answer.
struct Direct {
    outcome: &'static str,
    above: Option<usize>,
    below: Option<usize>,
    ids: Vec<String>,
}

fn judged_directly(
    engine: &Path,
    corpus: &Path,
    query: &str,
    (above, below): (&str, &str),
    options: &str,
) -> Direct {
    let ids = minisearch_directly_with(engine, corpus, query, options);
    let rank = |d: &str| ids.iter().position(|x| x == d).map(|p| p + 1);
    let (a, b) = (rank(above), rank(below));
    let outcome = match (a, b) {
        (Some(x), Some(y)) if x < y => "holds",
        (Some(_), None) => "holds",
        _ => "inverted",
    };
    Direct {
        outcome,
        above: a,
        below: b,
        ids,
    }
}

/// A rank as `ranklab check` prints it (`-`: not retrieved).
fn shown_rank(r: Option<usize>) -> String {
    r.map_or("-".to_string(), |v| v.to_string())
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

/// (id, query, above, below, legacy, current) of the two MiniSearch settings' paired file, from
/// MiniSearch asked directly.
const TWO_SETTINGS_ASSERTIONS: [(&str, &str, &str, &str, &str, &str); 3] = [
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

/// Writes the paired file of [`TWO_SETTINGS_ASSERTIONS`]; with `flip`, the third assertion's
/// `current` expectation is the wrong one.
fn write_two_settings_paired(tasks: &Path, flip: bool) {
    let mut y = String::from(
        "suite: suite.yaml\nlegacy: minisearch-old\ncurrent: minisearch-new\nassertions:\n",
    );
    for (i, (id, q, above, below, legacy, current)) in TWO_SETTINGS_ASSERTIONS.iter().enumerate() {
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
}

/// `check` prints, for each assertion and half, the ranks and outcome MiniSearch gives when
/// asked directly; flipping one expectation fails `check` (exit 1).
fn assert_check_matches_minisearch_and_a_flip_fails(
    engine: &Path,
    corpus: &Path,
    dir: &Path,
    tasks: &Path,
) {
    // The oracle: ranks of `above` and `below` in MiniSearch's own answers at both settings.
    let mut rows = Vec::new();
    for (id, q, above, below, legacy, current) in TWO_SETTINGS_ASSERTIONS {
        for (half, config, options, expected) in [
            ("legacy", "minisearch-old", "{}", legacy),
            (
                "current",
                "minisearch-new",
                r#"{"boost": {"title": 3}}"#,
                current,
            ),
        ] {
            let d = judged_directly(engine, corpus, q, (above, below), options);
            let actual = d.outcome;
            assert_eq!(
                actual, expected,
                "{id} under {config}: MiniSearch answers {:?}",
                d.ids
            );
            rows.push(format!(
                "| {id} | {half} (`{config}`) | {} | {} | {expected} | {actual} | pass |",
                shown_rank(d.above),
                shown_rank(d.below)
            ));
        }
    }
    let out = ranklab(dir, &["check", "tasks/docir"], &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    for row in &rows {
        assert!(stdout.contains(row.as_str()), "{row}\n{stdout}");
    }

    // Flipping one expectation fails `check` (exit 1).
    write_two_settings_paired(tasks, true);
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
    write_two_settings_paired(tasks, false);
}

/// Both replayed on the suite's tasks; their run files are what MiniSearch answers, and
/// `compare` pairs them.
fn assert_runs_and_compare_match_minisearch(engine: &Path, corpus: &Path, dir: &Path) {
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
            let direct = minisearch_directly_with(engine, corpus, &query, options);
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
}

/// `check --from-recording`: with no engine able to start (no `node` on PATH, which fails a
/// live check), the same verdicts and dependence table as the live check, from the
/// recordings alone.
fn assert_check_from_recording_equals_live(dir: &Path) {
    let live = ranklab(dir, &["check", "tasks/docir"], &[]);
    let no_node = [("PATH", "/nonexistent")];
    let failed = Command::new(env!("CARGO_BIN_EXE_ranklab"))
        .args(["check", "tasks/docir"])
        .current_dir(dir)
        .env("RANKLAB_CACHE", dir.join("cache"))
        .envs(no_node)
        .output()
        .unwrap();
    assert_eq!(
        failed.status.code(),
        Some(2),
        "a live check without node: {}",
        String::from_utf8_lossy(&failed.stderr)
    );
    let recorded = ranklab(
        dir,
        &[
            "check",
            "tasks/docir",
            "--from-recording",
            "--recordings",
            "reports",
        ],
        &no_node,
    );
    assert_eq!(
        String::from_utf8_lossy(&recorded.stdout),
        String::from_utf8_lossy(&live.stdout)
    );
}

/// The gate: both configurations' rows and the paired file's verdicts from the recordings
/// (its queries are suite tasks, so the recordings hold their answers); a flipped expectation
/// fails it.
fn assert_gate_between_the_two_settings(dir: &Path, tasks: &Path) {
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
    write_two_settings_paired(tasks, true);
    let out = gate(&[]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a failed paired assertion between the two engines fails the gate: {}",
        String::from_utf8_lossy(&out.stdout)
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
    write_two_settings_paired(&tasks, false);
    assert_check_matches_minisearch_and_a_flip_fails(&engine, &corpus, dir, &tasks);
    assert_runs_and_compare_match_minisearch(&engine, &corpus, dir);
    assert_check_from_recording_equals_live(dir);
    assert_gate_between_the_two_settings(dir, &tasks);
}

/// The guide's release recipe: its section, commands (the indented lines outside fenced
/// blocks), experiments file (the yaml block) and that file's path.
struct Recipe {
    section: String,
    commands: Vec<String>,
    yaml: String,
    yaml_path: String,
}

/// Reads the release recipe from docs/engines.md.
fn release_recipe() -> Recipe {
    let guide = std::fs::read_to_string(root().join("docs/engines.md")).unwrap();
    let section = guide
        .split("\n## The engine at the last release beside the engine at HEAD\n")
        .nth(1)
        .expect("docs/engines.md has the release recipe")
        .split("\n## ")
        .next()
        .unwrap();
    // The recipe's commands (the indented lines outside fenced blocks) and its experiments
    // file (the yaml block).
    let outside: String = section
        .split("```")
        .step_by(2)
        .collect::<Vec<_>>()
        .join("\n");
    let commands: Vec<String> = outside
        .lines()
        .filter(|l| l.starts_with("    ") && !l.trim().is_empty())
        .map(|l| l.split(" # ").next().unwrap().trim().to_string())
        .collect();
    let yaml = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("the recipe's experiments file");
    let yaml_path = yaml
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("# "))
        .expect("the yaml block names its file on its first line")
        .trim();
    assert!(
        commands.iter().any(|c| c.starts_with("git worktree add"))
            && commands.iter().any(|c| c.starts_with("ranklab run"))
            && commands.iter().any(|c| c.starts_with("ranklab compare"))
            && commands.iter().any(|c| c.starts_with("ranklab gate")),
        "{commands:?}"
    );
    Recipe {
        section: section.to_string(),
        commands,
        yaml: yaml.to_string(),
        yaml_path: yaml_path.to_string(),
    }
}

/// A shell in the recipe's repository: the built `ranklab` first on PATH, a cache under `tmp`,
/// and a git identity.
fn recipe_sh(tmp: &Path, dir: &Path, cmd: &str) -> std::process::Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_ranklab")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    Command::new("sh")
        .args(["-c", cmd])
        .current_dir(dir)
        .env("PATH", path)
        .env("RANKLAB_CACHE", tmp.join("cache"))
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap()
}

/// [`recipe_sh`], which must succeed; its standard output.
fn recipe_ok(tmp: &Path, dir: &Path, cmd: &str) -> String {
    let out = recipe_sh(tmp, dir, cmd);
    assert!(
        out.status.success(),
        "{cmd}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// The repository: docir's suite and corpus, the adapter, committed and tagged v1.4.0; then
/// HEAD's engine boosts titles.
fn release_repository(tmp: &Path, repo: &Path, engine: &Path) {
    let copy = |from: &Path, to: &Path| {
        let st = Command::new("cp")
            .arg("-r")
            .arg(from)
            .arg(to)
            .status()
            .unwrap();
        assert!(st.success());
    };
    std::fs::create_dir_all(repo.join("tasks/docir")).unwrap();
    std::fs::create_dir_all(repo.join("corpora")).unwrap();
    std::fs::create_dir_all(repo.join("examples/engines/minisearch")).unwrap();
    copy(&root().join("corpora/docir"), &repo.join("corpora/docir"));
    std::fs::write(
        repo.join("tasks/docir/suite.yaml"),
        without_ships(&std::fs::read_to_string(root().join("tasks/docir/suite.yaml")).unwrap()),
    )
    .unwrap();
    for f in ["serve.js", "index.js", "package.json", "package-lock.json"] {
        std::fs::copy(
            engine.join(f),
            repo.join("examples/engines/minisearch").join(f),
        )
        .unwrap();
    }
    std::fs::write(repo.join(".gitignore"), "node_modules/\nreports/\n").unwrap();
    recipe_ok(
        tmp,
        repo,
        "git init -q && git add -A && git commit -qm v1.4.0 && git tag v1.4.0",
    );
    let serve = repo.join("examples/engines/minisearch/serve.js");
    let text = std::fs::read_to_string(&serve).unwrap();
    let old_options =
        "const options = at > 0 ? { boost: { title: Number(process.argv[at + 1]) } } : {};";
    assert!(
        text.contains(old_options),
        "serve.js changed; update this test"
    );
    std::fs::write(
        &serve,
        text.replace(old_options, "const options = { boost: { title: 3 } };"),
    )
    .unwrap();
    recipe_ok(tmp, repo, "git commit -qam 'boost titles'");
}

/// The recipe's setup steps (the worktree, `npm ci`, the experiments file); the commands left
/// to run.
fn recipe_setup(tmp: &Path, repo: &Path, engine: &Path, recipe: &Recipe) -> Vec<String> {
    let modules = std::path::absolute(engine.join("node_modules")).unwrap();
    let mut rest = Vec::new();
    for c in &recipe.commands {
        if c.contains("npm ci") {
            // Instead of `npm ci` in the worktree (no registry in a test): the installed modules.
            let dir = c
                .trim_start_matches("(cd ")
                .split(" && ")
                .next()
                .unwrap()
                .to_string();
            std::os::unix::fs::symlink(&modules, repo.join(dir).join("node_modules")).unwrap();
            std::os::unix::fs::symlink(
                &modules,
                repo.join("examples/engines/minisearch/node_modules"),
            )
            .unwrap();
        } else if c.starts_with("git worktree add") {
            recipe_ok(tmp, repo, &format!("{c} -q"));
            std::fs::write(repo.join(&recipe.yaml_path), &recipe.yaml).unwrap();
        } else {
            rest.push(c.clone());
        }
    }
    rest
}

/// The recipe's paired file (suite queries; the expectations come from MiniSearch asked
/// directly, without and with the title boost) and the verdict rows it must produce.
fn release_paired(engine: &Path, corpus: &Path, old: &str, new: &str) -> (String, Vec<String>) {
    // (id, query, above, below): suite queries; the expectations come from MiniSearch asked
    // directly, without and with the title boost.
    let assertions = [
        (
            "slow-checkout",
            "figure out where the time goes when a merchant complains that checkout is slow",
            "pay-observability",
            "pay-fees-pricing",
        ),
        (
            "double-charging",
            "stop double charging when the client retries a capture",
            "pay-idempotency-v2",
            "pay-retries-backoff",
        ),
        (
            "marketplace",
            "let a marketplace take payments for the sellers it signs up without holding their credentials",
            "pay-oauth-platforms",
            "pay-3ds-stepup",
        ),
    ];
    let mut rows = Vec::new();
    let mut y = format!("suite: suite.yaml\nlegacy: {old}\ncurrent: {new}\nassertions:\n");
    for (id, q, above, below) in assertions {
        let l = judged_directly(engine, corpus, q, (above, below), "{}");
        let c = judged_directly(
            engine,
            corpus,
            q,
            (above, below),
            r#"{"boost": {"title": 3}}"#,
        );
        let (lo, co) = (l.outcome, c.outcome);
        y.push_str(&format!(
            "  - id: {id}\n    query: {q}\n    above: {above}\n    below: {below}\n    legacy: {lo}\n    current: {co}\n"
        ));
        rows.push(format!(
            "| {id} | legacy (`{old}`) | {} | {} | {lo} | {lo} | pass |",
            shown_rank(l.above),
            shown_rank(l.below)
        ));
        rows.push(format!(
            "| {id} | current (`{new}`) | {} | {} | {co} | {co} | pass |",
            shown_rank(c.above),
            shown_rank(c.below)
        ));
    }
    assert!(y.contains("legacy: inverted\n    current: holds"), "{y}");
    (y, rows)
}

/// No engine can start any more (the worktree is gone and HEAD's adapter moved away): the gate
/// and the report from the recordings hold the verdict rows; a flipped expectation fails the
/// gate; an unrecorded query stops it.
fn assert_release_gate_needs_no_engine(
    tmp: &Path,
    repo: &Path,
    yaml_path: &str,
    y: &str,
    rows: &[String],
) {
    let ok = |dir: &Path, cmd: &str| recipe_ok(tmp, dir, cmd);
    let paired = repo.join("tasks/docir/paired.yaml");
    // No engine can start any more: the worktree is gone and HEAD's adapter moved away.
    ok(repo, "git worktree remove --force ../engine-v1.4");
    std::fs::rename(
        repo.join("examples/engines/minisearch"),
        repo.join("examples/engines/minisearch-moved"),
    )
    .unwrap();
    let gate = ok(repo, "ranklab gate --from-recording");
    for row in rows {
        assert!(
            gate.contains(row.as_str()),
            "gate --from-recording: {row}\n{gate}"
        );
    }
    // The report rendered from the recordings holds the same verdicts.
    ok(
        repo,
        &format!(
            "ranklab run tasks/docir -x {yaml_path} --from-recording --reports again --recordings reports"
        ),
    );
    let report = std::fs::read_to_string(repo.join("again/docir/release.md")).unwrap();
    for row in rows {
        assert!(report.contains(row.as_str()), "report: {row}\n{report}");
    }
    // A flipped expectation fails the gate, from the recordings.
    std::fs::write(
        &paired,
        y.replacen("current: holds", "current: inverted", 1),
    )
    .unwrap();
    let out = recipe_sh(tmp, repo, "ranklab gate --from-recording");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // A query the recordings do not hold stops the gate (exit 2) naming it; nothing is asked.
    std::fs::write(
        &paired,
        format!(
            "{y}  - id: unrecorded\n    query: rotate the webhook signing secret\n    above: pay-webhook-signing-v2\n    below: pay-webhook-replay\n    legacy: holds\n    current: holds\n"
        ),
    )
    .unwrap();
    let out = recipe_sh(tmp, repo, "ranklab gate --from-recording");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("paired.yaml:")
            && err.contains("assertion \"unrecorded\"")
            && err.contains("rotate the webhook signing secret")
            && err.contains("--from-recording asks no engine"),
        "{err}"
    );
}

/// The recipe "The engine at the last release beside the engine at HEAD" of docs/engines.md,
/// run as written: its commands and its experiments file are read from that guide (so it cannot
/// drift from what works), in a temporary git repository laid out like ranklab's (the docir
/// suite and corpus, MiniSearch's adapter) with two commits of the engine: `v1.4.0` (the
/// adapter as shipped) and HEAD (titles boosted 3x). The one step not run as written is `npm
/// ci` (it needs the registry): each checkout gets this repository's installed `node_modules`.
///
/// Then, with no engine able to start (the worktree removed, HEAD's adapter moved away), the
/// gate and the reports come from the recordings alone, paired assertions included: their
/// verdicts equal MiniSearch's answers asked directly at both settings; a flipped expectation
/// fails the gate (exit 1); an assertion whose query was never recorded stops it (exit 2).
#[test]
fn the_guides_release_recipe_works_as_written_and_its_gate_needs_no_engine() {
    let engine = examples("minisearch");
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("ranklab");
    let recipe = release_recipe();
    release_repository(tmp.path(), &repo, &engine);

    // The recipe, step by step; experiments file and paired.yaml as the guide describes.
    let rest = recipe_setup(tmp.path(), &repo, &engine, &recipe);
    let (old, new) = ("minisearch-v1.4", "minisearch-head");
    assert!(
        recipe.yaml.contains(old)
            && recipe.yaml.contains(new)
            && recipe.section.contains(&format!("legacy: {old}")),
        "the recipe names {old} and {new}"
    );
    let corpus = std::path::absolute(root().join("corpora/docir")).unwrap();
    let (y, rows) = release_paired(&engine, &corpus, old, new);
    let paired = repo.join("tasks/docir/paired.yaml");
    std::fs::write(&paired, &y).unwrap();
    for c in &rest {
        let out = recipe_ok(tmp.path(), &repo, c);
        if c.starts_with("ranklab compare") {
            assert!(out.contains(old) && out.contains(new), "{out}");
        }
        if c.starts_with("ranklab gate") {
            for row in &rows {
                assert!(out.contains(row.as_str()), "{c}: {row}\n{out}");
            }
        }
    }
    // Both builds' run files are what MiniSearch answers at their settings.
    for (config, options) in [(old, "{}"), (new, r#"{"boost": {"title": 3}}"#)] {
        let run = std::fs::read_to_string(repo.join(format!("reports/docir/runs/{config}.trec")))
            .unwrap();
        for (task, query) in sample_tasks() {
            let direct = minisearch_directly_with(&engine, &corpus, &query, options);
            assert_eq!(run_ids(&run, &task), direct, "{config} {task}: {query}");
        }
    }
    assert_release_gate_needs_no_engine(tmp.path(), &repo, &recipe.yaml_path, &y, &rows);
}
