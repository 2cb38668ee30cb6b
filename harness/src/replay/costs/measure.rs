//! `ranklab bench --measure-costs`: times each rerank model of a suite on the pairs its
//! shortlists hold, and gives the [`Cost`] entries of the suite's cost file.
//!
//! Each model is timed in a scratch cache root whose `models/` and `runtime/` link to the real
//! ones, so every cache it keeps (scores, token vectors) starts empty, and through the code path
//! a replay takes ([`crate::replay::open_scorer`], [`ScoreCache::score_many`]):
//! 1. **load** — open the scorer and score one warm-up pair outside the measured set (the model
//!    verified and loaded, its sessions made);
//! 2. **cold** — every pair through an empty score cache, so the model computes each;
//! 3. **warm** — a fresh, unloaded scorer and the score cache reopened from its file: every
//!    pair served from it. The warm pass must load no model, score no pair and return the cold
//!    pass's scores bit for bit, or the measurement is refused.
//!
//! Nothing here writes a report; the caller writes the cost file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::models::ModelStore;
use ranklab_engine::rerank::{Candidate, CrossEncoder, LazyCrossEncoder, ScoreCache};

use super::Cost;
use crate::replay::Replay;
use crate::suite::{Experiments, RerankSpec, Suite};

/// The warm-up pair of the load step (not among any suite's pairs).
const WARM_UP: (&str, &str) = (
    "ranklab cost measurement: warm-up query",
    "A warm-up passage, scored once so that the model is loaded before the timed pairs.",
);

/// One rerank model's work on one suite: the pairs of every shortlist it scored.
pub struct Work {
    /// The model key (`RerankSpec::model_key`).
    pub key: String,
    /// The rerank stage that names it (the first configuration that does).
    pub spec: RerankSpec,
    /// The folder of that configuration's experiments file (`prompt:` files are relative to it).
    pub dir: PathBuf,
    /// The identity the replay used.
    pub identity: String,
    /// Per task (that has any), its query and its distinct candidates, in first-seen order.
    pub requests: Vec<(String, Vec<Candidate>)>,
    /// The task index of each request.
    pub tasks: Vec<usize>,
    /// A fine-tuned stage's folds: each fold model's key, the task indices it scores and its
    /// int8 export's calibration pairs (empty for any other model).
    pub folds: Vec<Fold>,
}

impl Work {
    /// Distinct pairs.
    pub fn pairs(&self) -> usize {
        self.requests.iter().map(|(_, c)| c.len()).sum()
    }
}

/// The work of every rerank model of a suite's replays (`replays[i]` of `experiments[i]`):
/// per task, the candidates of all its shortlists under that model, each passage once.
pub fn work_lists(
    corpus: &Corpus,
    suite: &Suite,
    experiments: &[Experiments],
    replays: &[Replay],
) -> Vec<Work> {
    let mut by_key: BTreeMap<String, Work> = BTreeMap::new();
    let mut per_task: BTreeMap<String, Vec<Vec<Candidate>>> = BTreeMap::new();
    for (ex, replay) in experiments.iter().zip(replays) {
        for (key, lists) in &replay.shortlists {
            if !by_key.contains_key(key) {
                let Some(spec) = ex
                    .configurations
                    .iter()
                    .filter_map(|c| c.rerank.as_ref())
                    .find(|r| &r.model_key() == key)
                else {
                    continue;
                };
                by_key.insert(
                    key.clone(),
                    Work {
                        key: key.clone(),
                        spec: spec.clone(),
                        dir: ex.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
                        identity: replay.models.get(key).cloned().unwrap_or_default(),
                        requests: Vec::new(),
                        tasks: Vec::new(),
                        folds: fold_tasks(suite, replay, key),
                    },
                );
            }
            let tasks = per_task
                .entry(key.clone())
                .or_insert_with(|| vec![Vec::new(); suite.tasks.len()]);
            for (ti, hits) in lists {
                for h in hits {
                    let c = Candidate::of(corpus, h);
                    if !tasks[*ti].iter().any(|x| x.passage == c.passage) {
                        tasks[*ti].push(c);
                    }
                }
            }
        }
    }
    for (key, tasks) in per_task {
        if let Some(w) = by_key.get_mut(&key) {
            (w.tasks, w.requests) = suite
                .tasks
                .iter()
                .zip(tasks)
                .enumerate()
                .filter(|(_, (_, c))| !c.is_empty())
                .map(|(i, (t, c))| (i, (t.query.clone(), c)))
                .unzip();
        }
    }
    by_key.into_values().collect()
}

