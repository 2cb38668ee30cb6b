//! A fine-tuned rerank stage (`rerank: { model, shortlist, finetune: { .. } }`) in a replay:
//! the suite's tasks split into folds ([`crate::finetune::folds_with_merges`]), one model trained per fold
//! on the other folds' pairs and the suite's merges, each fold's tasks scored by its own model.
//!
//! Each fold's model is identified by a key: the sha256 of the starting model's identity, the
//! training settings and every training pair in order. It is trained once and kept in the cache
//! (`<cache>/finetuned/<key>.bin`, see `ranklab_engine::rerank::finetuned`), checked on load; a
//! broken or foreign file is said and trained again, never used. A fold model scores its pairs
//! through the score cache under its own identity (`finetuned:<key>`), so a warm replay neither
//! trains nor scores.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use ranklab_engine::models::remote::{Remote, Shard, WorkKind, WorkRequest};
use ranklab_engine::models::{ModelDir, ModelStore};
use ranklab_engine::ranking::Hit;
use ranklab_engine::rerank::bert::{dequantize, tokenizer, Weights};
use ranklab_engine::rerank::finetune::{pairs_input, Hyper, Pair};
use ranklab_engine::rerank::finetuned::{self, FinetunedCrossEncoder};
use ranklab_engine::rerank::int8::{self, Int8FinetunedCrossEncoder};
use ranklab_engine::rerank::train_hand::train;
use ranklab_engine::rerank::{LazyCrossEncoder, ScoreCache};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{best_sections, first_stage_of, Replayer, RerankModel};
use crate::finetune::{folds_with_merges, Fold, TaskData};
use crate::suite::{Configuration, FinetuneSpec, Precision, Suite};

/// The models fine-tuning starts from: the MiniLM cross-encoder architecture the float model
/// implements (`ranklab_engine::rerank::bert`).
pub const SUPPORTED: &[&str] = &["ms-marco-MiniLM-L-12-v2"];

/// What joins a fine-tuned stage's starting model and its folds' identities in the identity a
/// report's Models table and the cost file show (`<base>, fine-tuned per fold: finetuned:<key>, …`).
pub const PER_FOLD: &str = ", fine-tuned per fold: ";

/// Tokens per training pair (longest-first truncation); scoring reads up to 512, as the ONNX
/// model does.
const TRAIN_MAX_LENGTH: usize = 256;

/// How one fold's training went: kept with its weights, shown in the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoldRecord {
    /// Training pairs.
    pub pairs: usize,
    /// Mean loss of each epoch.
    pub epoch_losses: Vec<f64>,
    /// Mean loss of each step.
    pub step_losses: Vec<f64>,
    /// Wall-clock seconds of each epoch, on the machine that trained it.
    pub epoch_seconds: Vec<f64>,
    /// Threads the matrix products ran on.
    pub threads: usize,
}

/// One fold's scorer: the tasks it reranks and its model with its score cache.
pub struct FoldModel {
    /// Task indices it reranks (held out of its training).
    pub tasks: Vec<usize>,
    /// The scorer and its score cache.
    pub model: RerankModel,
}

/// A fine-tuned stage of one configuration: what it trained (for the report) and its folds'
/// scorers, in fold order.
pub struct Tuned {
    /// What it trained.
    pub summary: Summary,
    /// The folds' scorers, in the order of `summary.folds`.
    pub folds: Vec<FoldModel>,
}

/// The training settings of `spec`.
pub fn hyper(spec: &FinetuneSpec) -> Hyper {
    hyper_of(spec.epochs, spec.batch, spec.lr, spec.seed)
}

/// The training settings of a stage's `epochs`, `batch`, `lr` and `seed` (the defaults of
/// [`Hyper`] where not given); what `ranklab work finetune` trains with.
pub fn hyper_of(epochs: usize, batch: Option<usize>, lr: Option<f64>, seed: u64) -> Hyper {
    let d = Hyper::default();
    Hyper {
        epochs,
        batch: batch.unwrap_or(d.batch),
        lr: lr.unwrap_or(d.lr),
        max_length: TRAIN_MAX_LENGTH,
        seed,
        ..d
    }
}

