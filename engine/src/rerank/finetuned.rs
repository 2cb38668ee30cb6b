//! A fine-tuned cross-encoder on disk and as a pair scorer.
//!
//! **The file** (`<cache>/finetuned/<key>.bin`, written atomically): the line
//! `ranklab-finetuned 1`, one line of JSON `{"key", "body_sha256", "tensors": [[name, [dims]]]}`,
//! then the body: every tensor's values as little-endian f32, in the order of `tensors` (names in
//! byte order). `key` is the hash of everything the weights depend on (see
//! `ranklab::finetune`): a file is used only when its key is the one asked for, its body hashes
//! to `body_sha256` and every tensor the model reads is there with its shape; anything else is
//! reported as broken (the caller trains again), never loaded. **A head** (`<key>.head`) is the
//! file's first two lines alone: the record of how the model trained, without its weights, for
//! a cache that carries a model's scores to another machine but not its 133 MB of weights.
//!
//! **The scorer** ([`FinetunedCrossEncoder`]): the float model ([`Bert`]) over those weights,
//! one pair per forward pass (a pair's score never depends on the others; the pairs of a call run
//! side by side when candle's products are single-threaded), identity
//! `finetuned:<key>` so that its scores are cached apart from every other model's.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::bert::{Bert, Config, Weights};
use super::CrossEncoder;
use crate::models::hashing::{hex, sha256};
use crate::{Error, Result};

const MAGIC: &str = "ranklab-finetuned 1";

#[derive(Serialize, Deserialize)]
struct Header {
    key: String,
    body_sha256: String,
    tensors: Vec<(String, Vec<usize>)>,
    /// What the caller keeps with the weights (how training went), returned as stored.
    record: serde_json::Value,
}

/// The file of the model `key` under the cache folder `dir` (`<cache>/finetuned`).
pub fn path_of(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.bin"))
}

fn broken(path: &Path, why: impl std::fmt::Display) -> Error {
    Error::Model {
        model: path.display().to_string(),
        message: format!("fine-tuned model file is broken: {why}"),
    }
}

/// The bytes of `weights` saved as the model `key`, with `record`.
pub fn to_bytes(key: &str, weights: &Weights, record: &serde_json::Value) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut tensors = Vec::new();
    for (name, t) in weights {
        let values = t
            .flatten_all()
            .and_then(|t| t.to_dtype(DType::F32))
            .and_then(|t| t.to_vec1::<f32>())
            .map_err(|e| broken(Path::new(name), e))?;
        for v in values {
            body.extend_from_slice(&v.to_le_bytes());
        }
        tensors.push((name.clone(), t.dims().to_vec()));
    }
    let header = Header {
        key: key.to_string(),
        body_sha256: hex(&sha256(&body)),
        tensors,
        record: record.clone(),
    };
    let mut out = format!(
        "{MAGIC}\n{}\n",
        serde_json::to_string(&header).expect("a header serializes")
    )
    .into_bytes();
    out.extend_from_slice(&body);
    Ok(out)
}

/// Writes `weights` as the model `key` under `dir` with `record`, atomically.
pub fn save(
    dir: &Path,
    key: &str,
    weights: &Weights,
    record: &serde_json::Value,
) -> Result<PathBuf> {
    let path = path_of(dir, key);
    crate::atomic::write(&path, &to_bytes(key, weights, record)?)?;
    Ok(path)
}

/// The weights and record of the model `key` under `dir`: `Ok(None)` when there is no file; an
/// error when the file is there but broken or foreign (see the module's documentation).
pub fn load(dir: &Path, key: &str) -> Result<Option<(Weights, serde_json::Value)>> {
    let path = path_of(dir, key);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    from_bytes(&path, key, &bytes).map(Some)
}

/// The model file of `key` that `from` (the worker of a cluster) returned: checked as a file of
/// the cache is (its key the one asked for, its body hashing to its header's sha256, every
/// tensor the model reads there), then written atomically to its place under `dir`. Returns
/// its record; a file that does not verify is an error and nothing is written.
pub fn store(dir: &Path, key: &str, bytes: &[u8], from: &str) -> Result<serde_json::Value> {
    let (_, record) = from_bytes(Path::new(from), key, bytes)?;
    crate::atomic::write(&path_of(dir, key), bytes)?;
    Ok(record)
}

/// The file beside the model `key` under `dir` that holds only the model file's first two
/// lines (the format's line and the header, with the training record): what carries a fold's
/// record to a machine that has its scores but not its weights (`just beir-finetune-keep`).
pub fn head_path_of(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.head"))
}

