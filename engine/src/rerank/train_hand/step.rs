//! One training step's forward and backward passes by hand, over the flat parameter buffer of
//! [`super::params::Layout`]: embeddings, the encoder layers, the pooler and the classifier, the
//! binary cross-entropy on the logit, and every parameter's gradient. The arithmetic is
//! [`crate::rerank::bert::Bert::forward`]'s (the tests compare loss and gradients with candle's
//! autograd over it); the order of some sums differs (each bias is added before the product's
//! last k-block rather than after it), so the results agree within float rounding, not to the
//! bit.
//!
//! Every buffer is allocated once, for the largest batch ([`Workspace::new`]), and reused by each
//! step; a step of a shorter batch uses the front of each. What the backward pass needs is kept
//! per layer: its input, Q/K/V, the attention probabilities, the context, both LayerNorms'
//! normalized rows and `1/σ`, the first LayerNorm's output, and GELU's output with its slope
//! `Φ(x) + x·φ(x)` (computed in the forward pass, so the backward pass multiplies by it and
//! needs neither the intermediate nor a pass to recompute GELU; its bias added by the GELU pass,
//! the product itself adding none).
//!
//! The last layer computes only what the pooler reads: K and V of every token (the first
//! token attends to them all), then each pair's first row alone (its query, its attention row,
//! the output projection, the feed-forward block and both LayerNorms); its backward pass
//! likewise (the rows it skips have a zero gradient), K's and V's gradients as the rank-one
//! products they are ([`last_layer_backward`]). The same sums, but gemm over `b` rows instead of
//! `b·t` may block and round them differently, and the last layer's weight gradients no longer
//! add the skipped rows' exact zeros: the trained weights are within float rounding of
//! trainer 4's, not equal to the bit ([`crate::rerank::finetune::TRAINER_VERSION`] 5).
//!
//! The attention runs as one task per pair, its heads one after the other: scores, scale, mask
//! and softmax, then `P·V` written straight into the head's columns of the context rows, with
//! the scores block (at most 256 × 256 floats) in cache; backward likewise, into the rows of
//! Q's, K's and V's gradients (so the attention uses at most as many threads as a batch has
//! pairs: 16 by default). The matrix products of the linear layers run on all threads (gemm's
//! own split), the rest over rows, pairs or columns with rayon.

use rayon::prelude::*;

use super::ops::{self, matmul, View};
use super::params::{LayerAt, Layout};
use crate::rerank::bert::Config;

/// A batch as the step reads it: `b` pairs of `t` tokens, row-major.
pub struct Batch<'a> {
    /// Token ids, `b·t`.
    pub ids: &'a [u32],
    /// Token types, `b·t`.
    pub types: &'a [u32],
    /// 1 for a token, 0 for padding, `b·t`.
    pub mask: &'a [f32],
    /// 1 relevant, 0 not, `b`.
    pub labels: &'a [f32],
    /// Pairs.
    pub b: usize,
    /// Tokens per pair (padded).
    pub t: usize,
}

/// The sizes a step works with.
#[derive(Debug, Clone, Copy)]
struct Dims {
    b: usize,
    t: usize,
    h: usize,
    heads: usize,
    dh: usize,
    inter: usize,
    eps: f32,
}

impl Dims {
    fn rows(&self) -> usize {
        self.b * self.t
    }
}

/// What one layer keeps for its backward pass.
struct Saved {
    qkv: Vec<f32>,
    p: Vec<f32>,
    ctx: Vec<f32>,
    xhat1: Vec<f32>,
    r1: Vec<f32>,
    x1: Vec<f32>,
    /// GELU's output (the last product's input).
    g: Vec<f32>,
    /// GELU's derivative at its input.
    slope: Vec<f32>,
    xhat2: Vec<f32>,
    r2: Vec<f32>,
}

/// Buffers one layer at a time uses and gives back.
struct Scratch {
    tmp: Vec<f32>,
    /// The intermediate product, GELU's input.
    u: Vec<f32>,
    dg: Vec<f32>,
    dx: Vec<f32>,
    dqkv: Vec<f32>,
    dp: Vec<f32>,
}

/// Every buffer of a step, for batches of up to `b` pairs of up to `t` tokens.
pub struct Workspace {
    layout: Layout,
    config: Config,
    cap: (usize, usize),
    /// The embeddings' output, then each layer's: `layers + 1` of `[rows, h]`.
    hidden: Vec<Vec<f32>>,
    xhat0: Vec<f32>,
    r0: Vec<f32>,
    saved: Vec<Saved>,
    scratch: Scratch,
    bias: Vec<f32>,
    /// The last layer's rows of each pair's first token, `[b, h]`.
    first: Vec<f32>,
    /// The last layer's rank-one attention gradients, `2 · [b, 2·heads, h]`.
    yz: Vec<f32>,
    pooled: Vec<f32>,
    logits: Vec<f32>,
}

