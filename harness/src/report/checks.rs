//! The checks of a run that can fail it (paired expectations not met, engine errors counted as
//! empty rankings): per experiment, per suite, and the verdict line `run` and `bench` print.

use super::{shown, PairedResult, SuiteReport};
use crate::replay::Replay;
use crate::suite::Suite;

/// The failed checks of one experiment's run: per paired file, the expectations not met; per
/// external configuration, the tasks its errors turned into empty rankings (`on_error: empty`).
pub(super) fn failures(paired: &[PairedResult], replay: &Replay, tasks: usize) -> Vec<String> {
    let mut out = Vec::new();
    for p in paired {
        let failed: Vec<String> = p
            .verdicts
            .iter()
            .filter(|v| !v.pass())
            .map(|v| match &v.configuration {
                None => format!("{} under {}", v.id, v.wiring),
                Some(c) => format!("{} under {} (`{c}`)", v.id, v.wiring),
            })
            .collect();
        if failed.is_empty() {
            continue;
        }
        let more = if failed.len() > 5 { ", …" } else { "" };
        out.push(format!(
            "{} of {} paired expectations in `{}` not met ({}{more})",
            failed.len(),
            p.verdicts.len(),
            shown(&p.path),
            failed[..failed.len().min(5)].join(", ")
        ));
    }
    for e in &replay.external {
        if e.empty_tasks > 0 {
            out.push(format!(
                "configuration `{}` answered {} of {tasks} tasks with an error, counted as empty rankings (`on_error: empty`)",
                e.configuration, e.empty_tasks
            ));
        }
    }
    out
}

/// A replayed suite: its reports (nothing written yet) and what the corpus said about itself.
pub struct Rendered {
    /// The suite.
    pub suite: Suite,
    /// One report per experiment file.
    pub reports: Vec<SuiteReport>,
    /// Number of documents in the corpus.
    pub documents: usize,
    /// Ids of the records that had no front matter and took every default.
    pub without_front_matter: Vec<String>,
    /// The suite's cost file to write (`--measure-costs` measured something), with what it held
    /// when read. `None`: the file is left as it is.
    pub costs_file: Option<crate::replay::costs::NewCosts>,
    /// The model outputs the replay was given, one file per model, to merge into
    /// `<suite>/runs/models/` (see `ranklab_engine::models::recorded`).
    pub models: Vec<ranklab_engine::models::recorded::RecordedFile>,
}

impl Rendered {
    /// The failed checks of the suite's reports ([`SuiteReport::failures`]), each once.
    pub fn failures(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for f in self.reports.iter().flat_map(|r| &r.failures) {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        out
    }

    /// One line saying how many records used the documented defaults, when any did.
    pub fn defaults_note(&self) -> Option<String> {
        let ids = &self.without_front_matter;
        if ids.is_empty() {
            return None;
        }
        let shown: Vec<&str> = ids.iter().take(5).map(String::as_str).collect();
        let more = if ids.len() > 5 { ", …" } else { "" };
        Some(format!(
            "{} of {} records have no front matter and use the defaults (active, first-class, no date, no cites): {}{more}",
            ids.len(),
            self.documents,
            shown.join(", ")
        ))
    }
}

/// The last line `run` and `bench` print, and whether it is a failure (exit 1): `FAIL: <suite>:
/// <what failed>; …`, or `PASS: …` when every paired expectation was met and no engine error was
/// counted as an empty ranking.
pub fn verdict_line(rendered: &[Rendered]) -> (String, bool) {
    let failed: Vec<String> = rendered
        .iter()
        .flat_map(|r| {
            r.failures()
                .into_iter()
                .map(|f| format!("{}: {f}", r.suite.name))
        })
        .collect();
    if !failed.is_empty() {
        return (format!("FAIL: {}", failed.join("; ")), true);
    }
    let reports: usize = rendered.iter().map(|r| r.reports.len()).sum();
    (
        format!(
            "PASS: {reports} report{} rendered; every paired expectation checked was met and no engine error was counted as an empty ranking",
            if reports == 1 { "" } else { "s" }
        ),
        false,
    )
}
