//! The CI regression gate: gated (suite, configuration, metric) values against a committed
//! baseline, plus every paired assertion.
//!
//! - [`baseline`]: the baseline file (stable order, fixed precision, file:line errors);
//! - [`verdict`]: the one-sided comparison with tolerance and the gate table.
//!
//! A [`Subject`] is what a row is measured on: a suite under `tasks/` (its configurations are
//! those of its `experiments*.yaml`, its metrics those of its report) or a BEIR collection given
//! with `--beir` (configurations `bm25`, `dense`, `fusion`; the metrics of `ranklab beir`). The
//! values are the same means over tasks as in the reports `ranklab run`/`ranklab beir` write:
//! the gate replays through the same [`crate::replay`] and [`crate::report::per_task_values`].
//!
//! Guarantees: a row naming a suite, configuration or metric that no longer exists is a "gone"
//! failure (exit 1), never silently skipped; when a suite's corpus, tasks, judgments or a gated
//! configuration differ from what the baseline was recorded on (fingerprints in the baseline,
//! see [`changes`]), every row is still graded and a banner says what changed; `--update` never
//! accepts a regression without `--accept-regressions WHY`, and `--calibrate` refuses changed
//! inputs.

pub mod baseline;
mod baseline_json;
pub mod changes;
pub mod measure;
pub mod page;
pub mod plan;
pub mod rankings;
pub mod recordings;
pub mod render;
pub mod runs;
pub mod stale;
pub mod update;
pub mod verdict;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Corpus;
use sha2::Digest;

use crate::replay::{replay_with, Replayer};
use crate::report::{per_task_values, MeasureSet};
use crate::suite::{Configuration, Experiments, Suite};
use baseline::{Fixed, Inputs, Kind, SuiteEntry};
use ranklab_engine::policy::Wiring;

/// The BEIR configurations gated by default (nDCG@10 of each).
pub const BEIR_GATED: [&str; 3] = ["bm25", "bm25-lucene", "dense"];
/// The BEIR configurations a baseline row may name (`bm25-lucene`: the Lucene analyzer at depth
/// 1000, Anserini's BM25, whose SciFact nDCG@10 and recall@1000 the baseline pins).
pub const BEIR_CONFIGS: [&str; 4] = ["bm25", "bm25-lucene", "dense", "fusion"];
/// The metric gated by default on a BEIR collection.
pub const BEIR_METRIC: &str = "nDCG@10";

/// A sha256 over a suite's tasks: id, query, cutoff and judgments (not notes or comments).
pub fn suite_hash(suite: &Suite) -> String {
    let mut h = sha2::Sha256::new();
    for t in &suite.tasks {
        h.update(t.id.as_bytes());
        h.update([1]);
        h.update(t.query.as_bytes());
        h.update([1]);
        h.update(t.k.to_string().as_bytes());
        for (d, g) in &t.expected {
            h.update([1]);
            h.update(d.as_bytes());
            h.update([2]);
            h.update(g.to_string().as_bytes());
        }
        h.update([0]);
    }
    ranklab_engine::models::hex(&h.finalize())
}

/// The first 16 hex digits of the sha256 of `bytes`.
fn short_sha(bytes: &[u8]) -> String {
    let h = sha2::Sha256::digest(bytes);
    ranklab_engine::models::hex(&h)[..16].to_string()
}

/// The fingerprint of a configuration's settings: the first 16 hex digits of the sha256 of its
/// canonical form, every field as ranklab read it from the experiments file (defaults not
/// filled in), with the practice file's weights in place of its path (so moving the checkout
/// does not change it, editing the weights does, and `ranklab tune --write --keep`, which
/// rewrites only the file's provenance and history, does not). A ranklab version that adds a setting may
/// change every fingerprint: the gate then names each configuration as changed, and still
/// compares.
pub fn config_fingerprint(c: &Configuration) -> String {
    let mut canon = c.clone();
    let practice = canon.practice.take();
    let mut text = without_absent_fields(&format!("{canon:?}"));
    if let Some(p) = practice {
        text.push_str("\u{1}practice\u{1}");
        match ranklab_engine::policy::Practice::load(&p) {
            Ok(practice) => text.push_str(&format!("{:?}", practice.weights)),
            Err(_) => text.push_str("unreadable"),
        }
    }
    short_sha(text.as_bytes())
}

