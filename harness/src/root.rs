//! The suite repository's root and how paths are shown: [`ranklab_eval::root`] (the evaluator
//! crate names files with it too), plus [`read_yaml`], which reads through the engine's YAML
//! loader and so stays in the harness.

use std::path::Path;

pub use ranklab_eval::root::*;

/// Reads a YAML file into `T` through the engine's one loader ([`ranklab_engine::yaml::read`]):
/// errors name the file, line and column and say what to do; a file that cannot be read is named
/// with the path tried ([`tried`]).
pub fn read_yaml<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<(T, String)> {
    ranklab_engine::yaml::read(path).map_err(|e| match e {
        ranklab_engine::Error::Io { path, source } => {
            anyhow::anyhow!("cannot read {}{}: {source}", path.display(), tried(&path))
        }
        e => e.into(),
    })
}
