//! One tuning from start to end: load and assemble the problem, score every candidate, re-check
//! the answer through the real replay, render the report and (when asked) write the practice
//! file. `ranklab tune` only parses its flags and calls [`tune`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use chrono::NaiveDate;
use ranklab_engine::policy::Practice;

use super::assemble::Inputs;
use super::grid::Grid;
use super::report::{self, Outcome};
use super::{best, heatmap, robust, rolling, search, Part};
use crate::replay::Engine;
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
    /// Write `<dir>/<suite>/tuning.{md,csv,json}` and `tuning.heatmap.svg` there.
    pub(crate) reports: Option<PathBuf>,
}

/// Runs a tuning and returns its report (Markdown, a pure function of the inputs). Timing goes
/// to stderr.
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
    let engine = Engine::build(&inputs.corpus, &all)?;
    let merge_suite = inputs.merge_suite();
    let (problem, pool_queries) = inputs.problem(&engine, &ex_merges, &ex_pairs)?;

    // Every candidate: re-sort only.
    let pb = crate::progress::bar(grid.len() as u64, "tune");
    let started = Instant::now();
    let scored = search(&problem, grid, &|n| pb.inc(n));
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
    let current_w = inputs.practice.weights;
    let eps = req.epsilon;
    let choice_on = |part: Part| {
        robust::choose(&problem, grid, &scored, part, eps, &current_w).map(|mut c| {
            let coarse = best(&scored, part).expect("a candidate passes");
            robust::refine(
                &problem,
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
            .filter(|p| !p.passes(&current_w))
            .map(|p| p.id.as_str())
            .collect();
        bail!(
            "every one of the {} candidates breaks a paired assertion; no weights on this grid satisfy them (the current weights break: {}). Check paired*.yaml or widen the grid (--max-units, --unit)",
            scored.len(),
            if breaking.is_empty() { "none".to_string() } else { breaking.join(", ") }
        );
    };
    let train_only = choice_on(Part::Train).expect("a candidate passes");

    // The answer, re-checked through the real replay.
    for (what, w) in [
        ("chosen", chosen.weights),
        ("train-selected", train_only.weights),
        ("current", current_w),
    ] {
        inputs.verify(&engine, &merge_suite, &problem, what, w)?;
    }

    let started = Instant::now();
    let rolling = rolling::rolling(
        &problem,
        grid,
        &inputs.pool,
        &pool_queries,
        req.window_days,
        req.folds,
        eps,
        &current_w,
    );
    eprintln!(
        "tune: rolling validation, {} folds in {:.3} s",
        rolling.folds.len(),
        started.elapsed().as_secs_f64()
    );

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
        epsilon: eps,
        top: req.top,
    };
    let mut md = report::markdown(&outcome);
    let map = heatmap::map(&problem, grid, chosen.hundredths);
    md.push_str(&format!(
        "## Sensitivity around the chosen weights\n\nWindow MRR with one weight moved by one or two grid steps, the others at the chosen values (`-`: off the grid or against the rules; `x`: breaks a paired assertion).\n\n{}\n## Heat map\n\n![window MRR over superseded × deprecated](tuning.heatmap.svg)\n\nWindow MRR over the two lifecycle weights on the grid, the history weights at the chosen amendment {:.2} and editorial_only {:.2}; the chosen point (orange) and the current weights (white) are marked.\n",
        heatmap::sensitivity(&problem, grid, chosen.hundredths),
        chosen.weights.amendment,
        chosen.weights.editorial_only
    ));
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
        let out = dir.join(&inputs.suite.name);
        let svg = heatmap::svg(
            &map,
            &format!(
                "ranklab tune — {}: window MRR over the lifecycle weights",
                inputs.suite.name
            ),
            &chosen.weights,
            &current_w,
        );
        let (csv, json) = report::tables(&outcome);
        // The four files of the tuning report replace their predecessors in one step.
        crate::report::atomic::write_dir(
            &out,
            [
                ("tuning.heatmap.svg", svg.as_bytes()),
                ("tuning.csv", csv.as_bytes()),
                ("tuning.json", json.as_bytes()),
                ("tuning.md", md.as_bytes()),
            ]
            .map(|(p, b)| (Path::new(p), b)),
        )?;
    }
    if req.write {
        let keep = req.keep || !changes;
        let written = if keep { current_w } else { chosen.weights };
        let verdict = report::verdict(&rolling);
        let decision = if !changes {
            "kept the current weights: no candidate beats the practice file".to_string()
        } else if req.keep {
            format!(
                "kept the current weights (--keep), not the chosen {}: the rolling validation {} tuning beating them",
                robust::show(chosen.hundredths),
                if rolling.beats { "shows" } else { "does not show" }
            )
        } else if rolling.beats {
            "wrote the chosen weights: the rolling validation shows tuning beating the previous ones".to_string()
        } else {
            "wrote the chosen weights with --force: the rolling validation does not show tuning beating the previous ones".to_string()
        };
        let window = &inputs.window;
        let as_of = req.as_of;
        let tuned = format!(
            "{as_of}, ranklab tune --window-days {} --as-of {as_of} on {}: {} merges of {}..={}, grid unit {}",
            window.days,
            shown(&inputs.merges_path),
            window.merges.len(),
            window.from,
            window.to,
            grid.unit_text()
        );
        let tuned = if keep {
            format!("{tuned}; kept the current weights")
        } else {
            tuned
        };
        let k = inputs.suite.k;
        let objective = |w: &ranklab_engine::policy::Weights| {
            let f = problem.score(w).window;
            format!("window MRR {:.4}, recall@{k} {:.4}", f.mrr(), f.recall())
        };
        let train_s = problem.score(&train_only.weights);
        let held_out = format!(
            "time split: weights selected on the older {} merges reach held-out MRR {:.4} on the newest {} (current {:.4}); rolling: {}",
            window.train().len(),
            train_s.held_out.mrr(),
            window.held_out().len(),
            problem.score(&current_w).held_out.mrr(),
            verdict
        );
        let mut history = vec![ranklab_engine::policy::Previous {
            tuned: inputs.practice.tuned.clone(),
            weights: current_w,
        }];
        history.extend(inputs.practice.history.iter().cloned());
        history.truncate(ranklab_engine::policy::HISTORY_LEN);
        let out = Practice {
            tuned,
            weights: written,
            provenance: Some(ranklab_engine::policy::Provenance {
                date: as_of.to_string(),
                window: format!("{}..={}", window.from, window.to),
                merges: window.merges.len(),
                newest_merge: window
                    .merges
                    .last()
                    .map(|m| m.id.clone())
                    .unwrap_or_default(),
                objective_before: objective(&current_w),
                objective_after: objective(&written),
                held_out,
                decision,
                ranklab: env!("CARGO_PKG_VERSION").to_string(),
            }),
            history,
            path: practice_path.clone(),
        };
        crate::report::atomic::write(practice_path, out.to_yaml().as_bytes())?;
        md.push_str(&if keep {
            format!(
                "\nKept the current weights in `{}` and recorded this tuning's provenance there.\n",
                shown(practice_path)
            )
        } else {
            format!(
                "\nWrote the chosen weights to `{}`.\n",
                shown(practice_path)
            )
        });
    } else {
        md.push_str(&format!(
            "\nNothing written: pass --write to store the chosen weights in `{}`.\n",
            shown(practice_path)
        ));
    }
    Ok(md)
}
