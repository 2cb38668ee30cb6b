//! Rendering a gate run: the Markdown report (stdout, appended to `$GITHUB_STEP_SUMMARY`) and
//! the `--json` document (stdout with `--json -`, else the file named), both from the same
//! plan, verdicts and update result.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::changes::Changes;
use super::plan::{Mode, Plan};
use super::rankings::{push_moved_list, Moved, MOVED_SHOWN};
use super::update::Update;
use super::verdict::{table, Counts, ExpectationLine, ExpectationVerdict, Line, Outcome, Verdict};
use super::ModelOutputs;
use crate::report::shown;

/// The exit code: 2 when `--update` is refused (a refused write, as for every command), 1 when
/// the gate fails, else 0.
pub fn exit_code(plan: &Plan, outcome: &Outcome, update: &Update) -> crate::exit::Exit {
    use crate::exit::Exit;
    match (&plan.mode, update) {
        (_, Update::Refused { .. }) => Exit::Refused,
        (Mode::Update { .. }, _) => Exit::Ok,
        _ => Exit::failed_if(outcome.failed()),
    }
}

/// The summary line's counts: `5 passed, 1 OKISH, 1 improved, 0 new, 3 skipped, 0 failed`.
fn count_line(c: &Counts) -> String {
    format!(
        "{} passed, {} OKISH, {} improved, {} new, {} skipped, {} failed",
        c.passed, c.okish, c.improved, c.new, c.skipped, c.failed
    )
}

/// The acceptances every gate shows while they stand.
fn acceptances(outcome: &Outcome) -> Vec<Acceptance> {
    let mut out = Vec::new();
    for l in &outcome.lines {
        if let Some(a) = &l.row.accepted {
            out.push(Acceptance {
                what: format!("{}/{}/{}", l.row.suite, l.row.configuration, l.row.metric),
                from: Some(a.from.as_f64()),
                to: Some(a.to.as_f64()),
                rank: None,
                by: a.who.by.clone(),
                at: a.who.at.clone(),
                why: a.who.why.clone(),
                text: format!(
                    "{}/{}/{}: {} → {}, accepted on {} by {}: {}",
                    l.row.suite,
                    l.row.configuration,
                    l.row.metric,
                    a.from.show(),
                    a.to.show(),
                    a.who.at,
                    a.who.by,
                    a.who.why
                ),
            });
        }
    }
    for e in &outcome.expectations {
        let x = &e.expectation;
        if let Some(a) = &x.accepted {
            let rank = a
                .rank
                .map_or("not ranked".to_string(), |r| format!("rank {r}"));
            out.push(Acceptance {
                what: format!("{}/{}/{}/{}", x.suite, x.configuration, x.task, x.document),
                from: None,
                to: None,
                rank: a.rank,
                by: a.who.by.clone(),
                at: a.who.at.clone(),
                why: a.who.why.clone(),
                text: format!(
                    "{}/{} task {} document {} within {}: {rank}, accepted on {} by {}: {}",
                    x.suite,
                    x.configuration,
                    x.task,
                    x.document,
                    x.within,
                    a.who.at,
                    a.who.by,
                    a.who.why
                ),
            });
        }
    }
    out
}

