//! What `ranklab models list` and `fetch` report: a model's files as found on disk.

use std::path::{Path, PathBuf};

use super::sha256_file;

/// What a fetch did for one model or the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchOutcome {
    /// Already installed and verified; nothing downloaded.
    Present {
        /// The model (or runtime) id.
        id: String,
        /// Its installed directory (for the runtime, the library file).
        path: PathBuf,
    },
    /// Downloaded, verified and installed.
    Fetched {
        /// The model (or runtime) id.
        id: String,
        /// Its installed directory (for the runtime, the library file).
        path: PathBuf,
    },
    /// `ORT_DYLIB_PATH` is set: the runtime is the user's, ranklab installs none.
    External {
        /// The runtime id.
        id: String,
        /// The library `ORT_DYLIB_PATH` names.
        path: PathBuf,
    },
}

/// The state of one file of a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    /// Present, and its sha256 is the expected one.
    Verified,
    /// Not on disk.
    Missing,
    /// Present with another sha256 (never used).
    Mismatch {
        /// Lowercase hex sha256 of the pin or manifest.
        expected: String,
        /// Lowercase hex sha256 of the file on disk.
        actual: String,
    },
}

/// One file of a model, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStatus {
    /// File name inside the model's directory.
    pub name: String,
    /// Size in bytes on disk; None when missing.
    pub size: Option<u64>,
    /// Verified, missing or mismatched.
    pub state: FileState,
}

/// One model (or the runtime) as `ranklab models list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelStatus {
    /// The model (or runtime) id.
    pub id: String,
    /// `bi-encoder`, `cross-encoder` or `runtime`.
    pub kind: String,
    /// Where it comes from: a package spec (`name==version`), `dir:<path>`, or `ORT_DYLIB_PATH`
    /// for the user's runtime.
    pub source: String,
    /// Its directory (for the runtime, the library's directory).
    pub path: PathBuf,
    /// At least one of its files is on disk.
    pub installed: bool,
    /// Every file present and matching its hash.
    pub verified: bool,
    /// Each expected file as found on disk.
    pub files: Vec<FileStatus>,
    /// sha256 of model.onnx or model.gguf (or of the runtime library) when present.
    pub sha256: Option<String>,
}

impl ModelStatus {
    /// Total size on disk of the files present.
    pub fn size(&self) -> u64 {
        self.files.iter().filter_map(|f| f.size).sum()
    }
}

pub(super) fn status(
    id: &str,
    kind: &str,
    source: &str,
    path: PathBuf,
    files: Vec<FileStatus>,
) -> ModelStatus {
    let installed = files.iter().any(|f| f.size.is_some());
    let verified = !files.is_empty() && files.iter().all(|f| f.state == FileState::Verified);
    let sha256 = files
        .iter()
        .find(|f| {
            f.name == "model.onnx" || f.name == "model.gguf" || f.name.starts_with("libonnxruntime")
        })
        .and_then(|f| match &f.state {
            FileState::Verified => Some(sha256_file(&path.join(&f.name)).ok()),
            FileState::Mismatch { actual, .. } => Some(Some(actual.clone())),
            FileState::Missing => None,
        })
        .flatten();
    ModelStatus {
        id: id.to_string(),
        kind: kind.to_string(),
        source: source.to_string(),
        path,
        installed,
        verified,
        files,
        sha256,
    }
}

pub(super) fn file_status(path: &Path, name: &str, expected: &str) -> FileStatus {
    let size = std::fs::metadata(path).ok().map(|m| m.len());
    let state = match size {
        None => FileState::Missing,
        Some(_) => match sha256_file(path) {
            Ok(actual) if actual == expected => FileState::Verified,
            Ok(actual) => FileState::Mismatch {
                expected: expected.to_string(),
                actual,
            },
            Err(_) => FileState::Missing,
        },
    };
    FileStatus {
        name: name.to_string(),
        size,
        state,
    }
}
