//! The hand-written trainer's kernels over plain f32 slices: the matrix product (the `gemm`
//! crate, called as candle calls it, through the workspace's patched `gemm-common`), LayerNorm,
//! GELU (erf) and the masked softmax forward and backward, and column sums (bias and LayerNorm
//! parameter gradients).
//!
//! Deterministic whatever the thread count and vector width: gemm splits a product over m and
//! n, never k, and its k-blocking is pinned (`vendor/gemm-common`); every row operation is one
//! thread's, in one fixed order; a column sum gives each column to one thread, which adds the
//! rows in order. The element-wise code is plain scalar Rust (erf and exp as polynomials, no
//! calls, so their loops vectorize lane by lane); the softmax's row sums run in eight lanes
//! combined in one fixed order (`lane_sum`), the same bits at any vector width.

use rayon::prelude::*;

/// Rows per parallel piece of a row operation (at least one row).
const ROWS: usize = 16;

/// Columns per parallel piece of a column sum.
const COLS: usize = 32;

/// `fn $name(args) body` compiled three times, the copy run chosen by the CPU at run time:
/// AVX-512F, AVX2, or the baseline x86-64 target (`$plain`, also callable on its own, which the
/// tests compare against). Only the width of the vector registers the loops use differs: Rust
/// never fuses or reorders float operations (no FMA contraction, no reassociation), so every
/// copy computes the same bits; the kernels keep their sums in fixed lanes or serial order.
macro_rules! widened {
    ($(#[$m:meta])* pub fn $name:ident / $plain:ident ($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        /// The baseline copy of the function of the same name without `_plain`.
        #[inline(always)]
        pub fn $plain($($arg: $ty),*) $body

        $(#[$m])*
        #[allow(unsafe_code)]
        pub fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn v4($($arg: $ty),*) {
                    $plain($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn v3($($arg: $ty),*) {
                    $plain($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F, the only requirement of `v4`.
                    return unsafe { v4($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU has AVX2, the only requirement of `v3`.
                    return unsafe { v3($($arg),*) };
                }
            }
            $plain($($arg),*)
        }
    };
}

/// A matrix operand: `rows × cols`, element `(i, j)` at `data[i·rs + j·cs]`.
#[derive(Clone, Copy)]
pub struct View<'a> {
    /// The values.
    pub data: &'a [f32],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Row stride.
    pub rs: usize,
    /// Column stride.
    pub cs: usize,
}

impl<'a> View<'a> {
    /// A row-major `rows × cols` matrix.
    pub fn rows(data: &'a [f32], rows: usize, cols: usize) -> Self {
        View {
            data,
            rows,
            cols,
            rs: cols,
            cs: 1,
        }
    }

    /// A row-major matrix whose rows are `rs` apart.
    pub fn strided(data: &'a [f32], rows: usize, cols: usize, rs: usize) -> Self {
        View {
            data,
            rows,
            cols,
            rs,
            cs: 1,
        }
    }

    /// The transpose (no copy).
    pub fn t(self) -> Self {
        View {
            data: self.data,
            rows: self.cols,
            cols: self.rows,
            rs: self.cs,
            cs: self.rs,
        }
    }

    /// One past the largest index read.
    fn extent(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.rs + (self.cols - 1) * self.cs + 1
        }
    }
}

/// `dst ← a·b` (or `dst ← dst + a·b` with `add`), `dst` row-major with rows `dst_rs` apart;
/// on rayon's threads when `parallel` (gemm's `Parallelism::Rayon` with the pool's size, as
/// candle calls it), else on the calling thread.
///
/// Panics when the shapes disagree or a view reaches past its slice: the one `unsafe` call is
/// guarded by those checks.
#[allow(unsafe_code)]
pub fn matmul(dst: &mut [f32], dst_rs: usize, add: bool, a: View, b: View, parallel: bool) {
    assert_eq!(a.cols, b.rows, "matmul: inner dimensions");
    let (m, n, k) = (a.rows, b.cols, a.cols);
    assert!(a.extent() <= a.data.len() && b.extent() <= b.data.len());
    assert!(m == 0 || n == 0 || (m - 1) * dst_rs + n <= dst.len());
    assert!(n <= dst_rs || m <= 1);
    if m == 0 || n == 0 {
        return;
    }
    let threads = rayon::current_num_threads();
    let par = if parallel && threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: the asserts above keep every element gemm reads inside `a.data` and `b.data` and
    // every element it writes inside `dst`, whose rows do not overlap (n ≤ dst_rs); `dst` is
    // borrowed mutably, so it aliases neither operand.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_rs as isize,
            add,
            a.data.as_ptr(),
            a.cs as isize,
            a.rs as isize,
            b.data.as_ptr(),
            b.cs as isize,
            b.rs as isize,
            if add { 1.0 } else { 0.0 },
            1.0,
            false,
            false,
            false,
            par,
        );
    }
}

/// Each row of `x` (`cols` wide) set to `bias`.
pub fn fill_rows(x: &mut [f32], bias: &[f32]) {
    x.par_chunks_mut(bias.len() * ROWS).for_each(|piece| {
        for row in piece.chunks_mut(bias.len()) {
            row.copy_from_slice(bias);
        }
    });
}

/// `acc[j] = Σ_rows x[r][j]` (rows of `acc.len()` values), rows added in order.
pub fn col_sums(acc: &mut [f32], x: &[f32]) {
    let cols = acc.len();
    acc.par_chunks_mut(COLS)
        .enumerate()
        .for_each(|(piece, out)| {
            let (c0, w) = (piece * COLS, out.len());
            out.fill(0.0);
            for row in x.chunks(cols) {
                for (o, v) in out.iter_mut().zip(&row[c0..c0 + w]) {
                    *o += v;
                }
            }
        });
}

/// `acc[j] = Σ_rows x[r][j] · y[r][j]`, rows in order (LayerNorm's γ gradient).
pub fn col_dots(acc: &mut [f32], x: &[f32], y: &[f32]) {
    let cols = acc.len();
    acc.par_chunks_mut(COLS)
        .enumerate()
        .for_each(|(piece, out)| {
            let (c0, w) = (piece * COLS, out.len());
            out.fill(0.0);
            for (rx, ry) in x.chunks(cols).zip(y.chunks(cols)) {
                let (rx, ry) = (&rx[c0..c0 + w], &ry[c0..c0 + w]);
                for ((o, a), b) in out.iter_mut().zip(rx).zip(ry) {
                    *o += a * b;
                }
            }
        });
}

/// LayerNorm of each row of `x` into `out`, keeping the normalized row `xhat` and
/// `1/√(σ² + eps)` of each row in `rstd`: `out = γ ⊙ x̂ + β` (the arithmetic of
/// `rerank::fused`'s LayerNorm).
pub fn layer_norm(
    x: &[f32],
    (gamma, beta): (&[f32], &[f32]),
    eps: f32,
    out: &mut [f32],
    xhat: &mut [f32],
    rstd: &mut [f32],
) {
    let n = gamma.len();
    out.par_chunks_mut(n * ROWS)
        .zip(xhat.par_chunks_mut(n * ROWS))
        .zip(rstd.par_chunks_mut(ROWS))
        .zip(x.par_chunks(n * ROWS))
        .for_each(|(((o, xh), r), x)| {
            for (((o, xh), r), x) in o
                .chunks_mut(n)
                .zip(xh.chunks_mut(n))
                .zip(r.iter_mut())
                .zip(x.chunks(n))
            {
                let mean = x.iter().sum::<f32>() / n as f32;
                let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n as f32;
                *r = 1.0 / (var + eps).sqrt();
                for i in 0..n {
                    xh[i] = (x[i] - mean) * *r;
                    o[i] = xh[i] * gamma[i] + beta[i];
                }
            }
        });
}

/// LayerNorm's input gradient, row by row, in place: `g` (the output's gradient) becomes
/// `r · (ĝ − mean(ĝ) − x̂ · mean(ĝ ⊙ x̂))` with `ĝ = g ⊙ γ`.
pub fn layer_norm_grad(g: &mut [f32], xhat: &[f32], rstd: &[f32], gamma: &[f32]) {
    let n = gamma.len();
    g.par_chunks_mut(n * ROWS)
        .zip(xhat.par_chunks(n * ROWS))
        .zip(rstd.par_chunks(ROWS))
        .for_each(|((g, xh), r)| {
            for ((g, xh), &r) in g.chunks_mut(n).zip(xh.chunks(n)).zip(r) {
                let (mut sg, mut sgx) = (0f32, 0f32);
                for i in 0..n {
                    let gh = g[i] * gamma[i];
                    sg += gh;
                    sgx += gh * xh[i];
                }
                let (mg, mgx) = (sg / n as f32, sgx / n as f32);
                for i in 0..n {
                    g[i] = r * (g[i] * gamma[i] - mg - xh[i] * mgx);
                }
            }
        });
}

/// 1/√(2π).
const INV_SQRT_2PI: f32 = 0.398_942_3;

/// `erf(x)` in plain arithmetic (no call, no branch: a loop of it vectorizes lane by lane, each
/// lane computing exactly what the scalar code computes; no fused multiply-add, so every CPU
/// gives the same bits). On `z = |x|` clamped to 4 (erf(4) is 1 in f32): below 1, `z · P(z²)`
/// with `P` of degree 5 (its first coefficient 2/√π, one ulp from the fit's); from 1,
/// `1 − e^(−z²) · R(1/z)` with `R` of degree 8 fitted to `erfc(z)·e^(z²)` (the scaled
/// complementary error function); the sign of `x` last. The coefficients are weighted
/// least-squares fits on Chebyshev nodes made for this trainer (numpy, against scipy's `erf`
/// and `erfcx`); within 2e-7 of the true value, and 2.5e-7 relative below 1 (the test's bounds:
/// a few ulp), where libm's `erff` is within 1 ulp.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    const P: [f32; 6] = [
        std::f32::consts::FRAC_2_SQRT_PI,
        -0.376_123_9,
        0.112_805_784,
        -0.026_720_885,
        0.004_927_408,
        -0.000_566_793_84,
    ];
    const R: [f32; 9] = [
        0.000_263_512_25,
        0.559_144_14,
        0.041_353_755,
        -0.469_246_77,
        0.491_541_1,
        -0.234_258_9,
        0.017_203_914,
        0.031_659_234,
        -0.010_076_414,
    ];
    let z = x.abs().min(4.0);
    let w = z * z;
    let mut p = P[5];
    for c in P[..5].iter().rev() {
        p = p * w + c;
    }
    let small = z * p;
    let u = 1.0 / z.max(1.0);
    let mut r = R[8];
    for c in R[..8].iter().rev() {
        r = r * u + c;
    }
    let large = 1.0 - exp(-w) * r;
    let e = if z < 1.0 { small } else { large };
    e.copysign(x)
}

