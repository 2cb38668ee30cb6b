//! A fold model exported into the pinned int8 L-12 graph (`rerank::int8`). Properties:
//! - exporting the starting weights of fine-tuning (the pinned file dequantized) with the
//!   pinned graph's own rules (one scale per tensor, [`Scales::PerTensor`]) gives the pinned file
//!   back byte for byte. Oracle: the file ONNX Runtime's quantizer wrote, so every quantization
//!   rule (scales, zero points, rounding, layout) and every copied byte is checked against the
//!   tool that made the graph, not against ranklab's own reader;
//! - the export ranklab scores (one scale per output column, [`export`]) changes nothing but the
//!   matrices' data and scales: every scale initializer becomes a vector as long as its matrix
//!   has columns, each column's largest magnitude lands on ±127, and every weight comes back
//!   within half its column's step of the starting weight (oracle: the starting weights and
//!   the rounding bound, not the exporter);
//! - the export of weights changed by more than an int8 step scores within the int8 model's own
//!   error: on the same pairs, |int8 export − float model| (the float model run by candle's
//!   `Bert`, the oracle) stays within what the pinned int8 graph shows against its own float
//!   weights. Real fold models change their weights by 1–15% of a step: their per-column
//!   exports come to 0.11–0.14 mean against 0.086 (measured in docs/speed.md, "Fold models as
//!   int8 exports"), and no test here claims they meet it;
//! - the float model's recorded mean inputs (`Bert::mean_inputs`, what the bias correction
//!   uses) are what each layer is given: the classifier's gives the mean logit (it is linear);
//!   recorded side by side (one forward pass per core), they are the same bits as one at a time;
//! - a bias-corrected export differs from the plain one in its matrices' biases alone;
//! - a truncated or foreign cached export, or one whose tokenizer files are not the base
//!   model's, is exported again, a sound one is used as it is.

use std::cell::Cell;
use std::collections::BTreeMap;

use ranklab_engine::models;
use ranklab_engine::models::onnx::Graph;
use ranklab_engine::rerank::bert::{dequantize, tokenizer, Bert, Config, Weights};
use ranklab_engine::rerank::int8::{
    calibrated, ensure_export, export, export_dir_of, export_with, Int8FinetunedCrossEncoder,
    Quantized, Scales,
};
use ranklab_engine::rerank::{CrossEncoder, FastembedCrossEncoder};

const MODEL: &str = "ms-marco-MiniLM-L-12-v2";

#[test]
fn the_starting_weights_export_to_the_pinned_graph_byte_for_byte() {
    let dir = models::ensure_model(MODEL).unwrap();
    let pinned = std::fs::read(dir.file("model.onnx")).unwrap();
    let start = dequantize(&dir.file("model.onnx")).unwrap();
    let out = export_with(&pinned, &start, Scales::PerTensor).unwrap();
    assert_eq!(out.len(), pinned.len());
    let first = out.iter().zip(&pinned).position(|(a, b)| a != b);
    assert_eq!(first, None, "first differing byte");
}

