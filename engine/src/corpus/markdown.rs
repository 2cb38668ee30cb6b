//! Markdown records: YAML front matter between `---` lines, then a body split at headings.
//!
//! Defaults for a record without front matter (or with fields left out): id = file stem,
//! title = the first `#` heading (else the id), lifecycle active, history first-class, no date,
//! no topic, no citations. See `docs/formats.md` for every field.

use std::path::Path;

use chrono::NaiveDate;
use serde::Deserialize;

use super::{Corpus, Document, History, Lifecycle, LifecycleEntry, Section};
use crate::{Error, Result};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    id: Option<String>,
    title: Option<String>,
    lifecycle: Option<Lifecycle>,
    history: Option<History>,
    updated_at: Option<NaiveDate>,
    topic: Option<String>,
    superseded_by: Option<String>,
    #[serde(default)]
    cites: Vec<String>,
    #[serde(default)]
    lifecycle_log: Vec<LifecycleEntry>,
}

/// Loads every `*.md` file of `dir` (sorted by file name), then checks cross-references.
///
/// Nothing in the folder is skipped silently. An entry that looks like a record but cannot be
/// read as one is an error naming it and what to do: a symbolic link that is dangling or cannot
/// be followed (it points to itself or loops), a record name whose extension is `.md` in
/// another case (`ledger.MD`), a `.md` entry that is not a regular file (a folder, a device).
/// Every other entry (`README.txt`, `.gitkeep`, a subfolder) is not a record: it is listed in
/// [`Corpus::not_records`] and named once per process in a note on stderr.
pub fn load_dir(dir: &Path) -> Result<Corpus> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut paths = Vec::new();
    let mut others = Vec::new();
    for e in entries {
        let p = e.map_err(|e| Error::io(dir, e))?.path();
        if is_record(&p)? {
            paths.push(p);
        } else {
            others.push(p);
        }
    }
    paths.sort();
    others.sort();
    let mut defaulted = Vec::new();
    let docs = paths
        .iter()
        .map(|p| {
            let bytes =
                crate::input::read(p, crate::input::MAX_YAML_BYTES).map_err(|e| Error::io(p, e))?;
            let (doc, had_front_matter) = parse_record_full(p, &bytes)?;
            if !had_front_matter {
                defaulted.push(doc.id.clone());
            }
            Ok(doc)
        })
        .collect::<Result<Vec<_>>>()?;
    let mut corpus = Corpus::new(dir, docs)?;
    corpus.without_front_matter = defaulted;
    check_references(&corpus)?;
    note_not_records(dir, &others);
    corpus.not_records = others;
    Ok(corpus)
}

/// Whether the folder entry `p` is a record to read (a regular file, or a link to one, named
/// `*.md`); false for an entry that is plainly not a record; an error for one that looks like a
/// record but cannot be read as one, or for a link that leads nowhere.
fn is_record(p: &Path) -> Result<bool> {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let link = std::fs::symlink_metadata(p).map_err(|e| Error::io(p, e))?;
    // Follows links; for anything else the same entry.
    let target = std::fs::metadata(p);
    if link.file_type().is_symlink() {
        let to = std::fs::read_link(p)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|_| "?".into());
        match &target {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::parse(
                    p,
                    0,
                    format!(
                        "a dangling symbolic link: its target {to} does not exist; restore the target or remove the link from the corpus folder"
                    ),
                ))
            }
            Err(e) => {
                return Err(Error::parse(
                    p,
                    0,
                    format!(
                        "a symbolic link that cannot be followed (to {to}: {e}); a link that points to itself or into a loop: remove it, or point it at a record"
                    ),
                ))
            }
            Ok(_) => {}
        }
    }
    let ext = p.extension().map(|x| x.to_string_lossy().into_owned());
    match ext.as_deref() {
        Some("md") => match target {
            Ok(m) if m.is_file() => Ok(true),
            Ok(_) => Err(Error::parse(
                p,
                0,
                "named like a record (.md) but not a regular file (a folder or a special file); records are regular .md files: rename it or move it out of the corpus folder",
            )),
            Err(e) => Err(Error::io(p, e)),
        },
        Some(x) if x.eq_ignore_ascii_case("md") => {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            Err(Error::parse(
                p,
                0,
                format!(
                    "{name:?} ends in `.{x}`, and only `.md` (lower case) names a record, so it would not be read; rename it to {stem}.md, or move it out of the corpus folder"
                ),
            ))
        }
        _ => Ok(false),
    }
}