/// The Markdown report.
pub fn markdown(plan: &Plan, outcome: &Outcome, update: &Update, outputs: &ModelOutputs) -> String {
    let mut md = String::from("## ranklab gate\n\n");
    let _ = writeln!(md, "Baseline `{}`.\n", shown(&plan.path));
    let _ = writeln!(md, "{}.\n", capitalized(&outputs.line()));
    for b in plan.changes.banner() {
        let _ = writeln!(md, "> **{b}**\n");
    }
    md.push_str(&table(&outcome.lines));
    push_moved(&mut md, &outcome.lines);
    push_new_and_gone(&mut md, &outcome.lines);
    push_expectations(&mut md, &outcome.expectations);
    for p in &outcome.paired {
        let _ = write!(
            md,
            "\n### Paired assertions: `{}`\n\n{}",
            shown(&p.file),
            crate::paired::table(&p.verdicts)
        );
    }
    push_acceptances(&mut md, outcome);
    push_hints(&mut md, plan, &outcome.counts);
    push_summary(&mut md, outcome, update);
    match update {
        Update::NotAsked => push_regressions(&mut md, &outcome.lines),
        Update::Written {
            path,
            rows,
            accepted,
            dropped,
        } => push_written(&mut md, path, *rows, accepted, dropped),
        Update::Refused {
            rows,
            expectations,
            paired,
            accept_given,
        } => push_refused(&mut md, rows, expectations, *paired, *accept_given),
    }
    md
}

/// The first letter upper-cased.
fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// For each failed or OKISH row with moved tasks: ten of them, worst first, and how many more.
fn push_moved(md: &mut String, lines: &[Line]) {
    for l in lines.iter().filter(|l| !l.moved.is_empty()) {
        let heading = format!(
            "{}/{}/{} ({})",
            l.row.suite,
            l.row.configuration,
            l.row.metric,
            l.verdict.as_str()
        );
        push_moved_list(md, &heading, &l.moved);
    }
}

/// The rows not in the baseline yet, and the baseline's rows that are gone.
fn push_new_and_gone(md: &mut String, lines: &[Line]) {
    let names = |v: Verdict| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l.verdict == v)
            .map(|l| format!("{}/{}/{}", l.row.suite, l.row.configuration, l.row.metric))
            .collect()
    };
    let (new, gone) = (names(Verdict::New), names(Verdict::Gone));
    if !new.is_empty() {
        let _ = writeln!(
            md,
            "\nNew rows (not in the baseline, not gated yet): {}.",
            new.join(", ")
        );
    }
    if !gone.is_empty() {
        let _ = writeln!(
            md,
            "\nGone rows (in the baseline, no longer measurable; they fail): {}.",
            gone.join(", ")
        );
    }
}

/// The per-task expectations' table (nothing when the baseline has none).
fn push_expectations(md: &mut String, expectations: &[ExpectationLine]) {
    if expectations.is_empty() {
        return;
    }
    md.push_str("\n### Per-task expectations\n\n| suite | configuration | task | document | within | rank | verdict |\n|---|---|---|---|---:|---:|---|\n");
    for e in expectations {
        let x = &e.expectation;
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} | {} |",
            crate::report::table::md_cell(&x.suite),
            crate::report::table::md_cell(&x.configuration),
            crate::report::table::md_cell(&x.task),
            crate::report::table::md_cell(&x.document),
            x.within,
            e.rank.map_or("-".to_string(), |r| r.to_string()),
            expectation_verdict(e),
        );
    }
}

/// An expectation's verdict as the table shows it.
fn expectation_verdict(e: &ExpectationLine) -> String {
    match (e.verdict, &e.note) {
        (ExpectationVerdict::Skipped, _) => {
            "skipped (collection not given; pass --beir DIR)".to_string()
        }
        (ExpectationVerdict::Pass, _) => "pass".to_string(),
        (ExpectationVerdict::Accepted, _) => "pass (failing, as accepted)".to_string(),
        (ExpectationVerdict::Gone, Some(n)) => format!("FAIL (gone: {n})"),
        (ExpectationVerdict::Gone, None) => "FAIL (gone)".to_string(),
        (ExpectationVerdict::Fail, _) if e.rank.is_none() => "FAIL (not ranked)".to_string(),
        (ExpectationVerdict::Fail, _) => "FAIL".to_string(),
    }
}

/// The acceptances that stand (nothing when there are none).
fn push_acceptances(md: &mut String, outcome: &Outcome) {
    let acc = acceptances(outcome);
    if !acc.is_empty() {
        md.push_str("\n### Accepted regressions\n\nShown while the accepted value stands (until an `--update` records another):\n\n");
        for a in &acc {
            let _ = writeln!(md, "- {}", a.text);
        }
    }
}