#[test]
fn the_per_column_export_rounds_every_weight_to_its_columns_step() {
    let dir = models::ensure_model(MODEL).unwrap();
    let pinned_bytes = std::fs::read(dir.file("model.onnx")).unwrap();
    let pinned = Graph::parse(&pinned_bytes).unwrap();
    let start = dequantize(&dir.file("model.onnx")).unwrap();
    let out =
        Graph::parse(&export_with(&pinned_bytes, &start, Scales::PerColumn).unwrap()).unwrap();
    assert_eq!(
        out.nodes.len(),
        pinned.nodes.len(),
        "the nodes are the pinned graph's"
    );
    let mut matrices = 0;
    for init in pinned.initializers.iter() {
        let Some(base) = init.name.strip_suffix("_quantized") else {
            continue;
        };
        if init.data_type != models::onnx::dtype::INT8 {
            continue; // the uint8 embedding tables keep their per-tensor rule
        }
        matrices += 1;
        let (rows, cols) = (init.dims[0] as usize, init.dims[1] as usize);
        // The starting matrix from the pinned file: its int8 values times its one scale.
        let scale0 = pinned
            .initializer(&format!("{base}_scale"))
            .unwrap()
            .f32s()
            .unwrap()[0];
        let w0: Vec<f32> = init
            .ints8()
            .unwrap()
            .iter()
            .map(|&q| q as f32 * scale0)
            .collect();
        let scale = out.initializer(&format!("{base}_scale")).unwrap();
        assert_eq!(
            scale.dims,
            vec![cols as i64],
            "{base}: one scale per column"
        );
        let scales = scale.f32s().unwrap();
        let q = out
            .initializer(&format!("{base}_quantized"))
            .unwrap()
            .ints8()
            .unwrap();
        for c in 0..cols {
            let col = (0..rows).map(|r| q[r * cols + c].abs()).max().unwrap();
            assert_eq!(col, 127, "{base} column {c}: its largest magnitude at ±127");
            for r in 0..rows {
                let back = q[r * cols + c] as f32 * scales[c];
                let w = w0[r * cols + c];
                assert!(
                    (back - w).abs() <= 0.5 * scales[c] * (1.0 + 1e-5),
                    "{base}[{r}, {c}]: {w} came back as {back}, step {}",
                    scales[c]
                );
            }
        }
    }
    assert_eq!(matrices, 74, "the L-12's 74 MatMulInteger matrices");
}

/// The starting weights changed deterministically, by far more than fine-tuning changes them:
/// every value scaled by 1 + 0.03·sin(0.7·i) (up to several int8 steps for the larger values),
/// so every tensor's range (its scale, a table's zero point) moves and the export must quantize
/// anew.
fn changed(w: &Weights) -> Weights {
    w.iter()
        .map(|(name, t)| {
            let v: Vec<f32> = t.flatten_all().unwrap().to_vec1().unwrap();
            let v: Vec<f32> = v
                .iter()
                .enumerate()
                .map(|(i, x)| x * (1.0 + 0.03 * (0.7 * i as f32).sin()))
                .collect();
            let t2 = candle_core::Tensor::from_vec(v, t.dims(), &candle_core::Device::Cpu).unwrap();
            (name.clone(), t2)
        })
        .collect()
}

/// Max and mean |a − b|.
fn errors(a: &[f32], b: &[f32]) -> (f32, f32) {
    let d: Vec<f32> = a.iter().zip(b).map(|(x, y)| (x - y).abs()).collect();
    let max = d.iter().copied().fold(0.0, f32::max);
    (max, d.iter().sum::<f32>() / d.len() as f32)
}

const QUERY: &str = "How many people live in Berlin?";
const PASSAGES: [&str; 4] = [
    "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
    "Berlin is the capital of Germany.",
    "New York City is famous for the Metropolitan Museum of Art.",
    "The city's population grew by two percent in the last census, to about 3.7 million people.",
];

#[test]
fn an_export_of_weights_changed_beyond_an_int8_step_scores_within_the_int8_models_own_error() {
    let dir = models::ensure_model(MODEL).unwrap();
    let start = dequantize(&dir.file("model.onnx")).unwrap();
    let tok = tokenizer(&dir.path, 512).unwrap();
    let float = |w: &Weights| -> Vec<f32> {
        let bert = Bert::new(w.clone(), Config::default()).unwrap();
        PASSAGES
            .iter()
            .map(|p| bert.score(&tok, QUERY, p).unwrap())
            .collect()
    };
    let mut pinned = FastembedCrossEncoder::open(MODEL).unwrap();
    let own = errors(&pinned.score(QUERY, &PASSAGES).unwrap(), &float(&start));

    let w = changed(&start);
    let cache = tempfile::tempdir().unwrap();
    let model = ensure_export(cache.path(), "k", &dir, || {
        Ok(Quantized::nearest(w.clone()))
    })
    .unwrap();
    let mut exported = Int8FinetunedCrossEncoder::load("k", &dir.sha256, &model).unwrap();
    let theirs = exported.score(QUERY, &PASSAGES).unwrap();
    let float_changed = float(&w);
    let export_err = errors(&theirs, &float_changed);
    eprintln!("int8 L-12 vs its float weights: max {:.3} mean {:.3}; export vs float fold: max {:.3} mean {:.3}", own.0, own.1, export_err.0, export_err.1);
    // The changed model is another model: it must not score as the pinned one does.
    assert!(errors(&theirs, &pinned.score(QUERY, &PASSAGES).unwrap()).0 > 0.05);
    // Within the int8 model's own error, with the 1.0-logit margin of dequant_oracle.rs for
    // a CPU whose kernels round otherwise.
    assert!(
        export_err.0 <= own.0.max(1.0) && export_err.1 <= own.1.max(0.5),
        "export {export_err:?}, int8 L-12 {own:?}"
    );
}

