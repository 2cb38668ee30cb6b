//! One configuration of an experiments file: its first stage, its optional rerank stage and its
//! wiring, and the checks it must pass.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ranklab_engine::fusion::RrfParams;
use ranklab_engine::lexical::{Analyzer, Bm25Params};
use ranklab_engine::policy::Wiring;
use serde::Deserialize;

use super::{fusion, RerankSpec, Retriever, MAX_BATCH, MAX_K};

/// One configuration to replay.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Configuration {
    /// Name (unique in the file); names the run file.
    pub name: String,
    /// First stage (`external` when `engine` is given; then it may be left out).
    #[serde(default = "external_unless_given")]
    pub retriever: Retriever,
    /// An external engine as the first stage (command or HTTP adapter).
    #[serde(default)]
    pub engine: Option<crate::engine_spec::EngineSpec>,
    /// Bi-encoder model id (dense, fusion).
    #[serde(default)]
    pub embedder: Option<String>,
    /// BM25 parameters (default k1 0.9, b 0.4).
    #[serde(default)]
    pub bm25: Option<Bm25Params>,
    /// RRF constant (fusion; default 60).
    #[serde(default)]
    pub rrf_k: Option<f32>,
    /// How a fusion combines its lists (default RRF; `method: weighted` for a weighted sum).
    #[serde(default)]
    pub fusion: Option<fusion::FusionSpec>,
    /// Depth of each first-stage list (default 100).
    #[serde(default)]
    pub depth: Option<usize>,
    /// Optional cross-encoder stage.
    #[serde(default)]
    pub rerank: Option<RerankSpec>,
    /// Lifecycle policy wiring.
    #[serde(default)]
    pub wiring: Wiring,
    /// The practice file with the penalty weights (wiring legacy/current), relative to the
    /// experiments file (default: `search-practice.yaml` beside it).
    #[serde(default)]
    pub practice: Option<PathBuf>,
    /// The model file of `retriever: learned` (as `ranklab tune` writes it), relative to the
    /// experiments file.
    #[serde(default)]
    pub model: Option<PathBuf>,
    /// The shortlist a learned model's `cross-encoder` and `colbert` features are scored over
    /// (`retriever: learned` only; required when its model names them).
    #[serde(default)]
    pub shortlist: Option<super::learned::FeatureShortlist>,
    /// That model, read when the experiments file is read.
    #[serde(skip)]
    pub learned: Option<std::sync::Arc<ranklab_engine::learn::Model>>,
}

fn external_unless_given() -> Retriever {
    Retriever::External
}

/// Default depth of first-stage lists and of written runs.
pub const DEFAULT_DEPTH: usize = 100;
/// Default bi-encoder.
pub const DEFAULT_EMBEDDER: &str = "bge-small-en-v1.5";

impl Configuration {
    /// The configured depth.
    pub fn depth(&self) -> usize {
        self.depth.unwrap_or(DEFAULT_DEPTH)
    }
    /// BM25 parameters.
    pub fn bm25(&self) -> Bm25Params {
        self.bm25.unwrap_or_default()
    }
    /// RRF parameters.
    pub fn rrf(&self) -> RrfParams {
        RrfParams {
            k: self.rrf_k.unwrap_or(60.0),
            depth: self.depth(),
        }
    }
    /// The BM25 analyzer, when the retriever uses BM25 (bm25 and fusion).
    pub fn analyzer(&self) -> Option<Analyzer> {
        match self.retriever {
            Retriever::Bm25 | Retriever::Fusion | Retriever::Learned => Some(self.bm25().analyzer),
            Retriever::Dense | Retriever::External => None,
        }
    }
    /// The bi-encoder id, when the retriever uses one (dense and fusion).
    pub fn embedder(&self) -> Option<&str> {
        match self.retriever {
            Retriever::Bm25 | Retriever::External => None,
            _ => Some(self.embedder.as_deref().unwrap_or(DEFAULT_EMBEDDER)),
        }
    }
}

