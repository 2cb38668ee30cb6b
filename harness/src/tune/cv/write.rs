//! `ranklab tune FILE --write` for every kind of tuning: the configuration tuned on all tasks
//! added to `experiments-tune-<name>.yaml` beside the configuration's experiments file, with
//! its provenance, only when the out-of-fold gain over the shipped configuration is detectable
//! (p < 0.05 and Δ > 0; else an error saying so, exit 2, nothing written but the report).
//!
//! - a weighted fusion's weights and normalization: [`super::session`]'s `write_tuned`;
//! - `rerank.interpolate`: [`interpolated`], the configuration's own entry copied from its
//!   experiments file with the chosen α;
//! - a learned ranker: [`learned`], the model trained on all tasks copied to
//!   `<suite>/models/tune-<name>.model.json` and a `retriever: learned` configuration over the
//!   same lists (embedder, BM25, depth) naming it.
//!
//! A configuration with `engine:` (a weighted fusion weighing `engine`, and a learned model with
//! the `external` feature) is written with its `engine:` copied as the experiments file writes
//! it ([`engine_yaml`]): the same command, cwd, env and HTTP templates (a `${NAME}` stays a
//! reference, never its value) beside the same depth, so the engine's hash, and the recording
//! the replay finds by it, stay the tuning's.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use yaml_serde::{Mapping, Value as Yaml};

use super::session::Outcome;
use crate::stats;
use crate::suite::fusion::FusionSpec;
use crate::suite::{Configuration, Experiments};

/// Refuses `--write` unless the out-of-fold gain over the shipped configuration is detectable.
pub(crate) fn check_detectable(o: &Outcome) -> Result<()> {
    if !(o.paired.significant(stats::ALPHA) && o.paired.delta > 0.0) {
        bail!("--write refused: the out-of-fold gain over {:?} is not detectable (Δ {:+.4}, p {}): no experiments file written (the report is)", o.shipped.0, o.paired.delta, stats::format_p(o.paired.p_holm));
    }
    Ok(())
}

/// The description of the written experiments file: the command, the out-of-fold figures and
/// what was chosen on all tasks.
pub(crate) fn provenance(o: &Outcome, chosen: &str) -> String {
    format!(
        "Tuned by `ranklab tune {file}`: {measure} out of fold {oof:.4} against {shipped} {sv:.4} (Δ {d:+.4}, p {p}, {folds} task folds, seed {seed}); {chosen} on all {n} tasks.",
        file = o.plan.path.display(),
        measure = o.plan.file.measure,
        oof = o.paired.mean,
        shipped = o.shipped.0,
        sv = o.paired.baseline_mean,
        d = o.paired.delta,
        p = stats::format_p(o.paired.p_holm),
        folds = o.folds.len(),
        seed = o.plan.file.seed,
        n = o.tasks.len(),
    )
}

/// `experiments-tune-<name>.yaml` in `dir`: header, baseline, then the configurations' YAML.
fn write_file(
    o: &Outcome,
    dir: &Path,
    chosen: &str,
    baseline: &str,
    items: &str,
) -> Result<PathBuf> {
    let path = dir.join(format!("experiments-tune-{}.yaml", o.plan.file.tune));
    let text = format!(
        "experiment: tuned-{t}\ndescription: >-\n  {desc}\nbaseline: {baseline}\nconfigurations:\n{items}",
        t = o.plan.file.tune,
        desc = provenance(o, chosen),
    );
    crate::report::atomic::write(&path, text.as_bytes())?;
    Ok(path)
}

/// The entry of configuration `name` in the experiments file `path`, as written.
fn entry(path: &Path, name: &str) -> Result<Mapping> {
    let text = ranklab_engine::input::read_text(path)?;
    let doc: Yaml =
        yaml_serde::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
    let found = doc
        .get("configurations")
        .and_then(Yaml::as_sequence)
        .into_iter()
        .flatten()
        .filter_map(Yaml::as_mapping)
        .find(|m| m.get("name").and_then(Yaml::as_str) == Some(name));
    match found {
        Some(m) => Ok(m.clone()),
        None => bail!("--write: configuration {name:?} is not written in {} (a BEIR collection's configurations are `ranklab beir`'s own); the report is written, copy the chosen values by hand", path.display()),
    }
}

/// Writes the tuned `rerank.interpolate`: the configuration as written (the baseline) and
/// `<configuration>-tuned`, the same entry with α chosen on all tasks.
pub(crate) fn interpolated(
    o: &Outcome,
    c: &Configuration,
    ex: &Experiments,
    alpha: f64,
) -> Result<PathBuf> {
    let written = entry(&ex.path, &c.name)?;
    let mut tuned = written.clone();
    tuned.insert("name".into(), Yaml::from(format!("{}-tuned", c.name)));
    let Some(Yaml::Mapping(rerank)) = tuned.get_mut("rerank") else {
        bail!(
            "--write: configuration {:?} of {} has no `rerank:` mapping to set `interpolate` in",
            c.name,
            ex.path.display()
        );
    };
    rerank.insert("interpolate".into(), Yaml::from(alpha));
    let items = yaml_serde::to_string(&vec![Yaml::Mapping(written), Yaml::Mapping(tuned)])?;
    let dir = ex.path.parent().unwrap_or(Path::new("."));
    write_file(
        o,
        dir,
        &format!("rerank.interpolate {alpha} chosen"),
        &c.name,
        &items,
    )
}

