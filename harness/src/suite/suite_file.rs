//! The suite file (`tasks/<suite>/suite.yaml`): loading and checking it, its corpus, and the
//! files beside it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::yaml::Lines;
use serde::Deserialize;

use super::judging::merge_judgments;
use super::task::{check_k, RawTask};
use super::{read_yaml, Selection, Task, SEE_FORMATS};

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
        // Present in any form (a folder in its place too) it is read, so that what is not a
        // judgments file is refused, not silently left out of the report.
        let judgments = if judgments_path.symlink_metadata().is_ok() {
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

    /// The directory of the suite file.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// The folder of the suite's `pool.yaml` and `judgments.yaml`: the suite file's, or a BEIR
    /// collection's report folder ([`Suite::judging`]).
    pub fn judging_dir(&self) -> &Path {
        self.judging.as_deref().unwrap_or_else(|| self.dir())
    }
}

/// The ids of `corpus`'s documents (for "did you mean" suggestions).
pub fn corpus_ids(corpus: &Corpus) -> impl Iterator<Item = &str> {
    corpus.docs.iter().map(|d| d.id.as_str())
}

/// Whether `name` can name a file or directory of the report tree: non-empty, no white space,
/// no path separator, not `.` or `..`.
pub(super) fn is_file_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && !name.chars().any(|c| c.is_whitespace() || c.is_control())
}

#[cfg(test)]
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
