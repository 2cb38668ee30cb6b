//! Task suites (`tasks/<suite>/suite.yaml`) and experiment files (`experiments.yaml`).
//!
//! Both are parsed with `yaml_serde` into closed, `deny_unknown_fields` structures (a typo is an
//! error naming the field, not a silently ignored setting), then checked: unique task ids and
//! configuration names, k >= 1, a baseline that exists, expected ids that exist in the corpus.
//! Every error names the file and line. The format is in `docs/formats.md`.

/// Where messages about a file's format send a user (`ranklab help formats` prints
/// docs/formats.md; `help_formats` is the CLI's, which `suite` must not import).
pub(crate) const SEE_FORMATS: &str = "see `ranklab help formats`";

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::fusion::RrfParams;
use ranklab_engine::lexical::{Analyzer, Bm25Params};
use ranklab_engine::policy::Wiring;
use ranklab_engine::yaml::Lines;
use serde::Deserialize;

use crate::judgments::Judgments;
pub use crate::judgments::{JudgmentCounts, Selection};
pub use crate::root::read_yaml;

pub mod beir;
mod depth;
mod discover;
pub mod distractors;
pub mod fusion;
pub(crate) mod merges;
mod names;

pub use depth::check_depth;
pub use discover::{experiment_files, suites};
pub use names::{
    check_names, configuration_file_names, experiment_file_names, load_experiments,
    recording_file_name, rerank_recording_file_name, OTHER_WRITERS,
};

/// Largest accepted cutoff; larger values are almost certainly a typo.
pub const MAX_K: usize = 10_000;

/// A loaded, checked task suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// Suite name.
    pub name: String,
    /// One line on what it measures.
    pub description: String,
    /// The suite file.
    pub path: PathBuf,
    /// The corpus directory, resolved against the suite file.
    pub corpus_path: PathBuf,
    /// Default cutoff.
    pub k: usize,
    /// The tasks, in file order.
    pub tasks: Vec<Task>,
    /// The judgments given with `ranklab judge` (`judgments.yaml` beside the suite file): in
    /// `judgments`, those merged into the tasks' `expected` (people's, and LLMs' when loaded with
    /// [`Selection::All`]); the rest of the file beside. None when there is no such file.
    pub judgments: Option<crate::judgments::Judgments>,
    /// The folder of `pool.yaml` and `judgments.yaml` when it is not the suite file's: a BEIR
    /// collection's report folder (`reports/beir/<name>/`), since the collection itself is
    /// read-only data. None: [`Suite::dir`].
    pub judging: Option<PathBuf>,
}

/// A (task, document) graded by a person and by an LLM ([`Suite::agreement_pairs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgreementPair {
    /// Task id.
    pub task: String,
    /// Document id.
    pub document: String,
    /// The person's grade and the LLM's.
    pub grades: crate::stats::agreement::GradePair,
}

/// One task: a query and its judged documents.
#[derive(Debug, Clone)]
pub struct Task {
    /// Task id (unique in the suite).
    pub id: String,
    /// The query text.
    pub query: String,
    /// Expected documents and their grades (>= 1 is relevant).
    pub expected: BTreeMap<String, i32>,
    /// Cutoff for this task.
    pub k: usize,
    /// Free text.
    pub note: Option<String>,
    /// Line of the task in the suite file.
    pub line: usize,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    suite: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    corpus: Option<PathBuf>,
    k: usize,
    /// The configurations the team ships (gated by default by `ranklab gate --update`).
    #[serde(default)]
    #[allow(dead_code)] // read by [`shipped`]
    ships: Vec<String>,
    tasks: Vec<RawTask>,
}

/// The configurations a suite file names under `ships:` (what `ranklab gate --update` gates
/// by default), with the line of each; empty when it names none.
pub fn shipped(suite: &Suite) -> Result<Vec<(String, usize)>> {
    #[derive(Deserialize)]
    struct Ships {
        #[serde(default)]
        ships: Vec<String>,
    }
    let (raw, text): (Ships, String) = read_yaml(&suite.path)?;
    let at = text
        .lines()
        .position(|l| l.starts_with("ships:"))
        .map_or(0, |i| i + 1);
    Ok(raw.ships.into_iter().map(|c| (c, at)).collect())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    id: String,
    query: String,
    expected: Expected,
    /// Documents judged not relevant (grade 0): judged, so not counted as unjudged.
    #[serde(default)]
    not_relevant: Vec<String>,
    k: Option<usize>,
    note: Option<String>,
}

