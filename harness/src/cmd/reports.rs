//! What `ranklab run` and `ranklab bench` share: the flags saying how engines are asked
//! (recordings, cluster), replaying suites into reports, then writing them and printing the
//! summaries and the verdict line.

use crate::exit::Exit;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Result;
use ranklab_engine::models::remote::Remote;

use crate::external::Mode;
use crate::judgments::Selection;
use crate::report::{self, Rendered};

/// How engines are asked: external engines live or from their recordings, model work here or
/// on a cluster.
#[derive(Debug, clap::Args)]
pub(crate) struct EngineArgs {
    #[command(flatten)]
    pub recording: super::args::RecordingArgs,
    #[command(flatten)]
    pub cluster: super::args::ClusterArgs,
    #[command(flatten)]
    pub judgments: super::args::JudgmentsArgs,
}

/// A checked replay of suites: where recordings are read (or written), how external engines
/// are asked, and the cluster (one driver, one connection, for every suite).
pub(crate) struct Plan {
    /// `<RECORDINGS>`: a suite's recordings are in `<RECORDINGS>/<suite>/runs/`.
    recordings: PathBuf,
    /// Live, recording or replaying recordings.
    mode: Mode,
    /// The cluster of `--cluster`, if any (None: models run here).
    remote: Option<Arc<dyn Remote>>,
    /// Where the suites' cost files are, and whether to measure first.
    costs: report::costs::CostPlan,
    /// Which grades of `judgments.yaml` the suites take (`--judgments`).
    judgments: Selection,
}

impl Plan {
    /// Connects the cluster, if one is named; `reports` is the root of the report tree.
    pub(crate) fn new(args: &EngineArgs, reports: &Path) -> Result<Plan> {
        let remote = args.cluster.remote()?;
        Ok(Plan {
            recordings: args.recording.recordings_root(reports).to_path_buf(),
            mode: args.recording.mode(),
            remote,
            costs: report::costs::CostPlan {
                reports: reports.to_path_buf(),
                measure: None,
                command: String::new(),
                live: args.recording.mode() != Mode::FromRecording,
                prune: false,
            },
            judgments: args.judgments.judgments,
        })
    }

    /// Measures the rerank models' costs before rendering (`bench --measure-costs`): `models`,
    /// or (empty) every one whose identity has no measurement. Refused with `--cluster`: the
    /// time would be the cluster's, not the model's on this machine.
    /// Measures the rerank models `models` (none: those without a measurement) before
    /// rendering; `prune`: every experiment of each suite is rendered, so measurements no
    /// experiment uses are dropped.
    pub(crate) fn measuring(
        mut self,
        models: Vec<String>,
        command: String,
        prune: bool,
    ) -> Result<Plan> {
        if self.remote.is_some() {
            anyhow::bail!(
                "--measure-costs times the models on this machine; drop --cluster (the cluster's time is not the model's)"
            );
        }
        self.costs.measure = Some(models);
        self.costs.command = command;
        self.costs.prune = prune;
        Ok(self)
    }

