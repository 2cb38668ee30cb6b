//! A fine-tuned fold model as an int8 ONNX graph of the pinned L-12's shape, scored through
//! ONNX Runtime exactly as the off-the-shelf int8 model is ([`FastembedCrossEncoder`]).
//!
//! **How the pinned graph is quantized** (read from its initializers): ONNX Runtime's dynamic
//! quantization. Every matrix consumed by a `MatMulInteger` is int8, symmetric (zero point 0),
//! one scale per tensor, its largest magnitude at ±127: `scale = max|w| / 127`; the three
//! embedding tables are uint8, asymmetric over `[min(w, 0), max(w, 0)]` mapped onto 0..255:
//! `scale = (max − min) / 255`, `zero point = round(−min / scale)`; a value is
//! `clamp(round_half_even(w / scale) + zero point)`. Scales are computed in f64 and rounded once
//! to f32, quotients `w / scale` in f32 (numpy's float32 arithmetic). Biases and LayerNorm
//! parameters stay float. Fine-tuning starts from this file dequantized
//! ([`super::bert::dequantize`]), so re-quantizing the starting weights by these rules
//! ([`Scales::PerTensor`]) gives the pinned file back byte for byte
//! (`engine/tests/int8_export.rs`): every rule above is checked against the 77 quantized
//! tensors ONNX Runtime wrote.
//!
//! **What the export changes: one scale per output column.** Fine-tuning moves a weight by
//! about 1–15% of its tensor's int8 step, so the pinned per-tensor grid rounds nearly every
//! weight back to its starting value (the export then scores 0.46–0.57 mean |Δlogit| from the
//! float fold model). [`export`] quantizes each matrix with one scale per output column
//! ([`Scales::PerColumn`], `max|w[:, j]| / 127`): a fresh, finer grid on which the rounding
//! errors no longer cancel the fine-tuning, 0.11–0.14 mean on docir's and brain's folds
//! (docs/speed.md, "Fold models as int8 exports"). The scale initializer becomes a `[N]`
//! vector, which the graph's output `Mul` broadcasts over the product's last axis; ONNX
//! Runtime fuses the same operators either way (`DynamicQuantizeMatMul`,
//! `MatMulIntegerToFloat`), so the export scores at the pinned model's speed.
//! [`Scales::PerTensor`] keeps the pinned rule ([`export_with`]).
//!
//! **Bias correction (exporter 3).** Rounding a fine-tuned matrix shifts its product's mean
//! output, and over 74 matrices those shifts add up: on SciFact's fold models the per-column
//! export's logits sat 0.71–1.02 below the float model's on unrelated pairs, nearly all of it
//! one shift (docs/speed.md, "Fold models as int8 exports", fourth round). [`calibrated`]
//! measures each matrix's mean input μ over calibration pairs with the float model
//! ([`super::bert::Bert::mean_inputs`]) and [`bias_corrected`] adds `(W − W_q) μ` to its bias,
//! so that the rounding no longer moves the mean; the matrices themselves are exported as
//! before. A fine-tuned stage calibrates on 64 of the fold's own training pairs (the harness's
//! `replay::tuned::calibration_pairs`), which the fold's key already names. The graph's nodes
//! and shapes are unchanged, so ONNX Runtime runs it at the same speed.
//!
//! **The feed-forward's inner activations one scale per row (exporter 4).** What exporters 2
//! and 3 left was per-pair scatter from the activations' quantization, one uint8 scale for a
//! whole `[tokens, hidden]` tensor: the fine-tuned models' steeper logits made it 0.14–0.18
//! mean |Δlogit| against the pinned file's own 0.086. [`rows`] quantizes the 12 activations
//! entering the feed-forward's output matrices (after the GELU, 1,536 wide, the widest and most
//! uneven inputs) with one scale per token: 0.05–0.06 mean on docir's fold models, at 0.97× the
//! pinned model's speed (per row everywhere: 0.04, at 0.92×). On SciFact's fold models, whose
//! fine-tuning moved layer 11 by whole steps, it leaves the unrelated pairs' logits 0.24–0.34
//! below the float model's (a gain of 2–3 % the bias correction does not see), while ordering
//! pairs about as closely as exporter 3 did or more (Kendall's tau 0.94–0.98; docs/speed.md,
//! "Fold models as int8 exports"). The other 38 quantizers and their 62 matrices are as in the
//! pinned graph. This
//! is the "equivalent" graph of issue 46: the same weights, shapes and operators but those 12
//! quantizers and their products, each one `MatMulIntegerToFloat` (its module says why).
//!
//! **The matrices' integers chosen by GPTQ (exporter 5).** What exporter 4 left on SciFact's
//! fold models was the weights' rounding seen through the layers after it: each matrix rounded
//! to its nearest steps errs in directions its inputs' correlations amplify, and a bias
//! correction from the mean input cannot see that. [`calibrated`] now chooses each matrix's
//! integers with GPTQ ([`gptq`]; the same per-column scales) against `H = Σ x xᵀ` of its float
//! input over the calibration pairs, channels in descending order of their mean square, and
//! then corrects the biases for those integers. On SciFact's fold models: 0.08 mean |Δlogit|
//! on unrelated pairs instead of 0.25–0.34 (docs/speed.md, "Fold models as int8 exports",
//! sixth round). The graph's nodes, shapes and scales are exporter 4's; only integers and
//! biases differ, so it scores at the same speed.
//!
//! **The rewrite.** A copy of the pinned file's bytes in which every initializer that is a BERT
//! parameter gets the fold model's values (and its matrices their new scales and zero point),
//! every other byte (nodes, names, opset, metadata) copied; only the scales' shapes change
//! ([`export_with`]); then [`rows::per_row_activations`] rewrites the nodes above, adds their
//! constants and imports the `com.microsoft` operator set.
//! ONNX is protobuf: the enclosing `GraphProto` and `ModelProto` lengths are re-encoded, because
//! a tensor's length may change. Every parameter of the fold model lands in exactly one
//! initializer, or the export is refused.
//!
//! **The cache** (`<cache>/finetuned/<key>.int8/`, beside the fold model's `<key>.bin`):
//! `model.onnx`, the base model's tokenizer files and `export.json` (the fold key, the base
//! graph's sha256, [`EXPORTER`] and the exported graph's sha256), written as one directory
//! step. It is used only when `export.json` names this fold, base and exporter,
//! `model.onnx` hashes to what it records and each tokenizer file holds the base model's bytes;
//! anything else (truncated, foreign, older exporter, an edited tokenizer) is exported again,
//! never trusted.
//!
//! **Scores** depend on the CPU's int8 kernel ([`crate::models::Int8Kernel`]) as the pinned
//! model's do: batch 1 (a pair's score is a function of the pair alone), cached under
//! [`Int8FinetunedCrossEncoder::identity_of`] and carried across machines by recordings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::bert::Weights;
use super::{CrossEncoder, CrossEncoderOptions, FastembedCrossEncoder};
use crate::models::onnx::{dtype, Graph};
use crate::models::{hex, sha256, ModelDir, ModelKind};
use crate::{Error, Result};

