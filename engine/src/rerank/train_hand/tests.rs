//! The hand-written trainer against independent oracles:
//! - its loss, logits and every parameter's gradient against candle's autograd over
//!   `Bert::forward` (trainer 2's arithmetic, differentiated by candle), on two small random
//!   models with a padded pair: one tiny (hidden 8), one large enough (hidden 64, 40 tokens)
//!   for gemm's blocked kernels;
//! - two AdamW steps against the update computed by hand in f64;
//! - the same bits on two runs, and on 1 and 2 threads, over three training steps.

use candle_core::{Device, Tensor, Var};

use super::adamw::AdamW;
use super::params::Layout;
use super::step::{Batch, Workspace};
use crate::rerank::bert::{Bert, Config, Weights};
use crate::rerank::finetune::bce_with_logits;

/// A model's sizes: config, vocabulary, intermediate, tokens per pair.
#[derive(Clone, Copy)]
struct Shape {
    config: Config,
    vocab: usize,
    inter: usize,
    t: usize,
}

const TINY: Shape = Shape {
    config: Config {
        layers: 2,
        hidden: 8,
        heads: 2,
        eps: 1e-12,
        max_positions: 16,
    },
    vocab: 20,
    inter: 16,
    t: 7,
};

const WIDE: Shape = Shape {
    config: Config {
        layers: 2,
        hidden: 64,
        heads: 4,
        eps: 1e-12,
        max_positions: 48,
    },
    vocab: 50,
    inter: 128,
    t: 40,
};

/// A random model of `s`'s shape from a seeded generator (LayerNorm γ around 1).
fn model(s: Shape) -> Weights {
    let mut state = 7u64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.8
    };
    let (h, i) = (s.config.hidden, s.inter);
    let mut shapes: Vec<(String, Vec<usize>)> = vec![
        (
            "bert.embeddings.word_embeddings.weight".into(),
            vec![s.vocab, h],
        ),
        (
            "bert.embeddings.position_embeddings.weight".into(),
            vec![s.config.max_positions, h],
        ),
        (
            "bert.embeddings.token_type_embeddings.weight".into(),
            vec![2, h],
        ),
        ("bert.pooler.dense.weight".into(), vec![h, h]),
        ("bert.pooler.dense.bias".into(), vec![h]),
        ("classifier.weight".into(), vec![1, h]),
        ("classifier.bias".into(), vec![1]),
    ];
    let mut norms = vec!["bert.embeddings.LayerNorm".to_string()];
    for l in 0..s.config.layers {
        let p = format!("bert.encoder.layer.{l}");
        for (name, rows, cols) in [
            ("attention.self.query", h, h),
            ("attention.self.key", h, h),
            ("attention.self.value", h, h),
            ("attention.output.dense", h, h),
            ("intermediate.dense", i, h),
            ("output.dense", h, i),
        ] {
            shapes.push((format!("{p}.{name}.weight"), vec![rows, cols]));
            shapes.push((format!("{p}.{name}.bias"), vec![rows]));
        }
        norms.push(format!("{p}.attention.output.LayerNorm"));
        norms.push(format!("{p}.output.LayerNorm"));
    }
    for n in norms {
        shapes.push((format!("{n}.weight"), vec![h]));
        shapes.push((format!("{n}.bias"), vec![h]));
    }
    shapes
        .into_iter()
        .map(|(name, dims)| {
            let n = dims.iter().product();
            let mut v: Vec<f32> = (0..n).map(|_| next()).collect();
            if name.contains("LayerNorm.weight") {
                v.iter_mut().for_each(|x| *x += 1.0);
            }
            (name, Tensor::from_vec(v, dims, &Device::Cpu).unwrap())
        })
        .collect()
}

