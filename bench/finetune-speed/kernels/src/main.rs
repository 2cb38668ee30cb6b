//! Figures for `bench/finetune-speed/what-would.md` (issue 46 item 1):
//!
//! - `peak`: this CPU's clock (a chain of 100 dependent integer adds per loop, one cycle each)
//!   and its FMA peak per core (12 independent accumulators, AVX2 `vfmadd231ps ymm` and AVX-512
//!   `vfmadd231ps zmm`), on 1 thread and on 2 threads at once, each timed by its own CPU time (a shared machine).
//! - `gemm THREADS`: GFLOP/s of the matrix products of one training step (batch 16, 256 tokens,
//!   MiniLM-L12), each shape with the `gemm` crate as candle calls it (`Parallelism::Rayon(n)`
//!   for n > 1, else `None`; a batched product is a loop of products) and with train46's
//!   kernel (`train46_gemm.rs`; batched products split over the batch with rayon).
//!   Whether `gemm` may use its AVX-512 kernels is the build's `v4` feature.
//!
//! - `kc`: whether `gemm`'s bits depend on how it blocks k, which it derives at run time from
//!   the L1 cache's size and associativity (`gemm-common` `cache.rs` `kernel_params`: for the
//!   AVX2 kernel, kc = 1024 on a 12-way L1 like this one's, 512 on an 8-way one, then evened
//!   out over k). One call of `[4096×1536]·[1536×384]` against the same product as 2 calls of
//!   k = 768 and as 3 calls of k = 512, each accumulating into the output as gemm does between
//!   its own k blocks (`read_dst`, alpha 1).
//!
//! - `bits THREADS`: a hash (FNV-1a over the bits) of each step shape's product by `gemm`, to
//!   compare the build with x86-v4 (AVX-512 kernels) against the one without on one CPU.
//!
//! Output: one JSON line per figure on stdout.

mod train46_gemm;

use std::arch::asm;
use std::time::Instant;

use rayon::prelude::*;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("peak") => peak(),
        Some("kc") => kc_blocking(),
        Some("bits") => {
            let threads: usize = args.get(2).and_then(|t| t.parse().ok()).unwrap_or(1);
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a rayon pool");
            pool.install(|| bits(threads));
        }
        Some("gemm") => {
            let threads: usize = args.get(2).and_then(|t| t.parse().ok()).unwrap_or(1);
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a rayon pool");
            pool.install(|| rates(threads));
        }
        _ => {
            eprintln!("usage: ranklab-kernel-rates peak | gemm THREADS | kc | bits THREADS");
            std::process::exit(2);
        }
    }
}

/// `iters` loops of 100 dependent `add`s of a register: 100 cycles per loop on any x86-64 core
/// (a register operand: recent Intel cores fold chains of `add reg, immediate` at rename).
fn add_chain(iters: u64) -> u64 {
    let mut x: u64 = 0;
    let mut n = iters;
    let y: u64 = std::hint::black_box(1);
    unsafe {
        asm!(
            "2:",
            ".rept 100",
            "add {x}, {y}",
            ".endr",
            "sub {n}, 1",
            "jnz 2b",
            x = inout(reg) x,
            n = inout(reg) n,
            y = in(reg) y,
            options(nostack, nomem),
        );
    }
    x + n
}

/// `iters` loops of 12 independent `vfmadd231ps zmm` (16 lanes, 2 flops each).
#[target_feature(enable = "avx512f")]
unsafe fn fma512(iters: u64) {
    let mut n = iters;
    asm!(
        "vxorps zmm12, zmm12, zmm12",
        "vxorps zmm13, zmm13, zmm13",
        "2:",
        "vfmadd231ps zmm0, zmm12, zmm13",
        "vfmadd231ps zmm1, zmm12, zmm13",
        "vfmadd231ps zmm2, zmm12, zmm13",
        "vfmadd231ps zmm3, zmm12, zmm13",
        "vfmadd231ps zmm4, zmm12, zmm13",
        "vfmadd231ps zmm5, zmm12, zmm13",
        "vfmadd231ps zmm6, zmm12, zmm13",
        "vfmadd231ps zmm7, zmm12, zmm13",
        "vfmadd231ps zmm8, zmm12, zmm13",
        "vfmadd231ps zmm9, zmm12, zmm13",
        "vfmadd231ps zmm10, zmm12, zmm13",
        "vfmadd231ps zmm11, zmm12, zmm13",
        "sub {n}, 1",
        "jnz 2b",
        n = inout(reg) n,
        out("zmm0") _, out("zmm1") _, out("zmm2") _, out("zmm3") _,
        out("zmm4") _, out("zmm5") _, out("zmm6") _, out("zmm7") _,
        out("zmm8") _, out("zmm9") _, out("zmm10") _, out("zmm11") _,
        out("zmm12") _, out("zmm13") _,
        options(nostack, nomem),
    );
    let _ = n;
}