pub mod gptq;
pub mod rows;

/// Version of the export rules: part of the cache check and of the scores' identity (1: one
/// scale per tensor; 2: one scale per column, [`Scales::PerColumn`]; 3: per column, with the
/// biases corrected on calibration pairs, [`calibrated`]; 4: and the activations quantized one
/// scale per row, [`rows`]; 5: the integers chosen by GPTQ on the calibration pairs, [`gptq`]).
pub const EXPORTER: u32 = 5;

/// The files of the base model directory an export carries beside its graph.
const TOKENIZER_FILES: [&str; 4] = [
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
];

/// New contents of one initializer.
#[derive(Debug, Clone, PartialEq)]
enum Values {
    F32(Vec<f32>),
    /// 8-bit elements as stored (int8 as its two's complement byte).
    Bytes(Vec<u8>),
    /// One 8-bit zero point (as `int32_data` holds it).
    ZeroPoint(i32),
    /// A vector of floats written with the shape `[len]`, whatever the old tensor's shape (a
    /// per-tensor scale becoming one scale per column).
    Column(Vec<f32>),
}

/// How the matrices of `MatMulInteger` nodes get their int8 scales.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scales {
    /// One scale per tensor, `max|w| / 127`: the pinned graph's own rule (ONNX Runtime's
    /// dynamic quantization). Re-quantizing the starting weights this way gives the pinned file
    /// back byte for byte, and rounds most of a fine-tuning's change away (docs/speed.md).
    PerTensor,
    /// One scale per output column, `max|w[:, j]| / 127` (the scale initializer a `[N]` vector
    /// that the graph's output `Mul` broadcasts over the product's last axis; the zero point
    /// stays one scalar 0): what [`export`] writes.
    PerColumn,
}

/// `w` quantized as the pinned graph's matrices are: int8, symmetric, scale `max|w| / 127`.
fn symmetric_int8(w: &[f32]) -> (f32, Vec<u8>) {
    let absmax = w.iter().fold(0f32, |m, v| m.max(v.abs()));
    let scale = match (2.0 * f64::from(absmax) / 254.0) as f32 {
        s if s > 0.0 => s,
        _ => 1.0,
    };
    let q = w
        .iter()
        .map(|v| ((v / scale).round_ties_even().clamp(-127.0, 127.0) as i8) as u8)
        .collect();
    (scale, q)
}

/// `w` (`rows × cols`, row-major, the graph's `[in, out]`) quantized symmetric int8 with one
/// scale per column: column `j`'s scale is `max|w[:, j]| / 127` by the rule of
/// [`symmetric_int8`].
fn per_column_int8(w: &[f32], rows: usize, cols: usize) -> (Vec<f32>, Vec<u8>) {
    let mut absmax = vec![0f32; cols];
    for row in w.chunks_exact(cols) {
        for (m, v) in absmax.iter_mut().zip(row) {
            *m = m.max(v.abs());
        }
    }
    let scales: Vec<f32> = absmax.iter().map(|&a| column_scale(a)).collect();
    let mut q = Vec::with_capacity(rows * cols);
    for row in w.chunks_exact(cols) {
        q.extend(
            row.iter()
                .zip(&scales)
                .map(|(v, s)| (to_int8(*v, *s) as i8) as u8),
        );
    }
    (scales, q)
}