/// Three pairs of `s.t` tokens, the last padded after `t/2 + 1`: ids, types, mask, labels.
fn batch(s: Shape) -> (Vec<u32>, Vec<u32>, Vec<f32>, Vec<f32>) {
    let t = s.t;
    let n = 3 * t;
    let ids = (0..n).map(|i| ((i * 7 + 3) % s.vocab) as u32).collect();
    let types = (0..n).map(|i| u32::from(i % t >= t / 2 - 1)).collect();
    let mask = (0..n)
        .map(|i| {
            if i >= 2 * t && i % t > t / 2 {
                0.0
            } else {
                1.0
            }
        })
        .collect();
    (ids, types, mask, vec![1.0, 0.0, 1.0])
}

/// A loss, the logits and each parameter's gradient (by name).
type Outcome = (f32, Vec<f32>, Vec<(String, Vec<f32>)>);

/// Loss, logits and every gradient (by name) by candle's autograd over `Bert::forward`.
fn by_candle(s: Shape) -> Outcome {
    let vars: Vec<(String, Var)> = model(s)
        .into_iter()
        .map(|(n, t)| (n, Var::from_tensor(&t).unwrap()))
        .collect();
    let weights: Weights = vars
        .iter()
        .map(|(n, v)| (n.clone(), v.as_tensor().clone()))
        .collect();
    let (ids, types, mask, labels) = batch(s);
    let dev = Device::Cpu;
    let logits = Bert::new(weights, s.config)
        .unwrap()
        .forward(
            &Tensor::from_vec(ids, (3, s.t), &dev).unwrap(),
            &Tensor::from_vec(types, (3, s.t), &dev).unwrap(),
            &Tensor::from_vec(mask, (3, s.t), &dev).unwrap(),
        )
        .unwrap();
    let labels = Tensor::from_vec(labels, 3, &dev).unwrap();
    let loss = bce_with_logits(&logits, &labels).unwrap();
    let grads = loss.backward().unwrap();
    let g = vars
        .iter()
        .map(|(n, v)| {
            let g = grads.get(v.as_tensor()).expect("a gradient");
            (
                n.clone(),
                g.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
            )
        })
        .collect();
    (
        loss.to_scalar::<f32>().unwrap(),
        logits.to_vec1::<f32>().unwrap(),
        g,
    )
}

/// Loss, logits and the flat gradient by the hand-written step.
fn by_hand(s: Shape, layout: &Layout, w: &[f32]) -> (f32, Vec<f32>, Vec<f32>) {
    let (ids, types, mask, labels) = batch(s);
    let mut ws = Workspace::new(layout, s.config, 3, s.t);
    let mut grad = vec![f32::NAN; layout.len];
    let b = Batch {
        ids: &ids,
        types: &types,
        mask: &mask,
        labels: &labels,
        b: 3,
        t: s.t,
    };
    let loss = ws.step(w, &mut grad, &b);
    (loss, ws.logits().to_vec(), grad)
}

/// Loss and logits within 1e-5 of candle's, every parameter's gradient within 1e-4 of that
/// parameter's largest gradient: both are f32 and sum in other orders (gemm's blocks, the
/// bias added before or after the product, LayerNorm's and softmax's backward in one pass or
/// many), a rounding of about 1e-7 relative per operation over a few hundred operations deep;
/// a wrong formula (a missing term, a transposed operand) is off by far more than 1e-4.
fn gradients_match(s: Shape) {
    let (loss_c, logits_c, grads_c) = by_candle(s);
    let start = model(s);
    let layout = Layout::of(&start, s.config.layers).unwrap();
    let w = layout.flatten(&start).unwrap();
    let (loss_h, logits_h, grad) = by_hand(s, &layout, &w);
    assert!((loss_h - loss_c).abs() < 1e-5, "loss {loss_h} vs {loss_c}");
    for (a, b) in logits_h.iter().zip(&logits_c) {
        assert!((a - b).abs() < 1e-5, "{logits_h:?} vs {logits_c:?}");
    }
    assert_eq!(grads_c.len(), layout.entries.len());
    for (name, gc) in &grads_c {
        let e = layout.entries.iter().find(|e| &e.name == name).unwrap();
        let gh = &grad[e.offset..e.offset + e.len];
        let scale = gc.iter().fold(0f32, |m, x| m.max(x.abs()));
        let worst = gh
            .iter()
            .zip(gc)
            .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
        if name.ends_with("attention.self.key.bias") {
            // Zero by hand: the key's bias adds the same q·b to every score of a row, which the
            // softmax cancels; both leave only rounding.
            assert!(scale < 1e-5 && worst < 1e-5, "{name}: {worst} and {scale}");
            continue;
        }
        assert!(scale > 1e-5, "{name}: a zero gradient proves nothing");
        assert!(worst <= 1e-4 * scale, "{name}: {worst} against {scale}");
    }
}

