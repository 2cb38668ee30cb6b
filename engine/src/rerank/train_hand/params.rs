//! The cross-encoder's parameters as one flat f32 buffer, and where each BERT parameter lives in
//! it. The hand-written trainer keeps weights, gradients and AdamW's two moments as four buffers
//! of this one layout, so the optimizer is one pass and every tensor is a slice.
//!
//! The layout puts each layer's query, key and value weights one after the other (`[3h, h]`, and
//! their biases `[3h]`), so that the three projections are one matrix product.

use candle_core::{Device, Tensor};

use crate::rerank::bert::Weights;

/// One parameter: its BERT name, shape, and place in the flat buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The name, as [`crate::rerank::bert::Bert`] reads it.
    pub name: String,
    /// Its shape.
    pub dims: Vec<usize>,
    /// Its first value's index in the flat buffer.
    pub offset: usize,
    /// Its number of values.
    pub len: usize,
    /// Whether AdamW decays it (matrices and embeddings; not biases and LayerNorm).
    pub decay: bool,
}

/// The offsets of one encoder layer's parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerAt {
    /// Query, key and value weights, `[3h, h]`.
    pub qkv_w: usize,
    /// Their biases, `[3h]`.
    pub qkv_b: usize,
    /// Attention output dense, `[h, h]` and `[h]`.
    pub ao_w: usize,
    /// See `ao_w`.
    pub ao_b: usize,
    /// LayerNorm after the attention, γ and β `[h]`.
    pub ln1_g: usize,
    /// See `ln1_g`.
    pub ln1_b: usize,
    /// Intermediate dense, `[i, h]` and `[i]`.
    pub in_w: usize,
    /// See `in_w`.
    pub in_b: usize,
    /// Output dense, `[h, i]` and `[h]`.
    pub out_w: usize,
    /// See `out_w`.
    pub out_b: usize,
    /// LayerNorm after the output, γ and β `[h]`.
    pub ln2_g: usize,
    /// See `ln2_g`.
    pub ln2_b: usize,
}

/// Where everything is, and the model's sizes read from the weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// Every parameter, in buffer order.
    pub entries: Vec<Entry>,
    /// Total values.
    pub len: usize,
    /// Hidden size.
    pub hidden: usize,
    /// Intermediate size.
    pub inter: usize,
    /// Vocabulary size.
    pub vocab: usize,
    /// Longest input, in positions.
    pub positions: usize,
    /// Token types.
    pub types: usize,
    /// Word, position and token-type embeddings.
    pub word: usize,
    /// See `word`.
    pub pos: usize,
    /// See `word`.
    pub typ: usize,
    /// The embeddings' LayerNorm, γ and β.
    pub ln0_g: usize,
    /// See `ln0_g`.
    pub ln0_b: usize,
    /// Each encoder layer.
    pub layers: Vec<LayerAt>,
    /// Pooler dense, `[h, h]` and `[h]`.
    pub pool_w: usize,
    /// See `pool_w`.
    pub pool_b: usize,
    /// Classifier, `[1, h]` and `[1]`.
    pub cls_w: usize,
    /// See `cls_w`.
    pub cls_b: usize,
}

