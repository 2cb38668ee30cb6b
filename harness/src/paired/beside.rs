//! The paired assertions beside a suite: every `paired*.yaml` in the suite's folder whose suite
//! is this suite, checked as `ranklab check` checks it, for the suite's reports
//! ([`PairedResult`], rendered by `report`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use ranklab_engine::models::remote::Remote;

use crate::replay::Replayer;
use crate::suite::Suite;

/// The paired assertions of a suite (one paired*.yaml), checked, for the report's section.
pub struct PairedResult {
    /// The paired file.
    pub path: PathBuf,
    /// One verdict per assertion and wiring.
    pub verdicts: Vec<crate::paired::Verdict>,
}

/// Checks every `paired*.yaml` beside the suite file whose suite is this suite (as
/// `ranklab check` does), in file name order; with `recordings` (`--from-recording`), external
/// configurations' answers come from the recordings there, and an answer no recording holds
/// stops the run.
pub fn check_beside(
    suite: &Suite,
    remote: Option<&Arc<dyn Remote>>,
    recordings: Option<&Path>,
) -> Result<Vec<PairedResult>> {
    let dir = suite.path.parent().unwrap_or(Path::new("."));
    let files = crate::paired::files_in(dir)
        .map_err(|e| anyhow::anyhow!("cannot list {}: {e}", dir.display()))?;
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let mut out = Vec::new();
    for path in files {
        // A paired file that cannot be checked stops the run (exit 2), as `ranklab check` refuses
        // it: a report that silently left its assertions out would pass what it never checked.
        let checked = (|| -> Result<Option<Vec<crate::paired::Verdict>>> {
            let (paired, corpus) = crate::paired::Paired::load(&path)?;
            if !same(&paired.suite.path, &suite.path) {
                return Ok(None);
            }
            let engine = Replayer::build_with(&corpus, &[&paired.experiments], remote.cloned())?;
            let verdicts = paired.check_with(&engine, None, recordings)?;
            engine.finish()?;
            Ok(Some(verdicts))
        })();
        match checked {
            Ok(Some(verdicts)) => out.push(PairedResult { path, verdicts }),
            Ok(None) => {}
            Err(e) => {
                return Err(e.context(format!(
                    "{}: the paired assertions beside the suite cannot be checked; fix the file \
                     (`ranklab check {}` says the same) or move it out of the suite's folder",
                    path.display(),
                    path.display()
                )))
            }
        }
    }
    Ok(out)
}