impl RawTask {
    /// Checks one task of the suite file (`at`: its place, `file:line`) and resolves its
    /// judgments and cutoff (`default_k`: the suite's).
    fn check(self, default_k: usize, line: usize, at: &str) -> Result<Task> {
        if self.id.is_empty() || self.id.chars().any(|c| c.is_whitespace() || c.is_control()) {
            bail!(
                "{}: task id {:?} must be non-empty, without white space or control characters (it is the query id of the TREC runs)",
                at,
                self.id
            );
        }
        if self.query.trim().is_empty() {
            bail!("{}: task {:?} has an empty query", at, self.id);
        }
        let mut expected: BTreeMap<String, i32> = match self.expected {
            Expected::One(id) => [(id, 1)].into(),
            Expected::Many(ids) => ids.into_iter().map(|id| (id, 1)).collect(),
            Expected::Graded(m) => m,
        };
        for id in self.not_relevant {
            if expected.insert(id.clone(), 0).is_some() {
                bail!(
                    "{}: task {:?} lists {id:?} both in `expected` and in `not_relevant`; a document has one judgment",
                    at,
                    self.id
                );
            }
        }
        if !expected.values().any(|&g| g >= 1) {
            bail!(
                "{}: task {:?} expects no relevant document (give at least one id with grade >= 1)",
                at,
                self.id
            );
        }
        let k = self.k.unwrap_or(default_k);
        check_k(k).with_context(|| format!("{}: task {:?}", at, self.id))?;
        Ok(Task {
            id: self.id,
            query: self.query,
            expected,
            k,
            note: self.note,
            line,
        })
    }
}

/// `expected`: one id, a list of ids, or a map id -> grade.
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "`expected` must be an id, a list of ids, or a map of id to integer grade (quote ids that look like numbers)"
)]
enum Expected {
    One(String),
    Many(Vec<String>),
    Graded(BTreeMap<String, i32>),
}

impl Suite {
    /// Loads `path` (a suite.yaml, or a directory holding one), its tasks taking people's
    /// judgments only ([`Selection::Human`]): LLM grades in `judgments.yaml` change nothing
    /// unless a command asks for them ([`Suite::load_selected`]).
    pub fn load(path: &Path) -> Result<Self> {
        Suite::load_selected(path, Selection::Human)
    }

    /// Loads `path`, its tasks taking the grades of `judgments.yaml` that `selection` names.
    pub fn load_selected(path: &Path, selection: Selection) -> Result<Self> {
        let path = if path.is_dir() {
            path.join("suite.yaml")
        } else if path.is_file() {
            crate::root::explicit(path)
        } else {
            path.to_path_buf()
        };
        let (raw, text): (RawSuite, String) = read_yaml(&path)?;
        let lines = Lines::new(&text);
        let at = |line: usize| format!("{}:{line}", path.display());
        if !is_file_name(&raw.suite) {
            bail!(
                "{}: suite name {:?} must be non-empty, without white space or slashes, and not `.` or `..` (it names the report directory)",
                at(lines.of("suite", &raw.suite)),
                raw.suite
            );
        }
        check_k(raw.k).with_context(|| at(lines.of("k", &raw.k.to_string())))?;
        if raw.tasks.is_empty() {
            bail!(
                "{}: the suite has no tasks; add at least one under `tasks:`",
                path.display()
            );
        }
        let mut seen = HashSet::new();
        let mut tasks = Vec::with_capacity(raw.tasks.len());
        for t in raw.tasks {
            let line = lines.of("id", &t.id);
            if !seen.insert(t.id.clone()) {
                bail!(
                    "{}: duplicate task id {:?} (first on line {line}); task ids must be unique",
                    at(lines.nth("id", &t.id, 1)),
                    t.id
                );
            }
            tasks.push(t.check(raw.k, line, &at(line))?);
        }
        // Also for external engines: their ids are matched against the corpus (and the others
        // counted), and ranklab's stages after them read it.
        let Some(corpus) = raw.corpus else {
            bail!(
                "{}:1: no `corpus:`; every suite names its corpus (a folder of Markdown records, or a BEIR directory), also when its configurations are external engines: ranklab matches the ids an engine returns against it. For tasks that only name ids, write one record per id (front matter with `id:` and a `title:` suffices) ({})",
                path.display(),
                SEE_FORMATS
            );
        };
        let dir = path.parent().unwrap_or(Path::new("."));
        let judgments_path = dir.join(crate::judgments::FILE);
        let judgments = if judgments_path.is_file() {
            let j = crate::judgments::Judgments::load(&judgments_path, &raw.suite)?;
            Some(merge_judgments(&mut tasks, j, selection, &path)?)
        } else {
            None
        };
        Ok(Suite {
            name: raw.suite,
            description: raw.description,
            corpus_path: dir.join(corpus),
            k: raw.k,
            tasks,
            path,
            judgments,
            judging: None,
        })
    }

