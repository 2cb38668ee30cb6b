//! YAML input, once: the loader every YAML file of ranklab goes through (suites, experiments,
//! paired assertions, merges, judgments, pools, practice files, and the front matter of
//! Markdown records) and the one formatter of its errors.
//!
//! Before parsing, a file over [`crate::input::MAX_YAML_BYTES`] or a text nested deeper than
//! [`crate::input::MAX_YAML_DEPTH`] is refused ([`crate::input`]), so the parser never
//! recurses far.
//!
//! Errors are [`Error::Parse`] at `file:line:column`, the line and column taken from
//! `yaml_serde`'s error location (shifted by the lines before the YAML, for front matter), the
//! cause without yaml_serde's own ` at line L column C`, and what to do. One exception: for a
//! duplicate key yaml_serde points at the start of the mapping, so the line of the second
//! `key:` is looked up in the text.
//!
//! yaml_serde gives no positions for values that parse, so checks made after parsing (a
//! duplicate task id, a bad `k`) place themselves with [`Lines`], an index of the text's
//! `key: value` lines built in one pass.

pub mod shape;

use std::collections::HashMap;
use std::path::Path;

use serde::de::DeserializeOwned;

use crate::error::{Error, Result};

/// Reads `path` as UTF-8 YAML (a byte-order mark and CRLF line ends accepted) into `T`; returns
/// the value and the normalised text.
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<(T, String)> {
    let bytes =
        crate::input::read(path, crate::input::MAX_YAML_BYTES).map_err(|e| Error::io(path, e))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        Error::parse(path, line, "invalid UTF-8; save the file as UTF-8")
    })?;
    let text = text.trim_start_matches('\u{feff}').replace("\r\n", "\n");
    if text.trim().is_empty() {
        return Err(Error::parse(
            path,
            0,
            "the file is empty; see `ranklab help formats` for its fields",
        ));
    }
    Ok((parse(path, 0, &text)?, text))
}

/// Parses `text`, which starts after `line_offset` lines of `path`, into `T`. A duplicate key
/// anywhere is an error even where `T` would keep one of the two (a map).
pub fn parse<T: DeserializeOwned>(path: &Path, line_offset: usize, text: &str) -> Result<T> {
    if let Some((line, message)) = crate::input::check_yaml_depth(text) {
        return Err(Error::parse(path, line + line_offset, message));
    }
    if let Err(e) = yaml_serde::from_str::<yaml_serde::Value>(text) {
        if duplicate_key(&cause(&e)).is_some() {
            return Err(error(path, line_offset, text, e));
        }
    }
    yaml_serde::from_str(text).map_err(|e| error(path, line_offset, text, e))
}

/// The one formatter: `err`, raised on `text` (which starts after `line_offset` lines of
/// `path`), as [`Error::Parse`] at its place, with what to do.
pub fn error(path: &Path, line_offset: usize, text: &str, err: yaml_serde::Error) -> Error {
    let (line, column) = err.location().map_or((0, 0), |l| (l.line(), l.column()));
    let cause = cause(&err);
    let shift = |l: usize| if l > 0 { l + line_offset } else { 0 };
    if let Some((field, key)) = duplicate_key(&cause) {
        return Error::Parse {
            path: path.to_path_buf(),
            line: shift(duplicate_key_line(text, line, key).unwrap_or(line)),
            column: 0,
            message: format!(
                "{field}duplicate key `{key}`; remove one of the two (keys must be unique)"
            ),
        };
    }
    const CHRONO: [&str; 3] = [
        "input is out of range",
        "input contains invalid characters",
        "premature end of input",
    ];
    let date = if CHRONO.iter().any(|c| cause.ends_with(c)) {
        "; write dates as YYYY-MM-DD (e.g. 2026-03-14)"
    } else {
        ""
    };
    let on_line = line.checked_sub(1).and_then(|l| text.lines().nth(l));
    let date = match on_line
        .and_then(impossible_date)
        .filter(|_| !date.is_empty())
    {
        Some(why) => format!("{why}{date}"),
        None => date.to_string(),
    };
    Error::Parse {
        path: path.to_path_buf(),
        line: shift(line),
        column,
        message: format!(
            "{}{}{date} (see `ranklab help formats`)",
            plain(&cause),
            hint(text, line, &cause)
        ),
    }
}

