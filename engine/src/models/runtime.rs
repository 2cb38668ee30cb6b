//! ONNX Runtime: located, loaded and wrapped in one `ort` environment, once per process.
//!
//! The library is `ORT_DYLIB_PATH` when the user set it, else the verified copy in the cache
//! (`<root>/runtime/`). Nobody has to export anything; a missing library is an error that says
//! `run: ranklab models fetch`, never ort's panic. Every session ranklab creates uses the
//! environment returned by [`ort_environment`].

use std::path::PathBuf;
use std::sync::OnceLock;

use ort::environment::Environment;

use super::ModelStore;
use crate::{Error, Result};

/// `ORT_DYLIB_PATH` when set and not empty.
pub(super) fn user_dylib_path() -> Option<PathBuf> {
    std::env::var_os("ORT_DYLIB_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Errors on platforms for which no runtime is pinned.
pub(super) fn check_platform() -> Result<()> {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        Ok(())
    } else {
        Err(Error::Model {
            model: "onnxruntime".into(),
            message: "ranklab pins ONNX Runtime for Linux x86_64 only; on this platform install \
                      ONNX Runtime 1.32 yourself and set ORT_DYLIB_PATH to its shared library"
                .into(),
        })
    }
}

/// The ONNX Runtime library this process loads: `ORT_DYLIB_PATH` when set (it must exist), else
/// the verified cached copy. Does not download.
pub fn runtime_library() -> Result<PathBuf> {
    if let Some(path) = user_dylib_path() {
        if !path.is_file() {
            return Err(Error::Model {
                model: "onnxruntime".into(),
                message: format!(
                    "ORT_DYLIB_PATH is set to {}, which is not a file; fix it, or unset it to use \
                     ranklab's own copy (run: ranklab models fetch)",
                    path.display()
                ),
            });
        }
        return Ok(path);
    }
    ModelStore::open_default()?.runtime()
}

static ENVIRONMENT: OnceLock<std::result::Result<Environment, String>> = OnceLock::new();

/// The process's ONNX Runtime environment, loading the library on first call (see
/// [`runtime_library`]). Every later call returns the same environment, or the same error.
pub fn ort_environment() -> Result<Environment> {
    ENVIRONMENT
        .get_or_init(|| {
            let path = runtime_library().map_err(|e| match e {
                Error::Model { message, .. } => message,
                other => other.to_string(),
            })?;
            let builder = ort::init_from(&path).map_err(|e| {
                format!(
                    "loading {} failed: {e}; delete it and run: ranklab models fetch",
                    path.display()
                )
            })?;
            builder
                .with_name("ranklab")
                .build()
                .map_err(|e| format!("creating the ONNX Runtime environment failed: {e}"))
        })
        .clone()
        .map_err(|message| Error::Model {
            model: "onnxruntime".into(),
            message,
        })
}
