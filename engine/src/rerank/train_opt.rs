//! AdamW with the global-norm gradient clipping folded in, as one pass over each parameter's
//! values, parallel over fixed pieces with rayon. candle-nn's `AdamW` computes the same update
//! as about a dozen whole-tensor operations per parameter, each allocating a new tensor (33
//! million parameters: 133 MB each), and the clipping as two more; here it is one read of the
//! weight, gradient and moments and one write.
//!
//! The update is candle-nn's `AdamW::step` (its tests compare the two):
//! `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`, `θ ← θ(1 − lr·λ) − lr · m̂/(√v̂ + ε)` with
//! `m̂ = m/(1−β₁ᵗ)`, `v̂ = v/(1−β₂ᵗ)`, on the clipped gradient `g · min(1, max/(‖g‖ + 1e-6))`.
//!
//! Deterministic whatever the thread count: the pieces are fixed, each is one thread's in one
//! order, and the norm adds the pieces' sums in order.

use candle_core::{Result, Tensor, Var};
use rayon::prelude::*;

/// Values per parallel piece.
const PIECE: usize = 1 << 16;

/// One parameter and its moments.
struct Slot {
    var: Var,
    decay: bool,
    m: Vec<f32>,
    v: Vec<f32>,
}

/// AdamW over a set of parameters, each with or without weight decay.
pub struct AdamW {
    slots: Vec<Slot>,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    t: i32,
}

impl AdamW {
    /// The optimizer over `params` (each with whether it takes weight decay), candle-nn's
    /// defaults (β₁ 0.9, β₂ 0.999, ε 1e-8) and `weight_decay`.
    pub fn new(params: Vec<(Var, bool)>, weight_decay: f64) -> Self {
        let slots = params
            .into_iter()
            .map(|(var, decay)| {
                let n = var.elem_count();
                Slot {
                    var,
                    decay,
                    m: vec![0.0; n],
                    v: vec![0.0; n],
                }
            })
            .collect();
        AdamW {
            slots,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay,
            t: 0,
        }
    }

