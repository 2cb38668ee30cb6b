//! `ranklab work embed|score|grade|finetune`: the worker side of model work on a cluster. Reads a shard of
//! texts (or of queries with their passages), computes it with exactly the local code path (an
//! in-memory embedding or score cache over the same model and settings as a local run, so the
//! same batches) and writes a record file in the cache's format holding exactly the shard's keys.
//! A score shard's model is opened as a local rerank stage opens it ([`pair_scorer`]): a
//! cross-encoder or a late-interaction model (ColBERT, whose token vectors also go to this
//! node's token cache). A grade shard's model is an LLM judge, graded with the grading prompt
//! as `ranklab judge --llm` grades. The model must be installed on this machine: the command never
//! downloads one, and a missing file is an error naming it.

use crate::exit::Exit;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::replay::tuned;
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
    /// Fine-tune a cross-encoder (one fold of a fine-tuned rerank stage) on labelled pairs:
    /// --in holds `{"query": "...", "passage": "...", "label": 0 or 1}` lines in training
    /// order; --out gets the model file (`<cache>/finetuned/<key>.bin`'s format), its key the
    /// hash of the starting model, these settings and the pairs.
    Finetune(FinetuneArgs),
}

/// The settings of `ranklab work finetune`.
#[derive(Debug, clap::Args)]
struct FinetuneArgs {
    #[command(flatten)]
    files: Files,
    /// Passes over the pairs.
    #[arg(long)]
    epochs: usize,
    /// Pairs per optimizer step.
    #[arg(long)]
    batch: usize,
    /// Peak learning rate.
    #[arg(long)]
    lr: f64,
    /// Seed of the pairs' order.
    #[arg(long)]
    seed: u64,
    /// Tokens per training pair; must be the stage's (checked against it).
    #[arg(long)]
    max_length: usize,
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
pub(crate) fn run(args: WorkArgs) -> Result<Exit> {
    let store = ModelStore::open_default()?;
    match args.what {
        What::Embed(f) => embed(&store, &f)?,
        What::Score { files, batch } => score(&store, &files, batch)?,
        What::Grade(f) => grade(&store, &f)?,
        What::Finetune(a) => finetune(&store, &a)?,
    }
    Ok(Exit::Ok)
}

/// `work embed`: the shard's texts embedded into an in-memory cache, written as its records.
fn embed(store: &ModelStore, f: &Files) -> Result<()> {
    let bytes = read(f)?;
    let texts = parse_embed_input(&f.input.display().to_string(), &bytes)?;
    let dir = installed(store, &f.model)?;
    let options = EmbedderOptions {
        workers: f.workers.map(|w| w as usize),
        ..EmbedderOptions::default()
    };
    let mut e = FastembedEmbedder::load(&dir, &options)
        .with_context(|| format!("loading bi-encoder {}", f.model))?;
    let cache = EmbeddingCache::in_memory(&e);
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    cache.embed(&mut e, &refs)?;
    write(f, &cache.record_bytes())?;
    Ok(())
}

/// `work score`: every (query, passage) pair of the shard scored as a local rerank stage does.
fn score(store: &ModelStore, f: &Files, batch: u64) -> Result<()> {
    let bytes = read(f)?;
    let requests = parse_score_input(&f.input.display().to_string(), &bytes)?;
    installed(store, &f.model)?;
    let options = CrossEncoderOptions {
        batch_size: batch as usize,
        workers: f.workers.map(|w| w as usize),
        ..CrossEncoderOptions::default()
    };
    let mut ce = pair_scorer(store, &f.model, &options)?;
    let cache = ScoreCache::in_memory(&ce);
    let candidates: Vec<Vec<Candidate>> = requests
        .iter()
        .map(|(_, passages)| {
            passages
                .iter()
                .enumerate()
                .map(|(i, p)| Candidate {
                    doc_id: format!("passage {}", i + 1),
                    passage: p.as_str().into(),
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
    write(f, &cache.record_bytes())?;
    Ok(())
}

/// `work grade`: every pair graded 0-3 by an in-process LLM with the judging prompt.
fn grade(store: &ModelStore, f: &Files) -> Result<()> {
    let bytes = read(f)?;
    let requests = parse_score_input(&f.input.display().to_string(), &bytes)?;
    let dir = installed(store, &f.model)?;
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
    write(f, &cache.record_bytes())?;
    Ok(())
}

/// `work finetune`: one fold's model trained on the shard's labelled pairs.
fn finetune(store: &ModelStore, a: &FinetuneArgs) -> Result<()> {
    let f = &a.files;
    let bytes = read(f)?;
    let pairs = ranklab_engine::rerank::finetune::parse_pairs_input(
        &f.input.display().to_string(),
        &bytes,
    )?;
    let h = tuned::hyper_of(a.epochs, Some(a.batch), Some(a.lr), a.seed);
    if h.max_length != a.max_length {
        bail!(
            "--max-length {}: this ranklab trains on {} tokens per pair; \
             the driver and the workers must be the same ranklab",
            a.max_length,
            h.max_length
        );
    }
    if !tuned::SUPPORTED.contains(&f.model.as_str()) {
        bail!(
            "fine-tuning starts from {}, not {}",
            tuned::SUPPORTED.join(", "),
            f.model
        );
    }
    let dir = installed(store, &f.model)?;
    let base = tuned::base_identity(store, &f.model)?;
    let start = ranklab_engine::rerank::bert::dequantize(&dir.path.join("model.onnx"))?;
    let tok = ranklab_engine::rerank::bert::tokenizer(&dir.path, 512)?;
    // The settings' threads: a cluster's task has one CPU (the weights' bits do not
    // depend on the thread count).
    let threads = f.workers.map_or(0, |w| w as usize);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("starting the training threads")?;
    let (_, file, _) =
        pool.install(|| tuned::train_file(&start, &base, &pairs, &tok, &h, "fine-tuning a fold"))?;
    write(f, &file)?;
    Ok(())
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
