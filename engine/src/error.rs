//! The engine's one error type. Variants carry the file, line and id involved so that the
//! binary can print a message a user can act on. Split by who is at fault: input/config errors
//! (the user fixes a file) versus internal errors (index or model failures).

use std::path::PathBuf;

/// Every error the engine reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file's content is malformed; `line` is 1-based, 0 when unknown.
    #[error("{}: {message}", location(path, *line, *column))]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// Two records share an id.
    #[error("duplicate document id {id:?}: in {first} and {second}; ids must be unique across a corpus, rename one")]
    DuplicateId {
        id: String,
        first: PathBuf,
        second: PathBuf,
    },
    /// A reference names a record that does not exist.
    #[error("{}: unknown document id {id:?} ({context}); check the spelling against the corpus ids", location(path, *line, 0))]
    UnknownId {
        path: PathBuf,
        line: usize,
        id: String,
        context: String,
    },
    /// The corpus has no document.
    #[error("{path}: the corpus is empty (no documents found); point the suite at a directory of .md records or a BEIR corpus.jsonl")]
    EmptyCorpus { path: PathBuf },
    /// A score is NaN or infinite.
    #[error("non-finite score {score} for document {doc:?} on query {query:?}; the model or index produced an invalid number")]
    NonFiniteScore {
        query: String,
        doc: String,
        score: f32,
    },
    /// A model is missing, incomplete or fails to load.
    #[error("model {model}: {message}")]
    Model { model: String, message: String },
    /// A model or runtime file whose sha256 differs from its pin or manifest.
    #[error("{path}: sha256 mismatch: expected {expected}, found {actual}; {remedy}")]
    Checksum {
        path: PathBuf,
        expected: String,
        actual: String,
        remedy: String,
    },
    /// A model id that is neither pinned nor registered.
    #[error("unknown model {id:?}; known models: {known} (add your own with `ranklab models fetch --from DIR --id ID`)")]
    UnknownModel { id: String, known: String },
    /// The lexical index failed.
    #[error("lexical index: {0}")]
    Index(#[from] tantivy::TantivyError),
    /// An invalid setting (width, weight, k).
    #[error("{0}")]
    Config(String),
}

/// `path:line:column`, leaving out what is unknown (0).
pub fn location(path: &std::path::Path, line: usize, column: usize) -> String {
    match (line, column) {
        (0, _) => path.display().to_string(),
        (l, 0) => format!("{}:{l}", path.display()),
        (l, c) => format!("{}:{l}:{c}", path.display()),
    }
}

/// Result with the engine's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
    /// A parse error at `path:line`.
    pub fn parse(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            column: 0,
            message: message.into(),
        }
    }
}

/// [`yaml`], knowing the YAML `text`: a duplicate key is placed on the line of its second
/// occurrence (yaml_serde points at the start of the mapping), and a bad date says how to write
/// one.
pub fn yaml_in(
    path: &std::path::Path,
    line_offset: usize,
    text: &str,
    err: yaml_serde::Error,
) -> Error {
    let full = err.to_string();
    let cause = full.split(" at line ").next().unwrap_or(&full);
    let from = err.location().map_or(0, |l| l.line());
    if let Some((field, key)) = yaml_duplicate_key(cause) {
        return Error::Parse {
            path: path.to_path_buf(),
            line: yaml_duplicate_key_line(text, from, key).unwrap_or(from) + line_offset,
            column: 0,
            message: format!(
                "{field}duplicate key `{key}`; remove one of the two (keys must be unique)"
            ),
        };
    }
    let mut e = yaml(path, line_offset, err);
    if let Error::Parse { message, .. } = &mut e {
        *message = format!("{cause}{}", yaml_hint(text, from, cause));
        const CHRONO: [&str; 3] = [
            "input is out of range",
            "input contains invalid characters",
            "premature end of input",
        ];
        if CHRONO.iter().any(|c| cause.ends_with(c)) {
            message.push_str("; write dates as YYYY-MM-DD (e.g. 2026-03-14)");
        }
    }
    e
}

/// What to do about a common YAML mistake (a number in quotes or out of range, a tab in the
/// indentation) named by the yaml_serde message `msg` at 1-based `line` of `text`; "" if none.
pub fn yaml_hint(text: &str, line: usize, msg: &str) -> &'static str {
    const NUMBERS: [&str; 8] = ["usize", "u16", "u32", "u64", "i32", "i64", "f32", "f64"];
    let number = NUMBERS
        .iter()
        .any(|n| msg.ends_with(&format!("expected {n}")));
    if number && msg.contains("invalid type: string") {
        "; write the number without quotes"
    } else if number && msg.contains("invalid type: integer") {
        "; the number is out of range"
    } else if line > 0 && text.lines().nth(line - 1).is_some_and(|l| l.contains('\t')) {
        "; indent with spaces: YAML does not allow tabs"
    } else {
        ""
    }
}

/// `(field path prefix, key)` of a yaml_serde duplicate-key message: `duplicate entry with key
/// "k"` (any mapping) or ``duplicate field `k` `` (a struct).
pub fn yaml_duplicate_key(msg: &str) -> Option<(&str, &str)> {
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
pub fn yaml_duplicate_key_line(text: &str, from: usize, key: &str) -> Option<usize> {
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

/// Turns a YAML error into [`Error::Parse`] at the right place of `path`; `line_offset` is
/// the number of file lines before the YAML text (front matter starts after its `---`).
pub fn yaml(path: &std::path::Path, line_offset: usize, err: yaml_serde::Error) -> Error {
    let (line, column) = err
        .location()
        .map(|l| (l.line() + line_offset, l.column()))
        .unwrap_or((0, 0));
    // yaml_serde appends " at line L column C" with YAML-relative numbers; keep only the cause.
    let text = err.to_string();
    let message = match text.find(" at line ") {
        Some(i) if line_offset > 0 => text[..i].to_string(),
        _ => text,
    };
    Error::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}