/// `eˣ` in plain arithmetic (no call, no branch: a loop of it vectorizes lane by lane, each lane
/// computing exactly what the scalar code computes): `x = n·ln 2 + r` with `|r| ≤ ln 2 / 2`
/// (Cody–Waite, ln 2 in two parts), `eʳ` by its Taylor polynomial to degree 7 (truncation
/// below 5e-9 relative), times `2ⁿ` built in the exponent bits. Within 3 ulp of the true value
/// (the test states the bound); 0 below −87 (`f32::exp` is below 1.7e-38 there), where the
/// masked softmax's padding lands.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const SHIFT: f32 = 12_582_912.0; // 1.5 · 2²³: adding it rounds to an integer
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let xc = x.clamp(-87.0, 88.0);
    let shifted = xc * LOG2E + SHIFT;
    let n = shifted - SHIFT;
    let r = (xc - n * LN2_HI) - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0
                    + r * (1.0 / 24.0
                        + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // n as an integer from the bits of `shifted` (n + 1.5·2²³, in one binade whose ulp is 1),
    // not `n as i32`: Rust's saturating float-to-int cast does not vectorize.
    let ni = (shifted.to_bits() as i32).wrapping_sub(SHIFT.to_bits() as i32);
    let scale = f32::from_bits(((ni + 127) as u32) << 23);
    if x < -87.0 {
        0.0
    } else {
        p * scale
    }
}

