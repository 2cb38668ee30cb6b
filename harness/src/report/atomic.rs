//! Atomic file output for the harness: every file ranklab writes goes through
//! [`ranklab_engine::atomic`] (temporary `.ranklab-*.tmp` beside the target, synced, renamed;
//! created 0644; temporaries a killed run left are swept once per process).

use std::path::Path;

use anyhow::Result;

/// Writes `bytes` to `path` atomically, creating parent directories.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    Ok(ranklab_engine::atomic::write(path, bytes)?)
}