#[test]
fn hand_gradients_match_candles_autograd_on_a_tiny_model() {
    gradients_match(TINY);
}

#[test]
fn hand_gradients_match_candles_autograd_on_a_wider_model() {
    gradients_match(WIDE);
}

/// Two steps of the flat AdamW against the update computed by hand in f64 from its definition
/// (candle-nn's AdamW on the clipped gradient), clipped (norm 0.5) and not (norm 1e9): within
/// 1e-6 absolute. The optimizer runs in f32 with β₁, β₂ rounded to f32 (1 − β₂ is then off by
/// 1.3e-5 relative), which moves a step of lr ≤ 0.01 by about 1e-7; the steps move weights by
/// up to 0.014, and a wrong term (no bias correction, decay on a bias, no clipping) by far more
/// than 1e-6.
#[test]
fn adamw_steps_match_a_hand_computation() {
    let start = model(TINY);
    let layout = Layout::of(&start, 2).unwrap();
    let n = layout.len;
    let w0 = layout.flatten(&start).unwrap();
    let grads = [
        (0..n)
            .map(|i| ((i * 31 % 97) as f32 - 48.0) / 400.0)
            .collect::<Vec<f32>>(),
        (0..n)
            .map(|i| ((i * 17 % 89) as f32 - 44.0) / 300.0)
            .collect::<Vec<f32>>(),
    ];
    let (lrs, wd) = ([0.01, 0.004], 0.01);
    for max_norm in [0.5, 1e9] {
        let mut w = w0.clone();
        let mut opt = AdamW::new(n, wd);
        for (g, lr) in grads.iter().zip(lrs) {
            opt.step(&layout, &mut w, g, lr, max_norm);
        }
        // By hand, in f64.
        let (b1, b2, eps) = (0.9f64, 0.999f64, 1e-8f64);
        let mut want: Vec<f64> = w0.iter().map(|&x| f64::from(x)).collect();
        let (mut m, mut v) = (vec![0f64; n], vec![0f64; n]);
        for (step, (g, lr)) in grads.iter().zip(lrs).enumerate() {
            let t = (step + 1) as i32;
            let norm = g.iter().map(|&x| f64::from(x).powi(2)).sum::<f64>().sqrt();
            let factor = (max_norm / (norm + 1e-6)).min(1.0);
            for e in &layout.entries {
                let keep = if e.decay { 1.0 - lr * wd } else { 1.0 };
                for i in e.offset..e.offset + e.len {
                    let gi = f64::from(g[i]) * factor;
                    m[i] = b1 * m[i] + (1.0 - b1) * gi;
                    v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
                    let mh = m[i] / (1.0 - b1.powi(t));
                    let vh = v[i] / (1.0 - b2.powi(t));
                    want[i] = want[i] * keep - lr * mh / (vh.sqrt() + eps);
                }
            }
        }
        let mut moved = 0f64;
        for (i, (&got, &want)) in w.iter().zip(&want).enumerate() {
            assert!(
                (f64::from(got) - want).abs() <= 1e-6,
                "max_norm {max_norm}, value {i}: {got} against {want}"
            );
            moved = moved.max((want - f64::from(w0[i])).abs());
        }
        assert!(moved > 1e-3, "the steps moved the weights: {moved}");
    }
}

/// Three steps (forward, backward, AdamW) of the wider model on `threads` threads: the loss of
/// each step and the final weights' bits.
fn three_steps(threads: usize) -> Vec<u32> {
    three_steps_on(threads, None)
}