/// The identity of the starting model `id` in the fold models' keys: `<id> onnx-sha256=<sha>`.
pub fn base_identity(store: &ModelStore, id: &str) -> Result<String> {
    Ok(store
        .describe(id)
        .map(|m| format!("{} onnx-sha256={}", m.id, m.sha256))?)
}

/// Trains a model from `start` on `pairs` with `h` and gives its key, model file and training
/// record: what a replay does for a fold missing from the cache, and what `ranklab work
/// finetune` does on a cluster's worker (`base` is the starting model's [`base_identity`]).
pub fn train_file(
    start: &Weights,
    base: &str,
    pairs: &[Pair],
    tok: &tokenizers::Tokenizer,
    h: &Hyper,
    what: &str,
) -> Result<(String, Vec<u8>, FoldRecord)> {
    let key = model_key(base, h, pairs);
    let (weights, record) = train_fold(start, pairs, tok, h, what)?;
    let json = serde_json::to_value(&record).expect("a record serializes");
    let file = finetuned::to_bytes(&key, &weights, &json)?;
    Ok((key, file, record))
}

/// The key of a model trained from `base` with `h` on `pairs`.
pub fn model_key(base: &str, h: &Hyper, pairs: &[Pair]) -> String {
    let mut s = Sha256::new();
    s.update(format!(
        "ranklab-finetune {}\n{base}\n{h:?}\n",
        ranklab_engine::rerank::finetune::TRAINER_VERSION
    ));
    for p in pairs {
        s.update(p.query.as_bytes());
        s.update([0]);
        s.update(p.passage.as_bytes());
        s.update(format!("\0{}\n", p.label));
    }
    let digest = s.finalize();
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A query as training data: its grades, its first-stage list, its positives' passages.
fn task_data(
    engine: &Replayer,
    id: &str,
    query: &str,
    judged: &std::collections::BTreeMap<String, i32>,
    list: &[Hit],
) -> Result<TaskData> {
    let corpus = engine.corpus;
    let ranked = list
        .iter()
        .map(|h| {
            (
                corpus.id(h.doc).to_string(),
                corpus.passage(h.doc, h.section).to_string(),
            )
        })
        .collect();
    // Each relevant document's passage: its best BM25 section for the query (one search).
    let (docs, mut hits): (Vec<String>, Vec<Hit>) = judged
        .iter()
        .filter(|(_, &grade)| grade >= 1)
        .filter_map(|(doc, _)| {
            let i = corpus.index_of(doc)?;
            Some((
                doc.clone(),
                Hit {
                    doc: i,
                    score: 0.0,
                    section: 0,
                },
            ))
        })
        .unzip();
    best_sections(engine, query, &mut hits)?;
    let positives = docs
        .into_iter()
        .zip(&hits)
        .map(|(doc, h)| (doc, corpus.passage(h.doc, h.section).to_string()))
        .collect();
    Ok(TaskData {
        id: id.to_string(),
        query: query.to_string(),
        judged: judged.clone(),
        ranked,
        positives,
    })
}

/// What training a fine-tuned stage's folds needs besides the folds: the stage, the starting
/// model, its identity and settings, and the cache folder the fold models go to.
struct Training<'a> {
    configuration: &'a str,
    model: &'a str,
    /// `file: configuration "name"`, for errors.
    at: &'a str,
    model_dir: &'a Path,
    base: &'a str,
    hyper: Hyper,
    folds: usize,
    cache_dir: &'a Path,
}

