//! The cost file and its measurement: what each rerank model costs per scored (query, section)
//! pair, cold (the model computes every pair) and warm (every pair served from the score
//! cache), with the model's load time apart ([`measure`]), and each configuration's cost per
//! query ([`super::query_costs`]). `report::costs` renders them.
//!
//! Timings differ from run to run and a report must not (a second `ranklab bench` rewrites the
//! same bytes), so the figures live in a committed file beside the reports,
//! `reports/<suite>/costs.json` ([`COSTS_FILE`]). Only `ranklab bench --measure-costs`
//! (`just costs`, [`measure`]) writes it; every report reads it, and shows a model's figures
//! only for the exact identity that was measured (file sha256, settings, prompt hash): a model
//! whose identity has no measurement says "not measured", never a figure of another.

pub mod measure;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

/// The cost file's name in a suite's report folder.
pub const COSTS_FILE: &str = "costs.json";

/// The command that measures, as the report tells a reader to run it: the installed binary's
/// (a checkout's `just costs` runs the same; an installed user has no justfile).
pub const MEASURE_COMMAND: &str = "ranklab bench --from-recording --measure-costs";

/// The command that times the fine-tuned fold models of one suite.
pub const MEASURE_FINETUNE_COMMAND: &str =
    "ranklab run tasks/<suite> -x tasks/<suite>/experiments-finetune.yaml --measure-costs";

/// `reports/<suite>/costs.json`: one measurement per model identity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostFile {
    /// What the file is and what writes it (for a reader of the file; not read back).
    pub about: String,
    /// The measurements, sorted by model key.
    pub models: Vec<Cost>,
    /// Each configuration's cost per query, end to end (`--measure-costs` with no model named),
    /// sorted by experiment then configuration; absent from the file when none was measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configurations: Vec<crate::replay::query_costs::QueryCost>,
}

/// One model's measurement on one suite's shortlists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cost {
    /// The rerank model key as the report names it (`RerankSpec::model_key`).
    pub model: String,
    /// The identity measured (the score cache's key: file sha256, settings, prompt hash).
    pub identity: String,
    /// Distinct (query, section) pairs timed: the widest shortlists of the suite's experiments.
    pub pairs: usize,
    /// Wall-clock milliseconds of the model over all pairs, divided by `pairs`, from empty
    /// caches (scores, and token vectors where the model keeps them), the model loaded before.
    pub cold_ms_per_pair: f64,
    /// Milliseconds per pair with every pair served from the score cache (opening and
    /// verifying its file included), no model loaded.
    pub warm_ms_per_pair: f64,
    /// Seconds from opening the model to its first score (one warm-up pair, not timed above).
    pub model_load_s: f64,
    /// When it was measured (`2026-12-02 13:40 UTC`).
    pub measured_at: String,
    /// The machine (`2 cores (x86_64 linux), load average 2.61 at the start`).
    pub machine: String,
    /// The command that measured it.
    pub command: String,
}

/// A suite's cost file as read, with its path as reports show it.
#[derive(Debug, Clone)]
pub struct Costs {
    /// The measurements (empty when there is no file).
    pub file: CostFile,
    /// Its path as messages name it (relative to the repository root when below it); the
    /// report itself names only `costs.json`, beside it, so its bytes do not depend on where
    /// the reports are written.
    pub shown: String,
    /// The file's bytes as read (`None`: there was no file): it is rewritten only if it still
    /// holds them ([`NewCosts`]).
    pub read: Option<Vec<u8>>,
}

/// A suite's cost file to write after `--measure-costs`: written with the suite's reports as
/// one step, and only when the file still holds what the run read at its start
/// (`report::write_all_with_costs`), so that a measurement another run wrote meanwhile is never
/// replaced.
#[derive(Debug, Clone)]
pub struct NewCosts {
    /// `<reports>/<suite>/costs.json`.
    pub path: PathBuf,
    /// The new bytes.
    pub bytes: Vec<u8>,
    /// What the file held when this run read it (`None`: no file).
    pub read: Option<Vec<u8>>,
}

impl CostFile {
    /// The measurement of `identity`, if any.
    pub fn of(&self, identity: &str) -> Option<&Cost> {
        self.models.iter().find(|c| c.identity == identity)
    }

    /// The file's bytes: pretty JSON, models sorted by key then identity, a final newline.
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let mut sorted = self.clone();
        sorted.models.sort_by(|a, b| {
            (a.model.as_str(), a.identity.as_str()).cmp(&(b.model.as_str(), b.identity.as_str()))
        });
        let mut bytes = serde_json::to_vec_pretty(&sorted)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}