fn zeros(n: usize) -> Vec<f32> {
    vec![0f32; n]
}

impl Workspace {
    /// Buffers for batches of up to `b` pairs of up to `t` tokens of the model `layout`.
    pub fn new(layout: &Layout, config: Config, b: usize, t: usize) -> Workspace {
        let (h, i, rows) = (layout.hidden, layout.inter, b * t);
        let heads_tt = b * config.heads * t * t;
        let saved = (0..layout.layers.len())
            .map(|_| Saved {
                qkv: zeros(rows * 3 * h),
                p: zeros(heads_tt),
                ctx: zeros(rows * h),
                xhat1: zeros(rows * h),
                r1: zeros(rows),
                x1: zeros(rows * h),
                g: zeros(rows * i),
                slope: zeros(rows * i),
                xhat2: zeros(rows * h),
                r2: zeros(rows),
            })
            .collect();
        Workspace {
            layout: layout.clone(),
            config,
            cap: (b, t),
            hidden: (0..=layout.layers.len()).map(|_| zeros(rows * h)).collect(),
            xhat0: zeros(rows * h),
            r0: zeros(rows),
            saved,
            scratch: Scratch {
                // The last layer's backward keeps two `[b, h]` blocks here, and `[b, 2·heads, t]`
                // in `dp`: more than a pair of one token's rows hold.
                tmp: zeros((rows * h).max(2 * b * h)),
                u: zeros(rows * i),
                dg: zeros(rows * i),
                dx: zeros(rows * h),
                dqkv: zeros(rows * 3 * h),
                dp: zeros(heads_tt.max(b * 2 * config.heads * t)),
            },
            bias: zeros(rows),
            first: zeros(b * h),
            yz: zeros(2 * b * 2 * config.heads * h),
            pooled: zeros(b * h),
            logits: zeros(b),
        }
    }

    /// Whether this workspace is what [`Workspace::new`] would build for these arguments
    /// (the same model, architecture and capacity; its buffers' contents aside).
    pub fn fits(&self, layout: &Layout, config: Config, b: usize, t: usize) -> bool {
        self.cap == (b, t) && self.config == config && self.layout == *layout
    }

    fn dims(&self, batch: &Batch) -> Dims {
        let h = self.layout.hidden;
        Dims {
            b: batch.b,
            t: batch.t,
            h,
            heads: self.config.heads,
            dh: h / self.config.heads,
            inter: self.layout.inter,
            eps: self.config.eps as f32,
        }
    }

    /// The logits of the last step.
    pub fn logits(&self) -> &[f32] {
        &self.logits
    }

    /// One step: the mean loss of `batch` under the weights `w`, with every parameter's
    /// gradient written into `grad` (the whole buffer is overwritten).
    pub fn step(&mut self, w: &[f32], grad: &mut [f32], batch: &Batch) -> f32 {
        assert!(
            batch.b <= self.cap.0 && batch.t <= self.cap.1,
            "batch too large"
        );
        assert!(
            batch.t <= self.layout.positions,
            "batch longer than the positions"
        );
        let d = self.dims(batch);
        self.logits.resize(d.b, 0.0);
        self.forward(w, batch, d);
        let (loss, dz) = bce(&self.logits, batch.labels);
        self.backward(w, grad, batch, d, &dz);
        loss
    }

