//! The names of a suite's experiments and configurations become file names under
//! `reports/<suite>/`, so they are checked across every experiments file of the suite before
//! anything is replayed (issue 25: nothing is overwritten without a word):
//!
//! - experiment names are unique within the suite (each names its own report);
//! - a configuration name used in two files means the same settings there (then both reports
//!   share its run file `runs/<name>.trec`), or it is an error naming both files and lines;
//! - no name produces a file name another one produces (`exp.stats` writes `exp.stats.csv`, which
//!   `exp` writes too), compared without regard to case (one file on macOS and Windows).
//!
//! The file names are listed here ([`experiment_file_names`], [`configuration_file_names`],
//! [`OTHER_WRITERS`]); the report writer checks at run time that it writes no other.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use ranklab_engine::policy::Wiring;
use ranklab_engine::yaml::Lines;

use super::{Configuration, Experiments, Retriever, Suite};

/// Loads the experiments files `paths` (none given: every `experiments*.yaml` beside the suite
/// file) and checks their names together (see the module documentation).
///
/// Found rather than named, an experiments file that fine-tunes a rerank stage is left out (its
/// training takes minutes to hours, and its reports are left as they are), said once per
/// process on stderr; name it (`-x`) to train and render it, as `just finetune` does.
pub fn load_experiments(suite: &Suite, paths: &[PathBuf]) -> Result<Vec<Experiments>> {
    let found = paths.is_empty();
    let paths = if found {
        super::discover::experiment_paths(suite)?
    } else {
        paths.to_vec()
    };
    let all = paths
        .iter()
        .map(|p| Experiments::load(p))
        .collect::<Result<Vec<_>>>()?;
    check_names(&all)?;
    if !found {
        return Ok(all);
    }
    let (tuning, rest): (Vec<Experiments>, Vec<Experiments>) =
        all.into_iter().partition(Experiments::fine_tunes);
    for ex in &tuning {
        say_left_out(&ex.path);
    }
    if rest.is_empty() {
        bail!(
            "{}: every experiments file beside the suite fine-tunes a model, and found files that do are left out; name one with -x to train and render it",
            suite.dir().display()
        );
    }
    Ok(rest)
}

/// Files named with `-x` (`named`, loaded as `loaded`) are checked against the suite's other
/// experiments files whose reports are in `reports` (`<reports>/<suite>/<experiment>.json`):
/// their reports and run files go to the same folder (attack pass, 2026-12-07: `run -x
/// mine.yaml` whose experiment was called `retrieval` silently replaced
/// reports/docir/retrieval.* and runs/fusion.trec). Into a folder where no other experiment of
/// the suite wrote, nothing is overwritten and nothing is checked.
pub fn check_named_beside_written(
    suite: &Suite,
    named: &[PathBuf],
    loaded: &[Experiments],
    reports: &Path,
) -> Result<()> {
    if named.is_empty() {
        return Ok(());
    }
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    let dir = reports.join(&suite.name);
    let mut all = loaded.to_vec();
    // A suite with no experiments file of its own is run with named ones only.
    for p in suite.files_named("experiments")? {
        if named.iter().any(|n| same(n, &p)) {
            continue;
        }
        let ex = Experiments::load(&p)?;
        if dir.join(format!("{}.json", ex.experiment)).is_file() {
            all.push(ex);
        }
    }
    check_names(&all)
}

/// Says once per process that the fine-tuning experiments file `path` was left out.
fn say_left_out(path: &Path) {
    static SAID: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
    let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
    if !said.iter().any(|p| p == path) {
        said.push(path.to_path_buf());
        eprintln!(
            "{}: fine-tunes a model, so it is not replayed unless named (-x); its reports are left as they are (`just finetune` trains and renders it)",
            path.display()
        );
    }
}

/// A place in an experiments file.
struct Site<'a> {
    path: &'a Path,
    line: usize,
}

impl fmt::Display for Site<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)
    }
}

