//! What changed in the gate's inputs since the baseline was recorded: per suite, the corpus
//! (records added, removed, edited, from the baseline's per-record fingerprints), the tasks
//! (added, removed, query or cutoff changed) and judgments (added, removed, regraded), and each
//! gated configuration's settings (its fingerprint). The gate still replays and compares
//! everything; these changes are shown in a banner above the table so that a reader knows why
//! values moved. A baseline written before a fingerprint was recorded says "not recorded".

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::baseline::{Baseline, Inputs};
use super::Subject;

/// How many ids a banner line names before "…".
const NAMED: usize = 5;

/// The corpus of a suite changed.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct CorpusChange {
    /// First 8 hex digits of the corpus sha256 then.
    pub from: String,
    /// ... and now.
    pub to: String,
    /// Whether the baseline has per-record fingerprints (else the lists below are empty).
    pub recorded: bool,
    /// Record ids added.
    pub added: Vec<String>,
    /// Record ids removed.
    pub removed: Vec<String>,
    /// Record ids whose content changed.
    pub edited: Vec<String>,
}

/// The tasks or judgments of a suite changed.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct TasksChange {
    /// Whether the baseline has per-task fingerprints (else the fields below are empty).
    pub recorded: bool,
    /// Task ids added.
    pub added: Vec<String>,
    /// Task ids removed.
    pub removed: Vec<String>,
    /// Task ids whose query or cutoff changed.
    pub changed: Vec<String>,
    /// Judgments (task, document) added.
    pub judgments_added: usize,
    /// Judgments removed.
    pub judgments_removed: usize,
    /// Judgments whose grade changed.
    pub judgments_regraded: usize,
}

/// A gated configuration whose settings changed.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ConfigChange {
    /// Configuration name.
    pub configuration: String,
    /// Its fingerprint then.
    pub from: String,
    /// ... and now.
    pub to: String,
}

/// The changes of one suite (or BEIR collection).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct SuiteChanges {
    /// Suite name.
    pub suite: String,
    /// The corpus, when it changed.
    pub corpus: Option<CorpusChange>,
    /// The tasks or judgments, when they changed.
    pub tasks: Option<TasksChange>,
    /// The recordings the rows are replayed from, when one changed.
    pub recordings: Option<super::recordings::RecordingsChange>,
    /// The gated configurations whose fingerprint changed.
    pub configurations: Vec<ConfigChange>,
    /// Gated configurations whose fingerprint the baseline does not record.
    pub configurations_not_recorded: Vec<String>,
}

impl SuiteChanges {
    /// Whether anything changed.
    pub fn any(&self) -> bool {
        self.corpus.is_some()
            || self.tasks.is_some()
            || self.recordings.is_some()
            || !self.configurations.is_empty()
    }

    /// The banner's text for this suite: `docir: corpus cec0540b → 4b022e6a, 2 records added
    /// (a, b), 1 edited (c); judgments +6; configuration fusion changed (… → …)`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(c) = &self.corpus {
            let mut s = format!("corpus {} → {}", c.from, c.to);
            if !c.recorded {
                s.push_str(" (which records: not recorded in the baseline)");
            }
            let mut first = true;
            for (n, what) in [
                (&c.added, "added"),
                (&c.removed, "removed"),
                (&c.edited, "edited"),
            ] {
                if !n.is_empty() {
                    let noun = match (first, n.len()) {
                        (false, _) => "",
                        (true, 1) => " record",
                        (true, _) => " records",
                    };
                    first = false;
                    s.push_str(&format!(", {}{noun} {what} ({})", n.len(), named(n)));
                }
            }
            parts.push(s);
        }
        if let Some(t) = &self.tasks {
            if !t.recorded {
                parts.push(
                    "tasks or judgments changed (which: not recorded in the baseline)".into(),
                );
            } else {
                let mut s = Vec::new();
                for (n, what) in [
                    (&t.added, "added"),
                    (&t.removed, "removed"),
                    (&t.changed, "changed"),
                ] {
                    if !n.is_empty() {
                        s.push(format!("{} task(s) {what} ({})", n.len(), named(n)));
                    }
                }
                let mut j = Vec::new();
                if t.judgments_added > 0 {
                    j.push(format!("+{}", t.judgments_added));
                }
                if t.judgments_removed > 0 {
                    j.push(format!("-{}", t.judgments_removed));
                }
                if t.judgments_regraded > 0 {
                    j.push(format!("{} regraded", t.judgments_regraded));
                }
                if !j.is_empty() {
                    s.push(format!("judgments {}", j.join(" ")));
                }
                if s.is_empty() {
                    // The suite file's hash moved, yet every task and judgment is as recorded:
                    // tasks reordered, or text outside them (comments, layout) edited.
                    s.push(
                        "suite file edited (tasks reordered or layout; every task and judgment as recorded)"
                            .into(),
                    );
                }
                parts.push(s.join(", "));
            }
        }
        if let Some(r) = &self.recordings {
            parts.push(r.describe());
        }
        for c in &self.configurations {
            parts.push(format!(
                "configuration {} changed ({} → {})",
                c.configuration, c.from, c.to
            ));
        }
        format!("{}: {}", self.suite, parts.join("; "))
    }
}

