//! The GGUF's weights as candle runs them fast on a CPU: every Q4_1 matrix expanded to f32.
//!
//! Why: candle 0.11.1 multiplies a Q4_1 matrix with a scalar loop (`BlockQ4_1::vec_dot_unopt`,
//! no SIMD kernel, no repacked tile) — about 8 prompt tokens per second for SmolLM2-135M on
//! this machine, 86% of the time in that loop (perf). Expanded to f32, the same matrices go
//! through the `gemm` crate's AVX2/AVX-512 kernels (chosen at run time).
//!
//! Exactness: the expansion is Q4_1's own dequantization (`q · d + m` per weight, `d` and `m`
//! the block's f16 scale and minimum, in f32, as llama.cpp's `dequantize_row_q4_1`), so the
//! model computes with exactly the weights the file stores; only the activations are no longer
//! rounded to 8 bits (llama.cpp quantizes them to Q8_1 for its Q4_1 dot products), which makes
//! its logits differ from llama.cpp's by a little, never by the weights. Other tensors (f32
//! norms, the Q8_0 token embedding, which candle dequantizes itself and also uses as the output
//! matrix) are passed through unchanged.
//!
//! Cost: the expanded weights take 4 bytes per Q4_1 weight (about 425 MB for SmolLM2-135M), and
//! loading holds them twice for a moment (the staging buffer and the model's tensors).

use std::collections::HashMap;
use std::io::Cursor;

use candle_core::quantized::gguf_file::{Content, TensorInfo};
use candle_core::quantized::GgmlDType;
use candle_core::Device;
use candle_transformers::models::quantized_llama::ModelWeights;

/// Alignment of tensor data in the staging buffer (GGUF's default).
const ALIGN: usize = 32;

/// The model of `content` (read from `reader`), its Q4_1 matrices expanded to f32.
pub(super) fn load<R: std::io::Read + std::io::Seek>(
    content: Content,
    reader: &mut R,
) -> candle_core::Result<ModelWeights> {
    let device = Device::Cpu;
    let mut names: Vec<String> = content.tensor_infos.keys().cloned().collect();
    names.sort();
    let mut data: Vec<u8> = Vec::new();
    let mut infos: HashMap<String, TensorInfo> = HashMap::with_capacity(names.len());
    for name in &names {
        let q = content.tensor(reader, name, &device)?;
        let (dtype, bytes) = if q.dtype() == GgmlDType::Q4_1 {
            let values = q.dequantize(&device)?.flatten_all()?.to_vec1::<f32>()?;
            let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            (GgmlDType::F32, bytes)
        } else {
            (q.dtype(), q.data()?.into_owned())
        };
        let offset = data.len();
        data.extend_from_slice(&bytes);
        data.resize(data.len().div_ceil(ALIGN) * ALIGN, 0);
        infos.insert(
            name.clone(),
            TensorInfo {
                ggml_dtype: dtype,
                shape: q.shape().clone(),
                offset: offset as u64,
            },
        );
    }
    let staged = Content {
        magic: content.magic,
        metadata: content.metadata,
        tensor_infos: infos,
        tensor_data_offset: 0,
    };
    ModelWeights::from_gguf(staged, &mut Cursor::new(data), &device)
}
