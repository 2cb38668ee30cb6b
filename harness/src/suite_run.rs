//! A suite's run, from its files to the value its reports render: `ranklab run` and `ranklab
//! bench` go cmd → [`SuiteRun::replay`] → [`SuiteRun::render`] (the `report` module's
//! renderers) → cmd writes. [`SuiteRun::replay`] loads the suite and its experiments, replays
//! every experiment on one [`Replayer`], checks the paired assertions beside the suite
//! ([`crate::paired::beside`]), measures the corpus-size curves ([`crate::replay::scale`]) and,
//! when asked, the models' costs ([`costs::measure_suite`]); nothing is rendered or written
//! there. [`SuiteRun::render`] runs nothing: it renders what the replay produced.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use ranklab_engine::corpus::Corpus;
use ranklab_engine::models::recorded::RecordedFile;
use ranklab_engine::models::remote::Remote;

use crate::paired::beside::{check_beside, PairedResult};
use crate::replay::scale::Curve;
use crate::replay::{query_costs, Replay, Replayer};
use crate::report::{costs, render_with, scale, shown, MeasureSet, Rendered};
use crate::suite::{Experiments, Suite};

/// What a suite's replay produced, for its reports: rankings, paired verdicts, curves, costs,
/// model outputs. Made by [`SuiteRun::replay`]; [`SuiteRun::render`] renders it.
pub struct SuiteRun {
    suite: Suite,
    corpus: Corpus,
    experiments: Vec<Experiments>,
    /// One replay per experiment, in `experiments`' order.
    replays: Vec<Replay>,
    paired: Vec<PairedResult>,
    /// Per experiment: its distractor pool and measured curve, why it is not drawn, or nothing.
    curves: Vec<Option<std::result::Result<(crate::suite::distractors::Pool, Curve), String>>>,
    costs: costs::Costs,
    costs_file: Option<costs::NewCosts>,
    models: Vec<RecordedFile>,
}

impl SuiteRun {
    /// Replays a suite under its experiment files; nothing is rendered or written.
    ///
    /// External configurations follow `mode`; their recordings are read from
    /// `<recordings_root>/<suite>/runs/` (written, with `--record`, where the reports are). With
    /// `remote` (`--cluster`), the vectors and cross-encoder scores missing from the cache — of
    /// the experiments and of the suite's paired assertions — are computed there
    /// ([`Replayer::build_with`]). The cost file is read, and `cost_plan` may ask to measure first
    /// ([`costs::measure_suite`]; the new file is kept, not written). `judgments` selects the
    /// grades the tables rest on: people's only (the default), or with `Selection::All`
    /// people's and the LLM's where no person judged.
    pub fn replay(
        suite_path: &Path,
        experiment_paths: &[PathBuf],
        recordings_root: &Path,
        mode: &crate::external::Mode,
        remote: Option<&Arc<dyn Remote>>,
        cost_plan: &costs::CostPlan,
        judgments: crate::judgments::Selection,
    ) -> Result<SuiteRun> {
        let suite = Suite::load_selected(suite_path, judgments)?;
        let costs_dir = cost_plan.reports.join(&suite.name);
        let mut costs = costs::load(&costs_dir)?;
        let experiments = crate::suite::load_experiments(&suite, experiment_paths)?;
        crate::suite::check_named_beside_written(
            &suite,
            experiment_paths,
            &experiments,
            &cost_plan.reports,
        )?;
        for ex in &experiments {
            crate::suite::check_depth(&suite, ex)?;
        }
        costs::check_names(&suite, &experiments, cost_plan)?;
        let corpus = suite.load_corpus()?;
        let pools = distractor_pools(&experiments, &corpus)?;
        let runs = recordings_root.join(&suite.name).join("runs");
        let models = crate::replay::recorded_models(mode, Some(&runs))?;
        let replays = replay_all(&corpus, &suite, &experiments, &runs, mode, remote)?;
        if *mode == crate::external::Mode::FromRecording {
            note_stale_recordings(&corpus, &experiments, &runs);
        }
        let from = (*mode == crate::external::Mode::FromRecording).then_some(runs.as_path());
        let paired = check_beside(&suite, remote, from)?;
        // The corpus-size curves are drawn before the costs are measured: the recording session
        // (every output the tables and curves rest on) ends before a cost pass, which must
        // compute.
        let mut curves = Vec::new();
        for (ex, pool) in experiments.iter().zip(pools) {
            curves.push(match (pool, &ex.distractors) {
                (Ok(Some(pool)), Some(d)) => {
                    let curve = crate::replay::scale::suite_curve(
                        &corpus, &suite, ex, &pool, &d.sizes, remote,
                    )?;
                    Some(Ok((pool, curve)))
                }
                (Err(not_drawn), _) => Some(Err(not_drawn)),
                _ => None,
            });
        }
        let models = models.finish();
        let per_pair = costs::measure_suite(
            &corpus,
            &suite,
            &experiments,
            &replays,
            &mut costs,
            cost_plan,
        )?;
        // The per-query measurement's bytes, when it measured, hold the per-pair ones too.
        let costs_file = measure_per_query(&corpus, &suite, &experiments, &mut costs, cost_plan)?
            .or(per_pair)
            .map(|bytes| costs::NewCosts {
                path: costs_dir.join(costs::COSTS_FILE),
                bytes,
                read: costs.read.clone(),
            });
        Ok(SuiteRun {
            suite,
            corpus,
            experiments,
            replays,
            paired,
            curves,
            costs,
            costs_file,
            models,
        })
    }

