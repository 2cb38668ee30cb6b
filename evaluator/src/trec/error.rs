//! The one error type of TREC file handling. Every variant names the file, and the line (and
//! column where the parser knows it), and says what to do about it.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where in which file: `path:line[:column]`; `line` and `column` are 1-based, 0 when unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file.
    pub path: PathBuf,
    /// 1-based line, 0 when unknown.
    pub line: u64,
    /// 1-based byte column, 0 when unknown.
    pub column: usize,
}

impl Location {
    /// A location in `path`.
    pub fn new(path: &Path, line: u64, column: usize) -> Self {
        Location {
            path: path.to_path_buf(),
            line,
            column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (0, _) => write!(f, "{}", self.path.display()),
            (l, 0) => write!(f, "{}:{l}", self.path.display()),
            (l, c) => write!(f, "{}:{l}:{c}", self.path.display()),
        }
    }
}

/// Everything that can go wrong reading a TREC run or qrels file or evaluating one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrecError {
    /// The file could not be opened or read.
    #[error("cannot read {}{}", path.display(), crate::root::tried(path))]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no content line.
    #[error("{}: the {kind} file is empty (no content line); {hint}", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
        /// "run" or "qrels".
        kind: &'static str,
        /// What the file should contain.
        hint: &'static str,
    },
    /// A line with the wrong number of whitespace-separated fields.
    #[error("{at}: expected {expected} fields `{layout}`, found {found}{note}; fields are separated by spaces or tabs and may not contain whitespace")]
    FieldCount {
        /// Where.
        at: Location,
        /// How many the format has.
        expected: usize,
        /// How many the line has.
        found: usize,
        /// The format's fields.
        layout: &'static str,
        /// What else the format allows (for runs: trailing fields are ignored).
        note: &'static str,
    },
    /// Bytes that are not UTF-8.
    #[error("{at}: invalid UTF-8; TREC files must be UTF-8 (or ASCII) text, re-encode the file")]
    Utf8 {
        /// Where the first invalid byte is.
        at: Location,
    },
    /// A score that is not a finite number.
    #[error("{at}: score `{text}` is not a finite number; the fifth field of a run line must be a decimal number such as 12.5 (NaN and infinity are rejected, as their order is undefined)")]
    BadScore {
        /// Where.
        at: Location,
        /// The field as written.
        text: String,
    },
    /// A relevance judgment that is not an integer.
    #[error("{at}: relevance `{text}` {why}; the fourth field of a qrels line is an integer judgment such as 0, 1 or 2")]
    BadRelevance {
        /// Where.
        at: Location,
        /// The field as written.
        text: String,
        /// Why it is refused: not an integer, or an integer out of range.
        why: &'static str,
    },
    /// The same document twice in one query of a run.
    #[error("{at}: document `{docno}` appears twice in query `{qid}` (first at line {first_line}); trec_eval rejects such runs: keep only one line per (query, document)")]
    DuplicateDoc {
        /// The second occurrence.
        at: Location,
        /// The query.
        qid: String,
        /// The document.
        docno: String,
        /// Line of the first occurrence.
        first_line: u64,
    },
    /// The same document judged twice for one query.
    #[error("{at}: document `{docno}` is judged twice for query `{qid}` (first at line {first_line}); keep one judgment per (query, document)")]
    DuplicateJudgment {
        /// The second judgment.
        at: Location,
        /// The query.
        qid: String,
        /// The document.
        docno: String,
        /// Line of the first judgment.
        first_line: u64,
    },
    /// A query given twice to a [`super::RunFeed`] (each query's documents come together).
    #[error("{}: query `{qid}` is given twice; give each query's documents together, once", path.display())]
    RepeatedQuery {
        /// What names the run.
        path: PathBuf,
        /// The query.
        qid: String,
    },
    /// A query of the qrels without results in the run (and no `-c`).
    #[error("{at}: query `{qid}` of the qrels has no results in run {} ({more} more such queries); pass -c to count missing queries as 0 in every average, or leave them out of the qrels to average over the others (trec_eval 10.0 does neither without -c: it gives a missing query the values of the query it evaluated before)", run.display())]
    MissingQuery {
        /// Where the query is first judged.
        at: Location,
        /// The query.
        qid: String,
        /// The run file.
        run: PathBuf,
        /// How many other qrels queries are missing.
        more: usize,
    },
}
