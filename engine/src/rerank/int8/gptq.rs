//! GPTQ's integers for one matrix (Frantar et al., "GPTQ: Accurate Post-Training Quantization
//! for Generative Pre-trained Transformers", 2022): the input channels rounded one at a time,
//! in order, each rounding's error spread over the channels not yet rounded through the inverse
//! of `H = Σ x xᵀ`, the calibration inputs' second moments, so that the product's error on those
//! inputs, `tr((W − W_q) H (W − W_q)ᵀ)`, stays small where rounding each weight to its nearest
//! step ignores how the inputs correlate. The scales are given (one per output row, as the
//! export's per-column rule makes them); only the integers change.
//!
//! Arithmetic: f64 throughout, plain loops in one fixed order (no threads, no runtime choice
//! of kernels), so the integers are the same bits on every CPU. `H⁻¹`'s upper Cholesky factor
//! comes from a Cholesky factorization of `H` with its indices reversed, which gives `H = U' U'ᵀ`
//! with `U'` upper, so that `H⁻¹ = (U'⁻¹)ᵀ U'⁻¹` and `U'⁻¹` is the factor; no full inverse is
//! formed.

/// `H`'s diagonal is raised by this share of its mean before factoring (GPTQ's damping).
pub const DAMP: f64 = 0.01;

/// The upper Cholesky factor `U` of `(H + d·I)⁻¹` (row-major, `n × n`), `d` = [`DAMP`] × the
/// mean of `H`'s diagonal, after each dead channel (`H_ii = 0`: an input that is always zero)
/// has its diagonal set to 1. `h` is row-major and symmetric; only its lower triangle is read.
pub fn inverse_factor(h: &[f64], n: usize) -> Result<Vec<f64>, String> {
    if h.len() != n * n {
        return Err(format!(
            "a second-moment matrix of {} values, not {n}²",
            h.len()
        ));
    }
    let diag: Vec<f64> = (0..n)
        .map(|i| {
            if h[i * n + i] == 0.0 {
                1.0
            } else {
                h[i * n + i]
            }
        })
        .collect();
    let damp = DAMP * diag.iter().sum::<f64>() / n as f64;
    // M = P (H + dI) P with P the reversal: M[i][j] = H[n-1-i][n-1-j]; its lower Cholesky
    // factor L (row-major), so that U' = P L P is upper and H + dI = U' U'ᵀ.
    let rev = |i: usize| n - 1 - i;
    let mut l = vec![0f64; n * n];
    for i in 0..n {
        for j in 0..=i {
            let (a, b) = (rev(i), rev(j));
            let (hi, lo) = if a >= b { (a, b) } else { (b, a) };
            let mut s = if i == j {
                diag[a] + damp
            } else {
                h[hi * n + lo]
            };
            let (ri, rj) = (&l[i * n..i * n + j], &l[j * n..j * n + j]);
            for (x, y) in ri.iter().zip(rj) {
                s -= x * y;
            }
            if i == j {
                if s <= 0.0 || !s.is_finite() {
                    return Err(format!(
                        "the second-moment matrix is not positive definite (pivot {s} at channel {})",
                        rev(i)
                    ));
                }
                l[i * n + i] = s.sqrt();
            } else {
                l[i * n + j] = s / l[j * n + j];
            }
        }
    }
    // U'[a][b] = L[rev a][rev b] (upper). Its inverse X, upper, by columns: X[j][j] = 1/U'[j][j],
    // X[i][j] = −(Σ_{k=i+1..=j} U'[i][k] X[k][j]) / U'[i][i] for i < j. Kept transposed (xt[j]
    // is column j of X) so that each sum reads two contiguous rows.
    let up = |a: usize, b: usize| l[rev(a) * n + rev(b)];
    let mut xt = vec![0f64; n * n];
    for j in 0..n {
        xt[j * n + j] = 1.0 / up(j, j);
        for i in (0..j).rev() {
            let mut s = 0f64;
            for k in i + 1..=j {
                s += up(i, k) * xt[j * n + k];
            }
            xt[j * n + i] = -s / up(i, i);
        }
    }
    let mut u = vec![0f64; n * n];
    for j in 0..n {
        for i in 0..=j {
            u[i * n + j] = xt[j * n + i];
        }
    }
    Ok(u)
}

