//! The cross-encoder's forward pass as training runs it: the same arithmetic as
//! [`super::bert::Bert::forward`], with the attention's softmax, LayerNorm and GELU as the fused
//! operations of [`super::fused`] (one pass each forward, one or two backward, parallel over
//! rows) instead of candle's primitive ones. Scoring keeps `Bert`; the tests compare the two.

use candle_core::{DType, Result, Tensor};

use super::bert::{Config, Weights};
use super::fused;

/// The forward pass over `weights` (the same names as [`super::bert::Bert`]'s).
pub struct TrainModel<'a> {
    weights: &'a Weights,
    config: Config,
}

impl<'a> TrainModel<'a> {
    /// The model over `weights`.
    pub fn new(weights: &'a Weights, config: Config) -> Self {
        TrainModel { weights, config }
    }

    fn w(&self, name: &str) -> Result<&Tensor> {
        self.weights
            .get(name)
            .ok_or_else(|| candle_core::Error::Msg(format!("no weight {name}")))
    }

    /// `x · Wᵀ + b` of the linear layer `name`, as one matrix product over all the rows of `x`
    /// (`[.., in]` seen as `[rows, in]`): the weight's gradient is then one product too, where
    /// a broadcast product would compute it batch by batch and sum the pieces.
    fn linear(&self, x: &Tensor, name: &str) -> Result<Tensor> {
        let dims = x.dims().to_vec();
        let w = self.w(&format!("{name}.weight"))?;
        let rows = x.elem_count() / dims[dims.len() - 1];
        let mut out_dims = dims;
        *out_dims
            .last_mut()
            .expect("a linear layer's input has a dimension") = w.dim(0)?;
        x.reshape((rows, w.dim(1)?))?
            .matmul(&w.t()?)?
            .broadcast_add(self.w(&format!("{name}.bias"))?)?
            .reshape(out_dims)
    }

    fn layer_norm(&self, x: &Tensor, name: &str) -> Result<Tensor> {
        fused::layer_norm(
            x,
            self.w(&format!("{name}.weight"))?,
            self.w(&format!("{name}.bias"))?,
            self.config.eps as f32,
        )
    }