/// GELU (erf) of `u + bias` (each row of `u` plus `bias`, as the product's bias would have
/// been added) into `out`, `x · Φ(x)` with `Φ(x) = (1 + erf(x/√2))/2`, keeping its derivative
/// `Φ(x) + x · φ(x)` in `slope` for the backward pass (which then needs neither `x` nor a
/// second pass over it). The bias added here rather than before the product gives the same
/// bits when the product sums its k in one block (`x = acc + b = b + acc`), and spares a pass.
pub fn gelu(u: &[f32], bias: &[f32], out: &mut [f32], slope: &mut [f32]) {
    let piece = bias.len() * ROWS;
    out.par_chunks_mut(piece)
        .zip(slope.par_chunks_mut(piece))
        .zip(u.par_chunks(piece))
        .for_each(|((o, d), u)| gelu_piece(u, bias, o, d));
}

widened! {
    /// [`gelu`] on whole rows.
    pub fn gelu_piece / gelu_piece_plain(u: &[f32], bias: &[f32], out: &mut [f32], slope: &mut [f32]) {
        let n = bias.len();
        for ((o, d), u) in out.chunks_mut(n).zip(slope.chunks_mut(n)).zip(u.chunks(n)) {
            for (((o, d), &u), &b) in o.iter_mut().zip(d.iter_mut()).zip(u).zip(bias) {
                let x = u + b;
                let c = 0.5 * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2));
                let pdf = INV_SQRT_2PI * exp(-0.5 * x * x);
                *o = x * c;
                *d = c + x * pdf;
            }
        }
    }
}