/// GPTQ's int8 integers for `w` (`rows × cols`, row-major `[out, in]`, the fold model's layout)
/// with one scale per output row (`scales`, the export's per-column scales of the graph's
/// `[in, out]`), the input channels taken in order against the inverse factor `u` of
/// [`inverse_factor`] (`cols × cols`): channel `i`'s weights rounded to the nearest step (half
/// to even, clamped to ±127), the error divided by `u[i][i]` subtracted from every later
/// channel `j` times `u[i][j]`. A dead channel (`H_ii = 0`) gets 0. Row-major `[out, in]`.
pub fn integers(
    w: &[f32],
    rows: usize,
    cols: usize,
    scales: &[f32],
    h: &[f64],
    u: &[f64],
) -> Result<Vec<i8>, String> {
    if w.len() != rows * cols || scales.len() != rows || u.len() != cols * cols {
        return Err(format!(
            "GPTQ: a matrix of {} values for {rows} × {cols}, {} scales, a factor of {} values",
            w.len(),
            scales.len(),
            u.len()
        ));
    }
    // wt[i] = channel i's weights over the output rows (the matrix transposed), updated as
    // earlier channels are rounded.
    let mut wt = vec![0f64; rows * cols];
    for r in 0..rows {
        for c in 0..cols {
            let dead = h[c * cols + c] == 0.0;
            wt[c * rows + r] = if dead {
                0.0
            } else {
                f64::from(w[r * cols + c])
            };
        }
    }
    let s: Vec<f64> = scales.iter().map(|&x| f64::from(x)).collect();
    let mut q = vec![0i8; rows * cols];
    let mut err = vec![0f64; rows];
    for i in 0..cols {
        let (done, rest) = wt.split_at_mut((i + 1) * rows);
        let col = &done[i * rows..];
        let d = u[i * cols + i];
        for r in 0..rows {
            let qi = (col[r] / s[r]).round_ties_even().clamp(-127.0, 127.0);
            q[r * cols + i] = qi as i8;
            err[r] = (col[r] - qi * s[r]) / d;
        }
        for (j, later) in rest.chunks_exact_mut(rows).enumerate() {
            let f = u[i * cols + i + 1 + j];
            for (x, e) in later.iter_mut().zip(&err) {
                *x -= e * f;
            }
        }
    }
    Ok(q)
}