/// Checks the names of `all` (the experiments files of one suite) together.
pub fn check_names(all: &[Experiments]) -> Result<()> {
    let lines: Vec<Lines> = all
        .iter()
        .map(|ex| Lines::new(&ranklab_engine::input::read_text(&ex.path).unwrap_or_default()))
        .collect();
    let experiment_at = |i: usize| Site {
        path: &all[i].path,
        line: lines[i].of("experiment", &all[i].experiment),
    };
    let configuration_at = |i: usize, name: &str| Site {
        path: &all[i].path,
        line: lines[i].of("name", name),
    };

    // 1. One report per experiment name.
    let mut experiments: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, ex) in all.iter().enumerate() {
        if let Some(&j) = experiments.get(ex.experiment.as_str()) {
            bail!(
                "{}: experiment name {:?} is also the experiment of {}; each experiments file of a suite writes its own report ({}.md, .csv, .json, …), so one would overwrite the other: rename one of the two",
                experiment_at(i),
                ex.experiment,
                experiment_at(j),
                ex.experiment
            );
        }
        experiments.insert(&ex.experiment, i);
    }

    // 2. One configuration name, one setting (and one run file).
    let mut configurations: BTreeMap<&str, (usize, Settings)> = BTreeMap::new();
    for (i, ex) in all.iter().enumerate() {
        for c in &ex.configurations {
            let settings = Settings::of(c, ex);
            match configurations.get(c.name.as_str()) {
                Some((j, first)) => {
                    let differ = first.differences(&settings);
                    if !differ.is_empty() {
                        bail!(
                            "{}: configuration {:?} is also defined in {} with different settings ({}); a configuration name names one run file (runs/{}.trec) that both reports would describe: give one of them another name, or the same settings",
                            configuration_at(i, &c.name),
                            c.name,
                            configuration_at(*j, &c.name),
                            differ.join(", "),
                            c.name
                        );
                    }
                }
                None => {
                    configurations.insert(&c.name, (i, settings));
                }
            }
        }
    }

    // 3. No two names write one file (the same configuration in two files writes its one run
    //    file once), nor a file another command writes into the same folder.
    // Per file name (lower case): the name as written, who writes it and where that is said.
    let mut files: BTreeMap<String, (String, String, Option<String>)> = BTreeMap::new();
    let mut claim = |file: String, writer: String, at: Option<String>| -> Result<()> {
        let key = file.to_lowercase();
        if let Some((theirs, other, other_at)) = files.get(&key) {
            let case = if *theirs == file {
                String::new()
            } else {
                format!(" (as {theirs}: names that differ only in case are one file on macOS and Windows)")
            };
            let other = match other_at {
                Some(o) => format!("{other} ({o})"),
                None => other.clone(),
            };
            bail!(
                "{}: {writer} writes reports/<suite>/{file}, which {other} writes too{case}, so one would overwrite the other: rename {}",
                at.unwrap_or_default(),
                if other_at.is_some() { "one of the two" } else { "it" }
            );
        }
        files.insert(key, (file, writer, at));
        Ok(())
    };
    for (file, command) in OTHER_WRITERS {
        claim(file.to_string(), format!("`{command}`"), None)?;
    }
    for (name, (i, _)) in &configurations {
        for file in configuration_file_names(name) {
            let at = configuration_at(*i, name).to_string();
            claim(file, format!("configuration {name:?}"), Some(at))?;
        }
    }
    for (name, &i) in &experiments {
        for file in experiment_file_names(name) {
            let at = experiment_at(i).to_string();
            claim(file, format!("experiment {name:?}"), Some(at))?;
        }
    }
    Ok(())
}

/// What an experiment named `stem` writes into its suite's report folder, besides `qrels.txt`
/// and its configurations' files ([`configuration_file_names`]). The report writer
/// ([`crate::report::check_files`]) refuses to write any other, so the names [`check_names`]
/// checks are these.
pub fn experiment_file_names(stem: &str) -> Vec<String> {
    [
        ".md",
        ".csv",
        ".json",
        ".stats.csv",
        ".warranty.csv",
        ".tasks.csv",
        ".metrics.svg",
        ".delta.svg",
        ".tasks.svg",
        ".scale.md",
        ".scale.csv",
        ".scale.json",
        ".scale.svg",
        ".finetune.svg",
        ".html",
    ]
    .iter()
    .map(|suffix| format!("{stem}{suffix}"))
    .collect()
}

