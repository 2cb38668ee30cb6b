//! `ranklab help formats`: the file-format reference (docs/formats.md), built into the binary
//! so an installed ranklab can point to it from any repository.

/// The text of docs/formats.md at build time.
pub(crate) const FORMATS: &str = include_str!("../../docs/formats.md");