/// `iters` loops of 12 independent `vfmadd231ps ymm` (8 lanes, 2 flops each).
#[target_feature(enable = "avx2,fma")]
unsafe fn fma256(iters: u64) {
    let mut n = iters;
    asm!(
        "vxorps ymm12, ymm12, ymm12",
        "vxorps ymm13, ymm13, ymm13",
        "2:",
        "vfmadd231ps ymm0, ymm12, ymm13",
        "vfmadd231ps ymm1, ymm12, ymm13",
        "vfmadd231ps ymm2, ymm12, ymm13",
        "vfmadd231ps ymm3, ymm12, ymm13",
        "vfmadd231ps ymm4, ymm12, ymm13",
        "vfmadd231ps ymm5, ymm12, ymm13",
        "vfmadd231ps ymm6, ymm12, ymm13",
        "vfmadd231ps ymm7, ymm12, ymm13",
        "vfmadd231ps ymm8, ymm12, ymm13",
        "vfmadd231ps ymm9, ymm12, ymm13",
        "vfmadd231ps ymm10, ymm12, ymm13",
        "vfmadd231ps ymm11, ymm12, ymm13",
        "sub {n}, 1",
        "jnz 2b",
        n = inout(reg) n,
        out("ymm0") _, out("ymm1") _, out("ymm2") _, out("ymm3") _,
        out("ymm4") _, out("ymm5") _, out("ymm6") _, out("ymm7") _,
        out("ymm8") _, out("ymm9") _, out("ymm10") _, out("ymm11") _,
        out("ymm12") _, out("ymm13") _,
        options(nostack, nomem),
    );
    let _ = n;
}

/// CPU seconds (user + system) of this process (`RUSAGE_SELF`) or thread (`RUSAGE_THREAD`):
/// on a machine shared with other jobs, time spent descheduled is not counted.
fn cpu_s(who: libc::c_int) -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut u) };
    let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// Least thread CPU time of 15 runs of `f` on `threads` threads at once (each thread runs `f`
/// whole and times itself), seconds.
fn best_cpu(threads: usize, f: fn()) -> f64 {
    let mut best = f64::INFINITY;
    for _ in 0..15 {
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(move || {
                        let t = cpu_s(libc::RUSAGE_THREAD);
                        f();
                        cpu_s(libc::RUSAGE_THREAD) - t
                    })
                })
                .collect();
            for h in hs {
                best = best.min(h.join().expect("a thread"));
            }
        });
    }
    best
}

const CHAIN_ITERS: u64 = 20_000_000;
const FMA_ITERS: u64 = 80_000_000;

fn peak() {
    for threads in [1usize, 2] {
        let s = best_cpu(threads, || {
            std::hint::black_box(add_chain(std::hint::black_box(CHAIN_ITERS)));
        });
        let ghz = 100.0 * CHAIN_ITERS as f64 / s / 1e9;
        println!("{{\"what\":\"clock\",\"threads\":{threads},\"ghz_per_core\":{ghz:.3}}}");
        let flops = 12.0 * 2.0 * FMA_ITERS as f64;
        let s2 = best_cpu(threads, || unsafe {
            fma256(std::hint::black_box(FMA_ITERS))
        });
        let s5 = best_cpu(threads, || unsafe {
            fma512(std::hint::black_box(FMA_ITERS))
        });
        for (isa, lanes, s) in [("avx2_fma", 8.0, s2), ("avx512_fma", 16.0, s5)] {
            let gf = flops * lanes / s / 1e9;
            println!(
                "{{\"what\":\"peak\",\"isa\":\"{isa}\",\"threads\":{threads},\
                 \"gflops_per_core\":{gf:.1},\"flops_per_cycle\":{:.1}}}",
                gf / ghz
            );
        }
    }
}