/// The int8 step of a column whose largest magnitude is `absmax` ([`symmetric_int8`]'s rule).
fn column_scale(absmax: f32) -> f32 {
    match (2.0 * f64::from(absmax) / 254.0) as f32 {
        s if s > 0.0 => s,
        _ => 1.0,
    }
}

/// The int8 step of one output row of a `[out, in]` matrix (one column of the graph's
/// `[in, out]`): [`column_scale`] of its largest magnitude.
fn row_scale(row: &[f32]) -> f32 {
    column_scale(row.iter().fold(0f32, |m, v| m.max(v.abs())))
}

/// `v` on the int8 grid of step `scale`: round half to even, clamped to ±127.
fn to_int8(v: f32, scale: f32) -> f32 {
    (v / scale).round_ties_even().clamp(-127.0, 127.0)
}

/// A fold model ready for [`export`]: its weights (biases corrected for the integers) and, per
/// quantized matrix (by parameter name), the integers to write, row-major `[out, in]` as the
/// fold model keeps the matrix; a matrix without integers here is rounded to its nearest steps.
#[derive(Debug, Clone)]
pub struct Quantized {
    /// The weights, float.
    pub weights: Weights,
    /// GPTQ's integers, by parameter name (`bert.encoder.layer.0.attention.self.query`).
    pub integers: BTreeMap<String, Vec<i8>>,
}

impl Quantized {
    /// `weights` with every matrix rounded to its nearest steps and no bias changed.
    pub fn nearest(weights: Weights) -> Quantized {
        Quantized {
            weights,
            integers: BTreeMap::new(),
        }
    }
}

/// The fold model's `weights` as [`export`] should be given them (exporter 5): each quantized
/// matrix's integers chosen by GPTQ ([`gptq`], input channels in descending order of their
/// mean square, one scale per column as [`Scales::PerColumn`] makes it) against the second
/// moments of its input over the calibration `pairs`, and its bias corrected
/// ([`bias_corrected_with`]) on its mean input for those integers; both measured by the float
/// model ([`super::bert::Bert::input_moments_on`]: pairs in order, their passes side by side
/// when the process scores fold models so, the same bits either way). The key and value
/// matrices read the query's input, so they use its moments.
pub fn calibrated(
    weights: Weights,
    tokenizer: &tokenizers::Tokenizer,
    pairs: &[(String, String)],
) -> std::result::Result<Quantized, String> {
    let bert = super::bert::Bert::new(weights, super::bert::Config::default())?;
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(q, p)| (q.as_str(), p.as_str()))
        .collect();
    let moments = bert.input_moments_on(
        super::finetuned::side_by_side(),
        tokenizer,
        &pairs,
        |name| !name.ends_with(".attention.self.key") && !name.ends_with(".attention.self.value"),
    )?;
    let weights = bert.into_weights();
    let second_of = |param: &str| {
        let source = param
            .strip_suffix(".key")
            .or_else(|| param.strip_suffix(".value"))
            .filter(|p| p.ends_with(".attention.self"))
            .map_or(param.to_string(), |p| format!("{p}.query"));
        moments
            .get(&source)
            .and_then(|m| m.second.as_ref())
            .ok_or_else(|| format!("{param}: no second moments of its input"))
    };
    let params: Vec<&String> = moments.keys().collect();
    let integers = {
        use rayon::prelude::*;
        params
            .par_iter()
            .map(|param| {
                let (w, dims) = values_of(&weights, &format!("{param}.weight"))?;
                let [rows, cols] = dims[..] else {
                    return Err(format!("{param}.weight: a matrix of shape {dims:?}"));
                };
                let scales: Vec<f32> = w.chunks_exact(cols).map(row_scale).collect();
                let q = gptq::integers_by_activation(&w, rows, cols, &scales, second_of(param)?)
                    .map_err(|e| format!("{param}: {e}"))?;
                Ok(((*param).clone(), q))
            })
            .collect::<std::result::Result<BTreeMap<String, Vec<i8>>, String>>()?
    };
    let means = moments
        .iter()
        .map(|(k, m)| (k.clone(), m.mean.clone()))
        .collect();
    Ok(Quantized {
        weights: bias_corrected_with(&weights, &means, &integers)?,
        integers,
    })
}

/// `weights` with every quantized matrix's bias corrected for the matrix's rounding
/// ([`Scales::PerColumn`]) on the mean input `means[param]` (μ, from
/// [`super::bert::Bert::mean_inputs`] over calibration pairs): `b + (W − W_q) μ`, so that the
/// rounding no longer shifts the product's mean output (the bias correction of Nagel et al.,
/// "Data-Free Quantization Through Weight Equalization and Bias Correction", 2019, with μ
/// measured rather than inferred). W_q is `q · scale` with `q` and `scale` exactly as
/// [`export`] writes them; sums in f64, one rounding to f32. A parameter without a mean keeps
/// its bias; a mean whose width is not the matrix's input is refused.
pub fn bias_corrected(
    weights: &Weights,
    means: &BTreeMap<String, Vec<f64>>,
) -> std::result::Result<Weights, String> {
    bias_corrected_with(weights, means, &BTreeMap::new())
}

