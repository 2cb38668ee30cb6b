//! The module docs cannot drift from the tree: every top-level module of each crate is in the
//! module list of its `lib.rs` doc comment, and every module file (`foo.rs`, `foo/mod.rs`, nested
//! ones) is named in ARCHITECTURE.md.
//!
//! Oracle: the source tree itself, read independently of the docs: a module file is a `.rs`
//! file that its parent (`lib.rs`, `foo.rs` or `foo/mod.rs`) declares with `mod name;`, unless
//! that declaration is `#[cfg(test)]` (the `tests.rs` files). The finder runs on a fixture tree
//! too, so it provably reports a missing module and stays silent on a complete one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One module file of a crate.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ModuleFile {
    /// The crate's folder (`engine`, `harness`).
    krate: String,
    /// Path under `src/`, with `/`: `tune/scorer.rs`, `tune/mod.rs`.
    rel: String,
}

impl ModuleFile {
    /// How ARCHITECTURE.md may name it: the path under `src/` (a `foo/mod.rs` as `foo/`, the
    /// folder), bare, or with `src/` or `<crate>/src/` in front.
    fn names(&self) -> Vec<String> {
        let short = match self.rel.strip_suffix("/mod.rs") {
            Some(dir) => format!("{dir}/"),
            None => self.rel.clone(),
        };
        let mut out = Vec::new();
        for p in [short.as_str(), self.rel.as_str()] {
            out.push(p.to_string());
            out.push(format!("src/{p}"));
            out.push(format!("{}/src/{p}", self.krate));
        }
        out
    }

    /// The top-level module it belongs to (`tune` for `tune/scorer.rs`, `atomic` for `atomic.rs`).
    fn top(&self) -> &str {
        let first = self.rel.split('/').next().unwrap_or(&self.rel);
        first.strip_suffix(".rs").unwrap_or(first)
    }

    /// The crate-qualified path, as reported.
    fn path(&self) -> String {
        format!("{}/src/{}", self.krate, self.rel)
    }
}

/// True when `source` declares `mod name;` (any visibility) without `#[cfg(test)]` on it.
/// `None` when it does not declare it at all.
fn declared(source: &str, name: &str) -> Option<bool> {
    let mut test_only = false;
    for line in source.lines() {
        let t = line.trim();
        if t.starts_with("#[") {
            test_only |= t.replace(' ', "").starts_with("#[cfg(test)]");
            continue;
        }
        let decl = t
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ");
        if decl == format!("mod {name};") {
            return Some(!test_only);
        }
        if !t.is_empty() && !t.starts_with("//") {
            test_only = false;
        }
    }
    None
}

/// Every module file of the crate whose `src/` is `src` (the crate's folder named `krate`):
/// walked from `lib.rs` through the `mod` declarations, skipping `#[cfg(test)]` ones.
fn module_files(krate: &str, src: &Path) -> Vec<ModuleFile> {
    let mut out = Vec::new();
    walk(krate, src, &src.join("lib.rs"), src, &mut out);
    out.sort();
    out
}

/// The module files declared by `parent` (a file whose child modules live in `dir`).
fn walk(krate: &str, src: &Path, parent: &Path, dir: &Path, out: &mut Vec<ModuleFile>) {
    let Ok(source) = std::fs::read_to_string(parent) else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut children: Vec<(String, PathBuf, PathBuf)> = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if path.is_dir() && path.join("mod.rs").is_file() {
            children.push((name, path.join("mod.rs"), path.clone()));
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if path == parent || stem == "lib" || stem == "main" || stem == "mod" {
                continue;
            }
            children.push((stem.to_string(), path.clone(), dir.join(stem)));
        }
    }
    for (name, file, child_dir) in children {
        if declared(&source, &name) != Some(true) {
            continue;
        }
        let rel = file
            .strip_prefix(src)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        out.push(ModuleFile {
            krate: krate.to_string(),
            rel,
        });
        walk(krate, src, &file, &child_dir, out);
    }
}