/// The export ranklab scores ([`export`]) is the per-column export with the feed-forward's
/// inner activations quantized one scale per row (`int8::rows`): the 12 `DynamicQuantizeLinear`
/// nodes feeding the 1,536-wide `output.dense` matrices are gone, each of those matrices is one
/// `com.microsoft` `MatMulIntegerToFloat` without a bias input, the 38 other quantizers and their
/// 62 matrices are as they were, and every initializer of the per-column export is there with
/// the same bytes (oracle: the per-column export, read back; the pinned graph's counts).
#[test]
fn the_export_quantizes_the_feed_forwards_inner_activations_per_row_and_keeps_the_weights() {
    let dir = models::ensure_model(MODEL).unwrap();
    let base = std::fs::read(dir.file("model.onnx")).unwrap();
    let w = changed(&dequantize(&dir.file("model.onnx")).unwrap());
    let columns = Graph::parse(&export_with(&base, &w, Scales::PerColumn).unwrap()).unwrap();
    let rows = Graph::parse(&export(&base, &Quantized::nearest(w.clone())).unwrap()).unwrap();
    let count = |g: &Graph, op: &str| g.nodes.iter().filter(|n| n.op_type == op).count();
    assert_eq!(count(&columns, "DynamicQuantizeLinear"), 50);
    assert_eq!(count(&rows, "DynamicQuantizeLinear"), 38);
    assert_eq!(count(&rows, "MatMulInteger"), 62);
    assert_eq!(count(&rows, "QuantizeLinear"), 12);
    let products: Vec<_> = rows
        .nodes
        .iter()
        .filter(|n| n.op_type == "MatMulIntegerToFloat")
        .collect();
    assert_eq!(products.len(), 12);
    for p in &products {
        assert_eq!(p.inputs.len(), 6, "{}: no bias input", p.name);
        let w = rows.initializer(&p.inputs[1]).unwrap();
        assert_eq!(w.dims, vec![1536, 384], "{}", p.inputs[1]);
        let parameter = ranklab_engine::rerank::bert::parameter_of(&p.name).unwrap();
        assert!(
            parameter.ends_with(".output.dense") && !parameter.contains("attention"),
            "{parameter}"
        );
    }
    for a in &columns.initializers {
        let b = rows
            .initializer(&a.name)
            .unwrap_or_else(|| panic!("{} lost", a.name));
        assert_eq!((&a.dims, a.data_type), (&b.dims, b.data_type), "{}", a.name);
        assert!(
            (&a.raw, &a.floats, &a.int32s) == (&b.raw, &b.floats, &b.int32s),
            "{}",
            a.name
        );
    }
}