/// What to do about rows that rose (record them) or are OKISH (look before they grow).
fn push_hints(md: &mut String, plan: &Plan, c: &Counts) {
    if c.improved > 0 && !plan.updates() {
        md.push_str(
            "\nSome values rose beyond their tolerance: after review, record them with `ranklab gate --update`.\n",
        );
    }
    if c.okish > 0 {
        md.push_str("\nOKISH: a drop beyond the tolerance but within 1.5x of it passes; look before it grows (a noisy configuration: `ranklab gate --calibrate 5` measures its spread).\n");
    }
}

/// The verdict line: PASS or FAIL and every count.
fn push_summary(md: &mut String, outcome: &Outcome, update: &Update) {
    let c = &outcome.counts;
    let rest = format!(
        "{}{} paired assertion(s) hold, {} failed",
        if outcome.expectations.is_empty() {
            String::new()
        } else {
            format!(
                "per-task expectations: {} hold, {} accepted, {} failed, {} skipped; ",
                c.expectations_held,
                c.expectations_accepted,
                c.expectations_failed,
                c.expectations_skipped
            )
        },
        c.paired_held,
        c.paired_failed
    );
    if c.stale_allowed > 0 {
        let _ = writeln!(
            md,
            "\n{} row(s) replayed from a stale recording pass because of --allow-stale.",
            c.stale_allowed
        );
    }
    let verdict = match (outcome.failed(), update) {
        (true, Update::Written { .. }) => "FAIL, accepted",
        (true, _) => "FAIL",
        (false, _) => "PASS",
    };
    let _ = writeln!(
        md,
        "\n**{verdict}**: {} row(s): {}; {rest}.",
        outcome.lines.len(),
        count_line(c)
    );
}

/// A gate run: the failing rows again, in a table of their own.
fn push_regressions(md: &mut String, lines: &[Line]) {
    let failing: Vec<Line> = lines
        .iter()
        .filter(|l| l.verdict.fails())
        .cloned()
        .collect();
    if !failing.is_empty() {
        md.push_str("\nRegressions:\n\n");
        md.push_str(&table(&failing));
    }
}

/// An `--update` that wrote the baseline: where, and what it accepted and dropped.
fn push_written(
    md: &mut String,
    path: &Path,
    rows: usize,
    accepted: &[String],
    dropped: &[String],
) {
    let _ = writeln!(
        md,
        "\nBaseline updated: {rows} rows written to `{}`.",
        shown(path)
    );
    if !accepted.is_empty() {
        let _ = writeln!(
            md,
            "\nRegressions accepted (recorded with who, when and why): {}.",
            accepted.join(", ")
        );
    }
    if !dropped.is_empty() {
        let _ = writeln!(
            md,
            "\nGone, dropped from the baseline: {}.",
            dropped.join(", ")
        );
    }
}

/// An `--update` refused: each failure that refused it, and how to accept them.
fn push_refused(
    md: &mut String,
    rows: &[String],
    expectations: &[String],
    paired: usize,
    accept_given: bool,
) {
    let _ = writeln!(md, "\n**REFUSED**: the baseline was not updated.");
    for r in rows {
        let _ = writeln!(md, "- regressed row: {r}");
    }
    for e in expectations {
        let _ = writeln!(md, "- failed expectation: {e}");
    }
    if paired > 0 {
        let _ = writeln!(
            md,
            "- {paired} paired assertion(s) failed: a paired assertion is never accepted; fix the change or the assertion file"
        );
    }
    if !accept_given && (!rows.is_empty() || !expectations.is_empty()) {
        md.push_str("\nReview them; to record them anyway, say why: `ranklab gate --update --accept-regressions \"why\"`.\n");
    }
}

