//! Atomic file output: every file ranklab writes goes to a temporary file in the same
//! directory, is flushed to disk, then renamed over the target, so a reader (or a crash) sees
//! either the previous file whole or the new file whole, never a truncated one. Temporaries a
//! killed run left in the directory are swept once per process (`ranklab_engine::leftovers`).

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Writes `bytes` to `path` atomically, creating parent directories.
pub fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    ranklab_engine::leftovers::sweep_once(dir);
    let mut tmp = tempfile::Builder::new()
        .prefix(".ranklab-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.as_file()
        .sync_all()
        .with_context(|| format!("cannot sync {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("cannot replace {}", path.display()))?;
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