    /// Loads the suite's corpus and checks every expected id exists in it.
    pub fn load_corpus(&self) -> Result<Corpus> {
        let corpus = Corpus::load(&self.corpus_path).with_context(|| {
            let text = ranklab_engine::input::read_text(&self.path).unwrap_or_default();
            let line = text
                .lines()
                .position(|l| l.starts_with("corpus:"))
                .map_or(0, |i| i + 1);
            format!("{}:{line}: loading the corpus", self.path.display())
        })?;
        self.check_expected(&corpus)?;
        Ok(corpus)
    }

    /// Every expected id must name a document of the corpus.
    pub fn check_expected(&self, corpus: &Corpus) -> Result<()> {
        let text = ranklab_engine::input::read_text(&self.path).unwrap_or_default();
        for t in &self.tasks {
            for id in t.expected.keys() {
                if corpus.index_of(id).is_none() {
                    if let Some(j) = self.judgments.as_ref().and_then(|j| {
                        j.judgments
                            .iter()
                            .find(|j| j.task == t.id && &j.document == id)
                            .map(|x| (j, x))
                    }) {
                        bail!(
                            "{}:{}: task {:?} judges unknown document id {id:?}; it is not in the corpus {} (remove the judgment, or restore the document)",
                            j.0.path.display(),
                            j.1.line,
                            t.id,
                            self.corpus_path.display()
                        );
                    }
                    // The line naming the id, searched from the task's own line.
                    let line = text
                        .lines()
                        .enumerate()
                        .skip(t.line.saturating_sub(1))
                        .find(|(_, l)| l.contains(id.as_str()))
                        .map_or(t.line, |(i, _)| i + 1);
                    bail!(
                        "{}:{}: task {:?} expects unknown document id {id:?}; it is not in the corpus {} (check the spelling{})",
                        self.path.display(),
                        line,
                        t.id,
                        self.corpus_path.display(),
                        ranklab_engine::suggest::did_you_mean(id, corpus_ids(corpus))
                    );
                }
            }
        }
        Ok(())
    }

    /// The files `<prefix>*.yaml` beside the suite file (e.g. `experiments`, `paired`), sorted.
    pub fn files_named(&self, prefix: &str) -> Result<Vec<PathBuf>> {
        let dir = self.dir();
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let p = e?.path();
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if name.starts_with(prefix) && name.ends_with(".yaml") {
                out.push(p);
            }
        }
        out.sort();
        Ok(out)
    }

    /// How many of the tasks' judgments are people's and how many an LLM's (for a report's
    /// "N human / M LLM judgments"), and how many LLM grades the selection left out.
    pub fn judgment_counts(&self) -> JudgmentCounts {
        let total: usize = self.tasks.iter().map(|t| t.expected.len()).sum();
        let (llm, left_out) = self.judgments.as_ref().map_or((0, 0), |j| {
            (
                j.judgments.iter().filter(|g| g.is_llm()).count(),
                j.unselected.len(),
            )
        });
        JudgmentCounts {
            human: total - llm,
            llm,
            llm_left_out: left_out,
        }
    }

    /// For each LLM judge (`llm:<model>@<hash12>`), the (task, document)s it graded that a
    /// person graded too (in `suite.yaml` or `judgments.yaml`), with both grades: what the
    /// agreement of [`crate::stats::agreement`] is measured on. Task order, then document order.
    /// A person's grade outside 0..=3 (a suite file may grade on another scale) is left out.
    pub fn agreement_pairs(&self) -> BTreeMap<String, Vec<AgreementPair>> {
        let mut out: BTreeMap<String, Vec<AgreementPair>> = BTreeMap::new();
        let Some(j) = &self.judgments else {
            return out;
        };
        for t in &self.tasks {
            for (doc, &human) in &t.expected {
                if j.find(&t.id, doc).is_some_and(|g| g.is_llm()) {
                    continue; // an LLM's grade merged with --judgments all, not a person's
                }
                if !(0..=crate::judgments::MAX_GRADE).contains(&human) {
                    continue; // suite.yaml on another scale: not comparable with 0..=3
                }
                for g in j.all_llm().filter(|g| g.task == t.id && &g.document == doc) {
                    out.entry(g.judge.clone()).or_default().push(AgreementPair {
                        task: t.id.clone(),
                        document: doc.clone(),
                        grades: crate::stats::agreement::GradePair {
                            human: human as u8,
                            llm: g.grade as u8,
                        },
                    });
                }
            }
        }
        out
    }

    /// The directory of the suite file.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// The folder of the suite's `pool.yaml` and `judgments.yaml`: the suite file's, or a BEIR
    /// collection's report folder ([`Suite::judging`]).
    pub fn judging_dir(&self) -> &Path {
        self.judging.as_deref().unwrap_or_else(|| self.dir())
    }

    /// The same suite with its judgments selected as `selection` says: LLM grades of
    /// `judgments.yaml` merged into the tasks ([`Selection::All`]) or left out
    /// ([`Selection::Human`]), exactly as loading it with that selection would (the judgments in
    /// file order). Nothing is read again.
    pub fn reselect(&self, selection: Selection) -> Suite {
        let mut out = self.clone();
        let Some(j) = out.judgments.as_mut() else {
            return out;
        };
        match selection {
            Selection::All => {
                for g in std::mem::take(&mut j.unselected) {
                    if let Some(t) = out.tasks.iter_mut().find(|t| t.id == g.task) {
                        t.expected.insert(g.document.clone(), g.grade);
                    }
                    j.judgments.push(g);
                }
                j.judgments.sort_by_key(|g| g.line);
            }
            Selection::Human => {
                let (llm, human): (Vec<_>, Vec<_>) = std::mem::take(&mut j.judgments)
                    .into_iter()
                    .partition(crate::judgments::Judgment::is_llm);
                for g in &llm {
                    if let Some(t) = out.tasks.iter_mut().find(|t| t.id == g.task) {
                        t.expected.remove(&g.document);
                    }
                }
                j.judgments = human;
                j.unselected.extend(llm);
            }
        }
        out
    }
}

