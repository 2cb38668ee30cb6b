//! The one atomic file writer of ranklab: reports, baselines, practice files, synthetic runs and
//! the model caches' record files all go through it.
//!
//! The bytes go to a temporary file `.ranklab-<random>.tmp` in the target's directory (the one
//! name scheme [`crate::leftovers`] sweeps), are flushed and synced to disk, and the temporary is
//! renamed over the target: a reader, or a crash, sees the previous file whole or the new one
//! whole, never a truncated one. Files are created `0644` (less the umask) on Unix, like any
//! data file, not `0600` as temporaries are by default.
//!
//! A directory of files that belong together (a report: its tables, charts and run files) is
//! replaced as a whole by [`write_dir`]: the new files, and hard links to the directory's other
//! files, go into a sibling temporary directory `.ranklab-<random>.tmp`, which is then swapped
//! with the directory in one `renameat2(RENAME_EXCHANGE)` (Linux, macOS) and the old content
//! deleted. A reader, or a process killed at any point, sees the previous directory whole or the
//! new one whole, never files of two runs mixed; a killed run's temporary directory is swept like
//! a temporary file. The read-link-swap runs under an advisory exclusive lock (`flock`) on the
//! parent directory, so two writers of one directory cannot drop each other's files.
//!
//! Every temporary (file or directory) is named `.ranklab-<pid>-<random>.tmp` and lives only
//! inside one call of [`write_with`] or [`write_dir`], each of which holds a shared hold on a
//! process-wide gate while it runs. [`quiesce`] (called by the harness's SIGINT/SIGTERM/SIGHUP/
//! SIGQUIT watcher before the process ends) takes the gate exclusively: it waits for the writes
//! under way to finish (each one then has removed or renamed its temporary) and keeps every new
//! one from starting, so an interrupted run leaves no temporary, and a directory is never
//! swapped in half-written. (Removing a live temporary from the watcher instead, which was tried,
//! races the writer: it recreates folders in, or swaps in, a temporary being deleted.) A
//! temporary of a process that no longer runs (SIGKILL) is swept by the next writer of its
//! directory ([`crate::leftovers`]).

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{RwLock, RwLockReadGuard};
use std::time::Duration;

use crate::{Error, Result};

/// Held shared by every write while its temporary exists, exclusively by [`quiesce`].
static GATE: RwLock<()> = RwLock::new(());

/// A write's shared hold on [`GATE`] (poisoning is irrelevant: the gate guards no data).
fn writing() -> RwLockReadGuard<'static, ()> {
    GATE.read().unwrap_or_else(|p| p.into_inner())
}

/// The name prefix of this process's temporaries: `.ranklab-<pid>-`.
fn prefix() -> String {
    format!(".ranklab-{}-", std::process::id())
}

/// Waits (at most `patience`) until no atomic write of this process is under way, then keeps
/// every later one from starting for as long as the process lives: for the signal watcher, just
/// before it ends the process, so that the process leaves no temporary behind. Returns whether
/// the writes under way finished in time (if not, their temporaries are left for the next run's
/// sweep, and nothing is half-replaced either way: a temporary is only ever renamed whole).
pub fn quiesce(patience: Duration) -> bool {
    // A blocked exclusive request also holds back new shared ones (the standard library's
    // lock prefers writers on Linux), so back-to-back writes cannot starve it; it is made on a
    // thread of its own so that the wait can end after `patience`.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let g = GATE.write().unwrap_or_else(|p| p.into_inner());
        std::mem::forget(g);
        let _ = tx.send(());
    });
    rx.recv_timeout(patience).is_ok()
}

