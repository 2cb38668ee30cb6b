//! The suite repository's root: the nearest folder, from the current directory up, holding a
//! `ranklab.toml` or a `tasks/` folder (the walk stops at the repository's top, a folder with
//! `.git`). Default paths (`tasks`, `reports`, `reports/baseline.json`) are taken relative to it,
//! and every path a report shows is relative to it, so teammates running ranklab from different
//! folders of one repository write the same bytes. Without such a folder the root is the
//! current directory. Paths given on the command line are taken from the current directory, as
//! usual; a message that cannot read one names the absolute path it tried and, from a folder
//! other than the root, both folders ([`tried`]).

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

/// When no folder from the current directory up holds `ranklab.toml` or `tasks/` (ranklab runs
/// at a monorepo's top, say): where ranklab looked and how to point it at the project; None
/// when the root was found.
pub fn not_found_hint() -> Option<String> {
    let cwd = std::env::current_dir().ok()?;
    not_found_hint_from(&cwd)
}

fn not_found_hint_from(cwd: &Path) -> Option<String> {
    if find(cwd).is_some() {
        return None;
    }
    let top = cwd.ancestors().find(|d| d.join(".git").exists());
    let upto = match top {
        Some(t) if t == cwd => format!("in {} (the repository's top)", cwd.display()),
        Some(t) => format!(
            "from {} up to the repository's top {}",
            cwd.display(),
            t.display()
        ),
        None => format!("from {} up to /", cwd.display()),
    };
    Some(format!(
        "no ranklab project here: ranklab looked for a folder holding ranklab.toml or tasks/ {upto} and found none, so it read defaults from {}. Run ranklab inside the project (`cd path/to/project`), or name its files (`--baseline path/to/project/reports/baseline.json --tasks path/to/project/tasks`), or put an empty ranklab.toml in the project's folder",
        cwd.display()
    ))
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

/// `path` as given on the command line, with a bare file name made explicit: `suite.yaml`
/// becomes `./suite.yaml`, whose folder is `.` (the folder of a bare name is the empty path,
/// which cannot be listed). Anything else is returned as it is.
pub fn explicit(path: &Path) -> PathBuf {
    if path.is_relative() && path.parent() == Some(Path::new("")) {
        Path::new(".").join(path)
    } else {
        path.to_path_buf()
    }
}

/// The folder of the file `path`: its parent, or `.` for a bare file name.
pub fn dir_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// What a "cannot read PATH" message adds after the path: the absolute path tried (when `path`
/// is relative) and, when ranklab runs in a folder other than the root, how paths were resolved
/// (see [`where_from`]). Empty for an absolute path read from the root.
pub fn tried(path: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    tried_from(path, cwd.as_deref(), root())
}

fn tried_from(path: &Path, cwd: Option<&Path>, root: &Path) -> String {
    let mut parts = Vec::new();
    if let (true, Some(cwd)) = (path.is_relative(), cwd) {
        let abs: PathBuf = cwd
            .components()
            .chain(
                path.components()
                    .filter(|c| *c != std::path::Component::CurDir),
            )
            .collect();
        parts.push(format!("tried {}", abs.display()));
    }
    if let Some(w) = cwd.and_then(|c| where_from(c, root)) {
        parts.push(w);
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

/// When `cwd` is not the root: which paths resolve against which folder.
fn where_from(cwd: &Path, root: &Path) -> Option<String> {
    (cwd != root).then(|| {
        format!(
            "ranklab runs in {}: paths given on the command line are read from there, default paths (tasks, reports) from the repository root {}",
            cwd.display(),
            root.display()
        )
    })
}

/// A path as shown in reports: relative to the suite repository's root ([`root`]) when it is
/// below it, so the same suite run from any folder of the repository writes the same bytes.
pub fn shown(path: &Path) -> String {
    let root = root();
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let rel = abs
        .strip_prefix(root)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| abs.clone());
    normalize(&rel).display().to_string()
}

fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 41: at a monorepo's top (no ranklab.toml, no tasks/) the gate invited a baseline
    /// in the wrong place; the hint says where ranklab looked and how to point it at the
    /// project. With a marker there is no hint.
    #[test]
    fn at_a_monorepo_top_the_hint_says_where_ranklab_looked() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("mono");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("services/search/tasks")).unwrap();
        let hint = not_found_hint_from(&repo).expect("no marker at the top");
        assert!(
            hint.contains(&format!("in {} (the repository's top)", repo.display())),
            "{hint}"
        );
        assert!(hint.contains("ranklab.toml or tasks/"), "{hint}");
        assert!(
            hint.contains("--baseline path/to/project/reports/baseline.json"),
            "{hint}"
        );
        std::fs::create_dir_all(repo.join("docs")).unwrap();
        let below = not_found_hint_from(&repo.join("docs")).unwrap();
        assert!(
            below.contains(&format!("up to the repository's top {}", repo.display())),
            "{below}"
        );
        assert_eq!(not_found_hint_from(&repo.join("services/search")), None);
    }

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

    #[test]
    fn a_bare_file_name_is_made_explicit_and_its_folder_is_dot() {
        assert_eq!(explicit(Path::new("suite.yaml")), Path::new("./suite.yaml"));
        for kept in ["./suite.yaml", "tasks/kb/suite.yaml", "/abs/suite.yaml"] {
            assert_eq!(explicit(Path::new(kept)), Path::new(kept));
        }
        assert_eq!(Path::new("suite.yaml").parent(), Some(Path::new("")));
        assert_eq!(dir_of(Path::new("suite.yaml")), Path::new("."));
        assert_eq!(
            dir_of(Path::new("tasks/kb/suite.yaml")),
            Path::new("tasks/kb")
        );
    }

    #[test]
    fn tried_names_the_absolute_path_and_from_a_subfolder_the_root() {
        let (root, sub) = (Path::new("/repo"), Path::new("/repo/tasks/kb"));
        assert_eq!(
            tried_from(Path::new("./suite.yaml"), Some(root), root),
            " (tried /repo/suite.yaml)"
        );
        assert_eq!(tried_from(Path::new("/x/suite.yaml"), Some(root), root), "");
        let t = tried_from(Path::new("tasks/kb"), Some(sub), root);
        assert!(
            t.starts_with(" (tried /repo/tasks/kb/tasks/kb; ranklab runs in /repo/tasks/kb:"),
            "{t}"
        );
        assert!(
            t.contains("default paths (tasks, reports) from the repository root /repo)"),
            "{t}"
        );
    }
}