    /// Renders one report per experiment file from what the replay produced (nothing written
    /// yet), and checks the files they would write ([`crate::report::check_files`]). The
    /// reports are rendered in parallel (rendering reads the replay and prints nothing) and kept
    /// in the experiments' order; of several errors, the first experiment's is returned.
    pub fn render(self) -> Result<Rendered> {
        use rayon::prelude::*;
        let rendered: Vec<Result<_>> = self
            .experiments
            .par_iter()
            .zip(self.replays.par_iter())
            .map(|(ex, r)| {
                render_with(
                    &self.corpus,
                    &self.suite,
                    ex,
                    r,
                    &MeasureSet::Suite,
                    &self.paired,
                    Some(&self.costs),
                )
            })
            .collect();
        let mut reports = rendered.into_iter().collect::<Result<Vec<_>>>()?;
        for ((curve, report), ex) in self.curves.iter().zip(&mut reports).zip(&self.experiments) {
            match curve {
                Some(Ok((pool, curve))) => {
                    let scaled = scale::suite_report(&self.corpus, &self.suite, ex, pool, curve)?;
                    report.summary.push_str(&scaled.summary);
                    report.files.extend(scaled.files);
                }
                Some(Err(not_drawn)) => report.summary.push_str(not_drawn),
                None => {}
            }
        }
        crate::report::check_files(&reports)?;
        Ok(Rendered {
            suite: self.suite,
            reports,
            documents: self.corpus.len(),
            without_front_matter: self.corpus.without_front_matter.clone(),
            costs_file: self.costs_file,
            models: self.models,
        })
    }
}

/// Every experiment replayed on one engine built for them all (its outputs recorded or read
/// back as `mode` says, from `runs`).
fn replay_all(
    corpus: &Corpus,
    suite: &Suite,
    experiments: &[Experiments],
    runs: &Path,
    mode: &crate::external::Mode,
    remote: Option<&Arc<dyn Remote>>,
) -> Result<Vec<Replay>> {
    let refs: Vec<&Experiments> = experiments.iter().collect();
    let engine = Replayer::build_with(corpus, &refs, remote.cloned())?;
    let mut replays = Vec::new();
    for ex in experiments {
        let opts = crate::replay::ReplayOptions {
            external: mode.clone(),
            recordings: Some(runs.to_path_buf()),
            ..Default::default()
        };
        replays.push(crate::replay::replay_with(&engine, suite, ex, &opts)?);
    }
    engine.finish()?;
    Ok(replays)
}

