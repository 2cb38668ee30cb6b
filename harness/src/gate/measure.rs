//! Measuring a [`Plan`]: one replay per subject over the configurations its rows and
//! expectations name (gone ones left out), each expectation's rank, and every paired assertion
//! file of every suite.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Result;

use super::baseline::Fixed;
use super::plan::{Key, Plan};
use super::rankings::Lists;
use super::stale::Staleness;
use super::ModelOutputs;
use crate::paired::Paired;
use crate::replay::Replayer;

/// The verdicts of one paired assertion file.
pub struct PairedFile {
    /// The file.
    pub file: PathBuf,
    /// One verdict per assertion and half.
    pub verdicts: Vec<crate::paired::Verdict>,
}

/// Every measured row's value, per expectation of the baseline the document's rank, per
/// (suite, configuration) its rankings, and where the model outputs came from.
pub struct Values {
    /// Every measured row's value.
    pub values: BTreeMap<Key, Fixed>,
    /// Per expectation of the baseline: the document's rank.
    pub ranks: Vec<Option<usize>>,
    /// Per (suite, configuration): its rankings now.
    pub lists: BTreeMap<(String, String), Lists>,
    /// Where the model outputs came from.
    pub outputs: ModelOutputs,
    /// Under `--update`: model outputs to add to the recordings once the baseline is written.
    pub pending: Vec<super::PendingOutputs>,
}

/// What a gate run measured.
pub struct Measured {
    /// Every measured row's value.
    pub values: BTreeMap<Key, Fixed>,
    /// Per expectation of the baseline: the document's rank (None: not ranked, or not measured).
    pub ranks: Vec<Option<usize>>,
    /// Every paired assertion file's verdicts.
    pub paired: Vec<PairedFile>,
    /// Per (suite, configuration): its rankings now.
    pub lists: BTreeMap<(String, String), Lists>,
    /// Where the model outputs came from (rows and paired assertions).
    pub outputs: ModelOutputs,
    /// Under `--update`: model outputs to add to the recordings once the baseline is written.
    pub pending: Vec<super::PendingOutputs>,
    /// Per (suite, configuration) replayed from an external engine's recording: whether that
    /// recording rests on today's corpus.
    pub stale: BTreeMap<(String, String), Staleness>,
}

impl Plan {
    /// Replays every subject once: the values of its rows and the ranks of its expectations.
    pub fn measure_values(&self) -> Result<Values> {
        let exps = &self.old.expectations;
        let mut out = Values {
            values: BTreeMap::new(),
            ranks: vec![None; exps.len()],
            lists: BTreeMap::new(),
            outputs: ModelOutputs::default(),
            pending: Vec::new(),
        };
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
            let mut got = s.measure_with(&configs, &asked)?;
            out.pending.append(&mut got.pending);
            for ((c, m), v) in got.values {
                out.values.insert((s.name.clone(), c, m), v);
            }
            for (&i, r) in mine.iter().zip(got.ranks) {
                out.ranks[i] = r;
            }
            for (c, l) in got.lists {
                out.lists.insert((s.name.clone(), c), l);
            }
            out.outputs.merge(&got.outputs);
        }
        Ok(out)
    }

    /// [`Plan::measure_values`], then every paired assertion file of every suite.
    pub fn measure(&self) -> Result<Measured> {
        let Values {
            values,
            ranks,
            lists,
            mut outputs,
            pending,
        } = self.measure_values()?;
        let mut paired = Vec::new();
        for s in self.subjects.values() {
            let models =
                crate::replay::recorded_models(&s.replay.external, s.replay.recordings.as_deref())?;
            for p in &s.paired {
                let (file, corpus) = Paired::load(p)?;
                let engine = Replayer::build(&corpus, &[&file.experiments])?;
                // Under --from-recording the pair's external answers come from the recordings too.
                let from = (s.replay.external == crate::external::Mode::FromRecording)
                    .then_some(s.replay.recordings.as_deref())
                    .flatten();
                paired.push(PairedFile {
                    file: p.clone(),
                    verdicts: file.check_with(&engine, None, from)?,
                });
            }
            outputs.add(&models.finish());
        }
        let stale = self.staleness();
        Ok(Measured {
            values,
            ranks,
            paired,
            lists,
            outputs,
            pending,
            stale,
        })
    }
}
