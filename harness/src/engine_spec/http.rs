//! `engine: { http: ... }`: the request template (`url`, `body`, `headers`), the response
//! pointers or a [`preset`](super::preset), and the limits, checked before any request is sent.
//! The adapter that sends the requests is [`crate::external::http`].

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::preset::{preset, Shape};

/// Default requests in flight.
pub const DEFAULT_CONCURRENCY: usize = 4;
/// Default retries of a failed request.
pub const DEFAULT_RETRIES: u32 = 3;
/// Largest accepted `concurrency`.
pub const MAX_CONCURRENCY: usize = 256;

/// `engine: { http: ... }`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpSpec {
    /// URL template (`{{query}}`, `{{k}}`, `{{task}}` percent-encoded; `${NAME}` from the
    /// environment).
    pub url: String,
    /// GET, POST or PUT (default POST with a body, GET without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Request headers; values may name `${NAME}` environment variables.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// JSON body template (`{{query}}`, `{{k}}`, `{{task}}`, JSON-escaped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// A response shape: opensearch, elasticsearch, solr, vespa, meilisearch, typesense, qdrant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Pointer to the list of hits in the response (overrides the preset's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hits: Option<String>,
    /// Pointer to the id within a hit (overrides the preset's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Pointer to the score within a hit (overrides the preset's; `""` for none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<String>,
    /// Requests in flight (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<usize>,
    /// Retries of a request after a connection error, timeout, 429 or 5xx (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<u32>,
}

const PLACEHOLDERS: [&str; 3] = ["query", "k", "task"];

/// The placeholders of a template, checked against the known ones.
fn placeholders(what: &str, template: &str) -> Result<()> {
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else {
            bail!("`{what}`: `{{{{` without a closing `}}}}`");
        };
        let name = &after[..j];
        if !PLACEHOLDERS.contains(&name) {
            bail!(
                "`{what}`: unknown placeholder {{{{{name}}}}}; placeholders: {{{{query}}}}, {{{{k}}}}, {{{{task}}}}"
            );
        }
        rest = &after[j + 2..];
    }
    Ok(())
}

/// `template` with each placeholder replaced by `f(name)`.
pub(crate) fn fill(template: &str, f: impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let j = after.find("}}").expect("checked by `placeholders`");
        out.push_str(&f(&after[..j]));
        rest = &after[j + 2..];
    }
    out.push_str(rest);
    out
}

/// `template` with every `${NAME}` replaced by `f(NAME)` (an unclosed `${` is left as is:
/// [`HttpSpec::check`] refuses it).
pub(crate) fn env_filled(template: &str, mut f: impl FnMut(&str) -> String) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        let Some(j) = after.find('}') else { break };
        out.push_str(&rest[..i]);
        out.push_str(&f(&after[..j]));
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    out
}

/// Refuses a header name or value, or a URL, (`what`) that holds a control character (CR, LF,
/// NUL, ESC, DEL, ...: U+0000–U+001F, U+007F–U+009F; a tab is allowed in header values, RFC 9110
/// §5.5), or a header name that is not an RFC 9110 token. Called after `${NAME}` expansion and
/// before any connection: a CR LF would end the header and let the value add headers of its
/// own, or rewrite the request line from the URL.
pub(crate) fn no_control(what: &str, text: &str, tab_allowed: bool) -> Result<()> {
    if let Some((i, c)) = text
        .char_indices()
        .find(|&(_, c)| c.is_control() && !(tab_allowed && c == '\t'))
    {
        bail!(
            "{what} holds the control character U+{:04X} at byte {i} (after ${{NAME}} expansion); \
             header names and values and URLs may not hold CR, LF or other control characters \
             (a CR LF would add headers or rewrite the request line): remove it from the \
             configuration or from the environment variable",
            c as u32
        );
    }
    Ok(())
}

/// Checks what is sent as headers (`name: value`, both expanded): names are RFC 9110 tokens,
/// values hold no control character but tab ([`no_control`]).
pub(crate) fn check_headers<'a>(
    headers: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<()> {
    for (k, v) in headers {
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if k.is_empty() || !k.chars().all(token) {
            bail!(
                "header name {k:?} is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only)"
            );
        }
        no_control(&format!("header {k}: the value"), v, true)?;
    }
    Ok(())
}