/// GELU's input gradient in place, `g ← g · slope` (the `slope` [`gelu`] kept), and the
/// column sums of the result into `acc` (the bias gradient of the product GELU read), rows
/// added in order as [`col_sums`] adds them: one pass instead of two.
#[allow(unsafe_code)]
pub fn gelu_grad_col_sums(acc: &mut [f32], g: &mut [f32], slope: &[f32]) {
    let cols = acc.len();
    let g = SharedRows(g.as_mut_ptr(), g.len());
    acc.par_chunks_mut(COLS)
        .enumerate()
        .for_each(|(piece, out)| {
            let (c0, w) = (piece * COLS, out.len());
            out.fill(0.0);
            for (r, d) in slope.chunks(cols).enumerate() {
                // SAFETY: each task writes only its own columns `c0..c0 + w` of every row, so
                // no two tasks touch the same element; `g` outlives the tasks.
                let row = unsafe { g.cols(r * cols + c0, w) };
                for ((o, x), &d) in out.iter_mut().zip(row).zip(&d[c0..c0 + w]) {
                    *x *= d;
                    *o += *x;
                }
            }
        });
}

/// A mutable buffer handed to tasks that each write their own columns of its rows.
#[derive(Clone, Copy)]
struct SharedRows(*mut f32, usize);

// SAFETY: only [`SharedRows::cols`] dereferences the pointer, for disjoint ranges.
#[allow(unsafe_code)]
unsafe impl Send for SharedRows {}
#[allow(unsafe_code)]
unsafe impl Sync for SharedRows {}

impl SharedRows {
    /// Elements `start..start + len`.
    ///
    /// # Safety
    /// The range is inside the buffer and no other task reads or writes it meanwhile.
    #[allow(unsafe_code, clippy::mut_from_ref)]
    unsafe fn cols(&self, start: usize, len: usize) -> &mut [f32] {
        assert!(start + len <= self.1);
        // SAFETY: in bounds (asserted) and not aliased (the caller's promise).
        unsafe { std::slice::from_raw_parts_mut(self.0.add(start), len) }
    }
}

/// Lanes of the row reductions ([`lane_max`], [`lane_sum`], [`lane_dot`]): element `i` goes
/// to lane `i mod 8`, and the lanes are combined in one fixed tree, so the result is the same
/// bits whatever vector width the compiler uses for the lanes (8 scalar accumulators, two SSE
/// registers or one AVX register all add the same values in the same order).
const LANES: usize = 8;

/// The eight lanes combined: `((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))`.
#[inline(always)]
fn combine(l: [f32; LANES]) -> f32 {
    ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

/// The largest value of `x` (exact: the order of a maximum does not change its value).
#[inline(always)]
fn lane_max(x: &[f32]) -> f32 {
    let mut l = [f32::NEG_INFINITY; LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            l[i] = l[i].max(c[i]);
        }
    }
    for (i, v) in tail.iter().enumerate() {
        l[i] = l[i].max(*v);
    }
    l.into_iter().fold(f32::NEG_INFINITY, f32::max)
}