/// Trains the folds that have no record (`records[i]` is `None`): on the engine's cluster if it
/// has one, else here, each model written to the cache, its record filled in. A fold whose
/// weights are not here but whose head is (carried from another machine with its scores, `just
/// beir-finetune-keep`) has its record from the head, and its model is trained again only if a
/// pair misses the score cache (the same key, so the same weights).
fn train_missing(
    engine: &Replayer,
    t: &Training,
    folds: &[Fold],
    keys: &[String],
    records: &mut [Option<FoldRecord>],
) -> Result<()> {
    let at = t.at;
    let missing: Vec<usize> = (0..folds.len()).filter(|&i| records[i].is_none()).collect();
    if let (Some(remote), false) = (&engine.remote, missing.is_empty()) {
        let asked: Vec<(usize, &[Pair])> = missing
            .iter()
            .map(|&i| (i, folds[i].pairs.as_slice()))
            .collect();
        let trained = train_on_cluster(
            remote.as_ref(),
            t.model,
            &t.hyper,
            &asked,
            keys,
            t.cache_dir,
        )
        .with_context(|| format!("{at}: training the folds on the cluster"))?;
        for (i, record) in trained {
            records[i] = Some(record);
        }
    } else if !missing.is_empty() {
        let start = dequantize(&t.model_dir.join("model.onnx"))?;
        let tok = tokenizer(t.model_dir, 512)?;
        for &fi in &missing {
            let what = format!(
                "fine-tuning {} fold {}/{}",
                t.configuration,
                fi + 1,
                t.folds
            );
            let (key, file, record) = finetuned::train_on_every_core(|| {
                train_file(&start, t.base, &folds[fi].pairs, &tok, &t.hyper, &what)
            })
            .with_context(|| format!("{at}: fold {}", fi + 1))?;
            ranklab_engine::atomic::write(&finetuned::path_of(t.cache_dir, &key), &file)?;
            records[fi] = Some(record);
        }
    }
    Ok(())
}

/// Trains (or loads) the fold models of configuration `c` of the experiments file
/// `experiments`, whose first-stage list of task `i` is `lists[i]`.
pub fn prepare(
    engine: &Replayer,
    suite: &Suite,
    experiments: &Path,
    c: &Configuration,
    lists: &[&[Hit]],
) -> Result<Tuned> {
    let r = c.rerank.as_ref().expect("a fine-tuned stage");
    let spec = r.finetune.expect("a fine-tuned stage");
    let at = format!("{}: configuration {:?}", experiments.display(), c.name);
    if !SUPPORTED.contains(&r.model.as_str()) {
        bail!(
            "{at}: fine-tuning starts from {} (the MiniLM cross-encoder architecture ranklab trains), not {}",
            SUPPORTED.join(", "),
            r.model
        );
    }
    let tasks = suite
        .tasks
        .iter()
        .zip(lists)
        .map(|(t, l)| task_data(engine, &t.id, &t.query, &t.expected, l))
        .collect::<Result<Vec<_>>>()?;
    check_data(&at, &spec, &tasks)?;
    let (merges, merges_file) = merge_data(engine, suite, c)?;
    let store = ModelStore::open_default()?;
    let dir = store.ensure_model(&r.model)?;
    let base = base_identity(&store, &r.model)?;
    let h = hyper(&spec);
    let folds = folds_with_merges(&tasks, &merges, spec.folds, spec.negatives, spec.seed);
    let cache_dir = store.root().join("finetuned");
    let keys: Vec<String> = folds
        .iter()
        .map(|f| model_key(&base, &h, &f.pairs))
        .collect();
    let mut records = keys
        .iter()
        .map(|k| load_record(&cache_dir, k))
        .collect::<Vec<_>>();
    let training = Training {
        configuration: &c.name,
        model: &r.model,
        at: &at,
        model_dir: &dir.path,
        base: &base,
        hyper: h,
        folds: spec.folds,
        cache_dir: &cache_dir,
    };
    let trained = train_missing(engine, &training, &folds, &keys, &mut records);
    // The trainer keeps its workspace for the next fold (rerank::train_hand::SPARE): no more
    // folds of this stage now, so free it before scoring.
    ranklab_engine::rerank::train_hand::release_workspace();
    trained?;
    let (mut out, mut summaries) = (Vec::with_capacity(folds.len()), Vec::new());
    for (fi, ((fold, key), record)) in folds.into_iter().zip(keys).zip(records).enumerate() {
        let again = Retrain {
            base: base.clone(),
            pairs: fold.pairs.clone(),
            hyper: h,
            what: format!(
                "fine-tuning {} fold {}/{} (its weights are not in the cache)",
                c.name,
                fi + 1,
                spec.folds
            ),
        };
        let calibration = calibration_pairs(&again.pairs);
        let scorer = fold_scorer(&cache_dir, &key, &dir, spec.precision, again, &calibration)?;
        let cache = ScoreCache::open(&store.scores_dir(), &scorer)?;
        summaries.push(FoldSummary {
            calibration,
            identity: fold_identity(&key, spec.precision, &dir),
            tasks: fold
                .held_out
                .iter()
                .map(|&i| suite.tasks[i].id.clone())
                .collect(),
            key,
            positives: fold.positives,
            merges: fold.merges,
            record: record.expect("every fold was loaded or trained above"),
        });
        out.push(FoldModel {
            tasks: fold.held_out,
            model: RerankModel {
                model: RefCell::new(scorer),
                cache,
                stats: RefCell::default(),
                tape: None,
            },
        });
    }
    Ok(Tuned {
        summary: Summary {
            configuration: c.name.clone(),
            model_key: r.model_key(),
            base,
            spec,
            hyper: h,
            merges_file,
            folds: summaries,
        },
        folds: out,
    })
}