/// `text` (a `Debug` rendering) without its `, name: None` fields: a field added to the
/// configuration type and left unset does not change the fingerprint of a configuration that
/// does not use it (weighted fusion's `fusion` changed every fingerprint when it came).
fn without_absent_fields(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(": None") {
        let head = &rest[..i];
        // The field's name runs back to the ", " or "{ " before it.
        let name_start = head
            .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(0, |j| j + 1);
        let sep = &head[..name_start];
        if !head[name_start..].is_empty() && (sep.ends_with(", ") || sep.ends_with("{ ")) {
            let keep = sep.strip_suffix(", ").unwrap_or(sep);
            out.push_str(keep);
            rest = &rest[i + ": None".len()..];
            // "{ a: None, b: 1 }" -> "{ b: 1 }": the comma after a first field goes too.
            if sep.ends_with("{ ") {
                rest = rest.strip_prefix(", ").unwrap_or(rest);
            }
        } else {
            out.push_str(&rest[..i + ": None".len()]);
            rest = &rest[i + ": None".len()..];
        }
    }
    out.push_str(rest);
    out
}

/// The fingerprint of a task's query and cutoff (its judgments are recorded one by one).
pub fn task_fingerprint(t: &crate::suite::Task) -> String {
    short_sha(format!("{}\u{1}{}", t.query, t.k).as_bytes())
}

/// What gated rows are measured on: a suite or a BEIR collection, loaded and checked.
pub struct Subject {
    /// Suite name, or the collection's directory name.
    pub name: String,
    /// Suite or BEIR collection.
    pub kind: Kind,
    /// The tasks.
    pub suite: Suite,
    /// The corpus.
    pub corpus: Corpus,
    /// Every configuration a row may name (practice paths made absolute), in file order.
    pub configurations: Vec<Configuration>,
    /// The configurations gated by default: those the suite file `ships`, else each
    /// experiments file's baseline (BEIR: bm25, bm25-lucene, dense).
    pub default_configurations: Vec<String>,
    /// The measures and their column names.
    pub measures: MeasureSet,
    /// The metrics gated by default: recall@k and MRR (BEIR: nDCG@10).
    pub default_metrics: Vec<String>,
    /// Paired assertion files beside the suite (`paired*.yaml`).
    pub paired: Vec<PathBuf>,
    /// Where configuration errors point (the experiments directory, or the collection).
    pub origin: PathBuf,
    /// How external configurations are replayed (live, or from their recordings).
    pub replay: crate::replay::ReplayOptions,
    /// Write the model outputs the rows rest on into `<recordings>/models/` (`--update`), as
    /// `run` and `bench` do beside a suite's reports.
    pub keep_outputs: bool,
}

impl Subject {
    /// Loads a suite (`<dir>/suite.yaml`), its experiments files, corpus and paired files.
    pub fn from_suite(path: &Path) -> Result<Subject> {
        let suite = Suite::load(path)?;
        // Loaded together, their names checked as `run` checks them: a configuration name in two
        // files means the same settings (defaults filled in), so the first definition stands.
        let all = crate::suite::load_experiments(&suite, &[])?;
        let mut configurations: Vec<Configuration> = Vec::new();
        let mut default_configurations = Vec::new();
        for ex in &all {
            crate::suite::check_depth(&suite, ex)?;
            for c in &ex.configurations {
                if configurations.iter().any(|d| d.name == c.name) {
                    continue;
                }
                let mut c = c.clone();
                if c.wiring != Wiring::None {
                    c.practice = Some(std::path::absolute(ex.practice_path(&c))?);
                }
                configurations.push(c);
            }
            if !default_configurations.iter().any(|n| n == ex.baseline()) {
                default_configurations.push(ex.baseline().to_string());
            }
        }
        let ships = crate::suite::shipped(&suite)?;
        if !ships.is_empty() {
            default_configurations.clear();
            for (c, line) in ships {
                if !configurations.iter().any(|d| d.name == c) {
                    bail!(
                        "{}:{line}: `ships` names configuration {c:?}, which no experiments file of the suite defines (configurations: {}); fix the name or add the configuration",
                        suite.path.display(),
                        configurations.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ")
                    );
                }
                if !default_configurations.contains(&c) {
                    default_configurations.push(c);
                }
            }
        }
        let corpus = suite.load_corpus()?;
        let paired = suite.files_named("paired")?;
        let k = suite.k;
        Ok(Subject {
            name: suite.name.clone(),
            kind: Kind::Suite,
            origin: suite.dir().to_path_buf(),
            suite,
            corpus,
            configurations,
            default_configurations,
            measures: MeasureSet::Suite,
            default_metrics: vec![format!("recall@{k}"), "MRR".to_string()],
            paired,
            replay: Default::default(),
            keep_outputs: false,
        })
    }

