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
        /// The file (or directory) involved.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A file's content is malformed; `line` is 1-based, 0 when unknown.
    #[error("{}: {message}", location(path, *line, *column))]
    Parse {
        /// The malformed file.
        path: PathBuf,
        /// 1-based line, 0 when unknown.
        line: usize,
        /// 1-based column, 0 when unknown.
        column: usize,
        /// What is wrong and, where known, what to write instead.
        message: String,
    },
    /// Two records share an id.
    #[error("duplicate document id {id:?}: in {first} and {second}; ids must be unique across a corpus, rename one")]
    DuplicateId {
        /// The shared id.
        id: String,
        /// The file of the record seen first.
        first: PathBuf,
        /// The file of the record seen second.
        second: PathBuf,
    },
    /// A reference names a record that does not exist.
    #[error("{}: unknown document id {id:?} ({context}); check the spelling against the corpus ids{near}", location(path, *line, 0))]
    UnknownId {
        /// The file holding the reference.
        path: PathBuf,
        /// 1-based line of the reference, 0 when unknown.
        line: usize,
        /// The id referred to.
        id: String,
        /// Where the reference sits (e.g. which task or field), in words.
        context: String,
        /// `; did you mean ...?` ([`crate::suggest::did_you_mean`]) or empty.
        near: String,
    },
    /// The corpus has no document.
    #[error("{path}: the corpus is empty (no documents found); point the suite at a directory of .md records or a BEIR corpus.jsonl")]
    EmptyCorpus {
        /// The corpus directory or file.
        path: PathBuf,
    },
    /// A score is NaN or infinite.
    #[error("non-finite score {score} for document {doc:?} on query {query:?}; the model or index produced an invalid number")]
    NonFiniteScore {
        /// The query text.
        query: String,
        /// The document id.
        doc: String,
        /// The NaN or infinite score.
        score: f32,
    },
    /// A model is missing, incomplete or fails to load.
    #[error("model {model}: {message}")]
    Model {
        /// The model id (or path) involved.
        model: String,
        /// What went wrong and what to do.
        message: String,
    },
    /// A model or runtime file whose sha256 differs from its pin or manifest.
    #[error("{path}: sha256 mismatch: expected {expected}, found {actual}; {remedy}")]
    Checksum {
        /// The file hashed.
        path: PathBuf,
        /// Lowercase hex sha256 the pin or manifest names.
        expected: String,
        /// Lowercase hex sha256 of the file on disk.
        actual: String,
        /// What to do (e.g. fetch the model again).
        remedy: String,
    },
    /// A model id that is neither pinned nor registered.
    #[error("unknown model {id:?}; known models: {known} (add your own with `ranklab models fetch --from DIR --id ID`)")]
    UnknownModel {
        /// The id asked for.
        id: String,
        /// The known ids, comma-separated.
        known: String,
    },
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