/// The training record of the model `key` from its file, else from its head (see
/// `finetuned::load_head`), when one is there and sound; a broken or foreign file is said on
/// stderr and left for training to replace.
fn load_record(dir: &Path, key: &str) -> Option<FoldRecord> {
    let from_file = finetuned::load(dir, key).map(|found| found.map(|(_, record)| record));
    sound_record(from_file, &finetuned::path_of(dir, key)).or_else(|| {
        sound_record(
            finetuned::load_head(dir, key),
            &finetuned::head_path_of(dir, key),
        )
    })
}

/// The record in `found`, what reading the model file or head `path` gave, if it is sound.
fn sound_record(
    found: ranklab_engine::Result<Option<serde_json::Value>>,
    path: &Path,
) -> Option<FoldRecord> {
    match found {
        Ok(record) => record.and_then(|r| {
            serde_json::from_value(r)
                .map_err(|e| {
                    eprintln!(
                        "{}: its training record is not readable ({e}); training the model again",
                        path.display()
                    )
                })
                .ok()
        }),
        Err(e) => {
            eprintln!("{e}; training the model again");
            None
        }
    }
}

/// What trains a fold's model when its file is not in the cache as the first missed pair is
/// scored: the fold's training pairs and settings (the same key, so the same weights).
pub struct Retrain {
    /// The starting model's [`base_identity`].
    pub base: String,
    /// The fold's training pairs, in order.
    pub pairs: Vec<Pair>,
    /// The training settings.
    pub hyper: Hyper,
    /// The progress bar's label.
    pub what: String,
}

/// [`lazy_scorer`] of a fold the replay trained or found: retrained by `again` if its file is
/// gone, its int8 export calibrated on `calibration`.
fn fold_scorer(
    cache_dir: &Path,
    key: &str,
    dir: &ModelDir,
    precision: Option<Precision>,
    again: Retrain,
    calibration: &[(String, String)],
) -> Result<LazyCrossEncoder> {
    let calibration = Some(calibration.to_vec());
    lazy_scorer(cache_dir, key, dir, precision, Some(again), calibration)
}

/// The scorer identity of the fold model `key` scored at `precision` (`base`: the pinned
/// model it was trained from, whose graph an int8 export is written into).
pub fn fold_identity(key: &str, precision: Option<Precision>, base: &ModelDir) -> String {
    match precision {
        Some(Precision::Int8) => Int8FinetunedCrossEncoder::identity_of(key, &base.sha256),
        _ => FinetunedCrossEncoder::identity_of(key),
    }
}