/// The folds of the fine-tuned stage `key` of `replay` (none when it is not one): each fold
/// model's key and the indices of the tasks it scores.
fn fold_tasks(suite: &Suite, replay: &Replay, key: &str) -> Vec<Fold> {
    let Some(s) = replay.finetuned.iter().find(|s| s.model_key == key) else {
        return Vec::new();
    };
    s.folds
        .iter()
        .map(|f| {
            let tasks = suite
                .tasks
                .iter()
                .enumerate()
                .filter(|(_, t)| f.tasks.contains(&t.id))
                .map(|(i, _)| i)
                .collect();
            Fold {
                key: f.key.clone(),
                tasks,
                calibration: f.calibration.clone(),
            }
        })
        .collect()
}

/// One fold model of a fine-tuned stage: its key, the task indices it scores, and the pairs its
/// int8 export is calibrated on.
pub struct Fold {
    /// The fold model's key.
    pub key: String,
    /// Indices of the tasks it scores.
    pub tasks: Vec<usize>,
    /// Its int8 export's calibration pairs (`replay::tuned::calibration_pairs`).
    pub calibration: Vec<(String, String)>,
}

/// What the cost file records about where and how a measurement ran.
pub struct MeasureContext {
    /// The real cache root (its `models/` and `runtime/` are linked into the scratch root).
    pub cache_root: PathBuf,
    /// The command line, as `ranklab …`.
    pub command: String,
}

/// Times `work`'s model: load, cold, warm (see the module's doc). A fine-tuned stage is its
/// folds' models, each timed on its own tasks' pairs, the figures summed over the folds (the
/// load: every fold model's).
pub fn measure(work: &Work, ctx: &MeasureContext) -> Result<Cost> {
    let machine = crate::replay::query_costs::machine();
    let measured_at = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string();
    let scratch = scratch_root(&ctx.cache_root)?;
    let store = ModelStore::at(scratch.path());
    let asked: Vec<(&str, &[Candidate])> = work
        .requests
        .iter()
        .map(|(q, c)| (q.as_str(), c.as_slice()))
        .collect();
    let t = if work.folds.is_empty() {
        let open = || crate::replay::open_scorer(&store, &work.spec, &work.dir);
        time_scorer(work, &store, &open, &work.identity, &asked)?
    } else {
        let finetuned = ctx.cache_root.join("finetuned");
        let model_dir = store.ensure_model(&work.spec.model)?;
        let precision = work.spec.finetune.and_then(|f| f.precision);
        let mut sum = Timed::default();
        for Fold {
            key,
            tasks,
            calibration,
        } in &work.folds
        {
            let mine: Vec<(&str, &[Candidate])> = asked
                .iter()
                .zip(&work.tasks)
                .filter(|(_, ti)| tasks.contains(ti))
                .map(|(a, _)| *a)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let open = || {
                crate::replay::tuned::lazy_scorer(
                    &finetuned,
                    key,
                    &model_dir,
                    precision,
                    None,
                    Some(calibration.clone()),
                )
            };
            let identity = crate::replay::tuned::fold_identity(key, precision, &model_dir);
            let t = time_scorer(work, &store, &open, &identity, &mine)?;
            sum.load += t.load;
            sum.cold += t.cold;
            sum.warm += t.warm;
            sum.pairs += t.pairs;
        }
        sum
    };
    Ok(Cost {
        model: work.key.clone(),
        identity: work.identity.clone(),
        pairs: t.pairs,
        cold_ms_per_pair: t.cold.as_secs_f64() * 1e3 / t.pairs as f64,
        warm_ms_per_pair: t.warm.as_secs_f64() * 1e3 / t.pairs as f64,
        model_load_s: t.load.as_secs_f64(),
        measured_at,
        machine,
        command: ctx.command.clone(),
    })
}

/// One scorer's times on its pairs.
#[derive(Default)]
struct Timed {
    load: Duration,
    cold: Duration,
    warm: Duration,
    pairs: usize,
}