/// One matrix product of the step: `batch` products `[m×k]·[k×n]`, A read transposed when
/// `ta` (stored k×m), B read transposed when `tb` (stored n×k), `per_step` of them in one step.
struct Shape {
    name: &'static str,
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    ta: bool,
    tb: bool,
    per_step: usize,
}

/// The products of one step of batch 16 × 256 tokens (4,096 rows) through 12 MiniLM layers
/// (hidden 384, 12 heads of 32, intermediate 1,536). Linear layers are `x · Wᵀ` (W stored
/// out × in); backward `dx = dy · W`, `dW = dyᵀ · x`. Attention per (pair, head):
/// `S = Q·Kᵀ`, `O = P·V`; backward `dP = dO·Vᵀ`, `dV = Pᵀ·dO`, `dQ = dS·K`, `dK = dSᵀ·Q`.
fn shapes() -> Vec<Shape> {
    let s = |name, batch, m, k, n, ta, tb, per_layer: usize| Shape {
        name,
        batch,
        m,
        k,
        n,
        ta,
        tb,
        per_step: 12 * per_layer,
    };
    vec![
        s(
            "qkvo fwd x·Wt [4096x384]·[384x384]",
            1,
            4096,
            384,
            384,
            false,
            true,
            4,
        ),
        s(
            "qkvo dx dy·W [4096x384]·[384x384]",
            1,
            4096,
            384,
            384,
            false,
            false,
            4,
        ),
        s(
            "qkvo dW dyt·x [384x4096]·[4096x384]",
            1,
            384,
            4096,
            384,
            true,
            false,
            4,
        ),
        s(
            "up fwd x·Wt [4096x384]·[384x1536]",
            1,
            4096,
            384,
            1536,
            false,
            true,
            1,
        ),
        s(
            "up dx dy·W [4096x1536]·[1536x384]",
            1,
            4096,
            1536,
            384,
            false,
            false,
            1,
        ),
        s(
            "up dW dyt·x [1536x4096]·[4096x384]",
            1,
            1536,
            4096,
            384,
            true,
            false,
            1,
        ),
        s(
            "down fwd x·Wt [4096x1536]·[1536x384]",
            1,
            4096,
            1536,
            384,
            false,
            true,
            1,
        ),
        s(
            "down dx dy·W [4096x384]·[384x1536]",
            1,
            4096,
            384,
            1536,
            false,
            false,
            1,
        ),
        s(
            "down dW dyt·x [384x4096]·[4096x1536]",
            1,
            384,
            4096,
            1536,
            true,
            false,
            1,
        ),
        s(
            "attn S=Q·Kt, dP=dO·Vt 192x[256x32]·[32x256]",
            192,
            256,
            32,
            256,
            false,
            true,
            2,
        ),
        s(
            "attn O=P·V, dQ=dS·K 192x[256x256]·[256x32]",
            192,
            256,
            256,
            32,
            false,
            false,
            2,
        ),
        s(
            "attn dV=Pt·dO, dK=dSt·Q 192x[256x256]t·[256x32]",
            192,
            256,
            256,
            32,
            true,
            false,
            2,
        ),
    ]
}