/// `Σ x` in [`LANES`] lanes, combined by [`combine`].
#[inline(always)]
fn lane_sum(x: &[f32]) -> f32 {
    let mut l = [0f32; LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for i in 0..LANES {
            l[i] += c[i];
        }
    }
    for (i, v) in tail.iter().enumerate() {
        l[i] += v;
    }
    combine(l)
}

/// `Σ x ⊙ y` in [`LANES`] lanes, combined by [`combine`].
#[inline(always)]
fn lane_dot(x: &[f32], y: &[f32]) -> f32 {
    let mut l = [0f32; LANES];
    let (cx, cy) = (x.chunks_exact(LANES), y.chunks_exact(LANES));
    let (tx, ty) = (cx.remainder(), cy.remainder());
    for (a, b) in cx.zip(cy) {
        for i in 0..LANES {
            l[i] += a[i] * b[i];
        }
    }
    for (i, (a, b)) in tx.iter().zip(ty).enumerate() {
        l[i] += a * b;
    }
    combine(l)
}

widened! {
    /// Each row of `s` (`bias.len()` wide) becomes `softmax(scale · s + bias)` (the arithmetic
    /// of `rerank::fused`'s masked softmax, but the row's sum taken in [`LANES`] lanes: every
    /// pass is lane-wise, none a serial chain).
    pub fn masked_softmax / masked_softmax_plain(s: &mut [f32], bias: &[f32], scale: f32) {
        for row in s.chunks_mut(bias.len()) {
            for (o, &m) in row.iter_mut().zip(bias) {
                *o = scale * *o + m;
            }
            let max = lane_max(row);
            for o in row.iter_mut() {
                *o = exp(*o - max);
            }
            let sum = lane_sum(row);
            for o in row.iter_mut() {
                *o /= sum;
            }
        }
    }
}

widened! {
    /// The softmax's input gradient in place, row by row: `dp ← scale · p ⊙ (dp − Σ dp ⊙ p)`,
    /// the sum in [`LANES`] lanes.
    pub fn softmax_grad / softmax_grad_plain(dp: &mut [f32], p: &[f32], t: usize, scale: f32) {
        for (g, y) in dp.chunks_mut(t).zip(p.chunks(t)) {
            let dot = lane_dot(y, g);
            for (g, &y) in g.iter_mut().zip(y) {
                *g = scale * y * (*g - dot);
            }
        }
    }
}

/// The constants of one AdamW update of one parameter (see [`super::adamw`]).
#[derive(Clone, Copy)]
pub struct AdamConsts {
    /// The clipping factor `min(1, max/(‖g‖ + 1e-6))`.
    pub factor: f32,
    /// β₁.
    pub b1: f32,
    /// β₂.
    pub b2: f32,
    /// `1/(1−β₁ᵗ)`.
    pub scale_m: f32,
    /// `1/(1−β₂ᵗ)`.
    pub scale_v: f32,
    /// ε.
    pub eps: f32,
    /// `1 − lr·λ` for a decayed parameter, 1 otherwise.
    pub keep: f32,
    /// The learning rate.
    pub lr: f32,
}

