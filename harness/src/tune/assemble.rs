//! Assembling a tuning [`Problem`]: the shipped configuration and its practice file, the merges
//! of the window, the paired assertions beside the suite, and their first stages replayed once
//! per query; and re-checking an answer through the real replay.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use chrono::NaiveDate;
use ranklab_engine::corpus::Corpus;
use ranklab_engine::policy::{Practice, Weights};

use super::merges::{Merge, Merges, Window};
use super::scorer::{Candidates, MergeQuery, PairQuery, TaskQuery};
use super::Problem;
use crate::paired::Paired;
use crate::replay::{as_hits, replay_with, ReplayOptions, Replayer};
use crate::report::first_relevant_rank;
use crate::suite::{experiment_files, Configuration, Experiments, Suite, Task};
use ranklab_engine::policy::Wiring;

/// What a tuning reads from disk, checked.
pub(crate) struct Inputs {
    /// The suite.
    pub(crate) suite: Suite,
    /// The configuration whose first stage is tuned.
    pub(crate) config: Configuration,
    /// The experiments file defining it.
    pub(crate) ex_path: PathBuf,
    /// Its practice file.
    pub(crate) practice_path: PathBuf,
    /// The practice file's contents (the current weights).
    pub(crate) practice: Practice,
    /// The suite's corpus.
    pub(crate) corpus: Corpus,
    /// The merges file.
    pub(crate) merges_path: PathBuf,
    /// Every merge of it.
    pub(crate) merges: Merges,
    /// The merges of the window, split into train and held out.
    pub(crate) window: Window,
    /// The paired assertion files beside the suite.
    pub(crate) paired: Vec<Paired>,
    /// Every merge up to the as-of date, oldest first (file order within a day): what the
    /// rolling validation tunes and scores on. The window is a suffix of it.
    pub(crate) pool: Vec<Merge>,
}

impl Inputs {
    /// Loads the suite, the configuration to tune (`name`, or the one with `wiring: current`),
    /// its practice file, the merges of `window_days` up to `as_of` and the paired files.
    pub(crate) fn load(
        suite_path: &Path,
        merges: Option<&Path>,
        name: Option<&str>,
        as_of: NaiveDate,
        window_days: u32,
    ) -> Result<Inputs> {
        let suite = Suite::load(suite_path)?;
        let (config, ex_path, practice_path) = shipped_configuration(&suite, name)?;
        crate::suite::check_depth(&suite, &single(config.clone(), &ex_path))?;
        let practice = Practice::load(&practice_path).with_context(|| {
            format!(
                "reading the practice file of configuration {:?}",
                config.name
            )
        })?;
        let corpus = suite.load_corpus()?;
        let merges_path = merges
            .map(Path::to_path_buf)
            .unwrap_or_else(|| suite.dir().join("merges.yaml"));
        let merges = Merges::load(&merges_path, &corpus)?;
        let window = merges.window(as_of, window_days)?;
        // Merges after the as-of date are not known yet at that date (a backtest).
        let mut pool: Vec<_> = merges
            .merges
            .iter()
            .filter(|m| m.merged <= as_of)
            .cloned()
            .collect();
        pool.sort_by_key(|m| m.merged);

        // Paired assertions beside the suite, on the same corpus.
        let mut paired = Vec::new();
        for p in suite.files_named("paired")? {
            let (pf, pc) = Paired::load(&p)?;
            if pf.names_two_configurations() {
                // Two configurations (e.g. an engine at two releases), not the wirings of the
                // tuned one: the weights move them only through a wiring of their own.
                if let Some(c) = pf
                    .experiments
                    .configurations
                    .iter()
                    .find(|c| c.wiring != Wiring::None)
                {
                    bail!(
                        "{}: its `legacy`/`current` configurations are not the tuned configuration under two wirings, and {:?} has wiring {}, so the weights move it; tune cannot check such a file yet (move it out of the suite folder while tuning, or drop the wiring)",
                        p.display(),
                        c.name,
                        c.wiring
                    );
                }
                eprintln!(
                    "{}: names two configurations without a wiring; the weights cannot change it, so tune does not check it",
                    p.display()
                );
                continue;
            }
            if pc.content_hash() != corpus.content_hash() {
                bail!(
                    "{}: its suite's corpus ({}) is not the corpus of {}",
                    p.display(),
                    pf.suite.corpus_path.display(),
                    suite.path.display()
                );
            }
            paired.push(pf);
        }
        Ok(Inputs {
            suite,
            config,
            ex_path,
            practice_path,
            practice,
            corpus,
            merges_path,
            merges,
            window,
            paired,
            pool,
        })
    }

