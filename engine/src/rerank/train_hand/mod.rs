//! A second trainer for the cross-encoder, written by hand outside candle's graph (issue 46
//! item 1): the same training as [`crate::rerank::finetune::train`] (the same batches in the
//! same order, the same loss, schedule, clipping and AdamW), with the forward and backward
//! passes over plain f32 buffers allocated once ([`step`]), the parameters, gradients and
//! moments as flat buffers of one layout ([`params`]), the kernels in [`ops`] and AdamW as one
//! pass per parameter ([`adamw`]).
//!
//! The trainer of fold models since version 4 ([`crate::rerank::finetune::TRAINER_VERSION`]):
//! its weights are trainer 3's within float rounding, not to the bit (sums run in other
//! orders), so the version, part of every fold model's key, changed with it. Trainer 3
//! ([`crate::rerank::finetune::train`], candle's graph) stays for comparison:
//! `engine/examples/finetune_speed.rs` and `finetune_bits.rs` select it with
//! `RANKLAB_TRAINER=3`.
//!
//! Deterministic: the same starting weights, pairs, settings and seed give the same weights to
//! the bit whatever the thread count (gemm splits products over m and n only; every other
//! reduction has one fixed order), and, through the patched `gemm-common`, with AVX2 and
//! AVX-512 kernels alike.

pub mod adamw;
pub mod ops;
pub mod params;
pub mod step;

use super::bert::{Config, Weights};
use super::finetune::{
    bucketed, diverged, encode_batch, epoch_order, learning_rate, model_error, pair_lengths, Hyper,
    Pair, Trained,
};
use crate::Result;

/// Whether `RANKLAB_TRAINER` is `3` (see [`train_as_env_says`]).
pub fn trainer_3_by_env() -> bool {
    std::env::var("RANKLAB_TRAINER").is_ok_and(|v| v == "3")
}

/// Trains with the trainer the `RANKLAB_TRAINER` variable names, for the speed and bits examples
/// (`engine/examples/finetune_{speed,bits}.rs`): `3` trainer 3
/// ([`crate::rerank::finetune::train`]) or, unset or anything else (`hand`), this one
/// ([`train`]). Fold models are always trained by [`train`], whatever the variable says: their
/// keys name the trainer's version.
pub fn train_as_env_says(
    start: &Weights,
    pairs: &[Pair],
    tok: &tokenizers::Tokenizer,
    h: &Hyper,
    progress: &mut dyn FnMut(usize, usize, f64),
) -> Result<Trained> {
    if trainer_3_by_env() {
        super::finetune::train(start, pairs, tok, h, progress)
    } else {
        train(start, pairs, tok, h, progress)
    }
}

/// The workspace of the last training, kept for the next one of the same shape (the folds of a
/// run, the warm run of `examples/finetune_speed.rs`). Building one zeroes every buffer, about
/// 2.5 GB for 16 pairs of 256 tokens, and on memory an earlier training freed glibc's calloc
/// does that on the calling thread alone: about 2 s, a tenth of a 140-pair epoch, with the
/// other core idle. Training writes every buffer before it reads it, as it already must from
/// one step to the next (batches of other lengths leave other contents behind), so a kept
/// workspace gives the same bits as a new one (`tests::a_used_workspace_gives_a_new_ones_bits`:
/// three steps on a workspace another model and batch have filled, against a new one).
/// [`release_workspace`] frees it.
static SPARE: std::sync::Mutex<Option<step::Workspace>> = std::sync::Mutex::new(None);

/// The kept workspace if it fits, else a new one (the kept one freed first).
fn workspace(layout: &params::Layout, config: Config, b: usize, t: usize) -> step::Workspace {
    let kept = SPARE.lock().map(|mut s| s.take()).unwrap_or(None);
    if let Some(ws) = kept {
        if ws.fits(layout, config, b, t) {
            return ws;
        }
    }
    step::Workspace::new(layout, config, b, t)
}

/// Frees the workspace [`train`] keeps for the next training (call it when no more folds
/// are to be trained: it holds about 2.5 GB).
pub fn release_workspace() {
    if let Ok(mut s) = SPARE.lock() {
        *s = None;
    }
}

/// Trains from `start` on `pairs` as [`crate::rerank::finetune::train`] does, by the hand-written
/// passes. `progress` is told each step's number (1-based), the total and the step's loss.
pub fn train(
    start: &Weights,
    pairs: &[Pair],
    tok: &tokenizers::Tokenizer,
    h: &Hyper,
    progress: &mut dyn FnMut(usize, usize, f64),
) -> Result<Trained> {
    super::finetune::check_input(pairs, h)?;
    // gemm allocates its packing buffers on every product; glibc would hand large freed blocks
    // back to the kernel and fault them in again on the next call (and a second training in
    // the same process would fault in the whole workspace again).
    super::bert::keep_freed_memory();
    let config = Config::default();
    let layout = params::Layout::of(start, config.layers).map_err(model_error)?;
    let mut w = layout.flatten(start).map_err(model_error)?;
    let mut grad = vec![0f32; layout.len];
    let mut opt = adamw::AdamW::new(layout.len, h.weight_decay);
    let lens = pair_lengths(tok, pairs, h.max_length)?;
    let longest = lens.iter().copied().max().unwrap_or(1).max(1);
    let mut ws = workspace(&layout, config, h.batch.min(pairs.len()), longest);
    let steps_per_epoch = pairs.len().div_ceil(h.batch);
    let total = steps_per_epoch * h.epochs;
    let (mut step_losses, mut epoch_losses) = (Vec::new(), Vec::new());
    let mut step = 0;
    for epoch in 0..h.epochs {
        let order = bucketed(&epoch_order(pairs.len(), h.seed, epoch), &lens, h.batch);
        let mut epoch_sum = 0.0;
        for chunk in order.chunks(h.batch) {
            let batch: Vec<&Pair> = chunk.iter().map(|&i| &pairs[i]).collect();
            let (ids, types, mask, t) = encode_batch(tok, &batch, h.max_length)?;
            let labels: Vec<f32> = batch.iter().map(|p| p.label).collect();
            let lr = learning_rate(h, step, total);
            let b = step::Batch {
                ids: &ids,
                types: &types,
                mask: &mask,
                labels: &labels,
                b: batch.len(),
                t,
            };
            // The whole step on one of rayon's workers: its hundreds of parallel products and
            // passes then fork from inside the pool (a join the other worker steals), not from
            // this thread, which would hand each to the pool and sleep until it is done.
            let loss = rayon::scope(|_| {
                let loss = ws.step(&w, &mut grad, &b);
                opt.step(&layout, &mut w, &grad, lr, h.max_grad_norm);
                loss
            });
            let loss = f64::from(loss);
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
    if let Ok(mut spare) = SPARE.lock() {
        *spare = Some(ws);
    }
    Ok(Trained {
        weights: layout.weights(&w).map_err(model_error)?,
        step_losses,
        epoch_losses,
    })
}

#[cfg(test)]
mod tests;