/// One scale per row cuts the activations' rounding noise: the starting weights themselves,
/// exported (their matrices per column, the feed-forward's inner activations per row), score
/// closer to their float model than the pinned int8 graph does, which quantizes every
/// activation with one scale per tensor. Oracle: candle's float `Bert` over the same weights.
/// On real fold models and 192 SciFact pairs the export is 0.05 mean against the pinned file's
/// 0.086 (docs/speed.md, "Fold models as int8 exports"); here, four pairs.
#[test]
fn the_starting_weights_exported_score_closer_to_their_float_model_than_the_pinned_graph() {
    let dir = models::ensure_model(MODEL).unwrap();
    let start = dequantize(&dir.file("model.onnx")).unwrap();
    let tok = tokenizer(&dir.path, 512).unwrap();
    let bert = Bert::new(start.clone(), Config::default()).unwrap();
    let float: Vec<f32> = PASSAGES
        .iter()
        .map(|p| bert.score(&tok, QUERY, p).unwrap())
        .collect();
    let mut pinned = FastembedCrossEncoder::open(MODEL).unwrap();
    let own = errors(&pinned.score(QUERY, &PASSAGES).unwrap(), &float);
    let cache = tempfile::tempdir().unwrap();
    let model = ensure_export(cache.path(), "start", &dir, || {
        Ok(Quantized::nearest(start.clone()))
    })
    .unwrap();
    let mut exported = Int8FinetunedCrossEncoder::load("start", &dir.sha256, &model).unwrap();
    let theirs = errors(&exported.score(QUERY, &PASSAGES).unwrap(), &float);
    eprintln!(
        "pinned int8 vs float: max {:.4} mean {:.4}; export: max {:.4} mean {:.4}",
        own.0, own.1, theirs.0, theirs.1
    );
    assert!(theirs.1 < own.1, "export {theirs:?}, pinned {own:?}");
}

/// Calibration pairs for the bias correction: none of them is a pair the test scores.
const CALIBRATION: [(&str, &str); 6] = [
    (
        "What is the capital of France?",
        "Paris is the capital and largest city of France.",
    ),
    (
        "What is the capital of France?",
        "The Loire is the longest river in France.",
    ),
    (
        "Who wrote Hamlet?",
        "Hamlet is a tragedy written by William Shakespeare around 1600.",
    ),
    (
        "Who wrote Hamlet?",
        "The Globe Theatre was rebuilt in London in 1997.",
    ),
    (
        "Does vitamin D prevent fractures?",
        "In a trial of 25,000 adults, vitamin D supplements did not lower the rate of fractures.",
    ),
    (
        "Does vitamin D prevent fractures?",
        "Bone density declines with age in both men and women.",
    ),
];

/// `Bert::mean_inputs` records what each linear layer is given. Oracle: the classifier is
/// linear, so the mean of the logits `Bert::score` returns (its forward pass, not the recorder)
/// over the pairs equals `μ · w + b` for the classifier's recorded mean input μ (one [CLS]
/// row per pair), to f32 precision; and a layer of the encoder is given every token's row.
#[test]
fn the_recorded_mean_input_of_the_classifier_gives_the_mean_logit() {
    let dir = models::ensure_model(MODEL).unwrap();
    let tok = tokenizer(&dir.path, 512).unwrap();
    let start = dequantize(&dir.file("model.onnx")).unwrap();
    let bert = Bert::new(start.clone(), Config::default()).unwrap();
    let pairs: Vec<(&str, &str)> = CALIBRATION.to_vec();
    let means = bert.mean_inputs(&tok, &pairs).unwrap();
    assert_eq!(
        means.len(),
        74,
        "the 74 matrices of the int8 graph: {:?}",
        means.keys()
    );
    let logits: Vec<f32> = pairs
        .iter()
        .map(|(q, p)| bert.score(&tok, q, p).unwrap())
        .collect();
    let mean_logit = logits.iter().map(|&l| f64::from(l)).sum::<f64>() / logits.len() as f64;
    let w: Vec<f32> = start["classifier.weight"]
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    let b: Vec<f32> = start["classifier.bias"].to_vec1().unwrap();
    let mu = &means["classifier"];
    let from_mean = mu
        .iter()
        .zip(&w)
        .map(|(m, w)| m * f64::from(*w))
        .sum::<f64>()
        + f64::from(b[0]);
    assert!(
        (from_mean - mean_logit).abs() < 1e-4,
        "μ · w + b = {from_mean}, mean logit {mean_logit}"
    );
    // A different set of pairs gives a different mean (the recorder is not stuck on one).
    let other = bert.mean_inputs(&tok, &pairs[..2]).unwrap();
    assert_ne!(other["classifier"], *mu);
}

