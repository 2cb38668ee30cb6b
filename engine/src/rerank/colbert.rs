//! A late-interaction (ColBERT) reranker: answerai-colbert-small-v1 run through `ort` directly.
//!
//! **What is scored.** The query and the passage are encoded apart, one vector per token, and
//! the pair's score is MaxSim: for each query vector, the best cosine over the passage's
//! vectors, summed over the query vectors. The recipe is the model card's (colbert-ai's
//! `QueryTokenizer` / `DocTokenizer` / `ColBERT.score`):
//! - query ids `[CLS] [unused0] tokens… [SEP]`, cut to [`QUERY_LEN`] and padded with `[MASK]`
//!   to exactly [`QUERY_LEN`]; the `[MASK]` positions get attention 0, but their output vectors
//!   are kept and scored (query augmentation);
//! - passage ids `[CLS] [unused1] tokens… [SEP]`, the tokens cut so that the whole is at most
//!   [`DOC_LEN`]; the vectors of punctuation tokens (the single-token ids of ASCII punctuation)
//!   are dropped;
//! - every vector L2-normalised; `token_type_ids` all 0.
//!
//! **Without the projection.** The ONNX graph of the pinned package ends at the encoder
//! (`last_hidden_state`, 384-d); the model's bias-free 384→96 projection is not in it, nor in
//! any registry package. MaxSim runs over the normalised 384-d hidden states: the published
//! model's encoder, not its 96-d vectors, so its published figures do not apply. The identity
//! says so (`vectors=hidden-384-no-projection`).
//!
//! **Why [`DOC_LEN`] = 300.** The position limit is 512, colbert-ai's default `doc_maxlen` is
//! 220, and 300 is the document length this model ships with in its sentence-transformers /
//! PyLate configuration (the length it is meant to index with). ranklab takes the model's own
//! setting; a passage longer than 297 word pieces is cut, as the cross-encoder cuts at 512.
//!
//! **Determinism.** The int8 graph quantises activations over the whole input tensor, so a
//! text's vectors depend on what is batched with it. Every text is encoded alone (batch 1, one
//! single-threaded session per worker): a pair's score is a function of the pair alone.
//!
//! **Reuse.** Within one scorer, the vectors of a query or passage already encoded are kept in
//! memory (keyed by the text's sha256) and not encoded again: a section shortlisted for several
//! queries is encoded once. On disk, the token vectors of every text encoded are kept in a
//! token-vector cache ([`TokenRows`], the embedding cache's checked record files, one file per
//! model identity beside the embeddings): a later run encodes only texts it has never seen, and
//! the ONNX sessions are created only when a text must be encoded. Pair scores persist through
//! the score cache like a cross-encoder's.

use std::collections::HashMap;
use std::sync::Arc;

use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::Tensor;
use tokenizers::Tokenizer;

use super::CrossEncoder;
use crate::models::model_cache::cache_counts;
use crate::models::remote::WorkKind;
use crate::models::{self, sha256, CacheKind, ModelCache, ModelDir, ModelKind};
use crate::{Error, Result};

/// Query length in tokens, markers and `[MASK]` padding included (the card's `query_maxlen`).
pub const QUERY_LEN: usize = 32;
/// Longest passage in tokens, markers included (see the module doc).
pub const DOC_LEN: usize = 300;

const CLS: u32 = 101;
const SEP: u32 = 102;
const MASK: u32 = 103;
/// `[unused0]`: the query marker `[Q]`.
const QUERY_MARKER: u32 = 1;
/// `[unused1]`: the document marker `[D]`.
const DOC_MARKER: u32 = 2;
/// Width of a token vector (the encoder's hidden size).
pub const DIM: usize = 384;

/// Token vectors kept in memory before the store is emptied (about 300 MB of f32 at 384-d).
const MEMO_ROWS: usize = 200_000;

/// One text's token vectors, row-major `rows × DIM`, each row L2-normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenVectors {
    /// `rows × DIM` values.
    pub data: Vec<f32>,
}

impl TokenVectors {
    /// Number of token vectors.
    pub fn rows(&self) -> usize {
        self.data.len() / DIM
    }

    fn row(&self, i: usize) -> &[f32] {
        &self.data[i * DIM..(i + 1) * DIM]
    }
}