    fn forward(&mut self, w: &[f32], batch: &Batch, d: Dims) {
        let (rows, h, t) = (d.rows(), d.h, d.t);
        let lay = &self.layout;
        let x0 = &mut self.scratch.tmp[..rows * h];
        for (r, x) in x0.chunks_mut(h).enumerate() {
            let word = &w[lay.word + batch.ids[r] as usize * h..][..h];
            let typ = &w[lay.typ + batch.types[r] as usize * h..][..h];
            let pos = &w[lay.pos + (r % t) * h..][..h];
            for c in 0..h {
                x[c] = (word[c] + typ[c]) + pos[c];
            }
        }
        ops::layer_norm(
            x0,
            (&w[lay.ln0_g..][..h], &w[lay.ln0_b..][..h]),
            d.eps,
            &mut self.hidden[0][..rows * h],
            &mut self.xhat0[..rows * h],
            &mut self.r0[..rows],
        );
        // Padding gets f32::MIN before the softmax, as Bert::forward does: (1 − mask)·MIN.
        for (b, m) in self.bias[..rows].iter_mut().zip(batch.mask) {
            *b = (m * -1.0 + 1.0) * f32::MIN;
        }
        let last = lay.layers.len() - 1;
        for l in 0..=last {
            let (done, rest) = self.hidden.split_at_mut(l + 1);
            let c = Ctx {
                w,
                at: &self.layout.layers[l],
                d,
                bias: &self.bias[..rows],
            };
            let (x, out) = (&done[l][..rows * h], &mut rest[0][..rows * h]);
            if l < last {
                layer_forward(&c, x, out, &mut self.saved[l], &mut self.scratch);
            } else {
                let (s, sc) = (&mut self.saved[l], &mut self.scratch);
                last_layer_forward(&c, x, out, s, sc, &mut self.first);
            }
        }
        self.pool(w, d);
    }

    /// The pooler (dense + tanh on each pair's first token) and the classifier.
    fn pool(&mut self, w: &[f32], d: Dims) {
        let (h, lay) = (d.h, &self.layout);
        let last = &self.hidden[lay.layers.len()];
        for b in 0..d.b {
            let cls = &last[b * d.t * h..][..h];
            let pooled = &mut self.pooled[b * h..][..h];
            for (j, p) in pooled.iter_mut().enumerate() {
                let row = &w[lay.pool_w + j * h..][..h];
                let dot: f32 = row.iter().zip(cls).map(|(a, x)| a * x).sum();
                *p = (dot + w[lay.pool_b + j]).tanh();
            }
            let wc = &w[lay.cls_w..][..h];
            let z: f32 = wc.iter().zip(pooled.iter()).map(|(a, x)| a * x).sum();
            self.logits[b] = z + w[lay.cls_b];
        }
    }

    fn backward(&mut self, w: &[f32], grad: &mut [f32], batch: &Batch, d: Dims, dz: &[f32]) {
        let (rows, h) = (d.rows(), d.h);
        let lay = self.layout.clone();
        let dx = &mut self.scratch.dx[..rows * h];
        dx.fill(0.0);
        self.unpool(w, grad, d, dz);
        let last = lay.layers.len() - 1;
        for l in (0..=last).rev() {
            let c = Ctx {
                w,
                at: &lay.layers[l],
                d,
                bias: &self.bias[..rows],
            };
            let (x, s) = (&self.hidden[l][..rows * h], &self.saved[l]);
            if l < last {
                layer_backward(&c, x, s, &mut self.scratch, grad);
            } else {
                last_layer_backward(
                    &c,
                    x,
                    s,
                    &mut self.scratch,
                    grad,
                    &mut self.first,
                    &mut self.yz,
                );
            }
        }
        let dx = &mut self.scratch.dx[..rows * h];
        let xhat0 = &self.xhat0[..rows * h];
        ops::col_dots(&mut grad[lay.ln0_g..][..h], dx, xhat0);
        ops::col_sums(&mut grad[lay.ln0_b..][..h], dx);
        ops::layer_norm_grad(dx, xhat0, &self.r0[..rows], &w[lay.ln0_g..][..h]);
        for (start, len) in [
            (lay.word, lay.vocab * h),
            (lay.pos, lay.positions * h),
            (lay.typ, lay.types * h),
        ] {
            grad[start..start + len].fill(0.0);
        }
        for (r, g) in dx.chunks(h).enumerate() {
            for (table, index) in [
                (lay.word, batch.ids[r] as usize),
                (lay.typ, batch.types[r] as usize),
                (lay.pos, r % d.t),
            ] {
                for (a, v) in grad[table + index * h..][..h].iter_mut().zip(g) {
                    *a += v;
                }
            }
        }
    }

