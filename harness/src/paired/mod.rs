//! Paired assertions (`tasks/<suite>/paired.yaml`): the same query on the same fixture through
//! the legacy and the current wiring, with the expected outcome under each.
//!
//! An assertion *holds* when `above` ranks strictly above `below` (a record not retrieved ranks
//! below every retrieved one; both missing is an error). Each wiring's actual outcome is compared
//! with its expectation; a legacy half expected `inverted` that now `holds` fails too, because a
//! pair whose bug half cannot fail proves nothing. A file in which no assertion expects the two
//! wirings to differ is refused: it cannot show what the current wiring fixes.

pub mod beside;

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::policy::Weights;
use serde::Deserialize;

use crate::replay::{replay_with, Ranked, ReplayOptions, Replayer};
use crate::suite::{read_yaml, Configuration, Experiments, Suite, Task};
use ranklab_engine::policy::Wiring;
use ranklab_engine::yaml::Lines;

/// The `paired*.yaml` files of the folder `dir`, sorted by path (the order `ranklab check` and
/// the suite's report check them in).
pub fn files_in(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension().is_some_and(|x| x == "yaml")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("paired"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Outcome of one assertion under one wiring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// `above` ranks above `below`.
    Holds,
    /// `below` ranks above `above` (the bug shows).
    Inverted,
}

impl Outcome {
    /// As written in paired.yaml.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Inverted => "inverted",
        }
    }
}

/// One assertion.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Assertion {
    /// Id (unique in the file).
    pub id: String,
    /// The query.
    pub query: String,
    /// Must rank above ...
    pub above: String,
    /// ... this record.
    pub below: String,
    /// Expected under the legacy wiring.
    pub legacy: Outcome,
    /// Expected under the current wiring.
    pub current: Outcome,
    /// What the pair covers.
    #[serde(default)]
    pub covers: Option<String>,
}

/// A paired.yaml file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairedFile {
    /// The suite file (relative to this file).
    pub suite: PathBuf,
    /// The configuration (of the experiments beside the suite) whose first stage both wirings
    /// share; or None when the file names two configurations (`legacy`, `current`).
    #[serde(default)]
    pub configuration: Option<String>,
    /// The configuration playing the legacy half (with `current`, instead of `configuration`).
    #[serde(default)]
    pub legacy: Option<String>,
    /// The configuration playing the current half.
    #[serde(default)]
    pub current: Option<String>,
    /// Practice file (relative to this file; default search-practice.yaml beside it).
    #[serde(default)]
    pub practice: Option<PathBuf>,
    /// The assertions.
    pub assertions: Vec<Assertion>,
    /// Where it was read from.
    #[serde(skip)]
    pub path: PathBuf,
}

/// The result of one assertion under one wiring.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// Assertion id.
    pub id: String,
    /// The half: [`Wiring::Legacy`] or [`Wiring::Current`] (for a file naming two
    /// configurations, the half that configuration plays).
    pub wiring: Wiring,
    /// The configuration of that half, when the file names two (None: one configuration under
    /// both wirings).
    pub configuration: Option<String>,
    /// Rank of `above` (None: not retrieved).
    pub above_rank: Option<usize>,
    /// Rank of `below`.
    pub below_rank: Option<usize>,
    /// Expected outcome.
    pub expected: Outcome,
    /// Actual outcome.
    pub actual: Outcome,
}

impl Verdict {
    /// Whether the expectation is met.
    pub fn pass(&self) -> bool {
        self.expected == self.actual
    }
}

