//! The suite repository's root: the nearest folder, from the current directory up, holding a
//! `ranklab.toml` or a `tasks/` folder (the walk stops at the repository's top, a folder with
//! `.git`). Default paths (`tasks`, `reports`, `reports/baseline.json`) are taken relative to it,
//! and every path a report shows is relative to it, so teammates running ranklab from different
//! folders of one repository write the same bytes. Without such a folder the root is the
//! current directory.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The root (computed once per process).
pub fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        find(&cwd).unwrap_or(cwd)
    })
}

/// The nearest folder from `start` up holding `ranklab.toml` or `tasks/`, not above the first
/// folder holding `.git`.
pub fn find(start: &Path) -> Option<PathBuf> {
    for dir in start.ancestors() {
        if dir.join("ranklab.toml").is_file() || dir.join("tasks").is_dir() {
            return Some(dir.to_path_buf());
        }
        if dir.join(".git").exists() {
            return None;
        }
    }
    None
}

/// `rel` under the root, shown relative to the current directory when the root is the current
/// directory (so `--help` reads `tasks`, not an absolute path).
pub fn default(rel: &str) -> PathBuf {
    let root = root();
    if std::env::current_dir().is_ok_and(|c| c == root) {
        PathBuf::from(rel)
    } else {
        root.join(rel)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_up_to_the_marker_and_stops_at_the_repository_top() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("team/suite/deep")).unwrap();
        // No marker inside the repository: no root, even if a folder above has tasks/.
        std::fs::create_dir_all(t.path().join("tasks")).unwrap();
        assert_eq!(find(&repo.join("team/suite/deep")), None);
        std::fs::write(repo.join("team/ranklab.toml"), "").unwrap();
        assert_eq!(find(&repo.join("team/suite/deep")), Some(repo.join("team")));
        std::fs::create_dir_all(repo.join("team/suite/tasks")).unwrap();
        assert_eq!(
            find(&repo.join("team/suite/deep")),
            Some(repo.join("team/suite"))
        );
    }
}