/// Times the scorer `open` gives (which must have `identity`) on `asked`: load, cold, warm.
fn time_scorer(
    work: &Work,
    store: &ModelStore,
    open: &dyn Fn() -> Result<LazyCrossEncoder>,
    identity: &str,
    asked: &[(&str, &[Candidate])],
) -> Result<Timed> {
    let started = Instant::now();
    let mut model = open()?;
    model
        .score(WARM_UP.0, &[WARM_UP.1])
        .with_context(|| format!("{}: the warm-up pair", work.key))?;
    let load = started.elapsed();
    if model.identity() != identity {
        bail!(
            "{}: the scorer opened for the measurement has identity {:?}, the replay used {:?}",
            work.key,
            model.identity(),
            identity
        );
    }

    let pb = crate::progress::bar(0, "cost (cold)");
    let cache = ScoreCache::open(&store.scores_dir(), &model)?;
    let started = Instant::now();
    let (cold_scores, cold) = cache.score_many(&mut model, asked, &mut |done, total| {
        pb.set_length(total as u64);
        pb.set_position(done as u64);
    })?;
    let cold_time = started.elapsed();
    pb.finish_and_clear();
    cache.flush()?;
    drop((cache, model));
    if cold.scored == 0 || cold.cached != 0 {
        bail!(
            "{}: the cold pass scored {} pairs and served {} from the cache; a cold pass computes every pair",
            work.key, cold.scored, cold.cached
        );
    }

    let mut model = open()?;
    let started = Instant::now();
    let cache = ScoreCache::open(&store.scores_dir(), &model)?;
    let (warm_scores, warm) = cache.score_many(&mut model, asked, &mut |_, _| {})?;
    let warm_time = started.elapsed();
    check_warm(
        work,
        &cold_scores,
        &warm_scores,
        warm.scored,
        model.is_loaded(),
    )?;
    Ok(Timed {
        load,
        cold: cold_time,
        warm: warm_time,
        pairs: cold.scored,
    })
}

/// The warm pass served every pair from the cache (no model loaded, none scored), each the
/// cold pass's score bit for bit.
fn check_warm(
    work: &Work,
    cold: &[Vec<f32>],
    warm: &[Vec<f32>],
    scored: usize,
    loaded: bool,
) -> Result<()> {
    if scored != 0 || loaded {
        bail!(
            "{}: the warm pass scored {scored} pairs (model loaded: {loaded}); the score cache did not keep the cold pass's scores",
            work.key
        );
    }
    let bits = |v: &[Vec<f32>]| -> Vec<u32> { v.iter().flatten().map(|x| x.to_bits()).collect() };
    if bits(cold) != bits(warm) {
        bail!(
            "{}: the warm pass served other scores than the cold pass computed",
            work.key
        );
    }
    Ok(())
}

/// A scratch cache root inside `real` (same file system), removed on drop, whose `models/` and
/// `runtime/` are links to `real`'s: models are found and verified as usual, every cache empty.
/// Named as ranklab's temporaries are (`.ranklab-<pid>-costs-scratch-….tmp`), so that one a
/// killed run left (an interrupt ends the process without the drop) is swept by the next
/// measurement once its process is gone (`ranklab_engine::leftovers`; the sweep removes the
/// links, not what they point to).
fn scratch_root(real: &Path) -> Result<tempfile::TempDir> {
    std::fs::create_dir_all(real)
        .with_context(|| format!("creating the cache root {}", real.display()))?;
    ranklab_engine::leftovers::sweep_once(real);
    let scratch = tempfile::Builder::new()
        .prefix(&format!(".ranklab-{}-costs-scratch-", std::process::id()))
        .suffix(".tmp")
        .tempdir_in(real)
        .with_context(|| format!("creating a scratch cache in {}", real.display()))?;
    for d in ["models", "runtime"] {
        std::fs::create_dir_all(real.join(d))?;
        std::os::unix::fs::symlink(real.join(d), scratch.path().join(d))
            .with_context(|| format!("linking {d}/ into {}", scratch.path().display()))?;
    }
    Ok(scratch)
}

#[cfg(test)]
mod tests {
    /// A scratch root an interrupted measurement left (its process gone) is removed when the
    /// next one makes its own, through its links and not what they link to: the real cache's
    /// models stay. This run's own scratch is named so too. (A `.costs-scratch-` root of the
    /// old name was never removed: this session's attack pass.)
    #[test]
    fn a_scratch_root_a_killed_measurement_left_is_swept_and_its_links_targets_stay() {
        if !std::path::Path::new("/proc/self").exists() {
            return; // where /proc does not tell which processes run, age alone decides
        }
        let real = tempfile::tempdir().unwrap();
        let model = real.path().join("models/m/model.onnx");
        std::fs::create_dir_all(model.parent().unwrap()).unwrap();
        std::fs::write(&model, b"weights").unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let left = real
            .path()
            .join(format!(".ranklab-{dead}-costs-scratch-abc.tmp"));
        std::fs::create_dir(&left).unwrap();
        for d in ["models", "runtime"] {
            std::fs::create_dir_all(real.path().join(d)).unwrap();
            std::os::unix::fs::symlink(real.path().join(d), left.join(d)).unwrap();
        }
        let scratch = super::scratch_root(real.path()).unwrap();
        assert!(!left.exists(), "the leftover scratch root is swept");
        assert_eq!(std::fs::read(&model).unwrap(), b"weights");
        let name = scratch
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(ranklab_engine::leftovers::is_temporary(&name), "{name}");
    }
}
