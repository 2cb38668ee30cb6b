//! Model work done elsewhere: the shards a cache hands to a [`Remote`] (a cluster of workers
//! running `ranklab work`), and the all-or-nothing check of the record files that come back.
//!
//! The unit of work is the cache's own: a vector keyed by (embedder identity, sha256 of the text),
//! a logit keyed by (cross-encoder identity, sha256 of query and passage). A cache that has a
//! remote sends it the keys it misses, split into shards; a worker computes a shard with the
//! local code path (an in-memory cache of the same kind, so the same batching and settings) and
//! writes a record file in the cache's own format (`models::record_file`). The cache merges a
//! returned file only when the whole of it verifies (`verify`): its header names the cache's
//! kind, identity and payload size, every record's checksum holds, its keys are exactly the
//! shard's (none missing, none not asked for), and every payload decodes to finite values.
//! Anything else is refused and the shard is retried; an unverified record never enters a cache.
//!
//! Shard inputs are JSON lines (the format of `ranklab work --in`, `docs/formats.md`):
//! `{"text": "..."}` per text to embed, `{"query": "...", "passages": ["...", ...]}` per query
//! whose passages to score (each query's passages in the order the local run would score them,
//! a query never split over two shards, so a batch holds the same pairs as it would locally).

use std::collections::{BTreeMap, BTreeSet};

use super::record_file::RecordFile;
use crate::{Error, Result};

/// What a worker computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkKind {
    /// Bi-encoder vectors of texts (`ranklab work embed`).
    Embed,
    /// Cross-encoder logits of (query, passage) pairs (`ranklab work score`).
    Score,
    /// An LLM judge's grade distributions of (query, passage) pairs (`ranklab work grade`).
    Grade,
    /// One fold's fine-tuned cross-encoder, trained on its (query, passage, label) pairs
    /// (`ranklab work finetune`); the returned file is the model file of
    /// `rerank::finetuned`, not a record file.
    Finetune,
}

impl WorkKind {
    /// The subcommand of `ranklab work`: `embed`, `score`, `grade` or `finetune`.
    pub fn name(self) -> &'static str {
        match self {
            WorkKind::Embed => "embed",
            WorkKind::Score => "score",
            WorkKind::Grade => "grade",
            WorkKind::Finetune => "finetune",
        }
    }
}

/// One shard: the JSON-lines input of `ranklab work`, and how many records it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// The `--in` file's bytes.
    pub input: Vec<u8>,
    /// Records the returned file must hold (distinct keys).
    pub records: usize,
}

/// Work for a remote: every shard of one model.
#[derive(Debug, Clone)]
pub struct WorkRequest {
    /// Embed or score.
    pub kind: WorkKind,
    /// The model id a worker loads (`--model`).
    pub model: String,
    /// Further arguments of `ranklab work` (e.g. `--batch 4`).
    pub args: Vec<String>,
    /// The identity a returned file must carry: the cache's.
    pub identity: String,
    /// The shards.
    pub shards: Vec<Shard>,
}

/// What a [`Remote`] hands each returned record file to: `accept(shard, bytes)` verifies and
/// merges it, returning the records merged, or why the file was refused.
pub type Accept<'a> = dyn FnMut(usize, &[u8]) -> std::result::Result<usize, String> + 'a;

/// Where model work can be sent (a cluster). Implemented by the harness (`cluster::Ray`).
pub trait Remote: Send + Sync {
    /// Records per shard the cache should aim for (a score shard ends with a whole query).
    fn shard_records(&self) -> usize;
    /// Runs every shard of `work` elsewhere and hands each returned record file to
    /// `accept(shard, bytes)`, which verifies it and, when it verifies, merges it into the cache
    /// (returning the records merged); an `Err` is the reason it was refused and the shard must
    /// be run again. Returns once every shard was accepted; an error when a shard cannot be
    /// completed (the cache then holds only the shards accepted before).
    fn compute(&self, work: &WorkRequest, accept: &mut Accept<'_>) -> Result<()>;
}

/// A cache's remote: where its misses go, and the model id (and `ranklab work` arguments) a
/// worker loads to compute them.
#[derive(Clone)]
pub struct Offload {
    /// The cluster.
    pub remote: std::sync::Arc<dyn Remote>,
    /// The model id.
    pub model: String,
    /// Further arguments of `ranklab work` (e.g. `--batch 4`).
    pub args: Vec<String>,
}

impl std::fmt::Debug for Offload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Offload")
            .field("model", &self.model)
            .field("args", &self.args)
            .finish_non_exhaustive()
    }
}

/// Splits `items` (each with its record count) into consecutive shards of about `target`
/// records; an item is never split.
pub(crate) fn split<T>(items: Vec<(T, usize)>, target: usize) -> Vec<Vec<T>> {
    let target = target.max(1);
    let mut out: Vec<Vec<T>> = Vec::new();
    let mut in_last = usize::MAX;
    for (item, n) in items {
        if in_last >= target {
            out.push(Vec::new());
            in_last = 0;
        }
        out.last_mut().expect("pushed above").push(item);
        in_last += n;
    }
    out
}

/// The `--in` bytes of texts to embed.
pub fn embed_input(texts: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for t in texts {
        serde_json::to_writer(&mut out, &serde_json::json!({ "text": t })).expect("serializes");
        out.push(b'\n');
    }
    out
}