/// [`bias_corrected`] for the integers `integers[param]` (row-major `[out, in]`) where given:
/// `W_q` is then those integers times the column's scale.
pub fn bias_corrected_with(
    weights: &Weights,
    means: &BTreeMap<String, Vec<f64>>,
    integers: &BTreeMap<String, Vec<i8>>,
) -> std::result::Result<Weights, String> {
    let mut out = weights.clone();
    for (param, mu) in means {
        let (w, dims) = values_of(weights, &format!("{param}.weight"))?;
        let [rows, cols] = dims[..] else {
            return Err(format!("{param}.weight: a matrix of shape {dims:?}"));
        };
        if mu.len() != cols {
            return Err(format!(
                "{param}: a mean input of {} values for a matrix of {cols} inputs",
                mu.len()
            ));
        }
        let bias_name = format!("{param}.bias");
        let (bias, bias_dims) = values_of(weights, &bias_name)?;
        let given = integers.get(param);
        if given.is_some_and(|q| q.len() != w.len()) {
            return Err(format!(
                "{param}: integers of another shape than the matrix"
            ));
        }
        let corrected: Vec<f32> = w
            .chunks_exact(cols)
            .zip(&bias)
            .enumerate()
            .map(|(r, (row, b))| {
                let scale = row_scale(row);
                let shift: f64 = row
                    .iter()
                    .zip(mu)
                    .enumerate()
                    .map(|(c, (v, m))| {
                        let q = match given {
                            Some(q) => f64::from(q[r * cols + c]),
                            None => f64::from(to_int8(*v, scale)),
                        };
                        (f64::from(*v) - q * f64::from(scale)) * m
                    })
                    .sum();
                (f64::from(*b) + shift) as f32
            })
            .collect();
        debug_assert_eq!(corrected.len(), rows);
        let t = candle_core::Tensor::from_vec(corrected, bias_dims, &candle_core::Device::Cpu)
            .map_err(|e| format!("{bias_name}: {e}"))?;
        out.insert(bias_name, t);
    }
    Ok(out)
}

/// `w` quantized as the pinned graph's embedding tables are: uint8 over `[min(w,0), max(w,0)]`.
fn asymmetric_uint8(w: &[f32]) -> (f32, i32, Vec<u8>) {
    let lo = w.iter().fold(0f32, |m, &v| m.min(v));
    let hi = w.iter().fold(0f32, |m, &v| m.max(v));
    let scale = match ((f64::from(hi) - f64::from(lo)) / 255.0) as f32 {
        s if s > 0.0 => s,
        _ => 1.0,
    };
    let zp = (-f64::from(lo) / f64::from(scale))
        .round_ties_even()
        .clamp(0.0, 255.0) as i32;
    let q = w
        .iter()
        .map(|v| ((v / scale).round_ties_even() + zp as f32).clamp(0.0, 255.0) as u8)
        .collect();
    (scale, zp, q)
}

fn values_of(weights: &Weights, name: &str) -> std::result::Result<(Vec<f32>, Vec<usize>), String> {
    let t = weights
        .get(name)
        .ok_or_else(|| format!("the fold model has no weight {name}"))?;
    let v = t
        .flatten_all()
        .and_then(|f| f.to_vec1::<f32>())
        .map_err(|e| format!("{name}: {e}"))?;
    Ok((v, t.dims().to_vec()))
}

fn expect_dims(name: &str, have: &[usize], want: &[i64]) -> std::result::Result<(), String> {
    let want: Vec<usize> = want.iter().map(|&d| d as usize).collect();
    if have == want {
        Ok(())
    } else {
        Err(format!(
            "{name}: the fold model's shape {have:?} is not the graph's {want:?}"
        ))
    }
}