    /// The classifier's and pooler's gradients from the logits' `dz`, and the gradient of each
    /// pair's first token into the scratch `dx`.
    fn unpool(&mut self, w: &[f32], grad: &mut [f32], d: Dims, dz: &[f32]) {
        let (h, lay) = (d.h, &self.layout);
        let last = &self.hidden[lay.layers.len()];
        let (mut gcb, mut dpre) = (0f32, vec![0f32; d.b * h]);
        grad[lay.cls_w..][..h].fill(0.0);
        grad[lay.pool_w..][..h * h].fill(0.0);
        grad[lay.pool_b..][..h].fill(0.0);
        for b in 0..d.b {
            let pooled = &self.pooled[b * h..][..h];
            for (g, p) in grad[lay.cls_w..][..h].iter_mut().zip(pooled) {
                *g += dz[b] * p;
            }
            gcb += dz[b];
            for j in 0..h {
                dpre[b * h + j] = dz[b] * w[lay.cls_w + j] * (1.0 - pooled[j] * pooled[j]);
            }
        }
        grad[lay.cls_b] = gcb;
        for b in 0..d.b {
            let cls = &last[b * d.t * h..][..h];
            let dp = &dpre[b * h..][..h];
            for j in 0..h {
                let row = &mut grad[lay.pool_w + j * h..][..h];
                for (g, x) in row.iter_mut().zip(cls) {
                    *g += dp[j] * x;
                }
                grad[lay.pool_b + j] += dp[j];
            }
            let dcls = &mut self.scratch.dx[b * d.t * h..][..h];
            for j in 0..h {
                let row = &w[lay.pool_w + j * h..][..h];
                for (g, a) in dcls.iter_mut().zip(row) {
                    *g += dp[j] * a;
                }
            }
        }
    }
}

/// Mean binary cross-entropy of `z` against `y` (`max(z, 0) − z·y + ln(1 + e^(−|z|))`, as
/// `finetune::bce_with_logits`), and its gradient per logit, `(σ(z) − y)/b`.
fn bce(z: &[f32], y: &[f32]) -> (f32, Vec<f32>) {
    let n = z.len() as f32;
    let mut sum = 0f32;
    let mut dz = Vec::with_capacity(z.len());
    for (&z, &y) in z.iter().zip(y) {
        sum += (z.max(0.0) - z * y) + ((-z.abs()).exp() + 1.0).ln();
        let s = if z >= 0.0 {
            1.0 / (1.0 + (-z).exp())
        } else {
            let e = z.exp();
            e / (1.0 + e)
        };
        dz.push((s - y) / n);
    }
    (sum / n, dz)
}

/// What a layer's passes read besides their buffers.
struct Ctx<'a> {
    w: &'a [f32],
    at: &'a LayerAt,
    d: Dims,
    bias: &'a [f32],
}

impl Ctx<'_> {
    fn param(&self, offset: usize, len: usize) -> &[f32] {
        &self.w[offset..offset + len]
    }

    /// A weight `[out, inp]` as the right operand of `x · Wᵀ`.
    fn wt(&self, offset: usize, out: usize, inp: usize) -> View<'_> {
        View::rows(self.param(offset, out * inp), out, inp).t()
    }

    /// A weight `[out, inp]` as the right operand of `dy · W`.
    fn w(&self, offset: usize, out: usize, inp: usize) -> View<'_> {
        View::rows(self.param(offset, out * inp), out, inp)
    }
}

fn add_into(y: &mut [f32], x: &[f32]) {
    y.par_chunks_mut(1 << 14)
        .zip(x.par_chunks(1 << 14))
        .for_each(|(y, x)| y.iter_mut().zip(x).for_each(|(a, b)| *a += b));
}

fn layer_forward(c: &Ctx, x: &[f32], out: &mut [f32], s: &mut Saved, sc: &mut Scratch) {
    let rows = c.d.rows();
    qkv_forward(c, x, s);
    let ctx = &mut s.ctx[..rows * c.d.h];
    attention_forward(c, &s.qkv, &mut s.p, ctx, c.d.t);
    dense_forward(c, rows, x, out, s, sc);
}

/// The last layer: of its output only each pair's first token is read (by the pooler), so past
/// K and V (every token's) it computes the first tokens' rows alone: their attention row, then
/// the output projection, the feed-forward block and both LayerNorms over `b` rows instead of
/// `b·t`. `first` holds the pairs' first rows of `x` on the way in, their output on the way out
/// (also written into those rows of `out`; the other rows of `out` are not written).
fn last_layer_forward(
    c: &Ctx,
    x: &[f32],
    out: &mut [f32],
    s: &mut Saved,
    sc: &mut Scratch,
    first: &mut [f32],
) {
    let (d, h) = (c.d, c.d.h);
    kv_first_q_forward(c, x, s);
    attention_forward(c, &s.qkv, &mut s.p, &mut s.ctx[..d.b * h], 1);
    let first = &mut first[..d.b * h];
    for (b, row) in first.chunks_mut(h).enumerate() {
        row.copy_from_slice(&x[b * d.t * h..][..h]);
    }
    let xin = first.to_vec();
    dense_forward(c, d.b, &xin, first, s, sc);
    for (b, row) in first.chunks(h).enumerate() {
        out[b * d.t * h..][..h].copy_from_slice(row);
    }
}

