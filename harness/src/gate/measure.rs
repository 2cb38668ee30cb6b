//! Measuring a [`Plan`]: one replay per subject over the configurations its rows and
//! expectations name (gone ones left out), each expectation's rank, and every paired assertion
//! file of every suite.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;

use super::baseline::Fixed;
use super::plan::{Key, Plan};
use crate::paired::Paired;
use crate::replay::Engine;

/// The verdicts of one paired assertion file.
pub struct PairedFile {
    /// The file.
    pub file: PathBuf,
    /// One verdict per assertion and half.
    pub verdicts: Vec<crate::paired::Verdict>,
}

/// Every measured row's value, and per expectation of the baseline the document's rank.
pub type Values = (BTreeMap<Key, Fixed>, Vec<Option<usize>>);

/// What a gate run measured.
pub struct Measured {
    /// Every measured row's value.
    pub values: BTreeMap<Key, Fixed>,
    /// Per expectation of the baseline: the document's rank (None: not ranked, or not measured).
    pub ranks: Vec<Option<usize>>,
    /// Every paired assertion file's verdicts.
    pub paired: Vec<PairedFile>,
}

impl Plan {
    /// Replays every subject once: the values of its rows and the ranks of its expectations.
    pub fn measure_values(&self) -> Result<Values> {
        let exps = &self.old.expectations;
        let mut values = BTreeMap::new();
        let mut ranks = vec![None; exps.len()];
        for s in self.subjects.values() {
            let mut configs: Vec<&str> = self
                .wanted
                .iter()
                .filter(|(k, w)| k.0 == s.name && w.gone.is_none())
                .map(|(k, _)| k.1.as_str())
                .collect();
            let mine: Vec<usize> = (0..exps.len())
                .filter(|&i| exps[i].suite == s.name && self.expectation_gone[i].is_none())
                .collect();
            configs.extend(mine.iter().map(|&i| exps[i].configuration.as_str()));
            configs.sort_unstable();
            configs.dedup();
            let asked: Vec<(&str, &str, &str)> = mine
                .iter()
                .map(|&i| {
                    let e = &exps[i];
                    (
                        e.configuration.as_str(),
                        e.task.as_str(),
                        e.document.as_str(),
                    )
                })
                .collect();
            let (v, r) = s.measure_with(&configs, &asked)?;
            for ((c, m), v) in v {
                values.insert((s.name.clone(), c, m), v);
            }
            for (&i, r) in mine.iter().zip(r) {
                ranks[i] = r;
            }
        }
        Ok((values, ranks))
    }

    /// [`Plan::measure_values`], then every paired assertion file of every suite.
    pub fn measure(&self) -> Result<Measured> {
        let (values, ranks) = self.measure_values()?;
        let mut paired = Vec::new();
        for s in self.subjects.values() {
            let _models =
                crate::replay::recorded_models(&s.replay.external, s.replay.recordings.as_deref())?;
            for p in &s.paired {
                let (file, corpus) = Paired::load(p)?;
                let engine = Engine::build(&corpus, &[&file.experiments])?;
                // Under --from-recording the pair's external answers come from the recordings too.
                let from = (s.replay.external == crate::external::Mode::FromRecording)
                    .then_some(s.replay.recordings.as_deref())
                    .flatten();
                paired.push(PairedFile {
                    file: p.clone(),
                    verdicts: file.check_with(&engine, None, from)?,
                });
            }
        }
        Ok(Measured {
            values,
            ranks,
            paired,
        })
    }
}
