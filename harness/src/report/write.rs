//! Writing a suite's reports: every file checked against the names promised at load, then the
//! folder written as one step.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{atomic, experiment_file_names, SuiteReport};

/// Writes every file of `reports` (the experiments of one suite) under `dir` as one step,
/// keeping the directory's other files: a run killed or failing while it writes leaves the
/// previous directory whole, never files of two runs mixed. A file several reports share
/// (`qrels.txt`, a run file) takes the last report's bytes.
pub fn write_all(dir: &Path, reports: &[SuiteReport]) -> Result<()> {
    write_all_with_costs(dir, reports, None)
}

/// [`write_all`], with the suite's new cost file (`dir/costs.json`) in the same step when
/// `costs` is given; refused, nothing written, when the cost file no longer holds what this run
/// read at its start (another run measured meanwhile: its figures are kept).
pub fn write_all_with_costs(
    dir: &Path,
    reports: &[SuiteReport],
    costs: Option<&crate::replay::costs::NewCosts>,
) -> Result<()> {
    let name = Path::new(crate::replay::costs::COSTS_FILE);
    if let Some(c) = costs {
        anyhow::ensure!(
            c.path == dir.join(name),
            "internal error: the cost file {} is not {}'s; please report this",
            c.path.display(),
            dir.display()
        );
    }
    let files = reports
        .iter()
        .flat_map(|r| r.files.iter().map(|(p, b)| (p.as_path(), b.as_slice())))
        .chain(costs.map(|c| (name, c.bytes.as_slice())));
    atomic::write_dir_checked(dir, files, || {
        let Some(c) = costs else { return Ok(()) };
        let now = match std::fs::read(&c.path) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ranklab_engine::Error::io(&c.path, e)),
        };
        if now == c.read {
            return Ok(());
        }
        Err(ranklab_engine::Error::io(
            &c.path,
            std::io::Error::other(
                "another run wrote this cost file while this one measured; nothing was written (its figures are kept): run this measurement again",
            ),
        ))
    })?;
    Ok(())
}

/// The files of a suite's reports, before any is written: each is one the names checked at load
/// promise ([`experiment_file_names`], [`configuration_file_names`], `qrels.txt`), and a file two
/// reports write (`qrels.txt`, the run of a configuration two experiments share) has the same
/// bytes in both, so writing one after the other overwrites nothing.
pub fn check_files(reports: &[SuiteReport]) -> Result<()> {
    let mut seen: HashMap<&Path, (&str, &[u8])> = HashMap::new();
    for r in reports {
        let own: Vec<PathBuf> = experiment_file_names(&r.stem)
            .into_iter()
            .map(PathBuf::from)
            .chain([PathBuf::from("qrels.txt")])
            .collect();
        for (path, bytes) in &r.files {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            let run = path.parent() == Some(Path::new("runs"))
                && name.as_deref().is_some_and(|n| {
                    n.ends_with(".trec") || n.ends_with(&crate::suite::recording_file_name(""))
                });
            if !run && !own.contains(path) {
                anyhow::bail!(
                    "internal error: the report of experiment {:?} writes {}, a file name the checks at load do not know (report::experiment_file_names); please report this",
                    r.stem,
                    path.display()
                );
            }
            match seen.get(path.as_path()) {
                Some((other, theirs)) if *theirs != bytes.as_slice() => anyhow::bail!(
                    "experiments {other:?} and {:?} both write reports/<suite>/{} with different contents, and one would overwrite the other; nothing was written. A configuration two experiments files share should answer the same in both (an external engine that answers one query differently from call to call?): give it a name per experiments file",
                    r.stem,
                    path.display()
                ),
                Some(_) => {}
                None => {
                    seen.insert(path, (&r.stem, bytes));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::costs::NewCosts;

    fn report(bytes: &[u8]) -> SuiteReport {
        SuiteReport {
            markdown: String::new(),
            summary: String::new(),
            stem: "e".to_string(),
            files: vec![(PathBuf::from("e.md"), bytes.to_vec())],
            failures: vec![],
        }
    }

    /// A cost file read at a run's start is rewritten, with the reports in one step, only while
    /// it still holds what was read: changed by another run meanwhile (or created, or deleted),
    /// nothing is written and the error names the file; unchanged, both are written. Oracle:
    /// the directory's files read back.
    #[test]
    fn the_cost_file_is_replaced_with_the_reports_only_if_it_still_holds_what_was_read() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("suite");
        std::fs::create_dir(&dir).unwrap();
        let path = dir.join("costs.json");
        std::fs::write(&path, "another run's\n").unwrap();
        std::fs::write(dir.join("e.md"), "old report").unwrap();
        let new = |read: Option<&str>| NewCosts {
            path: path.clone(),
            bytes: b"this run's\n".to_vec(),
            read: read.map(|r| r.as_bytes().to_vec()),
        };
        for read in [Some("what this run read\n"), None] {
            let err = write_all_with_costs(&dir, &[report(b"new report")], Some(&new(read)))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("costs.json") && err.contains("another run wrote this cost file"),
                "{err}"
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "another run's\n");
            assert_eq!(
                std::fs::read_to_string(dir.join("e.md")).unwrap(),
                "old report"
            );
        }
        write_all_with_costs(
            &dir,
            &[report(b"new report")],
            Some(&new(Some("another run's\n"))),
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "this run's\n");
        assert_eq!(
            std::fs::read_to_string(dir.join("e.md")).unwrap(),
            "new report"
        );
        // Read as absent and still absent: written.
        std::fs::remove_file(&path).unwrap();
        write_all_with_costs(&dir, &[report(b"r3")], Some(&new(None))).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "this run's\n");
    }
}
