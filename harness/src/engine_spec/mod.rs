//! `engine:` of a configuration: what an engine outside ranklab is and how it is asked, as the
//! experiments file writes it, and the checks that need no engine running.
//!
//! A leaf: it imports nothing else of the harness, so [`crate::suite`] (which parses it) and
//! [`crate::external`] (which runs it) both stand on it. The YAML fields are in
//! `docs/engines.md`.
//!
//! - [`http`]: `engine: { http: ... }`, the request template and the response pointers;
//! - [`preset`]: the response shapes of the engines teams run.

pub mod http;
pub mod preset;

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// What to do with a task the engine answered with an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnError {
    /// The run fails (exit 2) naming how many tasks failed and the first failure.
    #[default]
    Fail,
    /// The task counts as an empty ranking; the report states how many.
    Empty,
}

/// `engine:` of a configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSpec {
    /// The command adapter: program and arguments (the program is looked up on `PATH`, or,
    /// when it contains a `/`, relative to `cwd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// The HTTP adapter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<http::HttpSpec>,
    /// Working directory of the command, relative to the experiments file (default: its
    /// directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Extra environment of the command; values may name variables as `${NAME}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// How long to wait for each response (HTTP: each phase of a request), in milliseconds
    /// (default 30000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Ask the engine for its version (`{"version": true}`) before the first task; the answer
    /// keys the recording.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub version: bool,
    /// The engine's index does not come from the suite's corpus (a live service with its own
    /// data): its recording does not go stale when the corpus changes; its staleness is its
    /// version's (`version: true` records it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_index: bool,
    /// What a task the engine answered with an error becomes (default: the run fails).
    #[serde(default, skip_serializing_if = "is_default")]
    pub on_error: OnError,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// Default response timeout.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

impl EngineSpec {
    /// Checks the fields that need no engine: exactly one adapter, a non-empty command.
    pub fn check(&self) -> Result<()> {
        match (&self.command, &self.http) {
            (None, None) => bail!("`engine` needs `command: [program, args...]` or `http: {{ url, ... }}` (see docs/engines.md)"),
            (Some(_), Some(_)) => bail!("`engine` has both `command` and `http`; keep one"),
            (Some(argv), None) if argv.is_empty() || argv[0].trim().is_empty() => {
                bail!("`engine.command` is empty; give the program and its arguments")
            }
            (Some(_), None) => {}
            (None, Some(h)) => {
                h.check().context("`engine.http`")?;
                if self.version {
                    bail!("`engine.version` is for the command adapter; an HTTP engine's version is not asked");
                }
            }
        }
        if self.timeout_ms == Some(0) {
            bail!("`engine.timeout_ms` must be at least 1");
        }
        for v in self.env.values() {
            env_refs(v)?;
        }
        Ok(())
    }

    /// Per-response timeout.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS))
    }
}

/// The `${NAME}` references of a value (an error for an unclosed `${`).
pub(crate) fn env_refs(value: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        let Some(j) = after.find('}') else {
            bail!("{value:?}: `${{` without a closing `}}`");
        };
        out.push(after[..j].to_string());
        rest = &after[j + 1..];
    }
    Ok(out)
}

impl EngineSpec {
    /// The `${NAME}` references of the values a live engine is asked with (its `env`, and the
    /// URL, headers and body of `http`) whose variable is not set here, in that order, each
    /// once.
    pub fn unset_env(&self) -> Vec<String> {
        let mut values: Vec<&str> = self.env.values().map(String::as_str).collect();
        if let Some(h) = &self.http {
            values.push(&h.url);
            values.extend(h.headers.values().map(String::as_str));
            values.extend(h.body.as_deref());
        }
        let mut out: Vec<String> = Vec::new();
        for v in values {
            for name in env_refs(v).unwrap_or_default() {
                if std::env::var_os(&name).is_none() && !out.contains(&name) {
                    out.push(name);
                }
            }
        }
        out
    }
}

/// A value with every `${NAME}` replaced by the environment variable (an error naming the
/// variable when it is unset). The expanded value is never written anywhere.
pub fn expand_env(value: &str) -> Result<String> {
    let mut out = value.to_string();
    for name in env_refs(value)? {
        let v = std::env::var(&name).with_context(|| {
            format!("environment variable {name} (named as ${{{name}}}) is not set; set it, or replay from the recording with --from-recording")
        })?;
        out = out.replace(&format!("${{{name}}}"), &v);
    }
    Ok(out)
}
