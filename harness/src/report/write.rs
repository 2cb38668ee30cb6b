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
    atomic::write_dir(
        dir,
        reports
            .iter()
            .flat_map(|r| r.files.iter().map(|(p, b)| (p.as_path(), b.as_slice()))),
    )
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