/// The ids of `corpus`'s documents (for "did you mean" suggestions).
pub fn corpus_ids(corpus: &Corpus) -> impl Iterator<Item = &str> {
    corpus.docs.iter().map(|d| d.id.as_str())
}

/// Merges `judgments.yaml` into the tasks: each judgment names a task of the suite; a human
/// one, a document the suite file does not judge already. An LLM grade of a document the suite
/// file judges is a conflict the suite file wins (listed, kept beside for agreement); LLM
/// grades are merged only when `selection` is [`Selection::All`]. Returns what was merged.
pub(crate) fn merge_judgments(
    tasks: &mut [Task],
    mut j: Judgments,
    selection: Selection,
    suite_path: &Path,
) -> Result<Judgments> {
    let (mut keep, mut overruled) = (Vec::new(), Vec::new());
    for g in std::mem::take(&mut j.judgments) {
        let in_suite = tasks
            .iter()
            .find(|t| t.id == g.task)
            .and_then(|t| Some((t.line, *t.expected.get(&g.document)?)));
        match in_suite {
            Some((line, grade)) if g.is_llm() => overruled.push((g, line, grade)),
            _ => keep.push(g),
        }
    }
    j.judgments = keep;
    for (g, line, grade) in overruled {
        j.conflicts.push(crate::judgments::Conflict {
            llm: g.clone(),
            human_grade: grade,
            human_at: format!("{}:{line}", suite_path.display()),
        });
        j.set(g, true);
    }
    let j = j.select(selection);
    for g in &j.judgments {
        let at = format!("{}:{}", j.path.display(), g.line);
        let Some(t) = tasks.iter_mut().find(|t| t.id == g.task) else {
            bail!(
                "{at}: unknown task {:?}; it is not in {} (remove the judgment, or restore the task{})",
                g.task,
                suite_path.display(),
                ranklab_engine::suggest::did_you_mean(&g.task, tasks.iter().map(|t| t.id.as_str()))
            );
        };
        if t.expected.contains_key(&g.document) {
            bail!(
                "{at}: task {:?}, document {:?} is already judged in {} (task at line {}); a document has one judgment: remove one of the two",
                g.task,
                g.document,
                suite_path.display(),
                t.line
            );
        }
        t.expected.insert(g.document.clone(), g.grade);
    }
    Ok(j)
}

/// Whether `name` can name a file or directory of the report tree: non-empty, no white space,
/// no path separator, not `.` or `..`.
fn is_file_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

fn check_k(k: usize) -> Result<()> {
    if k == 0 {
        bail!("k = 0: the cutoff must be at least 1");
    }
    if k > MAX_K {
        bail!("k = {k} is larger than {MAX_K}; use a cutoff no larger than the run depth");
    }
    Ok(())
}

/// The first-stage retriever of a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Retriever {
    /// tantivy BM25 only.
    Bm25,
    /// Bi-encoder only.
    Dense,
    /// RRF of BM25 and the bi-encoder.
    Fusion,
    /// An engine outside ranklab (`engine:`), see [`crate::external`].
    External,
}

