//! The MiniLM cross-encoder (ms-marco-MiniLM-L-12-v2) as float weights in candle: the pinned
//! int8 ONNX file dequantized, and a BERT forward pass over them — the starting point of
//! fine-tuning, which needs weights it can change and a forward pass it can differentiate.
//!
//! **Dequantization.** The file is ONNX Runtime's dynamic quantization: every matrix of the
//! encoder, the pooler and the classifier is int8 with one scale and zero point per tensor,
//! consumed by a `MatMulInteger` node stored as `[in, out]`; the three embedding tables are
//! uint8 behind a `DequantizeLinear`; biases and LayerNorm parameters stay float. A matrix is
//! `(q − zero point) · scale`, the difference taken in integers, then one f32 rounding (what
//! `DequantizeLinear` computes), transposed to `[out, in]`. Which BERT parameter a matrix is
//! comes from the name of the node consuming it, which keeps the exporter's module path
//! (`/bert/encoder/layer.0/attention/self/query/MatMul_quant` →
//! `bert.encoder.layer.0.attention.self.query.weight`); float initializers are named as the
//! parameters already. The result is the 201 tensors of a BERT sequence classifier.
//!
//! **Forward pass.** `[CLS] query [SEP] passage [SEP]` (type ids 0, then 1), word + position +
//! type embeddings, LayerNorm, 12 layers (12 heads of 32, exact-erf GELU, post-LayerNorm),
//! then the pooler (dense + tanh on [CLS]) and the classifier: one logit. LayerNorm and softmax
//! are written from primitive operations so that gradients flow through them (candle's fused
//! LayerNorm has no backward).
//!
//! The float model is not the int8 one: ONNX Runtime quantizes each activation tensor too, and
//! over 12 layers that rounding moves a logit by up to about 0.7 on long pairs. The test
//! `engine/tests/dequant_oracle.rs` states how close the two are on 300 docir pairs.

use std::collections::BTreeMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor, D};

use crate::models::onnx::{dtype, Graph, Initializer};
use crate::{Error, Result};

/// The architecture of ms-marco-MiniLM-L-12-v2 (its config.json names none of it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Encoder layers.
    pub layers: usize,
    /// Hidden size.
    pub hidden: usize,
    /// Attention heads.
    pub heads: usize,
    /// LayerNorm epsilon.
    pub eps: f64,
    /// Longest input, in tokens.
    pub max_positions: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            layers: 12,
            hidden: 384,
            heads: 12,
            eps: 1e-12,
            max_positions: 512,
        }
    }
}

/// Float weights by BERT parameter name (`bert.encoder.layer.0.attention.self.query.weight`,
/// …), matrices `[out, in]` as candle's linear layers take them.
pub type Weights = BTreeMap<String, Tensor>;

fn fail(path: &Path, message: String) -> Error {
    Error::Model {
        model: path.display().to_string(),
        message,
    }
}

/// The dequantized weights of the int8 ONNX file `path` (see the module's documentation).
pub fn dequantize(path: &Path) -> Result<Weights> {
    let graph = Graph::read(path)?;
    dequantize_graph(&graph).map_err(|m| fail(path, m))
}

