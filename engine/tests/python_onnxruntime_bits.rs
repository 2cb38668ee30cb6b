//! ranklab's vectors and logits have the bits of Python's onnxruntime on the same model files.
//!
//! The oracle: `onnxruntime` 1.32.0 + `tokenizers` 0.23.3 + numpy 2.4.6 in Python 3.11 on this
//! machine (x86_64, AVX-512 VNNI), run on 2026-12-01 exactly as `bench/warm-runs/cold_onnx.py` runs
//! them: one session per model with one intra-op and one inter-op thread, default graph
//! optimization (ORT_ENABLE_ALL), the model's `tokenizer.json` with truncation at 512 and no
//! padding, batch 1, `input_ids`, `attention_mask` (and `token_type_ids` where the graph has it)
//! as int64.
//! - bge-small-en-v1.5 int8: the CLS row of the first output, L2-normalized in float32 as
//!   `x / (sqrt(sum of squares, left to right) + 1e-12)`; the pinned value is the sha256 of the
//!   384 little-endian f32s (numpy's `np.linalg.norm` sums in another order and gives other bits
//!   for one of the three sentences, so the order is part of the oracle).
//! - ms-marco-MiniLM-L-12-v2 int8: the logit `out[0][0][0]`, as f32 bits.
//!
//! Both models are int8, and ONNX Runtime picks its u8s8 kernel by CPU: the AVX2 kernel's
//! 16-bit pair sums saturate, the VNNI kernels' (AVX-512 VNNI, AVX-VNNI) do not. The three
//! sentences' vectors come out with the same bits on both; the Berlin logits do not, so they
//! are pinned twice, and the test takes the pair of the kernel this CPU runs. The AVX2 logits:
//! the same script with the same pinned wheels on an AMD EPYC with AVX2 and no AVX-512
//! (2026-12-04), which also gave the three vectors above bit for bit.
//!
//! So a change of session options, tokenization or pooling that moved a single bit (and with
//! it the content-keyed caches and the committed reports) fails here.

use ranklab_engine::dense::{Embedder, FastembedEmbedder};
use ranklab_engine::models::{hex, sha256, Int8Kernel};
use ranklab_engine::rerank::{CrossEncoder, FastembedCrossEncoder};

/// (sentence, sha256 of Python's normalized vector, its first component's bits).
const VECTORS: [(&str, &str, u32); 3] = [
    (
        "The cat sits on the mat.",
        "1e1b203f87d6796d0e31e00b8c9e502255bf18c756b3516c366bbcfff17ae64e",
        0x3d07c7de,
    ),
    (
        "A kitten is resting on a rug.",
        "b4efb9393101ee6b0238b7f6445a4b699ed8eae230fe45be1f5364ee87c38a9e",
        0xbba6eef7,
    ),
    (
        "Quarterly revenue grew by ten percent.",
        "c1355bc19452ec8d9562202e291075866db5936a132a9d0aafa842d4e973d878",
        0x3cceaa21,
    ),
];

const QUERY: &str = "How many people live in Berlin?";

const PASSAGES: [&str; 3] = [
    "Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
    "Berlin is the capital of Germany.",
    "New York City is famous for the Metropolitan Museum of Art.",
];

/// Python's logit bits for (QUERY, passage) under a VNNI kernel: 9.391149, -2.2379417, -11.191213.
const LOGITS_VNNI: [u32; 3] = [0x41164225, 0xc00f3a70, 0xc1330f35];

/// The same under the AVX2 kernel: 9.134414, -2.2188008, -11.010694.
const LOGITS_AVX2: [u32; 3] = [0x4112268f, 0xc00e00d5, 0xc1302bcd];

/// The logits of the u8s8 kernel ONNX Runtime runs on this CPU.
fn python_logits() -> [u32; 3] {
    match Int8Kernel::detect() {
        Int8Kernel::Vnni => LOGITS_VNNI,
        Int8Kernel::Avx2 => LOGITS_AVX2,
    }
}

#[test]
fn bge_small_vectors_have_the_bits_of_python_onnxruntime() {
    let mut e = FastembedEmbedder::open("bge-small-en-v1.5").unwrap_or_else(|e| panic!("{e}"));
    let texts: Vec<&str> = VECTORS.iter().map(|(t, _, _)| *t).collect();
    let got = e.embed(&texts).unwrap();
    for ((text, want_sha, want_first), v) in VECTORS.iter().zip(&got) {
        assert_eq!(v.len(), 384, "{text}");
        assert_eq!(v[0].to_bits(), *want_first, "{text}: first component");
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        assert_eq!(hex(&sha256(&bytes)), *want_sha, "{text}: vector bits");
    }
}

#[test]
fn l12_logits_have_the_bits_of_python_onnxruntime() {
    let mut ce =
        FastembedCrossEncoder::open("ms-marco-MiniLM-L-12-v2").unwrap_or_else(|e| panic!("{e}"));
    let got = ce.score(QUERY, &PASSAGES).unwrap();
    for ((passage, want), s) in PASSAGES.iter().zip(python_logits()).zip(&got) {
        assert_eq!(s.to_bits(), want, "{passage}: got {s}");
    }
}