/// A second stage: a cross-encoder, a late-interaction model, an in-process LLM or an LLM
/// behind an OpenAI-compatible endpoint reorders the first `shortlist` candidates.
///
/// Written as `{ model: ID, shortlist: N }` (cross-encoder or late-interaction model),
/// `{ llm: ID, shortlist: N, prompt: FILE }` (an LLM run in-process) or
/// `{ llm: { endpoint: URL, model: NAME, api: completions | chat | rerank }, shortlist: N }`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RerankFields")]
pub struct RerankSpec {
    /// The model id (see `ranklab models list`), or the endpoint's model name.
    pub model: String,
    /// What scores the pairs.
    pub scorer: Scorer,
    /// The LLM prompt's user-message template (`llm:` only), relative to the experiments file;
    /// `None`: the documented default (`ranklab_engine::rerank::prompt`).
    pub prompt: Option<PathBuf>,
    /// How many fused candidates it reorders.
    pub shortlist: usize,
    /// Pairs per model run (default 1: every score independent of the others, so scores and
    /// reports are the same whatever else is scored). Larger batches pad pairs to the longest
    /// of the batch and can move logits in the last bits; they are cached apart.
    pub batch: Option<usize>,
    /// Fine-tune the model on the suite's own tasks first, cross-validated by task
    /// (`model:` only; see [`crate::finetune`]).
    pub finetune: Option<FinetuneSpec>,
    /// `interpolate: α`: the shortlist ordered by α · reranker + (1 − α) · first stage, both
    /// normalized over the shortlist (`ranklab_engine::fusion::interpolate`); `None`: by the
    /// reranker alone.
    pub interpolate: Option<f64>,
}

/// `finetune: { folds, epochs, negatives, seed }` of a rerank stage: the suite's tasks split
/// into `folds` by a seeded shuffle, each fold's tasks reranked by a model trained on the
/// others' pairs (and the suite's merges) for `epochs`, with `negatives` hard negatives per
/// positive. `lr` (default 2e-5) and `batch` (pairs per step, default 16) are optional.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinetuneSpec {
    /// How many folds the tasks are split into (at least 2).
    pub folds: usize,
    /// Passes over the training pairs.
    pub epochs: usize,
    /// Hard negatives per positive.
    pub negatives: usize,
    /// Seed of the split and of the pairs' order.
    #[serde(default = "default_finetune_seed")]
    pub seed: u64,
    /// Peak learning rate.
    #[serde(default)]
    pub lr: Option<f64>,
    /// Pairs per optimizer step.
    #[serde(default)]
    pub batch: Option<usize>,
}

fn default_finetune_seed() -> u64 {
    42
}

impl FinetuneSpec {
    /// What is wrong with the numbers, for a message.
    pub fn check(&self) -> std::result::Result<(), String> {
        if self.folds < 2 {
            return Err(format!(
                "`finetune: folds: {}`: cross-validation needs at least 2 folds",
                self.folds
            ));
        }
        if self.epochs == 0 || self.negatives == 0 || self.batch == Some(0) {
            return Err("`finetune:` needs epochs, negatives and batch of at least 1".into());
        }
        if let Some(lr) = self.lr {
            if !(lr.is_finite() && lr > 0.0) {
                return Err(format!("`finetune: lr: {lr}` must be a positive number"));
            }
        }
        Ok(())
    }
}

/// What scores a rerank stage's pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scorer {
    /// A model of the catalogue run in-process by ONNX Runtime (`model:`).
    Model,
    /// An LLM of the catalogue run in-process (`llm: ID`): yes/no logits.
    Llm,
    /// An LLM (or a `/rerank` service) behind an HTTP endpoint (`llm: { endpoint: .. }`).
    Endpoint(LlmEndpoint),
}

/// An OpenAI-compatible endpoint as a rerank stage.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmEndpoint {
    /// Base URL (`http://127.0.0.1:8080/v1`); `${NAME}` is expanded from the environment when
    /// the request is made and never written.
    pub endpoint: String,
    /// The model name sent with each request.
    pub model: String,
    /// Which API: `completions` and `chat` read yes/no log-probabilities, `rerank` reads
    /// `results[{index, relevance_score}]`.
    pub api: LlmApi,
    /// Request headers; values may name `${NAME}` environment variables (expanded only for the
    /// request sent, never recorded).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Requests in flight (default 4).
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// Retries of a request after a connection error, timeout, 429 or 5xx (default 3).
    #[serde(default)]
    pub retries: Option<u32>,
    /// How long each phase of a request may take, in milliseconds (default 30000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// How many alternatives of the answer token to ask for (`completions`, `chat`; default
    /// 20): "yes" and "no" must both be among them.
    #[serde(default)]
    pub top_logprobs: Option<u32>,
    /// The query is cut to this many characters before it is sent (default 512).
    #[serde(default)]
    pub query_chars: Option<usize>,
    /// Each passage is cut to this many characters before it is sent (default 2048, about 512
    /// tokens of English), so that a long section cannot overflow the server's context.
    #[serde(default)]
    pub passage_chars: Option<usize>,
}