/// What a configuration named `name` writes into its suite's report folder: its run and, under
/// `--record`, an external engine's recording ([`recording_file_name`]) and a rerank
/// endpoint's ([`rerank_recording_file_name`]).
pub fn configuration_file_names(name: &str) -> Vec<String> {
    vec![
        format!("runs/{name}.trec"),
        format!("runs/{}", recording_file_name(name)),
        format!("runs/{}", rerank_recording_file_name(name)),
    ]
}

/// Files another command writes into a suite's report folder, which no experiment may write:
/// `(file, command)` (`ranklab tune --reports`, see `tune/session.rs`; the cost file,
/// `report::costs`).
pub const OTHER_WRITERS: &[(&str, &str)] = &[
    ("tuning.md", "ranklab tune"),
    ("tuning.csv", "ranklab tune"),
    ("tuning.json", "ranklab tune"),
    ("tuning.heatmap.svg", "ranklab tune"),
    ("costs.json", "ranklab bench --measure-costs"),
];

/// The file name of a configuration's recording (beside `<name>.trec`).
pub fn recording_file_name(configuration: &str) -> String {
    format!("{configuration}.recording.json")
}

/// The file name of the recording of a configuration's rerank endpoint (beside `<name>.trec`;
/// it ends as [`recording_file_name`] does, so a report tree's recordings are one pattern).
pub fn rerank_recording_file_name(configuration: &str) -> String {
    format!("{configuration}.rerank.recording.json")
}

/// What a configuration means, for comparing two of one name: the fields as written, with the
/// documented defaults filled in and the paths resolved against the file that names them.
struct Settings {
    config: Configuration,
    /// The folder an external engine's `cwd` and program are resolved against.
    engine_base: Option<PathBuf>,
}

impl Settings {
    fn of(c: &Configuration, ex: &Experiments) -> Settings {
        let mut config = c.clone();
        config.depth = Some(c.depth());
        config.bm25 = matches!(
            c.retriever,
            Retriever::Bm25 | Retriever::Fusion | Retriever::Learned
        )
        .then(|| c.bm25());
        config.rrf_k = (c.retriever == Retriever::Fusion).then(|| c.rrf().k);
        config.embedder = c.embedder().map(str::to_string);
        if let Some(r) = &mut config.rerank {
            r.batch = Some(r.batch());
            // A prompt file is named relative to the experiments file that names it.
            let base = ex.path.parent().unwrap_or(Path::new("."));
            r.prompt = r.prompt.as_ref().map(|p| absolute(&base.join(p)));
        }
        // A model file is named relative to the experiments file that names it.
        config.model = c
            .model
            .as_ref()
            .map(|m| absolute(&ex.path.parent().unwrap_or(Path::new(".")).join(m)));
        config.practice = (c.wiring != Wiring::None).then(|| absolute(&ex.practice_path(c)));
        let engine_base = c
            .engine
            .is_some()
            .then(|| absolute(ex.path.parent().unwrap_or(Path::new("."))));
        Settings {
            config,
            engine_base,
        }
    }

    /// The fields in which `other` differs, as written in an experiments file.
    fn differences(&self, other: &Settings) -> Vec<&'static str> {
        let (a, b) = (&self.config, &other.config);
        let mut out = Vec::new();
        let mut differ = |same: bool, field: &'static str| {
            if !same {
                out.push(field);
            }
        };
        differ(a.retriever == b.retriever, "retriever");
        differ(a.engine == b.engine, "engine");
        differ(
            self.engine_base == other.engine_base,
            "the folder the engine runs from",
        );
        differ(a.embedder == b.embedder, "embedder");
        differ(a.bm25 == b.bm25, "bm25");
        differ(a.rrf_k == b.rrf_k, "rrf_k");
        differ(a.fusion == b.fusion, "fusion");
        differ(a.depth == b.depth, "depth");
        differ(a.rerank == b.rerank, "rerank");
        differ(a.wiring == b.wiring, "wiring");
        differ(a.practice == b.practice, "practice");
        // A field added to configurations later still counts, if not yet by name.
        if out.is_empty() && a != b {
            out.push("other settings");
        }
        out
    }
}

/// `path` absolute and, when it exists, with its links and `..` resolved.
fn absolute(path: &Path) -> PathBuf {
    std::fs::canonicalize(path)
        .or_else(|_| std::path::absolute(path))
        .unwrap_or_else(|_| path.to_path_buf())
}