/// The fold model `key` as a scorer at `precision`, loaded from its file on the first pair the
/// score cache misses (at int8, its export from the cache, exported first when missing or
/// broken, its biases corrected on `calibration`: without it, an error); when the file is
/// needed and not there, trained by `again` first (or, without it, an error).
pub fn lazy_scorer(
    cache_dir: &Path,
    key: &str,
    model: &ModelDir,
    precision: Option<Precision>,
    again: Option<Retrain>,
    calibration: Option<Vec<(String, String)>>,
) -> Result<LazyCrossEncoder> {
    let (cache_dir, key_owned, model) = (cache_dir.to_path_buf(), key.to_string(), model.clone());
    Ok(LazyCrossEncoder::new(
        fold_identity(key, precision, &model),
        Box::new(move || {
            let weights = || fold_weights(&cache_dir, &key_owned, &model.path, again.as_ref());
            if precision == Some(Precision::Int8) {
                return int8_fold_scorer(
                    &cache_dir,
                    &key_owned,
                    &model,
                    weights,
                    calibration.as_deref(),
                );
            }
            let tok = tokenizer(&model.path, 512)?;
            Ok(
                Box::new(FinetunedCrossEncoder::new(&key_owned, weights()?, tok)?)
                    as Box<dyn ranklab_engine::rerank::CrossEncoder>,
            )
        }),
    ))
}

/// An error of the fold model `key` (a model error, named by the fold's key).
fn fold_error(key: &str, message: String) -> ranklab_engine::Error {
    ranklab_engine::Error::Model {
        model: key.to_string(),
        message,
    }
}

/// The int8 export of the fold model `key` as a scorer: read from the cache, or exported first
/// (when missing or broken) from `weights` with its biases corrected on `calibration` (without
/// it, an error naming the fold).
fn int8_fold_scorer(
    cache_dir: &Path,
    key: &str,
    model: &ModelDir,
    weights: impl Fn() -> ranklab_engine::Result<Weights>,
    calibration: Option<&[(String, String)]>,
) -> ranklab_engine::Result<Box<dyn ranklab_engine::rerank::CrossEncoder>> {
    let model_error = |message: String| fold_error(key, message);
    let calibrated = || -> ranklab_engine::Result<int8::Quantized> {
        let pairs = calibration.ok_or_else(|| {
            model_error(format!("the int8 export of the fine-tuned model {key} is calibrated on its training pairs, which this command was not given"))
        })?;
        let tok = tokenizer(&model.path, 512)?;
        int8::calibrated(weights()?, &tok, pairs).map_err(|message| {
            model_error(format!(
                "cannot calibrate the int8 export of {key}: {message}"
            ))
        })
    };
    let export = int8::ensure_export(cache_dir, key, model, calibrated)?;
    Ok(Box::new(Int8FinetunedCrossEncoder::load(
        key,
        &model.sha256,
        &export,
    )?))
}

/// How many of a fold's training pairs calibrate its int8 export ([`calibration_pairs`]).
pub const CALIBRATION_PAIRS: usize = 64;

/// The calibration pairs of a fold's int8 export (`int8::calibrated`): [`CALIBRATION_PAIRS`]
/// of its training `pairs`, evenly spaced in training order (pair `i · n / 64` for `i` in
/// `0..64`; every pair when there are no more), relevant and not as the training drew them.
/// They follow from the training pairs, which the fold's key names, so the key and
/// [`int8::EXPORTER`] name the export.
pub fn calibration_pairs(pairs: &[Pair]) -> Vec<(String, String)> {
    let n = pairs.len();
    let take = n.min(CALIBRATION_PAIRS);
    (0..take)
        .map(|i| &pairs[i * n / take])
        .map(|p| (p.query.clone(), p.passage.clone()))
        .collect()
}