/// The cost file of the suite whose reports go to `dir` (`<reports>/<suite>/`): empty when
/// there is none. A file that does not parse, or holds a figure that is not a finite number
/// ≥ 0 or two measurements of one identity, is an error naming it.
pub fn load(dir: &Path) -> Result<Costs> {
    let path = dir.join(COSTS_FILE);
    let shown = crate::root::shown(&path);
    let fix = format!("fix it, or delete it and run `{MEASURE_COMMAND}` to measure again");
    let text =
        match ranklab_engine::input::read_to_string(&path, ranklab_engine::input::MAX_YAML_BYTES) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Costs {
                    file: CostFile::default(),
                    shown,
                    read: None,
                })
            }
            Err(e) => bail!("{}: cannot read the cost file: {e}", path.display()),
        };
    let file: CostFile = serde_json::from_str(&text).map_err(|e| {
        anyhow::anyhow!("{}:{}:{}: {e}; {fix}", path.display(), e.line(), e.column())
    })?;
    let mut seen = BTreeMap::new();
    for c in &file.models {
        for (what, x) in [
            ("cold_ms_per_pair", c.cold_ms_per_pair),
            ("warm_ms_per_pair", c.warm_ms_per_pair),
            ("model_load_s", c.model_load_s),
        ] {
            if !x.is_finite() || x < 0.0 {
                bail!(
                    "{}: {what} of {} is {x}, not a finite number ≥ 0; {fix}",
                    path.display(),
                    c.model
                );
            }
        }
        if c.pairs == 0 {
            bail!(
                "{}: {} was measured on 0 pairs; {fix}",
                path.display(),
                c.model
            );
        }
        if let Some(other) = seen.insert(c.identity.as_str(), c.model.as_str()) {
            bail!(
                "{}: two measurements of one identity ({other} and {}); {fix}",
                path.display(),
                c.model
            );
        }
    }
    Ok(Costs {
        file,
        shown,
        read: Some(text.into_bytes()),
    })
}

/// Where a suite's cost file is: `<reports>/<suite>/costs.json`.
pub fn path_in(reports: &Path, suite: &str) -> PathBuf {
    reports.join(suite).join(COSTS_FILE)
}

/// How a replay treats its suite's cost file.
#[derive(Debug, Clone)]
pub struct CostPlan {
    /// Root of the report tree: a suite's file is `<reports>/<suite>/costs.json`.
    pub reports: PathBuf,
    /// `Some`: measure before rendering — these model keys, or (empty) every rerank model whose
    /// identity has no measurement yet. `None`: only read the file.
    pub measure: Option<Vec<String>>,
    /// The command line (`ranklab …`), recorded with each measurement.
    pub command: String,
    /// Whether endpoints are asked live (not `--from-recording`). An endpoint's cost is always
    /// the live server's: under `--from-recording` the replay reads the recordings, and an
    /// endpoint is measured (against its server, which must be up) only when named.
    pub live: bool,
    /// Whether the suite's every experiment is rendered (`bench`): then a measurement whose
    /// model no experiment uses any more is dropped from the file. `run` renders some of them
    /// and keeps every measurement.
    pub prune: bool,
}

/// The `about` text of a cost file `--measure-costs` writes.
const ABOUT: &str = "Milliseconds per scored (query, section) pair of each rerank model on this suite's shortlists, cold (the model computes every pair) and warm (served from the score cache); and (`configurations`) each configuration's milliseconds per query end to end (p50/p95/p99, one task at a time, cold and warm), queries per second (cold one at a time, warm a replay of every task), and the peak resident memory. Written only by `ranklab bench --measure-costs` (`just costs`) and `ranklab run --measure-costs` (`just costs-finetune`); `ranklab bench` and `ranklab run` read it into the reports. See docs/reports.md.";

/// Refuses, before anything is replayed, a `run --measure-costs` name that no rerank stage of
/// `experiments` is (bench checks its names against every suite itself: a name may be another
/// suite's). A replay that trains every fold model first must not end in this error.
pub fn check_names(
    suite: &crate::suite::Suite,
    experiments: &[crate::suite::Experiments],
    plan: &CostPlan,
) -> Result<()> {
    let Some(names) = plan.measure.as_ref().filter(|_| !plan.prune) else {
        return Ok(());
    };
    let keys: std::collections::BTreeSet<String> = experiments
        .iter()
        .flat_map(|ex| &ex.configurations)
        .filter_map(|c| c.rerank.as_ref().map(crate::suite::RerankSpec::model_key))
        .collect();
    refuse_unknown(names, &keys, &suite.name, " (nothing was run)")
}

