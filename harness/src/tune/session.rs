//! One tuning from start to end: load and assemble the problem, score every candidate, re-check
//! the answer through the real replay, render the report and (when asked) write the practice
//! file. `ranklab tune` only parses its flags and calls [`tune`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use chrono::NaiveDate;
use ranklab_engine::policy::{Practice, Previous, Provenance, Weights, HISTORY_LEN};

use super::assemble::Inputs;
use super::grid::Grid;
use super::report::{self, Outcome};
use super::robust::Choice;
use super::rolling::Rolling;
use super::scorer::MergeQuery;
use super::{best, heatmap, robust, rolling, search, Part, Problem, Scored};
use crate::replay::Replayer;
use crate::report::shown;

/// What to tune, as `ranklab tune`'s flags say.
pub(crate) struct Request {
    /// The suite (a directory holding suite.yaml, or the file).
    pub(crate) suite: PathBuf,
    /// The merges file (None: merges.yaml beside the suite file).
    pub(crate) merges: Option<PathBuf>,
    /// The configuration to tune (None: the one with `wiring: current`).
    pub(crate) configuration: Option<String>,
    /// Window length in days, at least 1.
    pub(crate) window_days: u32,
    /// The window's last day.
    pub(crate) as_of: NaiveDate,
    /// The grid of candidate weights.
    pub(crate) grid: Grid,
    /// How many of the best candidates to show.
    pub(crate) top: usize,
    /// Whether to write the chosen weights to the practice file.
    pub(crate) write: bool,
    /// Write even when the rolling validation says tuning does not beat keeping the weights.
    pub(crate) force: bool,
    /// Write the current weights back with this tuning's provenance (the decision to keep them).
    pub(crate) keep: bool,
    /// Tie tolerance on MRR and recall.
    pub(crate) epsilon: f64,
    /// Folds of the rolling validation.
    pub(crate) folds: usize,
    /// Write `<dir>/<suite>/<stem>.{md,csv,json}` and `<stem>.heatmap.svg` there.
    pub(crate) reports: Option<PathBuf>,
    /// The report files' stem: `tuning` for `--suite`, `tune-<name>` for a tuning file
    /// (`tune/cv/penalty.rs`); the Markdown's heat map link follows it.
    pub(crate) stem: String,
}

/// Runs a tuning and returns its report (Markdown, a pure function of the inputs). Timing goes
/// to stderr.
///
/// The steps: load and assemble the problem, score every candidate, choose (on the window and
/// on its train part), re-check the answer through the real replay, validate by rolling
/// origin, render, refuse a `--write` the validation does not back, then write the report files
/// and the practice file when asked.
pub(crate) fn tune(req: &Request) -> Result<String> {
    let grid = &req.grid;
    let inputs = Inputs::load(
        &req.suite,
        req.merges.as_deref(),
        req.configuration.as_deref(),
        req.as_of,
        req.window_days,
    )?;

    // First stage once per query: the configurations without their wiring.
    let (ex_merges, ex_pairs) = inputs.first_stages();
    let mut all = vec![&ex_merges];
    all.extend(ex_pairs.iter());
    let engine = Replayer::build(&inputs.corpus, &all)?;
    let merge_suite = inputs.merge_suite();
    let (problem, pool_queries) = inputs.problem(&engine, &ex_merges, &ex_pairs)?;

    let (scored, rejected) = score_grid(&problem, grid);
    let current_w = inputs.practice.weights;
    let (chosen, train_only) = choose(&problem, grid, &scored, req.epsilon, &current_w)?;

    // The answer, re-checked through the real replay.
    for (what, w) in [
        ("chosen", chosen.weights),
        ("train-selected", train_only.weights),
        ("current", current_w),
    ] {
        inputs.verify(&engine, &merge_suite, &problem, what, w)?;
    }

    let rolling = validate(req, &inputs, &problem, &pool_queries);

    let outcome = Outcome {
        inputs: &inputs,
        grid,
        as_of: req.as_of,
        problem: &problem,
        scored: &scored,
        rejected,
        chosen: &chosen,
        train_only: &train_only,
        rolling: &rolling,
        epsilon: req.epsilon,
        top: req.top,
    };
    let map = heatmap::map(&problem, grid, chosen.hundredths);
    let mut md = render(&outcome, &req.stem);
    let practice_path = &inputs.practice_path;
    let changes = chosen.hundredths != robust::hundredths_of(&current_w).unwrap_or([u16::MAX; 4]);
    if req.write && changes && !rolling.beats && !req.force && !req.keep {
        bail!(
            "--write refused: {}; the practice file `{}` is unchanged. Keep the current weights (--write --keep records this tuning and keeps them), or pass --force to write {} anyway",
            report::verdict(&rolling),
            shown(practice_path),
            robust::show(chosen.hundredths)
        );
    }
    if let Some(dir) = &req.reports {
        write_reports(dir, &req.stem, &outcome, &map, &md)?;
    }
    md.push_str(&if req.write {
        write_practice(req, &outcome, changes)?
    } else {
        format!(
            "\nNothing written: pass --write to store the chosen weights in `{}`.\n",
            shown(practice_path)
        )
    });
    Ok(md)
}