impl PairedFile {
    /// Refuses a file without assertions, a duplicate id, an assertion naming one record twice
    /// or a record not in `corpus`, and a file in which no assertion expects the two wirings to
    /// differ.
    fn check_assertions(&self, lines: &Lines, suite: &Suite, corpus: &Corpus) -> Result<()> {
        let path = &self.path;
        if self.assertions.is_empty() {
            bail!(
                "{}: no assertions; add at least one under `assertions:`",
                path.display()
            );
        }
        let mut seen = HashSet::new();
        for a in &self.assertions {
            let at = format!("{}:{}", path.display(), lines.of("id", &a.id));
            if !seen.insert(a.id.as_str()) {
                bail!("{at}: duplicate assertion id {:?}", a.id);
            }
            if a.above == a.below {
                bail!("{at}: assertion {:?} names {:?} as both `above` and `below`; name two different records", a.id, a.above);
            }
            for r in [&a.above, &a.below] {
                if corpus.index_of(r).is_none() {
                    bail!(
                        "{at}: assertion {:?} names unknown record {r:?}; it is not in {}{}",
                        a.id,
                        suite.corpus_path.display(),
                        ranklab_engine::suggest::did_you_mean(r, crate::suite::corpus_ids(corpus))
                    );
                }
            }
        }
        if self.assertions.iter().all(|a| a.legacy == a.current) {
            bail!(
                "{}:{}: no assertion expects the legacy and the current wiring to differ (every one has `legacy` equal to `current`), so the file cannot show what the current wiring fixes; add one with `legacy: inverted` and `current: holds`",
                path.display(),
                lines.of("assertions", "")
            );
        }
        Ok(())
    }