impl Layout {
    /// The layout of `weights` with `layers` encoder layers (sizes read from the weights'
    /// shapes); an error names a missing parameter or one of an unexpected shape.
    pub fn of(weights: &Weights, layers: usize) -> Result<Layout, String> {
        let dims = |n: &str| -> Result<Vec<usize>, String> {
            weights
                .get(n)
                .map(|t| t.dims().to_vec())
                .ok_or_else(|| format!("no weight {n}"))
        };
        let word = dims("bert.embeddings.word_embeddings.weight")?;
        let (vocab, hidden) = (word[0], word[1]);
        let inter = dims("bert.encoder.layer.0.intermediate.dense.weight")?[0];
        let positions = dims("bert.embeddings.position_embeddings.weight")?[0];
        let types = dims("bert.embeddings.token_type_embeddings.weight")?[0];
        let mut b = Builder::default();
        let e = "bert.embeddings";
        let word_at = b.push(&format!("{e}.word_embeddings.weight"), vec![vocab, hidden]);
        let pos = b.push(
            &format!("{e}.position_embeddings.weight"),
            vec![positions, hidden],
        );
        let typ = b.push(
            &format!("{e}.token_type_embeddings.weight"),
            vec![types, hidden],
        );
        let ln0_g = b.push(&format!("{e}.LayerNorm.weight"), vec![hidden]);
        let ln0_b = b.push(&format!("{e}.LayerNorm.bias"), vec![hidden]);
        let mut at = Vec::with_capacity(layers);
        for l in 0..layers {
            at.push(b.layer(&format!("bert.encoder.layer.{l}"), hidden, inter));
        }
        let pool_w = b.push("bert.pooler.dense.weight", vec![hidden, hidden]);
        let pool_b = b.push("bert.pooler.dense.bias", vec![hidden]);
        let cls_w = b.push("classifier.weight", vec![1, hidden]);
        let cls_b = b.push("classifier.bias", vec![1]);
        for entry in &b.entries {
            let have = dims(&entry.name)?;
            if have != entry.dims {
                return Err(format!(
                    "{}: shape {have:?}, expected {:?}",
                    entry.name, entry.dims
                ));
            }
        }
        if b.entries.len() != weights.len() {
            return Err(format!(
                "{} weights for a model of {} parameters",
                weights.len(),
                b.entries.len()
            ));
        }
        Ok(Layout {
            len: b.len,
            entries: b.entries,
            hidden,
            inter,
            vocab,
            positions,
            types,
            word: word_at,
            pos,
            typ,
            ln0_g,
            ln0_b,
            layers: at,
            pool_w,
            pool_b,
            cls_w,
            cls_b,
        })
    }

    /// The flat buffer of `weights`' values.
    pub fn flatten(&self, weights: &Weights) -> Result<Vec<f32>, String> {
        let mut out = vec![0f32; self.len];
        for e in &self.entries {
            let t = weights
                .get(&e.name)
                .ok_or_else(|| format!("no weight {}", e.name))?;
            let v = t
                .flatten_all()
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(|x| format!("{}: {x}", e.name))?;
            out[e.offset..e.offset + e.len].copy_from_slice(&v);
        }
        Ok(out)
    }

    /// `flat` as named tensors again.
    pub fn weights(&self, flat: &[f32]) -> Result<Weights, String> {
        let mut out = Weights::new();
        for e in &self.entries {
            let v = flat[e.offset..e.offset + e.len].to_vec();
            let t = Tensor::from_vec(v, e.dims.clone(), &Device::Cpu).map_err(|x| x.to_string())?;
            out.insert(e.name.clone(), t);
        }
        Ok(out)
    }
}

#[derive(Default)]
struct Builder {
    entries: Vec<Entry>,
    len: usize,
}

impl Builder {
    fn push(&mut self, name: &str, dims: Vec<usize>) -> usize {
        let len = dims.iter().product();
        let offset = self.len;
        let decay = !(name.ends_with(".bias") || name.contains("LayerNorm"));
        self.entries.push(Entry {
            name: name.to_string(),
            dims,
            offset,
            len,
            decay,
        });
        self.len += len;
        offset
    }

    fn layer(&mut self, p: &str, h: usize, i: usize) -> LayerAt {
        let s = "attention.self";
        let qkv_w = self.push(&format!("{p}.{s}.query.weight"), vec![h, h]);
        self.push(&format!("{p}.{s}.key.weight"), vec![h, h]);
        self.push(&format!("{p}.{s}.value.weight"), vec![h, h]);
        let qkv_b = self.push(&format!("{p}.{s}.query.bias"), vec![h]);
        self.push(&format!("{p}.{s}.key.bias"), vec![h]);
        self.push(&format!("{p}.{s}.value.bias"), vec![h]);
        LayerAt {
            qkv_w,
            qkv_b,
            ao_w: self.push(&format!("{p}.attention.output.dense.weight"), vec![h, h]),
            ao_b: self.push(&format!("{p}.attention.output.dense.bias"), vec![h]),
            ln1_g: self.push(&format!("{p}.attention.output.LayerNorm.weight"), vec![h]),
            ln1_b: self.push(&format!("{p}.attention.output.LayerNorm.bias"), vec![h]),
            in_w: self.push(&format!("{p}.intermediate.dense.weight"), vec![i, h]),
            in_b: self.push(&format!("{p}.intermediate.dense.bias"), vec![i]),
            out_w: self.push(&format!("{p}.output.dense.weight"), vec![h, i]),
            out_b: self.push(&format!("{p}.output.dense.bias"), vec![h]),
            ln2_g: self.push(&format!("{p}.output.LayerNorm.weight"), vec![h]),
            ln2_b: self.push(&format!("{p}.output.LayerNorm.bias"), vec![h]),
        }
    }
}