/// The weights of the fold model `key`: from its file under `cache_dir`, or trained by `again`
/// when the file is missing or broken (without `again`, an error).
fn fold_weights(
    cache_dir: &Path,
    key: &str,
    model_dir: &Path,
    again: Option<&Retrain>,
) -> ranklab_engine::Result<Weights> {
    let model_error = |message: String| fold_error(key, message);
    let loaded = match finetuned::load(cache_dir, key) {
        Ok(found) => found,
        Err(e) if again.is_some() => {
            eprintln!("{e}; training the model again");
            None
        }
        Err(e) => return Err(e),
    };
    match (loaded, again) {
        (Some((weights, _)), _) => Ok(weights),
        (None, None) => Err(model_error(
            "the fine-tuned model's file is gone from the cache; run again to train it".into(),
        )),
        (None, Some(t)) => {
            let start = dequantize(&model_dir.join("model.onnx"))?;
            let tok = tokenizer(model_dir, 512)?;
            let trained = finetuned::train_on_every_core(|| {
                train_file(&start, &t.base, &t.pairs, &tok, &t.hyper, &t.what)
            });
            ranklab_engine::rerank::train_hand::release_workspace();
            let (trained, file, _) = trained.map_err(|e| model_error(format!("{e:#}")))?;
            if trained != key {
                return Err(model_error(format!(
                    "training again gave the model {trained}, not {key}"
                )));
            }
            ranklab_engine::atomic::write(&finetuned::path_of(cache_dir, key), &file)?;
            Ok(finetuned::load(cache_dir, key)?
                .ok_or_else(|| model_error("the model just trained is not on disk".into()))?
                .0)
        }
    }
}

/// Trains one fold with a progress bar, timing each epoch.
fn train_fold(
    start: &Weights,
    pairs: &[Pair],
    tok: &tokenizers::Tokenizer,
    h: &Hyper,
    what: &str,
) -> Result<(Weights, FoldRecord)> {
    let per_epoch = pairs.len().div_ceil(h.batch);
    let pb = crate::progress::bar((per_epoch * h.epochs) as u64, what);
    let mut epoch_seconds = Vec::new();
    let mut since = Instant::now();
    let trained = train(start, pairs, tok, h, &mut |step, _, _| {
        pb.set_position(step as u64);
        if step % per_epoch == 0 {
            epoch_seconds.push(since.elapsed().as_secs_f64());
            since = Instant::now();
        }
    })?;
    pb.finish_and_clear();
    eprintln!(
        "{what}: {} pairs, loss per epoch {}, {}",
        pairs.len(),
        trained
            .epoch_losses
            .iter()
            .map(|l| format!("{l:.4}"))
            .collect::<Vec<_>>()
            .join(" → "),
        epoch_seconds
            .iter()
            .map(|s| format!("{s:.0} s"))
            .collect::<Vec<_>>()
            .join(" + ")
    );
    let record = FoldRecord {
        pairs: pairs.len(),
        epoch_losses: trained.epoch_losses,
        step_losses: trained.step_losses,
        epoch_seconds,
        threads: rayon::current_num_threads(),
    };
    Ok((trained.weights, record))
}