    /// The first stages to replay: the tuned configuration and each paired file's, without
    /// their wiring.
    pub(crate) fn first_stages(&self) -> (Experiments, Vec<Experiments>) {
        let pre_policy = |c: &Configuration| Configuration {
            name: "first-stage".into(),
            wiring: Wiring::None,
            ..c.clone()
        };
        let ex_merges = single(pre_policy(&self.config), &self.ex_path);
        let ex_pairs = self
            .paired
            .iter()
            .map(|p| single(pre_policy(&p.experiments.configurations[0]), &p.file.path))
            .collect();
        (ex_merges, ex_pairs)
    }

    /// The window's merges as a suite (one task per merge, oldest first).
    pub(crate) fn merge_suite(&self) -> Suite {
        Suite {
            tasks: self
                .window
                .merges
                .iter()
                .map(|m| task(&m.id, &m.query, &m.expected, self.suite.k, m.line))
                .collect(),
            path: self.merges_path.clone(),
            judgments: None,
            judging: None,
            ..self.suite.clone()
        }
    }

    /// Replays the first stages once per query and builds the problem every candidate
    /// re-sorts (the window's merges), with the queries of every merge of the pool.
    pub(crate) fn problem(
        &self,
        engine: &Replayer,
        ex_merges: &Experiments,
        ex_pairs: &[Experiments],
    ) -> Result<(Problem, Vec<MergeQuery>)> {
        let pool_queries = self.pool_queries(engine, ex_merges)?;
        let suffix = &self.pool[self.pool.len() - self.window.merges.len()..];
        if suffix
            .iter()
            .map(|m| &m.id)
            .ne(self.window.merges.iter().map(|m| &m.id))
        {
            bail!("internal error: the window's merges are not the newest merges of {}; please report this", self.merges_path.display());
        }
        let merge_queries = pool_queries[self.pool.len() - self.window.merges.len()..].to_vec();
        let tasks = self.task_queries(engine, ex_merges)?;
        let pairs = self.pair_queries(engine, ex_pairs)?;
        Ok((
            Problem {
                merges: merge_queries,
                train: self.window.train,
                pairs,
                tasks,
                k: self.suite.k,
            },
            pool_queries,
        ))
    }

    /// Every merge of the pool replayed once: its candidates and the expected record's place.
    fn pool_queries(&self, engine: &Replayer, ex_merges: &Experiments) -> Result<Vec<MergeQuery>> {
        let corpus = &self.corpus;
        let pool_suite = Suite {
            tasks: self
                .pool
                .iter()
                .map(|m| task(&m.id, &m.query, &m.expected, self.suite.k, m.line))
                .collect(),
            path: self.merges_path.clone(),
            judgments: None,
            judging: None,
            ..self.suite.clone()
        };
        let lists = replay_with(engine, &pool_suite, ex_merges, &ReplayOptions::default())?;
        Ok(self
            .pool
            .iter()
            .zip(&lists.runs[0].per_task)
            .map(|(m, ranked)| {
                let candidates = Candidates::new(corpus, &as_hits(ranked));
                let target = corpus
                    .index_of(&m.expected)
                    .and_then(|d| candidates.position(d));
                MergeQuery { candidates, target }
            })
            .collect())
    }