/// serde's message with the Rust type names it carries (`expected usize`, `expected struct
/// RawSuite`, `untagged enum Expected`) put in the words of the file format.
pub fn plain(msg: &str) -> String {
    const NUMBERS: [(&str, &str); 12] = [
        ("usize", "a whole number (0 or more)"),
        ("u8", "a whole number (0 or more)"),
        ("u16", "a whole number (0 or more)"),
        ("u32", "a whole number (0 or more)"),
        ("u64", "a whole number (0 or more)"),
        ("isize", "a whole number"),
        ("i8", "a whole number"),
        ("i16", "a whole number"),
        ("i32", "a whole number"),
        ("i64", "a whole number"),
        ("f32", "a number"),
        ("f64", "a number"),
    ];
    let mut out = msg.to_string();
    for (rust, words) in NUMBERS {
        let from = format!("expected {rust}");
        let mut at = 0;
        while let Some(i) = out[at..].find(&from).map(|i| i + at) {
            let end = i + from.len();
            if out[end..].starts_with(|c: char| c.is_alphanumeric() || c == '_') {
                at = end;
                continue;
            }
            out.replace_range(i..end, &format!("expected {words}"));
            at = i + "expected ".len() + words.len();
        }
    }
    out = out
        .replace("expected a boolean", "expected true or false")
        // yaml_serde's words for an enum given a mapping.
        .replace(
            "expected a YAML tag starting with '!'",
            "expected one of its names, not a mapping",
        );
    // `expected struct Name` / `expected tuple struct Name` / `expected enum Name`.
    for (kind, words) in [
        (
            "expected struct ",
            "expected a mapping of `key: value` fields",
        ),
        ("expected tuple struct ", "expected a list"),
        ("expected unit struct ", "expected nothing"),
        ("expected enum ", "expected one of the documented names"),
        (
            "data did not match any variant of untagged enum ",
            "the value has none of the accepted forms",
        ),
    ] {
        while let Some(i) = out.find(kind) {
            let rest = &out[i + kind.len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            out = format!("{}{words}{}", &out[..i], &rest[end..]);
        }
    }
    out
}

/// For a date that cannot exist (`2025-11-31`, `2026-02-30`, month 13) in the text `l`: `; DATE:
/// the day is invalid, November 2025 has 30 days` (or the month). None when `l` holds no such date.
pub fn impossible_date(l: &str) -> Option<String> {
    let bytes = l.as_bytes();
    for i in 0..bytes.len().saturating_sub(9) {
        let d = &l[i..i + 10];
        let shape = d.bytes().enumerate().all(|(j, b)| {
            if j == 4 || j == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
        if !shape || (i > 0 && bytes[i - 1].is_ascii_digit()) {
            continue;
        }
        let (y, m, day): (i32, u32, u32) = (
            d[..4].parse().ok()?,
            d[5..7].parse().ok()?,
            d[8..].parse().ok()?,
        );
        if chrono::NaiveDate::from_ymd_opt(y, m, day).is_some() {
            continue;
        }
        if !(1..=12).contains(&m) {
            return Some(format!("; {d}: the month {m} is invalid (01 to 12)"));
        }
        let last = (28..=31)
            .rev()
            .find(|&n| chrono::NaiveDate::from_ymd_opt(y, m, n).is_some())?;
        let month = chrono::NaiveDate::from_ymd_opt(y, m, 1)?.format("%B");
        return Some(format!(
            "; {d}: the day is invalid, {month} {y} has {last} days"
        ));
    }
    None
}

/// yaml_serde's message without the ` at line L column C` of its own location (cut where that
/// mark starts, which also drops a libyaml context naming a second place); the location itself
/// is [`yaml_serde::Error::location`].
fn cause(err: &yaml_serde::Error) -> String {
    let full = err.to_string();
    match err.location() {
        Some(l) => {
            let mark = format!(" at line {} column {}", l.line(), l.column());
            match full.find(&mark) {
                Some(i) => full[..i].to_string(),
                None => full,
            }
        }
        None => full,
    }
}

/// What to do about a common YAML mistake (a number in quotes or out of range, an unquoted
/// `: ` in a value, a tab in the indentation) named by the message `msg` at 1-based `line` of `text`; "" if none.
fn hint(text: &str, line: usize, msg: &str) -> &'static str {
    const NUMBERS: [&str; 8] = ["usize", "u16", "u32", "u64", "i32", "i64", "f32", "f64"];
    let number = NUMBERS
        .iter()
        .any(|n| msg.ends_with(&format!("expected {n}")));
    if number && msg.contains("invalid type: string") {
        "; write the number without quotes"
    } else if number && msg.contains("invalid type: integer") {
        "; the number is out of range"
    } else if msg.contains("mapping values are not allowed") {
        "; a value holding `: ` must be quoted: write `key: \"text: more text\"`"
    } else if line > 0 && text.lines().nth(line - 1).is_some_and(|l| l.contains('\t')) {
        "; indent with spaces: YAML does not allow tabs"
    } else {
        ""
    }
}

/// `(field path prefix, key)` of a duplicate-key message: yaml_serde's `duplicate entry with key
/// "k"` (any mapping) or serde's ``duplicate field `k` `` (a struct). yaml_serde has no error
/// kinds, so these two fixed message forms are the only way to tell.
fn duplicate_key(msg: &str) -> Option<(&str, &str)> {
    let (i, key) = if let Some(i) = msg.find("duplicate entry with key \"") {
        (i, msg[i + 26..].split('"').next()?)
    } else if let Some(i) = msg.find("duplicate field `") {
        (i, msg[i + 17..].split('`').next()?)
    } else {
        return None;
    };
    Some((&msg[..i], key))
}

/// The 1-based line of the second `key:` (block or flow style) in `text` from line `from` on:
/// where a duplicate key of the mapping starting at `from` is.
fn duplicate_key_line(text: &str, from: usize, key: &str) -> Option<usize> {
    let mut seen = 0;
    for (i, l) in text.lines().enumerate().skip(from.saturating_sub(1)) {
        for (j, _) in l.match_indices(key) {
            let before = l[..j].chars().next_back();
            let after = l[j + key.len()..].trim_start_matches(['"', '\'']);
            if before.is_none_or(|c| " \t{,-\"'".contains(c)) && after.starts_with(':') {
                seen += 1;
                if seen == 2 {
                    return Some(i + 1);
                }
            }
        }
    }
    None
}

/// The 1-based lines of the `key: value` lines (block style, `- key: value` too) for each key
/// and value of a YAML text, built in one pass. A quoted value is read as YAML reads it (escapes
/// such as `"a\x2fb"` or `'it''s'` decoded), so a name is found however it was written.
#[derive(Debug, Default)]
pub struct Lines(HashMap<(String, String), Vec<usize>>);

impl Lines {
    /// Indexes `text`.
    pub fn new(text: &str) -> Lines {
        let mut map: HashMap<(String, String), Vec<usize>> = HashMap::new();
        for (i, l) in text.lines().enumerate() {
            let l = l.trim_start().trim_start_matches("- ").trim();
            if let Some((key, value)) = l.split_once(':') {
                let key = scalar(key.trim());
                map.entry((key, scalar(value.trim())))
                    .or_default()
                    .push(i + 1);
            }
        }
        Lines(map)
    }

    /// The line of the first `key: value`, 0 if there is none.
    pub fn of(&self, key: &str, value: &str) -> usize {
        self.nth(key, value, 0)
    }

    /// The line of the `n`th (0-based) `key: value`, 0 if there are not that many.
    pub fn nth(&self, key: &str, value: &str, n: usize) -> usize {
        self.0
            .get(&(key.to_string(), value.to_string()))
            .and_then(|v| v.get(n))
            .copied()
            .unwrap_or(0)
    }
}

/// A scalar as written on one line, decoded: a double-quoted one with its escapes read by the
/// YAML parser, a single-quoted one with `''` as `'`, a plain one as is.
fn scalar(s: &str) -> String {
    if s.len() >= 2 && s.starts_with('"') && s.ends_with('"') {
        if let Ok(v) = yaml_serde::from_str::<String>(s) {
            return v;
        }
    }
    if s.len() >= 2 && s.starts_with('\'') && s.ends_with('\'') {
        return s[1..s.len() - 1].replace("''", "'");
    }
    s.trim_matches(['"', '\'']).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Doc {
        k: usize,
        m: std::collections::BTreeMap<String, i32>,
    }

    fn err(text: &str, offset: usize) -> String {
        parse::<Doc>(Path::new("f.yaml"), offset, text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn errors_name_the_place_from_the_location_once() {
        // `k` is on line 1, column 4 of the text (counted by hand); 2 lines before it.
        let e = err("k: \"5\"\nm: {}\n", 2);
        assert_eq!(
            e,
            "f.yaml:3:4: k: invalid type: string \"5\", expected a whole number (0 or more); write the number without quotes (see `ranklab help formats`)"
        );
        assert!(!e.contains(" at line "), "{e}");
    }

    #[test]
    fn plain_words_replace_rust_type_names() {
        assert_eq!(
            plain("invalid type: sequence, expected struct RawSuite"),
            "invalid type: sequence, expected a mapping of `key: value` fields"
        );
        assert_eq!(
            plain("invalid value: integer `-1`, expected usize"),
            "invalid value: integer `-1`, expected a whole number (0 or more)"
        );
        assert_eq!(plain("expected f32, found x"), "expected a number, found x");
        // `u8` inside a longer word is left alone.
        assert_eq!(plain("expected u8x"), "expected u8x");
        assert_eq!(
            plain("data did not match any variant of untagged enum Expected"),
            "the value has none of the accepted forms"
        );
    }

    #[test]
    fn impossible_dates_name_the_invalid_part() {
        // November has 30 days, February 2026 28 (not a leap year), 2024 29.
        assert_eq!(
            impossible_date("updated_at: 2025-11-31").as_deref(),
            Some("; 2025-11-31: the day is invalid, November 2025 has 30 days")
        );
        assert_eq!(
            impossible_date("- { date: 2026-02-29 }").as_deref(),
            Some("; 2026-02-29: the day is invalid, February 2026 has 28 days")
        );
        assert_eq!(impossible_date("2024-02-29"), None);
        assert_eq!(
            impossible_date("2026-13-01").as_deref(),
            Some("; 2026-13-01: the month 13 is invalid (01 to 12)")
        );
        assert_eq!(impossible_date("no date here"), None);
    }

    #[test]
    fn an_unquoted_colon_says_to_quote_the_value() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Q {
            q: String,
            k: usize,
        }
        let e = parse::<Q>(Path::new("f.yaml"), 0, "q: refund: a capture\nk: 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("f.yaml:1:"), "{e}");
        assert!(e.contains("must be quoted"), "{e}");
    }

    #[test]
    fn a_duplicate_key_names_its_second_line_even_inside_a_map() {
        // The BTreeMap would keep one `a` silently; the second `a:` is on line 4.
        let e = err("k: 1\nm:\n  a: 1\n  a: 2\n", 0);
        assert!(e.starts_with("f.yaml:4: "), "{e}");
        assert!(e.contains("duplicate key `a`; remove one"), "{e}");
    }

    #[test]
    fn lines_finds_the_first_entry_of_each_key_and_value() {
        let l = Lines::new("tasks:\n  - id: T1\n    k: 5\n  - id: \"T2\"\n  - id: T1\n");
        assert_eq!(l.of("id", "T1"), 2);
        assert_eq!(l.of("id", "T2"), 4);
        assert_eq!(l.of("tasks", ""), 1);
        assert_eq!(l.of("id", "T3"), 0);
        assert_eq!(l.nth("id", "T1", 1), 5);
    }

    #[test]
    fn lines_reads_escapes_as_yaml_does() {
        // The values yaml_serde gives these lines: `a/b`, `a\nb`, `T\n2`, `it's` (YAML 1.2's
        // double-quoted escapes \x2f and \n; a single quote doubled in single quotes).
        let l = Lines::new(
            "- name: \"a\\x2fb\"\n- name: \"a\\nb\"\n- id: \"T\\n2\"\n- name: 'it''s'\n",
        );
        assert_eq!(l.of("name", "a/b"), 1);
        assert_eq!(l.of("name", "a\nb"), 2);
        assert_eq!(l.of("id", "T\n2"), 3);
        assert_eq!(l.of("name", "it's"), 4);
    }
}