/// [`three_steps`] on `used` (a workspace an earlier training left its values in) instead of a
/// new one.
fn three_steps_on(threads: usize, used: Option<&mut Workspace>) -> Vec<u32> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(|| {
            let start = model(WIDE);
            let layout = Layout::of(&start, WIDE.config.layers).unwrap();
            let mut w = layout.flatten(&start).unwrap();
            let (ids, types, mask, labels) = batch(WIDE);
            let mut new = None;
            let ws = match used {
                Some(ws) => ws,
                None => new.insert(Workspace::new(&layout, WIDE.config, 3, WIDE.t)),
            };
            let mut grad = vec![0f32; layout.len];
            let mut opt = AdamW::new(layout.len, 0.01);
            let mut bits = Vec::new();
            for step in 0..3 {
                // Shorter batches after the first: the front of each buffer is reused.
                let t = WIDE.t - 5 * step;
                let cut = |v: &[u32]| -> Vec<u32> {
                    v.chunks(WIDE.t).flat_map(|r| r[..t].to_vec()).collect()
                };
                let m: Vec<f32> = mask.chunks(WIDE.t).flat_map(|r| r[..t].to_vec()).collect();
                let (i, ty) = (cut(&ids), cut(&types));
                let b = Batch {
                    ids: &i,
                    types: &ty,
                    mask: &m,
                    labels: &labels,
                    b: 3,
                    t,
                };
                bits.push(ws.step(&w, &mut grad, &b).to_bits());
                opt.step(&layout, &mut w, &grad, 1e-3, 1.0);
            }
            bits.extend(w.iter().map(|x| x.to_bits()));
            bits
        })
}

/// A workspace another training has used gives a new one's bits, which is what lets `train`
/// keep its workspace for the next fold (`train_hand::SPARE`): every buffer holds another
/// model's, another batch's values (the weights scaled, the labels flipped, two steps taken)
/// before the same three steps run on it. The oracle is the same steps on a new workspace.
#[test]
fn a_used_workspace_gives_a_new_ones_bits() {
    let start = model(WIDE);
    let layout = Layout::of(&start, WIDE.config.layers).unwrap();
    let mut ws = Workspace::new(&layout, WIDE.config, 3, WIDE.t);
    assert!(ws.fits(&layout, WIDE.config, 3, WIDE.t));
    assert!(!ws.fits(&layout, WIDE.config, 2, WIDE.t));
    assert!(!ws.fits(&layout, WIDE.config, 3, WIDE.t - 1));
    let other: Vec<f32> = layout
        .flatten(&start)
        .unwrap()
        .iter()
        .map(|x| x * -1.7 + 0.01)
        .collect();
    let (ids, types, mask, labels) = batch(WIDE);
    let flipped: Vec<f32> = labels.iter().map(|l| 1.0 - l).collect();
    let mut grad = vec![0f32; layout.len];
    for _ in 0..2 {
        let b = Batch {
            ids: &ids,
            types: &types,
            mask: &mask,
            labels: &flipped,
            b: 3,
            t: WIDE.t,
        };
        ws.step(&other, &mut grad, &b);
    }
    assert_eq!(three_steps_on(2, Some(&mut ws)), three_steps(2));
}

/// Training is deterministic: two runs on 2 threads and one on 1 thread give the same losses
/// and weights to the bit (the oracle is the code itself, run again: what is claimed is
/// reproducibility, and that the weights moved).
#[test]
fn hand_training_is_the_same_bits_on_two_runs_and_one_or_two_threads() {
    let two = three_steps(2);
    assert_eq!(two, three_steps(2));
    assert_eq!(two, three_steps(1));
    let start = model(WIDE);
    let layout = Layout::of(&start, WIDE.config.layers).unwrap();
    let w0 = layout.flatten(&start).unwrap();
    let changed = w0
        .iter()
        .zip(&two[3..])
        .filter(|(a, b)| a.to_bits() != **b)
        .count();
    assert!(
        changed > w0.len() / 2,
        "training moved the weights: {changed}"
    );
}
