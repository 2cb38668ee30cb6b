//! `ranklab help formats`: the file-format reference (docs/formats.md), built into the binary
//! so an installed ranklab can point to it from any repository.

/// The text of docs/formats.md at build time.
pub(crate) const FORMATS: &str = include_str!("../../docs/formats.md");

/// Where messages send a user for the formats.
pub(crate) const SEE_FORMATS: &str = "see `ranklab help formats`";