/// The error of a temporary that could not be made in `dir`: named by the folder, not by the
/// temporary's random name, and when the folder does not let files be made (permissions, an
/// immutable or read-only file system) with what to do.
fn cannot_create_in(dir: &Path, e: std::io::Error) -> Error {
    // tempfile appends `at path "<the temporary>"`; the operating system's own words are kept.
    let text = e.to_string();
    let said = text.split(" at path \"").next().unwrap_or_default();
    let denied = matches!(
        e.kind(),
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
    );
    let message = match denied {
        true => format!(
            "cannot create a file in this folder ({said}): make it writable, or have ranklab \
             write elsewhere (--reports DIR for reports, RANKLAB_CACHE for the cache)"
        ),
        false => format!("cannot create a file in this folder ({said})"),
    };
    Error::io(dir, std::io::Error::new(e.kind(), message))
}

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
    let prefix = prefix();
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o644));
    }
    let _writing = writing();
    let tmp = builder
        .tempfile_in(dir)
        .map_err(|e| cannot_create_in(dir, e))?;
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

/// Replaces `files` (paths relative to `dir`, with their bytes) in the directory `dir` as one
/// step, keeping the directory's other files; creates `dir` if missing. When a path appears
/// more than once the last bytes win. Nothing of the new content is visible until every file
/// is written and synced; on any error (or a kill) `dir` is left as it was. A listed file whose
/// bytes equal the file already at its path is kept (linked, like the unlisted ones) rather than
/// written and synced again: a warm run that renders the same reports syncs nothing.
pub fn write_dir<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = (&'a Path, &'a [u8])>,
) -> Result<()> {
    write_dir_checked(dir, files, || Ok(()))
}

/// [`write_dir`], after `check` passes under the directory's lock (nothing written when it
/// fails): for a file of `dir` read at the start of a long run and rewritten at its end, a check
/// that it still holds what was read, so that another run's write in between is not replaced.
pub fn write_dir_checked<'a>(
    dir: &Path,
    files: impl IntoIterator<Item = (&'a Path, &'a [u8])>,
    check: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let parent = match dir.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    crate::leftovers::sweep_once(parent);
    let _lock = lock_dir(parent)?;
    check()?;
    let new: BTreeMap<&Path, &[u8]> = files.into_iter().collect();
    // Declared before `tmp`, so released after `tmp`'s drop deletes the previous content.
    let _writing = writing();
    let tmp = tempfile::Builder::new()
        .prefix(&prefix())
        .suffix(".tmp")
        .tempdir_in(parent)
        .map_err(|e| cannot_create_in(parent, e))?;
    let exists = match std::fs::symlink_metadata(dir) {
        Ok(m) if m.is_dir() => true,
        Ok(_) => {
            return Err(Error::io(
                dir,
                std::io::Error::other("exists and is not a directory"),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(e) => return Err(Error::io(dir, e)),
    };
    if exists {
        link_tree(dir, tmp.path(), Path::new(""), &new)?;
    }
    for (rel, bytes) in &new {
        let path = tmp.path().join(rel);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| Error::io(dir.join(rel), e))?;
        }
        let old = dir.join(rel);
        if exists && holds(&old, bytes) && std::fs::hard_link(&old, &path).is_ok() {
            // Unchanged: the file already there (written and synced by an earlier write) is
            // kept, as the files not listed are, and not written and synced again.
            continue;
        }
        let mut f = create_file(&path).map_err(|e| Error::io(dir.join(rel), e))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .map_err(|e| Error::io(dir.join(rel), e))?;
    }
    if exists {
        // `tmp` now holds the previous content and is deleted when dropped.
        swap(tmp.path(), dir)?;
    } else {
        std::fs::rename(tmp.path(), dir).map_err(|e| Error::io(dir, e))?;
        let _ = tmp.keep();
    }
    Ok(())
}

/// Whether `path` is a regular file holding exactly `bytes` (false when it cannot be read).
fn holds(path: &Path, bytes: &[u8]) -> bool {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() && m.len() == bytes.len() as u64 => {
            std::fs::read(path).is_ok_and(|b| b == bytes)
        }
        _ => false,
    }
}