    /// The two halves as experiments: the named configuration under the legacy and the current
    /// wiring, or the two named configurations, found in the experiments files beside the suite.
    fn experiments(&self, lines: &Lines, suite: &Suite) -> Result<Experiments> {
        let path = &self.path;
        // Loaded and checked together: a configuration name means one setting in every file
        // (or the load fails naming both), so the first file naming it is the one.
        let loaded = crate::suite::load_experiments(suite, &[])?;
        let files: Vec<PathBuf> = loaded.iter().map(|ex| ex.path.clone()).collect();
        let mut all = Vec::new();
        for ex in loaded {
            let f = ex.path.clone();
            all.extend(ex.configurations.into_iter().map(|c| (c, f.clone())));
        }
        let find = |field: &str, name: &str| {
            all.iter()
                .find(|(c, _)| c.name == name)
                .cloned()
                .with_context(|| {
                    format!(
                        "{}:{}: configuration {name:?} is not in the experiments files beside {} ({}){}",
                        path.display(),
                        lines.of(field, name),
                        suite.path.display(),
                        files
                            .iter()
                            .map(|f| f.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        ranklab_engine::suggest::did_you_mean(
                            name,
                            all.iter().map(|(c, _)| c.name.as_str())
                        )
                    )
                })
        };
        match (&self.configuration, &self.legacy, &self.current) {
            (Some(name), None, None) => self.under_both_wirings(find("configuration", name)?.0),
            (None, Some(old), Some(new)) => {
                if old == new {
                    bail!(
                        "{}:{}: `legacy` and `current` both name configuration {old:?}; name two different configurations",
                        path.display(),
                        lines.of("current", new)
                    );
                }
                if let Some(practice) = &self.practice {
                    bail!(
                        "{}:{}: `practice` applies to `configuration:` under two wirings; with `legacy` and `current` each configuration reads its own practice file (set `practice:` on the configuration)",
                        path.display(),
                        lines.of("practice", &practice.to_string_lossy())
                    );
                }
                two_configurations(old, find("legacy", old)?, find("current", new)?)
            }
            _ => bail!(
                "{}: name either `configuration:` (one configuration under the legacy and the current wiring) or both `legacy:` and `current:` (two configurations, e.g. an engine at its last release and at HEAD), not {}",
                path.display(),
                match (&self.configuration, &self.legacy, &self.current) {
                    (None, None, None) => "neither".to_string(),
                    (Some(_), _, _) => "`configuration` with `legacy`/`current`".to_string(),
                    _ => "only one of `legacy` and `current`".to_string(),
                }
            ),
        }
    }

    /// `base` twice, as `legacy` and `current` under those wirings, reading the file's practice
    /// file (default search-practice.yaml beside it).
    fn under_both_wirings(&self, base: Configuration) -> Result<Experiments> {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let practice = self
            .practice
            .clone()
            .unwrap_or_else(|| PathBuf::from("search-practice.yaml"));
        let practice = std::path::absolute(dir.join(practice))?;
        let mk = |name: &str, wiring| Configuration {
            name: name.to_string(),
            wiring,
            practice: Some(practice.clone()),
            ..base.clone()
        };
        Ok(Experiments {
            experiment: "paired".into(),
            baseline: Some("legacy".into()),
            description: None,
            configurations: vec![mk("legacy", Wiring::Legacy), mk("current", Wiring::Current)],
            distractors: None,
            path: self.path.clone(),
        })
    }
}

/// The legacy configuration `old` and the current one, each with the experiments file it was
/// found in.
fn two_configurations(
    old: &str,
    (old_c, old_file): (Configuration, PathBuf),
    (new_c, new_file): (Configuration, PathBuf),
) -> Result<Experiments> {
    // Each configuration keeps what its own experiments file resolves: its practice
    // file and (an external engine's `cwd`) its folder, the suite's.
    let own = |c: Configuration, f: &Path| -> Result<_> {
        let ex = Experiments {
            experiment: String::new(),
            baseline: None,
            description: None,
            configurations: Vec::new(),
            distractors: None,
            path: f.to_path_buf(),
        };
        let practice = std::path::absolute(ex.practice_path(&c))?;
        Ok(Configuration {
            practice: Some(practice),
            ..c
        })
    };
    Ok(Experiments {
        experiment: "paired".into(),
        baseline: Some(old.to_string()),
        description: None,
        configurations: vec![own(old_c, &old_file)?, own(new_c, &new_file)?],
        distractors: None,
        path: old_file,
    })
}

/// A loaded paired file with its suite, corpus and the experiments it draws its first stage from.
pub struct Paired {
    /// The file.
    pub file: PairedFile,
    /// The suite it refers to.
    pub suite: Suite,
    /// Two configurations: the named first stage under legacy and under current wiring.
    pub experiments: Experiments,
}

impl Paired {
    /// Loads and checks `path` against `corpus` (the suite's corpus, loaded by the caller).
    pub fn load(path: &Path) -> Result<(Paired, Corpus)> {
        let (mut file, text): (PairedFile, String) = read_yaml(path)?;
        let lines = Lines::new(&text);
        file.path = path.to_path_buf();
        let dir = path.parent().unwrap_or(Path::new("."));
        let suite = Suite::load(&dir.join(&file.suite)).with_context(|| {
            format!(
                "{}:{}: the suite of the assertions",
                path.display(),
                lines.of("suite", &file.suite.to_string_lossy())
            )
        })?;
        let corpus = suite.load_corpus()?;
        file.check_assertions(&lines, &suite, &corpus)?;
        let experiments = file.experiments(&lines, &suite)?;
        Ok((
            Paired {
                file,
                suite,
                experiments,
            },
            corpus,
        ))
    }

    /// Whether the file names two configurations (`legacy:`, `current:`) rather than one
    /// configuration under two wirings.
    pub fn names_two_configurations(&self) -> bool {
        self.file.configuration.is_none()
    }

    /// The assertions as tasks (one per assertion; `above` as the expected record).
    fn tasks(&self) -> Suite {
        let tasks = self
            .file
            .assertions
            .iter()
            .map(|a| Task {
                id: a.id.clone(),
                query: a.query.clone(),
                expected: BTreeMap::from([(a.above.clone(), 1)]),
                k: self.suite.k,
                note: None,
                line: 0,
            })
            .collect();
        Suite {
            tasks,
            judgments: None,
            judging: None,
            ..self.suite.clone()
        }
    }

