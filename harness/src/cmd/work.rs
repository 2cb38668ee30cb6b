//! `ranklab work embed|score|grade`: the worker side of model work on a cluster. Reads a shard of
//! texts (or of queries with their passages), computes it with exactly the local code path (an
//! in-memory embedding or score cache over the same model and settings as a local run, so the
//! same batches) and writes a record file in the cache's format holding exactly the shard's keys.
//! A score shard's model is opened as a local rerank stage opens it ([`pair_scorer`]): a
//! cross-encoder or a late-interaction model (ColBERT, whose token vectors also go to this
//! node's token cache). A grade shard's model is an LLM judge, graded with the grading prompt
//! as `ranklab judge --llm` grades. The model must be installed on this machine: the command never
//! downloads one, and a missing file is an error naming it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use ranklab_engine::dense::{EmbedderOptions, EmbeddingCache, FastembedEmbedder};
use ranklab_engine::models::remote::{parse_embed_input, parse_score_input};
use ranklab_engine::models::{pinned, ModelDir, ModelKind, ModelStore};
use ranklab_engine::rerank::{Candidate, CrossEncoderOptions, LazyCrossEncoder, ScoreCache};

/// Arguments of `ranklab work`.
#[derive(Debug, clap::Args)]
pub(crate) struct WorkArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// Embed texts with a bi-encoder: --in holds `{"text": "..."}` lines.
    Embed(Files),
    /// Score (query, passage) pairs with a cross-encoder or a late-interaction (ColBERT) model:
    /// --in holds `{"query": "...", "passages": ["...", ...]}` lines.
    Score {
        #[command(flatten)]
        files: Files,
        /// Pairs per model run (the cache identity includes it; 1, the default, is what every
        /// committed report uses).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        batch: u64,
    },
    /// Grade (query, passage) pairs 0-3 with an in-process LLM and the grading prompt of
    /// `ranklab judge --llm`: --in holds `{"query": "...", "passages": ["..."]}` lines.
    Grade(Files),
}

#[derive(Debug, clap::Args)]
struct Files {
    /// Model id (as in `ranklab models list`), installed under the cache root on this machine.
    #[arg(long)]
    model: String,
    /// The shard: JSON lines (`ranklab help formats`, "Work shards").
    #[arg(long = "in")]
    input: PathBuf,
    /// The record file to write (the cache's format; replaced atomically).
    #[arg(long)]
    out: PathBuf,
    /// Single-threaded model sessions (default: one per core). Not part of the identity: the
    /// bits do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    workers: Option<u64>,
}

