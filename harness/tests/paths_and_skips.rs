//! Nothing skipped silently, paths that explain themselves (issue 25, item 9). Each test copies
//! the bad-input fixture (`tests/fixtures/bad_input/`, BM25 only) to a temporary folder, changes
//! one thing and runs the built binary there:
//! - a corpus entry that looks like a record but cannot be read as one (a dangling link, a link
//!   to itself, a loop of two links, `ledger.MD`) exits 2 naming the entry, where before it was
//!   skipped and the run passed; the untouched fixture passes (the paired half);
//! - files of the corpus folder that are not records (`README.txt`, `.gitkeep`, a subfolder) are
//!   named once on stderr, though the run loads the corpus more than once (the suite and its
//!   paired file), and change nothing else: the reports are the same bytes as without them;
//! - a task's `k` deeper than a configuration's `depth` exits 2 naming both places;
//! - `ranklab run suite.yaml` from inside the suite folder works and writes the same reports
//!   and output as `./suite.yaml` (before: "cannot list : No such file or directory");
//! - a path that cannot be read is named with the absolute path tried and, from a subfolder,
//!   the folder run in and the root defaults resolve against;
//! - `ranklab tune` without `--suite` tunes the only suite with a `merges.yaml` (the same output
//!   as naming it), and with several or none exits 2 listing them and asking for `--suite`.

use std::process::Output;

mod common;

use common::ranklab_in as ranklab;

const RUN: &[&str] = &["run", "tasks/p", "--reports", "reports"];

