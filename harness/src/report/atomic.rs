//! Atomic file output for the harness: every file ranklab writes goes through
//! [`ranklab_engine::atomic`] (temporary `.ranklab-*.tmp` beside the target, synced, renamed;
//! created 0644; temporaries a killed run left are swept once per process), and a report
//! directory is replaced as a whole ([`write_dir`]).

use std::path::Path;

use anyhow::Result;

/// Replaces `files` (relative paths, bytes) in the directory `dir` as one step, keeping its
/// other files: a kill or an error leaves the previous directory whole.
pub fn write_dir<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = (&'a Path, &'a [u8])>,
) -> Result<()> {
    Ok(ranklab_engine::atomic::write_dir(dir, files)?)
}

/// [`write_dir`] after `check` passes under the directory's lock (nothing written when it
/// fails; see [`ranklab_engine::atomic::write_dir_checked`]).
pub fn write_dir_checked<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = (&'a Path, &'a [u8])>,
    check: impl FnOnce() -> ranklab_engine::Result<()>,
) -> Result<()> {
    Ok(ranklab_engine::atomic::write_dir_checked(
        dir, files, check,
    )?)
}

/// Writes `bytes` to `path` atomically, creating parent directories.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(ranklab_engine::atomic::write(path, bytes)?)
}