    /// One step at learning rate `lr` on `grads`, the gradients clipped to the global norm
    /// `max_norm` first. A parameter without a gradient is left as it is.
    pub fn step(
        &mut self,
        grads: &candle_core::backprop::GradStore,
        lr: f64,
        max_norm: f64,
    ) -> Result<()> {
        let mut gs = Vec::with_capacity(self.slots.len());
        for s in &self.slots {
            gs.push(match grads.get(s.var.as_tensor()) {
                Some(g) => Some(g.flatten_all()?.to_vec1::<f32>()?),
                None => None,
            });
        }
        let mut sq = 0f64;
        for g in gs.iter().flatten() {
            let pieces: Vec<f32> = g
                .par_chunks(PIECE)
                .map(|p| p.iter().map(|x| x * x).sum::<f32>())
                .collect();
            sq += f64::from(pieces.iter().sum::<f32>());
        }
        let factor = (max_norm / (sq.sqrt() + 1e-6)).min(1.0) as f32;
        self.t += 1;
        let b1 = self.beta1 as f32;
        let b2 = self.beta2 as f32;
        let scale_m = (1.0 / (1.0 - self.beta1.powi(self.t))) as f32;
        let scale_v = (1.0 / (1.0 - self.beta2.powi(self.t))) as f32;
        let (lr32, eps) = (lr as f32, self.eps as f32);
        for (s, g) in self.slots.iter_mut().zip(gs) {
            let Some(g) = g else { continue };
            let keep = if s.decay {
                (1.0 - lr * self.weight_decay) as f32
            } else {
                1.0
            };
            let mut theta = s.var.as_tensor().flatten_all()?.to_vec1::<f32>()?;
            theta
                .par_chunks_mut(PIECE)
                .zip(s.m.par_chunks_mut(PIECE))
                .zip(s.v.par_chunks_mut(PIECE))
                .zip(g.par_chunks(PIECE))
                .for_each(|(((th, m), v), g)| {
                    for i in 0..th.len() {
                        let gi = if factor < 1.0 { g[i] * factor } else { g[i] };
                        m[i] = m[i] * b1 + gi * (1.0 - b1);
                        v[i] = v[i] * b2 + gi * gi * (1.0 - b2);
                        let step = (m[i] * scale_m) / ((v[i] * scale_v).sqrt() + eps);
                        th[i] = th[i] * keep - step * lr32;
                    }
                });
            let shape = s.var.as_tensor().shape().clone();
            s.var
                .set(&Tensor::from_vec(theta, shape, s.var.device())?)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;
    use candle_nn::optim::{Optimizer, ParamsAdamW};

    fn start() -> (Tensor, Tensor) {
        let dev = Device::Cpu;
        let a: Vec<f32> = (0..300)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 40.0)
            .collect();
        let b: Vec<f32> = (0..7).map(|i| i as f32 * 0.3 - 1.0).collect();
        (
            Tensor::from_vec(a, (20, 15), &dev).unwrap(),
            Tensor::from_vec(b, 7, &dev).unwrap(),
        )
    }

    /// The loss of three steps: a sum of weighted squares and cubes, so that the gradients
    /// differ from step to step.
    fn loss(a: &Tensor, b: &Tensor, k: f64) -> Tensor {
        let la = (a.sqr().unwrap() * k).unwrap().sum_all().unwrap();
        let lb = b.powf(3.0).unwrap().sum_all().unwrap();
        (la + lb).unwrap()
    }

    /// Three steps of this optimizer give candle-nn's `AdamW` weights (the oracle: two AdamW
    /// instances, with and without decay, after the gradients are clipped as `finetune` did
    /// before, by whole-tensor operations) within 1e-6, clipped (norm 1) and not (norm 1e9).
    #[test]
    fn steps_match_candle_nn_adamw_with_clipping() {
        for max_norm in [1.0, 1e9] {
            let (a0, b0) = start();
            let (a1, b1) = (
                Var::from_tensor(&a0).unwrap(),
                Var::from_tensor(&b0).unwrap(),
            );
            let (a2, b2) = (
                Var::from_tensor(&a0).unwrap(),
                Var::from_tensor(&b0).unwrap(),
            );
            let mut ours = AdamW::new(vec![(a1.clone(), true), (b1.clone(), false)], 0.01);
            let p = |wd| ParamsAdamW {
                lr: 0.05,
                weight_decay: wd,
                ..ParamsAdamW::default()
            };
            let mut theirs_a = candle_nn::AdamW::new(vec![a2.clone()], p(0.01)).unwrap();
            let mut theirs_b = candle_nn::AdamW::new(vec![b2.clone()], p(0.0)).unwrap();
            for (step, lr) in [0.05, 0.03, 0.01].into_iter().enumerate() {
                let k = 1.0 + step as f64;
                let g1 = loss(&a1, &b1, k).backward().unwrap();
                ours.step(&g1, lr, max_norm).unwrap();
                let mut g2 = loss(&a2, &b2, k).backward().unwrap();
                let sq: f32 = [&a2, &b2]
                    .iter()
                    .map(|v| {
                        let g = g2.get(v.as_tensor()).unwrap();
                        g.sqr()
                            .unwrap()
                            .sum_all()
                            .unwrap()
                            .to_scalar::<f32>()
                            .unwrap()
                    })
                    .sum();
                let factor = (max_norm / (f64::from(sq).sqrt() + 1e-6)).min(1.0);
                for v in [&a2, &b2] {
                    let g = g2.remove(v.as_tensor()).unwrap();
                    g2.insert(v.as_tensor(), (g * factor).unwrap());
                }
                theirs_a.set_learning_rate(lr);
                theirs_b.set_learning_rate(lr);
                theirs_a.step(&g2).unwrap();
                theirs_b.step(&g2).unwrap();
            }
            for (x, y) in [(&a1, &a2), (&b1, &b2)] {
                let x = x
                    .as_tensor()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap();
                let y = y
                    .as_tensor()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap();
                let worst = x
                    .iter()
                    .zip(&y)
                    .fold(0f32, |m, (p, q)| m.max((p - q).abs()));
                assert!(worst < 1e-6, "max_norm {max_norm}: {worst}");
            }
            let moved = (a1.as_tensor() - &a0)
                .unwrap()
                .abs()
                .unwrap()
                .max_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(moved > 0.01, "the steps moved the weights: {moved}");
        }
    }
}