/// `Bert::mean_inputs` with its forward passes side by side (`mean_inputs_on` a pool of two
/// threads, as `just beir-finetune-int8` runs it with `RAYON_NUM_THREADS=1`) gives the same
/// bits as one pass at a time on this thread, for every one of the 74 layers, on an odd number
/// of pairs (the last window half full). Oracle: the passes one at a time, the recorder's order
/// before it went side by side (whose classifier mean the test above checks against the
/// logits). The pairs are long so that order shows: summing each window's two passes in
/// reverse order fails this test (checked by mutation); on short pairs the f64 sums are exact
/// in any order.
#[test]
fn recorded_mean_inputs_side_by_side_are_the_same_bits_as_one_pass_at_a_time() {
    let dir = models::ensure_model(MODEL).unwrap();
    let tok = tokenizer(&dir.path, 512).unwrap();
    let bert = Bert::new(
        dequantize(&dir.file("model.onnx")).unwrap(),
        Config::default(),
    )
    .unwrap();
    // Long pairs (each passage repeated up to the 512-token limit), so that the f64 sums
    // round: summed in another order, some of the 74 layers' means change in their last bits.
    let long: Vec<(String, String)> = CALIBRATION[..5]
        .iter()
        .map(|(q, p)| (q.to_string(), [*p; 40].join(" ")))
        .collect();
    let pairs: Vec<(&str, &str)> = long.iter().map(|(q, p)| (q.as_str(), p.as_str())).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    let one_at_a_time = bert.mean_inputs_on(None, &tok, &pairs).unwrap();
    let side_by_side = bert.mean_inputs_on(Some(&pool), &tok, &pairs).unwrap();
    assert_eq!(one_at_a_time.len(), 74);
    assert_eq!(
        one_at_a_time.keys().collect::<Vec<_>>(),
        side_by_side.keys().collect::<Vec<_>>()
    );
    for (layer, mean) in &one_at_a_time {
        let other = &side_by_side[layer];
        assert_eq!(mean.len(), other.len(), "{layer}");
        let differ = mean
            .iter()
            .zip(other)
            .filter(|(a, b)| a.to_bits() != b.to_bits())
            .count();
        assert_eq!(
            differ,
            0,
            "{layer}: {differ} of {} means differ",
            mean.len()
        );
    }
}

/// The calibration (`int8::calibrated`: GPTQ's integers, the biases corrected for them) changes
/// only the quantized matrices' integers and biases: the export of weights calibrated on six
/// pairs and the export of the same weights rounded to their nearest steps hold the same bytes
/// in every other initializer, the scales included (oracle: the nearest export's initializers,
/// read back from the graph); most integers and biases differ; and the integers the graph holds
/// are the ones `calibrated` chose, transposed to the graph's `[in, out]`. Whether the
/// calibration brings the scores closer to the float model is measured on real fold models in
/// docs/speed.md ("Fold models as int8 exports"), not here: on a handful of pairs it goes
/// either way.
#[test]
fn a_calibrated_export_differs_from_the_nearest_one_in_its_matrices_integers_and_biases_alone() {
    let dir = models::ensure_model(MODEL).unwrap();
    let tok = tokenizer(&dir.path, 512).unwrap();
    let base = std::fs::read(dir.file("model.onnx")).unwrap();
    let w = changed(&dequantize(&dir.file("model.onnx")).unwrap());
    let cal: Vec<(String, String)> = CALIBRATION
        .iter()
        .map(|(q, p)| (q.to_string(), p.to_string()))
        .collect();
    let fold = calibrated(w.clone(), &tok, &cal).unwrap();
    assert_eq!(fold.integers.len(), 74);
    let plain = Graph::parse(&export(&base, &Quantized::nearest(w.clone())).unwrap()).unwrap();
    let fixed = Graph::parse(&export(&base, &fold).unwrap()).unwrap();
    let matrix_of: BTreeMap<String, String> = plain
        .nodes
        .iter()
        .filter(|n| n.op_type == "MatMulInteger" || n.op_type == "MatMulIntegerToFloat")
        .filter_map(|n| {
            let base = n.inputs.get(1)?.strip_suffix("_quantized")?;
            Some((
                format!("{base}_quantized"),
                ranklab_engine::rerank::bert::parameter_of(&n.name)?,
            ))
        })
        .collect();
    assert_eq!(matrix_of.len(), 74);
    let (mut changed_biases, mut changed_matrices) = (0, 0);
    for (a, b) in plain.initializers.iter().zip(&fixed.initializers) {
        assert_eq!(a.name, b.name);
        let is_bias = a
            .name
            .strip_suffix(".bias")
            .is_some_and(|p| matrix_of.values().any(|m| m == p));
        let same = (&a.raw, &a.floats, &a.int32s) == (&b.raw, &b.floats, &b.int32s);
        if let Some(param) = matrix_of.get(&a.name) {
            changed_matrices += usize::from(!same);
            let q = &fold.integers[param];
            let (inputs, outputs) = (b.dims[0] as usize, b.dims[1] as usize);
            for i in 0..inputs {
                for o in 0..outputs {
                    assert_eq!(b.raw[i * outputs + o] as i8, q[o * inputs + i], "{param}");
                }
            }
        } else if is_bias {
            changed_biases += usize::from(!same);
        } else {
            assert!(same, "{} changed", a.name);
        }
    }
    assert!(
        changed_biases >= 70,
        "{changed_biases} of 74 biases corrected"
    );
    assert!(
        changed_matrices >= 70,
        "{changed_matrices} of 74 matrices' integers changed"
    );
}