cache_counts! {
    /// Token-vector cache counters (texts, not rows).
    pub struct TokenStats {
        /// Texts whose vectors came from the cache.
        hits = served,
        /// Texts encoded by the model.
        misses = computed,
        /// Misses whose rows were on disk but damaged.
        rebuilt = rebuilt,
    }
    display "{} cached, {} encoded, {} rebuilt"
}

/// The token-vector cache's kind of records: one token vector of a text per record, as
/// `1 + DIM` little-endian f32s (the text's row count, then the row). Row `r` of a text is keyed
/// by `sha256(text key | r as u32 LE)`, the text key being the sha256 of `q` or `d` (query or
/// passage layout) followed by the text. Fixed-size records keep the record file's rule that one
/// damaged record costs only itself; a text is served only when all its rows are present and
/// agree on the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenRows;

impl CacheKind for TokenRows {
    // Changing KIND or EXT invalidates every token-vector file.
    const KIND: &'static str = "late-interaction token vectors";
    const EXT: &'static str = "tok";
    const ROLE: &'static str = "late-interaction model";
    const WORK: WorkKind = WorkKind::Embed;
    type Stats = TokenStats;
    fn payload(&self) -> usize {
        (1 + DIM) * 4
    }
}

/// Token vectors of one late-interaction model, keyed by text.
pub type TokenCache = ModelCache<TokenRows>;

fn row_key(text_key: &[u8; 32], row: usize) -> [u8; 32] {
    let mut b = [0u8; 36];
    b[..32].copy_from_slice(text_key);
    b[32..].copy_from_slice(&(row as u32).to_le_bytes());
    sha256(&b)
}

/// Reads a text's rows from `cache`: None unless every row is present and agrees on the count.
fn cached_rows(cache: &TokenCache, text_key: &[u8; 32]) -> Option<TokenVectors> {
    let decode = |b: &[u8]| -> Vec<f32> {
        b.chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    };
    let first = cache.records.lookup(&[row_key(text_key, 0)], decode);
    let first = first.found.into_iter().next().flatten()?;
    let n = first[0];
    if !((1.0..=4096.0).contains(&n) && n.fract() == 0.0) {
        return None;
    }
    let n = n as usize;
    let keys: Vec<[u8; 32]> = (1..n).map(|r| row_key(text_key, r)).collect();
    let rest = cache.records.lookup(&keys, decode);
    let mut data = Vec::with_capacity(n * DIM);
    data.extend_from_slice(&first[1..]);
    for row in rest.found {
        let row = row?;
        if row[0] != n as f32 {
            return None;
        }
        data.extend_from_slice(&row[1..]);
    }
    Some(TokenVectors { data })
}

fn store_rows(cache: &TokenCache, text_key: &[u8; 32], v: &TokenVectors) -> Result<()> {
    let n = v.rows();
    let records: Vec<([u8; 32], Vec<u8>)> = (0..n)
        .map(|r| {
            let mut b = Vec::with_capacity((1 + DIM) * 4);
            b.extend_from_slice(&(n as f32).to_le_bytes());
            for x in v.row(r) {
                b.extend_from_slice(&x.to_le_bytes());
            }
            (row_key(text_key, r), b)
        })
        .collect();
    cache.store(records.iter().map(|(k, b)| (*k, b.as_slice())))
}

/// MaxSim of a query's and a passage's normalised token vectors: for each query row the largest
/// dot product with a passage row, summed over the query rows (0 for an empty passage).
pub fn maxsim(query: &TokenVectors, passage: &TokenVectors) -> f32 {
    if passage.rows() == 0 {
        return 0.0;
    }
    (0..query.rows())
        .map(|i| {
            let q = query.row(i);
            (0..passage.rows())
                .map(|j| dot(q, passage.row(j)))
                .fold(f32::NEG_INFINITY, f32::max)
        })
        .sum()
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The ids, attention mask and the positions kept of one text, as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// Token ids, markers included.
    pub ids: Vec<u32>,
    /// 1 for a real token, 0 for query `[MASK]` padding.
    pub attention: Vec<u32>,
    /// Whether each position's vector is kept (false for a passage's punctuation).
    pub keep: Vec<bool>,
}