/// Q, K and V of every row, `x·Wᵀ + b`, into `s.qkv`.
fn qkv_forward(c: &Ctx, x: &[f32], s: &mut Saved) {
    let (rows, h, at) = (c.d.rows(), c.d.h, c.at);
    let qkv = &mut s.qkv[..rows * 3 * h];
    ops::fill_rows(qkv, c.param(at.qkv_b, 3 * h));
    matmul(
        qkv,
        3 * h,
        true,
        View::rows(x, rows, h),
        c.wt(at.qkv_w, 3 * h, h),
        true,
    );
}

/// [`qkv_forward`] for the last layer: K and V of every row, Q of each pair's first row only
/// (the other rows' Q columns hold the bias alone and are not read).
fn kv_first_q_forward(c: &Ctx, x: &[f32], s: &mut Saved) {
    let (d, at) = (c.d, c.at);
    let (rows, h, t) = (d.rows(), d.h, d.t);
    let qkv = &mut s.qkv[..rows * 3 * h];
    ops::fill_rows(qkv, c.param(at.qkv_b, 3 * h));
    let xs = View::rows(x, rows, h);
    matmul(
        &mut qkv[h..],
        3 * h,
        true,
        xs,
        c.wt(at.qkv_w + h * h, 2 * h, h),
        true,
    );
    let firsts = View::strided(x, d.b, h, t * h);
    matmul(qkv, t * 3 * h, true, firsts, c.wt(at.qkv_w, h, h), true);
}

/// From the context rows (`s.ctx`, `rows` of them) and the layer's input `x` (the same rows) to
/// its output `out`: the output projection and residual, LayerNorm, the feed-forward block and
/// residual, LayerNorm; what the backward pass needs kept in `s`'s first `rows` rows.
fn dense_forward(
    c: &Ctx,
    rows: usize,
    x: &[f32],
    out: &mut [f32],
    s: &mut Saved,
    sc: &mut Scratch,
) {
    let (d, at) = (c.d, c.at);
    let (h, i) = (d.h, d.inter);
    let ctx = &s.ctx[..rows * h];
    let y1 = &mut sc.tmp[..rows * h];
    ops::fill_rows(y1, c.param(at.ao_b, h));
    matmul(
        y1,
        h,
        true,
        View::rows(ctx, rows, h),
        c.wt(at.ao_w, h, h),
        true,
    );
    add_into(y1, x);
    let x1 = &mut s.x1[..rows * h];
    ops::layer_norm(
        y1,
        (c.param(at.ln1_g, h), c.param(at.ln1_b, h)),
        d.eps,
        x1,
        &mut s.xhat1[..rows * h],
        &mut s.r1[..rows],
    );
    // The bias is added by the GELU pass (one k block: the same bits as adding it first).
    let u = &mut sc.u[..rows * i];
    matmul(
        u,
        i,
        false,
        View::rows(x1, rows, h),
        c.wt(at.in_w, i, h),
        true,
    );
    let g = &mut s.g[..rows * i];
    ops::gelu(u, c.param(at.in_b, i), g, &mut s.slope[..rows * i]);
    let y2 = &mut sc.tmp[..rows * h];
    ops::fill_rows(y2, c.param(at.out_b, h));
    matmul(
        y2,
        h,
        true,
        View::rows(g, rows, i),
        c.wt(at.out_w, h, i),
        true,
    );
    add_into(y2, x1);
    ops::layer_norm(
        y2,
        (c.param(at.ln2_g, h), c.param(at.ln2_b, h)),
        d.eps,
        out,
        &mut s.xhat2[..rows * h],
        &mut s.r2[..rows],
    );
}

/// Q, K and V of head `hd` of pair `b` in `qkv` (`[rows, 3h]`), as `[t, dh]` views.
fn qkv_views(qkv: &[f32], d: Dims, b: usize, hd: usize) -> [View<'_>; 3] {
    let base = b * d.t * 3 * d.h + hd * d.dh;
    [0, d.h, 2 * d.h].map(|o| View::strided(&qkv[base + o..], d.t, d.dh, 3 * d.h))
}