    /// Runs both wirings (with `weights` instead of the practice file's, when given).
    pub fn check(&self, engine: &Replayer, weights: Option<Weights>) -> Result<Vec<Verdict>> {
        self.check_with(engine, weights, None)
    }

    /// [`Paired::check`]; with `recordings` (a suite's `runs/` folder, under `--from-recording`)
    /// external configurations are not asked: each assertion's ranking is the recorded answer
    /// to its query in the suite's recording of that configuration, and a query not recorded is
    /// an error ([`crate::external::recording::NotRecorded`]).
    pub fn check_with(
        &self,
        engine: &Replayer,
        weights: Option<Weights>,
        recordings: Option<&Path>,
    ) -> Result<Vec<Verdict>> {
        let suite = self.tasks();
        let mut opts = ReplayOptions {
            weights,
            ..ReplayOptions::default()
        };
        if let Some(dir) = recordings {
            opts.external = crate::external::Mode::FromRecording;
            opts.recordings = Some(dir.to_path_buf());
            opts.recorded = self.recorded(dir, &suite)?;
        }
        let r = replay_with(engine, &suite, &self.experiments, &opts)?;
        let mut out = Vec::new();
        let two = self.names_two_configurations();
        for (i, a) in self.file.assertions.iter().enumerate() {
            // The first configuration plays the legacy half, the second the current one.
            for (half, run) in r.runs.iter().enumerate() {
                let (wiring, expected) = match half {
                    0 => (Wiring::Legacy, a.legacy),
                    _ => (Wiring::Current, a.current),
                };
                let ranked = &run.per_task[i];
                let above_rank = rank_of(engine.corpus, ranked, &a.above);
                let below_rank = rank_of(engine.corpus, ranked, &a.below);
                let actual = match (above_rank, below_rank) {
                    (None, None) => bail!(
                        "{}:{}: assertion {:?}: neither {:?} nor {:?} is retrieved for {:?}; pick a query that finds them",
                        self.file.path.display(),
                        Lines::new(&ranklab_engine::input::read_text(&self.file.path).unwrap_or_default()).of("id", &a.id),
                        a.id,
                        a.above,
                        a.below,
                        a.query
                    ),
                    (Some(x), Some(y)) if x < y => Outcome::Holds,
                    (Some(_), None) => Outcome::Holds,
                    _ => Outcome::Inverted,
                };
                out.push(Verdict {
                    id: a.id.clone(),
                    wiring,
                    configuration: two.then(|| run.config.name.clone()),
                    above_rank,
                    below_rank,
                    expected,
                    actual,
                });
            }
        }
        Ok(out)
    }
}

impl Paired {
    /// Per external configuration of the pair, its recording of the assertions' queries, drawn
    /// from the suite's recording in `dir` of the configuration it stands for (its own name, or
    /// the `configuration:` both wirings share).
    fn recorded(
        &self,
        dir: &Path,
        tasks: &Suite,
    ) -> Result<Vec<crate::external::recording::Recording>> {
        use crate::external::recording::{file_name, NotRecorded, Recording};
        let text = ranklab_engine::input::read_text(&self.file.path).unwrap_or_default();
        let lines = Lines::new(&text);
        let mut out = Vec::new();
        for c in &self.experiments.configurations {
            let Some(spec) = &c.engine else { continue };
            let source = self.file.configuration.as_deref().unwrap_or(&c.name);
            let path = dir.join(file_name(source));
            let k = c.depth();
            let suite_rec = Recording::load(&path, source, spec, &self.suite.tasks, k)
                .map_err(|e| {
                    anyhow::Error::new(NotRecorded(format!(
                        "{}: the paired assertions need configuration {source:?}'s recording and --from-recording asks no engine: {e:#}",
                        self.file.path.display()
                    )))
                })?;
            let what = |t: &Task| {
                format!(
                    "{}:{}: assertion {:?}",
                    self.file.path.display(),
                    lines.of("id", &t.id),
                    t.id
                )
            };
            out.push(suite_rec.for_tasks(&path, &c.name, spec, &tasks.tasks, k, &what)?);
        }
        Ok(out)
    }
}

/// Whether one assertion's current half depends on the weights: its outcome under the current
/// wiring with the practice file's weights and with every weight zero.
#[derive(Debug, Clone)]
pub struct Dependence {
    /// Assertion id.
    pub id: String,
    /// Current wiring, the practice file's weights (or the weights asked for).
    pub weighted: Outcome,
    /// Current wiring, every weight zero (the first stage and the tie-breaks alone).
    pub zero: Outcome,
}

impl Dependence {
    /// True when zeroing the weights changes the current half's outcome.
    pub fn depends(&self) -> bool {
        self.weighted != self.zero
    }
}

impl Paired {
    /// Per assertion, the current half's outcome with `weights` (None: the practice file's) and
    /// with every weight zero.
    pub fn dependence(
        &self,
        engine: &Replayer,
        weights: Option<Weights>,
    ) -> Result<Vec<Dependence>> {
        self.dependence_with(engine, weights, None)
    }