    /// The suite's own tasks replayed once: their candidates and the places of their relevant
    /// records (scored beside the merges, not tuned on).
    fn task_queries(&self, engine: &Replayer, ex_merges: &Experiments) -> Result<Vec<TaskQuery>> {
        let corpus = &self.corpus;
        let own = replay_with(engine, &self.suite, ex_merges, &ReplayOptions::default())?;
        Ok(self
            .suite
            .tasks
            .iter()
            .zip(&own.runs[0].per_task)
            .map(|(t, ranked)| {
                let candidates = Candidates::new(corpus, &as_hits(ranked));
                let mut targets: Vec<usize> = t
                    .expected
                    .iter()
                    .filter(|(_, &g)| g >= 1)
                    .filter_map(|(id, _)| corpus.index_of(id).and_then(|d| candidates.position(d)))
                    .collect();
                targets.sort_unstable();
                TaskQuery {
                    candidates,
                    targets,
                    relevant: t.expected.values().filter(|&&g| g >= 1).count(),
                }
            })
            .collect())
    }

    /// Every paired assertion replayed once through its file's first stage: its candidates and
    /// the places of `above` and `below` (an error when neither is retrieved).
    fn pair_queries(&self, engine: &Replayer, ex_pairs: &[Experiments]) -> Result<Vec<PairQuery>> {
        let corpus = &self.corpus;
        let mut pairs = Vec::new();
        for (p, ex) in self.paired.iter().zip(ex_pairs) {
            let tasks = Suite {
                tasks: p
                    .file
                    .assertions
                    .iter()
                    .map(|a| task(&a.id, &a.query, &a.above, self.suite.k, 0))
                    .collect(),
                judgments: None,
                judging: None,
                ..p.suite.clone()
            };
            let r = replay_with(engine, &tasks, ex, &ReplayOptions::default())?;
            for (a, ranked) in p.file.assertions.iter().zip(&r.runs[0].per_task) {
                let candidates = Candidates::new(corpus, &as_hits(ranked));
                let pos = |id: &str| corpus.index_of(id).and_then(|d| candidates.position(d));
                let (above, below) = (pos(&a.above), pos(&a.below));
                if above.is_none() && below.is_none() {
                    bail!(
                        "{}: assertion {:?}: neither {:?} nor {:?} is retrieved for {:?}",
                        p.file.path.display(),
                        a.id,
                        a.above,
                        a.below,
                        a.query
                    );
                }
                pairs.push(PairQuery {
                    id: a.id.clone(),
                    candidates,
                    above,
                    below,
                    legacy: a.legacy,
                    current: a.current,
                });
            }
        }
        Ok(pairs)
    }

    /// Re-checks the fast path for `w` through the real replay (current wiring) and the paired
    /// assertions' own check.
    pub(crate) fn verify(
        &self,
        engine: &Replayer,
        merge_suite: &Suite,
        problem: &Problem,
        what: &str,
        w: Weights,
    ) -> Result<()> {
        let corpus: &Corpus = engine.corpus;
        let ex = single(
            Configuration {
                wiring: Wiring::Current,
                ..self.config.clone()
            },
            &self.ex_path,
        );
        let r = replay_with(
            engine,
            merge_suite,
            &ex,
            &ReplayOptions {
                weights: Some(w),
                ..ReplayOptions::default()
            },
        )?;
        let slow: Vec<Option<usize>> = merge_suite
            .tasks
            .iter()
            .zip(&r.runs[0].per_task)
            .map(|(t, ranked)| first_relevant_rank(corpus, t, ranked))
            .collect();
        let fast = problem.ranks(&w);
        if slow != fast {
            bail!("internal error: for the {what} weights {w:?} the fast scorer gives ranks {fast:?} but the replay gives {slow:?}; please report this");
        }
        let mut slow_ok = true;
        for p in &self.paired {
            slow_ok &= p.check(engine, Some(w))?.iter().all(|v| v.pass());
        }
        if slow_ok != problem.paired_ok(&w) {
            bail!("internal error: for the {what} weights {w:?} the fast scorer and `ranklab check` disagree on the paired assertions; please report this");
        }
        Ok(())
    }
}

