//! One `ranklab tune FILE`: read the file and the suite, replay the lists once, score the grid,
//! cross-validate, compare with the shipped configuration, render, write.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Corpus;

use super::file::{self, line_of, Plan};
use super::lists::{self, Lists, Scorer};
use super::{cross_validate, folds, render, CrossValidation};
use crate::replay::{ConfigRun, ReplayOptions, Replayer};
use crate::stats::{self, power};
use crate::suite::fusion::FusionSpec;
use crate::suite::{Configuration, Experiments, Suite};

/// What `ranklab tune FILE` was asked.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// The tuning file.
    pub file: PathBuf,
    /// Also write the JSON here.
    pub json: Option<PathBuf>,
    /// Add the configuration tuned on all tasks to an experiments file (when detectable).
    pub write: bool,
    /// Compute model outputs here (`--live`) instead of reading the suite's recording first.
    pub live: bool,
    /// `split: time`: with `--write`, keep the current weights and record the tuning.
    pub keep: bool,
    /// `split: time`: with `--write`, write even when the rolling check does not back it.
    pub force: bool,
}

/// Runs the tuning the file asks for and returns its Markdown report: a `split: time` file
/// through the penalty tuning ([`super::penalty`]), any other through [`tune`].
pub(crate) fn run(req: &Request) -> Result<String> {
    let plan = file::load(&req.file)?;
    if let Some(t) = &plan.time {
        return super::penalty::tune(req, &plan, t);
    }
    if req.keep || req.force {
        bail!(
            "{}: --keep and --force apply to the penalty weights (`split: time`); this tuning writes an experiments file",
            req.file.display()
        );
    }
    Ok(tune(req)?.0)
}

/// Where a tuning runs: the suite (or BEIR collection), the configuration tuned and the one it
/// is compared with, the measures, the report folder, and the experiments file the tuned
/// configuration belongs to (a stand-in named after the tuning file for a collection).
pub(super) struct Setting {
    pub suite: Suite,
    pub c: Configuration,
    pub shipped: Configuration,
    pub measures: crate::report::MeasureSet,
    pub reports: PathBuf,
    pub ex: Experiments,
    /// A collection's corpus (a suite's is loaded from its folder).
    pub corpus: Option<Corpus>,
}

/// Resolves the tuning file's suite or collection and its configurations.
fn resolve(plan: &Plan, file: &Path, at: &dyn Fn(&str) -> String) -> Result<Setting> {
    let f = &plan.file;
    if let Some(coll) = &f.collection {
        let dir = crate::root::dir_of(file)
            .join(crate::engine_spec::expand_env(coll).with_context(|| at("collection"))?);
        let reports = crate::suite::beir::default_reports();
        let (coll, suite) = crate::suite::beir::load_judged(
            &dir,
            "test",
            &reports,
            crate::judgments::Selection::Human,
        )
        .with_context(|| at("collection"))?;
        let mut c = crate::suite::beir::configuration(&f.configuration)
            .with_context(|| at("configuration"))?;
        overrides(f, &mut c, at)?;
        let shipped = crate::suite::beir::configuration(f.shipped.as_deref().unwrap_or("fusion"))
            .with_context(|| at("shipped"))?;
        let ex = Experiments {
            experiment: format!("tune-{}", f.tune),
            baseline: None,
            description: None,
            configurations: vec![c.clone()],
            distractors: None,
            path: file.to_path_buf(),
        };
        let reports = reports.join(&suite.name);
        return Ok(Setting {
            suite,
            c,
            shipped,
            measures: crate::report::MeasureSet::Fixed(crate::suite::beir::measures()),
            reports,
            ex,
            corpus: Some(coll.corpus),
        });
    }
    let dir = crate::root::dir_of(file).to_path_buf();
    let suite = Suite::load(&dir).with_context(|| {
        format!(
            "{}: a tuning file sits beside its suite's suite.yaml (or names a BEIR `collection:`)",
            file.display()
        )
    })?;
    let Some((mut c, ex)) = find_configuration(&suite, &f.configuration)? else {
        bail!(
            "{}: configuration {:?} is in none of {}'s experiments files",
            at("configuration"),
            f.configuration,
            suite.name
        );
    };
    overrides(f, &mut c, at)?;
    let shipped_name = match &f.shipped {
        Some(s) => s.clone(),
        None => crate::suite::shipped(&suite)?
            .into_iter()
            .next()
            .map(|s| s.0)
            .or_else(|| ex.baseline.clone())
            .unwrap_or_else(|| ex.configurations[0].name.clone()),
    };
    let shipped = find_configuration(&suite, &shipped_name)?
        .map(|x| x.0)
        .with_context(|| {
            format!(
                "{}: the shipped configuration {shipped_name:?} is in no experiments file",
                at("shipped")
            )
        })?;
    let reports = crate::root::default("reports").join(&suite.name);
    Ok(Setting {
        suite,
        c,
        shipped,
        measures: crate::report::MeasureSet::Suite,
        reports,
        ex,
        corpus: None,
    })
}

