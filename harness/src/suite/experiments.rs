//! An experiments file (`experiments.yaml`): the configurations to replay and the baseline they
//! are compared with.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use ranklab_engine::yaml::Lines;
use serde::Deserialize;

use super::configuration::check_configuration;
use super::suite_file::is_file_name;
use super::{distractors, read_yaml, Configuration};

/// An experiments file: configurations to replay and the baseline they are compared with.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiments {
    /// Names the report (`reports/<suite>/<experiment>.md`).
    pub experiment: String,
    /// The configuration the others are compared with (default: the first).
    #[serde(default)]
    pub baseline: Option<String>,
    /// What the table says about the experiment (printed under its title).
    #[serde(default)]
    pub description: Option<String>,
    /// The configurations.
    pub configurations: Vec<Configuration>,
    /// Documents that are not the answer, drawn from another corpus, joining the suite's at
    /// growing sizes: the experiment also gets a corpus-size curve (`<experiment>.scale.md`).
    #[serde(default)]
    pub distractors: Option<distractors::Distractors>,
    /// The file it was read from.
    #[serde(skip)]
    pub path: PathBuf,
}

impl Experiments {
    /// Whether a configuration fine-tunes its rerank stage (`finetune:`).
    pub fn fine_tunes(&self) -> bool {
        self.configurations
            .iter()
            .any(|c| c.rerank.as_ref().is_some_and(|r| r.finetune.is_some()))
    }

    /// Loads and checks an experiments file.
    pub fn load(path: &Path) -> Result<Self> {
        let (mut ex, text): (Experiments, String) = read_yaml(path)?;
        let lines = Lines::new(&text);
        ex.path = path.to_path_buf();
        if !is_file_name(&ex.experiment) {
            bail!(
                "{}:{}: experiment name {:?} must be non-empty, without white space or slashes, and not `.` or `..` (it names the report files)",
                path.display(),
                lines.of("experiment", &ex.experiment),
                ex.experiment
            );
        }
        if ex.configurations.is_empty() {
            bail!(
                "{}: no configurations; add at least one under `configurations:`",
                path.display()
            );
        }
        let mut seen = HashSet::new();
        for c in &ex.configurations {
            let at = format!("{}:{}", path.display(), lines.of("name", &c.name));
            if !seen.insert(c.name.as_str()) {
                // The line of the second one, where the duplicate is.
                let at = format!("{}:{}", path.display(), lines.nth("name", &c.name, 1));
                bail!(
                    "{at}: duplicate configuration name {:?}; configuration names must be unique (they name the run files)",
                    c.name
                );
            }
            check_configuration(c, &at, path)?;
        }
        if let Some(d) = &ex.distractors {
            d.check(path, &text)?;
            if let Some(c) = ex.configurations.iter().find(|c| c.engine.is_some()) {
                bail!(
                    "{}:{}: configuration {:?} is an external engine, which searches its own index: it cannot search the suite's corpus joined by `distractors`; put it in another experiments file",
                    path.display(),
                    lines.of("name", &c.name),
                    c.name
                );
            }
        }
        match &ex.baseline {
            Some(b) if !seen.contains(b.as_str()) => bail!(
                "{}:{}: baseline {b:?} is not one of the configurations ({})",
                path.display(),
                lines.of("baseline", b),
                ex.configurations
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Some(_) => {}
            None => ex.baseline = Some(ex.configurations[0].name.clone()),
        }
        for c in &mut ex.configurations {
            if let Some(m) = &c.model {
                let at = format!("{}:{}", path.display(), lines.of("name", &c.name));
                let model = super::learned::load_model(m, &at, path)?;
                super::learned::check_shortlist(&model, c.shortlist.as_ref(), &at)?;
                super::learned::check_engine(&model, c.engine.is_some(), &at)?;
                c.learned = Some(model);
            }
        }
        Ok(ex)
    }

    /// The practice file of a configuration, resolved against this file's directory.
    pub fn practice_path(&self, c: &Configuration) -> PathBuf {
        let dir = self.path.parent().unwrap_or(Path::new("."));
        dir.join(
            c.practice
                .clone()
                .unwrap_or_else(|| PathBuf::from("search-practice.yaml")),
        )
    }

    /// The baseline configuration's name.
    pub fn baseline(&self) -> &str {
        self.baseline
            .as_deref()
            .unwrap_or(&self.configurations[0].name)
    }
}

#[cfg(test)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::RerankSpec;

