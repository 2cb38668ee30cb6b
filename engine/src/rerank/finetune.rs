//! Training the cross-encoder on labelled (query, passage) pairs: binary cross-entropy on the
//! logit, AdamW (decoupled weight decay on matrices and embeddings, none on biases and
//! LayerNorm), a linear warm-up then linear decay of the learning rate, the gradient clipped to
//! a global norm, no dropout. Batches are the pairs in a seeded order per epoch (SplitMix64
//! driving a Fisher–Yates shuffle), each window of eight batches sorted by length so that a
//! batch pads little ([`bucketed`]), padded to their longest pair.
//!
//! The forward pass is [`super::train_model::TrainModel`]'s: candle's matrix products (the
//! `gemm` crate's AVX2 kernels: its AVX-512 ones, chosen by CPU, would make a fold model's bits
//! depend on the machine) with the attention's softmax,
//! LayerNorm and GELU fused ([`super::fused`]), forward and backward; the optimizer is
//! [`super::train_opt::AdamW`] (candle-nn's update and the clipping in one pass).
//!
//! Deterministic: the same starting weights, pairs, settings and seed give the same weights to
//! the bit on one machine, whatever the thread count. The fused operations compute each row on
//! one thread in one fixed order, candle's other operations sum in a fixed order, and candle's
//! CPU matrix product sums each output element in one fixed order whatever the thread count;
//! the order of the pairs is the seed's.

use candle_core::{DType, Device, Tensor, Var};

use super::bert::{Bert, Config, Weights};
use super::train_model::TrainModel;
use super::train_opt::AdamW;
use crate::{Error, Result};

/// The version of the training arithmetic, part of a fold model's cache key: it changes
/// whenever the same pairs and settings would give other weights. 3: fused softmax, LayerNorm
/// and GELU, a one-pass AdamW (weights within float rounding of version 2's, not equal to the
/// bit). 4: the hand-written passes of [`crate::rerank::train_hand`] (weights within float
/// rounding of version 3's; [`train`] below is version 3, kept for comparison). 5: the last
/// layer computes only each pair's first token past K and V (weights within float rounding of
/// version 4's).
pub const TRAINER_VERSION: u32 = 5;

/// One training pair.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// The query.
    pub query: String,
    /// The passage.
    pub passage: String,
    /// 1 relevant, 0 not.
    pub label: f32,
}

/// The `--in` bytes of `ranklab work finetune`: one `{"query", "passage", "label"}` line per
/// pair, in training order.
pub fn pairs_input(pairs: &[Pair]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pairs {
        serde_json::to_writer(
            &mut out,
            &serde_json::json!({ "query": p.query, "passage": p.passage, "label": p.label }),
        )
        .expect("serializes");
        out.push(b'\n');
    }
    out
}

/// Parses the `--in` file of `ranklab work finetune` (`name` names it in errors): every label
/// is 0 or 1.
pub fn parse_pairs_input(name: &str, bytes: &[u8]) -> Result<Vec<Pair>> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Line {
        query: String,
        passage: String,
        label: f32,
    }
    let what = r#"{"query": "...", "passage": "...", "label": 0 or 1}"#;
    let lines = crate::models::remote::lines::<Line>(name, bytes, what)?;
    if let Some(i) = lines.iter().position(|l| l.label != 0.0 && l.label != 1.0) {
        return Err(Error::Config(format!(
            "{name}: pair {} has the label {}; a label is 0 or 1",
            i + 1,
            lines[i].label
        )));
    }
    Ok(lines
        .into_iter()
        .map(|l| Pair {
            query: l.query,
            passage: l.passage,
            label: l.label,
        })
        .collect())
}

/// Training settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hyper {
    /// Passes over the pairs.
    pub epochs: usize,
    /// Pairs per step.
    pub batch: usize,
    /// Peak learning rate.
    pub lr: f64,
    /// Fraction of the steps spent warming up (linear from 0 to `lr`).
    pub warmup: f64,
    /// AdamW's decoupled weight decay (not on biases and LayerNorm).
    pub weight_decay: f64,
    /// Largest global gradient norm; larger gradients are scaled down to it.
    pub max_grad_norm: f64,
    /// Tokens per pair (longest-first truncation).
    pub max_length: usize,
    /// Seed of the pairs' order.
    pub seed: u64,
}

impl Default for Hyper {
    fn default() -> Self {
        Hyper {
            epochs: 2,
            batch: 16,
            lr: 2e-5,
            warmup: 0.1,
            weight_decay: 0.01,
            max_grad_norm: 1.0,
            max_length: 256,
            seed: 42,
        }
    }
}