/// The suite `ranklab tune` tunes when no `--suite` is given: the only suite under `tasks` (a
/// folder of `<suite>/suite.yaml`) whose folder holds a `merges.yaml`. None or several is an
/// error listing the suites and asking for `--suite`.
pub(crate) fn suite_with_merges(tasks: &Path) -> Result<PathBuf> {
    if !tasks.is_dir() {
        bail!(
            "no --suite given, and there is no tasks folder {}{} to look for a suite with a merges.yaml in; pass --suite DIR",
            tasks.display(),
            crate::root::tried(tasks)
        );
    }
    let suites = crate::suite::suites(tasks)?;
    let dirs: Vec<&Path> = suites.iter().map(|s| crate::root::dir_of(s)).collect();
    let with: Vec<&Path> = dirs
        .iter()
        .copied()
        .filter(|d| d.join("merges.yaml").is_file())
        .collect();
    let list = |ds: &[&Path]| {
        ds.iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match with.as_slice() {
        [one] => Ok(one.to_path_buf()),
        [] => bail!(
            "no --suite given, and no suite under {} has a merges.yaml (suites: {}); pass --suite DIR (and --merges FILE if the merges are elsewhere)",
            tasks.display(),
            list(&dirs)
        ),
        several => bail!(
            "no --suite given, and {} suites under {} have a merges.yaml: {}; choose one with --suite DIR",
            several.len(),
            tasks.display(),
            list(several)
        ),
    }
}

/// The configuration to tune, its experiments file and its practice file: searched in the
/// suite's `experiments.yaml` first, then in the other experiments files by name.
fn shipped_configuration(
    suite: &Suite,
    name: Option<&str>,
) -> Result<(Configuration, PathBuf, PathBuf)> {
    let mut found: Vec<(Configuration, PathBuf, PathBuf)> = Vec::new();
    let mut names = Vec::new();
    // The suite's own experiments.yaml first: a configuration it names (`current`) is the one
    // tuned, whatever another experiments file that repeats the name sorts before it.
    let mut files = experiment_files(suite)?;
    files.sort_by_key(|f| f.file_name().is_none_or(|n| n != "experiments.yaml"));
    for f in files {
        let ex = Experiments::load(&f)?;
        for c in &ex.configurations {
            names.push(c.name.clone());
            let wanted = match name {
                Some(n) => c.name == n,
                None => c.wiring == Wiring::Current,
            };
            if wanted && !found.iter().any(|(d, _, _)| d.name == c.name) {
                found.push((c.clone(), f.clone(), ex.practice_path(c)));
            }
        }
    }
    match (found.len(), name) {
        (1, _) => Ok(found.pop().expect("one")),
        (0, Some(n)) => bail!("{}: no configuration {n:?} in the experiments files (configurations: {})", suite.dir().display(), names.join(", ")),
        (0, None) => bail!("{}: no configuration has `wiring: current`; name the one to tune with --configuration", suite.dir().display()),
        _ => bail!(
            "{}: several configurations have `wiring: current` ({}); name the one to tune with --configuration",
            suite.dir().display(),
            found.iter().map(|f| f.0.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn single(c: Configuration, path: &std::path::Path) -> Experiments {
    Experiments {
        experiment: "tune".into(),
        baseline: Some(c.name.clone()),
        description: None,
        configurations: vec![c],
        distractors: None,
        path: path.to_path_buf(),
    }
}

fn task(id: &str, query: &str, expected: &str, k: usize, line: usize) -> Task {
    Task {
        id: id.into(),
        query: query.into(),
        expected: [(expected.to_string(), 1)].into(),
        k,
        note: None,
        line,
    }
}