fn fixture() -> tempfile::TempDir {
    common::fixture_copy("bad_input")
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Exit 2, nothing on stdout, stderr naming every one of `says`.
fn refused(o: &Output, says: &[&str]) {
    let e = err(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(o.stdout.is_empty(), "stdout: {}", out(o));
    for s in says {
        assert!(e.contains(s), "stderr does not say {s:?}: {e}");
    }
}

fn ok(o: &Output) {
    assert_eq!(o.status.code(), Some(0), "{}", err(o));
}

#[test]
fn the_pristine_fixture_runs() {
    // The paired half of every refusal below.
    let d = fixture();
    let o = ranklab(d.path(), RUN);
    ok(&o);
    assert!(!err(&o).contains("not read"), "{}", err(&o));
}

#[test]
fn a_dangling_link_in_a_corpus_exits_2_naming_it() {
    let d = fixture();
    std::os::unix::fs::symlink("missing.md", d.path().join("corpus/zeta.md")).unwrap();
    refused(
        &ranklab(d.path(), RUN),
        &[
            "corpus/zeta.md: a dangling symbolic link",
            "its target missing.md does not exist",
            "restore the target or remove the link",
        ],
    );
}

#[test]
fn a_looping_link_in_a_corpus_exits_2_naming_it() {
    for links in [
        &[("loop.md", "loop.md")][..],
        &[("x.md", "y.md"), ("y.md", "x.md")],
    ] {
        let d = fixture();
        for (name, to) in links {
            std::os::unix::fs::symlink(to, d.path().join("corpus").join(name)).unwrap();
        }
        let first = links[0].0;
        refused(
            &ranklab(d.path(), RUN),
            &[
                &format!("corpus/{first}: a symbolic link that cannot be followed"),
                "points to itself or into a loop",
            ],
        );
    }
}

#[test]
fn an_upper_case_md_extension_exits_2_naming_the_file_and_the_fix() {
    let d = fixture();
    std::fs::write(
        d.path().join("corpus/ledger.MD"),
        "---\nid: ledger\n---\n# Ledger\ntext\n",
    )
    .unwrap();
    refused(
        &ranklab(d.path(), RUN),
        &[
            "corpus/ledger.MD: \"ledger.MD\" ends in `.MD`",
            "rename it to ledger.md",
        ],
    );
}

#[test]
fn files_that_are_not_records_are_named_once_and_change_nothing_else() {
    let plain = fixture();
    ok(&ranklab(plain.path(), RUN));
    let d = fixture();
    std::fs::write(d.path().join("corpus/README.txt"), "about this corpus\n").unwrap();
    std::fs::write(d.path().join("corpus/.gitkeep"), "").unwrap();
    std::fs::create_dir(d.path().join("corpus/drafts")).unwrap();
    let o = ranklab(d.path(), RUN);
    ok(&o);
    let e = err(&o);
    assert_eq!(e.matches("README.txt").count(), 1, "named once: {e}");
    assert_eq!(e.matches("not read").count(), 1, "one note: {e}");
    assert!(
        e.contains(
            "3 entries are not read (only *.md files are records): .gitkeep, README.txt, drafts/"
        ),
        "{e}"
    );
    assert_eq!(
        common::tree(&plain.path().join("reports")),
        common::tree(&d.path().join("reports")),
        "the reports do not depend on files that are not records"
    );
    assert_eq!(out(&ranklab(plain.path(), RUN)), out(&o));
}

#[test]
fn k_deeper_than_a_configuration_depth_exits_2_naming_both() {
    let d = fixture();
    let ex = d.path().join("tasks/p/experiments.yaml");
    let text = std::fs::read_to_string(&ex).unwrap();
    // Line 6 of the experiments file: the bm25 configuration's depth (lines counted by hand).
    let shallow = text.replace(
        "  - name: bm25\n    retriever: bm25\n",
        "  - name: bm25\n    retriever: bm25\n    depth: 4\n",
    );
    assert_ne!(shallow, text);
    std::fs::write(&ex, &shallow).unwrap();
    // The suite's k: 5 is on line 3 of tasks/p/suite.yaml.
    refused(
        &ranklab(d.path(), RUN),
        &[
            "tasks/p/suite.yaml:3: the suite's k = 5",
            "configuration \"bm25\" (tasks/p/experiments.yaml:6, depth: 4)",
            "lower k to at most 4 or raise the configuration's `depth` to at least 5",
        ],
    );
    // The gate refuses it too.
    refused(
        &ranklab(
            d.path(),
            &[
                "gate",
                "--tasks",
                "tasks",
                "--baseline",
                "b.json",
                "--update",
            ],
        ),
        &["tasks/p/suite.yaml:3: the suite's k = 5"],
    );
    // The paired half: a depth equal to the deepest k is accepted.
    std::fs::write(
        &ex,
        text.replace(
            "  - name: bm25\n    retriever: bm25\n",
            "  - name: bm25\n    retriever: bm25\n    depth: 5\n",
        ),
    )
    .unwrap();
    ok(&ranklab(d.path(), RUN));
}

#[test]
fn a_bare_suite_file_name_works_like_dot_slash() {
    let d = fixture();
    let suite_dir = d.path().join("tasks/p");
    let reports = d.path().join("reports");
    let args =
        |suite: &'static str| -> Vec<&str> { vec!["run", suite, "--reports", "../../reports"] };
    let dot = ranklab(&suite_dir, &args("./suite.yaml"));
    ok(&dot);
    let dot_tree = common::tree(&reports);
    std::fs::remove_dir_all(&reports).unwrap();
    let bare = ranklab(&suite_dir, &args("suite.yaml"));
    ok(&bare);
    assert_eq!(common::tree(&reports), dot_tree);
    assert_eq!(out(&bare), out(&dot));
    assert!(!dot_tree.is_empty());
}

#[test]
fn a_path_that_cannot_be_read_names_the_absolute_path_and_from_a_subfolder_the_root() {
    let d = fixture();
    let root = std::fs::canonicalize(d.path()).unwrap();
    // From the root: the absolute path, no word about folders.
    let o = ranklab(&root, &["run", "tasks/kb", "--reports", "reports"]);
    refused(
        &o,
        &[&format!(
            "cannot read tasks/kb (tried {}/tasks/kb)",
            root.display()
        )],
    );
    assert!(!err(&o).contains("ranklab runs in"), "{}", err(&o));
    // From tasks/: the path is taken from there, and the message says where the defaults go.
    let sub = root.join("tasks");
    let o = ranklab(&sub, &["run", "tasks/kb"]);
    refused(
        &o,
        &[
            &format!(
                "cannot read tasks/kb (tried {}/tasks/tasks/kb;",
                root.display()
            ),
            &format!(
                "ranklab runs in {}: paths given on the command line are read from there",
                sub.display()
            ),
            &format!(
                "default paths (tasks, reports) from the repository root {})",
                root.display()
            ),
        ],
    );
    // A TREC file given to eval: the same.
    let o = ranklab(&sub, &["eval", "../trec/qrels.txt", "nothere.trec"]);
    refused(
        &o,
        &[&format!(
            "cannot read nothere.trec (tried {}/nothere.trec;",
            sub.display()
        )],
    );
}

const TUNE: &[&str] = &["tune", "--as-of", "2026-11-30", "--max-units", "4"];

#[test]
fn tune_without_suite_picks_the_only_suite_with_merges() {
    let d = fixture();
    let picked = ranklab(d.path(), TUNE);
    ok(&picked);
    assert!(
        err(&picked).contains("tuning tasks/p, the only suite with a merges.yaml"),
        "{}",
        err(&picked)
    );
    let named = ranklab(d.path(), &[TUNE, &["--suite", "tasks/p"]].concat());
    ok(&named);
    assert_eq!(out(&picked), out(&named));
    // A suite without merges beside it does not count.
    common::copy_dir(&d.path().join("tasks/p"), &d.path().join("tasks/q"));
    std::fs::remove_file(d.path().join("tasks/q/merges.yaml")).unwrap();
    let still = ranklab(d.path(), TUNE);
    ok(&still);
    assert_eq!(out(&still), out(&named));
}

#[test]
fn tune_without_suite_refuses_several_or_no_suites_with_merges() {
    let d = fixture();
    common::copy_dir(&d.path().join("tasks/p"), &d.path().join("tasks/q"));
    refused(
        &ranklab(d.path(), TUNE),
        &[
            "no --suite given, and 2 suites under tasks have a merges.yaml: tasks/p, tasks/q",
            "choose one with --suite DIR",
        ],
    );
    for s in ["p", "q"] {
        std::fs::remove_file(d.path().join("tasks").join(s).join("merges.yaml")).unwrap();
    }
    refused(
        &ranklab(d.path(), TUNE),
        &[
            "no suite under tasks has a merges.yaml (suites: tasks/p, tasks/q)",
            "pass --suite DIR",
        ],
    );
}
