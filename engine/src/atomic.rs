//! The one atomic file writer of ranklab: reports, baselines, practice files, synthetic runs and
//! the model caches' record files all go through it.
//!
//! The bytes go to a temporary file `.ranklab-<random>.tmp` in the target's directory (the one
//! name scheme [`crate::leftovers`] sweeps), are flushed and synced to disk, and the temporary is
//! renamed over the target: a reader, or a crash, sees the previous file whole or the new one
//! whole, never a truncated one. Files are created `0644` (less the umask) on Unix, like any
//! data file, not `0600` as temporaries are by default.

use std::io::{BufWriter, Write};
use std::path::Path;

use crate::{Error, Result};

/// Writes `bytes` to `path` atomically, creating parent directories.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    write_with(path, |w| w.write_all(bytes))
}

/// Writes what `fill` produces to `path` atomically (buffered, for large files), creating
/// parent directories.
pub fn write_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    crate::leftovers::sweep_once(dir);
    let mut builder = tempfile::Builder::new();
    builder.prefix(".ranklab-").suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let tmp = builder.tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
    let mut w = BufWriter::with_capacity(1 << 20, tmp);
    fill(&mut w)
        .and_then(|()| w.flush())
        .map_err(|e| Error::io(path, e))?;
    let tmp = w
        .into_inner()
        .map_err(|e| Error::io(path, e.into_error()))?;
    tmp.as_file().sync_all().map_err(|e| Error::io(path, e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn replaces_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/out.md");
        super::write(&p, b"first version, long").unwrap();
        super::write(&p, b"second").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[cfg(unix)]
    #[test]
    fn files_are_readable_by_group_and_others_not_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("out.md");
        super::write(&p, b"x").unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        // 0644 less the umask; with the usual umask 022 exactly 0644. Never private (0600).
        assert_eq!(mode & 0o600, 0o600, "{mode:o}");
        assert_ne!(mode, 0o600, "{mode:o}");
    }

    #[test]
    fn a_temporary_left_by_a_killed_run_is_swept_and_a_fresh_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(".ranklab-killed.tmp");
        let fresh = dir.path().join(".ranklab-running.tmp");
        for p in [&old, &fresh] {
            std::fs::write(p, b"partial").unwrap();
        }
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        super::write(&dir.path().join("out.md"), b"x").unwrap();
        assert!(!old.exists(), "stale temporary kept");
        assert!(fresh.exists(), "a live writer's temporary was removed");
    }
}
