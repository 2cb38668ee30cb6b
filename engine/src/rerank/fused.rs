//! Fused operations of the training forward and backward passes, as candle custom operations:
//! the attention's scaled, masked softmax, LayerNorm and GELU (erf), each with its backward
//! pass. candle builds these from primitive operations (LayerNorm alone is nine forward and
//! about twenty backward passes over its input); here each is one pass forward and one or two
//! backward, parallel over rows with rayon.
//!
//! Deterministic whatever the thread count: every row (or element) is computed by one thread
//! in one fixed order, and rows never share a sum; the sums over rows that LayerNorm's
//! parameter gradients need are candle's (one thread, fixed order).
//!
//! candle's primitive forms in [`super::bert::Bert`] are the reference: the tests compare these
//! operations' outputs and gradients with theirs.

use candle_core::{
    bail, CpuStorage, CustomOp1, CustomOp2, CustomOp3, Layout, Result, Shape, Tensor,
};
use rayon::prelude::*;

/// Elements per parallel piece of an elementwise operation.
const PIECE: usize = 1 << 14;

/// The contiguous f32 values of a custom operation's argument.
fn values<'a>(s: &'a CpuStorage, l: &Layout) -> Result<&'a [f32]> {
    let CpuStorage::F32(v) = s else {
        bail!("the fused training operations take f32 tensors")
    };
    match l.contiguous_offsets() {
        Some((a, b)) => Ok(&v[a..b]),
        None => bail!("the fused training operations take contiguous tensors"),
    }
}

/// The length of the last dimension of `l`.
fn last(l: &Layout) -> usize {
    l.dims().last().copied().unwrap_or(1).max(1)
}

fn done(out: Vec<f32>, l: &Layout) -> (CpuStorage, Shape) {
    (CpuStorage::F32(out), l.shape().clone())
}

/// `softmax(scale · s + bias)` over the last dimension of `s` `[b, heads, t, t]`, `bias`
/// `[b, 1, 1, t]` (the padding mask); the gradient flows to `s` only.
struct MaskedSoftmax {
    scale: f32,
}

impl CustomOp2 for MaskedSoftmax {
    fn name(&self) -> &'static str {
        "masked-softmax"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (s, bias) = (values(s1, l1)?, values(s2, l2)?);
        let t = last(l1);
        let dims = l1.dims();
        if dims.len() != 4 || bias.len() != dims[0] * t {
            bail!(
                "masked-softmax: scores {dims:?} against a mask of {}",
                bias.len()
            );
        }
        let per_batch = dims[1] * dims[2] * t;
        let mut out = vec![0f32; s.len()];
        out.par_chunks_mut(t)
            .zip(s.par_chunks(t))
            .enumerate()
            .for_each(|(row, (o, x))| {
                let m = &bias[(row * t / per_batch) * t..][..t];
                let mut max = f32::NEG_INFINITY;
                for (oi, (&xi, &mi)) in o.iter_mut().zip(x.iter().zip(m)) {
                    *oi = self.scale * xi + mi;
                    max = max.max(*oi);
                }
                let mut sum = 0f32;
                for oi in o.iter_mut() {
                    *oi = (*oi - max).exp();
                    sum += *oi;
                }
                for oi in o.iter_mut() {
                    *oi /= sum;
                }
            });
        Ok(done(out, l1))
    }

    fn bwd(
        &self,
        _s: &Tensor,
        _bias: &Tensor,
        res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        let ds = res.apply_op2_no_bwd(&grad.contiguous()?, &SoftmaxGrad { scale: self.scale })?;
        Ok((Some(ds), None))
    }
}

/// `scale · y ⊙ (g − Σ g ⊙ y)` row by row: the gradient of a softmax's input from its output
/// `y` and the output's gradient `g`.
struct SoftmaxGrad {
    scale: f32,
}

impl CustomOp2 for SoftmaxGrad {
    fn name(&self) -> &'static str {
        "softmax-grad"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (y, g) = (values(s1, l1)?, values(s2, l2)?);
        let t = last(l1);
        let mut out = vec![0f32; y.len()];
        out.par_chunks_mut(t)
            .zip(y.par_chunks(t).zip(g.par_chunks(t)))
            .for_each(|(o, (y, g))| {
                let dot: f32 = y.iter().zip(g).map(|(a, b)| a * b).sum();
                for (oi, (&yi, &gi)) in o.iter_mut().zip(y.iter().zip(g)) {
                    *oi = self.scale * yi * (gi - dot);
                }
            });
        Ok(done(out, l1))
    }
}

/// Mean and 1/√(variance + eps) of a row.
fn moments(x: &[f32], eps: f32) -> (f32, f32) {
    let n = x.len() as f32;
    let mean = x.iter().sum::<f32>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
    (mean, 1.0 / (var + eps).sqrt())
}

/// LayerNorm over the last dimension: `γ ⊙ (x − μ)/√(σ² + eps) + β`.
struct LayerNorm {
    eps: f32,
}

impl CustomOp3 for LayerNorm {
    fn name(&self) -> &'static str {
        "layer-norm"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, gamma, beta) = (values(s1, l1)?, values(s2, l2)?, values(s3, l3)?);
        let n = last(l1);
        if gamma.len() != n || beta.len() != n {
            bail!(
                "layer-norm: rows of {n} against parameters of {}",
                gamma.len()
            );
        }
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(n)
            .zip(x.par_chunks(n))
            .for_each(|(o, x)| {
                let (mean, r) = moments(x, self.eps);
                for (i, oi) in o.iter_mut().enumerate() {
                    *oi = (x[i] - mean) * r * gamma[i] + beta[i];
                }
            });
        Ok(done(out, l1))
    }

    fn bwd(
        &self,
        x: &Tensor,
        gamma: &Tensor,
        _beta: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> Result<(Option<Tensor>, Option<Tensor>, Option<Tensor>)> {
        let g = grad.contiguous()?;
        let dx = x.apply_op3_no_bwd(gamma, &g, &LayerNormGrad { eps: self.eps })?;
        let n = gamma.elem_count();
        let rows = g.elem_count() / n;
        let hat = x.apply_op1_no_bwd(&Normalized { eps: self.eps })?;
        let g2 = g.reshape((rows, n))?;
        let dgamma = (&g2 * hat.reshape((rows, n))?)?.sum(0)?;
        let dbeta = g2.sum(0)?;
        Ok((Some(dx), Some(dgamma), Some(dbeta)))
    }
}