/// [`integers`] with the input channels taken in descending order of `H`'s diagonal (their
/// mean square; ties by channel index), GPTQ's "activation order": the channels that weigh
/// most are rounded first, while the most later channels can still absorb their error. `h` is
/// `cols × cols` row-major; the integers come back in the matrix's own channel order.
pub fn integers_by_activation(
    w: &[f32],
    rows: usize,
    cols: usize,
    scales: &[f32],
    h: &[f64],
) -> Result<Vec<i8>, String> {
    if h.len() != cols * cols || w.len() != rows * cols {
        return Err(format!(
            "GPTQ: a second-moment matrix of {} values and a matrix of {} for {rows} × {cols}",
            h.len(),
            w.len()
        ));
    }
    let mut order: Vec<usize> = (0..cols).collect();
    order.sort_by(|&a, &b| h[b * cols + b].total_cmp(&h[a * cols + a]).then(a.cmp(&b)));
    let mut wp = vec![0f32; w.len()];
    for r in 0..rows {
        for (k, &c) in order.iter().enumerate() {
            wp[r * cols + k] = w[r * cols + c];
        }
    }
    let mut hp = vec![0f64; h.len()];
    for (a, &ca) in order.iter().enumerate() {
        for (b, &cb) in order.iter().enumerate() {
            hp[a * cols + b] = h[ca * cols + cb];
        }
    }
    let u = inverse_factor(&hp, cols)?;
    let qp = integers(&wp, rows, cols, scales, &hp, &u)?;
    let mut q = vec![0i8; qp.len()];
    for r in 0..rows {
        for (k, &c) in order.iter().enumerate() {
            q[r * cols + c] = qp[r * cols + k];
        }
    }
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Oracle: a hand computation. H = [[4, 2], [2, 3]] (damping 1% of the mean diagonal 3.5:
    /// 0.035), so H + dI = [[4.035, 2], [2, 3.035]]; its inverse is [[3.035, −2], [−2, 4.035]] /
    /// det with det = 4.035·3.035 − 4; the upper factor U (inverse = Uᵀ U) has U[0][0]² =
    /// 3.035/det, U[0][0]·U[0][1] = −2/det and U[0][1]² + U[1][1]² = 4.035/det.
    #[test]
    fn the_inverse_factor_matches_a_hand_computation() {
        let u = inverse_factor(&[4.0, 2.0, 2.0, 3.0], 2).unwrap();
        let det: f64 = 4.035 * 3.035 - 4.0;
        let u00 = (3.035 / det).sqrt();
        let u01 = (-2.0 / det) / u00;
        let u11 = (4.035 / det - u01 * u01).sqrt();
        for (got, want) in u.iter().zip([u00, u01, 0.0, u11]) {
            assert!((got - want).abs() < 1e-12, "{u:?}");
        }
    }

    /// Oracle: a hand computation of one row over two channels, scale 1. w = [0.6, 0.6]: channel 0
    /// rounds to 1, error (0.6 − 1)/U00 carried to channel 1 as −0.4·U01/U00; with H's channels
    /// positively correlated (U01 < 0) channel 1 is pushed down: 0.6 + 0.4·U01/U00.
    #[test]
    fn one_row_matches_a_hand_computation() {
        let h = [4.0, 3.0, 3.0, 4.0];
        let u = inverse_factor(&h, 2).unwrap();
        let q = integers(&[0.6, 0.6], 1, 2, &[1.0], &h, &u).unwrap();
        let carried = 0.6 + 0.4 * u[1] / u[0];
        assert!(carried < 0.5, "{carried}");
        assert_eq!(q, vec![1, 0]);
        // Rounding each to the nearest would give [1, 1]: an error of 0.8·(x0 + x1) that the
        // correlation makes large; GPTQ's [1, 0] errs by 0.4·x0 − 0.6·x1.
    }

    /// Oracle: an independent implementation, GPTQ as its paper's reference code computes it
    /// (numpy: `cholesky(inv(H + dI)).T`, the per-channel loop of
    /// `bench/score-speed/gptq4.py`), run on this 8 × 16 matrix and these 40 inputs (channel 5
    /// always zero) on 2026-12-07; its integers, pasted. Rounding each weight to its nearest step
    /// differs from them in 23 places, and its error on the inputs is 2.2× GPTQ's.
    #[test]
    fn integers_equal_the_reference_implementation() {
        let (rows, cols, tokens) = (8, 16, 40);
        let w: Vec<f32> = (0..rows * cols)
            .map(|k| {
                let (r, c) = ((k / cols) as f64, (k % cols) as f64);
                ((1.3 * r + 0.7 * c + 0.1).sin() * 0.5) as f32
            })
            .collect();
        let x = |t: usize, c: usize| match c {
            5 => 0.0,
            _ => (0.37 * t as f64 * (c + 1) as f64).cos() + 0.1 * c as f64,
        };
        let mut h = vec![0f64; cols * cols];
        for a in 0..cols {
            for b in 0..cols {
                h[a * cols + b] = (0..tokens).map(|t| x(t, a) * x(t, b)).sum();
            }
        }
        let scales: Vec<f32> = w
            .chunks_exact(cols)
            .map(|row| {
                (2.0 * f64::from(row.iter().fold(0f32, |m, v| m.max(v.abs()))) / 254.0) as f32
            })
            .collect();
        let u = inverse_factor(&h, cols).unwrap();
        let q = integers(&w, rows, cols, &scales, &h, &u).unwrap();
        let want: [i8; 128] = [
            13, 91, 127, 103, 30, 0, -117, -122, -70, 15, 93, 127, 101, 28, -58, -117, 127, 111,
            43, -45, -112, 0, -81, 2, 85, 127, 110, 41, -47, -113, -126, -80, 54, -32, -104, -127,
            -90, 0, 74, 123, 115, 52, -35, -105, -127, -89, -9, 77, -96, -127, -98, -23, 63, 0,
            119, 64, -22, -97, -127, -97, -21, 64, 120, 119, -106, -36, 52, 115, 123, 0, -10, -89,
            -127, -105, -34, 54, 115, 123, 73, -11, 40, 109, 127, 85, 3, 0, -126, -112, -46, 42,
            110, 127, 83, 1, -82, -126, 127, 93, 16, -69, -122, 0, -57, 29, 103, 127, 92, 14, -71,
            -123, -116, -55, 28, -58, -117, -121, -68, 0, 94, 127, 100, 26, -60, -118, -121, -66,
            19, 96,
        ];
        assert_eq!(q, want);
    }
}