/// [`dequantize`] on a parsed graph; the error says which tensor could not be read.
pub fn dequantize_graph(graph: &Graph) -> std::result::Result<Weights, String> {
    let by_name: BTreeMap<&str, &Initializer> = graph
        .initializers
        .iter()
        .map(|i| (i.name.as_str(), i))
        .collect();
    let get = |n: &str| {
        by_name
            .get(n)
            .copied()
            .ok_or_else(|| format!("no initializer {n}"))
    };
    let scalar = |n: &str| -> std::result::Result<(f32, i32), String> {
        let scale = get(&format!("{n}_scale"))?.f32s()?;
        let zp = get(&format!("{n}_zero_point"))?.ints8()?;
        match (scale.as_slice(), zp.as_slice()) {
            ([s], [z]) => Ok((*s, *z)),
            _ => Err(format!(
                "{n}: a scale or zero point that is not one number (per-channel?)"
            )),
        }
    };
    let deq = |n: &str| -> std::result::Result<(Vec<f32>, Vec<usize>), String> {
        let q = get(&format!("{n}_quantized"))?;
        let (scale, zp) = scalar(n)?;
        let values = q
            .ints8()?
            .into_iter()
            .map(|v| (v - zp) as f32 * scale)
            .collect();
        Ok((values, q.dims.iter().map(|&d| d as usize).collect()))
    };
    let tensor = |v: Vec<f32>, dims: &[usize]| {
        Tensor::from_vec(v, dims, &Device::Cpu).map_err(|e| e.to_string())
    };
    let mut out = Weights::new();
    for node in graph.nodes.iter().filter(|n| n.op_type == "MatMulInteger") {
        let b = node
            .inputs
            .get(1)
            .ok_or("a MatMulInteger without its matrix")?;
        let Some(base) = b.strip_suffix("_quantized") else {
            continue;
        };
        let param = parameter_of(&node.name)
            .ok_or_else(|| format!("node {:?}: no module path in its name", node.name))?;
        let (values, dims) = deq(base)?;
        let [rows, cols] = dims[..] else {
            return Err(format!("{base}: a matrix of shape {dims:?}"));
        };
        let t = tensor(values, &[rows, cols])?
            .t()
            .and_then(|t| t.contiguous())
            .map_err(|e| e.to_string())?;
        out.insert(format!("{param}.weight"), t);
    }
    for table in ["word", "position", "token_type"] {
        let n = format!("bert.embeddings.{table}_embeddings.weight");
        let (values, dims) = deq(&n)?;
        out.insert(n, tensor(values, &dims)?);
    }
    for init in &graph.initializers {
        let is_param = init.name.starts_with("bert.") || init.name.starts_with("classifier.");
        if is_param && init.data_type == dtype::FLOAT && !out.contains_key(&init.name) {
            let dims: Vec<usize> = init.dims.iter().map(|&d| d as usize).collect();
            if init.name.ends_with("_scale") {
                continue;
            }
            out.insert(init.name.clone(), tensor(init.f32s()?, &dims)?);
        }
    }
    Ok(out)
}

/// `/bert/encoder/layer.0/attention/self/query/MatMul_quant` → `bert.encoder.layer.0.attention.self.query`.
pub fn parameter_of(node: &str) -> Option<String> {
    let path = node.trim_start_matches('/');
    let (module, _op) = path.rsplit_once('/')?;
    Some(module.replace('/', "."))
}

/// Makes the C allocator keep the memory it is given back instead of returning it to the
/// kernel, for the rest of the process (once; later calls do nothing).
///
/// The float model allocates and frees tensors of up to hundreds of megabytes at every
/// training step (the attention of a batch of 16 pairs of 256 tokens is 50 MB per layer, and its
/// gradient as much). glibc serves each one by a fresh `mmap` (or trims the heap's top back to
/// the kernel when it is freed), so every use of it faults its pages in again: under `perf`,
/// 42% of a SciFact training step was the kernel's page faults and cgroup accounting. With
/// `mmap` off (`M_MMAP_MAX` 0) and trimming off (`M_TRIM_THRESHOLD` -1), freed memory is reused
/// as it is: a step on docir's pairs ran 2.4× as fast (bench/finetune-speed/results.md). The
/// cost is that the process keeps its peak heap until it exits. The arithmetic is unchanged:
/// same weights to the bit. One of the engine's two `unsafe` blocks (the other is the gemm call
/// of `rerank/train_hand/ops.rs`): glibc's `mallopt` has no safe wrapper, and these parameters
/// cannot be set otherwise once the process runs.
#[allow(unsafe_code)]
pub fn keep_freed_memory() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: mallopt only changes glibc's allocation parameters; it is called once, and
        // any allocation made before or after stays valid under either setting.
        unsafe {
            libc::mallopt(libc::M_MMAP_MAX, 0);
            libc::mallopt(libc::M_TRIM_THRESHOLD, -1);
        }
    });
}

/// The cross-encoder over float weights.
pub struct Bert {
    config: Config,
    weights: Weights,
    /// While [`Bert::mean_inputs`] runs: by calibration pair (its position), the input of every
    /// linear layer its forward pass gave, in the order given.
    inputs: std::sync::Mutex<BTreeMap<usize, Vec<Captured>>>,
}

/// One linear layer's input in one forward pass: the layer's parameter name, the row width and
/// the rows.
type Captured = (String, usize, Vec<f32>);

/// Per linear layer (by parameter name): the sum of its input rows, and how many.
type InputSums = BTreeMap<String, (Vec<f64>, u64)>;

/// One linear layer's inputs over calibration pairs ([`Bert::input_moments_on`]).
#[derive(Debug, Clone)]
pub struct InputMoments {
    /// The mean input row (μ).
    pub mean: Vec<f64>,
    /// `H = Σ x xᵀ` over every row (row-major `width × width`), when asked for.
    pub second: Option<Vec<f64>>,
}