/// Checks one configuration of an experiments file (`path`); `at` is its `file:line`.
pub(super) fn check_configuration(c: &Configuration, at: &str, path: &Path) -> Result<()> {
    if c.name.is_empty()
        || c.name.contains(['/', '\\', '\0'])
        || c.name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        bail!("{at}: configuration name {:?} must be non-empty, without white space, control characters or slashes (it names a file and is printed in tables and on the terminal)", c.name);
    }
    if c.depth() == 0 || c.depth() > MAX_K {
        bail!("{at}: depth must be between 1 and {MAX_K}");
    }
    c.rrf().validate().with_context(|| at.to_string())?;
    if let Some(f) = &c.fusion {
        if c.retriever != Retriever::Fusion {
            bail!("{at}: `fusion:` needs `retriever: fusion`");
        }
        let interpolates = c.rerank.as_ref().is_some_and(|r| r.interpolate.is_some());
        f.check_with(c.rerank.is_some(), interpolates, at)?;
        f.check_rerankers(c.depth(), at)?;
    }
    if let Some(r) = &c.rerank {
        if r.shortlist == 0 {
            bail!("{at}: rerank shortlist must be at least 1");
        }
        if r.batch == Some(0) || r.batch() > MAX_BATCH {
            bail!("{at}: rerank batch must be between 1 and {MAX_BATCH}");
        }
        if let Some(p) = &r.prompt {
            let dir = path.parent().unwrap_or(Path::new("."));
            ranklab_engine::rerank::prompt::PromptTemplate::from_file(&dir.join(p))
                .with_context(|| format!("{at}: rerank prompt"))?;
        }
        if let Some(a) = r.interpolate {
            if !(0.0..=1.0).contains(&a) {
                bail!("{at}: rerank interpolate {a} must be between 0 and 1 (the reranker's weight α; the first stage gets 1 − α), e.g. `interpolate: 0.5`");
            }
        }
        if r.shortlist > c.depth() {
            bail!("{at}: rerank shortlist {} is larger than the first-stage depth {}; lower it or raise `depth`", r.shortlist, c.depth());
        }
        if c.wiring != Wiring::None {
            bail!("{at}: `rerank` and `wiring` cannot be combined: a reranked list mixes cross-encoder logits (inside the shortlist) with first-stage scores (below it), and a wiring would normalize across both scales; use one per configuration");
        }
    }
    match (&c.model, c.retriever) {
        (None, Retriever::Learned) => bail!("{at}: configuration {:?} is `retriever: learned` without `model:`; name a model file `ranklab tune` wrote, e.g. `model: ../../reports/<suite>/tune-<name>.model.json`", c.name),
        (Some(_), r) if r != Retriever::Learned => bail!("{at}: `model:` needs `retriever: learned`"),
        _ => {}
    }
    if c.retriever == Retriever::Learned && (c.fusion.is_some() || c.rrf_k.is_some()) {
        bail!("{at}: `retriever: learned` ranks by its model; remove `fusion:` and `rrf_k:`");
    }
    if let Some(s) = &c.shortlist {
        if c.retriever != Retriever::Learned {
            bail!("{at}: `shortlist:` names the shortlist of a learned model's cross-encoder and colbert features; it needs `retriever: learned` (a rerank stage's width is `rerank: {{ shortlist: N }}`)");
        }
        if s.width == 0 || s.width > c.depth() {
            bail!(
                "{at}: shortlist width {} must be between 1 and the depth {}",
                s.width,
                c.depth()
            );
        }
    }
    let fuses_engine = c
        .fusion
        .as_ref()
        .is_some_and(fusion::FusionSpec::names_engine);
    match (&c.engine, c.retriever) {
        (None, _) if fuses_engine => bail!(
            "{at}: configuration {:?} weighs the \"engine\" list and has no `engine:`; add the engine (as in an engine's own configuration, docs/engines.md) or remove the weight",
            c.name
        ),
        (Some(e), Retriever::Fusion) if fuses_engine => e
            .check()
            .with_context(|| format!("{at}: configuration {:?}", c.name))?,
        (None, Retriever::External) => bail!(
            "{at}: configuration {:?} has neither `retriever` (bm25 | dense | fusion | learned) nor `engine` (an external engine, see docs/engines.md)",
            c.name
        ),
        // A learned model with the `external` feature (checked against its model on load): the
        // engine's list is its feature, so no stage may reorder that list first.
        (Some(_), Retriever::Learned) if c.rerank.is_some() || c.wiring != Wiring::None => bail!(
            "{at}: configuration {:?}: `engine:` beside `retriever: learned` gives its model's external feature, and takes no `rerank:` or `wiring:`; remove them",
            c.name
        ),
        (Some(e), Retriever::Learned) => e
            .check()
            .with_context(|| format!("{at}: configuration {:?}", c.name))?,
        (Some(_), r) if r != Retriever::External => bail!(
            "{at}: configuration {:?} has both `retriever` and `engine`; an external engine is the first stage, remove `retriever` (or fuse its list: `retriever: fusion` with `fusion: {{ method: weighted, weights: {{ ..., engine: W }} }}`)",
            c.name
        ),
        (Some(e), _) => e
            .check()
            .with_context(|| format!("{at}: configuration {:?}", c.name))?,
        (None, _) => {}
    }
    let p = c.bm25();
    if !(p.k1.is_finite() && p.k1 >= 0.0 && (0.0..=1.0).contains(&p.b)) {
        bail!("{at}: bm25 needs k1 >= 0 and 0 <= b <= 1");
    }
    Ok(())
}
