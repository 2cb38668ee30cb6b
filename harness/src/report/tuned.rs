//! What a tuning says about an experiment's Decision: when `ranklab tune FILE` has written a
//! report (`tune-<name>.json`, in the suite's report folder where `ranklab tune` writes it)
//! whose tuned configuration is one of this experiment's, or whose shipped configuration (what
//! the tuning is compared with) is this experiment's baseline, the Decision ends with one
//! sentence per such tuning: whether the configuration tuned per fold beats the shipped one out of fold
//! (detectable: p < α and Δ > 0), with the figures the tuning report gives. Reports of
//! experiments that no tuning names are left as they are. Tunings are read in file-name order.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

use crate::stats::{format_p, format_signed, ALPHA};
use crate::suite::{Experiments, Suite};

/// The sentences of the tunings in `dir` whose configuration `ex` holds or whose shipped
/// configuration is `ex`'s baseline (empty when none).
pub fn sentences(dir: &Path, ex: &Experiments) -> Result<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(String::new());
    };
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("tune-") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let j: Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a tuning report", path.display()))?;
        let Some(name) = j["configuration"].as_str() else {
            continue;
        };
        let shipped = j["shipped"]["configuration"].as_str();
        if ex.configurations.iter().any(|c| c.name == name) || shipped == Some(ex.baseline()) {
            out.push(sentence(&j, &path).with_context(|| {
                format!("{}: a tuning report without its figures", path.display())
            })?);
        }
    }
    Ok(out.join(" "))
}

/// One tuning's sentence.
fn sentence(j: &Value, path: &Path) -> Option<String> {
    let m = j["measure"].as_str()?;
    let shipped = j["shipped"]["configuration"].as_str()?;
    let c = &j["comparison"];
    let (delta, p) = (c["delta"].as_f64()?, c["p"].as_f64()?);
    let verdict = if p < ALPHA && delta > 0.0 {
        format!("beats `{shipped}` out of fold")
    } else if p < ALPHA {
        format!("is detectably worse than `{shipped}` out of fold")
    } else {
        format!("does not detectably beat `{shipped}` out of fold")
    };
    let file = path.file_name()?.to_str()?.trim_end_matches(".json");
    // A learned tuning trains a ranker over the configuration's lists, it sets no parameter.
    let what = match j["learn"].as_str() {
        Some(learn) => format!(
            "a learned ranker ({learn}) over `{}`'s lists, trained per fold,",
            j["configuration"].as_str()?
        ),
        None => format!(
            "`{}` with its parameters chosen per fold",
            j["configuration"].as_str()?
        ),
    };
    Some(format!(
        "Tuned (`{file}`, {} task folds): {what} {verdict}: {m} {:.4} against {:.4} (Δ {}, 95% CI [{}, {}], p {}).",
        j["folds"].as_array()?.len(),
        j["out_of_fold"][m].as_f64()?,
        j["shipped"][m].as_f64()?,
        format_signed(delta),
        format_signed(c["ci"][0].as_f64()?),
        format_signed(c["ci"][1].as_f64()?),
        format_p(p),
    ))
}

/// The report folder `ranklab tune` writes a suite's tunings to.
pub fn folder(suite: &Suite) -> std::path::PathBuf {
    crate::root::default("reports").join(&suite.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(delta: f64, p: f64) -> Value {
        serde_json::json!({
            "configuration": "wsum", "measure": "MRR",
            "folds": [{}, {}, {}],
            "out_of_fold": {"MRR": 0.8},
            "shipped": {"configuration": "fusion", "MRR": 0.7},
            "comparison": {"delta": delta, "ci": [0.01, 0.2], "p": p},
        })
    }

    /// A learned tuning is named as the ranker it trained over the configuration's lists, not
    /// as the configuration's parameters (by hand).
    #[test]
    fn a_learned_tuning_is_named_as_a_learned_ranker() {
        let mut j = report(0.1351, 0.0057);
        j["learn"] = "LambdaMART over bm25".into();
        let s = sentence(&j, Path::new("tune-learned.json")).unwrap();
        assert!(
            s.starts_with("Tuned (`tune-learned`, 3 task folds): a learned ranker (LambdaMART over bm25) over `wsum`'s lists, trained per fold, beats `fusion` out of fold: MRR 0.8000 against 0.7000"),
            "{s}"
        );
    }

    /// The verdict follows p < 0.05 and the sign of Δ, as the tuning report's own does.
    #[test]
    fn the_verdict_follows_p_and_the_sign() {
        let path = Path::new("reports/x/tune-w.json");
        let s = sentence(&report(0.1, 0.01), path).unwrap();
        assert_eq!(s, "Tuned (`tune-w`, 3 task folds): `wsum` with its parameters chosen per fold beats `fusion` out of fold: MRR 0.8000 against 0.7000 (Δ +0.1000, 95% CI [+0.0100, +0.2000], p 0.0100).");
        assert!(sentence(&report(0.1, 0.2), path)
            .unwrap()
            .contains("does not detectably beat `fusion`"));
        assert!(sentence(&report(-0.1, 0.01), path)
            .unwrap()
            .contains("is detectably worse than `fusion`"));
    }
}