/// Every suite's changes, suites in name order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Changes {
    /// Per suite that is measured now and recorded in the baseline.
    pub suites: Vec<SuiteChanges>,
}

impl Changes {
    /// Whether any input changed.
    pub fn any(&self) -> bool {
        self.suites.iter().any(SuiteChanges::any)
    }

    /// Compares the baseline's fingerprints with the inputs of now.
    pub fn of(old: &Baseline, subjects: &BTreeMap<String, Subject>) -> Changes {
        let mut suites = Vec::new();
        for (name, entry) in &old.suites {
            let Some(s) = subjects.get(name) else {
                continue;
            };
            let now = s.entry();
            let inputs_now = s.inputs();
            // A BEIR collection's inputs hold its recordings' digests only.
            let suite = s.kind == super::baseline::Kind::Suite;
            let recorded = old.inputs.get(name);
            let (records_then, records_now) = if suite {
                (recorded, inputs_now.as_ref())
            } else {
                (None, None)
            };
            let mut ch = SuiteChanges {
                suite: name.clone(),
                ..Default::default()
            };
            if now.corpus_sha256 != entry.corpus_sha256 {
                let mut c = CorpusChange {
                    from: entry.corpus_sha256.chars().take(8).collect(),
                    to: now.corpus_sha256.chars().take(8).collect(),
                    recorded: records_then.is_some() && records_now.is_some(),
                    ..Default::default()
                };
                if let (Some(then), Some(now)) = (records_then, records_now) {
                    let (a, r, e) = diff(&then.records, &now.records);
                    (c.added, c.removed, c.edited) = (a, r, e);
                }
                ch.corpus = Some(c);
            }
            if now.suite_sha256 != entry.suite_sha256 {
                ch.tasks = Some(match (records_then, records_now) {
                    (Some(then), Some(now)) => tasks_change(then, now),
                    _ => TasksChange::default(),
                });
            }
            if let (Some(then), Some(now)) = (recorded, &inputs_now) {
                ch.recordings = super::recordings::change(&then.recordings, &now.recordings);
            }
            let mut seen = BTreeSet::new();
            for r in old.rows.values().filter(|r| &r.suite == name) {
                if !seen.insert(r.configuration.as_str()) {
                    continue;
                }
                let Some(fp) = s.config_fingerprint(&r.configuration) else {
                    continue; // a configuration gone: its rows say so
                };
                match &r.config {
                    None => ch.configurations_not_recorded.push(r.configuration.clone()),
                    Some(then) if *then != fp => ch.configurations.push(ConfigChange {
                        configuration: r.configuration.clone(),
                        from: then.clone(),
                        to: fp,
                    }),
                    Some(_) => {}
                }
            }
            suites.push(ch);
        }
        Changes { suites }
    }

    /// The banner: `inputs changed since the baseline: ...` and the notes on what the baseline
    /// does not record; empty when nothing changed and everything is recorded.
    pub fn banner(&self) -> Vec<String> {
        let mut out = Vec::new();
        let changed: Vec<String> = self
            .suites
            .iter()
            .filter(|s| s.any())
            .map(SuiteChanges::describe)
            .collect();
        if !changed.is_empty() {
            out.push(format!(
                "inputs changed since the baseline: {}",
                changed.join(" | ")
            ));
        }
        for s in &self.suites {
            if !s.configurations_not_recorded.is_empty() {
                out.push(format!(
                    "{}: configuration fingerprint not recorded in the baseline for {} (a changed configuration cannot be named; `ranklab gate --update` records it)",
                    s.suite,
                    s.configurations_not_recorded.join(", ")
                ));
            }
        }
        out
    }
}