/// Deterministic values in [-1, 1) (a 64-bit LCG), so no denormals and no zeros.
fn fill(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Strides (row step, column step) of an operand of logical shape rows × cols stored
/// transposed (cols × rows, row major) or not.
fn strides(rows: usize, cols: usize, transposed: bool) -> (usize, usize) {
    let _ = rows;
    if transposed {
        (1, rows)
    } else {
        (cols, 1)
    }
}

fn run_gemm(sh: &Shape, a: &[f32], b: &[f32], c: &mut [f32], threads: usize) {
    let (ars, acs) = strides(sh.m, sh.k, sh.ta);
    let (brs, bcs) = strides(sh.k, sh.n, sh.tb);
    let par = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    for i in 0..sh.batch {
        let a = &a[i * sh.m * sh.k..];
        let b = &b[i * sh.k * sh.n..];
        let c = &mut c[i * sh.m * sh.n..];
        unsafe {
            gemm::gemm(
                sh.m,
                sh.n,
                sh.k,
                c.as_mut_ptr(),
                1,
                sh.n as isize,
                false,
                a.as_ptr(),
                acs as isize,
                ars as isize,
                b.as_ptr(),
                bcs as isize,
                brs as isize,
                0.0,
                1.0,
                false,
                false,
                false,
                par,
            );
        }
    }
}

fn run_t46(sh: &Shape, a: &[f32], b: &[f32], c: &mut [f32]) {
    use train46_gemm::{gemm, Kernel, Strided};
    let kernel = Kernel::detect();
    let (ars, acs) = strides(sh.m, sh.k, sh.ta);
    let (brs, bcs) = strides(sh.k, sh.n, sh.tb);
    let one = |i: usize, c: &mut [f32]| {
        let a = Strided {
            data: &a[i * sh.m * sh.k..(i + 1) * sh.m * sh.k],
            rs: ars,
            cs: acs,
        };
        let b = Strided {
            data: &b[i * sh.k * sh.n..(i + 1) * sh.k * sh.n],
            rs: brs,
            cs: bcs,
        };
        gemm(kernel, a, b, (sh.m, sh.k, sh.n), None, c);
    };
    if sh.batch == 1 {
        one(0, c);
    } else {
        c.par_chunks_mut(sh.m * sh.n)
            .enumerate()
            .for_each(|(i, c)| one(i, c));
    }
}

/// Median of 5 timings, each as many calls as fill ~0.15 s (at least 1): (wall seconds,
/// process CPU seconds) per call, the median of each.
fn time(mut f: impl FnMut()) -> (f64, f64) {
    f();
    let t = Instant::now();
    f();
    let once = t.elapsed().as_secs_f64().max(1e-6);
    let reps = ((0.15 / once) as usize).max(1);
    let (mut w, mut c): (Vec<f64>, Vec<f64>) = (0..5)
        .map(|_| {
            let c0 = cpu_s(libc::RUSAGE_SELF);
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            let wall = t.elapsed().as_secs_f64() / reps as f64;
            (wall, (cpu_s(libc::RUSAGE_SELF) - c0) / reps as f64)
        })
        .unzip();
    w.sort_by(f64::total_cmp);
    c.sort_by(f64::total_cmp);
    (w[2], c[2])
}

fn rates(threads: usize) {
    let build = if cfg!(feature = "v4") {
        "gemm x86-v4 on"
    } else {
        "gemm x86-v4 off (trainer 3)"
    };
    for sh in shapes() {
        let a = fill(sh.batch * sh.m * sh.k, 1);
        let b = fill(sh.batch * sh.k * sh.n, 2);
        let mut c = vec![0f32; sh.batch * sh.m * sh.n];
        let flops = 2.0 * (sh.batch * sh.m * sh.k * sh.n) as f64;
        let mut c2 = c.clone();
        let s_gemm = time(|| run_gemm(&sh, &a, &b, &mut c, threads));
        let s_t46 = time(|| run_t46(&sh, &a, &b, &mut c2));
        // The two must compute the same product (to rounding: gemm blocks k, train46 does not).
        let err = c
            .iter()
            .zip(&c2)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        assert!(err < 1e-2, "{}: gemm and train46 differ by {err}", sh.name);
        for (imp, (s, cpu)) in [(build, s_gemm), ("train46 kernel", s_t46)] {
            println!(
                "{{\"what\":\"gemm\",\"impl\":\"{imp}\",\"shape\":\"{}\",\"threads\":{threads},\
                 \"per_step\":{},\"gflop\":{:.4},\"ms\":{:.3},\"cpu_ms\":{:.3},\
                 \"gflops\":{:.1},\"gflops_per_cpu_s\":{:.1}}}",
                sh.name,
                sh.per_step,
                flops / 1e9,
                s * 1e3,
                cpu * 1e3,
                flops / s / 1e9,
                flops / cpu / 1e9
            );
        }
    }
}

/// `[m×k]·[k×n]` (A row major, B stored n×k as a linear layer's weight) by `gemm`, k cut into
/// `blocks` equal calls, each after the first adding into the output.
fn gemm_k_split(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize), blocks: usize) -> Vec<f32> {
    let mut c = vec![0f32; m * n];
    let kb = k / blocks;
    for j in 0..blocks {
        unsafe {
            gemm::gemm(
                m,
                n,
                kb,
                c.as_mut_ptr(),
                1,
                n as isize,
                j > 0,
                a[j * kb..].as_ptr(),
                1,
                k as isize,
                b[j * kb..].as_ptr(),
                k as isize,
                1,
                1.0,
                1.0,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        }
    }
    c
}

fn kc_blocking() {
    let (m, k, n) = (4096, 1536, 384);
    let a = fill(m * k, 1);
    let b = fill(n * k, 2);
    let build = if cfg!(feature = "v4") {
        "gemm x86-v4 on"
    } else {
        "gemm x86-v4 off (trainer 3)"
    };
    let one = gemm_k_split(&a, &b, (m, k, n), 1);
    for blocks in [1usize, 2, 3] {
        let split = gemm_k_split(&a, &b, (m, k, n), blocks);
        println!(
            "{{\"what\":\"kc_bits\",\"impl\":\"{build}\",\"calls\":{blocks},\"k_per_call\":{},\"fnv\":\"{:016x}\"}}",
            k / blocks,
            fnv(&split)
        );
    }
    for blocks in [2usize, 3] {
        let split = gemm_k_split(&a, &b, (m, k, n), blocks);
        let differ = one
            .iter()
            .zip(&split)
            .filter(|(x, y)| x.to_bits() != y.to_bits())
            .count();
        let worst = one
            .iter()
            .zip(&split)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        println!(
            "{{\"what\":\"kc\",\"shape\":\"[4096x1536]·[1536x384]\",\"impl\":\"{build}\",\"one_call_against\":\"{blocks} calls of k={}\",\
             \"elements_differing\":{differ},\"of\":{},\"max_abs_diff\":{worst:e}}}",
            k / blocks,
            m * n
        );
    }
}

/// FNV-1a over the bits of `v`.
fn fnv(v: &[f32]) -> u64 {
    v.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, x| {
        x.to_bits()
            .to_le_bytes()
            .iter()
            .fold(h, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3))
    })
}