/// The training record of the model `key` from its head file under `dir` ([`head_path_of`]):
/// `Ok(None)` when there is none; an error when it is there but is not the head of the model
/// `key`. A head holds no weights: whoever scores with the model must still train or load it.
pub fn load_head(dir: &Path, key: &str) -> Result<Option<serde_json::Value>> {
    let path = head_path_of(dir, key);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(&path, e)),
    };
    let (header, rest) = header_of(&path, key, &bytes)?;
    if !rest.is_empty() {
        return Err(broken(&path, "a head file holds two lines and no weights"));
    }
    Ok(Some(header.record))
}

/// The header of the model file `bytes` (checked to be the model `key`'s) and the bytes after it.
fn header_of<'a>(path: &Path, key: &str, bytes: &'a [u8]) -> Result<(Header, &'a [u8])> {
    let mut lines = bytes.splitn(3, |&b| b == b'\n');
    if lines.next() != Some(MAGIC.as_bytes()) {
        return Err(broken(
            path,
            "it does not start with the format's first line",
        ));
    }
    let header: Header = lines
        .next()
        .and_then(|h| serde_json::from_slice(h).ok())
        .ok_or_else(|| broken(path, "its header is not the format's JSON"))?;
    let body = lines.next().unwrap_or_default();
    if header.key != key {
        return Err(broken(
            path,
            format!("it holds the model {}, not {key}", header.key),
        ));
    }
    Ok((header, body))
}

fn from_bytes(path: &Path, key: &str, bytes: &[u8]) -> Result<(Weights, serde_json::Value)> {
    let (header, body) = header_of(path, key, bytes)?;
    if hex(&sha256(body)) != header.body_sha256 {
        return Err(broken(
            path,
            "its weights do not hash to the recorded sha256",
        ));
    }
    let mut weights = Weights::new();
    let mut at = 0usize;
    for (name, dims) in header.tensors {
        let n: usize = dims.iter().product();
        let end = at + 4 * n;
        let raw = body
            .get(at..end)
            .ok_or_else(|| broken(path, format!("its body ends inside {name}")))?;
        let values: Vec<f32> = raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let t = Tensor::from_vec(values, dims, &Device::Cpu).map_err(|e| broken(path, e))?;
        weights.insert(name, t);
        at = end;
    }
    if at != body.len() {
        return Err(broken(path, "its body is longer than its tensors"));
    }
    let model = Bert::new(weights, Config::default()).map_err(|e| broken(path, e))?;
    Ok((model.into_weights(), header.record))
}

/// A fine-tuned cross-encoder as a pair scorer (see the module's documentation).
pub struct FinetunedCrossEncoder {
    identity: String,
    model: Bert,
    tokenizer: tokenizers::Tokenizer,
}

impl FinetunedCrossEncoder {
    /// The scorer identity of the model `key`.
    pub fn identity_of(key: &str) -> String {
        format!("finetuned:{key}")
    }

    /// The scorer over `weights` (the model `key`), tokenizing with `tokenizer`.
    pub fn new(
        key: &str,
        weights: Weights,
        tokenizer: tokenizers::Tokenizer,
    ) -> Result<FinetunedCrossEncoder> {
        let model = Bert::new(weights, Config::default()).map_err(|e| Error::Model {
            model: key.to_string(),
            message: e,
        })?;
        Ok(FinetunedCrossEncoder {
            identity: FinetunedCrossEncoder::identity_of(key),
            model,
            tokenizer,
        })
    }
}

impl CrossEncoder for FinetunedCrossEncoder {
    fn identity(&self) -> &str {
        &self.identity
    }

    /// One pair at a time, its matrix products split over candle's threads; or, when candle's
    /// products run on one thread (`RAYON_NUM_THREADS=1`) and the machine has more cores, the
    /// pairs side by side, one forward pass per core ([`side_by_side`]). On 2 cores the second
    /// scores 1.5× as many SciFact pairs per second as the first (`examples/score_speed.rs`,
    /// which also checks that both give the same bits: the products sum each element in one
    /// order whatever the threads). The first failing pair in `passages`' order is the error.
    fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        let (model, tokenizer) = (&self.model, &self.tokenizer);
        let one = |p: &&str| model.score(tokenizer, query, p);
        let scored: Vec<std::result::Result<f32, String>> = match side_by_side() {
            Some(pool) if passages.len() > 1 => {
                pool.install(|| passages.par_iter().map(one).collect())
            }
            _ => passages.iter().map(one).collect(),
        };
        scored
            .into_iter()
            .map(|s| {
                s.map_err(|e| Error::Model {
                    model: self.identity.clone(),
                    message: e,
                })
            })
            .collect()
    }
}