/// Top-level modules missing from the `//!` module list of `lib_rs`: each must open an item of
/// it, as a link ``- [`name`]`` (a public module) or a code span ``- `name` `` (a private one,
/// which public docs cannot link to).
fn missing_from_lib_doc(lib_rs: &str, files: &[ModuleFile]) -> Vec<String> {
    let items: Vec<&str> = lib_rs
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//!"))
        .filter_map(|l| l.trim_start().strip_prefix("- "))
        .collect();
    let listed = |t: &str| {
        let (link, span) = (format!("[`{t}`]"), format!("`{t}`"));
        items
            .iter()
            .any(|i| i.starts_with(&link) || i.starts_with(&span))
    };
    let tops: BTreeSet<&str> = files.iter().map(ModuleFile::top).collect();
    tops.into_iter()
        .filter(|t| !listed(t))
        .map(str::to_string)
        .collect()
}

/// Module files that `architecture` does not name (see [`ModuleFile::names`]), as
/// `<crate>/src/<path>`. A name is a whole path token: `report/atomic.rs` does not name
/// `atomic.rs`.
fn missing_from_architecture(architecture: &str, files: &[ModuleFile]) -> Vec<String> {
    let tokens: BTreeSet<&str> = architecture
        .split(|c: char| !(c.is_ascii_alphanumeric() || "_./-".contains(c)))
        .map(|t| t.trim_end_matches('.'))
        .filter(|t| !t.is_empty())
        .collect();
    files
        .iter()
        .filter(|f| !f.names().iter().any(|n| tokens.contains(n.as_str())))
        .map(ModuleFile::path)
        .collect()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the harness sits in the workspace")
        .to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const CRATES: [&str; 4] = ["engine", "evaluator", "harness", "input"];

#[test]
fn every_top_level_module_is_in_its_crates_lib_rs_module_list() {
    let mut missing = Vec::new();
    for krate in CRATES {
        let src = root().join(krate).join("src");
        let files = module_files(krate, &src);
        // ranklab-input is one file and its `suggest.rs`; the others have many.
        let least = if krate == "input" { 1 } else { 10 };
        assert!(files.len() >= least, "{krate}: found only {files:?}");
        for m in missing_from_lib_doc(&read(&src.join("lib.rs")), &files) {
            missing.push(format!("{krate}/src/lib.rs misses [`{m}`]"));
        }
    }
    assert!(
        missing.is_empty(),
        "modules missing from the lib.rs module lists:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_module_file_is_named_in_architecture_md() {
    let architecture = read(&root().join("ARCHITECTURE.md"));
    let mut files = Vec::new();
    for krate in CRATES {
        files.extend(module_files(krate, &root().join(krate).join("src")));
    }
    // A path under src/ in two crates would be named ambiguously by its bare form: such a file
    // must be named with its crate (`evaluator/src/root.rs`).
    let mut seen = BTreeSet::new();
    let twice: BTreeSet<String> = files
        .iter()
        .filter(|f| !seen.insert(f.rel.clone()))
        .map(|f| f.rel.clone())
        .collect();
    let (shared, unique): (Vec<ModuleFile>, Vec<ModuleFile>) =
        files.into_iter().partition(|f| twice.contains(&f.rel));
    let mut missing = missing_from_architecture(&architecture, &unique);
    missing.extend(
        shared
            .iter()
            .filter(|f| !architecture.contains(&format!("`{}`", f.path())))
            .map(|f| format!("{} (in two crates: name it with its crate)", f.path())),
    );
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md does not name these module files (write each path under src/, e.g. \
         `tune/scorer.rs`, or `tune/` for a `mod.rs`):\n{}",
        missing.join("\n")
    );
}

/// A fixture crate: `lib.rs` declares `a` and `b` (and test-only `tests`) and lists `a` as a link,
/// `b` as a code span; `b/mod.rs` declares `c` and a test-only `t`; `stray.rs` is declared
/// nowhere.
fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path().join("src");
    let write = |rel: &str, text: &str| {
        let p = src.join(rel);
        std::fs::create_dir_all(p.parent().expect("has a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write(
        "lib.rs",
        "//! - [`a`]: a.\n//! - `b`: b, private.\n\npub mod a;\nmod b;\n#[cfg(test)]\nmod tests;\n",
    );
    write("a.rs", "//! a\n");
    write("tests.rs", "//! test-only\n");
    write("stray.rs", "//! declared nowhere\n");
    write(
        "b/mod.rs",
        "//! b\npub(crate) mod c;\n#[cfg(test)]\n// the unit tests\nmod t;\n",
    );
    write("b/c.rs", "//! c\n");
    write("b/t.rs", "//! test-only\n");
    dir
}

#[test]
fn the_finder_walks_declared_modules_and_skips_test_only_ones() {
    let dir = fixture();
    let files = module_files("fix", &dir.path().join("src"));
    let rels: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
    assert_eq!(rels, ["a.rs", "b/c.rs", "b/mod.rs"]);
}

#[test]
fn a_lib_rs_list_missing_a_module_is_reported_and_a_complete_one_is_not() {
    let dir = fixture();
    let src = dir.path().join("src");
    let files = module_files("fix", &src);
    let complete = read(&src.join("lib.rs"));
    assert!(missing_from_lib_doc(&complete, &files).is_empty());
    let without_b = complete.replace("//! - `b`: b, private.\n", "");
    assert_eq!(missing_from_lib_doc(&without_b, &files), ["b"]);
    // Named in passing, not as an item of the list, does not count.
    let in_passing = complete.replace("//! - `b`: b, private.\n", "//! See also `b`.\n");
    assert_eq!(missing_from_lib_doc(&in_passing, &files), ["b"]);
}

#[test]
fn an_architecture_md_missing_a_module_file_is_reported_and_a_complete_one_is_not() {
    let dir = fixture();
    let files = module_files("fix", &dir.path().join("src"));
    let complete = "Modules: `a.rs`, `fix/src/b/` (the folder) and `b/c.rs`.";
    assert!(missing_from_architecture(complete, &files).is_empty());
    let without_c = "Modules: `a.rs`, `fix/src/b/` (the folder) and `c.rs`.";
    assert_eq!(
        missing_from_architecture(without_c, &files),
        ["fix/src/b/c.rs"]
    );
    // A longer path that ends in a module's path does not name it.
    let only_longer = "Modules: `x/a.rs`, `b/mod.rs`, `b/c.rs`.";
    assert_eq!(
        missing_from_architecture(only_longer, &files),
        ["fix/src/a.rs"]
    );
}

/// The folders under `src` that have a `foo.rs` beside them (the style ARCHITECTURE.md rules
/// out: a module with submodules is `foo/mod.rs`).
fn file_beside_folder(src: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![src.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                if path.with_extension("rs").is_file() {
                    out.push(path.with_extension("rs"));
                }
                todo.push(path);
            }
        }
    }
    out.sort();
    out
}

/// One module-file style in every crate (ARCHITECTURE.md): no `foo.rs` beside a `foo/` folder.
/// Oracle: the tree itself; the finder is checked on a fixture with one of each.
#[test]
fn every_module_with_submodules_is_a_folder_with_mod_rs() {
    let fixture = tempfile::tempdir().unwrap();
    let src = fixture.path();
    for (p, s) in [
        ("a.rs", ""),
        ("a/x.rs", ""),
        ("b/mod.rs", ""),
        ("b/y.rs", ""),
    ] {
        std::fs::create_dir_all(src.join(p).parent().unwrap()).unwrap();
        std::fs::write(src.join(p), s).unwrap();
    }
    assert_eq!(file_beside_folder(src), [src.join("a.rs")]);
    let mut mixed = Vec::new();
    for krate in CRATES {
        mixed.extend(file_beside_folder(&root().join(krate).join("src")));
    }
    assert!(
        mixed.is_empty(),
        "foo.rs beside foo/ (move it to foo/mod.rs): {mixed:?}"
    );
}