/// Ids added, removed and changed between two id -> fingerprint maps.
fn diff(
    then: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let added = now
        .keys()
        .filter(|k| !then.contains_key(*k))
        .cloned()
        .collect();
    let removed = then
        .keys()
        .filter(|k| !now.contains_key(*k))
        .cloned()
        .collect();
    let edited = now
        .iter()
        .filter(|(k, v)| then.get(*k).is_some_and(|t| t != *v))
        .map(|(k, _)| k.clone())
        .collect();
    (added, removed, edited)
}

fn tasks_change(then: &Inputs, now: &Inputs) -> TasksChange {
    let (added, removed, changed) = diff(&then.tasks, &now.tasks);
    let mut t = TasksChange {
        recorded: true,
        added,
        removed,
        changed,
        ..Default::default()
    };
    let flat = |j: &BTreeMap<String, BTreeMap<String, i32>>| -> BTreeMap<(String, String), i32> {
        j.iter()
            .flat_map(|(task, docs)| {
                docs.iter()
                    .map(move |(d, g)| ((task.clone(), d.clone()), *g))
            })
            .collect()
    };
    let (a, b) = (flat(&then.judgments), flat(&now.judgments));
    t.judgments_added = b.keys().filter(|k| !a.contains_key(*k)).count();
    t.judgments_removed = a.keys().filter(|k| !b.contains_key(*k)).count();
    t.judgments_regraded = b
        .iter()
        .filter(|(k, g)| a.get(*k).is_some_and(|x| x != *g))
        .count();
    t
}

/// `a, b, c` or `a, b, c, d, e, … (12 in all)`.
fn named(ids: &[String]) -> String {
    if ids.len() <= NAMED {
        ids.join(", ")
    } else {
        format!("{}, … ({} in all)", ids[..NAMED].join(", "), ids.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn diff_names_added_removed_and_edited_ids() {
        let then = m(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let now = m(&[("a", "1"), ("b", "9"), ("d", "4"), ("e", "5")]);
        assert_eq!(
            diff(&then, &now),
            (
                vec!["d".to_string(), "e".to_string()],
                vec!["c".to_string()],
                vec!["b".to_string()]
            )
        );
    }

    #[test]
    fn judgments_count_added_removed_and_regraded() {
        let j = |v: &[(&str, &str, i32)]| {
            let mut out: BTreeMap<String, BTreeMap<String, i32>> = BTreeMap::new();
            for (t, d, g) in v {
                out.entry(t.to_string())
                    .or_default()
                    .insert(d.to_string(), *g);
            }
            out
        };
        let then = Inputs {
            judgments: j(&[("T1", "a", 1), ("T1", "b", 2), ("T2", "c", 1)]),
            ..Default::default()
        };
        let now = Inputs {
            judgments: j(&[
                ("T1", "a", 2),
                ("T2", "c", 1),
                ("T2", "d", 1),
                ("T3", "e", 3),
            ]),
            ..Default::default()
        };
        let t = tasks_change(&then, &now);
        assert_eq!(
            (t.judgments_added, t.judgments_removed, t.judgments_regraded),
            (2, 1, 1)
        );
    }

    #[test]
    fn describe_reads_like_the_issue() {
        let s = SuiteChanges {
            suite: "kb".into(),
            corpus: Some(CorpusChange {
                from: "cec0540b".into(),
                to: "4b022e6a".into(),
                recorded: true,
                added: vec!["x".into(), "y".into()],
                removed: vec![],
                edited: vec!["z".into()],
            }),
            tasks: Some(TasksChange {
                recorded: true,
                judgments_added: 6,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            s.describe(),
            "kb: corpus cec0540b → 4b022e6a, 2 records added (x, y), 1 edited (z); judgments +6"
        );
    }

    /// A suite file whose hash changed with every task and judgment as recorded (two tasks
    /// swapped) is described, not left blank after the suite's name.
    #[test]
    fn a_reordered_suite_file_is_named_not_blank() {
        let s = SuiteChanges {
            suite: "kb".into(),
            tasks: Some(TasksChange {
                recorded: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            s.describe(),
            "kb: suite file edited (tasks reordered or layout; every task and judgment as recorded)"
        );
    }
}