/// The tuning file's `rerank:` and `fusion:` put in place of the configuration's (then named
/// `<configuration>-weighted`), checked together.
fn overrides(f: &file::TuneFile, c: &mut Configuration, at: &dyn Fn(&str) -> String) -> Result<()> {
    if let Some(r) = &f.rerank {
        c.rerank = Some(r.clone());
    }
    if let Some(fusion) = &f.fusion {
        c.fusion = Some(fusion.clone());
        c.name = format!("{}-weighted", c.name);
        let interpolates = c.rerank.as_ref().is_some_and(|r| r.interpolate.is_some());
        fusion.check_with(c.rerank.is_some(), interpolates, &at("fusion"))?;
    }
    Ok(())
}

/// The configuration `name` of the suite's experiments files, with its experiments file.
fn find_configuration(suite: &Suite, name: &str) -> Result<Option<(Configuration, Experiments)>> {
    let all = crate::suite::load_experiments(suite, &[])?;
    for ex in all {
        if let Some(c) = ex.configurations.iter().find(|c| c.name == name) {
            return Ok(Some((c.clone(), ex)));
        }
    }
    Ok(None)
}

/// Everything the report says.
pub(crate) struct Outcome {
    /// The checked file.
    pub plan: Plan,
    /// The suite's name.
    pub suite: String,
    /// The tuned configuration's name (`<configuration>-weighted` when the file sets `fusion:`).
    pub configuration: String,
    /// Task ids, suite order.
    pub tasks: Vec<String>,
    /// The cross-validation.
    pub cv: CrossValidation,
    /// The folds.
    pub folds: Vec<folds::Fold>,
    /// The configuration as written: its per-task values.
    pub written: Vec<f64>,
    /// The shipped configuration's name and per-task values.
    pub shipped: (String, Vec<f64>),
    /// Out of fold against shipped.
    pub paired: stats::Paired,
    /// Power of that comparison.
    pub power: power::Power,
    /// A learned tuning's model keys (per fold, then all tasks); empty for a grid.
    pub models: Vec<String>,
}