/// `(x − μ)/√(σ² + eps)` row by row (LayerNorm before its parameters).
struct Normalized {
    eps: f32,
}

impl CustomOp1 for Normalized {
    fn name(&self) -> &'static str {
        "layer-norm-normalized"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = values(s, l)?;
        let n = last(l);
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(n)
            .zip(x.par_chunks(n))
            .for_each(|(o, x)| {
                let (mean, r) = moments(x, self.eps);
                for (oi, &xi) in o.iter_mut().zip(x) {
                    *oi = (xi - mean) * r;
                }
            });
        Ok(done(out, l))
    }
}

/// LayerNorm's input gradient from `x`, `γ` and the output's gradient `g`:
/// `r · (ĝ − mean(ĝ) − x̂ · mean(ĝ ⊙ x̂))` with `ĝ = g ⊙ γ`, `x̂` the normalized row and
/// `r = 1/√(σ² + eps)`.
struct LayerNormGrad {
    eps: f32,
}

impl CustomOp3 for LayerNormGrad {
    fn name(&self) -> &'static str {
        "layer-norm-grad"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, gamma, g) = (values(s1, l1)?, values(s2, l2)?, values(s3, l3)?);
        let n = last(l1);
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(n)
            .zip(x.par_chunks(n).zip(g.par_chunks(n)))
            .for_each(|(o, (x, g))| {
                let (mean, r) = moments(x, self.eps);
                let (mut sum_g, mut sum_gx) = (0f32, 0f32);
                for i in 0..n {
                    let gh = g[i] * gamma[i];
                    sum_g += gh;
                    sum_gx += gh * (x[i] - mean) * r;
                }
                let (mg, mgx) = (sum_g / n as f32, sum_gx / n as f32);
                for i in 0..n {
                    let xh = (x[i] - mean) * r;
                    o[i] = r * (g[i] * gamma[i] - mg - xh * mgx);
                }
            });
        Ok(done(out, l1))
    }
}

/// GELU with the exact erf: `x · Φ(x)`.
struct Gelu;

impl CustomOp1 for Gelu {
    fn name(&self) -> &'static str {
        "gelu-erf"
    }

    fn cpu_fwd(&self, s: &CpuStorage, l: &Layout) -> Result<(CpuStorage, Shape)> {
        let x = values(s, l)?;
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(PIECE)
            .zip(x.par_chunks(PIECE))
            .for_each(|(o, x)| {
                for (oi, &xi) in o.iter_mut().zip(x) {
                    *oi = 0.5 * xi * (1.0 + erf(xi * std::f32::consts::FRAC_1_SQRT_2));
                }
            });
        Ok(done(out, l))
    }

    fn bwd(&self, x: &Tensor, _res: &Tensor, grad: &Tensor) -> Result<Option<Tensor>> {
        Ok(Some(x.apply_op2_no_bwd(&grad.contiguous()?, &GeluGrad)?))
    }
}

fn erf(x: f32) -> f32 {
    candle_core::cpu::erf::erf_f32(x)
}

/// GELU's input gradient: `g · (Φ(x) + x · φ(x))`.
struct GeluGrad;

impl CustomOp2 for GeluGrad {
    fn name(&self) -> &'static str {
        "gelu-erf-grad"
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<(CpuStorage, Shape)> {
        let (x, g) = (values(s1, l1)?, values(s2, l2)?);
        // 1/√(2π)
        const INV_SQRT_2PI: f32 = 0.398_942_3;
        let mut out = vec![0f32; x.len()];
        out.par_chunks_mut(PIECE)
            .zip(x.par_chunks(PIECE).zip(g.par_chunks(PIECE)))
            .for_each(|(o, (x, g))| {
                for (oi, (&xi, &gi)) in o.iter_mut().zip(x.iter().zip(g)) {
                    let cdf = 0.5 * (1.0 + erf(xi * std::f32::consts::FRAC_1_SQRT_2));
                    let pdf = INV_SQRT_2PI * (-0.5 * xi * xi).exp();
                    *oi = gi * (cdf + xi * pdf);
                }
            });
        Ok(done(out, l1))
    }
}

/// `softmax(scale · scores + bias)` over the last dimension; `scores` `[b, heads, t, t]`,
/// `bias` `[b, 1, 1, t]`. Differentiable in `scores`.
pub fn masked_softmax(scores: &Tensor, bias: &Tensor, scale: f32) -> Result<Tensor> {
    scores
        .contiguous()?
        .apply_op2(&bias.contiguous()?, MaskedSoftmax { scale })
}

/// LayerNorm of `x` over its last dimension with `gamma` and `beta`. Differentiable in all
/// three.
pub fn layer_norm(x: &Tensor, gamma: &Tensor, beta: &Tensor, eps: f32) -> Result<Tensor> {
    x.contiguous()?.apply_op3(gamma, beta, LayerNorm { eps })
}

/// GELU (erf) of `x`. Differentiable.
pub fn gelu(x: &Tensor) -> Result<Tensor> {
    x.contiguous()?.apply_op1(Gelu)
}