/// Per pair, head by head: `P = softmax(scale · Q·Kᵀ + mask)` kept in `p` (`[b, heads, rows, t]`),
/// `P·V` written straight into the head's columns of the context rows `ctx` (`[b·rows, h]`),
/// for the first `rows` queries of each pair: all `t` of them, or the first token's alone in
/// the last layer. One task per pair (its rows of `ctx` are its own), its heads one after the
/// other with the scores block in cache.
fn attention_forward(c: &Ctx, qkv: &[f32], p: &mut [f32], ctx: &mut [f32], rows: usize) {
    let d = c.d;
    let (t, dh) = (d.t, d.dh);
    let scale = 1.0 / (dh as f32).sqrt();
    p[..d.b * d.heads * rows * t]
        .par_chunks_mut(d.heads * rows * t)
        .zip(ctx[..d.b * rows * d.h].par_chunks_mut(rows * d.h))
        .enumerate()
        .for_each(|(b, (p, out))| {
            for (hd, p) in p.chunks_mut(rows * t).enumerate() {
                let [q, k, v] = qkv_views(qkv, d, b, hd);
                let q = View::strided(q.data, rows, dh, q.rs);
                matmul(p, t, false, q, k.t(), false);
                ops::masked_softmax(p, &c.bias[b * t..][..t], scale);
                matmul(
                    &mut out[hd * dh..],
                    d.h,
                    false,
                    View::rows(p, rows, t),
                    v,
                    false,
                );
            }
        });
}

/// The layer's backward pass: `sc.dx` holds the gradient of its output and is left holding the
/// gradient of its input `x`; its parameters' gradients are written into `grad`.
fn layer_backward(c: &Ctx, x: &[f32], s: &Saved, sc: &mut Scratch, grad: &mut [f32]) {
    let rows = c.d.rows();
    dense_backward(c, rows, s, sc, grad);
    let qkv = &s.qkv[..rows * 3 * c.d.h];
    let dqkv = &mut sc.dqkv[..rows * 3 * c.d.h];
    attention_backward(c, qkv, &s.p, &sc.tmp, &mut sc.dp, dqkv);
    qkv_backward(c, x, sc, grad);
}