/// The tokenizer side of the recipe (no model needed).
#[derive(Debug, Clone)]
pub struct ColbertTokenizer {
    tokenizer: Tokenizer,
    skip: Vec<u32>,
}

impl ColbertTokenizer {
    /// The model's `tokenizer.json`, with its fixed padding and truncation removed (the ids
    /// are assembled here).
    pub fn load(model: &ModelDir) -> Result<ColbertTokenizer> {
        let path = model.file("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&path).map_err(|e| Error::Model {
            model: model.id.clone(),
            message: format!("reading {}: {e}", path.display()),
        })?;
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| Error::Model {
            model: model.id.clone(),
            message: e.to_string(),
        })?;
        let mut skip: Vec<u32> = PUNCTUATION
            .chars()
            .filter_map(|c| tokenizer.token_to_id(&c.to_string()))
            .collect();
        skip.sort_unstable();
        skip.dedup();
        Ok(ColbertTokenizer { tokenizer, skip })
    }

    fn pieces(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| Error::Model {
                model: "answerai-colbert-small-v1".into(),
                message: format!("tokenizing: {e}"),
            })?;
        Ok(enc.get_ids().to_vec())
    }

    /// A query as the model reads it: `[CLS] [unused0] tokens… [SEP]` padded with `[MASK]`
    /// (attention 0) to [`QUERY_LEN`]; every position kept.
    pub fn query(&self, text: &str) -> Result<Encoded> {
        let mut ids = vec![CLS, QUERY_MARKER];
        ids.extend(self.pieces(text)?.into_iter().take(QUERY_LEN - 3));
        ids.push(SEP);
        let mut attention = vec![1; ids.len()];
        ids.resize(QUERY_LEN, MASK);
        attention.resize(QUERY_LEN, 0);
        Ok(Encoded {
            keep: vec![true; QUERY_LEN],
            ids,
            attention,
        })
    }

    /// A passage as the model reads it: `[CLS] [unused1] tokens… [SEP]`, at most [`DOC_LEN`];
    /// punctuation positions not kept.
    pub fn passage(&self, text: &str) -> Result<Encoded> {
        let mut ids = vec![CLS, DOC_MARKER];
        ids.extend(self.pieces(text)?.into_iter().take(DOC_LEN - 3));
        ids.push(SEP);
        let keep = ids
            .iter()
            .map(|id| self.skip.binary_search(id).is_err())
            .collect();
        Ok(Encoded {
            attention: vec![1; ids.len()],
            ids,
            keep,
        })
    }
}

/// Python's `string.punctuation`: the symbols whose single-token ids colbert-ai skips.
const PUNCTUATION: &str = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~";

/// The late-interaction reranker over a verified model directory.
pub struct ColbertReranker {
    /// The sessions, created when the first text must be encoded.
    workers: Vec<Session>,
    model: ModelDir,
    n_workers: usize,
    tokens: Option<TokenCache>,
    tokenizer: ColbertTokenizer,
    id: String,
    identity: String,
    memo: HashMap<[u8; 32], Arc<TokenVectors>>,
    memo_rows: usize,
    encoded: usize,
}

