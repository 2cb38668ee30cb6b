// Copied unchanged (its tests left out) from branch train46, engine/src/rerank/train_gemm.rs
// (commit e2baa3d), to time it beside gemm; not used by ranklab.

//! The training's matrix product, `C = A · B` (+ a bias per column), with the same bits on every
//! x86-64 CPU: AVX-512 where the CPU has it, AVX2 where it does not, a portable loop elsewhere.
//!
//! Every output element is `acc ← fma(A[i,k], B[k,j], acc)` for k = 0, 1, … K−1 from 0, one
//! fused multiply-add per k in that order, then `acc + bias[j]`: the kernels vectorize across
//! the output's columns only, never across k, and nothing splits or reorders k (no k-blocking).
//! The width of a vector, the tile a kernel computes, the thread that computes a tile and the
//! thread count therefore change nothing in any element's arithmetic, and IEEE fused
//! multiply-add is exactly rounded on every CPU: the AVX-512, AVX2 and portable kernels give the
//! same bits (`kernels_give_the_same_bits` runs the three on this machine's CPU and compares).
//! That is the difference from the `gemm` crate, whose kernels (and k-blocking) are chosen by
//! CPU, which is why its AVX-512 kernels are off in this workspace.
//!
//! Layout: `A` and `B` are read through strides (element (i, k) of A at `i·rs + k·cs`), so a
//! transposed operand is never copied out; B is packed once per call into panels of `NR`
//! columns (k-major), A into blocks of `MR` rows (k-major) per row block, and the products run
//! on rayon's threads over row blocks. The panels a row block sweeps are grouped so that the
//! group's packed B (about 1 MB) stays in the core's L2 cache.

use rayon::prelude::*;

/// A matrix read through strides: element (i, k) is `data[i·rs + k·cs]`.
#[derive(Clone, Copy)]
pub struct Strided<'a> {
    /// The values.
    pub data: &'a [f32],
    /// Step between rows.
    pub rs: usize,
    /// Step between columns.
    pub cs: usize,
}

/// Which kernel computes the tiles (all give the same bits; see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// 8 rows × 32 columns (two 16-lane vectors per row), AVX-512F + FMA.
    Avx512,
    /// 4 rows × 24 columns (three 8-lane vectors per row), AVX2 + FMA.
    Avx2,
    /// 4 rows × 8 columns, whatever the compiler makes of `f32::mul_add`.
    Portable,
}