#[test]
fn a_truncated_or_foreign_cached_export_is_exported_again() {
    let dir = models::ensure_model(MODEL).unwrap();
    let start = dequantize(&dir.file("model.onnx")).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let loads = Cell::new(0);
    let weights = || {
        loads.set(loads.get() + 1);
        Ok(Quantized::nearest(start.clone()))
    };
    let first = ensure_export(cache.path(), "k", &dir, weights).unwrap();
    let graph = export_dir_of(cache.path(), "k").join("model.onnx");
    let bytes = std::fs::read(&graph).unwrap();
    let pinned = std::fs::read(dir.file("model.onnx")).unwrap();
    assert_eq!(
        bytes,
        export(&pinned, &Quantized::nearest(start.clone())).unwrap(),
        "the cached graph is the export"
    );
    ensure_export(cache.path(), "k", &dir, weights).unwrap();
    assert_eq!(loads.get(), 1, "a sound export is used as it is");

    std::fs::write(&graph, &bytes[..bytes.len() / 2]).unwrap();
    let again = ensure_export(cache.path(), "k", &dir, weights).unwrap();
    assert_eq!(loads.get(), 2, "a truncated export is exported again");
    assert_eq!(std::fs::read(&graph).unwrap(), bytes);
    assert_eq!(again.sha256, first.sha256);

    // Another fold's export under this fold's name is not this fold's.
    let manifest = export_dir_of(cache.path(), "k").join("export.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace("\"key\": \"k\"", "\"key\": \"other\""),
    )
    .unwrap();
    ensure_export(cache.path(), "k", &dir, weights).unwrap();
    assert_eq!(loads.get(), 3, "a foreign export is exported again");

    // A tokenizer file edited in place (one setting flipped, the file still whole and valid
    // JSON) would tokenize pairs otherwise and change every score: exported again, the base
    // model's file restored. Oracle: the base model's own file.
    let tok = export_dir_of(cache.path(), "k").join("tokenizer.json");
    let original = std::fs::read_to_string(&tok).unwrap();
    assert!(original.contains("\"lowercase\": true"));
    std::fs::write(
        &tok,
        original.replace("\"lowercase\": true", "\"lowercase\": false"),
    )
    .unwrap();
    ensure_export(cache.path(), "k", &dir, weights).unwrap();
    assert_eq!(
        loads.get(),
        4,
        "an export with an edited tokenizer is exported again"
    );
    assert_eq!(
        std::fs::read(&tok).unwrap(),
        std::fs::read(dir.file("tokenizer.json")).unwrap()
    );
    // A truncated one too.
    std::fs::write(&tok, &original.as_bytes()[..1000]).unwrap();
    ensure_export(cache.path(), "k", &dir, weights).unwrap();
    assert_eq!(
        loads.get(),
        5,
        "an export with a truncated tokenizer is exported again"
    );
}
