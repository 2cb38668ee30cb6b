//! The tokenizer of a GGUF language model, built from the file's own metadata.
//!
//! Only the byte-level BPE of GPT-2's family (`tokenizer.ggml.model = "gpt2"`) is built, which is
//! SmolLM2's: the vocabulary (`tokenizer.ggml.tokens`, ids in order), the merges
//! (`tokenizer.ggml.merges`, `"a b"` in rank order), every token typed *control* (3) in
//! `tokenizer.ggml.token_type` added as a special token so that `<|im_start|>` and `<|im_end|>`
//! are single ids wherever they occur in the text, and the pre-tokenizer named by
//! `tokenizer.ggml.pre`. No prefix space is added (`tokenizer.ggml.add_space_prefix` must be
//! false or absent) and no BOS is prepended (`tokenizer.ggml.add_bos_token` must be false:
//! the ChatML prompt opens with its own `<|im_start|>`); a file saying otherwise is refused
//! rather than tokenized differently from llama.cpp.
//!
//! Pre-tokenizers known (llama.cpp's `llama-vocab.cpp` names and rules): `smollm` (and `gpt2`,
//! `starcoder`, which share its rule): every digit its own piece, then GPT-2's split
//! (`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`) — what the
//! model's Hugging Face `tokenizer.json` writes as `Digits(individual) + ByteLevel(no prefix
//! space)`. Another `pre` is an error naming it.
//!
//! candle's own GGUF tokenizer helper is not used: it adds a prefix space, which SmolLM2's
//! tokenizer does not.

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, Tokenizer};

use crate::{Error, Result};

/// `tokenizer.ggml.token_type` of a control token (llama.cpp's `LLAMA_TOKEN_TYPE_CONTROL`).
const CONTROL: i32 = 3;

/// Pre-tokenizer names whose rule is digits-apart + GPT-2's split (see the module docs).
const GPT2_DIGITS_PRE: &[&str] = &["smollm"];

/// A byte-level BPE tokenizer read from a GGUF file's metadata.
#[derive(Clone)]
pub struct GgufTokenizer {
    tokenizer: Tokenizer,
    tokens: Vec<String>,
}

impl std::fmt::Debug for GgufTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GgufTokenizer")
            .field("vocab", &self.tokens.len())
            .finish_non_exhaustive()
    }
}

fn meta<'a>(content: &'a Content, key: &str, model: &str) -> Result<&'a Value> {
    content.metadata.get(key).ok_or_else(|| Error::Model {
        model: model.to_string(),
        message: format!("the GGUF metadata has no {key}; ranklab reads the tokenizer from it"),
    })
}

fn strings(content: &Content, key: &str, model: &str) -> Result<Vec<String>> {
    let bad = |e: candle_core::Error| Error::Model {
        model: model.to_string(),
        message: format!("GGUF metadata {key}: {e}"),
    };
    meta(content, key, model)?
        .to_vec()
        .map_err(bad)?
        .iter()
        .map(|v| v.to_string().cloned().map_err(bad))
        .collect()
}

fn flag(content: &Content, key: &str) -> Option<bool> {
    content.metadata.get(key).and_then(|v| v.to_bool().ok())
}

impl GgufTokenizer {
    /// The tokenizer described by `content`'s metadata (`model` names the file in errors).
    pub fn from_gguf(content: &Content, model: &str) -> Result<GgufTokenizer> {
        let refuse = |message: String| Error::Model {
            model: model.to_string(),
            message,
        };
        let kind = meta(content, "tokenizer.ggml.model", model)?
            .to_string()
            .map_err(|e| refuse(e.to_string()))?;
        if kind != "gpt2" {
            return Err(refuse(format!(
                "tokenizer.ggml.model is {kind:?}; only byte-level BPE (\"gpt2\") is supported"
            )));
        }
        let pre = content
            .metadata
            .get("tokenizer.ggml.pre")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        if !GPT2_DIGITS_PRE.contains(&pre.as_str()) {
            return Err(refuse(format!(
                "tokenizer.ggml.pre is {pre:?}; ranklab builds only {GPT2_DIGITS_PRE:?}"
            )));
        }
        for key in [
            "tokenizer.ggml.add_bos_token",
            "tokenizer.ggml.add_space_prefix",
        ] {
            if flag(content, key) == Some(true) {
                return Err(refuse(format!(
                    "{key} is true; ranklab builds it only false"
                )));
            }
        }
        let tokens = strings(content, "tokenizer.ggml.tokens", model)?;
        let merges = strings(content, "tokenizer.ggml.merges", model)?;
        let types = meta(content, "tokenizer.ggml.token_type", model)?
            .to_vec()
            .map_err(|e| refuse(e.to_string()))?
            .iter()
            .map(|v| v.to_i32().map_err(|e| refuse(e.to_string())))
            .collect::<Result<Vec<i32>>>()?;
        let tokenizer = build(&tokens, &merges, &types).map_err(|e| refuse(e.to_string()))?;
        Ok(GgufTokenizer { tokenizer, tokens })
    }

    /// The ids of `text`, special tokens (`<|im_start|>` ...) read as single ids, nothing
    /// added before or after.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        Ok(self.encoding(text)?.get_ids().to_vec())
    }

    /// The full encoding of `text` (ids and byte offsets into `text`).
    pub fn encoding(&self, text: &str) -> Result<tokenizers::Encoding> {
        self.tokenizer
            .encode(text, false)
            .map_err(|e| Error::Model {
                model: "gguf tokenizer".into(),
                message: format!("tokenizing: {e}"),
            })
    }

    /// The text of token `id` (byte-level BPE decoded, so `Ġyes` is `" yes"`); invalid UTF-8
    /// (a token holding part of a character) is replaced.
    pub fn token_text(&self, id: u32) -> String {
        self.tokenizer
            .decode(&[id], false)
            .unwrap_or_else(|_| self.tokens.get(id as usize).cloned().unwrap_or_default())
    }

    /// The vocabulary size.
    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }
}

fn build(tokens: &[String], merges: &[String], types: &[i32]) -> tokenizers::Result<Tokenizer> {
    let vocab: Vocab = tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.clone(), i as u32))
        .collect();
    if vocab.len() != tokens.len() {
        return Err("the GGUF vocabulary repeats a token".into());
    }
    let merges = merges
        .iter()
        .map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| format!("merge {m:?} is not two tokens separated by a space"))
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    let bpe = BPE::builder().vocab_and_merges(vocab, merges).build()?;
    let mut tokenizer = Tokenizer::new(bpe);
    let pre = Sequence::new(vec![
        PreTokenizerWrapper::Digits(Digits::new(true)),
        PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, true)),
    ]);
    tokenizer.with_pre_tokenizer(Some(pre));
    tokenizer.with_decoder(Some(ByteLevelDecoder::default()));
    let special: Vec<AddedToken> = tokens
        .iter()
        .zip(types)
        .filter(|(_, &ty)| ty == CONTROL)
        .map(|(t, _)| AddedToken::from(t.clone(), true))
        .collect();
    tokenizer.add_special_tokens(special)?;
    Ok(tokenizer)
}