impl std::fmt::Debug for ColbertReranker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColbertReranker")
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl ColbertReranker {
    /// A verified late-interaction model directory, to run on `workers` single-threaded
    /// sessions (None: one per core), without a token-vector cache. The sessions are created
    /// when the first text is encoded.
    pub fn load(model: &ModelDir, workers: Option<usize>) -> Result<ColbertReranker> {
        model.expect_kind(ModelKind::LateInteraction, "a cross-encoder or embedder")?;
        let tokenizer = ColbertTokenizer::load(model)?;
        Ok(ColbertReranker {
            workers: Vec::new(),
            model: model.clone(),
            n_workers: workers.unwrap_or_else(models::default_workers).max(1),
            tokens: None,
            tokenizer,
            id: model.id.clone(),
            identity: ColbertReranker::identity_of(model),
            memo: HashMap::new(),
            memo_rows: 0,
            encoded: 0,
        })
    }

    /// Keeps token vectors in the cache under `dir` (normally `ModelStore::embeddings_dir()`),
    /// opened (read and verified) now for this model's identity.
    pub fn with_token_cache(mut self, dir: &std::path::Path) -> Result<ColbertReranker> {
        self.tokens = Some(ModelCache::open_as(dir, &self.identity, TokenRows)?);
        Ok(self)
    }

    /// The token-vector cache's counts so far (None without a cache).
    pub fn token_stats(&self) -> Option<TokenStats> {
        self.tokens.as_ref().map(ModelCache::stats)
    }

    /// Whether the ONNX sessions exist (they are created when a text must be encoded).
    pub fn sessions_loaded(&self) -> bool {
        !self.workers.is_empty()
    }

    fn sessions(&mut self) -> Result<&mut [Session]> {
        if self.workers.is_empty() {
            let environment = models::ort_environment()?;
            let id = self.model.id.clone();
            let fail = |e: String| Error::Model {
                model: id.clone(),
                message: e,
            };
            for _ in 0..self.n_workers {
                let session = Session::builder(&environment)
                    .map_err(|e| fail(e.to_string()))?
                    .with_optimization_level(GraphOptimizationLevel::Level3)
                    .map_err(|e| fail(e.to_string()))?
                    .with_intra_threads(1)
                    .map_err(|e| fail(e.to_string()))?
                    .commit_from_file(self.model.file("model.onnx"))
                    .map_err(|e| fail(e.to_string()))?;
                self.workers.push(session);
            }
        }
        Ok(&mut self.workers)
    }

    /// The identity of `model` ([`CrossEncoder::identity`]), known without loading it.
    pub fn identity_of(model: &ModelDir) -> String {
        format!(
            "{} onnx-sha256={} query_len={QUERY_LEN} doc_len={DOC_LEN} \
             vectors=hidden-{DIM}-no-projection skip=punctuation score=maxsim-cosine batch=1",
            model.id, model.sha256
        )
    }

    /// Texts run through the model so far (queries and passages, each distinct text once).
    pub fn encoded(&self) -> usize {
        self.encoded
    }

    /// The normalised token vectors of each text (query or passage layout), from memory or
    /// encoded now, each text alone, spread over the workers.
    pub fn vectors(&mut self, texts: &[(&str, bool)]) -> Result<Vec<Arc<TokenVectors>>> {
        let keys: Vec<[u8; 32]> = texts
            .iter()
            .map(|(t, is_query)| {
                let mut b = Vec::with_capacity(t.len() + 1);
                b.push(if *is_query { b'q' } else { b'd' });
                b.extend_from_slice(t.as_bytes());
                sha256(&b)
            })
            .collect();
        let mut todo: Vec<usize> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut from_disk: HashMap<[u8; 32], Arc<TokenVectors>> = HashMap::new();
        let mut tally = models::Tally::default();
        for (i, k) in keys.iter().enumerate() {
            if !self.memo.contains_key(k) && seen.insert(*k) {
                match self.tokens.as_ref().and_then(|c| cached_rows(c, k)) {
                    Some(v) => {
                        tally.served += 1;
                        from_disk.insert(*k, Arc::new(v));
                    }
                    None => {
                        tally.computed += 1;
                        todo.push(i);
                    }
                }
            }
        }
        let encoded: Vec<Encoded> = todo
            .iter()
            .map(|&i| {
                let (t, is_query) = texts[i];
                if is_query {
                    self.tokenizer.query(t)
                } else {
                    self.tokenizer.passage(t)
                }
            })
            .collect::<Result<_>>()?;
        let id = self.id.clone();
        let out = if encoded.is_empty() {
            Vec::new()
        } else {
            models::run_on_workers(self.sessions()?, encoded.len(), |s, j| {
                run(s, &encoded[j]).map_err(|message| Error::Model {
                    model: id.clone(),
                    message,
                })
            })?
        };
        self.encoded += out.len();
        if let Some(cache) = &self.tokens {
            for (&i, v) in todo.iter().zip(&out) {
                store_rows(cache, &keys[i], v)?;
            }
            cache.record(tally);
        }
        // Everything this call returns, gathered before the memory store may be emptied.
        let mut have: HashMap<[u8; 32], Arc<TokenVectors>> = from_disk;
        for (&i, v) in todo.iter().zip(out) {
            have.insert(keys[i], Arc::new(v));
        }
        for k in &keys {
            if let (false, Some(v)) = (have.contains_key(k), self.memo.get(k)) {
                have.insert(*k, v.clone());
            }
        }
        let new_rows: usize = have
            .iter()
            .filter(|(k, _)| !self.memo.contains_key(*k))
            .map(|(_, v)| v.rows())
            .sum();
        if self.memo_rows + new_rows > MEMO_ROWS {
            self.memo.clear();
            self.memo_rows = 0;
        }
        for (k, v) in &have {
            if !self.memo.contains_key(k) {
                self.memo_rows += v.rows();
                self.memo.insert(*k, v.clone());
            }
        }
        Ok(keys.iter().map(|k| have[k].clone()).collect())
    }
}