/// Names the entries of `dir` that are not records, once per folder per process, on stderr.
fn note_not_records(dir: &Path, others: &[std::path::PathBuf]) {
    static NOTED: std::sync::Mutex<Vec<std::path::PathBuf>> = std::sync::Mutex::new(Vec::new());
    if others.is_empty() {
        return;
    }
    let mut noted = NOTED.lock().unwrap_or_else(|p| p.into_inner());
    let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if noted.contains(&key) {
        return;
    }
    noted.push(key);
    let names: Vec<String> = others
        .iter()
        .map(|p| {
            let n = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if p.is_dir() {
                format!("{n}/")
            } else {
                n
            }
        })
        .collect();
    eprintln!(
        "note: corpus {}: {} entr{} not read (only *.md files are records): {}",
        dir.display(),
        names.len(),
        if names.len() == 1 { "y is" } else { "ies are" },
        names.join(", ")
    );
}

/// Every `superseded_by`, `cites` and log `by` must name a record of the corpus.
fn check_references(corpus: &Corpus) -> Result<()> {
    for d in &corpus.docs {
        let refs = d
            .superseded_by
            .iter()
            .map(|r| (r, "superseded_by"))
            .chain(d.cites.iter().map(|r| (r, "cites")))
            .chain(
                d.lifecycle_log
                    .iter()
                    .filter_map(|e| e.by.as_ref())
                    .map(|r| (r, "lifecycle_log.by")),
            );
        for (r, field) in refs {
            if corpus.index_of(r).is_none() {
                return Err(Error::UnknownId {
                    path: d.source.clone(),
                    line: reference_line(&d.source, field, r),
                    id: r.clone(),
                    context: format!("in `{field}` of record {:?}", d.id),
                    near: crate::suggest::did_you_mean(
                        r,
                        corpus.docs.iter().map(|d| d.id.as_str()),
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The 1-based line of the file naming `id`, searched from the first line naming `field`'s
/// top-level key (0 when the file cannot be read or does not name it).
fn reference_line(path: &Path, field: &str, id: &str) -> usize {
    let text = crate::input::read_text(path).unwrap_or_default();
    let key = field.split('.').next().unwrap_or(field);
    let start = text.lines().position(|l| l.contains(key)).unwrap_or(0);
    text.lines()
        .enumerate()
        .skip(start)
        .find(|(_, l)| l.contains(id))
        .map_or(0, |(i, _)| i + 1)
}

/// Parses one record file.
pub fn parse_record(path: &Path, bytes: &[u8]) -> Result<Document> {
    parse_record_full(path, bytes).map(|(d, _)| d)
}

/// Parses one record file; the flag says whether it had front matter (false: every field took
/// its documented default).
fn parse_record_full(path: &Path, bytes: &[u8]) -> Result<(Document, bool)> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        Error::parse(path, line, "invalid UTF-8; save the file as UTF-8")
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(Error::parse(
            path,
            1,
            "empty record: a record needs front matter or a body; delete the file or write it",
        ));
    }
    let text = text.replace("\r\n", "\n");
    let (fm, body, body_line) = split_front_matter(path, &text)?;
    let had_front_matter = body_line > 1;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let id = fm.id.clone().unwrap_or(stem);
    if id.is_empty() || id.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::parse(
            path,
            2,
            format!("invalid id {id:?}: ids must be non-empty and contain no white space or control characters"),
        ));
    }
    let mut sections = split_sections(body);
    let title = fm
        .title
        .clone()
        .or_else(|| {
            sections
                .first()
                .map(|s| s.heading.clone())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| id.clone());
    for s in &mut sections {
        if s.heading.is_empty() {
            s.heading = title.clone();
        }
    }
    sections.retain(|s| !s.body.trim().is_empty() || s.heading != title);
    if sections.is_empty() {
        sections.push(Section {
            heading: title.clone(),
            body: String::new(),
        });
    }
    let lifecycle = current_lifecycle(path, &text, &fm, body_line)?;
    let doc = Document {
        id,
        title,
        lifecycle,
        history: fm.history.unwrap_or_default(),
        updated_at: fm.updated_at,
        topic: fm.topic.unwrap_or_default(),
        superseded_by: fm.superseded_by,
        cites: fm.cites,
        lifecycle_log: fm.lifecycle_log,
        sections,
        source: path.to_path_buf(),
    };
    Ok((doc, had_front_matter))
}

/// The current lifecycle: the log's last entry when there is a log (dates must ascend and
/// an explicit `lifecycle` must agree), else the `lifecycle` field.
fn current_lifecycle(
    path: &Path,
    text: &str,
    fm: &FrontMatter,
    fm_end: usize,
) -> Result<Lifecycle> {
    // Lines of the front matter; an error points at the line it finds, else the closing `---`.
    let front: Vec<&str> = text.lines().take(fm_end.saturating_sub(1)).collect();
    let line = fm_end.saturating_sub(1).max(1);
    let log_start = front
        .iter()
        .position(|l| l.starts_with("lifecycle_log:"))
        .unwrap_or(0);
    for w in fm.lifecycle_log.windows(2) {
        if w[1].date < w[0].date {
            let date = w[1].date.to_string();
            let at = (log_start..front.len())
                .rev()
                .find(|&i| front[i].contains(&date))
                .map_or(line, |i| i + 1);
            return Err(Error::parse(
                path,
                at,
                format!(
                    "lifecycle_log is out of date order ({} comes after {}); list entries oldest first",
                    w[1].date, w[0].date
                ),
            ));
        }
    }
    match (fm.lifecycle_log.last(), fm.lifecycle) {
        (Some(last), Some(l)) if last.lifecycle != l => Err(Error::parse(
            path,
            front
                .iter()
                .position(|l| l.starts_with("lifecycle:"))
                .map_or(line, |i| i + 1),
            format!(
                "lifecycle is {} but the last lifecycle_log entry says {}; the log's last entry is the current state, make them agree or drop `lifecycle`",
                l.as_str(),
                last.lifecycle.as_str()
            ),
        )),
        (Some(last), _) => Ok(last.lifecycle),
        (None, l) => Ok(l.unwrap_or_default()),
    }
}

/// Splits `---\n<yaml>\n---\n<body>`; returns the parsed front matter, the body and the
/// 1-based line where the body starts.
fn split_front_matter<'a>(path: &Path, text: &'a str) -> Result<(FrontMatter, &'a str, usize)> {
    let Some(rest) = text.strip_prefix("---\n") else {
        if let Some(close) = unopened_front_matter(text) {
            return Err(Error::parse(
                path,
                1,
                format!(
                    "this record starts with front-matter lines closed by the `---` on line {close}, but has no opening `---`; add a `---` line at the top of the file (without it the fields would be read as body text)"
                ),
            ));
        }
        return Ok((FrontMatter::default(), text, 1));
    };
    let end = rest
        .match_indices("\n---")
        .find(|(i, _)| {
            let after = &rest[i + 4..];
            after.is_empty() || after.starts_with('\n')
        })
        .map(|(i, _)| i)
        .or_else(|| rest.starts_with("---").then_some(0).map(|_| usize::MAX));
    let Some(end) = end else {
        return Err(Error::parse(
            path,
            1,
            "front matter opened with `---` is never closed; add a `---` line after it",
        ));
    };
    let (yaml, body) = if end == usize::MAX {
        ("", rest[3..].trim_start_matches('\n'))
    } else {
        (
            &rest[..end],
            rest[end + 4..]
                .strip_prefix('\n')
                .unwrap_or(&rest[end + 4..]),
        )
    };
    let fm_lines = yaml.lines().count() + 2;
    let fm: FrontMatter = if yaml.trim().is_empty() {
        FrontMatter::default()
    } else {
        crate::yaml::parse(path, 1, yaml)?
    };
    Ok((fm, body, fm_lines + 1))
}

/// Front-matter field names (a line `name:` of these marks a would-be front matter).
const FIELDS: [&str; 9] = [
    "id",
    "title",
    "lifecycle",
    "history",
    "updated_at",
    "topic",
    "superseded_by",
    "cites",
    "lifecycle_log",
];

/// When `text` opens with `key: value` lines (at least one naming a front-matter field, plus
/// indented or `- ` continuation lines) closed by a `---` line, the 1-based line of that `---`.
fn unopened_front_matter(text: &str) -> Option<usize> {
    let mut known = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_end() == "---" {
            return (i > 0 && known).then_some(i + 1);
        }
        if line.starts_with(' ') || line.starts_with('\t') || line.starts_with("- ") {
            if i == 0 {
                return None;
            }
            continue;
        }
        let key = line.split_once(':')?.0;
        if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        known |= FIELDS.contains(&key);
    }
    None
}

/// Splits a body into sections at ATX headings, ignoring `#` lines inside fenced code.
fn split_sections(body: &str) -> Vec<Section> {
    let mut sections = Vec::new();
    let mut heading = String::new();
    let mut lines: Vec<&str> = Vec::new();
    let mut in_fence = false;
    let flush = |heading: &mut String, lines: &mut Vec<&str>, out: &mut Vec<Section>| {
        let body = lines.join("\n").trim().to_string();
        if !body.is_empty() || !heading.is_empty() {
            out.push(Section {
                heading: std::mem::take(heading),
                body,
            });
        }
        lines.clear();
    };
    for line in body.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        if !in_fence {
            if let Some(h) = atx_heading(line) {
                flush(&mut heading, &mut lines, &mut sections);
                heading = h.to_string();
                continue;
            }
        }
        lines.push(line);
    }
    flush(&mut heading, &mut lines, &mut sections);
    sections
}

fn atx_heading(line: &str) -> Option<&str> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    if (1..=6).contains(&hashes) {
        let rest = &line[hashes..];
        if rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t') {
            return Some(rest.trim().trim_end_matches('#').trim());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Document> {
        parse_record(Path::new("x/rec.md"), text.as_bytes())
    }

    #[test]
    fn front_matter_and_sections() {
        let d = parse("---\nid: a\ntitle: T\nupdated_at: 2026-03-01\n---\n# T\nintro\n## One\nbody one\n## Two\nbody two\n").unwrap();
        assert_eq!(d.id, "a");
        let heads: Vec<_> = d.sections.iter().map(|s| s.heading.as_str()).collect();
        assert_eq!(heads, ["T", "One", "Two"]);
        assert_eq!(d.section_text(1), "T\nOne\nbody one");
        assert_eq!(d.lifecycle, Lifecycle::Active);
        assert_eq!(d.history, History::FirstClass);
    }

    #[test]
    fn defaults_without_front_matter() {
        let d = parse("# Hello\nworld\n").unwrap();
        assert_eq!((d.id.as_str(), d.title.as_str()), ("rec", "Hello"));
        assert_eq!(d.lifecycle, Lifecycle::Active);
    }

    #[test]
    fn crlf_and_bom_are_accepted() {
        let d = parse("\u{feff}---\r\nid: a\r\n---\r\n# T\r\nx\r\n").unwrap();
        assert_eq!(d.id, "a");
        assert_eq!(d.sections[0].body, "x");
    }

    #[test]
    fn unknown_lifecycle_lists_allowed_values_and_line() {
        let e = parse("---\nid: a\nlifecycle: retired\n---\nx\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("rec.md:3"), "{e}");
        assert!(e.contains("active") && e.contains("deprecated"), "{e}");
    }

    #[test]
    fn snapshot_is_state_at_updated_at() {
        let d = parse("---\nid: a\nupdated_at: 2026-03-10\nlifecycle_log:\n  - {date: 2026-03-10, lifecycle: active}\n  - {date: 2026-07-01, lifecycle: deprecated}\n---\nx\n").unwrap();
        assert_eq!(d.lifecycle, Lifecycle::Deprecated);
        assert_eq!(d.index_snapshot(), Lifecycle::Active);
    }

    #[test]
    fn log_out_of_order_is_an_error() {
        let e = parse("---\nid: a\nlifecycle_log:\n  - {date: 2026-07-01, lifecycle: active}\n  - {date: 2026-03-10, lifecycle: deprecated}\n---\nx\n").unwrap_err();
        assert!(e.to_string().contains("out of date order"), "{e}");
    }

    #[test]
    fn missing_opening_dashes_is_an_error_naming_file_and_fix() {
        // The report of issue 15: the fields became body text and the record turned active.
        let e = parse("id: a\nlifecycle: deprecated\ncites: [b]\n---\n# How to\nx\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x/rec.md:1"), "{e}");
        assert!(e.contains("add a `---` line at the top"), "{e}");
        assert!(e.contains("line 4"), "{e}");
    }

    #[test]
    fn never_closed_front_matter_is_an_error_naming_file_and_fix() {
        let e = parse("---\nid: a\nlifecycle: deprecated\n# How to\nx\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x/rec.md:1"), "{e}");
        assert!(e.contains("never closed; add a `---` line"), "{e}");
    }

    #[test]
    fn body_that_merely_has_a_colon_or_a_rule_stays_valid() {
        // A prose line with a colon before a thematic break is not front matter ...
        let d = parse("Note: read this first\n---\n# T\nx\n").unwrap();
        assert_eq!(d.lifecycle, Lifecycle::Active);
        // ... and neither is a heading followed by a rule.
        assert!(parse("# T\nid: a\n---\nx\n").is_ok());
    }

    #[test]
    fn records_without_front_matter_are_counted() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "---\nid: a\n---\n# A\nx\n").unwrap();
        std::fs::write(dir.path().join("b.md"), "# B\ny\n").unwrap();
        std::fs::write(dir.path().join("c.md"), "---\n---\n# C\nz\n").unwrap();
        let c = load_dir(dir.path()).unwrap();
        assert_eq!(c.without_front_matter, ["b"]);
    }

    /// A folder with two good records.
    fn two_records() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.md"), "# A\nx\n").unwrap();
        std::fs::write(dir.path().join("b.md"), "# B\ny\n").unwrap();
        dir
    }

    fn load_err(dir: &Path) -> String {
        load_dir(dir).unwrap_err().to_string()
    }

    #[test]
    fn a_dangling_link_is_an_error_naming_it() {
        let dir = two_records();
        let link = dir.path().join("c.md");
        std::os::unix::fs::symlink(dir.path().join("gone.md"), &link).unwrap();
        let e = load_err(dir.path());
        assert!(
            e.starts_with(&format!("{}: a dangling symbolic link", link.display())),
            "{e}"
        );
        assert!(e.contains("restore the target or remove the link"), "{e}");
        // Without the .md extension it is still named, not skipped.
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("nowhere", dir.path().join("notes")).unwrap();
        assert!(load_err(dir.path()).contains("notes: a dangling symbolic link"));
    }

    #[test]
    fn a_self_referencing_or_looping_link_is_an_error_naming_it() {
        let dir = two_records();
        let me = dir.path().join("me.md");
        std::os::unix::fs::symlink("me.md", &me).unwrap();
        let e = load_err(dir.path());
        assert!(
            e.starts_with(&format!(
                "{}: a symbolic link that cannot be followed",
                me.display()
            )),
            "{e}"
        );
        std::fs::remove_file(&me).unwrap();
        std::os::unix::fs::symlink("y.md", dir.path().join("x.md")).unwrap();
        std::os::unix::fs::symlink("x.md", dir.path().join("y.md")).unwrap();
        let e = load_err(dir.path());
        assert!(
            e.contains("x.md: a symbolic link that cannot be followed"),
            "{e}"
        );
        assert!(e.contains("points to itself or into a loop"), "{e}");
    }

    #[test]
    fn an_md_extension_in_another_case_is_an_error_naming_the_fix() {
        for name in ["ledger.MD", "ledger.Md", "ledger.mD"] {
            let dir = two_records();
            std::fs::write(dir.path().join(name), "# L\nz\n").unwrap();
            let e = load_err(dir.path());
            assert!(e.contains(&format!("{name}: \"{name}\" ends in `.")), "{e}");
            assert!(e.contains("rename it to ledger.md"), "{e}");
        }
    }

    #[test]
    fn a_folder_named_like_a_record_is_an_error() {
        let dir = two_records();
        std::fs::create_dir(dir.path().join("c.md")).unwrap();
        assert!(
            load_err(dir.path()).contains("c.md: named like a record (.md) but not a regular file")
        );
    }

    #[test]
    fn other_entries_are_listed_and_a_link_to_a_record_is_read() {
        let dir = two_records();
        std::fs::write(dir.path().join("README.txt"), "about").unwrap();
        std::fs::write(dir.path().join(".gitkeep"), "").unwrap();
        std::fs::create_dir(dir.path().join("drafts")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("c.md"), "# C\nw\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("c.md"), dir.path().join("c.md")).unwrap();
        let c = load_dir(dir.path()).unwrap();
        let ids: Vec<&str> = c.docs.iter().map(|d| d.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        let others: Vec<String> = c
            .not_records
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(others, [".gitkeep", "README.txt", "drafts"]);
        // The paired half: a folder of records only lists nothing.
        assert!(load_dir(two_records().path())
            .unwrap()
            .not_records
            .is_empty());
    }

    #[test]
    fn empty_file_is_an_error() {
        assert!(parse("").is_err());
    }

    #[test]
    fn headings_inside_code_fences_do_not_split() {
        let d = parse("# T\n```\n# not a heading\n```\n").unwrap();
        assert_eq!(d.sections.len(), 1);
    }
}

#[cfg(test)]
mod formats_reference {
    /// docs/formats.md names every front matter field and value (read from the serde type).
    #[test]
    fn formats_md_names_every_front_matter_field() {
        let reference = include_str!("../../../docs/formats.md");
        crate::yaml::shape::documented::<super::FrontMatter>(reference, "Corpus records", &[])
            .unwrap();
    }
}
