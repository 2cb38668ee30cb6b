//! The pinned model catalogue, the model cache on disk, and where ONNX Runtime is.
//!
//! Everything lives under one cache root: `$RANKLAB_CACHE`, else `$XDG_CACHE_HOME/ranklab`, else
//! `~/.cache/ranklab`:
//!
//! ```text
//! models/<model-id>/   model.onnx, tokenizer.json, tokenizer_config.json,
//!                      special_tokens_map.json, config.json, ranklab-model.json (manifest);
//!                      an LLM: model.gguf (weights and tokenizer in one file)
//! runtime/             libonnxruntime.so.1.32.0
//! embeddings/          checked record files of section vectors (see `dense::cache`)
//! scores/              checked record files of cross-encoder scores (see `rerank::cache`)
//! tmp/                 downloads and staging directories while fetching
//! ```
//!
//! Guarantees:
//! - A pinned model ([`pins::MODELS`]) is used only when every file matches its pinned sha256;
//!   a user's model (`ranklab models fetch --from DIR`) only when every file matches the hash
//!   recorded when it was registered. Its identity is the sha256 of its `model.onnx` (of its
//!   `model.gguf` for an LLM, which needs no ONNX Runtime).
//! - Installing never leaves a half-written model: files are extracted and verified in a staging
//!   directory beside the target, which is then renamed into place.
//! - ONNX Runtime is loaded once per process from the verified library in the cache, or from
//!   `ORT_DYLIB_PATH` when the user set it ([`ort_environment`]). A missing library is an error
//!   that names the command to run, never a panic.

mod catalogue;
mod fetch;
pub(crate) mod hashing;
pub(crate) mod keyed;
pub(crate) mod model_cache;
mod model_store;
pub mod onnx;
pub mod pins;
pub(crate) mod record_file;
pub mod recorded;
pub mod remote;
mod runtime;
mod status;
pub(crate) mod unverified;

use std::path::PathBuf;

pub use catalogue::{
    Manifest, ModelDir, ModelKind, Pooling, LATE_INTERACTION_FILES, LLM_FILES, MANIFEST,
    REQUIRED_FILES,
};
pub use hashing::{hex, sha256, sha256_file};
pub(crate) use model_cache::Shards;
pub use model_cache::{CacheKind, ModelCache, Tally};
pub use model_store::{pinned, ModelStore};
pub(crate) use runtime::{default_workers, fastembed_error, load_sessions, run_on_workers};
pub use runtime::{ort_environment, runtime_library, Int8Kernel};
pub use status::{FetchOutcome, FileState, FileStatus, ModelStatus};

use crate::{Error, Result};

/// The cache root: `$RANKLAB_CACHE`, else `$XDG_CACHE_HOME/ranklab`, else `~/.cache/ranklab`.
pub fn cache_root() -> Result<PathBuf> {
    cache_root_from(|name| std::env::var_os(name))
}

/// [`cache_root`] with the environment given as a function (empty values count as unset).
pub fn cache_root_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf> {
    let var = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(root) = var("RANKLAB_CACHE") {
        return Ok(root);
    }
    if let Some(xdg) = var("XDG_CACHE_HOME") {
        return Ok(xdg.join("ranklab"));
    }
    if let Some(home) = var("HOME") {
        return Ok(home.join(".cache").join("ranklab"));
    }
    Err(Error::Config(
        "cannot place the model cache: none of RANKLAB_CACHE, XDG_CACHE_HOME or HOME is set; \
         set RANKLAB_CACHE to a writable directory"
            .into(),
    ))
}

/// Fetches `id` into the default cache on first use (with a progress line on stderr), verifies
/// it, and makes sure ONNX Runtime is there too. The harness calls this when a command needs a
/// model.
pub fn ensure_model(id: &str) -> Result<ModelDir> {
    ModelStore::open_default()?.ensure_model(id)
}

#[cfg(test)]
mod tests;