/// Runs one text alone through a session; returns the normalised vectors of its kept positions.
fn run(session: &mut Session, enc: &Encoded) -> std::result::Result<TokenVectors, String> {
    let n = enc.ids.len();
    let as_i64 = |v: &[u32]| v.iter().map(|&x| i64::from(x)).collect::<Vec<i64>>();
    let tensor = |v: Vec<i64>| Tensor::from_array(([1usize, n], v)).map_err(|e| e.to_string());
    let inputs = ort::inputs![
        "input_ids" => tensor(as_i64(&enc.ids))?,
        "attention_mask" => tensor(as_i64(&enc.attention))?,
        "token_type_ids" => tensor(vec![0; n])?,
    ];
    let outputs = session.run(inputs).map_err(|e| e.to_string())?;
    let value = outputs
        .get("last_hidden_state")
        .ok_or("the model has no last_hidden_state output")?;
    let (shape, hidden) = value
        .try_extract_tensor::<f32>()
        .map_err(|e| e.to_string())?;
    if shape.len() != 3 || shape[1] as usize != n || shape[2] as usize != DIM {
        return Err(format!(
            "last_hidden_state has shape {shape:?}, expected [1, {n}, {DIM}]"
        ));
    }
    let mut data = Vec::with_capacity(n * DIM);
    for (i, keep) in enc.keep.iter().enumerate() {
        if !keep {
            continue;
        }
        let row = &hidden[i * DIM..(i + 1) * DIM];
        let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !norm.is_finite() || norm == 0.0 {
            return Err(format!("token {i} has a vector of norm {norm}"));
        }
        data.extend(row.iter().map(|x| x / norm));
    }
    Ok(TokenVectors { data })
}

impl CrossEncoder for ColbertReranker {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        let mut out = self.score_many(&[(query, passages.to_vec())])?;
        Ok(out.pop().expect("one request, one list"))
    }

    /// Every distinct text of all requests encoded once (spread over the workers), then MaxSim.
    fn score_many(&mut self, requests: &[(&str, Vec<&str>)]) -> Result<Vec<Vec<f32>>> {
        let mut texts: Vec<(&str, bool)> = Vec::new();
        for (q, passages) in requests {
            texts.push((q, true));
            texts.extend(passages.iter().map(|p| (*p, false)));
        }
        let vectors = self.vectors(&texts)?;
        let mut at = 0;
        Ok(requests
            .iter()
            .map(|(_, passages)| {
                let q = &vectors[at];
                let scores = (0..passages.len())
                    .map(|j| maxsim(q, &vectors[at + 1 + j]))
                    .collect();
                at += 1 + passages.len();
                scores
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[[f32; 2]]) -> Vec<f32> {
        // Pads each 2-d row into a DIM-wide row of zeros.
        let mut out = vec![0.0; v.len() * DIM];
        for (i, r) in v.iter().enumerate() {
            out[i * DIM] = r[0];
            out[i * DIM + 1] = r[1];
        }
        out
    }

    #[test]
    fn maxsim_sums_each_query_rows_best_match() {
        let q = TokenVectors {
            data: rows(&[[1.0, 0.0], [0.0, 1.0]]),
        };
        let d = TokenVectors {
            data: rows(&[[0.6, 0.8], [1.0, 0.0], [-1.0, 0.0]]),
        };
        // Row 1: best of (0.6, 1.0, -1.0) = 1.0; row 2: best of (0.8, 0.0, 0.0) = 0.8.
        assert!((maxsim(&q, &d) - 1.8).abs() < 1e-6);
        let empty = TokenVectors { data: vec![] };
        assert_eq!(maxsim(&q, &empty), 0.0);
    }
}