/// Trains the folds `asked` (fold index, its pairs) on the cluster, one Ray task per fold:
/// each worker runs `ranklab work finetune` from the same starting model with the same
/// settings. A returned model file is stored only once it verifies as the model asked for (its
/// key, which hashes the starting model, the settings and every pair, and its body's sha256);
/// anything else is refused and the fold is asked again (`cluster::Ray`). The folds' records,
/// by fold index.
fn train_on_cluster(
    remote: &dyn Remote,
    model: &str,
    h: &Hyper,
    asked: &[(usize, &[Pair])],
    keys: &[String],
    cache_dir: &Path,
) -> Result<Vec<(usize, FoldRecord)>> {
    let mut args = vec![
        "--epochs".to_string(),
        h.epochs.to_string(),
        "--batch".to_string(),
        h.batch.to_string(),
        "--lr".to_string(),
        format!("{:?}", h.lr),
        "--seed".to_string(),
        h.seed.to_string(),
    ];
    args.extend(["--max-length".to_string(), h.max_length.to_string()]);
    let work = WorkRequest {
        kind: WorkKind::Finetune,
        model: model.to_string(),
        args,
        identity: String::new(),
        shards: asked
            .iter()
            .map(|(_, pairs)| Shard {
                input: pairs_input(pairs),
                records: 1,
            })
            .collect(),
    };
    let mut out = Vec::new();
    remote.compute(&work, &mut |shard, bytes| {
        let fold = asked[shard].0;
        let record = finetuned::store(
            cache_dir,
            &keys[fold],
            bytes,
            &format!("the model file of fold {} from the cluster", fold + 1),
        )
        .map_err(|e| e.to_string())?;
        let record: FoldRecord = serde_json::from_value(record)
            .map_err(|e| format!("its training record is not readable ({e})"))?;
        out.push((fold, record));
        Ok(1)
    })?;
    Ok(out)
}

/// Refuses data training cannot be honest on: more folds than tasks, fewer than two tasks with
/// a positive, no task with a non-relevant candidate.
fn check_data(at: &str, spec: &FinetuneSpec, tasks: &[TaskData]) -> Result<()> {
    if spec.folds > tasks.len() {
        bail!(
            "{at}: finetune: folds {} is more than the suite's {} tasks; lower folds",
            spec.folds,
            tasks.len()
        );
    }
    let with_positive = tasks.iter().filter(|t| !t.positives.is_empty()).count();
    if with_positive < 2 {
        bail!(
            "{at}: finetune: {with_positive} task(s) have a relevant document in the corpus; training and scoring by fold need at least 2"
        );
    }
    let relevant = |t: &TaskData, id: &str| t.judged.get(id).is_some_and(|&g| g >= 1);
    if !tasks
        .iter()
        .any(|t| t.ranked.iter().any(|(id, _)| !relevant(t, id)))
    {
        bail!(
            "{at}: finetune: no task's first stage ranks a document that is not relevant, so there are no negatives to train on; raise the first stage's depth"
        );
    }
    Ok(())
}

/// The suite's merges (`merges.yaml` beside `suite.yaml`, when there is one) as training tasks,
/// each with the configuration's first-stage list of its query.
fn merge_data(
    engine: &Replayer,
    suite: &Suite,
    c: &Configuration,
) -> Result<(Vec<TaskData>, Option<PathBuf>)> {
    let path = suite.dir().join("merges.yaml");
    if !path.is_file() {
        return Ok((Vec::new(), None));
    }
    let merges = crate::suite::merges::Merges::load(&path, engine.corpus)?;
    let mut out = Vec::with_capacity(merges.merges.len());
    for m in &merges.merges {
        let list = first_stage_of(engine, c, &m.query)?;
        let judged = std::collections::BTreeMap::from([(m.expected.clone(), 1)]);
        out.push(task_data(engine, &m.id, &m.query, &judged, &list)?);
    }
    Ok((out, Some(path)))
}

/// What a fine-tuned stage trained, for the report.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The first configuration that names the stage.
    pub configuration: String,
    /// The stage's model key.
    pub model_key: String,
    /// The starting model's identity.
    pub base: String,
    /// The settings as written.
    pub spec: FinetuneSpec,
    /// The training settings.
    pub hyper: Hyper,
    /// The merges file trained on, if any.
    pub merges_file: Option<PathBuf>,
    /// The folds, in fold order.
    pub folds: Vec<FoldSummary>,
}

