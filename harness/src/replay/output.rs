//! What a replay produces: per configuration, every task's ranked list, and the models,
//! unjudged ids, external summaries and shortlists behind them.

use std::borrow::Cow;
use std::collections::BTreeMap;

use ranklab_engine::corpus::Corpus;
use ranklab_engine::policy::Weights;
use ranklab_engine::ranking::Hit;

use crate::suite::Configuration;

/// One ranked document of a configuration's output.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// Document index in the corpus.
    pub doc: usize,
    /// The score that orders the list (written to the run file).
    pub score: f32,
    /// The section that won the document its first-stage rank.
    pub section: usize,
    /// The cross-encoder logit, for documents in a rerank shortlist.
    pub rerank_score: Option<f32>,
}

/// What one configuration produced for every task.
#[derive(Debug, Clone)]
pub struct ConfigRun {
    /// The configuration.
    pub config: Configuration,
    /// Per task (suite order), the ranked list (at most the configuration's depth).
    pub per_task: Vec<Vec<Ranked>>,
    /// The penalty weights it ranked with (configurations with a wiring; None for the others).
    pub weights: Option<Weights>,
}

/// The result of a replay.
#[derive(Debug, Clone)]
pub struct Replay {
    /// Per configuration, in file order.
    pub runs: Vec<ConfigRun>,
    /// Identity (file sha256, settings) of every model used, by model id.
    pub models: BTreeMap<String, String>,
    /// Ids external engines returned that are not in the corpus: a [`Ranked::doc`] of
    /// `corpus.len() + i` names `unjudged[i]` (see [`Replay::corpus_view`]).
    pub unjudged: Vec<String>,
    /// What each external configuration did (file order).
    pub external: Vec<crate::external::Summary>,
    /// Per rerank model key, the shortlists it was asked to score: (task index, the widest
    /// shortlist's hits, best first), one per (task, first stage). What `bench --measure-costs`
    /// times the model on (`report::costs`).
    pub shortlists: BTreeMap<String, Vec<(usize, Vec<Hit>)>>,
    /// Under `--record` and `--from-recording`, the recording of each configuration whose
    /// rerank stage is an endpoint (file order).
    pub rerank_recordings: Vec<crate::external::rerank::tape::Recording>,
    /// What each fine-tuned rerank stage trained (file order of its first configuration).
    pub finetuned: Vec<crate::replay::tuned::Summary>,
}

impl Replay {
    /// The corpus the rankings index into: `corpus` itself, or, when an external engine
    /// returned ids the corpus does not hold, `corpus` followed by one text-less document per
    /// such id (unjudged: no task expects it).
    pub fn corpus_view<'a>(&self, corpus: &'a Corpus) -> Cow<'a, Corpus> {
        if self.unjudged.is_empty() {
            return Cow::Borrowed(corpus);
        }
        let mut docs = corpus.docs.clone();
        docs.extend(
            self.unjudged
                .iter()
                .map(|id| crate::external::stub_document(id)),
        );
        Cow::Owned(
            Corpus::new(corpus.root.clone(), docs)
                .expect("unjudged ids are absent from the corpus and unique"),
        )
    }
}

/// The hits of a ranked list (order, score and section; the rerank logit dropped).
pub fn as_hits(ranked: &[Ranked]) -> Vec<Hit> {
    ranked
        .iter()
        .map(|r| Hit {
            doc: r.doc,
            score: r.score,
            section: r.section,
        })
        .collect()
}

pub(super) fn plain(h: &Hit) -> Ranked {
    Ranked {
        doc: h.doc,
        score: h.score,
        section: h.section,
        rerank_score: None,
    }
}