/// [`layer_backward`] of [`last_layer_forward`]: `sc.dx` is zero but in each pair's first row
/// (the pooler's gradient), so the dense part runs over those `b` rows (gathered into `first`).
/// The attention's gradient then has rank one per pair and head: only the first row's scores
/// have a gradient `ds` (`t` values), so K's gradient in row `r` is `ds[r]·q₀` and V's is
/// `p[r]·dc` (`q₀` the first row's query, `p` its probabilities, `dc` its context gradient).
/// Their weight gradients are `Σ_pairs q₀ᵀ ⊗ (ds·X)` and `Σ_pairs dcᵀ ⊗ (p·X)` and their input
/// gradient `dsᵀ·(q₀·W_K) + pᵀ·(dc·W_V)` per head, none a product over every row (`yz` holds
/// the `[ds; p]·X` and the `q₀·W_K`, `dc·W_V` rows of each pair); Q's only in the first rows.
fn last_layer_backward(
    c: &Ctx,
    x: &[f32],
    s: &Saved,
    sc: &mut Scratch,
    grad: &mut [f32],
    first: &mut [f32],
    yz: &mut [f32],
) {
    let (d, at) = (c.d, c.at);
    let (rows, h, t, heads, dh) = (d.rows(), d.h, d.t, d.heads, d.dh);
    let hh = 2 * heads;
    let scale = 1.0 / (dh as f32).sqrt();
    let first = &mut first[..d.b * h];
    for (b, row) in first.chunks_mut(h).enumerate() {
        row.copy_from_slice(&sc.dx[b * t * h..][..h]);
    }
    sc.dx[..d.b * h].copy_from_slice(first);
    dense_backward(c, d.b, s, sc, grad);
    first.copy_from_slice(&sc.dx[..d.b * h]);
    let qkv = &s.qkv[..rows * 3 * h];
    let (dctx, rest) = sc.tmp.split_at_mut(d.b * h);
    let dctx = &*dctx;
    let dq = &mut rest[..d.b * h];
    // Per pair `[ds; p]` (`2·heads` rows of `t`), Q's gradient in the first row, each row's sum.
    let sp = &mut sc.dp[..d.b * hh * t];
    let mut sums = vec![0f32; d.b * hh];
    sp.par_chunks_mut(hh * t)
        .zip(dq.par_chunks_mut(h))
        .zip(sums.par_chunks_mut(hh))
        .enumerate()
        .for_each(|(b, ((sp, dq), sums))| {
            let (ds_all, p_all) = sp.split_at_mut(heads * t);
            p_all.copy_from_slice(&s.p[b * heads * t..][..heads * t]);
            for hd in 0..heads {
                let [_, k, v] = qkv_views(qkv, d, b, hd);
                let (ds, p) = (&mut ds_all[hd * t..][..t], &p_all[hd * t..][..t]);
                let dc = View::rows(&dctx[b * h + hd * dh..][..dh], 1, dh);
                matmul(ds, t, false, dc, v.t(), false);
                ops::softmax_grad(ds, p, t, scale);
                matmul(&mut dq[hd * dh..], h, false, View::rows(ds, 1, t), k, false);
                sums[hd] = ds.iter().sum();
                sums[heads + hd] = p.iter().sum();
            }
        });
    let sp = &*sp;
    let (y, z) = yz[..2 * d.b * hh * h].split_at_mut(d.b * hh * h);
    y.par_chunks_mut(hh * h).enumerate().for_each(|(b, y)| {
        let m = View::rows(&sp[b * hh * t..][..hh * t], hh, t);
        matmul(
            y,
            h,
            false,
            m,
            View::rows(&x[b * t * h..][..t * h], t, h),
            false,
        );
    });
    let y = &*y;
    // The coefficient of row `j` of each pair's `[ds; p]`: q₀ of head j (K), dc of head j − heads (V).
    let coef = |j: usize| {
        if j < heads {
            View::strided(&qkv[j * dh..], d.b, dh, t * 3 * h)
        } else {
            View::strided(&dctx[(j - heads) * dh..], d.b, dh, h)
        }
    };
    let gw = &mut grad[at.qkv_w..][..3 * h * h];
    let (gq, gkv) = gw.split_at_mut(h * h);
    let xc = View::strided(x, d.b, h, t * h);
    matmul(gq, h, false, View::rows(dq, d.b, h).t(), xc, true);
    gkv.par_chunks_mut(dh * h).enumerate().for_each(|(j, dst)| {
        let yj = View::strided(&y[j * h..], d.b, h, hh * h);
        matmul(dst, h, false, coef(j).t(), yj, false);
    });
    let gb = &mut grad[at.qkv_b..][..3 * h];
    ops::col_sums(&mut gb[..h], dq);
    for j in 0..hh {
        let cj = coef(j);
        for (col, g) in gb[h + j * dh..][..dh].iter_mut().enumerate() {
            *g = (0..d.b).fold(0f32, |acc, b| {
                acc + cj.data[b * cj.rs + col] * sums[b * hh + j]
            });
        }
    }
    // The input's gradient: the first rows' (dense part and Q), then every row's from K and V.
    matmul(
        first,
        h,
        true,
        View::rows(dq, d.b, h),
        c.w(at.qkv_w, h, h),
        true,
    );
    let dx = &mut sc.dx[..rows * h];
    dx.fill(0.0);
    for (b, row) in first.chunks(h).enumerate() {
        dx[b * t * h..][..h].copy_from_slice(row);
    }
    dx.par_chunks_mut(t * h)
        .zip(z.par_chunks_mut(hh * h))
        .enumerate()
        .for_each(|(b, (dx, z))| {
            for j in 0..hh {
                let cj = coef(j);
                let row = View::rows(&cj.data[b * cj.rs..][..dh], 1, dh);
                let wj = c.w(at.qkv_w + (h + j * dh) * h, dh, h);
                matmul(&mut z[j * h..], h, false, row, wj, false);
            }
            let m = View::rows(&sp[b * hh * t..][..hh * t], hh, t).t();
            matmul(dx, h, true, m, View::rows(z, hh, h), false);
        });
}

