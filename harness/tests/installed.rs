//! ranklab installed, not cloned (docs/suites.md, "Use it in your own repository"): the built
//! binary is copied into a temporary bin folder (a copy, not `cargo install`: installing
//! rebuilds the whole dependency tree, minutes on this machine) and run against a suite that
//! lives in another temporary git repository, from a subfolder and from the repository's top.

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn installed(bin_dir: &Path) -> std::path::PathBuf {
    let to = bin_dir.join("ranklab");
    std::fs::copy(env!("CARGO_BIN_EXE_ranklab"), &to).unwrap();
    to
}

/// Runs the copied binary. A copy just written can be "busy" (ETXTBSY) for a moment: a child
/// another test thread forks in that moment inherits the copy's open file until it execs. Retry
/// then, a few times; any other error fails the test.
fn run_in(bin: &Path, cwd: &Path, args: &[&str]) -> Output {
    let mut tries = 0;
    loop {
        match Command::new(bin).args(args).current_dir(cwd).output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            other => return other.unwrap(),
        }
    }
}

/// A team repository: `ranklab.toml`, `tasks/fx/` (the gate fixture suite, BM25 only, real
/// tantivy) and its `corpus/`, under `git init`.
fn team_repo(top: &Path) {
    std::fs::create_dir_all(top).unwrap();
    assert!(Command::new("git")
        .args(["init", "-q"])
        .current_dir(top)
        .status()
        .unwrap()
        .success());
    std::fs::write(top.join("ranklab.toml"), "# ranklab suite repository\n").unwrap();
    common::copy_dir(&common::fixture("gate/tasks"), &top.join("tasks"));
    common::copy_dir(&common::fixture("gate/corpus"), &top.join("corpus"));
    std::fs::create_dir_all(top.join("docs/adr")).unwrap();
}

#[test]
fn a_suite_in_another_repository_runs_from_any_folder_with_the_same_bytes() {
    let t = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(t.path().join("bin")).unwrap();
    let bin = installed(&t.path().join("bin"));
    let repo = t.path().join("team");
    team_repo(&repo);

    // From a subfolder: defaults (tasks/, reports/) are the repository root's.
    let out = run_in(&bin, &repo.join("docs/adr"), &["bench"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = repo.join("reports/fx/wiring.md");
    let from_sub = std::fs::read(&report).expect("bench wrote reports/ at the repository root");
    assert!(!repo.join("docs/adr/reports").exists());
    let text = String::from_utf8_lossy(&from_sub).into_owned();
    assert!(
        text.contains("Suite `tasks/fx/suite.yaml`") && text.contains("Corpus `corpus`"),
        "paths in the report are relative to the root:\n{}",
        &text[..text.len().min(600)]
    );
    assert!(
        !text.contains(&t.path().display().to_string()),
        "no absolute path in the report"
    );

    // From the top, naming the suite folder: the same bytes.
    std::fs::remove_dir_all(repo.join("reports")).unwrap();
    let out = run_in(&bin, &repo, &["run", "tasks/fx"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&report).unwrap(), from_sub);

    // check accepts the suite folder as well as the file.
    let out = run_in(&bin, &repo.join("docs"), &["check", "../tasks/fx"]);
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("paired.yaml"));
}

#[test]
fn help_formats_prints_the_reference_built_into_the_binary() {
    let t = tempfile::tempdir().unwrap();
    let bin = installed(t.path());
    let out = run_in(&bin, t.path(), &["help", "formats"]);
    assert!(out.status.success());
    let reference =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/formats.md"))
            .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), reference);
}

#[test]
fn an_empty_folder_names_the_path_and_the_flag() {
    let t = tempfile::tempdir().unwrap();
    let empty = t.path().join("empty");
    std::fs::create_dir_all(empty.join(".git")).unwrap();
    let bin = installed(t.path());
    let out = run_in(&bin, &empty, &["bench"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("tasks") && err.contains("--tasks DIR"),
        "{err}"
    );
    assert!(err.contains("ranklab help formats"), "{err}");
}