/// Scores every candidate of the grid by re-sorting (a progress bar, then the timing on
/// stderr); returns them in grid order with how many a paired assertion rejected.
fn score_grid(problem: &Problem, grid: &Grid) -> (Vec<Scored>, usize) {
    let pb = crate::progress::bar(grid.len() as u64, "tune");
    let started = Instant::now();
    let scored = search(problem, grid, &|n| pb.inc(n));
    let elapsed = started.elapsed();
    pb.finish_and_clear();
    let rejected = scored.iter().filter(|s| s.score.is_none()).count();
    eprintln!(
        "tune: scored {} candidates ({} rejected by paired assertions) on {} merge and {} paired queries in {:.3} s ({} threads)",
        crate::stats::thousands(scored.len()),
        crate::stats::thousands(rejected),
        problem.merges.len(),
        problem.pairs.len(),
        elapsed.as_secs_f64(),
        rayon::current_num_threads()
    );
    (scored, rejected)
}

/// The robust choice on the whole window and on its train part, each refined at 0.01; an
/// error naming the assertions the current weights break when no candidate passes them all.
fn choose(
    problem: &Problem,
    grid: &Grid,
    scored: &[Scored],
    eps: f64,
    current_w: &Weights,
) -> Result<(Choice, Choice)> {
    let choice_on = |part: Part| {
        robust::choose(problem, grid, scored, part, eps, current_w).map(|mut c| {
            let coarse = best(scored, part).expect("a candidate passes");
            robust::refine(
                problem,
                grid,
                part,
                eps,
                coarse.score.expect("passing").part(part),
                &mut c,
            );
            c
        })
    };
    let Some(chosen) = choice_on(Part::Window) else {
        let breaking: Vec<&str> = problem
            .pairs
            .iter()
            .filter(|p| !p.passes(current_w))
            .map(|p| p.id.as_str())
            .collect();
        bail!(
            "every one of the {} candidates breaks a paired assertion; no weights on this grid satisfy them (the current weights break: {}). Check paired*.yaml or widen the grid (--max-units, --unit)",
            scored.len(),
            if breaking.is_empty() { "none".to_string() } else { breaking.join(", ") }
        );
    };
    let train_only = choice_on(Part::Train).expect("a candidate passes");
    Ok((chosen, train_only))
}

/// The rolling validation of the whole procedure against keeping the current weights (its
/// timing on stderr).
fn validate(
    req: &Request,
    inputs: &Inputs,
    problem: &Problem,
    pool_queries: &[MergeQuery],
) -> Rolling {
    let started = Instant::now();
    let rolling = rolling::rolling(
        problem,
        &req.grid,
        &inputs.pool,
        pool_queries,
        req.window_days,
        req.folds,
        req.epsilon,
        &inputs.practice.weights,
    );
    eprintln!(
        "tune: rolling validation, {} folds in {:.3} s",
        rolling.folds.len(),
        started.elapsed().as_secs_f64()
    );
    rolling
}

/// The report's Markdown up to what was written: [`report::markdown`], then the sensitivity
/// table and the heat map's section (the image `<stem>.heatmap.svg`).
fn render(o: &Outcome<'_>, stem: &str) -> String {
    let mut md = report::markdown(o);
    md.push_str(&format!(
        "## Sensitivity around the chosen weights\n\nWindow MRR with one weight moved by one or two grid steps, the others at the chosen values (`-`: off the grid or against the rules; `x`: breaks a paired assertion).\n\n{}\n## Heat map\n\n![window MRR over superseded × deprecated]({stem}.heatmap.svg)\n\nWindow MRR over the two lifecycle weights on the grid, the history weights at the chosen amendment {:.2} and editorial_only {:.2}; the chosen point (orange) and the current weights (white) are marked.\n",
        heatmap::sensitivity(o.problem, o.grid, o.chosen.hundredths),
        o.chosen.weights.amendment,
        o.chosen.weights.editorial_only
    ));
    md
}