/// What every initializer of `graph` that holds a parameter becomes with `weights`; fails
/// unless every weight is used exactly once.
fn replacements(
    graph: &Graph,
    weights: &Weights,
    scales: Scales,
    integers: &BTreeMap<String, Vec<i8>>,
) -> std::result::Result<BTreeMap<String, Values>, String> {
    let dims_of = |n: &str| {
        graph
            .initializer(n)
            .map(|i| i.dims.clone())
            .ok_or_else(|| format!("the base graph has no initializer {n}"))
    };
    let mut out = BTreeMap::new();
    let mut used = BTreeSet::new();
    for node in graph.nodes.iter().filter(|n| n.op_type == "MatMulInteger") {
        let Some(base) = node
            .inputs
            .get(1)
            .and_then(|b| b.strip_suffix("_quantized"))
        else {
            continue;
        };
        let param = super::bert::parameter_of(&node.name)
            .ok_or_else(|| format!("node {:?}: no module path in its name", node.name))?;
        let name = format!("{param}.weight");
        let (w, dims) = values_of(weights, &name)?;
        let [rows, cols] = dims[..] else {
            return Err(format!("{name}: a matrix of shape {dims:?}"));
        };
        // The fold model keeps `[out, in]`; the graph multiplies by `[in, out]`.
        let mut t = vec![0f32; w.len()];
        for r in 0..rows {
            for c in 0..cols {
                t[c * rows + r] = w[r * cols + c];
            }
        }
        expect_dims(
            &name,
            &[cols, rows],
            &dims_of(&format!("{base}_quantized"))?,
        )?;
        let (scale, q) = match scales {
            Scales::PerTensor => {
                let (s, q) = symmetric_int8(&t);
                (Values::F32(vec![s]), q)
            }
            Scales::PerColumn => {
                let (s, mut q) = per_column_int8(&t, cols, rows);
                if let Some(given) = integers.get(&param) {
                    if given.len() != q.len() {
                        return Err(format!(
                            "{param}: integers of another shape than the matrix"
                        ));
                    }
                    for r in 0..rows {
                        for c in 0..cols {
                            q[c * rows + r] = given[r * cols + c] as u8;
                        }
                    }
                }
                (Values::Column(s), q)
            }
        };
        out.insert(format!("{base}_quantized"), Values::Bytes(q));
        out.insert(format!("{base}_scale"), scale);
        out.insert(format!("{base}_zero_point"), Values::ZeroPoint(0));
        used.insert(name);
    }
    for table in ["word", "position", "token_type"] {
        let name = format!("bert.embeddings.{table}_embeddings.weight");
        let (w, dims) = values_of(weights, &name)?;
        expect_dims(&name, &dims, &dims_of(&format!("{name}_quantized"))?)?;
        let (scale, zp, q) = asymmetric_uint8(&w);
        out.insert(format!("{name}_quantized"), Values::Bytes(q));
        out.insert(format!("{name}_scale"), Values::F32(vec![scale]));
        out.insert(format!("{name}_zero_point"), Values::ZeroPoint(zp));
        used.insert(name);
    }
    for init in &graph.initializers {
        let is_param = init.name.starts_with("bert.") || init.name.starts_with("classifier.");
        if is_param && init.data_type == dtype::FLOAT && !init.name.ends_with("_scale") {
            let (w, dims) = values_of(weights, &init.name)?;
            expect_dims(&init.name, &dims, &init.dims)?;
            out.insert(init.name.clone(), Values::F32(w));
            used.insert(init.name.clone());
        }
    }
    if let Some(extra) = weights.keys().find(|k| !used.contains(*k)) {
        return Err(format!(
            "the fold model's weight {extra} has no place in the base graph"
        ));
    }
    Ok(out)
}

/// The bytes of the pinned graph `base` with the fold model's `weights` in its initializers
/// (see the module's documentation), its matrices quantized with one scale per column
/// ([`Scales::PerColumn`]) and its activations with one scale per row
/// ([`rows::per_row_activations`]): what `finetune: { precision: int8 }` scores.
/// A matrix with integers in `fold` ([`calibrated`]) gets those, its scales the same.
pub fn export(base: &[u8], fold: &Quantized) -> std::result::Result<Vec<u8>, String> {
    rows::per_row_activations(&export_parts(
        base,
        &fold.weights,
        Scales::PerColumn,
        &fold.integers,
    )?)
}

/// The pinned graph `base`, its nodes unchanged, with the fold model's `weights` in its
/// initializers, the matrices' scales chosen by `scales` ([`export`] before its activations
/// are quantized per row).
pub fn export_with(
    base: &[u8],
    weights: &Weights,
    scales: Scales,
) -> std::result::Result<Vec<u8>, String> {
    export_parts(base, weights, scales, &BTreeMap::new())
}

/// [`export_with`], the matrices in `integers` (with [`Scales::PerColumn`]) given their integers.
fn export_parts(
    base: &[u8],
    weights: &Weights,
    scales: Scales,
    integers: &BTreeMap<String, Vec<i8>>,
) -> std::result::Result<Vec<u8>, String> {
    let graph = Graph::parse(base)?;
    let mut new = replacements(&graph, weights, scales, integers)?;
    let mut out = Vec::with_capacity(base.len());
    for f in wire::fields(base)? {
        if f.number == 7 && f.wire == 2 {
            let mut g = Vec::with_capacity(f.value.len());
            for gf in wire::fields(f.value)? {
                if gf.number == 5 && gf.wire == 2 {
                    wire::tensor(gf.value, &mut new, &mut g)?;
                } else {
                    g.extend_from_slice(gf.whole);
                }
            }
            wire::len_field(7, &g, &mut out);
        } else {
            out.extend_from_slice(f.whole);
        }
    }
    if let Some(name) = new.keys().next() {
        return Err(format!("the base graph has no initializer {name} to write"));
    }
    Ok(out)
}

/// The protobuf wire format, as far as rewriting a tensor's data needs it.
mod wire {
    use std::collections::BTreeMap;

    use super::Values;