    /// Loads a BEIR collection the way `ranklab beir` does (every judged query a task, k = 10).
    pub fn from_beir(dir: &Path, split: &str) -> Result<Subject> {
        // People's grades (the qrels), and the LLM grades of the collection's judging folder
        // under the default tree of BEIR reports left out: the gate's selection takes them or
        // not ([`Subject::select_judgments`]).
        let (coll, suite) = crate::suite::beir::load_judged(
            dir,
            split,
            &crate::suite::beir::default_reports(),
            crate::judgments::Selection::Human,
        )?;
        let configurations = BEIR_CONFIGS
            .iter()
            .map(|n| crate::suite::beir::configuration(n))
            .collect::<Result<Vec<_>>>()?;
        Ok(Subject {
            name: coll.name.clone(),
            kind: Kind::Beir,
            suite,
            corpus: coll.corpus,
            configurations,
            default_configurations: BEIR_GATED.iter().map(|s| s.to_string()).collect(),
            measures: MeasureSet::Fixed(crate::suite::beir::measures()),
            default_metrics: vec![BEIR_METRIC.to_string()],
            paired: Vec::new(),
            origin: dir.to_path_buf(),
            replay: Default::default(),
            keep_outputs: false,
        })
    }

    /// The metric names a row may use.
    pub fn metric_names(&self) -> Vec<String> {
        self.measures.names(self.suite.k)
    }

    /// The configuration named `name`.
    pub fn configuration(&self, name: &str) -> Option<&Configuration> {
        self.configurations.iter().find(|c| c.name == name)
    }

