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
    if spec.names_engine() {
        bail!("--write does not yet write a learned configuration over a fusion with `engine:` (nor replay the external feature as `retriever: learned`); nothing written, the report's figures stand");
    }
    let dir = ex.path.parent().unwrap_or(Path::new("."));
    let model = format!("models/tune-{}.model.json", o.plan.file.tune);
    std::fs::create_dir_all(dir.join("models"))
        .with_context(|| format!("creating {}", dir.join("models").display()))?;
    crate::report::atomic::write(&dir.join(&model), model_json.as_bytes())?;
    let p = c.bm25();
    let shortlist = feature_shortlist(c, spec, model_json)?;
    let learned = format!(
        "  - name: {}-learned\n    retriever: learned\n    model: {model}\n    embedder: {}\n    bm25: {{ k1: {}, b: {}, analyzer: {} }}\n    depth: {}\n{shortlist}",
        c.name,
        c.embedder().unwrap_or_default(),
        p.k1,
        p.b,
        p.analyzer.name(),
        c.depth(),
    );
    let items = super::render::configuration_yaml(c, &c.name, spec)? + &learned;
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