    /// One field of a message: its number, wire type, its bytes whole (key included) and its
    /// payload (a length-delimited field's bytes, a fixed field's bytes, a varint's bytes).
    pub struct Field<'a> {
        pub number: u64,
        pub wire: u8,
        pub whole: &'a [u8],
        pub value: &'a [u8],
    }

    fn varint(b: &[u8], at: usize) -> Result<(u64, usize), String> {
        let mut v = 0u64;
        for i in 0..10 {
            let byte = *b.get(at + i).ok_or("a varint cut by the end")?;
            v |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok((v, at + i + 1));
            }
        }
        Err("a varint that does not end".into())
    }

    pub fn put_varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    pub fn len_field(number: u64, payload: &[u8], out: &mut Vec<u8>) {
        put_varint(number << 3 | 2, out);
        put_varint(payload.len() as u64, out);
        out.extend_from_slice(payload);
    }

    pub fn fields(msg: &[u8]) -> Result<Vec<Field<'_>>, String> {
        let mut out = Vec::new();
        let mut at = 0;
        while at < msg.len() {
            let start = at;
            let (key, after) = varint(msg, at)?;
            let (wire, number) = ((key & 7) as u8, key >> 3);
            let (from, to) = match wire {
                0 => (after, varint(msg, after)?.1),
                1 => (after, after + 8),
                2 => {
                    let (len, from) = varint(msg, after)?;
                    (from, from.saturating_add(len as usize))
                }
                5 => (after, after + 4),
                w => return Err(format!("field {number} has wire type {w}")),
            };
            if to > msg.len() {
                return Err(format!("field {number} runs past the end"));
            }
            out.push(Field {
                number,
                wire,
                whole: &msg[start..to],
                value: &msg[from..to],
            });
            at = to;
        }
        Ok(out)
    }

    /// Writes the `TensorProto` `msg` to `out` (as field 5 of a graph), its data replaced when
    /// `new` has its name (and the entry then taken out of `new`). The new data goes where the
    /// old data's first field was, in the old field's encoding (raw, packed or one element).
    pub fn tensor(
        msg: &[u8],
        new: &mut BTreeMap<String, Values>,
        out: &mut Vec<u8>,
    ) -> Result<(), String> {
        let fields = fields(msg)?;
        let name = fields
            .iter()
            .find(|f| f.number == 8 && f.wire == 2)
            .map(|f| String::from_utf8_lossy(f.value).into_owned());
        let Some(values) = name.and_then(|n| new.remove(&n)) else {
            super::wire::len_field(5, msg, out);
            return Ok(());
        };
        let mut t = Vec::with_capacity(msg.len());
        if let Values::Column(v) = &values {
            put_varint(1 << 3, &mut t);
            put_varint(v.len() as u64, &mut t);
        }
        let mut written = false;
        for f in &fields {
            if f.number == 1 && matches!(values, Values::Column(_)) {
                continue;
            }
            // raw_data 9, float_data 4, int32_data 5: the data fields.
            if !matches!(f.number, 4 | 5 | 9) {
                t.extend_from_slice(f.whole);
                continue;
            }
            if written {
                continue;
            }
            written = true;
            data(f, &values, &mut t)?;
        }
        if !written {
            return Err("a tensor without data".into());
        }
        len_field(5, &t, out);
        Ok(())
    }

    fn data(old: &Field<'_>, values: &Values, t: &mut Vec<u8>) -> Result<(), String> {
        match (old.number, values) {
            (9, Values::F32(v) | Values::Column(v)) => {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                len_field(9, &bytes, t);
            }
            (9, Values::Bytes(b)) => len_field(9, b, t),
            (4, Values::F32(v)) if old.wire == 5 && v.len() == 1 => {
                put_varint(4 << 3 | 5, t);
                t.extend_from_slice(&v[0].to_le_bytes());
            }
            (4, Values::F32(v) | Values::Column(v)) => {
                let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                len_field(4, &bytes, t);
            }
            (5, Values::ZeroPoint(z)) if old.wire == 0 => {
                put_varint(5 << 3, t);
                put_varint(*z as i64 as u64, t);
            }
            (5, Values::ZeroPoint(z)) => {
                let mut b = Vec::new();
                put_varint(*z as i64 as u64, &mut b);
                len_field(5, &b, t);
            }
            (n, _) => {
                return Err(format!(
                    "data in field {n} of a kind the export cannot write"
                ))
            }
        }
        Ok(())
    }
}

fn model_error(path: &Path, message: impl std::fmt::Display) -> Error {
    Error::Model {
        model: path.display().to_string(),
        message: message.to_string(),
    }
}

/// The export directory of the fold model `key` under the fine-tuned models' folder `dir`.
pub fn export_dir_of(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("{key}.int8"))
}

#[derive(serde::Serialize, serde::Deserialize, PartialEq)]
struct Manifest {
    key: String,
    base_onnx_sha256: String,
    exporter: u32,
    onnx_sha256: String,
}