/// One fold, for the report.
#[derive(Debug, Clone)]
pub struct FoldSummary {
    /// Its scorer's identity (the score cache's key; the float or int8 model, see
    /// [`fold_identity`]).
    pub identity: String,
    /// Ids of the tasks it reranks.
    pub tasks: Vec<String>,
    /// Its model's key.
    pub key: String,
    /// Positive pairs among its training pairs.
    pub positives: usize,
    /// Merges whose pairs it was trained on.
    pub merges: usize,
    /// How its training went.
    pub record: FoldRecord,
    /// The pairs its int8 export is calibrated on ([`calibration_pairs`] of its training
    /// pairs).
    pub calibration: Vec<(String, String)>,
}

impl Tuned {
    /// Writes the fold models' score caches, prints their pair counts and notes each fold
    /// model that was loaded (to score a pair the cache missed) in `engine`'s loads.
    pub fn finish(&self, engine: &super::Replayer) -> Result<()> {
        for (i, f) in self.folds.iter().enumerate() {
            f.model.cache.flush()?;
            engine.fold_models.borrow_mut().push((
                format!(
                    "{} fold {}/{}",
                    self.summary.model_key,
                    i + 1,
                    self.folds.len()
                ),
                f.model.model.borrow().is_loaded(),
            ));
            eprintln!(
                "{} fold {}/{}: {}",
                self.summary.model_key,
                i + 1,
                self.folds.len(),
                f.model.stats.borrow()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(n: usize) -> Vec<Pair> {
        (0..n)
            .map(|i| Pair {
                query: format!("q{i}"),
                passage: format!("p{i}"),
                label: 0.0,
            })
            .collect()
    }

    /// Hand computation: of 140 pairs, pair ⌊i · 140 / 64⌋ for i in 0..64: 0, 2 (140 / 64 =
    /// 2.19), 4, 6, 8, 10 (700 / 64 = 10.9), 13 (840 / 64 = 13.1), …, the last ⌊63 · 140 / 64⌋
    /// = 137; of 10, all ten in order; of none, none.
    #[test]
    fn calibration_pairs_are_evenly_spaced_training_pairs() {
        let cal = calibration_pairs(&pairs(140));
        assert_eq!(cal.len(), CALIBRATION_PAIRS);
        let at: Vec<&str> = cal.iter().map(|(q, _)| q.as_str()).collect();
        assert_eq!(&at[..7], ["q0", "q2", "q4", "q6", "q8", "q10", "q13"]);
        assert_eq!(at[63], "q137");
        assert_eq!(cal[63].1, "p137");
        let all = calibration_pairs(&pairs(10));
        assert_eq!(
            all.iter().map(|(q, _)| q.clone()).collect::<Vec<_>>(),
            (0..10).map(|i| format!("q{i}")).collect::<Vec<_>>()
        );
        assert!(calibration_pairs(&[]).is_empty());
    }

    /// An int8 export needs its fold's calibration pairs: a scorer built without them is
    /// refused with a message naming the fold, before the weights are read, and nothing is
    /// written to the cache (the oracle: the message's words and the cache folder's contents).
    #[test]
    fn an_int8_export_without_calibration_pairs_is_refused_naming_the_fold() {
        let cache = tempfile::tempdir().unwrap();
        let base = tempfile::tempdir().unwrap();
        std::fs::write(base.path().join("model.onnx"), b"not read as a graph here").unwrap();
        let model = ModelDir {
            id: "ms-marco-MiniLM-L-12-v2".into(),
            kind: ranklab_engine::models::ModelKind::CrossEncoder,
            path: base.path().to_path_buf(),
            sha256: "0".repeat(64),
            max_length: 512,
            pooling: None,
            pinned: false,
        };
        let weights = || -> ranklab_engine::Result<Weights> {
            panic!("the weights are read only once the calibration pairs are there")
        };
        let err = int8_fold_scorer(cache.path(), "fold-key-7", &model, weights, None)
            .err()
            .expect("refused");
        let msg = err.to_string();
        assert!(
            msg.contains("fold-key-7") && msg.contains("was not given"),
            "{msg}"
        );
        let left: Vec<_> = std::fs::read_dir(cache.path()).unwrap().collect();
        assert!(left.is_empty(), "nothing written: {left:?}");
    }
}