    /// Before anything runs: every `${NAME}` a live external engine of these suites names and
    /// this environment lacks, as `file:line: configuration …: environment variable NAME …`,
    /// all of them in one error. A live `run` or `bench` stops here for every experiment (the
    /// reports of one run are written together, and an engine that cannot be asked would
    /// leave a hole in them); `--from-recording` asks no engine and needs no variable.
    /// `suites`: each suite file with its experiment files (none: the default ones).
    pub(crate) fn check_environment(&self, suites: &[(PathBuf, Vec<PathBuf>)]) -> Result<()> {
        if self.mode == Mode::FromRecording {
            return Ok(());
        }
        let mut missing = Vec::new();
        for (suite, experiments) in suites {
            let suite = crate::suite::Suite::load(suite)?;
            for ex in crate::suite::load_experiments(&suite, experiments)? {
                missing.extend(unset_in(&ex));
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        anyhow::bail!(
            "{} (nothing was run; set each variable, or replay the engines from their recordings with --from-recording)",
            missing.join("; ")
        )
    }

    /// Replays the suite under its experiment files (none: every experiments*.yaml beside it but
    /// those that fine-tune a model) and renders its reports; nothing is written.
    pub(crate) fn render(&self, suite: &Path, experiments: &[PathBuf]) -> Result<Rendered> {
        crate::suite_run::SuiteRun::replay(
            suite,
            experiments,
            &self.recordings,
            &self.mode,
            self.remote.as_ref(),
            &self.costs,
            self.judgments,
        )?
        .render()
    }
}

/// The unset `${NAME}` references of `ex`'s external engines, each named at the first line of
/// the experiments file at or after its configuration's `name:` that holds it.
fn unset_in(ex: &crate::suite::Experiments) -> Vec<String> {
    let text = std::fs::read_to_string(&ex.path).unwrap_or_default();
    let lines = ranklab_engine::yaml::Lines::new(&text);
    let mut out = Vec::new();
    for c in &ex.configurations {
        let Some(spec) = &c.engine else { continue };
        let from = lines.of("name", &c.name);
        for name in spec.unset_env() {
            let needle = format!("${{{name}}}");
            let line = text
                .lines()
                .enumerate()
                .skip(from.saturating_sub(1))
                .find(|(_, l)| l.contains(&needle))
                .map_or(from, |(i, _)| i + 1);
            out.push(format!(
                "{}:{line}: configuration {:?}: environment variable {name} (named as {needle}) is not set",
                ex.path.display(),
                c.name
            ));
        }
    }
    out
}

/// What to do with rendered reports.
pub(crate) struct Output {
    /// Write each suite's reports to `<REPORTS>/<suite>/` (false: `--dry-run`).
    pub write: bool,
    /// Print every whole Markdown report (false: a summary of each).
    pub print: bool,
    /// Begin each suite's defaults note with the suite's name (several suites).
    pub name_notes: bool,
    /// Print each report's headline table in its summary (false: title, decision, notes and the
    /// files written only, as `bench` prints many reports).
    pub tables: bool,
}

/// Per suite: its defaults note, its reports written to `<reports>/<suite>/` and their
/// summaries (or whole reports) printed; then the verdict line. The reports are written either
/// way (they show what failed); the exit code says it: 1 when a check failed.
pub(crate) fn emit(rendered: &[Rendered], reports: &Path, out: &Output) -> Result<Exit> {
    for rendered in rendered {
        let dir = reports.join(&rendered.suite.name);
        if let Some(note) = rendered.defaults_note() {
            if out.name_notes {
                println!("{}: {note}\n", rendered.suite.name);
            } else {
                println!("{note}\n");
            }
        }
        if out.write {
            // The cost file and the reports as one step: a failure to write the reports leaves
            // the cost file as it was too.
            report::write_all_with_costs(&dir, &rendered.reports, rendered.costs_file.as_ref())?;
            if let Some(c) = &rendered.costs_file {
                println!("wrote {}", report::for_person(&c.path).display());
            }
            write_models(rendered, &dir)?;
        }
        for r in &rendered.reports {
            report::print_report_as(r, &dir, out.print, out.write, out.tables);
        }
    }
    let (line, failed) = report::verdict_line(rendered);
    println!("{line}");
    Ok(if failed { Exit::Failed } else { Exit::Ok })
}

/// Merges the model outputs a suite's replay was given into `<dir>/runs/models/` and says what
/// is new there: outputs the recording did not hold, and outputs it held with other bits
/// (computed again on this CPU); nothing else when nothing is new.
fn write_models(rendered: &Rendered, dir: &Path) -> Result<()> {
    if rendered.models.is_empty() {
        return Ok(());
    }
    let models = dir.join("runs").join(crate::replay::MODELS_FOLDER);
    let (mut asked, mut added, mut changed) = (0, 0, 0);
    for f in &rendered.models {
        let w = f.write_into(&models)?;
        asked += f.records;
        added += w.added;
        changed += w.changed;
    }
    println!(
        "{}",
        models_line(asked, added, changed, &report::for_person(&models))
    );
    Ok(())
}

/// The line `run` prints about the model outputs it recorded.
fn models_line(asked: usize, added: usize, changed: usize, folder: &Path) -> String {
    let folder = folder.display();
    match (added, changed) {
        (0, 0) => format!("model outputs: all {asked} already recorded in {folder}, nothing new"),
        (a, 0) => format!("recorded {a} new model output{} in {folder} ({asked} used)", plural(a)),
        (0, c) => format!(
            "recorded {c} model output{} in {folder} that differ from the recording's (computed on this CPU; {asked} used)",
            plural(c)
        ),
        (a, c) => format!(
            "recorded {a} new model output{} and {c} that differ from the recording's (computed on this CPU) in {folder} ({asked} used)",
            plural(a)
        ),
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::models_line;
    use std::path::Path;

    /// Issue 41: a live `run` repeated with nothing new said "168 not in the recording before"
    /// every time; it says only what is new (the counts are the file's, see
    /// `ranklab_engine::models::recorded`'s test of `write_into`).
    #[test]
    fn the_models_line_says_only_what_is_new() {
        let f = Path::new("reports/brain/runs/models");
        assert_eq!(
            models_line(168, 0, 0, f),
            "model outputs: all 168 already recorded in reports/brain/runs/models, nothing new"
        );
        assert_eq!(
            models_line(168, 2, 0, f),
            "recorded 2 new model outputs in reports/brain/runs/models (168 used)"
        );
        assert!(models_line(168, 0, 3, f).starts_with("recorded 3 model outputs in"));
        assert!(models_line(168, 1, 3, f).starts_with("recorded 1 new model output and 3 that"));
    }
}