/// One acceptance shown by the gate.
#[derive(Debug, Clone, Serialize)]
struct Acceptance {
    /// `suite/configuration/metric`, or `suite/configuration/task/document`.
    what: String,
    from: Option<f64>,
    to: Option<f64>,
    rank: Option<usize>,
    by: String,
    at: String,
    why: String,
    /// As shown in the Markdown.
    text: String,
}

#[derive(Serialize)]
struct JsonRow {
    suite: String,
    configuration: String,
    metric: String,
    baseline: Option<f64>,
    now: Option<f64>,
    delta: Option<f64>,
    allowed: f64,
    verdict: &'static str,
    fails: bool,
    rise_fails: bool,
    config: Option<String>,
    note: Option<String>,
    /// When the suite's judgments changed: the baseline's kept rankings under today's
    /// judgments (null: none kept); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_rescored: Option<Option<f64>>,
    /// For a failed or OKISH row: the tasks that moved, worst first (ten at most).
    moved: Vec<Moved>,
    /// How many more tasks moved than `moved` lists.
    moved_more: usize,
    /// With `--alpha`: the paired sign-flip p of the row and its Holm adjustment over the rows
    /// (absent without `--alpha`, null for a row with no kept rankings).
    #[serde(skip_serializing_if = "Option::is_none")]
    p: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    p_holm: Option<Option<f64>>,
}

#[derive(Serialize)]
struct JsonExpectation {
    suite: String,
    configuration: String,
    task: String,
    document: String,
    within: usize,
    rank: Option<usize>,
    verdict: &'static str,
    note: Option<String>,
}

#[derive(Serialize)]
struct JsonPaired {
    file: String,
    held: usize,
    failed: usize,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    baseline: String,
    mode: &'static str,
    outcome: &'static str,
    exit_code: u8,
    model_outputs: &'a ModelOutputs,
    inputs_changed: bool,
    banner: Vec<String>,
    changes: &'a Changes,
    rows: Vec<JsonRow>,
    new_rows: Vec<String>,
    gone_rows: Vec<String>,
    expectations: Vec<JsonExpectation>,
    paired: Vec<JsonPaired>,
    acceptances: Vec<Acceptance>,
    counts: &'a Counts,
    update: &'a Update,
}

/// The `--json` document.
pub fn json(
    plan: &Plan,
    outcome: &Outcome,
    update: &Update,
    code: crate::exit::Exit,
    outputs: &ModelOutputs,
) -> String {
    let rows = outcome
        .lines
        .iter()
        .map(|l| {
            let base = (l.verdict != Verdict::New).then_some(l.row.value);
            let against = (l.verdict != Verdict::New).then_some(l.reference());
            JsonRow {
                suite: l.row.suite.clone(),
                configuration: l.row.configuration.clone(),
                metric: l.row.metric.clone(),
                baseline: base.map(|b| b.as_f64()),
                now: l.now.map(|n| n.as_f64()),
                delta: against
                    .zip(l.now)
                    .map(|(b, n)| super::baseline::Fixed(n.0.saturating_sub(b.0)).as_f64()),
                allowed: l.row.allowed().as_f64(),
                verdict: l.verdict.key(),
                fails: l.verdict.fails(),
                rise_fails: l.row.rise_fails,
                config: l.row.config.clone(),
                note: l.note.clone(),
                baseline_rescored: l.judgments_changed.then(|| l.rescored.map(|r| r.as_f64())),
                p: plan.alpha.map(|_| l.p.map(|p| p.0)),
                p_holm: plan.alpha.map(|_| l.p.map(|p| p.1)),
                moved: l.moved.iter().take(MOVED_SHOWN).cloned().collect(),
                moved_more: l.moved.len().saturating_sub(MOVED_SHOWN),
            }
        })
        .collect::<Vec<_>>();
    let pick = |v: &str| {
        rows.iter()
            .filter(|r| r.verdict == v)
            .map(|r| format!("{}/{}/{}", r.suite, r.configuration, r.metric))
            .collect()
    };
    let report = JsonReport {
        baseline: shown(&plan.path),
        mode: if plan.updates() { "update" } else { "gate" },
        outcome: match update {
            Update::Written { .. } => "updated",
            Update::Refused { .. } => "refused",
            Update::NotAsked if outcome.failed() => "fail",
            Update::NotAsked => "pass",
        },
        exit_code: code.code(),
        model_outputs: outputs,
        inputs_changed: plan.changes.any(),
        banner: plan.changes.banner(),
        changes: &plan.changes,
        new_rows: pick("new"),
        gone_rows: pick("gone"),
        rows,
        expectations: outcome
            .expectations
            .iter()
            .map(|e| JsonExpectation {
                suite: e.expectation.suite.clone(),
                configuration: e.expectation.configuration.clone(),
                task: e.expectation.task.clone(),
                document: e.expectation.document.clone(),
                within: e.expectation.within,
                rank: e.rank,
                verdict: e.verdict.key(),
                note: e.note.clone(),
            })
            .collect(),
        paired: outcome
            .paired
            .iter()
            .map(|p| JsonPaired {
                file: shown(&p.file),
                held: p.verdicts.iter().filter(|v| v.pass()).count(),
                failed: p.verdicts.iter().filter(|v| !v.pass()).count(),
            })
            .collect(),
        acceptances: acceptances(outcome),
        counts: &outcome.counts,
        update,
    };
    let mut s = serde_json::to_string_pretty(&report).unwrap_or_default();
    s.push('\n');
    s
}