impl LlmEndpoint {
    /// Checks what needs no server: the URL's scheme, the limits, the `${NAME}` references.
    pub fn check(&self) -> std::result::Result<(), String> {
        use crate::engine_spec::http::MAX_CONCURRENCY;
        let e = &self.endpoint;
        if !(e.starts_with("http://") || e.starts_with("https://")) {
            return Err(format!(
                "`endpoint: {e}` must start with http:// or https:// (the base URL, e.g. \
                 http://127.0.0.1:8080/v1)"
            ));
        }
        match self.concurrency {
            Some(0) => return Err("`concurrency: 0`: write 1 or more (default 4)".into()),
            Some(c) if c > MAX_CONCURRENCY => {
                return Err(format!("`concurrency: {c}` is more than {MAX_CONCURRENCY}"))
            }
            _ => {}
        }
        if self.timeout_ms == Some(0) {
            return Err("`timeout_ms` must be at least 1".into());
        }
        if self.top_logprobs == Some(0) {
            return Err(
                "`top_logprobs: 0`: \"yes\" and \"no\" must be among the answer's \
                        alternatives; write 2 or more (default 20)"
                    .into(),
            );
        }
        for (name, v) in [
            ("query_chars", self.query_chars),
            ("passage_chars", self.passage_chars),
        ] {
            if v == Some(0) {
                return Err(format!(
                    "`{name}: 0` would send nothing; write 1 or more (the defaults are 512 \
                     for queries, 2048 for passages)"
                ));
            }
        }
        if self.api == LlmApi::Rerank && self.top_logprobs.is_some() {
            return Err(
                "`top_logprobs` belongs to `api: completions` or `chat`; `api: rerank` \
                        reads relevance scores"
                    .into(),
            );
        }
        for v in self.headers.values().chain([&self.endpoint]) {
            crate::engine_spec::env_refs(v).map_err(|e| format!("{e:#}"))?;
        }
        Ok(())
    }
}

/// The API of an [`LlmEndpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LlmApi {
    /// `POST /completions` with the ChatML prompt, `logprobs`.
    Completions,
    /// `POST /chat/completions` with the messages, `logprobs` + `top_logprobs`.
    Chat,
    /// `POST /rerank` (Cohere, Jina, Voyage, text-embeddings-inference).
    Rerank,
}