widened! {
    /// One AdamW update of the weights `th`, moments `m` and `v` from the gradient `g`, value by
    /// value: `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`, `θ ← θ·keep − lr · m̂/(√v̂ + ε)`, the
    /// gradient first scaled by the clipping factor when it is below 1. No value depends on
    /// another, so the vector copies compute each value's bits as the scalar loop does.
    pub fn adamw_update / adamw_update_plain(
        th: &mut [f32],
        m: &mut [f32],
        v: &mut [f32],
        g: &[f32],
        k: AdamConsts,
    ) {
        let AdamConsts { factor, b1, b2, scale_m, scale_v, eps, keep, lr } = k;
        let (c1, c2) = (1.0 - b1, 1.0 - b2);
        for (((th, m), v), &g) in th.iter_mut().zip(m.iter_mut()).zip(v.iter_mut()).zip(g) {
            let g = if factor < 1.0 { g * factor } else { g };
            *m = *m * b1 + g * c1;
            *v = *v * b2 + g * g * c2;
            *th = *th * keep - (*m * scale_m) / ((*v * scale_v).sqrt() + eps) * lr;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The product of strided and transposed views equals a triple loop in f64 (the oracle),
    /// within f32 rounding; `add` adds to what was there; 1 and 2 threads give the same bits.
    #[test]
    fn matmul_of_views_matches_a_triple_loop() {
        let a: Vec<f32> = (0..7 * 10)
            .map(|i| ((i * 13 % 17) as f32 - 8.0) / 5.0)
            .collect();
        let b: Vec<f32> = (0..10 * 6)
            .map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0)
            .collect();
        // a as 5 rows of 4 columns, rows 10 apart, from column 3; b transposed: 4 × 6 from its
        // 6 × 10 layout (element (k, n) = b[n·10 + k]).
        let av = View::strided(&a[3..], 5, 4, 10);
        let bv = View::rows(&b, 6, 10).t();
        let bv = View {
            cols: 6,
            rows: 4,
            ..bv
        };
        let want = |i: usize, j: usize| -> f64 {
            (0..4)
                .map(|k| f64::from(a[3 + i * 10 + k]) * f64::from(b[j * 10 + k]))
                .sum()
        };
        let run = |threads: usize, add: bool| {
            let mut dst = vec![0.5f32; 5 * 8];
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| matmul(&mut dst, 8, add, av, bv, true));
            dst
        };
        for add in [false, true] {
            let d = run(1, add);
            for i in 0..5 {
                for j in 0..6 {
                    let w = want(i, j) + if add { 0.5 } else { 0.0 };
                    assert!((f64::from(d[i * 8 + j]) - w).abs() < 1e-5, "{i},{j}");
                }
                assert_eq!(d[i * 8 + 6], 0.5, "columns past n are untouched");
            }
            let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
            assert_eq!(bits(d), bits(run(2, add)));
        }
    }

    /// [`exp`] against f64's `exp` (the oracle) over −87…88: within 3.6e-7 relative (3 ulp),
    /// and 0 below −87.
    #[test]
    fn exp_is_within_three_ulp() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = f64::from(x).exp();
            worst = worst.max((f64::from(exp(x)) - want).abs() / want);
            x += 0.000_37;
        }
        assert!(worst < 3.6e-7, "{worst}");
        assert_eq!(exp(-87.5), 0.0);
        assert_eq!(exp(f32::MIN), 0.0);
        assert_eq!(exp(0.0), 1.0);
    }

    /// The masked softmax against softmax in f64 (the oracle) over a row with padding: within
    /// 1e-6 of each probability, padding 0; its gradient against `scale · p ⊙ (g − Σ g ⊙ p)` in
    /// f64; rows of a length that is not a multiple of the lanes (the tail path) too.
    #[test]
    fn lane_wise_softmax_matches_f64() {
        for t in [13usize, 64, 203] {
            let bias: Vec<f32> = (0..t)
                .map(|i| if i + 3 >= t { f32::MIN } else { 0.0 })
                .collect();
            let raw: Vec<f32> = (0..2 * t)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
                .collect();
            let scale = 0.125f32;
            let mut p = raw.clone();
            masked_softmax(&mut p, &bias, scale);
            let g: Vec<f32> = (0..2 * t)
                .map(|i| ((i * 11 % 23) as f32 - 11.0) / 5.0)
                .collect();
            let mut dp = g.clone();
            softmax_grad(&mut dp, &p, t, scale);
            for r in 0..2 {
                let row = &raw[r * t..][..t];
                let live = t - 3;
                let z: Vec<f64> = (0..live).map(|i| f64::from(scale * row[i])).collect();
                let max = z.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = z.iter().map(|v| (v - max).exp()).sum();
                let want: Vec<f64> = z.iter().map(|v| (v - max).exp() / sum).collect();
                let dot: f64 = (0..live).map(|i| want[i] * f64::from(g[r * t + i])).sum();
                for i in 0..t {
                    let (got, gd) = (f64::from(p[r * t + i]), f64::from(dp[r * t + i]));
                    if i < live {
                        assert!((got - want[i]).abs() < 1e-6, "t {t} row {r} col {i}");
                        let wd = f64::from(scale) * want[i] * (f64::from(g[r * t + i]) - dot);
                        assert!((gd - wd).abs() < 1e-6, "grad t {t} row {r} col {i}");
                    } else {
                        assert_eq!(got, 0.0, "padding");
                    }
                }
            }
        }
    }

    /// [`erf`] against libm's f64 `erf` (through candle's `erf_f64`; the oracle) over −6…6: within 2e-7
    /// absolute everywhere and 2.5e-7 relative below 1; odd; 0 at 0 and ±1 beyond 4.
    #[test]
    fn erf_is_within_two_e_minus_seven() {
        let (mut abs, mut rel) = (0f64, 0f64);
        let mut x = -6.0f32;
        while x < 6.0 {
            let want = candle_core::cpu::erf::erf_f64(f64::from(x));
            let got = f64::from(erf(x));
            abs = abs.max((got - want).abs());
            if x.abs() < 1.0 && x != 0.0 {
                rel = rel.max((got - want).abs() / want.abs());
            }
            assert_eq!(erf(-x), -erf(x), "odd at {x}");
            x += 0.000_29;
        }
        assert!(abs < 2e-7, "{abs}");
        assert!(rel < 2.5e-7, "{rel}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(4.5), 1.0);
        assert_eq!(erf(-30.0), -1.0);
    }

    /// The copies [`widened!`] runs on this CPU (AVX-512F or AVX2 when it has them) give the
    /// same bits as the baseline copies (the oracle: the same arithmetic compiled for the
    /// baseline target), for the softmax, its gradient, GELU with its slope and AdamW's update, on rows
    /// and pieces whose lengths are not multiples of any vector width.
    #[test]
    fn widened_kernels_give_the_baseline_bits() {
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let val = |i: usize, m: usize, d: f32| ((i * 37 % m) as f32 - (m / 2) as f32) / d;
        for t in [7usize, 61, 256] {
            let bias: Vec<f32> = (0..t)
                .map(|i| if i + 2 >= t { f32::MIN } else { 0.0 })
                .collect();
            let raw: Vec<f32> = (0..3 * t).map(|i| val(i, 101, 7.0)).collect();
            let (mut a, mut b) = (raw.clone(), raw.clone());
            masked_softmax(&mut a, &bias, 0.176_776_7);
            masked_softmax_plain(&mut b, &bias, 0.176_776_7);
            assert_eq!(bits(&a), bits(&b), "softmax, t {t}");
            let g: Vec<f32> = (0..3 * t).map(|i| val(i, 23, 5.0)).collect();
            let (mut ga, mut gb) = (g.clone(), g.clone());
            softmax_grad(&mut ga, &a, t, 0.176_776_7);
            softmax_grad_plain(&mut gb, &b, t, 0.176_776_7);
            assert_eq!(bits(&ga), bits(&gb), "softmax grad, t {t}");
        }
        for (rows, w) in [(1usize, 5usize), (3, 333), (2, 2048)] {
            let n = rows * w;
            let u: Vec<f32> = (0..n).map(|i| val(i, 1009, 90.0)).collect();
            let bias: Vec<f32> = (0..w).map(|i| val(i, 17, 8.0)).collect();
            let (mut oa, mut ca, mut ob, mut cb) =
                (vec![0f32; n], vec![0f32; n], vec![0f32; n], vec![0f32; n]);
            gelu_piece(&u, &bias, &mut oa, &mut ca);
            gelu_piece_plain(&u, &bias, &mut ob, &mut cb);
            assert_eq!(
                (bits(&oa), bits(&ca)),
                (bits(&ob), bits(&cb)),
                "gelu, {rows} rows of {w}"
            );
        }
        for (n, factor) in [(5usize, 1.0f32), (999, 0.37), (4096, 1.0)] {
            let k = AdamConsts {
                factor,
                b1: 0.9,
                b2: 0.999,
                scale_m: 1.0 / (1.0 - 0.9f32.powi(3)),
                scale_v: 1.0 / (1.0 - 0.999f32.powi(3)),
                eps: 1e-8,
                keep: 0.99,
                lr: 2e-5,
            };
            let th: Vec<f32> = (0..n).map(|i| val(i, 211, 50.0)).collect();
            let m: Vec<f32> = (0..n).map(|i| val(i, 97, 900.0)).collect();
            let v: Vec<f32> = (0..n).map(|i| val(i, 89, 1e5).abs()).collect();
            let g: Vec<f32> = (0..n).map(|i| val(i, 31, 300.0)).collect();
            let (mut a, mut b) = ((th.clone(), m.clone(), v.clone()), (th, m, v));
            adamw_update(&mut a.0, &mut a.1, &mut a.2, &g, k);
            adamw_update_plain(&mut b.0, &mut b.1, &mut b.2, &g, k);
            assert_eq!(
                (bits(&a.0), bits(&a.1), bits(&a.2)),
                (bits(&b.0), bits(&b.1), bits(&b.2)),
                "adamw, n {n}, factor {factor}"
            );
        }
    }

    /// GELU and its slope against f64 (erf from candle's `erf_f64`, libm's, as in the test
    /// above; φ by its formula), the bias added to each row; the slope also against a central
    /// difference of GELU in f64.
    #[test]
    fn gelu_and_its_slope_match_f64() {
        let gelu64 =
            |x: f64| 0.5 * x * (1.0 + candle_core::cpu::erf::erf_f64(x / std::f64::consts::SQRT_2));
        let (rows, w) = (40, 7);
        let u: Vec<f32> = (0..rows * w).map(|i| (i as f32 - 140.0) / 23.0).collect();
        let bias: Vec<f32> = (0..w).map(|j| j as f32 * 0.125 - 0.4).collect();
        let (mut out, mut slope) = (vec![0f32; rows * w], vec![0f32; rows * w]);
        gelu(&u, &bias, &mut out, &mut slope);
        for (i, (&o, &d)) in out.iter().zip(&slope).enumerate() {
            let x = f64::from(u[i] + bias[i % w]);
            assert!((f64::from(o) - gelu64(x)).abs() < 2e-6, "gelu({x})");
            let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
            let want = 0.5 * (1.0 + candle_core::cpu::erf::erf_f64(x / std::f64::consts::SQRT_2))
                + x * pdf;
            assert!((f64::from(d) - want).abs() < 2e-6, "slope({x})");
            let fd = (gelu64(x + 1e-5) - gelu64(x - 1e-5)) / 2e-5;
            assert!(
                (f64::from(d) - fd).abs() < 1e-5,
                "slope({x}) against a difference"
            );
        }
    }

    /// The fused GELU gradient and bias sums give the bits of the two passes they replace:
    /// the element products, then [`col_sums`] of the result; the sums also against f64.
    #[test]
    fn gelu_grad_col_sums_is_the_two_passes() {
        let (rows, cols) = (37, 70);
        let g: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 29 % 61) as f32 - 30.0) / 7.0)
            .collect();
        let slope: Vec<f32> = (0..rows * cols)
            .map(|i| ((i * 13 % 19) as f32) / 9.0 - 0.1)
            .collect();
        let mut fused = g.clone();
        let mut acc = vec![5f32; cols];
        gelu_grad_col_sums(&mut acc, &mut fused, &slope);
        let two: Vec<f32> = g.iter().zip(&slope).map(|(a, b)| a * b).collect();
        let mut want = vec![0f32; cols];
        col_sums(&mut want, &two);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&fused), bits(&two));
        assert_eq!(bits(&acc), bits(&want));
        for j in 0..cols {
            let s: f64 = (0..rows)
                .map(|r| f64::from(g[r * cols + j]) * f64::from(slope[r * cols + j]))
                .sum();
            assert!((f64::from(acc[j]) - s).abs() < 1e-4, "column {j}");
        }
    }

    /// Column sums and dots equal sums by hand (f64 over the same values).
    #[test]
    fn column_sums_match_a_loop() {
        let (rows, cols) = (9, 70);
        let x: Vec<f32> = (0..rows * cols)
            .map(|i| (i % 13) as f32 * 0.25 - 1.0)
            .collect();
        let y: Vec<f32> = (0..rows * cols)
            .map(|i| (i % 7) as f32 * 0.5 - 1.5)
            .collect();
        let (mut s, mut d) = (vec![9f32; cols], vec![9f32; cols]);
        col_sums(&mut s, &x);
        col_dots(&mut d, &x, &y);
        for j in 0..cols {
            let ws: f64 = (0..rows).map(|r| f64::from(x[r * cols + j])).sum();
            let wd: f64 = (0..rows)
                .map(|r| f64::from(x[r * cols + j]) * f64::from(y[r * cols + j]))
                .sum();
            assert!((f64::from(s[j]) - ws).abs() < 1e-5);
            assert!((f64::from(d[j]) - wd).abs() < 1e-5);
        }
    }
}