fn bits(threads: usize) {
    let build = if cfg!(feature = "v4") {
        "gemm x86-v4 on"
    } else {
        "gemm x86-v4 off (trainer 3)"
    };
    let mut all = shapes();
    // The head: pooler and classifier on the 16 [CLS] rows (the classifier, n = 1 and
    // m·n ≤ 256, goes through gemm's horizontal kernels, which sum across lanes).
    all.push(Shape {
        name: "pooler x·Wt [16x384]·[384x384]",
        batch: 1,
        m: 16,
        k: 384,
        n: 384,
        ta: false,
        tb: true,
        per_step: 1,
    });
    all.push(Shape {
        name: "classifier x·Wt [16x384]·[384x1]",
        batch: 1,
        m: 16,
        k: 384,
        n: 1,
        ta: false,
        tb: true,
        per_step: 1,
    });
    for sh in all {
        let a = fill(sh.batch * sh.m * sh.k, 1);
        let b = fill(sh.batch * sh.k * sh.n, 2);
        let mut c = vec![0f32; sh.batch * sh.m * sh.n];
        run_gemm(&sh, &a, &b, &mut c, threads);
        println!(
            "{{\"what\":\"bits\",\"impl\":\"{build}\",\"threads\":{threads},\"shape\":\"{}\",\"fnv\":\"{:016x}\"}}",
            sh.name,
            fnv(&c)
        );
    }
}