/// Whether this process scores a fine-tuned model's pairs side by side (see [`side_by_side`]).
pub fn scores_side_by_side() -> bool {
    side_by_side().is_some()
}

/// Runs `f`, a fold model's training, on every core when this process scores side by side:
/// `RAYON_NUM_THREADS=1` asks for one forward pass per core when scoring ([`side_by_side`]),
/// and would otherwise also leave training, whose products split over rayon's current pool, on
/// one core (a SciFact fold: 152 s on one core). The weights do not depend on the thread count
/// (`train_hand`'s tests and `harness/tests/finetune_stage.rs`); elsewhere `f` runs on the
/// caller's pool, as `RAYON_NUM_THREADS` or the cluster's settings made it.
pub fn train_on_every_core<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match side_by_side() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// The pool that scores pairs side by side: one thread per core, when candle's matrix products
/// are single-threaded (candle reads `RAYON_NUM_THREADS` at every product; split over threads,
/// gemm also blocks the product for threads, and two passes side by side then run slower than
/// one pass on both cores: 0.9× on 2 cores) and there is more than one core; otherwise none.
pub(crate) fn side_by_side() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if candle_core::utils::get_num_threads() != 1 || cores < 2 {
            return None;
        }
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("ranklab-pairs-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Weights {
        let mut w = Weights::new();
        w.insert(
            "a".into(),
            Tensor::from_vec(
                vec![1.0f32, -2.5, 3.25, 0.0, 7.0, 8.5],
                (2, 3),
                &Device::Cpu,
            )
            .unwrap(),
        );
        w.insert(
            "b".into(),
            Tensor::from_vec(vec![0.5f32], 1, &Device::Cpu).unwrap(),
        );
        w
    }

    #[test]
    fn bytes_are_the_same_for_the_same_weights_and_a_flipped_bit_is_caught() {
        let r = serde_json::json!({"losses": [0.5]});
        let a = to_bytes("k", &tiny(), &r).unwrap();
        assert_eq!(a, to_bytes("k", &tiny(), &r).unwrap());
        let p = Path::new("m.bin");
        // A two-tensor file is not a whole model: refused for what is missing, after the hash.
        let e = from_bytes(p, "k", &a).unwrap_err().to_string();
        assert!(e.contains("no weight"), "{e}");
        let mut flipped = a.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let e = from_bytes(p, "k", &flipped).unwrap_err().to_string();
        assert!(e.contains("do not hash"), "{e}");
        let e = from_bytes(p, "other", &a).unwrap_err().to_string();
        assert!(e.contains("holds the model k, not other"), "{e}");
        let e = from_bytes(p, "k", b"garbage").unwrap_err().to_string();
        assert!(e.contains("first line"), "{e}");
        let e = from_bytes(p, "k", &a[..a.len() - 4])
            .unwrap_err()
            .to_string();
        assert!(e.contains("do not hash"), "{e}");
    }

    #[test]
    fn a_head_gives_its_models_record_and_a_foreign_or_whole_file_is_refused() {
        let r = serde_json::json!({"losses": [0.5, 0.25]});
        let file = to_bytes("k", &tiny(), &r).unwrap();
        // What `head -n 2` keeps of the model file: its format line and its header.
        let newlines: Vec<usize> = file
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'\n')
            .map(|(i, _)| i)
            .take(2)
            .collect();
        let head = &file[..=newlines[1]];
        let dir = tempfile::tempdir().unwrap();
        assert!(load_head(dir.path(), "k").unwrap().is_none());
        std::fs::write(head_path_of(dir.path(), "k"), head).unwrap();
        assert_eq!(load_head(dir.path(), "k").unwrap(), Some(r));
        assert!(load_head(dir.path(), "other").unwrap().is_none());
        std::fs::write(head_path_of(dir.path(), "other"), head).unwrap();
        let e = load_head(dir.path(), "other").unwrap_err().to_string();
        assert!(e.contains("holds the model k, not other"), "{e}");
        std::fs::write(head_path_of(dir.path(), "k"), &file).unwrap();
        let e = load_head(dir.path(), "k").unwrap_err().to_string();
        assert!(e.contains("no weights"), "{e}");
    }
}