/// Before any work: the places the gate will write its result can take it, so that a gate never
/// ends with exit 2 after rewriting the baseline or printing a verdict (attack pass: `--json`
/// naming a folder failed after `--update` had written; a `$GITHUB_STEP_SUMMARY` that is a
/// folder failed after the JSON said exit 0).
pub fn check_outputs(json: Option<&Path>, html: Option<&Path>) -> Result<()> {
    if let Some(p) = json.filter(|p| *p != Path::new("-")) {
        if p.is_dir() {
            anyhow::bail!(
                "--json {}: is a folder; give the path of a file to write (or - for stdout)",
                p.display()
            );
        }
    }
    if let Some(d) = html {
        if d.exists() && !d.is_dir() {
            anyhow::bail!(
                "--html {}: is a file; give a folder for the pages (it is created if missing)",
                d.display()
            );
        }
    }
    step_summary()?;
    Ok(())
}

/// `$GITHUB_STEP_SUMMARY` opened for appending (created if missing), when it is set.
fn step_summary() -> Result<Option<(PathBuf, std::fs::File)>> {
    let Some(p) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let p = PathBuf::from(p);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .with_context(|| {
            format!(
                "cannot open $GITHUB_STEP_SUMMARY ({}) to append the verdict; point it at a writable file or unset it",
                p.display()
            )
        })?;
    Ok(Some((p, f)))
}

/// Prints the Markdown (unless `--json -` takes stdout), writes the JSON where asked, and
/// appends the Markdown to `$GITHUB_STEP_SUMMARY` when that is set.
pub fn emit(md: &str, json: Option<(&Path, String)>) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match &json {
        Some((p, text)) if *p == Path::new("-") => out.write_all(text.as_bytes()),
        _ => out.write_all(md.as_bytes()),
    }
    .and_then(|()| out.flush())
    .context("cannot write to stdout")?;
    if let Some((p, text)) = &json {
        if *p != Path::new("-") {
            crate::report::atomic::write(p, text.as_bytes())?;
        }
    }
    if let Some((p, mut f)) = step_summary()? {
        writeln!(f, "{md}")
            .with_context(|| format!("cannot append to $GITHUB_STEP_SUMMARY ({})", p.display()))?;
    }
    Ok(())
}