    fn load(yaml: &str) -> Result<Experiments> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("experiments.yaml");
        std::fs::write(&path, yaml).unwrap();
        Experiments::load(&path)
    }

    const TWO_BATCHES: &str = "experiment: e\nbaseline: a\nconfigurations:\n  - name: a\n    retriever: bm25\n    rerank: { model: m, shortlist: 5 }\n  - name: b\n    retriever: bm25\n    rerank: { model: m, shortlist: 5, batch: 8 }\n";

    #[test]
    fn a_rerank_batch_is_read_and_names_a_separate_model() {
        let ex = load(TWO_BATCHES).unwrap();
        let specs: Vec<&RerankSpec> = ex
            .configurations
            .iter()
            .map(|c| c.rerank.as_ref().unwrap())
            .collect();
        assert_eq!((specs[0].batch(), specs[1].batch()), (1, 8));
        assert_eq!(specs[0].model_key(), "m");
        assert_eq!(specs[1].model_key(), "m (batch 8)");
    }

    #[test]
    fn a_rerank_batch_out_of_range_is_refused() {
        for bad in ["batch: 0", "batch: 1025"] {
            let err = load(&TWO_BATCHES.replace("batch: 8", bad)).unwrap_err();
            assert!(
                format!("{err:#}").contains("batch must be between 1 and 1024"),
                "{bad}: {err:#}"
            );
        }
    }

    #[test]
    fn a_rerank_with_a_wiring_is_refused() {
        for wiring in ["legacy", "current"] {
            let yaml = TWO_BATCHES.replace(
                "rerank: { model: m, shortlist: 5 }\n",
                &format!("rerank: {{ model: m, shortlist: 5 }}\n    wiring: {wiring}\n"),
            );
            let err = load(&yaml).unwrap_err();
            assert!(
                format!("{err:#}").contains("`rerank` and `wiring` cannot be combined"),
                "{wiring}: {err:#}"
            );
        }
    }
}

#[cfg(test)]
#[cfg(test)]
mod formats_reference_experiments {
    /// docs/formats.md names every field of an experiments file (read from the serde types);
    /// `engine:` (the external engines' fields) is docs/engines.md's, checked whole.
    #[test]
    fn formats_md_names_every_experiments_field() {
        let reference = include_str!("../../../docs/formats.md");
        let engines = include_str!("../../../docs/engines.md");
        let shape = ranklab_engine::yaml::shape::of::<crate::engine_spec::EngineSpec>();
        let elsewhere: Vec<&str> = shape
            .fields
            .keys()
            .chain(shape.variants.keys())
            .copied()
            .collect();
        ranklab_engine::yaml::shape::documented::<super::Experiments>(
            reference,
            "Experiments",
            &elsewhere,
        )
        .unwrap();
        ranklab_engine::yaml::shape::documented::<crate::engine_spec::EngineSpec>(engines, "", &[])
            .unwrap();
    }

    /// The tracer reaches the nested types (so the test above can fail): fields of `bm25:`,
    /// `rerank:` and `engine:`, and the values of `retriever` and `wiring`, as written here.
    #[test]
    fn the_experiments_shape_reaches_every_nested_type() {
        let names = ranklab_engine::yaml::shape::of::<super::Experiments>().names();
        for n in [
            "experiment",
            "practice",
            "k1",
            "analyzer",
            "lucene",
            "shortlist",
            "batch",
            "command",
            "http",
            "timeout_ms",
            "external",
            "legacy",
        ] {
            assert!(names.contains(n), "{n} not in {names:?}");
        }
    }
}