/// What training gives back.
pub struct Trained {
    /// The trained weights.
    pub weights: Weights,
    /// The mean training loss of each step, in order.
    pub step_losses: Vec<f64>,
    /// The mean loss of each epoch (over its steps' pairs).
    pub epoch_losses: Vec<f64>,
}

pub(crate) fn model_error(e: impl std::fmt::Display) -> Error {
    Error::Model {
        model: "fine-tuning".to_string(),
        message: e.to_string(),
    }
}

/// SplitMix64: a small, fully specified generator for the pairs' order.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The order of `n` pairs in `epoch`, from `seed`.
pub fn epoch_order(n: usize, seed: u64, epoch: usize) -> Vec<usize> {
    let mut state = seed ^ (epoch as u64).wrapping_mul(0xd1b5_4a32_d192_ed03);
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        let j = (splitmix(&mut state) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

/// Batches a window holds when pairs are grouped by length ([`bucketed`]).
pub const BUCKET_BATCHES: usize = 8;

/// The token count of each pair as it is fed (truncated to `max_length`).
pub(crate) fn pair_lengths(
    tok: &tokenizers::Tokenizer,
    pairs: &[Pair],
    max_length: usize,
) -> Result<Vec<usize>> {
    pairs
        .iter()
        .map(|p| {
            tok.encode((p.query.as_str(), p.passage.as_str()), true)
                .map(|e| e.get_ids().len().min(max_length))
                .map_err(model_error)
        })
        .collect()
}

/// `order` with each window of `BUCKET_BATCHES` batches sorted by the pairs' lengths (ties by
/// position in the window), so that a batch pads its pairs to about the same length; the windows
/// keep the seed's order, and so does which pairs share a window.
pub fn bucketed(order: &[usize], lens: &[usize], batch: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(order.len());
    for window in order.chunks(batch.max(1) * BUCKET_BATCHES) {
        let mut w: Vec<(usize, usize)> = window.iter().map(|&i| (lens[i], i)).collect();
        // Stable: equal lengths keep the window's order.
        w.sort_by_key(|&(len, _)| len);
        out.extend(w.into_iter().map(|(_, i)| i));
    }
    out
}

/// The learning rate at `step` of `total` (0-based): linear warm-up over the first
/// `ceil(warmup · total)` steps, then linear decay to 0 at `total`.
pub fn learning_rate(h: &Hyper, step: usize, total: usize) -> f64 {
    let warm = ((h.warmup * total as f64).ceil() as usize).max(1);
    if step < warm {
        h.lr * (step + 1) as f64 / warm as f64
    } else {
        h.lr * (total - step) as f64 / (total - warm).max(1) as f64
    }
}

/// A batch's token ids, token types and mask (`[batch, longest]` row-major), and `longest`.
pub(crate) type Encoded = (Vec<u32>, Vec<u32>, Vec<f32>, usize);

/// The batch `pairs` as `(ids, types, mask, longest)`: `[batch, longest]` row-major, padded
/// with id 0, type 0 and mask 0.
pub(crate) fn encode_batch(
    tok: &tokenizers::Tokenizer,
    pairs: &[&Pair],
    max_length: usize,
) -> Result<Encoded> {
    let mut encs = Vec::with_capacity(pairs.len());
    for p in pairs {
        let mut e = tok
            .encode((p.query.as_str(), p.passage.as_str()), true)
            .map_err(model_error)?;
        e.truncate(max_length, 0, tokenizers::TruncationDirection::Right);
        encs.push(e);
    }
    let t = encs.iter().map(|e| e.get_ids().len()).max().unwrap_or(1);
    let (mut ids, mut types, mut mask) = (Vec::new(), Vec::new(), Vec::new());
    for e in &encs {
        let n = e.get_ids().len();
        ids.extend(
            e.get_ids()
                .iter()
                .copied()
                .chain(std::iter::repeat_n(0, t - n)),
        );
        types.extend(
            e.get_type_ids()
                .iter()
                .copied()
                .chain(std::iter::repeat_n(0, t - n)),
        );
        mask.extend(std::iter::repeat_n(1f32, n).chain(std::iter::repeat_n(0f32, t - n)));
    }
    Ok((ids, types, mask, t))
}

/// The batch `pairs` as `(ids, types, mask)` tensors `[batch, longest]`, padded with id 0.
fn batch_tensors(
    tok: &tokenizers::Tokenizer,
    pairs: &[&Pair],
    max_length: usize,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (ids, types, mask, t) = encode_batch(tok, pairs, max_length)?;
    let b = pairs.len();
    let dev = Device::Cpu;
    let out = (|| -> candle_core::Result<_> {
        Ok((
            Tensor::from_vec(ids, (b, t), &dev)?,
            Tensor::from_vec(types, (b, t), &dev)?,
            Tensor::from_vec(mask, (b, t), &dev)?,
        ))
    })();
    out.map_err(model_error)
}

/// Mean binary cross-entropy of `logits` against `labels`, in the stable form
/// `max(z, 0) − z·y + log(1 + e^(−|z|))`.
pub fn bce_with_logits(logits: &Tensor, labels: &Tensor) -> candle_core::Result<Tensor> {
    let z = logits;
    let pos = z.relu()?;
    let soft = (z.abs()?.neg()?.exp()? + 1.0)?.log()?;
    ((pos - (z * labels)?)? + soft)?.mean_all()
}

/// Mean loss of `model` on `pairs` (no training), batch by batch.
pub fn loss_on(
    model: &Bert,
    tok: &tokenizers::Tokenizer,
    pairs: &[Pair],
    h: &Hyper,
) -> Result<f64> {
    let mut sum = 0.0;
    for chunk in pairs.chunks(h.batch.max(1)) {
        let refs: Vec<&Pair> = chunk.iter().collect();
        let (ids, types, mask) = batch_tensors(tok, &refs, h.max_length)?;
        let labels: Vec<f32> = chunk.iter().map(|p| p.label).collect();
        let labels = Tensor::from_vec(labels, chunk.len(), &Device::Cpu).map_err(model_error)?;
        let l = model
            .forward(&ids, &types, &mask)
            .and_then(|z| bce_with_logits(&z, &labels))
            .and_then(|l| l.to_scalar::<f32>())
            .map_err(model_error)?;
        sum += f64::from(l) * chunk.len() as f64;
    }
    Ok(sum / pairs.len().max(1) as f64)
}

/// The error of a run whose loss at `step` (1-based) of `total`, in `epoch` (0-based), is not
/// finite.
pub(crate) fn diverged(loss: f64, step: usize, total: usize, epoch: usize) -> Error {
    Error::Model {
        model: "fine-tuning".to_string(),
        message: format!(
            "training diverged: the loss is {loss} at step {step} of {total} (epoch {}); nothing was kept. Lower the learning rate",
            epoch + 1
        ),
    }
}

/// The input both trainers refuse: no pairs, no epochs or an empty batch.
pub(crate) fn check_input(pairs: &[Pair], h: &Hyper) -> Result<()> {
    if pairs.is_empty() || h.batch == 0 || h.epochs == 0 {
        return Err(Error::Config(
            "fine-tuning needs at least one pair, one epoch and a batch of at least 1".into(),
        ));
    }
    Ok(())
}

/// Trains from `start` on `pairs` (see the module's documentation). `progress` is told each
/// step's number (1-based), the total and the step's loss.
pub fn train(
    start: &Weights,
    pairs: &[Pair],
    tok: &tokenizers::Tokenizer,
    h: &Hyper,
    progress: &mut dyn FnMut(usize, usize, f64),
) -> Result<Trained> {
    check_input(pairs, h)?;
    let mut vars = std::collections::BTreeMap::new();
    for (name, t) in start {
        vars.insert(name.clone(), Var::from_tensor(t).map_err(model_error)?);
    }
    let model_weights: Weights = vars
        .iter()
        .map(|(n, v)| (n.clone(), v.as_tensor().clone()))
        .collect();
    super::bert::keep_freed_memory();
    let model = TrainModel::new(&model_weights, Config::default());
    let no_decay = |n: &str| n.ends_with(".bias") || n.contains("LayerNorm");
    let mut opt = AdamW::new(
        vars.iter()
            .map(|(n, v)| (v.clone(), !no_decay(n)))
            .collect(),
        h.weight_decay,
    );
    let steps_per_epoch = pairs.len().div_ceil(h.batch);
    let total = steps_per_epoch * h.epochs;
    let (mut step_losses, mut epoch_losses) = (Vec::new(), Vec::new());
    let mut step = 0;
    let lens = pair_lengths(tok, pairs, h.max_length)?;
    for epoch in 0..h.epochs {
        let order = bucketed(&epoch_order(pairs.len(), h.seed, epoch), &lens, h.batch);
        let mut epoch_sum = 0.0;
        for chunk in order.chunks(h.batch) {
            let batch: Vec<&Pair> = chunk.iter().map(|&i| &pairs[i]).collect();
            let (ids, types, mask) = batch_tensors(tok, &batch, h.max_length)?;
            let labels: Vec<f32> = batch.iter().map(|p| p.label).collect();
            let labels =
                Tensor::from_vec(labels, batch.len(), &Device::Cpu).map_err(model_error)?;
            let lr = learning_rate(h, step, total);
            let loss = (|| -> candle_core::Result<f64> {
                let loss = bce_with_logits(&model.forward(&ids, &types, &mask)?, &labels)?;
                let grads = loss.backward()?;
                opt.step(&grads, lr, h.max_grad_norm)?;
                Ok(f64::from(loss.to_scalar::<f32>()?))
            })()
            .map_err(model_error)?;
            step += 1;
            if !loss.is_finite() {
                return Err(diverged(loss, step, total, epoch));
            }
            epoch_sum += loss * batch.len() as f64;
            step_losses.push(loss);
            progress(step, total, loss);
        }
        epoch_losses.push(epoch_sum / pairs.len() as f64);
    }
    let weights = vars
        .into_iter()
        .map(|(n, v)| (n, v.as_tensor().detach()))
        .collect();
    Ok(Trained {
        weights,
        step_losses,
        epoch_losses,
    })
}

/// Whether two weight sets are equal to the bit.
pub fn same_bits(a: &Weights, b: &Weights) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((na, ta), (nb, tb))| {
            let bits = |t: &Tensor| {
                t.flatten_all()
                    .and_then(|t| t.to_dtype(DType::F32))
                    .and_then(|t| t.to_vec1::<f32>())
                    .map(|v| v.into_iter().map(f32::to_bits).collect::<Vec<_>>())
                    .ok()
            };
            na == nb && bits(ta).is_some() && bits(ta) == bits(tb)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard of `ranklab work finetune` reads back as the pairs written, in order (the oracle:
    /// the hand-written pairs); a label other than 0 or 1, an unknown field or a line that is
    /// not JSON is refused naming the file and the line or pair.
    #[test]
    fn training_pairs_read_back_as_written_and_bad_lines_are_refused() {
        let pairs = vec![
            Pair {
                query: "rotate the \"webhook\" secret".into(),
                passage: "Secrets are rotated\nweekly.".into(),
                label: 1.0,
            },
            Pair {
                query: "rotate the \"webhook\" secret".into(),
                passage: "Unrelated — ünïcode.".into(),
                label: 0.0,
            },
        ];
        let bytes = pairs_input(&pairs);
        assert_eq!(bytes.iter().filter(|&&b| b == b'\n').count(), 2);
        assert_eq!(parse_pairs_input("in.jsonl", &bytes).unwrap(), pairs);
        let bad = |text: &str| {
            parse_pairs_input("in.jsonl", text.as_bytes())
                .unwrap_err()
                .to_string()
        };
        let e = bad("{\"query\": \"q\", \"passage\": \"p\", \"label\": 0.5}\n");
        assert!(e.contains("in.jsonl: pair 1 has the label 0.5"), "{e}");
        let e = bad("{\"query\": \"q\", \"passage\": \"p\", \"label\": 1}\n{\"query\": \"q\", \"passage\": \"p\", \"label\": 1, \"x\": 2}\n");
        assert!(e.contains("in.jsonl:2:"), "{e}");
        let e = bad("not json\n");
        assert!(e.contains("in.jsonl:1:"), "{e}");
    }

    #[test]
    fn the_schedule_warms_up_then_decays_to_zero() {
        let h = Hyper {
            lr: 1.0,
            warmup: 0.1,
            ..Hyper::default()
        };
        // 20 steps: 2 of warm-up (0.5, 1.0), then 18 decaying: 18/18 … 1/18.
        let lrs: Vec<f64> = (0..20).map(|s| learning_rate(&h, s, 20)).collect();
        assert_eq!(lrs[0], 0.5);
        assert_eq!(lrs[1], 1.0);
        assert_eq!(lrs[2], 1.0);
        assert!((lrs[19] - 1.0 / 18.0).abs() < 1e-12);
    }

    #[test]
    fn an_epoch_order_is_a_seeded_permutation() {
        let a = epoch_order(10, 42, 0);
        let mut s = a.clone();
        s.sort_unstable();
        assert_eq!(s, (0..10).collect::<Vec<_>>());
        assert_eq!(a, epoch_order(10, 42, 0));
        assert_ne!(a, epoch_order(10, 42, 1));
        assert_ne!(a, epoch_order(10, 43, 0));
    }

    #[test]
    fn bce_matches_its_definition() {
        // −[y ln σ(z) + (1 − y) ln(1 − σ(z))] by hand for z = 2, y = 1 and z = −1, y = 0.
        let s = |z: f64| 1.0 / (1.0 + (-z).exp());
        let want = (-(s(2.0)).ln() - (1.0 - s(-1.0)).ln()) / 2.0;
        let dev = Device::Cpu;
        let z = Tensor::new(&[2f32, -1.0], &dev).unwrap();
        let y = Tensor::new(&[1f32, 0.0], &dev).unwrap();
        let got = bce_with_logits(&z, &y).unwrap().to_scalar::<f32>().unwrap();
        assert!((f64::from(got) - want).abs() < 1e-6, "{got} vs {want}");
    }
}