/// Runs the tuning; returns the Markdown report and the outcome.
pub(crate) fn tune(req: &Request) -> Result<(String, Outcome)> {
    let plan = file::load(&req.file)?;
    let text = ranklab_engine::input::read_text(&req.file)?;
    let at = |key: &str| format!("{}:{}", req.file.display(), line_of(&text, key));
    let setting = resolve(&plan, &req.file, &at)?;
    if plan
        .dims
        .iter()
        .any(|d| d.param == file::Param::Interpolate)
    {
        return super::interp::tune(req, plan, setting, &at);
    }
    let Setting {
        suite,
        c,
        shipped,
        measures,
        reports,
        ex,
        corpus,
    } = setting;
    let spec = lists::spec_of(&c, &at("configuration"))?;
    let scorer = Scorer::new(&suite, &measures, &plan.file.measure, &at("measure"))?;
    let shipped_name = shipped.name.clone();
    let corpus = match corpus {
        Some(c) => c,
        None => suite.load_corpus()?,
    };
    let replayed = Replayed::new(
        req,
        &plan,
        (&suite, &corpus),
        (&c, &shipped),
        (&ex, &reports),
        &at,
    )?;
    let (runs, more) = (&replayed.runs, replayed.more.as_slice());
    let n = suite.tasks.len();
    let folds = folds::split(n, plan.file.folds, plan.file.seed);
    let t0 = std::time::Instant::now();
    let (cv, learned) = match &plan.file.learn {
        Some(l) => {
            let x = replayed.learn(l, &plan, (&suite, &corpus), &scorer, c.depth(), &folds, &at)?;
            (x.cv.clone(), Some(x))
        }
        None => {
            lists::check_paths(&plan, &spec, &at)?;
            let grid = Grid {
                plan: &plan,
                spec: &spec,
                scorer: &scorer,
                corpus: &corpus,
            };
            (grid.cross_validate(runs, more, &c, &folds)?, None)
        }
    };
    let scored = if learned.is_some() {
        folds.len() + 1
    } else {
        plan.candidates()
    };
    eprintln!(
        "tune: {scored} candidates x {n} tasks scored and cross-validated over {} folds in {:.2} s",
        folds.len(),
        t0.elapsed().as_secs_f64()
    );
    let per = |r: &ConfigRun| -> Vec<f64> {
        (0..n)
            .map(|t| scorer.value_ranked(t, &r.per_task[t], &corpus))
            .collect()
    };
    let written = per(&runs[2]);
    let shipped_values = per(runs.get(3).unwrap_or(&runs[2]));
    let paired = stats::paired(&shipped_values, &cv.out_of_fold, &stats::Options::default())?;
    let diffs = stats::differences(&shipped_values, &cv.out_of_fold)?;
    let power = power::analyse(&diffs, stats::ALPHA);
    let outcome = Outcome {
        plan,
        suite: suite.name.clone(),
        configuration: c.name.clone(),
        tasks: suite.tasks.iter().map(|t| t.id.clone()).collect(),
        cv,
        folds,
        written,
        shipped: (shipped_name, shipped_values),
        paired,
        power,
        models: learned.as_ref().map(|x| x.keys.clone()).unwrap_or_default(),
    };
    let md = render::markdown(&outcome, &spec.describe());
    let model = learned.as_ref().map(|x| x.all.to_json());
    write_outputs(
        req,
        &outcome,
        (&c, &spec, &ex),
        &md,
        &reports,
        model.as_deref(),
    )?;
    Ok((md, outcome))
}

/// The runs of one tuning's replay: `runs` (bm25, dense, the configuration as written, the
/// shipped one), the runs a fusion's further lists are read from (the plain rerank stage a
/// fusion weighing `rerank` reads, then the engine's own list a fusion weighing `engine`
/// reads), and a learned ranker's model lists (feature name, shortlist width, run).
struct Replayed {
    runs: Vec<ConfigRun>,
    more: Vec<ConfigRun>,
    models: Vec<(&'static str, usize, ConfigRun)>,
}

impl Replayed {
    fn new(
        req: &Request,
        plan: &Plan,
        (suite, corpus): (&Suite, &Corpus),
        (c, shipped): (&Configuration, &Configuration),
        (ex, reports): (&Experiments, &Path),
        at: &dyn Fn(&str) -> String,
    ) -> Result<Replayed> {
        let parts = match &plan.file.learn {
            Some(l) => super::learned::model_parts(l, c, &at("learn"))?,
            None => Vec::new(),
        };
        let extra = parts.iter().map(|m| m.1.clone()).collect();
        let (runs, more, model_runs) =
            replay_once(req, (suite, corpus), (c, shipped), ex, reports, extra)?;
        let models = parts
            .into_iter()
            .zip(model_runs)
            .map(|((name, _, width), run)| (name, width, run))
            .collect();
        Ok(Replayed { runs, more, models })
    }

    /// A learned tuning's cross-validation on these runs ([`super::learned::run`]).
    #[allow(clippy::too_many_arguments)]
    fn learn(
        &self,
        l: &super::learned::LearnSpec,
        plan: &Plan,
        (suite, corpus): (&Suite, &Corpus),
        scorer: &Scorer,
        depth: usize,
        folds: &[folds::Fold],
        at: &dyn Fn(&str) -> String,
    ) -> Result<super::learned::Learned> {
        let (bm25, dense) = (&self.runs[0], &self.runs[1]);
        let models = self.models();
        super::learned::run(
            l, plan, suite, bm25, dense, &models, scorer, corpus, depth, folds, at,
        )
    }

