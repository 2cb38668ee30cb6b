//! Temporary files left by killed runs.
//!
//! Every file ranklab writes goes through a temporary file in the target's directory that is
//! renamed into place; a process killed between creating and renaming it (SIGKILL, power loss)
//! leaves the temporary behind; a report directory written as a whole
//! ([`crate::atomic::write_dir`]) leaves a temporary directory of the same name scheme. Writers sweep their directory once per process: a temporary of
//! ranklab's whose last change is older than [`STALE_AFTER`] is removed. A live writer touches
//! its temporary within seconds of creating it, so a concurrent run's file is never taken.
//! A temporary named after its process (`.ranklab-<pid>-<random>.tmp`, as [`crate::atomic`]
//! names them) is removed at once when that process no longer runs (on Linux, where
//! `/proc/<pid>` tells): the next run cleans up after a killed one, whatever its age.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Age after which a temporary file is considered abandoned.
pub const STALE_AFTER: Duration = Duration::from_secs(3600);

/// Directories already swept by this process.
static SWEPT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);

/// Whether `name` is one of ranklab's temporaries (a file or a directory): `.ranklab-*.tmp`,
/// the one scheme of [`crate::atomic`].
pub fn is_temporary(name: &str) -> bool {
    name.strip_prefix(".ranklab-")
        .and_then(|n| n.strip_suffix(".tmp"))
        .is_some_and(|rest| !rest.is_empty())
}

/// Removes ranklab's temporaries in `dir` (files, and directories with everything in them)
/// older than `max_age`, returning how many went.
/// Errors (a file that vanished meanwhile, no permission) are ignored: sweeping is a courtesy.
pub fn sweep(dir: &Path, max_age: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !is_temporary(&name.to_string_lossy()) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() && !meta.is_dir() {
            continue;
        }
        let orphan = owner_gone(&name.to_string_lossy());
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        if age < max_age && !orphan {
            continue;
        }
        let gone = if meta.is_dir() {
            std::fs::remove_dir_all(entry.path())
        } else {
            std::fs::remove_file(entry.path())
        };
        if gone.is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether `name` is a temporary of a process that no longer runs: `.ranklab-<pid>-...tmp` with
/// a pid not this process's and no `/proc/<pid>` (Linux; elsewhere never: age decides).
fn owner_gone(name: &str) -> bool {
    let Some(pid) = name
        .strip_prefix(".ranklab-")
        .and_then(|r| r.split_once('-'))
        .and_then(|(p, _)| p.parse::<u32>().ok())
    else {
        return false;
    };
    if pid == std::process::id() || !cfg!(target_os = "linux") {
        return false;
    }
    let proc = Path::new("/proc");
    proc.join("self").exists() && !proc.join(pid.to_string()).exists()
}

/// [`sweep`] with [`STALE_AFTER`], at most once per directory per process.
pub fn sweep_once(dir: &Path) {
    let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    {
        let mut swept = SWEPT.lock().unwrap_or_else(|p| p.into_inner());
        if !swept.get_or_insert_with(HashSet::new).insert(key) {
            return;
        }
    }
    sweep(dir, STALE_AFTER);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_temporaries_go_fresh_ones_and_other_files_stay() {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        for n in [
            ".ranklab-abc.tmp",
            ".ranklab-x1y2.tmp",
            "report.md",
            ".hidden",
            "a.tmp",
            ".notes.tmp",
            ".x.ce.123.tmp",
            ".ranklab-.tmp",
        ] {
            std::fs::write(p(n), b"x").unwrap();
        }
        // Nothing is old yet.
        assert_eq!(sweep(dir.path(), Duration::from_secs(3600)), 0);
        // Everything is old now: only the two temporaries go.
        assert_eq!(sweep(dir.path(), Duration::ZERO), 2);
        for n in [
            "report.md",
            ".hidden",
            "a.tmp",
            ".notes.tmp",
            ".x.ce.123.tmp",
            ".ranklab-.tmp",
        ] {
            assert!(p(n).exists(), "{n} was removed");
        }
        assert!(!p(".ranklab-abc.tmp").exists() && !p(".ranklab-x1y2.tmp").exists());
    }

    #[test]
    fn a_fresh_temporary_of_a_process_that_ended_goes_a_running_ones_stays() {
        if !Path::new("/proc/self").exists() {
            return; // age alone decides where /proc does not tell which processes run
        }
        // A child that has exited and been waited for: its pid runs nothing now.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join(format!(".ranklab-{dead}-abc.tmp"));
        let mine = dir
            .path()
            .join(format!(".ranklab-{}-abc.tmp", std::process::id()));
        let parent = dir.path().join(".ranklab-1-abc.tmp"); // pid 1 (init) always runs
        for p in [&gone, &mine, &parent] {
            std::fs::create_dir_all(p.join("runs")).unwrap();
        }
        assert_eq!(sweep(dir.path(), Duration::from_secs(3600)), 1);
        assert!(!gone.exists() && mine.exists() && parent.exists());
    }

    #[test]
    fn an_old_temporary_directory_goes_with_its_content_a_fresh_one_stays() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(".ranklab-old.tmp");
        let fresh = dir.path().join(".ranklab-new.tmp");
        let kept = dir.path().join("report");
        for d in [&old, &fresh, &kept] {
            std::fs::create_dir_all(d.join("runs")).unwrap();
            std::fs::write(d.join("runs/a.trec"), b"x").unwrap();
        }
        let two_hours_ago = SystemTime::now() - Duration::from_secs(7200);
        std::fs::File::open(&old)
            .unwrap()
            .set_modified(two_hours_ago)
            .unwrap();
        assert_eq!(sweep(dir.path(), Duration::from_secs(3600)), 1);
        assert!(!old.exists());
        assert!(fresh.join("runs/a.trec").exists() && kept.join("runs/a.trec").exists());
    }
}