impl HttpSpec {
    /// Checks templates, method, pointers, preset and limits (no request is sent).
    pub fn check(&self) -> Result<()> {
        placeholders("url", &self.url)?;
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            bail!("`url` {:?} must start with http:// or https://", self.url);
        }
        if let Some(b) = &self.body {
            placeholders("body", b)?;
            let sample = fill(&env_filled(b, |_| "x".to_string()), |n| match n {
                "k" => "10".to_string(),
                _ => "x".to_string(),
            });
            serde_json::from_str::<Value>(&sample).map_err(|e| {
                anyhow::anyhow!("`body` is not JSON once its placeholders are filled ({e}); write string placeholders inside quotes: \"q\": \"{{{{query}}}}\", numbers bare: \"size\": {{{{k}}}}")
            })?;
        }
        self.method()?;
        self.shape()?;
        match self.concurrency {
            Some(0) => bail!("`concurrency: 0`: at least one request must be in flight; write 1 or more (default {DEFAULT_CONCURRENCY})"),
            Some(c) if c > MAX_CONCURRENCY => bail!("`concurrency: {c}` is more than {MAX_CONCURRENCY}"),
            _ => {}
        }
        for v in self.headers.values() {
            super::env_refs(v)?;
        }
        check_headers(self.headers.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        no_control("`url`", &self.url, false)?;
        super::env_refs(&self.url)?;
        if let Some(b) = &self.body {
            super::env_refs(b).context("`body`")?;
        }
        Ok(())
    }

    /// The method.
    pub fn method(&self) -> Result<&'static str> {
        match self
            .method
            .as_deref()
            .map(str::to_ascii_uppercase)
            .as_deref()
        {
            None if self.body.is_some() => Ok("POST"),
            None => Ok("GET"),
            Some("GET") if self.body.is_some() => {
                bail!("`method: GET` with a `body`; use POST, or put the query in the url")
            }
            Some("GET") => Ok("GET"),
            Some("POST") => Ok("POST"),
            Some("PUT") => Ok("PUT"),
            Some(m) => bail!("`method: {m}`: write GET, POST or PUT"),
        }
    }

    /// The pointers: the preset's, overridden field by field.
    pub fn shape(&self) -> Result<(String, String, Option<String>)> {
        let base = match &self.preset {
            Some(p) => Some(preset(p)?),
            None => None,
        };
        let pick = |own: &Option<String>,
                    from: Option<&'static str>,
                    field: &str|
         -> Result<Option<String>> {
            let p = own.clone().or(from.map(str::to_string));
            if let Some(p) = &p {
                if !p.is_empty() && !p.starts_with('/') {
                    bail!("`{field}: {p}` is not a JSON pointer (RFC 6901): write it from the root, e.g. /hits/hits");
                }
            }
            Ok(p)
        };
        let hits = pick(&self.hits, base.map(|s: Shape| s.hits), "hits")?;
        let id = pick(&self.id, base.map(|s| s.id), "id")?;
        let score = pick(&self.score, base.and_then(|s| s.score), "score")?;
        match (hits, id) {
            (Some(h), Some(i)) => Ok((h, i, score.filter(|s| !s.is_empty()))),
            _ => bail!("give `preset` (opensearch, elasticsearch, solr, vespa, meilisearch, typesense, qdrant) or the pointers `hits` and `id` (and `score`)"),
        }
    }

    /// Requests in flight (`concurrency`, default [`DEFAULT_CONCURRENCY`]).
    pub(crate) fn concurrency(&self) -> usize {
        self.concurrency.unwrap_or(DEFAULT_CONCURRENCY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_headers_and_urls_are_refused_tabs_in_values_allowed() {
        // Issue 42 case 9: a CR LF in a value ends the header line and starts another.
        let e = check_headers([("X-A", "a\r\nX-Injected: 1")]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("header X-A: the value holds the control character U+000D at byte 1"),
            "{e}"
        );
        for bad in ["a\nb", "a\u{1b}b", "a\u{0}b", "a\u{7f}", "a\u{85}"] {
            assert!(check_headers([("X-A", bad)]).is_err(), "{bad:?}");
        }
        check_headers([("Authorization", "Bearer a\tb")]).unwrap();
        assert!(
            check_headers([("X A", "v")]).is_err(),
            "a name with a space"
        );
        assert!(
            check_headers([("X-A:", "v")]).is_err(),
            "a name with a colon"
        );
        let e = no_control("the url", "http://h/s HTTP/1.1\r\nX: 1", false).unwrap_err();
        assert!(e.to_string().contains("U+000D"), "{e}");
        assert!(no_control("the url", "http://h/\t", false).is_err());
        no_control("the url", "http://h/s?q=%0D%0A", false).unwrap();
    }
}