/// Writes a learned tuning's model beside the suite (`models/tune-<name>.model.json` in the
/// experiments file's folder) and `<configuration>-learned` (`retriever: learned`, the same
/// embedder, BM25 and depth as the lists it was trained on) beside the configuration as written.
pub(crate) fn learned(
    o: &Outcome,
    c: &Configuration,
    spec: &FusionSpec,
    ex: &Experiments,
    model_json: &str,
) -> Result<PathBuf> {
    let dir = ex.path.parent().unwrap_or(Path::new("."));
    let model = format!("models/tune-{}.model.json", o.plan.file.tune);
    std::fs::create_dir_all(dir.join("models"))
        .with_context(|| format!("creating {}", dir.join("models").display()))?;
    crate::report::atomic::write(&dir.join(&model), model_json.as_bytes())?;
    let p = c.bm25();
    let shortlist = feature_shortlist(c, spec, model_json)?;
    let engine = engine_yaml(c, ex)?;
    let m: ranklab_engine::learn::Model = serde_json::from_str(model_json)?;
    let own_engine = match crate::suite::learned::uses_external(&m) {
        true => engine.as_str(),
        false => "",
    };
    let learned = format!(
        "  - name: {}-learned\n    retriever: learned\n    model: {model}\n    embedder: {}\n    bm25: {{ k1: {}, b: {}, analyzer: {} }}\n    depth: {}\n{own_engine}{shortlist}",
        c.name,
        c.embedder().unwrap_or_default(),
        p.k1,
        p.b,
        p.analyzer.name(),
        c.depth(),
    );
    let items = super::render::configuration_yaml(c, &c.name, spec, &engine)? + &learned;
    let key = o.models.last().map_or("", |k| &k[..12.min(k.len())]);
    write_file(
        o,
        dir,
        &format!("the model `{key}` ({model}) trained"),
        &c.name,
        &items,
    )
}

/// The `shortlist:` line of a learned configuration whose model uses the `cross-encoder` or
/// `colbert` features (empty otherwise): the shortlist the tuning scored them over, `c`'s rerank
/// width cut from its fusion's `shortlist_from` (`tune::cv::learned::model_parts`). An RRF
/// shortlist with a constant other than 60 cannot be written (a learned configuration has no
/// `rrf_k:`) and is refused.
fn feature_shortlist(c: &Configuration, spec: &FusionSpec, model_json: &str) -> Result<String> {
    let m: ranklab_engine::learn::Model = serde_json::from_str(model_json)?;
    if crate::suite::learned::model_features(&m).is_empty() {
        return Ok(String::new());
    }
    let (Some(r), true) = (&c.rerank, spec.names_rerank()) else {
        bail!("--write: the model's reranker features need the shortlist of a fusion that weighs `rerank`, and {:?} has none", c.name);
    };
    let from = spec.shortlist_from();
    if from == crate::suite::fusion::ShortlistFrom::Rrf && c.rrf().k != 60.0 {
        bail!("--write: {:?} cuts its shortlist from RRF with k {}, and a learned configuration's shortlist uses k 60; the report and the model are written, set rrf_k to 60 to write it", c.name, c.rrf().k);
    }
    Ok(format!(
        "    shortlist: {{ width: {}, from: {} }}\n",
        r.shortlist,
        from.name()
    ))
}

/// The `engine:` lines of configuration `c` as its experiments file writes them (indented as a
/// list item's key; empty when `c` has no engine): copied, not rebuilt, so that the written
/// configuration has the same engine hash (`external::recording::config_hash`) and an env value
/// read from the environment stays `${NAME}`.
pub(crate) fn engine_yaml(c: &Configuration, ex: &Experiments) -> Result<String> {
    if c.engine.is_none() {
        return Ok(String::new());
    }
    let written = entry(&ex.path, &c.name)?;
    let Some(engine) = written.get("engine") else {
        bail!(
            "--write: configuration {:?} of {} has no `engine:` as written",
            c.name,
            ex.path.display()
        );
    };
    let mut m = Mapping::new();
    m.insert("engine".into(), engine.clone());
    let text = yaml_serde::to_string(&Yaml::Mapping(m))?;
    Ok(text.lines().map(|l| format!("    {l}\n")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine whose env value and HTTP header come from the environment: the written
    /// `engine:` keeps `${SEARCH_TOKEN}` as written (the variable is set here to a value that
    /// must not appear), and every other field as the file writes it. Oracle: the file's text.
    #[test]
    fn the_engine_is_copied_as_written_and_a_secret_stays_a_reference() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("experiments-e.yaml");
        let body = "experiment: e\nconfigurations:\n  - name: e\n    engine:\n      command: [node, serve.js]\n      cwd: engines/e\n      env: { SEARCH_TOKEN: \"${SEARCH_TOKEN}\", MODE: fast }\n";
        std::fs::write(&path, body).unwrap();
        std::env::set_var("SEARCH_TOKEN", "s3cr3t-value-never-written");
        let ex = Experiments::load(&path).unwrap();
        let c = &ex.configurations[0];
        let got = engine_yaml(c, &ex).unwrap();
        assert_eq!(
            got,
            "    engine:\n      command:\n      - node\n      - serve.js\n      cwd: engines/e\n      env:\n        SEARCH_TOKEN: ${SEARCH_TOKEN}\n        MODE: fast\n"
        );
        assert!(!got.contains("s3cr3t"));
        // A configuration without an engine writes none.
        let mut plain = c.clone();
        plain.engine = None;
        assert_eq!(engine_yaml(&plain, &ex).unwrap(), "");
    }
}