    /// The logit of each pair: `ids`, `types` `[batch, tokens]` (u32), `mask` `[batch, tokens]`
    /// (1 a token, 0 padding) as f32.
    pub fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let h = self.config.hidden;
        let positions = Tensor::arange(0u32, t as u32, ids.device())?;
        let emb = |name: &str, idx: &Tensor| -> Result<Tensor> {
            self.w(&format!("bert.embeddings.{name}_embeddings.weight"))?
                .index_select(&idx.flatten_all()?, 0)
        };
        let x = (emb("word", ids)?.reshape((b, t, h))?
            + emb("token_type", types)?.reshape((b, t, h))?)?
        .broadcast_add(&emb("position", &positions)?.reshape((1, t, h))?)?;
        let mut x = self.layer_norm(&x, "bert.embeddings.LayerNorm")?;
        // Padding gets a bias of f32::MIN before the softmax, as Bert::forward does.
        let bias = ((mask.to_dtype(DType::F32)?.affine(-1.0, 1.0)?) * f64::from(f32::MIN))?
            .reshape((b, 1, 1, t))?;
        for i in 0..self.config.layers {
            x = self.layer(&x, &bias, &format!("bert.encoder.layer.{i}"))?;
        }
        let cls = x.narrow(1, 0, 1)?.reshape((b, h))?;
        let pooled = self.linear(&cls, "bert.pooler.dense")?.tanh()?;
        self.linear(&pooled, "classifier")?.reshape(b)
    }

    fn layer(&self, x: &Tensor, bias: &Tensor, p: &str) -> Result<Tensor> {
        let (b, t, h) = x.dims3()?;
        let (heads, dh) = (self.config.heads, h / self.config.heads);
        let split = |y: Tensor| -> Result<Tensor> {
            y.reshape((b, t, heads, dh))?.transpose(1, 2)?.contiguous()
        };
        let q = split(self.linear(x, &format!("{p}.attention.self.query"))?)?;
        let k = split(self.linear(x, &format!("{p}.attention.self.key"))?)?;
        let v = split(self.linear(x, &format!("{p}.attention.self.value"))?)?;
        let scale = 1.0 / (dh as f32).sqrt();
        let probs = fused::masked_softmax(&q.matmul(&k.t()?)?, bias, scale)?;
        let ctx = probs.matmul(&v)?.transpose(1, 2)?.reshape((b, t, h))?;
        let attn = self.linear(&ctx, &format!("{p}.attention.output.dense"))?;
        let x1 = self.layer_norm(&(attn + x)?, &format!("{p}.attention.output.LayerNorm"))?;
        let mid = fused::gelu(&self.linear(&x1, &format!("{p}.intermediate.dense"))?)?;
        let out = self.linear(&mid, &format!("{p}.output.dense"))?;
        self.layer_norm(&(out + x1)?, &format!("{p}.output.LayerNorm"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rerank::bert::Bert;
    use crate::rerank::finetune::bce_with_logits;
    use candle_core::{Device, Var};

    const CONFIG: Config = Config {
        layers: 2,
        hidden: 8,
        heads: 2,
        eps: 1e-12,
        max_positions: 16,
    };

    /// A small random model of `CONFIG`'s shape (vocabulary 20, intermediate 16), from a seeded
    /// generator.
    fn small_model() -> Weights {
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.8
        };
        let (h, i) = (8, 16);
        let mut shapes: Vec<(String, Vec<usize>)> = vec![
            ("bert.embeddings.word_embeddings.weight".into(), vec![20, h]),
            (
                "bert.embeddings.position_embeddings.weight".into(),
                vec![16, h],
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
        for l in 0..CONFIG.layers {
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
                let t = Tensor::from_vec(v, dims, &Device::Cpu).unwrap();
                (name, t)
            })
            .collect()
    }

    /// Three pairs of 7 tokens, the last padded after 4.
    fn batch() -> (Tensor, Tensor, Tensor, Tensor) {
        let dev = Device::Cpu;
        let ids: Vec<u32> = (0..21).map(|i| (i * 7 + 3) % 20).collect();
        let types: Vec<u32> = (0..21).map(|i| u32::from(i % 7 >= 3)).collect();
        let mask: Vec<f32> = (0..21)
            .map(|i| if i >= 14 && i % 7 >= 4 { 0.0 } else { 1.0 })
            .collect();
        (
            Tensor::from_vec(ids, (3, 7), &dev).unwrap(),
            Tensor::from_vec(types, (3, 7), &dev).unwrap(),
            Tensor::from_vec(mask, (3, 7), &dev).unwrap(),
            Tensor::new(&[1f32, 0.0, 1.0], &dev).unwrap(),
        )
    }

    /// A loss, the logits and each parameter's gradient (by name).
    type Outcome = (f32, Vec<f32>, Vec<(String, Vec<f32>)>);

    /// The loss and every parameter's gradient, by the fused model (`fused`) or by candle's
    /// primitive operations (`Bert`).
    fn loss_and_grads(fused: bool) -> Outcome {
        let vars: Vec<(String, Var)> = small_model()
            .into_iter()
            .map(|(n, t)| (n, Var::from_tensor(&t).unwrap()))
            .collect();
        let weights: Weights = vars
            .iter()
            .map(|(n, v)| (n.clone(), v.as_tensor().clone()))
            .collect();
        let (ids, types, mask, labels) = batch();
        let logits = if fused {
            TrainModel::new(&weights, CONFIG)
                .forward(&ids, &types, &mask)
                .unwrap()
        } else {
            Bert::new(weights.clone(), CONFIG)
                .unwrap()
                .forward(&ids, &types, &mask)
                .unwrap()
        };
        let loss = bce_with_logits(&logits, &labels).unwrap();
        let grads = loss.backward().unwrap();
        let g = vars
            .iter()
            .map(|(n, v)| {
                let g = grads
                    .get(v.as_tensor())
                    .expect("every parameter has a gradient");
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

    /// The fused forward and backward passes compute what candle's primitive operations compute
    /// (the oracle: `Bert::forward` differentiated by candle's autograd) on a small random model
    /// with a padded pair: logits and loss within 1e-5, every parameter's gradient within 1e-4
    /// of the largest gradient of that parameter (float rounding: the two sum in other orders).
    #[test]
    fn fused_gradients_match_candles_primitive_operations() {
        let (loss_f, logits_f, grads_f) = loss_and_grads(true);
        let (loss_c, logits_c, grads_c) = loss_and_grads(false);
        assert!((loss_f - loss_c).abs() < 1e-5, "{loss_f} vs {loss_c}");
        for (a, b) in logits_f.iter().zip(&logits_c) {
            assert!((a - b).abs() < 1e-5, "{logits_f:?} vs {logits_c:?}");
        }
        assert_eq!(grads_f.len(), grads_c.len());
        for ((name, gf), (_, gc)) in grads_f.iter().zip(&grads_c) {
            let scale = gc.iter().fold(0f32, |m, x| m.max(x.abs()));
            if name.ends_with("attention.self.key.bias") {
                // Zero by hand: the key's bias adds the same q·b to every score of a row, which
                // the softmax cancels; both passes leave only rounding.
                let fused = gf.iter().fold(0f32, |m, x| m.max(x.abs()));
                assert!(scale < 1e-6 && fused < 1e-6, "{name}: {fused} and {scale}");
                continue;
            }
            let worst = gf
                .iter()
                .zip(gc)
                .fold(0f32, |m, (a, b)| m.max((a - b).abs()));
            assert!(worst <= 1e-4 * scale, "{name}: {worst} against {scale}");
            assert!(scale > 1e-5, "{name}: a zero gradient proves nothing");
        }
    }

    /// The fused passes give the same bits on 1 thread as on 3 (each row is one thread's, in one
    /// fixed order): loss, logits and every gradient.
    #[test]
    fn fused_passes_are_the_same_bits_whatever_the_thread_count() {
        let on = |n: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
                .install(|| loss_and_grads(true))
        };
        let bits = |(l, z, g): Outcome| {
            let mut out = vec![l.to_bits()];
            out.extend(z.iter().map(|x| x.to_bits()));
            for (_, v) in g {
                out.extend(v.iter().map(|x| x.to_bits()));
            }
            out
        };
        assert_eq!(bits(on(1)), bits(on(3)));
    }
}