    fn models(&self) -> Vec<super::features::ModelList<'_>> {
        self.models
            .iter()
            .map(|(name, width, run)| super::features::ModelList {
                name,
                run,
                width: *width,
            })
            .collect()
    }
}

/// A weighted-fusion grid over lists computed once.
struct Grid<'a> {
    plan: &'a Plan,
    spec: &'a FusionSpec,
    scorer: &'a Scorer,
    corpus: &'a Corpus,
}

impl Grid<'_> {
    /// Every candidate scored on every task from the replayed parts (`runs`: bm25, dense, the
    /// configuration as written; `more`: the plain rerank stage and the engine's list, those
    /// the fusion weighs, in that order), checked against the replay, then cross-validated
    /// over `folds`.
    fn cross_validate(
        &self,
        runs: &[ConfigRun],
        more: &[ConfigRun],
        c: &Configuration,
        folds: &[folds::Fold],
    ) -> Result<CrossValidation> {
        let (plan, spec, corpus) = (self.plan, self.spec, self.corpus);
        let parts = [&runs[0], &runs[1]];
        let lists = lists::build(plan, spec, parts, more, corpus, c.depth());
        check_fast_path(&lists, spec, &runs[2], corpus, &c.name)?;
        let values = lists::score_grid(plan, spec, &lists, self.scorer, corpus);
        let sizes: Vec<usize> = plan.dims.iter().map(|d| d.values.len()).collect();
        let n = runs[0].per_task.len();
        Ok(cross_validate(&sizes, &values, n, folds, plan.file.epsilon))
    }
}

/// One replay of the configuration's two lists, the configuration as written and the shipped
/// configuration (when it is another): runs in that order; and apart, the plain rerank stage a
/// fusion weighing `rerank` reads its shortlist scores from ([`lists::rerank_part`]) and the
/// engine's own list a fusion weighing `engine` reads ([`lists::engine_part`]), in that order.
/// `extra` (a learned ranker's model lists) are replayed too and returned last, in order.
fn replay_once(
    req: &Request,
    (suite, corpus): (&Suite, &Corpus),
    (c, shipped): (&Configuration, &Configuration),
    ex: &Experiments,
    reports: &Path,
    extra: Vec<Configuration>,
) -> Result<(Vec<ConfigRun>, Vec<ConfigRun>, Vec<ConfigRun>)> {
    let mut configurations: Vec<Configuration> = lists::parts(c).into();
    configurations.push(c.clone());
    if shipped.name != c.name {
        configurations.push(shipped.clone());
    }
    // The further lists: the plain rerank stage, the engine's own list (those the fusion
    // weighs), each `rerankers:` list's stage.
    let more: Vec<Configuration> = c.fusion.as_ref().map_or_else(Vec::new, |f| {
        lists::rerank_part(c, f)
            .into_iter()
            .chain(lists::engine_part(c, f))
            .chain(crate::replay::rerankers::companions(c))
            .collect()
    });
    let n_more = more.len();
    configurations.extend(more);
    let n_extra = extra.len();
    configurations.extend(extra);
    let mut runs = replay_these(req, suite, corpus, c, configurations, ex, reports)?;
    let extra_runs = runs.split_off(runs.len() - n_extra);
    let more_runs = runs.split_off(runs.len() - n_more);
    Ok((runs, more_runs, extra_runs))
}

/// One replay of `configurations` (named after `c`), from the suite's recordings unless
/// `--live`.
pub(super) fn replay_these(
    req: &Request,
    suite: &Suite,
    corpus: &Corpus,
    c: &Configuration,
    configurations: Vec<Configuration>,
    ex: &Experiments,
    reports: &Path,
) -> Result<Vec<ConfigRun>> {
    let tmp = Experiments {
        experiment: format!("tune-{}", c.name),
        baseline: None,
        description: None,
        configurations,
        distractors: None,
        path: ex.path.clone(),
    };
    let mode = if req.live {
        crate::external::Mode::Live
    } else {
        crate::external::Mode::FromRecording
    };
    let runs_dir = reports.join("runs");
    let models = crate::replay::recorded_models(&mode, Some(&runs_dir))?;
    let engine = Replayer::build(corpus, &[&tmp])?;
    let opts = ReplayOptions {
        external: mode,
        recordings: Some(runs_dir),
        ..Default::default()
    };
    let replay = crate::replay::replay_with(&engine, suite, &tmp, &opts)?;
    engine.finish()?;
    drop(models.finish());
    Ok(replay.runs)
}