/// The backward pass of [`dense_forward`] over `rows` rows: from the output's gradient in
/// `sc.dx` to the gradient of the layer's input through the residuals (left in `sc.dx`) and of
/// the context rows (left in `sc.tmp`), the parameters' gradients written into `grad`.
fn dense_backward(c: &Ctx, rows: usize, s: &Saved, sc: &mut Scratch, grad: &mut [f32]) {
    let (d, at) = (c.d, c.at);
    let (h, i) = (d.h, d.inter);
    let dx = &mut sc.dx[..rows * h];
    let (xhat2, x1) = (&s.xhat2[..rows * h], &s.x1[..rows * h]);
    ops::col_dots(&mut grad[at.ln2_g..][..h], dx, xhat2);
    ops::col_sums(&mut grad[at.ln2_b..][..h], dx);
    ops::layer_norm_grad(dx, xhat2, &s.r2[..rows], c.param(at.ln2_g, h));
    let g = &s.g[..rows * i];
    let dyt = View::rows(dx, rows, h).t();
    matmul(
        &mut grad[at.out_w..][..h * i],
        i,
        false,
        dyt,
        View::rows(g, rows, i),
        true,
    );
    ops::col_sums(&mut grad[at.out_b..][..h], dx);
    let dg = &mut sc.dg[..rows * i];
    matmul(
        dg,
        i,
        false,
        View::rows(dx, rows, h),
        c.w(at.out_w, h, i),
        true,
    );
    ops::gelu_grad_col_sums(&mut grad[at.in_b..][..i], dg, &s.slope[..rows * i]);
    let dgt = View::rows(dg, rows, i).t();
    matmul(
        &mut grad[at.in_w..][..i * h],
        h,
        false,
        dgt,
        View::rows(x1, rows, h),
        true,
    );
    matmul(
        dx,
        h,
        true,
        View::rows(dg, rows, i),
        c.w(at.in_w, i, h),
        true,
    );
    let xhat1 = &s.xhat1[..rows * h];
    ops::col_dots(&mut grad[at.ln1_g..][..h], dx, xhat1);
    ops::col_sums(&mut grad[at.ln1_b..][..h], dx);
    ops::layer_norm_grad(dx, xhat1, &s.r1[..rows], c.param(at.ln1_g, h));
    let ctx = View::rows(&s.ctx[..rows * h], rows, h);
    let dxt = View::rows(dx, rows, h).t();
    matmul(&mut grad[at.ao_w..][..h * h], h, false, dxt, ctx, true);
    ops::col_sums(&mut grad[at.ao_b..][..h], dx);
    let dctx = &mut sc.tmp[..rows * h];
    matmul(
        dctx,
        h,
        false,
        View::rows(dx, rows, h),
        c.w(at.ao_w, h, h),
        true,
    );
}

/// From Q's, K's and V's gradients (`sc.dqkv`, every row) to their parameters' gradients and
/// the input's, added to `sc.dx`.
fn qkv_backward(c: &Ctx, x: &[f32], sc: &mut Scratch, grad: &mut [f32]) {
    let (rows, h, at) = (c.d.rows(), c.d.h, c.at);
    let dqkv = &sc.dqkv[..rows * 3 * h];
    ops::col_sums(&mut grad[at.qkv_b..][..3 * h], dqkv);
    let dqt = View::rows(dqkv, rows, 3 * h).t();
    matmul(
        &mut grad[at.qkv_w..][..3 * h * h],
        h,
        false,
        dqt,
        View::rows(x, rows, h),
        true,
    );
    matmul(
        &mut sc.dx[..rows * h],
        h,
        true,
        View::rows(dqkv, rows, 3 * h),
        c.w(at.qkv_w, 3 * h, h),
        true,
    );
}

/// Per pair, head by head, from the context's gradient `dctx` (`[rows, h]`): `dP = dctx·Vᵀ`,
/// `dV = Pᵀ·dctx`, `dS = scale · P ⊙ (dP − Σ dP ⊙ P)`, `dQ = dS·K`, `dK = dSᵀ·Q`, written
/// straight into the head's columns of the rows `dqkv` (`[rows, 3h]`: Q's, K's and V's
/// gradients side by side). One task per pair, as in [`attention_forward`].
fn attention_backward(
    c: &Ctx,
    qkv: &[f32],
    p: &[f32],
    dctx: &[f32],
    dp: &mut [f32],
    dqkv: &mut [f32],
) {
    let d = c.d;
    let (t, dh, h) = (d.t, d.dh, d.h);
    let scale = 1.0 / (dh as f32).sqrt();
    let per_pair = d.heads * t * t;
    dp[..d.b * per_pair]
        .par_chunks_mut(per_pair)
        .zip(dqkv[..d.b * t * 3 * h].par_chunks_mut(t * 3 * h))
        .zip(p[..d.b * per_pair].par_chunks(per_pair))
        .enumerate()
        .for_each(|(b, ((dp, out), p))| {
            for (hd, (dp, p)) in dp.chunks_mut(t * t).zip(p.chunks(t * t)).enumerate() {
                let [q, k, v] = qkv_views(qkv, d, b, hd);
                let dc = View::strided(&dctx[b * t * h + hd * dh..], t, dh, h);
                let pv = View::rows(p, t, t);
                matmul(dp, t, false, dc, v.t(), false);
                matmul(&mut out[2 * h + hd * dh..], 3 * h, false, pv.t(), dc, false);
                ops::softmax_grad(dp, p, t, scale);
                let ds = View::rows(dp, t, t);
                matmul(&mut out[hd * dh..], 3 * h, false, ds, k, false);
                matmul(&mut out[h + hd * dh..], 3 * h, false, ds.t(), q, false);
            }
        });
}
