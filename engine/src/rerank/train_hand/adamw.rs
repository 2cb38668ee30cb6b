//! AdamW with the global-norm clipping folded in, over the flat buffers of
//! [`super::params::Layout`]: weights, gradients and the two moments are four slices of one
//! layout, and the update is `rerank::train_opt`'s (candle-nn's `AdamW::step`):
//! `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`, `θ ← θ(1 − lr·λ) − lr · m̂/(√v̂ + ε)` with
//! `m̂ = m/(1−β₁ᵗ)`, `v̂ = v/(1−β₂ᵗ)`, on the clipped gradient `g · min(1, max/(‖g‖ + 1e-6))`,
//! with decay only on the parameters the layout marks.
//!
//! Deterministic whatever the thread count: each parameter is cut into fixed pieces, each
//! piece is one thread's, and the squared norm adds the pieces' sums in order (per parameter in
//! f32, then over parameters in f64, in the layout's order).

use rayon::prelude::*;

use super::ops::{adamw_update, AdamConsts};
use super::params::Layout;

/// Values per parallel piece.
const PIECE: usize = 1 << 16;

/// AdamW's state: the two moments and the step count.
pub struct AdamW {
    m: Vec<f32>,
    v: Vec<f32>,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    t: i32,
}

impl AdamW {
    /// The optimizer for `len` values, candle-nn's defaults (β₁ 0.9, β₂ 0.999, ε 1e-8) and
    /// `weight_decay`.
    pub fn new(len: usize, weight_decay: f64) -> Self {
        AdamW {
            m: vec![0.0; len],
            v: vec![0.0; len],
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay,
            t: 0,
        }
    }

    /// One step at learning rate `lr` on the gradient `g` of the weights `w` (both of
    /// `layout`), the gradient clipped to the global norm `max_norm` first.
    pub fn step(&mut self, layout: &Layout, w: &mut [f32], g: &[f32], lr: f64, max_norm: f64) {
        let mut sq = 0f64;
        for e in &layout.entries {
            let pieces: Vec<f32> = g[e.offset..e.offset + e.len]
                .par_chunks(PIECE)
                .map(|p| p.iter().map(|x| x * x).sum::<f32>())
                .collect();
            sq += f64::from(pieces.iter().sum::<f32>());
        }
        let factor = (max_norm / (sq.sqrt() + 1e-6)).min(1.0) as f32;
        self.t += 1;
        let (b1, b2) = (self.beta1 as f32, self.beta2 as f32);
        let scale_m = (1.0 / (1.0 - self.beta1.powi(self.t))) as f32;
        let scale_v = (1.0 / (1.0 - self.beta2.powi(self.t))) as f32;
        for e in &layout.entries {
            let k = AdamConsts {
                factor,
                b1,
                b2,
                scale_m,
                scale_v,
                eps: self.eps as f32,
                keep: if e.decay {
                    (1.0 - lr * self.weight_decay) as f32
                } else {
                    1.0
                },
                lr: lr as f32,
            };
            let r = e.offset..e.offset + e.len;
            w[r.clone()]
                .par_chunks_mut(PIECE)
                .zip(self.m[r.clone()].par_chunks_mut(PIECE))
                .zip(self.v[r.clone()].par_chunks_mut(PIECE))
                .zip(g[r].par_chunks(PIECE))
                .for_each(|(((th, m), v), g)| adamw_update(th, m, v, g, k));
        }
    }
}