/// Writes `<dir>/<suite>/<stem>.{heatmap.svg,csv,json,md}`: the four files replace their
/// predecessors in one step.
fn write_reports(
    dir: &Path,
    stem: &str,
    o: &Outcome<'_>,
    map: &heatmap::Map,
    md: &str,
) -> Result<()> {
    let name = &o.inputs.suite.name;
    let svg = heatmap::svg(
        map,
        &format!("ranklab tune — {name}: window MRR over the lifecycle weights"),
        &o.chosen.weights,
        &o.inputs.practice.weights,
    );
    let (csv, json) = report::tables(o);
    let names = ["heatmap.svg", "csv", "json", "md"].map(|ext| format!("{stem}.{ext}"));
    crate::report::atomic::write_dir(
        &dir.join(name),
        [
            svg.as_bytes(),
            csv.as_bytes(),
            json.as_bytes(),
            md.as_bytes(),
        ]
        .iter()
        .zip(&names)
        .map(|(b, p)| (Path::new(p.as_str()), *b)),
    )
}

/// Writes the practice file (atomically): the chosen weights, or the current ones kept (with
/// `--keep`, or when no candidate beats them), with this tuning's provenance and the previous
/// weights in its history. Returns the report's last line, saying what was written.
fn write_practice(req: &Request, o: &Outcome<'_>, changes: bool) -> Result<String> {
    let keep = req.keep || !changes;
    let current_w = o.inputs.practice.weights;
    let written = if keep { current_w } else { o.chosen.weights };
    let practice_path = &o.inputs.practice_path;
    let mut history = vec![Previous {
        tuned: o.inputs.practice.tuned.clone(),
        weights: current_w,
    }];
    history.extend(o.inputs.practice.history.iter().cloned());
    history.truncate(HISTORY_LEN);
    let out = Practice {
        tuned: tuned_line(req, o, keep),
        weights: written,
        provenance: Some(provenance(req, o, changes, &written)),
        history,
        path: practice_path.clone(),
    };
    crate::report::atomic::write(practice_path, out.to_yaml().as_bytes())?;
    Ok(if keep {
        format!(
            "\nKept the current weights in `{}` and recorded this tuning's provenance there.\n",
            shown(practice_path)
        )
    } else {
        format!(
            "\nWrote the chosen weights to `{}`.\n",
            shown(practice_path)
        )
    })
}

/// The practice file's `tuned:` line: the date, the command, the window and the grid.
fn tuned_line(req: &Request, o: &Outcome<'_>, keep: bool) -> String {
    let window = &o.inputs.window;
    let as_of = req.as_of;
    let tuned = format!(
        "{as_of}, ranklab tune --window-days {} --as-of {as_of} on {}: {} merges of {}..={}, grid unit {}",
        window.days,
        shown(&o.inputs.merges_path),
        window.merges.len(),
        window.from,
        window.to,
        o.grid.unit_text()
    );
    if keep {
        format!("{tuned}; kept the current weights")
    } else {
        tuned
    }
}

/// The provenance recorded in the practice file: the window, the objective before and after,
/// the held-out figures and the decision.
fn provenance(req: &Request, o: &Outcome<'_>, changes: bool, written: &Weights) -> Provenance {
    let (problem, window, current_w) = (o.problem, &o.inputs.window, &o.inputs.practice.weights);
    let k = o.inputs.suite.k;
    let objective = |w: &Weights| {
        let f = problem.score(w).window;
        format!("window MRR {:.4}, recall@{k} {:.4}", f.mrr(), f.recall())
    };
    let train_s = problem.score(&o.train_only.weights);
    let held_out = format!(
        "time split: weights selected on the older {} merges reach held-out MRR {:.4} on the newest {} (current {:.4}); rolling: {}",
        window.train().len(),
        train_s.held_out.mrr(),
        window.held_out().len(),
        problem.score(current_w).held_out.mrr(),
        report::verdict(o.rolling)
    );
    Provenance {
        date: req.as_of.to_string(),
        window: format!("{}..={}", window.from, window.to),
        merges: window.merges.len(),
        newest_merge: window
            .merges
            .last()
            .map(|m| m.id.clone())
            .unwrap_or_default(),
        objective_before: objective(current_w),
        objective_after: objective(written),
        held_out,
        decision: decision(req, o, changes),
        ranklab: env!("CARGO_PKG_VERSION").to_string(),
    }
}

/// Why the practice file holds what it holds: no change, kept with `--keep`, written with the
/// rolling validation's backing, or written with `--force`.
fn decision(req: &Request, o: &Outcome<'_>, changes: bool) -> String {
    if !changes {
        "kept the current weights: no candidate beats the practice file".to_string()
    } else if req.keep {
        format!(
            "kept the current weights (--keep), not the chosen {}: the rolling validation {} tuning beating them",
            robust::show(o.chosen.hundredths),
            if o.rolling.beats { "shows" } else { "does not show" }
        )
    } else if o.rolling.beats {
        "wrote the chosen weights: the rolling validation shows tuning beating the previous ones"
            .to_string()
    } else {
        "wrote the chosen weights with --force: the rolling validation does not show tuning beating the previous ones".to_string()
    }
}