    /// The configuration names, comma-separated (for messages).
    pub fn configuration_list(&self) -> String {
        self.configurations
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The fingerprint recorded in the baseline.
    pub fn entry(&self) -> SuiteEntry {
        SuiteEntry {
            kind: self.kind,
            corpus_sha256: self.corpus.content_hash(),
            suite_sha256: suite_hash(&self.suite),
            llm_grades: self.suite.judgment_counts().llm > 0,
        }
    }

    /// Takes the grades of the suite's `judgments.yaml` that `selection` names (it was loaded
    /// with people's only), and says on stderr what the gate does with LLM grades: ignores
    /// them (the baseline rows rest on people's grades) or takes them (the rows were recorded
    /// with them), rather than leaving a reader to guess.
    pub fn select_judgments(&mut self, selection: crate::judgments::Selection, update: bool) {
        self.suite = self.suite.reselect(selection);
        let Some(j) = &self.suite.judgments else {
            return;
        };
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let (ignored, taken) = (j.unselected.len(), self.suite.judgment_counts().llm);
        if ignored > 0 {
            eprintln!(
                "note: {}: the gate ignores its {ignored} LLM grade{} (the baseline rows rest on people's grades only; record them with `ranklab gate --update --judgments all`)",
                crate::report::shown(&j.path),
                plural(ignored)
            );
        } else if taken > 0 {
            eprintln!(
                "note: {}: the gate takes its {taken} LLM grade{} beside people's: {}",
                crate::report::shown(&j.path),
                plural(taken),
                if update {
                    "the baseline rows are recorded with them (`--judgments all`)"
                } else {
                    "the baseline rows were recorded with them (`--judgments all`)"
                }
            );
        }
    }

    /// The per-record, per-task and per-judgment fingerprints and the recordings' digests
    /// recorded in the baseline's `inputs`. A BEIR collection records its recordings' digests
    /// only (its thousands of records and queries are dated by the corpus and qrels hashes).
    pub fn inputs(&self) -> Option<Inputs> {
        let recordings = self
            .replay
            .recordings
            .as_deref()
            .map(recordings::digests)
            .unwrap_or_default();
        if self.kind != Kind::Suite {
            return (!recordings.is_empty()).then(|| Inputs {
                recordings,
                ..Inputs::default()
            });
        }
        Some(Inputs {
            records: self
                .corpus
                .docs
                .iter()
                .map(|d| (d.id.clone(), short_sha(d.fingerprint().as_bytes())))
                .collect(),
            tasks: self
                .suite
                .tasks
                .iter()
                .map(|t| (t.id.clone(), task_fingerprint(t)))
                .collect(),
            judgments: self
                .suite
                .tasks
                .iter()
                .filter(|t| !t.expected.is_empty())
                .map(|t| (t.id.clone(), t.expected.clone()))
                .collect(),
            recordings,
        })
    }

    /// The fingerprint of configuration `name` ([`config_fingerprint`]), None when unknown.
    pub fn config_fingerprint(&self, name: &str) -> Option<String> {
        self.configuration(name).map(config_fingerprint)
    }

    /// Replays the named configurations (first stage once per task) and returns the mean of
    /// every metric per configuration: `(configuration, metric) -> value`.
    pub fn measure(&self, names: &[&str]) -> Result<BTreeMap<(String, String), Fixed>> {
        Ok(self.measure_with(names, &[])?.values)
    }

    /// Whether configuration `name` has the legacy wiring (its rows must keep showing the bug).
    pub fn is_legacy(&self, name: &str) -> bool {
        self.configuration(name)
            .is_some_and(|c| c.wiring == Wiring::Legacy)
    }

    /// [`Subject::measure`], plus for each (configuration, task, document) of `ranks` the
    /// document's 1-based rank in that configuration's list for the task (None: not ranked),
    /// each configuration's rankings, and where the model outputs came from. Every
    /// configuration `ranks` names must be among `names`.
    pub fn measure_with(
        &self,
        names: &[&str],
        ranks: &[(&str, &str, &str)],
    ) -> Result<Measurement> {
        let mut out = Measurement {
            values: BTreeMap::new(),
            ranks: vec![None; ranks.len()],
            lists: BTreeMap::new(),
            outputs: ModelOutputs::default(),
            pending: Vec::new(),
        };
        if names.is_empty() {
            return Ok(out);
        }
        let configurations = names
            .iter()
            .map(|n| {
                self.configuration(n)
                    .cloned()
                    .with_context(|| format!("{}: no configuration {n:?}", self.origin.display()))
            })
            .collect::<Result<Vec<_>>>()?;
        let ex = Experiments {
            experiment: "gate".into(),
            baseline: Some(configurations[0].name.clone()),
            description: None,
            configurations,
            distractors: None,
            path: self.origin.join("experiments.yaml"),
        };
        let models = crate::replay::recorded_models(
            &self.replay.external,
            self.replay.recordings.as_deref(),
        )?;
        let engine = Replayer::build(&self.corpus, &[&ex])?;
        let r = replay_with(&engine, &self.suite, &ex, &self.replay)
            .with_context(|| format!("replaying {} for the gate", self.name))?;
        let files = models.finish();
        out.outputs.add(&files);
        if let (true, Some(runs)) = (self.keep_outputs, self.replay.recordings.as_deref()) {
            let dir = runs.join(crate::replay::MODELS_FOLDER);
            out.pending.extend(
                files
                    .into_iter()
                    .filter(|f| f.not_recorded > 0)
                    .map(|file| PendingOutputs {
                        dir: dir.clone(),
                        file,
                    }),
            );
        }
        let metrics = self.metric_names();
        let all = r.corpus_view(&self.corpus);
        for run in &r.runs {
            let values = per_task_values(&all, &self.suite, run, &self.measures);
            for (m, name) in metrics.iter().enumerate() {
                let sum: f64 = values.iter().map(|v| v[m]).sum();
                let mean = sum / values.len().max(1) as f64;
                out.values.insert(
                    (run.config.name.clone(), name.clone()),
                    Fixed::from_f64(mean),
                );
            }
            let lists = self
                .suite
                .tasks
                .iter()
                .zip(&run.per_task)
                .map(|(t, hits)| {
                    (
                        t.id.clone(),
                        hits.iter().map(|h| all.id(h.doc).to_string()).collect(),
                    )
                })
                .collect();
            out.lists.insert(run.config.name.clone(), lists);
        }
        out.ranks = ranks
            .iter()
            .map(|(c, t, d)| {
                let run = r.runs.iter().find(|run| run.config.name == *c)?;
                let ti = self.suite.tasks.iter().position(|x| x.id == *t)?;
                let di = all.index_of(d)?;
                run.per_task[ti]
                    .iter()
                    .position(|h| h.doc == di)
                    .map(|p| p + 1)
            })
            .collect();
        Ok(out)
    }
}

/// What one replay of a subject measured.
pub struct Measurement {
    /// `(configuration, metric) -> value`.
    pub values: BTreeMap<(String, String), Fixed>,
    /// Per asked (configuration, task, document): its rank.
    pub ranks: Vec<Option<usize>>,
    /// Per configuration, its rankings.
    pub lists: BTreeMap<String, rankings::Lists>,
    /// Where the model outputs came from.
    pub outputs: ModelOutputs,
    /// Under `--update`: the model outputs computed here that the recording lacks.
    pub pending: Vec<PendingOutputs>,
}

/// Model outputs (vectors, pair scores) this machine computed that a suite's recording lacks,
/// held until `--update` has decided: written beside the recording only when the new baseline
/// is written, never by a refused update (attack pass: a refused update had added this CPU's
/// vector of an edited section to the committed recording, which the next gate then replayed
/// as recorded).
pub struct PendingOutputs {
    /// `<recordings>/models`.
    pub dir: std::path::PathBuf,
    /// The outputs, with what the recording already holds.
    pub file: ranklab_engine::models::recorded::RecordedFile,
}

impl PendingOutputs {
    /// Adds the outputs to their recording file (atomically).
    pub fn write(&self) -> Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("cannot create {}", self.dir.display()))?;
        self.file.write_into(&self.dir)?;
        Ok(())
    }
}