/// Runs the command.
pub(crate) fn run(args: WorkArgs) -> Result<ExitCode> {
    let store = ModelStore::open_default()?;
    match args.what {
        What::Embed(f) => {
            let bytes = read(&f)?;
            let texts = parse_embed_input(&f.input.display().to_string(), &bytes)?;
            let dir = installed(&store, &f.model)?;
            let options = EmbedderOptions {
                workers: f.workers.map(|w| w as usize),
                ..EmbedderOptions::default()
            };
            let mut e = FastembedEmbedder::load(&dir, &options)
                .with_context(|| format!("loading bi-encoder {}", f.model))?;
            let cache = EmbeddingCache::in_memory(&e);
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            cache.embed(&mut e, &refs)?;
            write(&f, &cache.record_bytes())?;
        }
        What::Score { files: f, batch } => {
            let bytes = read(&f)?;
            let requests = parse_score_input(&f.input.display().to_string(), &bytes)?;
            installed(&store, &f.model)?;
            let options = CrossEncoderOptions {
                batch_size: batch as usize,
                workers: f.workers.map(|w| w as usize),
                ..CrossEncoderOptions::default()
            };
            let mut ce = pair_scorer(&store, &f.model, &options)?;
            let cache = ScoreCache::in_memory(&ce);
            let candidates: Vec<Vec<Candidate>> = requests
                .iter()
                .map(|(_, passages)| {
                    passages
                        .iter()
                        .enumerate()
                        .map(|(i, p)| Candidate {
                            doc_id: format!("passage {}", i + 1),
                            passage: p.clone(),
                        })
                        .collect()
                })
                .collect();
            let asked: Vec<(&str, &[Candidate])> = requests
                .iter()
                .zip(&candidates)
                .map(|((q, _), c)| (q.as_str(), c.as_slice()))
                .collect();
            cache.score_many(&mut ce, &asked, &mut |_, _| {})?;
            write(&f, &cache.record_bytes())?;
        }
        What::Grade(f) => {
            let bytes = read(&f)?;
            let requests = parse_score_input(&f.input.display().to_string(), &bytes)?;
            let dir = installed(&store, &f.model)?;
            if store.describe(&f.model)?.kind != ModelKind::Llm {
                bail!("model {} is not an llm: it cannot grade pairs", f.model);
            }
            let mut grader = ranklab_engine::rerank::LlmGrader::load(&dir)
                .with_context(|| format!("loading LLM {}", f.model))?;
            let cache = ranklab_engine::rerank::GradeCache::in_memory(
                ranklab_engine::rerank::grade::Grader::identity(&grader),
            );
            let pairs: Vec<(&str, &str)> = requests
                .iter()
                .flat_map(|(q, ps)| ps.iter().map(move |p| (q.as_str(), p.as_str())))
                .collect();
            cache.grade_all(&mut grader, &pairs, &mut |_, _| {})?;
            write(&f, &cache.record_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The pair scorer of model `id` with `options`, opened as a local rerank stage opens it (so
/// with the same identity, and the same bits): one arm per kind of model. An in-process LLM is
/// an arm with the default prompt template.
fn pair_scorer(
    store: &ModelStore,
    id: &str,
    options: &CrossEncoderOptions,
) -> Result<LazyCrossEncoder> {
    let kind = store.describe(id)?.kind;
    match kind {
        ModelKind::CrossEncoder | ModelKind::LateInteraction => {
            LazyCrossEncoder::open(store, id, options)
                .with_context(|| format!("loading {} {id}", kind.as_str()))
        }
        // The default prompt only: replay refuses `--cluster` for a stage with its own
        // `prompt:` file (the worker would ask another question).
        ModelKind::Llm => LazyCrossEncoder::open_llm(
            store,
            id,
            &ranklab_engine::rerank::prompt::PromptTemplate::default(),
        )
        .with_context(|| format!("loading LLM {id}")),
        ModelKind::BiEncoder => bail!(
            "model {id} is a bi-encoder: it embeds texts (`ranklab work embed`), it does not \
             score pairs"
        ),
    }
}

fn read(f: &Files) -> Result<Vec<u8>> {
    std::fs::read(&f.input).with_context(|| format!("reading the shard {}", f.input.display()))
}

fn write(f: &Files, bytes: &[u8]) -> Result<()> {
    ranklab_engine::atomic::write(&f.out, bytes)
        .with_context(|| format!("writing the record file {}", f.out.display()))
}

/// The installed, verified model `id`, never fetched: an error listing the files this machine
/// lacks (a worker must be given the model files, e.g. on a path every node shares).
fn installed(store: &ModelStore, id: &str) -> Result<ModelDir> {
    let path = store.model_path(id);
    if let Some(pin) = pinned(id) {
        let lacks: Vec<String> = pin
            .files
            .iter()
            .map(|f| path.join(f.name))
            .filter(|p| !p.is_file())
            .map(|p| p.display().to_string())
            .collect();
        if !lacks.is_empty() {
            bail!(
                "this worker lacks the files of model {id}: {}; install them here with \
                 `ranklab models fetch`, or point RANKLAB_CACHE at a cache every node shares",
                lacks.join(", ")
            );
        }
    }
    let model = store
        .model(id)
        .with_context(|| format!("model {id} on this worker"))?;
    store.runtime().with_context(|| {
        format!(
            "ONNX Runtime on this worker (expected under {})",
            store.runtime_dir().display()
        )
    })?;
    Ok(model)
}
