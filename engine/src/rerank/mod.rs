//! Cross-encoder rerank of a shortlist of first-stage candidates.
//!
//! - [`CrossEncoder`]: the trait; [`FastembedCrossEncoder`] runs the real ONNX model
//!   (ms-marco-MiniLM-L-12-v2 int8, raw logits), [`testing::OverlapCrossEncoder`] is the
//!   model-free stand-in for unit tests only.
//! - [`ColbertReranker`]: a late-interaction model (answerai-colbert-small-v1, MaxSim over
//!   token vectors, see its module) behind the same trait, so shortlists, the score cache and
//!   replays treat it as any pair scorer.
//! - [`LlmReranker`]: a GGUF language model (SmolLM2) run in-process with candle, scoring a
//!   pair by its yes/no answer to the [`prompt`] (see [`llm`]).
//! - [`prompt`]: the yes/no prompt of LLM rerankers (in-process and over an endpoint) and how
//!   a score is read from the answer position.
//! - [`int8`]: a fine-tuned fold model exported into the pinned int8 graph and scored through
//!   ONNX Runtime like the off-the-shelf model.
//! - [`LazyCrossEncoder`]: loads the model only when a pair misses the cache.
//! - [`ScoreCache`]: scores on disk keyed by cross-encoder identity, query sha256 and passage
//!   sha256; damaged entries are detected and recomputed.
//! - [`score_shortlist`] / [`ShortlistScores::rerank`] / [`rerank_shortlist`]: score the widest
//!   shortlist once, reorder any narrower prefix from the same scores.
//!
//! What is scored: for each candidate, the query against its best-matching section, defined as
//! the section that won the document its first-stage rank (`Hit.section`: the best BM25 or
//! cosine section; for a fused list, the section of the ranking that placed it highest). The
//! caller turns a hit into a [`Candidate`] (document id + passage text).
//!
//! Guarantees: only the first `width` hits move; they are ordered by `rerank_score` (descending,
//! `total_cmp`), ties keeping first-stage order; the hits below keep their first-stage order
//! after them, so recall beyond the width is unchanged. `Hit.score` (the first-stage
//! similarity) is never overwritten: the logit lives in [`RerankedHit::rerank_score`]. A
//! non-finite score is an [`crate::Error::NonFiniteScore`] naming the query and document.

pub mod bert;
mod cache;
mod colbert;
mod fastembed;
pub mod finetune;
pub mod finetuned;
mod fused;
pub mod grade;
pub mod grade_cache;
pub mod int8;
mod lazy;
pub mod llm;
pub mod prompt;
mod shortlist;
pub mod testing;
pub mod train_hand;
mod train_model;
mod train_opt;

pub use cache::{PairStats, ScoreCache, Scores, POOL_PAIRS};
pub use colbert::{
    maxsim, ColbertReranker, ColbertTokenizer, Encoded, TokenCache, TokenRows, TokenStats,
    TokenVectors, DOC_LEN, QUERY_LEN,
};
pub use fastembed::{CrossEncoderOptions, FastembedCrossEncoder};
pub use grade_cache::{GradeCache, GradeStats, Grades};
pub use lazy::{CrossEncoderLoader, LazyCrossEncoder};
pub use llm::{GgufTokenizer, LlmGrader, LlmReranker};
pub use shortlist::{
    rerank_shortlist, score_shortlist, score_shortlists, RerankedHit, ShortlistRequest,
    ShortlistScores,
};

use crate::Result;

/// A model that scores (query, passage) pairs.
pub trait CrossEncoder: Send {
    /// Everything that determines the scores: model id, model file sha256, max length,
    /// scoring scheme. Keys the score cache.
    fn identity(&self) -> &str;
    /// One score per passage, in order (higher is more relevant). A pair's score must not
    /// depend on the other passages.
    fn score(&mut self, query: &str, passages: &[&str]) -> Result<Vec<f32>>;
    /// The scores of several queries' passages, one list per request, each bit-identical to
    /// what `score(query, passages)` gives for that request alone. An implementation may run
    /// the requests' pairs together (so that parallel workers never wait at the end of one
    /// query's list); the default scores them one request after another.
    fn score_many(&mut self, requests: &[(&str, Vec<&str>)]) -> Result<Vec<Vec<f32>>> {
        requests.iter().map(|(q, p)| self.score(q, p)).collect()
    }
}

/// One shortlisted document: its id (for errors and reports) and the passage scored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The document id.
    pub doc_id: String,
    /// The text the cross-encoder scores against the query (shared: a passage reranked for
    /// many queries is one allocation).
    pub passage: std::sync::Arc<str>,
}

impl Candidate {
    /// The candidate of `hit` in `corpus`: the document id and the text of the section that
    /// won it its first-stage rank (`Document::section_text(hit.section)`, made once per
    /// corpus: [`Corpus::passage`](crate::corpus::Corpus::passage)).
    pub fn of(corpus: &crate::corpus::Corpus, hit: &crate::ranking::Hit) -> Candidate {
        Candidate {
            doc_id: corpus.docs[hit.doc].id.clone(),
            passage: corpus.passage(hit.doc, hit.section),
        }
    }
}