    /// [`Paired::dependence`]; with `recordings`, external configurations answer from them, as
    /// in [`Paired::check_with`].
    pub fn dependence_with(
        &self,
        engine: &Replayer,
        weights: Option<Weights>,
        recordings: Option<&Path>,
    ) -> Result<Vec<Dependence>> {
        let current = |v: Vec<Verdict>| -> Vec<Verdict> {
            v.into_iter()
                .filter(|v| v.wiring == Wiring::Current)
                .collect()
        };
        let weighted = current(self.check_with(engine, weights, recordings)?);
        let zero = current(self.check_with(engine, Some(Weights::ZERO), recordings)?);
        Ok(weighted
            .into_iter()
            .zip(zero)
            .map(|(w, z)| Dependence {
                id: w.id,
                weighted: w.actual,
                zero: z.actual,
            })
            .collect())
    }
}

/// Per assertion, whether its current half depends on the weights, as a Markdown table.
pub fn dependence_table(d: &[Dependence]) -> String {
    let mut s = String::from("| assertion | current, weights | current, zero weights | current half depends on the weights |\n|---|---|---|---|\n");
    for x in d {
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            x.id,
            x.weighted.as_str(),
            x.zero.as_str(),
            if x.depends() { "yes" } else { "no" }
        ));
    }
    s
}

fn rank_of(corpus: &Corpus, ranked: &[Ranked], id: &str) -> Option<usize> {
    // An external engine's hits outside the corpus (doc >= corpus.len()) are never `id`, which
    // names a record of the corpus.
    ranked
        .iter()
        .position(|r| r.doc < corpus.len() && corpus.id(r.doc) == id)
        .map(|p| p + 1)
}

/// The verdicts as a Markdown table.
pub fn table(verdicts: &[Verdict]) -> String {
    let mut s = String::from("| assertion | wiring | rank above | rank below | expected | actual | verdict |\n|---|---|---:|---:|---|---|---|\n");
    let r = |x: Option<usize>| x.map_or("-".to_string(), |v| v.to_string());
    for v in verdicts {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            v.id,
            match &v.configuration {
                None => v.wiring.to_string(),
                Some(c) => format!("{} (`{c}`)", v.wiring),
            },
            r(v.above_rank),
            r(v.below_rank),
            v.expected.as_str(),
            v.actual.as_str(),
            if v.pass() { "pass" } else { "FAIL" }
        ));
    }
    s
}

#[cfg(test)]
mod formats_reference {
    /// docs/formats.md names every field of the paired file (read from the serde types).
    #[test]
    fn formats_md_names_every_field() {
        let reference = include_str!("../../../docs/formats.md");
        ranklab_engine::yaml::shape::documented::<super::PairedFile>(
            reference,
            "Paired assertions",
            &[],
        )
        .unwrap();
    }
}