impl LlmApi {
    /// The API's name as the configuration writes it.
    pub fn name(self) -> &'static str {
        match self {
            LlmApi::Completions => "completions",
            LlmApi::Chat => "chat",
            LlmApi::Rerank => "rerank",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RerankFields {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    llm: Option<LlmField>,
    #[serde(default)]
    prompt: Option<PathBuf>,
    shortlist: usize,
    #[serde(default)]
    batch: Option<usize>,
    #[serde(default)]
    finetune: Option<FinetuneSpec>,
    #[serde(default)]
    interpolate: Option<f64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum LlmField {
    Id(String),
    Endpoint(LlmEndpoint),
}

impl TryFrom<RerankFields> for RerankSpec {
    type Error = String;

    fn try_from(f: RerankFields) -> std::result::Result<RerankSpec, String> {
        let (model, scorer) = match (f.model, f.llm) {
            (Some(m), None) => (m, Scorer::Model),
            (None, Some(LlmField::Id(id))) => (id, Scorer::Llm),
            (None, Some(LlmField::Endpoint(e))) => (e.model.clone(), Scorer::Endpoint(e)),
            (Some(_), Some(_)) => {
                return Err("a rerank stage names either `model:` (a cross-encoder or late-interaction model) or `llm:`, not both"
                    .into())
            }
            (None, None) => {
                return Err("a rerank stage needs `model: ID` or `llm: ID` (or `llm: { endpoint, model, api }`); see `ranklab models list`"
                    .into())
            }
        };
        if scorer == Scorer::Model && f.prompt.is_some() {
            return Err("`prompt:` belongs to an `llm:` rerank stage, not to `model:`".into());
        }
        if let Scorer::Endpoint(e) = &scorer {
            e.check()?;
            if e.api == LlmApi::Rerank && f.prompt.is_some() {
                return Err(
                    "`prompt:` has no effect on `api: rerank` (a /rerank service scores \
                            the query and the passage itself); remove it"
                        .into(),
                );
            }
        }
        if scorer != Scorer::Model && f.batch.is_some() {
            return Err(
                "`batch:` belongs to a `model:` rerank stage; an LLM scores each \
                        (query, passage) pair in its own forward pass"
                    .into(),
            );
        }
        if let Some(ft) = &f.finetune {
            if scorer != Scorer::Model {
                return Err("`finetune:` belongs to a `model:` rerank stage (a cross-encoder); an LLM or an endpoint is not trained here".into());
            }
            if f.batch.is_some() {
                return Err("`batch:` and `finetune:` cannot be combined: a fine-tuned model scores one pair per forward pass".into());
            }
            ft.check()?;
        }
        Ok(RerankSpec {
            model,
            scorer,
            prompt: f.prompt,
            shortlist: f.shortlist,
            batch: f.batch,
            finetune: f.finetune,
            interpolate: f.interpolate,
        })
    }
}

/// Largest cross-encoder batch accepted.
pub const MAX_BATCH: usize = 1024;

impl RerankSpec {
    /// Pairs per model run.
    pub fn batch(&self) -> usize {
        self.batch.unwrap_or(1)
    }

    /// The name of the loaded scorer this stage uses: the model id, with the batch size when it
    /// is not 1 (each distinct batch size is a separately loaded and cached model), with the
    /// prompt file when one is named, or the endpoint.
    pub fn model_key(&self) -> String {
        let mut key = match &self.scorer {
            Scorer::Endpoint(e) => format!("{} at {} ({})", self.model, e.endpoint, e.api.name()),
            _ => self.model.clone(),
        };
        if let Some(p) = &self.prompt {
            key.push_str(&format!(" (prompt {})", p.display()));
        }
        if let Some(f) = &self.finetune {
            key.push_str(&format!(
                " fine-tuned ({} folds, {} epochs, {} negatives, seed {}",
                f.folds, f.epochs, f.negatives, f.seed
            ));
            if let Some(lr) = f.lr {
                key.push_str(&format!(", lr {lr}"));
            }
            if let Some(b) = f.batch {
                key.push_str(&format!(", batch {b}"));
            }
            key.push(')');
        }
        match self.batch() {
            1 => key,
            b => format!("{key} (batch {b})"),
        }
    }

    /// A rerank stage of cross-encoder `model` (`{ model, shortlist }`).
    pub fn cross_encoder(model: &str, shortlist: usize) -> RerankSpec {
        RerankSpec {
            model: model.to_string(),
            scorer: Scorer::Model,
            prompt: None,
            shortlist,
            batch: None,
            finetune: None,
            interpolate: None,
        }
    }
}

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
            Retriever::Bm25 | Retriever::Fusion => Some(self.bm25().analyzer),
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

/// An experiments file: configurations to replay and the baseline they are compared with.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiments {
    /// Names the report (`reports/<suite>/<experiment>.md`).
    pub experiment: String,
    /// The configuration the others are compared with (default: the first).
    #[serde(default)]
    pub baseline: Option<String>,
    /// What the table says about the experiment (printed under its title).
    #[serde(default)]
    pub description: Option<String>,
    /// The configurations.
    pub configurations: Vec<Configuration>,
    /// Documents that are not the answer, drawn from another corpus, joining the suite's at
    /// growing sizes: the experiment also gets a corpus-size curve (`<experiment>.scale.md`).
    #[serde(default)]
    pub distractors: Option<distractors::Distractors>,
    /// The file it was read from.
    #[serde(skip)]
    pub path: PathBuf,
}

/// Checks one configuration of an experiments file (`path`); `at` is its `file:line`.
fn check_configuration(c: &Configuration, at: &str, path: &Path) -> Result<()> {
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
        f.check(at)?;
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
    match (&c.engine, c.retriever) {
        (None, Retriever::External) => bail!(
            "{at}: configuration {:?} has neither `retriever` (bm25 | dense | fusion) nor `engine` (an external engine, see docs/engines.md)",
            c.name
        ),
        (Some(_), r) if r != Retriever::External => bail!(
            "{at}: configuration {:?} has both `retriever` and `engine`; an external engine is the first stage, remove `retriever`",
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

impl Experiments {
    /// Whether a configuration fine-tunes its rerank stage (`finetune:`).
    pub fn fine_tunes(&self) -> bool {
        self.configurations
            .iter()
            .any(|c| c.rerank.as_ref().is_some_and(|r| r.finetune.is_some()))
    }

    /// Loads and checks an experiments file.
    pub fn load(path: &Path) -> Result<Self> {
        let (mut ex, text): (Experiments, String) = read_yaml(path)?;
        let lines = Lines::new(&text);
        ex.path = path.to_path_buf();
        if !is_file_name(&ex.experiment) {
            bail!(
                "{}:{}: experiment name {:?} must be non-empty, without white space or slashes, and not `.` or `..` (it names the report files)",
                path.display(),
                lines.of("experiment", &ex.experiment),
                ex.experiment
            );
        }
        if ex.configurations.is_empty() {
            bail!(
                "{}: no configurations; add at least one under `configurations:`",
                path.display()
            );
        }
        let mut seen = HashSet::new();
        for c in &ex.configurations {
            let at = format!("{}:{}", path.display(), lines.of("name", &c.name));
            if !seen.insert(c.name.as_str()) {
                bail!(
                    "{at}: duplicate configuration name {:?}; configuration names must be unique (they name the run files)",
                    c.name
                );
            }
            check_configuration(c, &at, path)?;
        }
        if let Some(d) = &ex.distractors {
            d.check(path, &text)?;
            if let Some(c) = ex.configurations.iter().find(|c| c.engine.is_some()) {
                bail!(
                    "{}:{}: configuration {:?} is an external engine, which searches its own index: it cannot search the suite's corpus joined by `distractors`; put it in another experiments file",
                    path.display(),
                    lines.of("name", &c.name),
                    c.name
                );
            }
        }
        match &ex.baseline {
            Some(b) if !seen.contains(b.as_str()) => bail!(
                "{}:{}: baseline {b:?} is not one of the configurations ({})",
                path.display(),
                lines.of("baseline", b),
                ex.configurations
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(_) => {}
            None => ex.baseline = Some(ex.configurations[0].name.clone()),
        }
        Ok(ex)
    }

    /// The practice file of a configuration, resolved against this file's directory.
    pub fn practice_path(&self, c: &Configuration) -> PathBuf {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        dir.join(
            c.practice
                .clone()
                .unwrap_or_else(|| PathBuf::from("search-practice.yaml")),
        )
    }

    /// The baseline configuration's name.
    pub fn baseline(&self) -> &str {
        self.baseline
            .as_deref()
            .unwrap_or(&self.configurations[0].name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(yaml: &str) -> Result<Experiments> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("experiments.yaml");
        std::fs::write(&path, yaml).unwrap();
        Experiments::load(&path)
    }

    const TWO_BATCHES: &str = "experiment: e\nbaseline: a\nconfigurations:\n  - name: a\n    retriever: bm25\n    rerank: { model: m, shortlist: 5 }\n  - name: b\n    retriever: bm25\n    rerank: { model: m, shortlist: 5, batch: 8 }\n";

    #[test]
    fn a_rerank_batch_is_read_and_names_a_separate_model() {
        let ex = load(TWO_BATCHES).unwrap();
        let specs: Vec<&RerankSpec> = ex
            .configurations
            .iter()
            .map(|c| c.rerank.as_ref().unwrap())
            .collect();
        assert_eq!((specs[0].batch(), specs[1].batch()), (1, 8));
        assert_eq!(specs[0].model_key(), "m");
        assert_eq!(specs[1].model_key(), "m (batch 8)");
    }

    #[test]
    fn a_rerank_batch_out_of_range_is_refused() {
        for bad in ["batch: 0", "batch: 1025"] {
            let err = load(&TWO_BATCHES.replace("batch: 8", bad)).unwrap_err();
            assert!(
                format!("{err:#}").contains("batch must be between 1 and 1024"),
                "{bad}: {err:#}"
            );
        }
    }

    #[test]
    fn a_rerank_with_a_wiring_is_refused() {
        for wiring in ["legacy", "current"] {
            let yaml = TWO_BATCHES.replace(
                "rerank: { model: m, shortlist: 5 }\n",
                &format!("rerank: {{ model: m, shortlist: 5 }}\n    wiring: {wiring}\n"),
            );
            let err = load(&yaml).unwrap_err();
            assert!(
                format!("{err:#}").contains("`rerank` and `wiring` cannot be combined"),
                "{wiring}: {err:#}"
            );
        }
    }
}

#[cfg(test)]
mod formats_reference {
    /// docs/formats.md names every field of the suite file (read from the serde types).
    #[test]
    fn formats_md_names_every_field() {
        let reference = include_str!("../../../docs/formats.md");
        ranklab_engine::yaml::shape::documented::<super::RawSuite>(reference, "Suite", &[])
            .unwrap();
    }
}

#[cfg(test)]
mod formats_reference_experiments {
    /// docs/formats.md names every field of an experiments file (read from the serde types);
    /// `engine:` (the external engines' fields) is docs/engines.md's, checked whole.
    #[test]
    fn formats_md_names_every_experiments_field() {
        let reference = include_str!("../../../docs/formats.md");
        let engines = include_str!("../../../docs/engines.md");
        let shape = ranklab_engine::yaml::shape::of::<crate::engine_spec::EngineSpec>();
        let elsewhere: Vec<&str> = shape
            .fields
            .keys()
            .chain(shape.variants.keys())
            .copied()
            .collect();
        ranklab_engine::yaml::shape::documented::<super::Experiments>(
            reference,
            "Experiments",
            &elsewhere,
        )
        .unwrap();
        ranklab_engine::yaml::shape::documented::<crate::engine_spec::EngineSpec>(engines, "", &[])
            .unwrap();
    }

    /// The tracer reaches the nested types (so the test above can fail): fields of `bm25:`,
    /// `rerank:` and `engine:`, and the values of `retriever` and `wiring`, as written here.
    #[test]
    fn the_experiments_shape_reaches_every_nested_type() {
        let names = ranklab_engine::yaml::shape::of::<super::Experiments>().names();
        for n in [
            "experiment",
            "practice",
            "k1",
            "analyzer",
            "lucene",
            "shortlist",
            "batch",
            "command",
            "http",
            "timeout_ms",
            "external",
            "legacy",
        ] {
            assert!(names.contains(n), "{n} not in {names:?}");
        }
    }
}