/// The exported graph of the fold `key` as a model directory, from the cache when a sound
/// export is there (see the module's documentation), otherwise exported from `weights()` (the
/// fold model's weights, loaded or trained only then) into `base`'s graph and cached.
pub fn ensure_export(
    dir: &Path,
    key: &str,
    base: &ModelDir,
    weights: impl FnOnce() -> Result<Quantized>,
) -> Result<ModelDir> {
    let out = export_dir_of(dir, key);
    let model_dir = |sha256: String| ModelDir {
        id: format!("finetuned:{key} int8"),
        kind: ModelKind::CrossEncoder,
        path: out.clone(),
        sha256,
        max_length: base.max_length,
        pooling: None,
        pinned: false,
    };
    if let Some(sha) = sound_export(&out, key, base) {
        return Ok(model_dir(sha));
    }
    let base_path = base.file("model.onnx");
    let base_bytes = std::fs::read(&base_path).map_err(|e| Error::io(&base_path, e))?;
    let graph = export(&base_bytes, &weights()?)
        .map_err(|m| model_error(&out, format!("cannot export the fold model {key}: {m}")))?;
    let manifest = Manifest {
        key: key.to_string(),
        base_onnx_sha256: base.sha256.clone(),
        exporter: EXPORTER,
        onnx_sha256: hex(&sha256(&graph)),
    };
    let json = serde_json::to_vec_pretty(&manifest).expect("a manifest serializes");
    let mut files: Vec<(PathBuf, Vec<u8>)> = vec![
        (PathBuf::from("model.onnx"), graph),
        (PathBuf::from("export.json"), json),
    ];
    for name in TOKENIZER_FILES {
        let p = base.file(name);
        files.push((
            PathBuf::from(name),
            std::fs::read(&p).map_err(|e| Error::io(&p, e))?,
        ));
    }
    crate::atomic::write_dir(&out, files.iter().map(|(p, b)| (p.as_path(), b.as_slice())))?;
    Ok(model_dir(manifest.onnx_sha256))
}

/// The sha256 of the cached export in `out` when it is sound for `key` and `base`.
fn sound_export(out: &Path, key: &str, base: &ModelDir) -> Option<String> {
    let m: Manifest = serde_json::from_slice(&std::fs::read(out.join("export.json")).ok()?).ok()?;
    let graph = std::fs::read(out.join("model.onnx")).ok()?;
    let sound = m.key == key
        && m.base_onnx_sha256 == base.sha256
        && m.exporter == EXPORTER
        && hex(&sha256(&graph)) == m.onnx_sha256
        && TOKENIZER_FILES.iter().all(|f| {
            // The tokenizer files are the base model's (pinned by sha256 when it was fetched):
            // compared byte for byte, so an edited one is exported again, not used.
            matches!(
                (std::fs::read(out.join(f)), std::fs::read(base.file(f))),
                (Ok(a), Ok(b)) if a == b
            )
        });
    sound.then_some(m.onnx_sha256)
}

/// A fold model's int8 export as a pair scorer: ONNX Runtime through fastembed, one pair per
/// run, under an identity known before exporting ([`Self::identity_of`]).
pub struct Int8FinetunedCrossEncoder {
    identity: String,
    inner: FastembedCrossEncoder,
}

impl Int8FinetunedCrossEncoder {
    /// The scorer identity of the fold `key` exported into the base graph of sha256
    /// `base_sha256`: what the score cache keys its scores by.
    pub fn identity_of(key: &str, base_sha256: &str) -> String {
        format!(
            "finetuned:{key} int8 base-onnx-sha256={base_sha256} exporter={EXPORTER} \
             score=logit batch=1"
        )
    }

    /// The scorer over the export `model` ([`ensure_export`]) of the fold `key` from the base
    /// graph of sha256 `base_sha256`.
    pub fn load(key: &str, base_sha256: &str, model: &ModelDir) -> Result<Self> {
        Ok(Int8FinetunedCrossEncoder {
            identity: Int8FinetunedCrossEncoder::identity_of(key, base_sha256),
            inner: FastembedCrossEncoder::load(model, &CrossEncoderOptions::default())?,
        })
    }
}

impl CrossEncoder for Int8FinetunedCrossEncoder {
    fn identity(&self) -> &str {
        &self.identity
    }

    fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>> {
        self.inner.score(query, passages)
    }