/// The error for the first of `names` that is not one of `keys` (the rerank models of the
/// suite `suite`'s experiments), `after` ending the message.
fn refuse_unknown<K: AsRef<str>>(
    names: &[String],
    keys: impl IntoIterator<Item = K> + Clone,
    suite: &str,
    after: &str,
) -> Result<()> {
    let Some(n) = names
        .iter()
        .find(|n| !keys.clone().into_iter().any(|k| k.as_ref() == n.as_str()))
    else {
        return Ok(());
    };
    let listed: Vec<String> = keys
        .into_iter()
        .map(|k| format!("`{}`", k.as_ref()))
        .collect();
    bail!(
        "--measure-costs {n:?}: no rerank stage of these experiments of {suite} is that model; they use {}{after}",
        listed.join(", ")
    )
}

/// Measures the models `plan` asks for on the suite's replays (`replays[i]` of
/// `experiments[i]`), updates `costs` and returns the new file's bytes (None: nothing measured).
/// Measurements of identities no rerank stage of the suite uses any more are dropped.
pub fn measure_suite(
    corpus: &ranklab_engine::corpus::Corpus,
    suite: &crate::suite::Suite,
    experiments: &[crate::suite::Experiments],
    replays: &[crate::replay::Replay],
    costs: &mut Costs,
    plan: &CostPlan,
) -> Result<Option<Vec<u8>>> {
    let Some(names) = &plan.measure else {
        return Ok(None);
    };
    let work = measure::work_lists(corpus, suite, experiments, replays);
    // bench checks the names against every suite first (a name may be another suite's); a
    // run renders one suite, whose experiments must use every name.
    if !plan.prune {
        refuse_unknown(names, work.iter().map(|w| &w.key), &suite.name, "")?;
    }
    let chosen = choose(&work, costs, names, plan.live, &suite.name)?;
    if chosen.is_empty() {
        if !work.is_empty() && names.is_empty() {
            eprintln!(
                "{}: every rerank model has a measurement in {}; name one to measure it again (--measure-costs MODEL)",
                suite.name, costs.shown
            );
        }
        return Ok(None);
    }
    let ctx = measure::MeasureContext {
        cache_root: ranklab_engine::models::cache_root()?,
        command: plan.command.clone(),
    };
    for w in chosen {
        eprintln!("{}: measuring {} on {} pairs", suite.name, w.key, w.pairs());
        let m = measure::measure(w, &ctx)?;
        eprintln!(
            "{}: {}: cold {} ms per pair, warm {} ms per pair, model load {} s",
            suite.name,
            w.key,
            sig3(m.cold_ms_per_pair),
            sig3(m.warm_ms_per_pair),
            sig3(m.model_load_s)
        );
        costs
            .file
            .models
            .retain(|c| c.identity != m.identity && c.model != m.model);
        costs.file.models.push(m);
    }
    if plan.prune {
        // bench leaves fine-tuning experiments out (they train), so it keeps their stages'
        // measurements, which `ranklab run -x … --measure-costs` wrote.
        let used: Vec<&str> = work.iter().map(|w| w.identity.as_str()).collect();
        prune(&mut costs.file.models, &used);
    }
    costs.file.about = ABOUT.to_string();
    Ok(Some(costs.file.to_bytes()?))
}

/// Drops the measurements of models no experiment uses (`used`: their identities), but those
/// of fine-tuned stages: bench leaves fine-tuning experiments out (they train), and their
/// measurements come from `ranklab run -x … --measure-costs`.
fn prune(models: &mut Vec<Cost>, used: &[&str]) {
    models.retain(|c| {
        used.contains(&c.identity.as_str()) || c.identity.contains(crate::replay::tuned::PER_FOLD)
    });
}

/// The work to measure: the models `names` (none: every model whose identity has no
/// measurement). The measurement asks an endpoint itself, whatever the replay did: its cold
/// pass is the live server's time on every pair (the server must be up). Under
/// `--from-recording` an endpoint is measured only when named, so that a plain `just costs`
/// needs no server; unnamed, it is left out with a line on stderr saying how to measure it.
fn choose<'w>(
    work: &'w [measure::Work],
    costs: &Costs,
    names: &[String],
    live: bool,
    suite: &str,
) -> Result<Vec<&'w measure::Work>> {
    let mut chosen = Vec::new();
    for w in work {
        let asked = if names.is_empty() {
            costs.file.of(&w.identity).is_none()
        } else {
            names.contains(&w.key)
        };
        if !asked {
            continue;
        }
        if matches!(w.spec.scorer, crate::suite::Scorer::Endpoint(_)) && !live && names.is_empty() {
            eprintln!(
                "{suite}: {} is an endpoint: its cost is the live server's; left out (start the server and name it: `just costs '{}'`)",
                w.key, w.key
            );
            continue;
        }
        chosen.push(w);
    }
    Ok(chosen)
}