/// The fast path under the configuration's own settings must rank every task exactly as the
/// replay did (documents and scores); a difference is an internal error.
fn check_fast_path(
    lists: &Lists,
    spec: &FusionSpec,
    run: &ConfigRun,
    corpus: &Corpus,
    name: &str,
) -> Result<()> {
    let w = spec.weight_vector();
    for (t, ranked) in run.per_task.iter().enumerate() {
        let fast = lists::ranking(lists, t, &w, 0, corpus);
        let replayed = crate::replay::as_hits(ranked);
        if fast != replayed {
            bail!("internal error: the tuning's fast path ranks task {} of {name:?} differently from the replay; please report it", t + 1);
        }
    }
    Ok(())
}

/// Writes reports/<suite>/tune-<name>.md and .json, `--json`, a learned tuning's model
/// (`tune-<name>.model.json`), and with `--write` the tuned configuration (only when the
/// out-of-fold gain is detectable, [`super::write`]).
/// `tuned` is the configuration, its fusion and its experiments file.
fn write_outputs(
    req: &Request,
    o: &Outcome,
    tuned: (&Configuration, &FusionSpec, &Experiments),
    md: &str,
    reports: &Path,
    model: Option<&str>,
) -> Result<()> {
    let (c, spec, ex) = tuned;
    write_reports(req, o, md, &render::json(o, &spec.describe()), reports)?;
    if let Some(m) = model {
        let p = reports.join(format!("tune-{}.model.json", o.plan.file.tune));
        crate::report::atomic::write(&p, m.as_bytes())?;
        eprintln!("wrote {}", p.display());
    }
    if req.write {
        super::write::check_detectable(o)?;
        let path = match model {
            Some(m) => super::write::learned(o, c, spec, ex, m)?,
            None => write_tuned(o, c, spec, ex)?,
        };
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// Writes reports/<suite>/tune-<name>.md and .json, and `--json`.
pub(super) fn write_reports(
    req: &Request,
    o: &Outcome,
    md: &str,
    json: &serde_json::Value,
    reports: &Path,
) -> Result<()> {
    let json = serde_json::to_string_pretty(json)? + "\n";
    std::fs::create_dir_all(reports).with_context(|| format!("creating {}", reports.display()))?;
    let stem = format!("tune-{}", o.plan.file.tune);
    crate::report::atomic::write(&reports.join(format!("{stem}.md")), md.as_bytes())?;
    crate::report::atomic::write(&reports.join(format!("{stem}.json")), json.as_bytes())?;
    eprintln!("wrote {}/{stem}.md, .json", reports.display());
    if let Some(p) = &req.json {
        crate::report::atomic::write(p, json.as_bytes())?;
    }
    Ok(())
}

/// Writes `experiments-tune-<name>.yaml` beside the configuration's experiments file: the
/// shipped configuration and the configuration tuned on every task, with its provenance.
fn write_tuned(
    o: &Outcome,
    c: &Configuration,
    spec: &FusionSpec,
    ex: &Experiments,
) -> Result<PathBuf> {
    let dir = ex.path.parent().unwrap_or(Path::new("."));
    let path = dir.join(format!("experiments-tune-{}.yaml", o.plan.file.tune));
    let tuned = render::tuned_spec(o, spec);
    let engine = super::write::engine_yaml(c, ex)?;
    let text = format!(
        "experiment: tuned-{t}\ndescription: >-\n  {provenance}\nbaseline: {name}\nconfigurations:\n{written}{tuned_c}",
        t = o.plan.file.tune,
        provenance = super::write::provenance(o, "the weights chosen"),
        name = c.name,
        written = render::configuration_yaml(c, &c.name, spec, &engine)?,
        tuned_c = render::configuration_yaml(c, &format!("{}-tuned", c.name), &tuned, &engine)?,
    );
    crate::report::atomic::write(&path, text.as_bytes())?;
    Ok(path)
}