/// The `--in` bytes of queries and the passages to score against each.
pub fn score_input(requests: &[(&str, Vec<&str>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (q, p) in requests {
        serde_json::to_writer(&mut out, &serde_json::json!({ "query": q, "passages": p }))
            .expect("serializes");
        out.push(b'\n');
    }
    out
}

pub(crate) fn lines<T: serde::de::DeserializeOwned>(
    name: &str,
    bytes: &[u8],
    what: &str,
) -> Result<Vec<T>> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Error::Config(format!("{name}: not UTF-8 ({e})")))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(line).map_err(|e| {
            Error::Config(format!(
                "{name}:{}: {e}; each line must be {what} (see `ranklab help formats`)",
                i + 1
            ))
        })?);
    }
    Ok(out)
}

/// Parses the `--in` file of `ranklab work embed` (`name` names it in errors).
pub fn parse_embed_input(name: &str, bytes: &[u8]) -> Result<Vec<String>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        text: String,
    }
    Ok(lines::<Line>(name, bytes, r#"{"text": "..."}"#)?
        .into_iter()
        .map(|l| l.text)
        .collect())
}

/// Parses the `--in` file of `ranklab work score`.
pub fn parse_score_input(name: &str, bytes: &[u8]) -> Result<Vec<(String, Vec<String>)>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        query: String,
        passages: Vec<String>,
    }
    Ok(
        lines::<Line>(name, bytes, r#"{"query": "...", "passages": ["...", ...]}"#)?
            .into_iter()
            .map(|l| (l.query, l.passages))
            .collect(),
    )
}

/// Checks a returned record file whole against what was asked: header (`kind`, `identity`,
/// `payload` bytes per record), every checksum, exactly the keys `asked`, and `payload_ok` for
/// every payload. The verified records, or why the file is refused.
pub(crate) fn verify(
    bytes: &[u8],
    kind: &str,
    identity: &str,
    payload: usize,
    asked: &BTreeSet<[u8; 32]>,
    payload_ok: impl Fn(&[u8]) -> bool,
) -> std::result::Result<BTreeMap<[u8; 32], Box<[u8]>>, String> {
    let records = RecordFile::in_memory(kind, identity, payload).parse_whole(bytes)?;
    if let Some(k) = records.keys().find(|k| !asked.contains(*k)) {
        return Err(format!(
            "holds a key that was not asked for ({}...)",
            &super::hex(k)[..16]
        ));
    }
    if records.len() != asked.len() {
        return Err(format!(
            "holds {} of the {} records asked for",
            records.len(),
            asked.len()
        ));
    }
    if let Some(k) = records.iter().find(|(_, v)| !payload_ok(v)).map(|(k, _)| k) {
        return Err(format!(
            "record {}... holds a non-finite value",
            &super::hex(k)[..16]
        ));
    }
    Ok(records)
}

/// True when every 4-byte little-endian float of `bytes` is finite.
pub(crate) fn finite_f32s(bytes: &[u8]) -> bool {
    bytes
        .chunks_exact(4)
        .all(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")).is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_keeps_items_whole_and_fills_shards_to_the_target() {
        let items = vec![("a", 2), ("b", 2), ("c", 5), ("d", 1), ("e", 1)];
        assert_eq!(
            split(items, 4),
            vec![vec!["a", "b"], vec!["c"], vec!["d", "e"]]
        );
        assert!(split(Vec::<(u8, usize)>::new(), 4).is_empty());
    }

    #[test]
    fn inputs_round_trip_and_bad_lines_name_the_line() {
        let b = embed_input(&["x", "y \"z\"\n"]);
        assert_eq!(parse_embed_input("in", &b).unwrap(), vec!["x", "y \"z\"\n"]);
        let b = score_input(&[("q", vec!["p1", "p2"])]);
        assert_eq!(
            parse_score_input("in", &b).unwrap(),
            vec![("q".to_string(), vec!["p1".to_string(), "p2".to_string()])]
        );
        let err = parse_embed_input("in.jsonl", b"{\"text\": \"a\"}\n{\"txt\": 1}\n").unwrap_err();
        assert!(err.to_string().contains("in.jsonl:2"), "{err}");
    }

    fn file(identity: &str, recs: &[([u8; 32], [u8; 4])]) -> Vec<u8> {
        let mut f = RecordFile::in_memory("k", identity, 4);
        for (k, v) in recs {
            f.insert(*k, v);
        }
        f.to_bytes()
    }

    #[test]
    fn verify_accepts_exactly_the_asked_keys_of_the_right_identity() {
        let one = 1.0f32.to_le_bytes();
        let (a, b, c) = ([1u8; 32], [2u8; 32], [3u8; 32]);
        let asked: BTreeSet<_> = [a, b].into();
        let good = file("m", &[(a, one), (b, one)]);
        assert_eq!(
            verify(&good, "k", "m", 4, &asked, finite_f32s)
                .unwrap()
                .len(),
            2
        );
        let why = |bytes: &[u8]| verify(bytes, "k", "m", 4, &asked, finite_f32s).unwrap_err();
        assert!(why(&file("other", &[(a, one), (b, one)])).contains("another model identity"));
        assert!(why(&file("m", &[(a, one), (b, one), (c, one)])).contains("not asked for"));
        assert!(why(&file("m", &[(a, one)])).contains("1 of the 2"));
        assert!(why(&file("m", &[(a, one), (b, f32::NAN.to_le_bytes())])).contains("non-finite"));
        let mut flipped = good.clone();
        let n = flipped.len();
        flipped[n - 40] ^= 1;
        assert!(why(&flipped).contains("checksum"));
        assert!(why(&good[..good.len() - 3]).contains("truncated"));
        assert!(why(b"not a record file").contains("not a ranklab cache file"));
    }
}
