//! Finding suites and their experiment files on disk.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::Suite;

/// Experiment files beside a suite: `experiments*.yaml`, sorted by name, loaded and their names
/// checked together ([`super::load_experiments`]: no two write one file).
pub fn experiment_files(suite: &Suite) -> Result<Vec<PathBuf>> {
    Ok(super::load_experiments(suite, &[])?
        .into_iter()
        .map(|ex| ex.path)
        .collect())
}

/// The `experiments*.yaml` files beside a suite, sorted by name, unread.
pub(super) fn experiment_paths(suite: &Suite) -> Result<Vec<PathBuf>> {
    let out = suite.files_named("experiments")?;
    if out.is_empty() {
        bail!(
            "{}: no experiments*.yaml beside the suite; add one (see `ranklab help formats`)",
            suite.dir().display()
        );
    }
    Ok(out)
}

/// Every `<tasks>/*/suite.yaml`, sorted; or the one suite `tasks` names (a suite file, or a
/// folder holding `suite.yaml`).
pub fn suites(tasks: &Path) -> Result<Vec<PathBuf>> {
    if tasks.is_file() {
        return Ok(vec![tasks.to_path_buf()]);
    }
    if tasks.join("suite.yaml").is_file() {
        return Ok(vec![tasks.join("suite.yaml")]);
    }
    let mut out = Vec::new();
    for e in std::fs::read_dir(tasks).with_context(|| {
        format!(
            "cannot list the suites folder {}{} (pass --tasks DIR, or run inside a repository with a ranklab.toml or a tasks/ folder; {})",
            tasks.display(),
            crate::root::tried(tasks),
            crate::suite::SEE_FORMATS
        )
    })? {
        let p = e?.path().join("suite.yaml");
        if p.is_file() {
            out.push(p);
        }
    }
    out.sort();
    if out.is_empty() {
        bail!(
            "{}: no suite found (expected <suite>/suite.yaml folders; pass --tasks DIR; {})",
            tasks.display(),
            crate::suite::SEE_FORMATS
        );
    }
    Ok(out)
}