impl Kernel {
    /// The fastest kernel this CPU runs.
    pub fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("fma") {
                return Kernel::Avx512;
            }
            if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                return Kernel::Avx2;
            }
        }
        Kernel::Portable
    }

    /// Whether this CPU runs the kernel.
    pub fn available(self) -> bool {
        match self {
            Kernel::Portable => true,
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512 => {
                is_x86_feature_detected!("avx512f") && is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// Rows and columns of the kernel's tile.
    fn tile(self) -> (usize, usize) {
        match self {
            Kernel::Avx512 => (8, 32),
            Kernel::Avx2 => (4, 24),
            Kernel::Portable => (4, 8),
        }
    }
}

/// The `MR × NR` sums of the first `MR` rows of `a` against one column panel `bp`
/// (`[k][NR]`): one fused multiply-add per k, in k order, per element.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // r and j index the sums, the row and the panel alike
fn tile<const MR: usize, const NR: usize>(a: Strided<'_>, bp: &[f32]) -> [[f32; NR]; MR] {
    let mut acc = [[0f32; NR]; MR];
    let (b, _) = bp.as_chunks::<NR>();
    for (kk, b) in b.iter().enumerate() {
        for r in 0..MR {
            let x = a.data[r * a.rs + kk * a.cs];
            for j in 0..NR {
                acc[r][j] = x.mul_add(b[j], acc[r][j]);
            }
        }
    }
    acc
}

/// Checks that rows `0..rows` and `k` columns of `a` lie inside its values (what lets the
/// kernels below read them unchecked).
fn check(a: Strided<'_>, rows: usize, k: usize) {
    assert!(
        k == 0 || (rows - 1) * a.rs + (k - 1) * a.cs < a.data.len(),
        "gemm: a block outside its matrix"
    );
}

/// [`tile`] for 8 × 32 with AVX-512 (`vfmadd` on 16 lanes: the same fused multiply-add per
/// element as `f32::mul_add`), the 16 sums held in registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[allow(unsafe_code, clippy::needless_range_loop)]
fn tile_avx512(a: Strided<'_>, bp: &[f32]) -> [[f32; 32]; 8] {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); 2]; 8];
    let (b, _) = bp.as_chunks::<32>();
    check(a, 8, b.len());
    for (kk, b) in b.iter().enumerate() {
        // SAFETY: `b` is 32 floats; each load reads 16 of them.
        let (b0, b1) = unsafe {
            (
                _mm512_loadu_ps(b.as_ptr()),
                _mm512_loadu_ps(b.as_ptr().add(16)),
            )
        };
        for r in 0..8 {
            // SAFETY: `check` above: every (r, kk) of the block is inside `a`.
            let x = _mm512_set1_ps(unsafe { *a.data.get_unchecked(r * a.rs + kk * a.cs) });
            acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
        }
    }
    let mut out = [[0f32; 32]; 8];
    for (o, v) in out.iter_mut().zip(&acc) {
        // SAFETY: `o` is 32 floats; each store writes 16 of them.
        unsafe {
            _mm512_storeu_ps(o.as_mut_ptr(), v[0]);
            _mm512_storeu_ps(o.as_mut_ptr().add(16), v[1]);
        }
    }
    out
}

/// [`tile`] for 4 × 24 with AVX2 (`vfmadd` on 8 lanes), the 12 sums held in registers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(unsafe_code, clippy::needless_range_loop)]
fn tile_avx2(a: Strided<'_>, bp: &[f32]) -> [[f32; 24]; 4] {
    use std::arch::x86_64::*;
    let mut acc = [[_mm256_setzero_ps(); 3]; 4];
    let (b, _) = bp.as_chunks::<24>();
    check(a, 4, b.len());
    for (kk, b) in b.iter().enumerate() {
        // SAFETY: `b` is 24 floats; each load reads 8 of them.
        let v = unsafe {
            [
                _mm256_loadu_ps(b.as_ptr()),
                _mm256_loadu_ps(b.as_ptr().add(8)),
                _mm256_loadu_ps(b.as_ptr().add(16)),
            ]
        };
        for r in 0..4 {
            // SAFETY: `check` above: every (r, kk) of the block is inside `a`.
            let x = _mm256_set1_ps(unsafe { *a.data.get_unchecked(r * a.rs + kk * a.cs) });
            for c in 0..3 {
                acc[r][c] = _mm256_fmadd_ps(x, v[c], acc[r][c]);
            }
        }
    }
    let mut out = [[0f32; 24]; 4];
    for (o, v) in out.iter_mut().zip(&acc) {
        for c in 0..3 {
            // SAFETY: `o` is 24 floats; each store writes 8 of them, at 0, 8 and 16.
            unsafe { _mm256_storeu_ps(o.as_mut_ptr().add(8 * c), v[c]) };
        }
    }
    out
}

/// One row block against the panels `panels` of `bp`, written into `out` (the block's rows,
/// `n` columns each) with `bias` added.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn block<const MR: usize, const NR: usize>(
    tile: impl Fn(Strided<'_>, &[f32]) -> [[f32; NR]; MR],
    ap: Strided<'_>,
    bp: &[f32],
    k: usize,
    n: usize,
    panels: std::ops::Range<usize>,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    let rows = out.len() / n;
    for p in panels {
        let acc = tile(ap, &bp[p * k * NR..(p + 1) * k * NR]);
        let j0 = p * NR;
        let cols = NR.min(n - j0);
        for (r, acc) in acc.iter().enumerate().take(rows) {
            let o = &mut out[r * n + j0..r * n + j0 + cols];
            match bias {
                Some(b) => {
                    for ((o, &s), &b) in o.iter_mut().zip(acc).zip(&b[j0..j0 + cols]) {
                        *o = s + b;
                    }
                }
                None => o.copy_from_slice(&acc[..cols]),
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[allow(clippy::too_many_arguments)]
fn block_avx512(
    ap: Strided<'_>,
    bp: &[f32],
    k: usize,
    n: usize,
    panels: std::ops::Range<usize>,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    block::<8, 32>(|a, b| tile_avx512(a, b), ap, bp, k, n, panels, bias, out);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
#[allow(clippy::too_many_arguments)]
fn block_avx2(
    ap: Strided<'_>,
    bp: &[f32],
    k: usize,
    n: usize,
    panels: std::ops::Range<usize>,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    block::<4, 24>(|a, b| tile_avx2(a, b), ap, bp, k, n, panels, bias, out);
}

/// [`block`] with `kernel`'s tile and instructions.
#[allow(unsafe_code, clippy::too_many_arguments)]
fn run_block(
    kernel: Kernel,
    ap: Strided<'_>,
    bp: &[f32],
    k: usize,
    n: usize,
    panels: std::ops::Range<usize>,
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    match kernel {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `gemm` checks `kernel.available()` (the CPU has AVX-512F and FMA) before any
        // block runs; the function itself is safe Rust compiled with those features.
        Kernel::Avx512 => unsafe { block_avx512(ap, bp, k, n, panels, bias, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and FMA.
        Kernel::Avx2 => unsafe { block_avx2(ap, bp, k, n, panels, bias, out) },
        _ => block::<4, 8>(tile::<4, 8>, ap, bp, k, n, panels, bias, out),
    }
}

/// Packs the rows (`a_side`: of A, element (i, kk)) or columns (of B, element (kk, j)) `range`
/// of `x`, k of each, k-major into `out` (`[k][width]`, zero beyond `range`), reading along the
/// operand's unit stride so that the reads are sequential.
fn pack(
    x: Strided<'_>,
    k: usize,
    range: std::ops::Range<usize>,
    width: usize,
    a_side: bool,
    out: &mut [f32],
) {
    // Step between k's and between the packed lines.
    let (ks, ls) = if a_side { (x.cs, x.rs) } else { (x.rs, x.cs) };
    let lines = range.len();
    if ks == 1 {
        for (l, line) in range.enumerate() {
            let src = &x.data[line * ls..line * ls + k];
            for (kk, &v) in src.iter().enumerate() {
                out[kk * width + l] = v;
            }
        }
    } else {
        for (kk, dst) in out.chunks_exact_mut(width).enumerate() {
            for (l, line) in range.clone().enumerate() {
                dst[l] = x.data[kk * ks + line * ls];
            }
        }
    }
    for dst in out.chunks_exact_mut(width) {
        dst[lines..].fill(0.0);
    }
}

/// Floats of packed B a row block sweeps before the next group of panels (about 1 MB, half
/// this machine's 2 MB L2 per core).
const GROUP_FLOATS: usize = 1 << 18;

/// `out[i·n + j] = Σₖ a(i,k)·b(k,j) (+ bias[j])` for an `m × k` A and a `k × n` B, `out` row
/// major `m × n`, with `kernel` (which must be [`Kernel::available`]). See the module's
/// documentation for the order of the arithmetic.
#[allow(clippy::too_many_arguments)]
pub fn gemm(
    kernel: Kernel,
    a: Strided<'_>,
    b: Strided<'_>,
    (m, k, n): (usize, usize, usize),
    bias: Option<&[f32]>,
    out: &mut [f32],
) {
    assert!(
        kernel.available(),
        "the {kernel:?} kernel on a CPU without it"
    );
    assert_eq!(out.len(), m * n, "gemm: the output is not m × n");
    if m == 0 || n == 0 {
        return;
    }
    let (mr, nr) = kernel.tile();
    let panels = n.div_ceil(nr);
    let mut bp = vec![0f32; panels * k * nr];
    bp.par_chunks_mut(k * nr)
        .enumerate()
        .for_each(|(p, panel)| pack(b, k, p * nr..(p * nr + nr).min(n), nr, false, panel));
    let per_group = (GROUP_FLOATS / (k * nr).max(1)).max(1);
    for g0 in (0..panels).step_by(per_group) {
        let group = g0..(g0 + per_group).min(panels);
        out.par_chunks_mut(mr * n).enumerate().for_each_init(
            || vec![0f32; k * mr],
            |ap, (blk, out)| {
                let rows = out.len() / n;
                // A full block is read in place; the last, short one is packed with zero rows.
                let view = if rows == mr {
                    Strided {
                        data: &a.data[blk * mr * a.rs..],
                        ..a
                    }
                } else {
                    pack(a, k, blk * mr..blk * mr + rows, mr, true, ap);
                    Strided {
                        data: ap,
                        rs: 1,
                        cs: mr,
                    }
                };
                run_block(kernel, view, &bp, k, n, group.clone(), bias, out);
            },
        );
    }
}