/// Puts the per-query measurements `new` into `file`, replacing the rows of the same
/// (experiment, configuration) and keeping the others (another command's experiments); sorted by
/// experiment then configuration.
pub fn merge_query_costs(file: &mut CostFile, new: Vec<crate::replay::query_costs::QueryCost>) {
    file.configurations.retain(|old| {
        !new.iter()
            .any(|n| n.experiment == old.experiment && n.configuration == old.configuration)
    });
    file.configurations.extend(new);
    file.configurations.sort_by(|a, b| {
        (a.experiment.as_str(), a.configuration.as_str())
            .cmp(&(b.experiment.as_str(), b.configuration.as_str()))
    });
    file.about = ABOUT.to_string();
}

/// `x` with three significant digits (`25.3`, `0.0123`, `506`; `0` for 0).
pub fn sig3(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    let decimals = (2 - x.abs().log10().floor() as i64).max(0) as usize;
    format!("{x:.decimals$}")
}

#[cfg(test)]
mod tests {
    /// bench's pruning keeps what an experiment uses and every fine-tuned stage's measurement
    /// (bench never replays those), and drops the rest.
    #[test]
    fn pruning_keeps_used_models_and_fine_tuned_stages() {
        let cost = |identity: &str| super::Cost {
            model: identity.to_string(),
            identity: identity.to_string(),
            pairs: 1,
            cold_ms_per_pair: 1.0,
            warm_ms_per_pair: 1.0,
            model_load_s: 1.0,
            measured_at: String::new(),
            machine: String::new(),
            command: String::new(),
        };
        let tuned = format!(
            "l12 onnx-sha256=aa{}finetuned:k1",
            crate::replay::tuned::PER_FOLD
        );
        let mut models = vec![cost("l12 onnx-sha256=aa"), cost("gone"), cost(&tuned)];
        super::prune(&mut models, &["l12 onnx-sha256=aa"]);
        let left: Vec<&str> = models.iter().map(|c| c.identity.as_str()).collect();
        assert_eq!(left, vec!["l12 onnx-sha256=aa", tuned.as_str()]);
    }

    use super::*;

    #[test]
    fn three_significant_digits() {
        // By hand: 25.31 -> 25.3; 0.012345 -> 0.0123; 506.2 -> 506; 1234.6 -> 1235 (no
        // decimals once there are more than three integer digits); 7 -> 7.00.
        for (x, want) in [
            (25.31, "25.3"),
            (0.012345, "0.0123"),
            (506.2, "506"),
            (1234.6, "1235"),
            (7.0, "7.00"),
            (0.0, "0"),
        ] {
            assert_eq!(sig3(x), want, "{x}");
        }
    }

    /// An endpoint stage's work (no pairs: `choose` reads only the key, the scorer and the
    /// identity).
    fn endpoint_work() -> measure::Work {
        let spec: crate::suite::RerankSpec = ranklab_engine::yaml::parse(
            Path::new("experiments.yaml"),
            0,
            "{ llm: { endpoint: \"http://127.0.0.1:1/v1\", model: m, api: completions }, shortlist: 3 }",
        )
        .unwrap();
        measure::Work {
            key: spec.model_key(),
            spec,
            dir: PathBuf::from("."),
            identity: "llm-endpoint m".to_string(),
            requests: Vec::new(),
            tasks: Vec::new(),
            folds: Vec::new(),
        }
    }

    #[test]
    fn an_endpoint_is_measured_when_named_even_from_recordings_and_left_out_unnamed() {
        let work = [endpoint_work()];
        let costs = Costs {
            file: CostFile::default(),
            shown: COSTS_FILE.to_string(),
            read: None,
        };
        let named = [work[0].key.clone()];
        // --from-recording: unnamed, left out (a plain `just costs` needs no server); named,
        // measured against the live server (the regression: it was refused, and a live bench
        // needs every external engine up, so the stage could not be measured at all).
        assert!(choose(&work, &costs, &[], false, "s").unwrap().is_empty());
        assert_eq!(choose(&work, &costs, &named, false, "s").unwrap().len(), 1);
        // Live: measured like any model whose identity has no measurement.
        assert_eq!(choose(&work, &costs, &[], true, "s").unwrap().len(), 1);
    }
}