/// `xᵀ x` of the rows `values` (`width` wide) as one candle product in f32.
fn gram(values: &[f32], width: usize) -> std::result::Result<Vec<f32>, String> {
    let x = Tensor::from_slice(
        values,
        (values.len() / width, width),
        &candle_core::Device::Cpu,
    )
    .map_err(|e| e.to_string())?;
    x.t()
        .and_then(|t| t.matmul(&x))
        .and_then(|g| g.flatten_all())
        .and_then(|g| g.to_vec1::<f32>())
        .map_err(|e| e.to_string())
}

thread_local! {
    /// The forward passes this thread is running for [`Bert::mean_inputs`], innermost last: the
    /// model's address and the pair's position. A stack, because a thread waiting inside a
    /// candle operation may run another pass stolen from rayon's queue before it returns.
    static CAPTURING: std::cell::RefCell<Vec<(usize, usize)>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// While alive: this thread's forward passes of `model` capture their inputs for `pair`.
struct CaptureFor;

impl CaptureFor {
    fn start(model: &Bert, pair: usize) -> CaptureFor {
        CAPTURING.with(|c| c.borrow_mut().push((model as *const Bert as usize, pair)));
        CaptureFor
    }
}

impl Drop for CaptureFor {
    fn drop(&mut self) {
        CAPTURING.with(|c| c.borrow_mut().pop());
    }
}

impl Bert {
    /// The model over `weights` (every parameter the forward pass reads must be there).
    pub fn new(weights: Weights, config: Config) -> std::result::Result<Bert, String> {
        keep_freed_memory();
        let model = Bert {
            config,
            weights,
            inputs: std::sync::Mutex::new(BTreeMap::new()),
        };
        let mut names = vec![
            "bert.embeddings.word_embeddings.weight".to_string(),
            "bert.pooler.dense.weight".to_string(),
            "classifier.weight".to_string(),
            "classifier.bias".to_string(),
        ];
        for i in 0..config.layers {
            for p in [
                "attention.self.query",
                "attention.output.dense",
                "output.LayerNorm",
            ] {
                names.push(format!("bert.encoder.layer.{i}.{p}.weight"));
            }
        }
        match names.iter().find(|n| !model.weights.contains_key(*n)) {
            Some(n) => Err(format!("no weight {n}")),
            None => Ok(model),
        }
    }

    /// The weights.
    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    /// The weights, taken back.
    pub fn into_weights(self) -> Weights {
        self.weights
    }

    fn w(&self, name: &str) -> candle_core::Result<&Tensor> {
        self.weights
            .get(name)
            .ok_or_else(|| candle_core::Error::Msg(format!("no weight {name}")))
    }

    /// The mean input of every linear layer (by its parameter name, e.g.
    /// `bert.encoder.layer.0.attention.self.query`) over `pairs`, each scored alone as
    /// [`Bert::score`] scores it: over every token's row for the encoder's layers, over the
    /// [CLS] row for the pooler and the classifier. Sums in f64, pairs in order, rows in order
    /// (the same bits on every run). When this process scores fold models side by side
    /// (`finetuned::scores_side_by_side`: candle's products on one thread, several cores), the
    /// forward passes run side by side, one per core, and their inputs are summed after, in
    /// the same order: the same bits as one pass at a time.
    pub fn mean_inputs(
        &self,
        tokenizer: &tokenizers::Tokenizer,
        pairs: &[(&str, &str)],
    ) -> std::result::Result<BTreeMap<String, Vec<f64>>, String> {
        self.mean_inputs_on(super::finetuned::side_by_side(), tokenizer, pairs)
    }

    /// [`Bert::mean_inputs`] with the forward passes side by side on `pool` (a window of as
    /// many pairs as it has threads at a time), or one at a time on this thread without one.
    pub fn mean_inputs_on(
        &self,
        pool: Option<&rayon::ThreadPool>,
        tokenizer: &tokenizers::Tokenizer,
        pairs: &[(&str, &str)],
    ) -> std::result::Result<BTreeMap<String, Vec<f64>>, String> {
        Ok(self
            .input_moments_on(pool, tokenizer, pairs, |_| false)?
            .into_iter()
            .map(|(name, m)| (name, m.mean))
            .collect())
    }

    /// [`Bert::mean_inputs`], and for every layer `second(name)` names, the sum of its input
    /// rows' outer products `H = Σ x xᵀ` (row-major, `width × width`): each pass's rows
    /// multiplied in one f32 product (candle's, whose bits do not depend on the CPU or the
    /// threads), the passes' products summed in f64 in the pairs' order.
    pub fn input_moments_on(
        &self,
        pool: Option<&rayon::ThreadPool>,
        tokenizer: &tokenizers::Tokenizer,
        pairs: &[(&str, &str)],
        second: impl Fn(&str) -> bool,
    ) -> std::result::Result<BTreeMap<String, InputMoments>, String> {
        use rayon::prelude::*;
        let captured = |i: usize| -> std::result::Result<Vec<Captured>, String> {
            let (q, p) = pairs[i];
            let scored = {
                let _capture = CaptureFor::start(self, i);
                self.score(tokenizer, q, p)
            };
            let rows = self
                .inputs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&i)
                .unwrap_or_default();
            scored.map(|_| rows)
        };
        let window = pool
            .map_or(1, rayon::ThreadPool::current_num_threads)
            .max(1);
        let mut sums = InputSums::new();
        let mut outer: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for start in (0..pairs.len()).step_by(window) {
            let positions = start..(start + window).min(pairs.len());
            let passes: Vec<std::result::Result<Vec<Captured>, String>> = match pool {
                Some(pool) => pool.install(|| positions.into_par_iter().map(captured).collect()),
                None => positions.map(captured).collect(),
            };
            for pass in passes {
                for (name, width, values) in pass? {
                    if second(&name) {
                        let h = outer
                            .entry(name.clone())
                            .or_insert_with(|| vec![0.0; width * width]);
                        for (acc, v) in h.iter_mut().zip(gram(&values, width)?) {
                            *acc += f64::from(v);
                        }
                    }
                    let (sum, n) = sums.entry(name).or_insert_with(|| (vec![0.0; width], 0));
                    for row in values.chunks_exact(width) {
                        for (s, v) in sum.iter_mut().zip(row) {
                            *s += f64::from(*v);
                        }
                        *n += 1;
                    }
                }
            }
        }
        Ok(sums
            .into_iter()
            .map(|(name, (sum, n))| {
                let second = outer.remove(&name);
                let n_f = n.max(1) as f64;
                let mean = sum.into_iter().map(|v| v / n_f).collect();
                (name, InputMoments { mean, second })
            })
            .collect())
    }

    /// Keeps `x` (its last axis the layer's input) as the layer `name`'s input, when this
    /// thread's innermost forward pass is one of this model's for [`Bert::mean_inputs`].
    fn record(&self, x: &Tensor, name: &str) -> candle_core::Result<()> {
        let me = self as *const Bert as usize;
        let Some(pair) = CAPTURING.with(|c| match c.borrow().last() {
            Some(&(model, pair)) if model == me => Some(pair),
            _ => None,
        }) else {
            return Ok(());
        };
        let width = x.dim(D::Minus1)?;
        let values = x.flatten_all()?.to_vec1::<f32>()?;
        self.inputs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(pair)
            .or_default()
            .push((name.to_string(), width, values));
        Ok(())
    }

    /// `x · Wᵀ + b` of the linear layer `name`.
    fn linear(&self, x: &Tensor, name: &str) -> candle_core::Result<Tensor> {
        self.record(x, name)?;
        x.broadcast_matmul(&self.w(&format!("{name}.weight"))?.t()?)?
            .broadcast_add(self.w(&format!("{name}.bias"))?)
    }

    /// LayerNorm over the last dimension, from primitive (differentiable) operations.
    fn layer_norm(&self, x: &Tensor, name: &str) -> candle_core::Result<Tensor> {
        let mean = x.mean_keepdim(D::Minus1)?;
        let centred = x.broadcast_sub(&mean)?;
        let var = centred.sqr()?.mean_keepdim(D::Minus1)?;
        centred
            .broadcast_div(&(var + self.config.eps)?.sqrt()?)?
            .broadcast_mul(self.w(&format!("{name}.weight"))?)?
            .broadcast_add(self.w(&format!("{name}.bias"))?)
    }

    /// The logit of each pair of a batch: `ids` and `types` `[batch, tokens]` (u32), `mask`
    /// `[batch, tokens]` (1 for a token, 0 for padding) as f32.
    pub fn forward(
        &self,
        ids: &Tensor,
        types: &Tensor,
        mask: &Tensor,
    ) -> candle_core::Result<Tensor> {
        let (b, t) = ids.dims2()?;
        let h = self.config.hidden;
        let positions = Tensor::arange(0u32, t as u32, ids.device())?;
        let emb = |name: &str, idx: &Tensor| -> candle_core::Result<Tensor> {
            self.w(&format!("bert.embeddings.{name}_embeddings.weight"))?
                .index_select(&idx.flatten_all()?, 0)
        };
        let x = (emb("word", ids)?.reshape((b, t, h))?
            + emb("token_type", types)?.reshape((b, t, h))?)?
        .broadcast_add(&emb("position", &positions)?.reshape((1, t, h))?)?;
        let mut x = self.layer_norm(&x, "bert.embeddings.LayerNorm")?;
        // Padding gets a bias of f32::MIN before the softmax, as the exporter's graph does.
        let bias = ((mask.to_dtype(DType::F32)?.affine(-1.0, 1.0)?) * f64::from(f32::MIN))?
            .reshape((b, 1, 1, t))?;
        for i in 0..self.config.layers {
            x = self.layer(&x, &bias, &format!("bert.encoder.layer.{i}"))?;
        }
        let cls = x.narrow(1, 0, 1)?.reshape((b, h))?;
        let pooled = self.linear(&cls, "bert.pooler.dense")?.tanh()?;
        self.linear(&pooled, "classifier")?.reshape(b)
    }

    fn layer(&self, x: &Tensor, bias: &Tensor, p: &str) -> candle_core::Result<Tensor> {
        let (b, t, h) = x.dims3()?;
        let (heads, dh) = (self.config.heads, h / self.config.heads);
        let split = |y: Tensor| -> candle_core::Result<Tensor> {
            y.reshape((b, t, heads, dh))?.transpose(1, 2)?.contiguous()
        };
        let q = split(self.linear(x, &format!("{p}.attention.self.query"))?)?;
        let k = split(self.linear(x, &format!("{p}.attention.self.key"))?)?;
        let v = split(self.linear(x, &format!("{p}.attention.self.value"))?)?;
        let scores = (q.matmul(&k.t()?)? / (dh as f64).sqrt())?.broadcast_add(bias)?;
        let max = scores.max_keepdim(D::Minus1)?;
        let e = scores.broadcast_sub(&max)?.exp()?;
        let probs = e.broadcast_div(&e.sum_keepdim(D::Minus1)?)?;
        let ctx = probs.matmul(&v)?.transpose(1, 2)?.reshape((b, t, h))?;
        let attn = self.linear(&ctx, &format!("{p}.attention.output.dense"))?;
        let x1 = self.layer_norm(&(attn + x)?, &format!("{p}.attention.output.LayerNorm"))?;
        let mid = self
            .linear(&x1, &format!("{p}.intermediate.dense"))?
            .gelu_erf()?;
        let out = self.linear(&mid, &format!("{p}.output.dense"))?;
        self.layer_norm(&(out + x1)?, &format!("{p}.output.LayerNorm"))
    }

    /// The logit of one (query, passage) pair, tokenized by `tokenizer` as the ONNX model is fed
    /// (`[CLS] q [SEP] p [SEP]`, longest-first truncation to the model's length).
    pub fn score(
        &self,
        tokenizer: &tokenizers::Tokenizer,
        query: &str,
        passage: &str,
    ) -> std::result::Result<f32, String> {
        let enc = tokenizer
            .encode((query, passage), true)
            .map_err(|e| e.to_string())?;
        let n = enc.get_ids().len();
        let dev = Device::Cpu;
        let run = || -> candle_core::Result<f32> {
            let ids = Tensor::from_slice(enc.get_ids(), (1, n), &dev)?;
            let types = Tensor::from_slice(enc.get_type_ids(), (1, n), &dev)?;
            let mask = Tensor::ones((1, n), DType::F32, &dev)?;
            self.forward(&ids, &types, &mask)?
                .to_vec1::<f32>()
                .map(|v| v[0])
        };
        run().map_err(|e| e.to_string())
    }
}

/// The tokenizer of the model directory `dir`, truncating pairs longest-first to `max_length`
/// tokens and padding nothing, as ranklab's ONNX cross-encoder feeds one pair at a time.
pub fn tokenizer(dir: &Path, max_length: usize) -> Result<tokenizers::Tokenizer> {
    let path = dir.join("tokenizer.json");
    let mut t = tokenizers::Tokenizer::from_file(&path).map_err(|e| fail(&path, e.to_string()))?;
    t.with_padding(None);
    t.with_truncation(Some(tokenizers::TruncationParams {
        max_length,
        ..Default::default()
    }))
    .map_err(|e| fail(&path, e.to_string()))?;
    Ok(t)
}