/// Hard-links (copies, where links fail) every file under `from/rel` that `skip` does not
/// replace into `to/rel`, recreating subdirectories; ranklab's own temporaries are left out.
fn link_tree(from: &Path, to: &Path, rel: &Path, skip: &BTreeMap<&Path, &[u8]>) -> Result<()> {
    let src = from.join(rel);
    let entries = std::fs::read_dir(&src).map_err(|e| Error::io(&src, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&src, e))?;
        let name = entry.file_name();
        if crate::leftovers::is_temporary(&name.to_string_lossy()) {
            continue;
        }
        let r = rel.join(&name);
        let kind = entry.file_type().map_err(|e| Error::io(entry.path(), e))?;
        if kind.is_dir() {
            let d = to.join(&r);
            std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
            link_tree(from, to, &r, skip)?;
        } else if !skip.contains_key(r.as_path()) {
            let (a, b) = (entry.path(), to.join(&r));
            if std::fs::hard_link(&a, &b).is_err() {
                std::fs::copy(&a, &b).map_err(|e| Error::io(&a, e))?;
            }
        }
    }
    Ok(())
}

fn create_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o644);
    }
    o.open(path)
}

/// Exchanges the directories `a` and `b` atomically where the system can (Linux, macOS);
/// elsewhere, or on a file system that refuses the exchange, `b` is moved aside to `a`'s name
/// after `a` moved in (two renames: a kill between them leaves `b`'s old content at the
/// temporary name).
fn swap(a: &Path, b: &Path) -> Result<()> {
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
            Ok(()) => return Ok(()),
            Err(e) if e == rustix::io::Errno::INVAL || e == rustix::io::Errno::NOSYS => {}
            Err(e) => return Err(Error::io(b, e.into())),
        }
    }
    let aside = a.with_extension("old.tmp");
    std::fs::rename(b, &aside).map_err(|e| Error::io(b, e))?;
    std::fs::rename(a, b).map_err(|e| Error::io(b, e))?;
    std::fs::rename(&aside, a).map_err(|e| Error::io(a, e))?;
    Ok(())
}

/// Takes the advisory exclusive lock on the directory `dir` (blocking); released when the
/// returned handle is dropped. Where a directory cannot be opened as a file (Windows), no lock.
/// Also for a read-merge-rewrite of one file of `dir` (the harness's `judgments.yaml`): a lock
/// on the directory leaves no lock file behind, and survives the rename that replaces the file.
pub fn lock_dir(dir: &Path) -> Result<Option<std::fs::File>> {
    let Ok(f) = std::fs::File::open(dir) else {
        return Ok(None);
    };
    fs4::fs_std::FileExt::lock_exclusive(&f).map_err(|e| Error::io(dir, e))?;
    Ok(Some(f))
}