/// An experiment's distractor pool (`None`: it has none), or why its curve is not drawn.
type PoolOrNot = std::result::Result<Option<crate::suite::distractors::Pool>, String>;

/// A distractor pool of each experiment, or why its corpus-size curve is not drawn. The pools
/// are read and checked (ids, sizes) before anything is replayed; a pool named by an
/// environment variable that is not set is not on this machine: its curve is not drawn, and its
/// files are left as they are (said in the summary).
fn distractor_pools(experiments: &[Experiments], corpus: &Corpus) -> Result<Vec<PoolOrNot>> {
    let mut pools = Vec::new();
    for ex in experiments {
        let pool = match &ex.distractors {
            None => Ok(None),
            Some(d) => match d.pool_path(&ex.path)? {
                Some(path) => Ok(Some(crate::suite::distractors::Pool::load(
                    d, &ex.path, path, corpus,
                )?)),
                None => Err(format!(
                    "{}: the corpus-size curve was not drawn: its distractor pool {} names {}, not set here; {}.scale.* are left as they are\n",
                    ex.experiment,
                    d.from.display(),
                    d.unset(&ex.path)?.join(", "),
                    ex.experiment
                )),
            },
        };
        pools.push(pool);
    }
    Ok(pools)
}

/// Under `--from-recording`: says on stderr which reports rest on an external engine's
/// recording made against another corpus than today's (or before ranklab kept a recording's
/// corpus), and how to re-record it. An engine with `own_index: true` is not dated by the corpus.
fn note_stale_recordings(corpus: &Corpus, experiments: &[Experiments], runs: &Path) {
    use crate::external::recording::{recorded_corpus, RecordedCorpus};
    let now = RecordedCorpus::of(corpus);
    for ex in experiments {
        for c in &ex.configurations {
            if c.engine.as_ref().is_none_or(|s| s.own_index) {
                continue;
            }
            let path = runs.join(crate::suite::recording_file_name(&c.name));
            if !path.is_file() {
                continue;
            }
            let why = match recorded_corpus(&path) {
                Some(then) if then.sha256 == now.sha256 => continue,
                Some(then) => {
                    let (a, r, e) = then.diff(&now);
                    format!(
                        "recorded against corpus {} (now {}): {} record(s) added, {} removed, {} edited since",
                        &then.sha256[..8.min(then.sha256.len())],
                        &now.sha256[..8],
                        a.len(),
                        r.len(),
                        e.len()
                    )
                }
                None => "recorded before ranklab kept a recording's corpus: whether it rests on today's corpus is unknown".to_string(),
            };
            eprintln!(
                "note: {}: the {} report rests on the recording {} of configuration {:?}, {why}; re-record it with --record while the engine runs",
                ex.experiment,
                ex.experiment,
                shown(&path),
                c.name
            );
        }
    }
}

/// `--measure-costs` with no model named also measures the cost per query of each
/// configuration that has none in the cost file yet ([`query_costs`]), on a replayer of its
/// own; returns the cost file's new bytes (None: not asked, or nothing to measure).
fn measure_per_query(
    corpus: &Corpus,
    suite: &Suite,
    experiments: &[Experiments],
    costs: &mut costs::Costs,
    plan: &costs::CostPlan,
) -> Result<Option<Vec<u8>>> {
    if !plan.measure.as_ref().is_some_and(Vec::is_empty) {
        return Ok(None);
    }
    let measured = |ex: &str, c: &str| {
        costs
            .file
            .configurations
            .iter()
            .any(|r| r.experiment == ex && r.configuration == c)
    };
    let chosen = query_costs::to_measure(suite, experiments, plan.live, &measured);
    if chosen.is_empty() {
        return Ok(None);
    }
    let refs: Vec<&Experiments> = chosen.iter().map(|(ex, _)| *ex).collect();
    let mut engine = Replayer::build(corpus, &refs)?;
    let rows = query_costs::measure(&mut engine, suite, &chosen, &plan.command)?;
    costs::merge_query_costs(&mut costs.file, rows);
    Ok(Some(costs.file.to_bytes()?))
}