    fn score_many(&mut self, requests: &[(&str, Vec<&str>)]) -> Result<Vec<Vec<f32>>> {
        self.inner.score_many(requests)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand computation (powers of two, so every step is exact): max|w| = 31.75, scale
    /// 31.75 / 127 = 0.25; 1.0 → 4, −31.75 → −127, 0.125 → 0.5 → 0 and 0.375 → 1.5 → 2 (half
    /// to even, as numpy's `round`).
    #[test]
    fn symmetric_int8_matches_a_hand_computation() {
        let (scale, q) = symmetric_int8(&[1.0, -31.75, 0.125, 0.375]);
        assert_eq!(scale, 0.25);
        assert_eq!(q, vec![4u8, (-127i8) as u8, 0, 2]);
    }

    /// Hand computation: range [−1, 62.75], scale 63.75 / 255 = 0.25, zero point
    /// round(1 / 0.25) = 4; 0 → 4, 62.75 → 251 + 4 = 255, −1 → 0, 10 → 44, 0.125 → 0 + 4.
    #[test]
    fn asymmetric_uint8_matches_a_hand_computation() {
        let (scale, zp, q) = asymmetric_uint8(&[0.0, 62.75, -1.0, 10.0, 0.125]);
        assert_eq!(scale, 0.25);
        assert_eq!(zp, 4);
        assert_eq!(q, vec![4, 255, 0, 44, 4]);
    }

    /// Hand computation: the `[in = 2, out = 2]` matrix [[1, −0.5], [−31.75, 0.375]] has column
    /// maxima 31.75 and 0.5: scales 0.25 and 0.5 / 127; 1.0 → 4, −31.75 → −127, −0.5 → −127,
    /// 0.375 → 0.375 · 127 / 0.5 = 95.25 → 95 (one scale for both columns would have put
    /// 0.375 at 1.5 → 2 and −0.5 at −2).
    #[test]
    fn per_column_int8_matches_a_hand_computation() {
        let (scales, q) = per_column_int8(&[1.0, -0.5, -31.75, 0.375], 2, 2);
        assert_eq!(scales, vec![0.25, (1.0f64 / 254.0) as f32]);
        assert_eq!(q, vec![4u8, (-127i8) as u8, (-127i8) as u8, 95u8]);
    }

    /// Hand computation (every value a power-of-two fraction, so each step is exact): the
    /// `[out = 2, in = 2]` matrix [[31.75, 0.375], [−31.75, 0.625]] has row maxima 31.75, so
    /// both scales are 0.25; 0.375 → 1.5 → 2 → 0.5 (error −0.125), 0.625 → 2.5 → 2 → 0.5
    /// (error +0.125), 31.75 exact. With the mean input μ = [3, 8], the biases [2, −1] move by
    /// −0.125 · 8 = −1 and +0.125 · 8 = +1: [1, 0]. A matrix without a mean keeps its bias; a
    /// mean of the wrong width is refused.
    #[test]
    fn bias_correction_matches_a_hand_computation() {
        let t = |v: Vec<f32>, d: &[usize]| {
            candle_core::Tensor::from_vec(v, d, &candle_core::Device::Cpu).unwrap()
        };
        let mut w = Weights::new();
        w.insert(
            "m.weight".into(),
            t(vec![31.75, 0.375, -31.75, 0.625], &[2, 2]),
        );
        w.insert("m.bias".into(), t(vec![2.0, -1.0], &[2]));
        w.insert("n.weight".into(), t(vec![1.0, 2.0], &[1, 2]));
        w.insert("n.bias".into(), t(vec![5.0], &[1]));
        let means = BTreeMap::from([("m".to_string(), vec![3.0, 8.0])]);
        let out = bias_corrected(&w, &means).unwrap();
        let bias = |n: &str| out[n].to_vec1::<f32>().unwrap();
        assert_eq!(bias("m.bias"), vec![1.0, 0.0]);
        assert_eq!(bias("n.bias"), vec![5.0]);
        assert_eq!(
            out["m.weight"].to_vec2::<f32>().unwrap(),
            vec![vec![31.75, 0.375], vec![-31.75, 0.625]],
            "the weights themselves are the export's to round"
        );
        let wrong = BTreeMap::from([("m".to_string(), vec![3.0])]);
        assert!(bias_corrected(&w, &wrong)
            .unwrap_err()
            .contains("mean input of 1 values"));
    }

    #[test]
    fn a_scalar_scale_becomes_a_vector_with_its_shape() {
        // initializer { name "s" data_type 1 float_data 0.5 }: a scalar, no dims field.
        let mut init = vec![0x42, 1, b's', 0x10, 1, 0x25];
        init.extend_from_slice(&0.5f32.to_le_bytes());
        let mut new = BTreeMap::from([("s".to_string(), Values::Column(vec![1.0, 2.0]))]);
        let mut out = Vec::new();
        wire::tensor(&init, &mut new, &mut out).unwrap();
        // dims 2 first, then name, data type, and the floats packed (field 4, 8 bytes).
        let mut want = vec![0x2a, 17, 0x08, 2, 0x42, 1, b's', 0x10, 1, 0x22, 8];
        want.extend_from_slice(&1.0f32.to_le_bytes());
        want.extend_from_slice(&2.0f32.to_le_bytes());
        assert_eq!(out, want);
    }

    #[test]
    fn a_zero_point_whose_varint_grows_re_encodes_the_lengths() {
        // initializer { name "z" data_type 2 int32_data packed [5] }
        let init = [0x42, 1, b'z', 0x10, 2, 0x2a, 1, 5];
        let mut new = BTreeMap::from([("z".to_string(), Values::ZeroPoint(200))]);
        let mut out = Vec::new();
        wire::tensor(&init, &mut new, &mut out).unwrap();
        // 200 is two varint bytes (0xc8 0x01): the packed field and the tensor grow by one.
        assert_eq!(
            out,
            vec![0x2a, 9, 0x42, 1, b'z', 0x10, 2, 0x2a, 2, 0xc8, 0x01]
        );
        assert!(new.is_empty());
    }
}