#[cfg(test)]
mod tests {
    /// A folder that lets no file be made gives one message naming the folder (not the
    /// temporary's random name) and what to do. Oracle: the message the operating system gave,
    /// as tempfile reports it (its words then ` at path "<the temporary>"`), written here by hand;
    /// and, where `chattr` works (root on ext4 or tmpfs), a real immutable folder.
    #[test]
    fn a_folder_that_refuses_files_is_named_with_what_to_do() {
        let e = std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "Permission denied (os error 13) at path \"/r/.ranklab-7-abc.tmp\"",
        );
        let said = super::cannot_create_in(std::path::Path::new("/r"), e).to_string();
        assert_eq!(
            said,
            "/r: cannot create a file in this folder (Permission denied (os error 13)): make it \
             writable, or have ranklab write elsewhere (--reports DIR for reports, RANKLAB_CACHE \
             for the cache)"
        );
        let dir = tempfile::tempdir().unwrap();
        let locked = dir.path().join("locked");
        std::fs::create_dir(&locked).unwrap();
        let chattr = |flag: &str| {
            std::process::Command::new("chattr")
                .args([flag, locked.to_str().unwrap()])
                .output()
                .is_ok_and(|o| o.status.success())
        };
        if !chattr("+i") {
            eprintln!("chattr +i is not available here: only the message's form was checked");
            return;
        }
        let err = super::write(&locked.join("out.md"), b"x")
            .unwrap_err()
            .to_string();
        let dir_err = super::write_dir(&locked.join("sub"), [])
            .unwrap_err()
            .to_string();
        assert!(chattr("-i"));
        for err in [err, dir_err] {
            assert!(
                err.starts_with(&format!(
                    "{}: cannot create a file in this folder (",
                    locked.display()
                )) && err.contains("make it writable")
                    && !err.contains(".ranklab-"),
                "{err}"
            );
        }
    }

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

    fn tree(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push((
                        p.strip_prefix(dir).unwrap().to_path_buf(),
                        std::fs::read(&p).unwrap(),
                    ));
                }
            }
        }
        out.sort();
        out
    }

    fn files<'a>(
        list: &'a [(&'a str, &'a str)],
    ) -> impl Iterator<Item = (&'a std::path::Path, &'a [u8])> {
        list.iter()
            .map(|(p, b)| (std::path::Path::new(p), b.as_bytes()))
    }

    fn owned(list: &[(&str, &str)]) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        list.iter()
            .map(|(p, b)| (p.into(), b.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn write_dir_replaces_the_listed_files_keeps_the_others_and_leaves_no_temporary() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("reports/p");
        super::write_dir(
            &dir,
            files(&[
                ("e.md", "one"),
                ("runs/a.trec", "a1"),
                ("runs/b.trec", "b1"),
            ]),
        )
        .unwrap();
        // A second writer of part of the directory (another experiment file): its files
        // replace theirs, the rest stay; the last of two entries for one path wins.
        super::write_dir(
            &dir,
            files(&[
                ("runs/a.trec", "a0"),
                ("f.md", "two"),
                ("runs/a.trec", "a2"),
            ]),
        )
        .unwrap();
        assert_eq!(
            tree(&dir),
            owned(&[
                ("e.md", "one"),
                ("f.md", "two"),
                ("runs/a.trec", "a2"),
                ("runs/b.trec", "b1")
            ])
        );
        let names: Vec<_> = std::fs::read_dir(root.path().join("reports"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("p")]);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode();
            assert_ne!(
                mode(&dir.join("f.md")) & 0o077,
                0,
                "a report file is private"
            );
            assert_ne!(mode(&dir) & 0o077, 0, "the report directory is private");
        }
    }

    #[test]
    fn a_failed_write_dir_leaves_the_previous_directory_whole() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("p");
        super::write_dir(&dir, files(&[("e.md", "old"), ("runs/a.trec", "old a")])).unwrap();
        let before = tree(&dir);
        // `x` is written as a file, then `x/y` cannot be: the write fails after new files of
        // the run were already written (into the temporary directory).
        let err = super::write_dir(
            &dir,
            files(&[
                ("e.md", "new"),
                ("runs/a.trec", "new a"),
                ("x", "f"),
                ("x/y", "g"),
            ]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("x/y"), "{err}");
        assert_eq!(tree(&dir), before);
        let names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("p")], "temporary left");
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

    /// A file listed with the bytes it already holds is kept (the same inode, linked into the
    /// new directory like an unlisted file) instead of written and synced again; a file listed
    /// with other bytes is a new file. The oracle is the file system's inode numbers.
    #[test]
    fn write_dir_keeps_an_unchanged_file_and_rewrites_a_changed_one() {
        use std::os::unix::fs::MetadataExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("p");
        let (same, changed) = (
            std::path::Path::new("same.md"),
            std::path::Path::new("sub/changed.md"),
        );
        super::write_dir(&dir, [(same, &b"kept"[..]), (changed, &b"old"[..])]).unwrap();
        let ino = |rel: &std::path::Path| std::fs::metadata(dir.join(rel)).unwrap().ino();
        let (same0, changed0) = (ino(same), ino(changed));
        super::write_dir(&dir, [(same, &b"kept"[..]), (changed, &b"new"[..])]).unwrap();
        assert_eq!(std::fs::read(dir.join(same)).unwrap(), b"kept");
        assert_eq!(std::fs::read(dir.join(changed)).unwrap(), b"new");
        assert_eq!(ino(same), same0, "an unchanged file was written again");
        assert_ne!(ino(changed), changed0, "a changed file kept its old inode");
        let names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["p"], "a temporary was left: {names:?}");
    }
}