/// How many model outputs (vectors, pair scores) a gate run took from the recording, from this
/// machine's cache, or computed here, and the int8 kernel of this machine's CPU.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub struct ModelOutputs {
    /// Served from the recorded model outputs (`reports/<suite>/runs/models/`).
    pub recorded: usize,
    /// Taken from this machine's cache.
    pub cached: usize,
    /// Computed by the model on this machine.
    pub computed: usize,
    /// ONNX Runtime's int8 kernel on this CPU (`vnni` or `avx2`).
    pub kernel: String,
}

impl Default for ModelOutputs {
    fn default() -> Self {
        ModelOutputs {
            recorded: 0,
            cached: 0,
            computed: 0,
            kernel: match ranklab_engine::models::Int8Kernel::detect() {
                ranklab_engine::models::Int8Kernel::Vnni => "vnni",
                ranklab_engine::models::Int8Kernel::Avx2 => "avx2",
            }
            .to_string(),
        }
    }
}

impl ModelOutputs {
    /// Adds the counts of a finished recording session.
    pub fn add(&mut self, files: &[ranklab_engine::models::recorded::RecordedFile]) {
        for f in files {
            self.recorded += f.from_recording;
            self.cached += f.from_cache;
            self.computed += f.computed;
        }
    }

    /// Adds another tally.
    pub fn merge(&mut self, o: &ModelOutputs) {
        self.recorded += o.recorded;
        self.cached += o.cached;
        self.computed += o.computed;
    }

    /// The banner line: `model outputs: 1,234 recorded, 0 from the cache, 0 computed here (int8
    /// kernel: vnni)`.
    pub fn line(&self) -> String {
        format!(
            "model outputs: {} recorded, {} from the cache, {} computed here (int8 kernel of this CPU: {})",
            self.recorded, self.cached, self.computed, self.kernel
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Task;

    /// The absent fields go, wherever they stand; a present one and a `None` inside a value
    /// (not a field) stay. Expected strings written by hand.
    #[test]
    fn absent_fields_leave_the_fingerprint_text() {
        let cases = [
            ("C { a: 1, b: None }", "C { a: 1 }"),
            ("C { b: None, a: 1 }", "C { a: 1 }"),
            (
                "C { a: Some(R { x: None, y: 2 }), z: None }",
                "C { a: Some(R { y: 2 }) }",
            ),
            (
                "C { a: [None], b: Some(None) }",
                "C { a: [None], b: Some(None) }",
            ),
            ("C { name: \"None\" }", "C { name: \"None\" }"),
        ];
        for (text, want) in cases {
            assert_eq!(without_absent_fields(text), want, "{text}");
        }
    }

    fn suite(tasks: Vec<Task>) -> Suite {
        Suite {
            name: "s".into(),
            description: String::new(),
            path: "s.yaml".into(),
            corpus_path: "c".into(),
            k: 5,
            tasks,
            judgments: None,
            judging: None,
        }
    }

    fn task(id: &str, query: &str, note: Option<&str>) -> Task {
        Task {
            id: id.into(),
            query: query.into(),
            expected: [("d".to_string(), 1)].into(),
            k: 5,
            note: note.map(str::to_string),
            line: 3,
        }
    }

    #[test]
    fn suite_hash_ignores_notes_but_not_queries() {
        let a = suite_hash(&suite(vec![task("T1", "q", None)]));
        assert_eq!(a, suite_hash(&suite(vec![task("T1", "q", Some("a note"))])));
        assert_ne!(a, suite_hash(&suite(vec![task("T1", "q2", None)])));
        assert_ne!(
            a,
            suite_hash(&suite(vec![task("T1", "q", None), task("T2", "q", None)]))
        );
        assert_eq!(a.len(), 64);
    }
}
