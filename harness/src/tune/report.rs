//! The report of a tuning: settings, chosen/train-selected/current weights with their
//! figures, the top candidates and each merge's rank.

use std::fmt::Write as _;

use chrono::NaiveDate;
use ranklab_engine::policy::Weights;

use super::assemble::Inputs;
use super::grid::{hundredths, Grid};
use super::merges::Merge;
use super::robust::{show, Choice};
use super::rolling::Rolling;
use super::{ranking, Figures, Part, Problem, Score, Scored};
use crate::report::shown;
use crate::stats::{self, thousands};
use crate::suite::Retriever;

/// Everything the report shows.
pub(crate) struct Outcome<'a> {
    /// The loaded inputs.
    pub(crate) inputs: &'a Inputs,
    /// The grid searched.
    pub(crate) grid: &'a Grid,
    /// The window's last day.
    pub(crate) as_of: NaiveDate,
    /// The assembled problem.
    pub(crate) problem: &'a Problem,
    /// Every candidate, grid order.
    pub(crate) scored: &'a [Scored],
    /// How many candidates a paired assertion rejected.
    pub(crate) rejected: usize,
    /// The robust choice on the window.
    pub(crate) chosen: &'a Choice,
    /// The robust choice on the train part.
    pub(crate) train_only: &'a Choice,
    /// The rolling validation.
    pub(crate) rolling: &'a Rolling,
    /// Tie tolerance.
    pub(crate) epsilon: f64,
    /// How many candidates to list.
    pub(crate) top: usize,
}

/// The report, without its last line (what was written).
pub(crate) fn markdown(o: &Outcome<'_>) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# ranklab tune — {}\n", o.inputs.suite.name);
    settings(&mut md, o);
    weights_section(&mut md, o);
    let _ = writeln!(md, "## Why these weights\n\n{}\n", o.chosen.why);
    rolling_section(&mut md, o);
    top_candidates(&mut md, o);
    merge_ranks(&mut md, o);
    md
}

/// The report's opening paragraphs: the merges of the window and its split, the first stage
/// and the practice file, the grid and the objective.
fn settings(md: &mut String, o: &Outcome<'_>) {
    let inp = o.inputs;
    let grid = o.grid;
    let _ = writeln!(
        md,
        "Merges `{}`: {} of {} merged in the window {}..={} ({} days up to the as-of date {}{}). Train: the older {}{}; held out: the newest {}{}.\n",
        shown(&inp.merges_path),
        inp.window.merges.len(),
        inp.merges.merges.len() - inp.window.ignored,
        inp.window.from,
        inp.window.to,
        inp.window.days,
        o.as_of,
        match inp.window.ignored {
            0 => String::new(),
            1 => "; 1 merge dated after it ignored".to_string(),
            n => format!("; {n} merges dated after it ignored"),
        },
        inp.window.train().len(),
        span(inp.window.train()),
        inp.window.held_out().len(),
        span(inp.window.held_out()),
    );
    let _ = writeln!(
        md,
        "First stage: configuration `{}` of `{}` ({}, depth {}), replayed once per query; each candidate re-sorts it under the current wiring. Practice file: `{}`.\n",
        inp.config.name,
        shown(&inp.ex_path),
        match inp.config.retriever {
            Retriever::Bm25 => "bm25",
            Retriever::Dense => "dense",
            Retriever::Fusion => "fusion",
            Retriever::Learned => "learned",
            Retriever::External => "external",
        },
        inp.config.depth(),
        shown(&inp.practice_path)
    );
    let _ = writeln!(
        md,
        "Grid: unit {}, 0..={} units per weight (0.00..={}), deprecated >= superseded, editorial_only >= amendment: {} candidates, {} rejected by the {} paired assertions of {}. Objective: MRR, then recall@{}; ties within ε = {} on both are broken by the robust choice (the centre of the tied plateau's core, see below).\n",
        grid.unit_text(),
        grid.max_units,
        hundredths(u32::from(grid.unit_hundredths) * u32::from(grid.max_units)),
        thousands(o.scored.len()),
        thousands(o.rejected),
        o.problem.pairs.len(),
        if inp.paired.is_empty() { "(no paired file)".to_string() } else { inp.paired.iter().map(|p| format!("`{}`", shown(&p.file.path))).collect::<Vec<_>>().join(", ") },
        inp.suite.k,
        o.epsilon
    );
}

/// "Chosen and current weights": the table of the chosen, train-selected and current weights,
/// then the in-sample, held-out and suite-task comparisons.
fn weights_section(md: &mut String, o: &Outcome<'_>) {
    let inp = o.inputs;
    let chosen = o.chosen;
    let chosen_w = chosen.weights;
    let train_w = o.train_only.weights;
    let current_w = inp.practice.weights;
    let current_score = o.problem.score(&current_w);
    let current_ok = o.problem.paired_ok(&current_w);
    let k = inp.suite.k;
    let _ = writeln!(md, "## Chosen and current weights\n");
    let _ = writeln!(
        md,
        "| weights | superseded | deprecated | amendment | editorial_only | window MRR | window recall@{k} | train MRR | train recall@{k} | held-out MRR | held-out recall@{k} | suite MRR | suite recall@{k} | paired |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    let chosen_s = o.problem.score(&chosen_w);
    let train_s = o.problem.score(&train_w);
    let suite = |w: &Weights| o.problem.task_figures(w);
    let (chosen_t, current_t) = (suite(&chosen_w), suite(&current_w));
    weights_row(
        md,
        if chosen.kept_current {
            "chosen (kept: no candidate beats the practice file)"
        } else {
            "chosen (selected on the window: in-sample)"
        },
        &chosen_w,
        &chosen_s,
        &chosen_t,
        true,
    );
    weights_row(
        md,
        "selected on train only (held-out is out-of-sample)",
        &train_w,
        &train_s,
        &suite(&train_w),
        true,
    );
    weights_row(
        md,
        "current (practice file)",
        &current_w,
        &current_score,
        &current_t,
        current_ok,
    );
    let _ = writeln!(
        md,
        "\nIn-sample: the chosen weights reach window MRR {:.4} against {:.4} for the current weights. Held out: weights selected on the older {} merges reach MRR {:.4} on the newest {} (train MRR {:.4}); the current weights reach {:.4} there.{}\n",
        chosen_s.window.mrr(),
        current_score.window.mrr(),
        inp.window.train().len(),
        train_s.held_out.mrr(),
        inp.window.held_out().len(),
        train_s.train.mrr(),
        current_score.held_out.mrr(),
        if inp.window.held_out().is_empty() { " (Fewer than three merges in the window: nothing is held out.)" } else { "" }
    );
    let _ = writeln!(
        md,
        "Suite tasks (scored beside the merges, not tuned on): the {} tasks of `{}` reach MRR {:.4} under the chosen weights against {:.4} under the current weights{}.\n",
        o.problem.tasks.len(),
        shown(&inp.suite.path),
        chosen_t.mrr(),
        current_t.mrr(),
        if chosen_t.key() < current_t.key() {
            " — the choice helps the merges but HURTS the suite's tasks"
        } else {
            ""
        }
    );
}

/// "Top N candidates on the window": the best passing candidates, in the search's order.
fn top_candidates(md: &mut String, o: &Outcome<'_>) {
    let k = o.inputs.suite.k;
    let _ = writeln!(
        md,
        "## Top {} candidates on the window\n",
        o.top.min(o.scored.len() - o.rejected)
    );
    let _ = writeln!(md, "| # | superseded | deprecated | amendment | editorial_only | MRR | recall@{k} |\n|---:|---:|---:|---:|---:|---:|---:|");
    for (i, s) in ranking(o.scored, Part::Window)
        .iter()
        .take(o.top)
        .enumerate()
    {
        let w = o.grid.weights(s.point);
        let f = s.score.expect("passing").window;
        let _ = writeln!(
            md,
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.4} | {:.4} |",
            i + 1,
            w.superseded,
            w.deprecated,
            w.amendment,
            w.editorial_only,
            f.mrr(),
            f.recall()
        );
    }
}

/// "Rank of the expected record, per merge": under the current and the chosen weights.
fn merge_ranks(md: &mut String, o: &Outcome<'_>) {
    let inp = o.inputs;
    let _ = writeln!(md, "\n## Rank of the expected record, per merge\n");
    let _ = writeln!(md, "| merge | merged | part | expected | current weights | chosen weights |\n|---|---|---|---|---:|---:|");
    let (rc, rn) = (
        o.problem.ranks(&inp.practice.weights),
        o.problem.ranks(&o.chosen.weights),
    );
    for (i, m) in inp.window.merges.iter().enumerate() {
        let r = |x: Option<usize>| x.map_or("-".to_string(), |v| v.to_string());
        let part = if i < inp.window.train {
            "train"
        } else {
            "held out"
        };
        let _ = writeln!(
            md,
            "| {} | {} | {part} | {} | {} | {} |",
            m.id,
            m.merged,
            m.expected,
            r(rc[i]),
            r(rn[i])
        );
    }
}

fn span(m: &[Merge]) -> String {
    match (m.first(), m.last()) {
        (Some(a), Some(b)) => format!(" ({}..={})", a.merged, b.merged),
        _ => String::new(),
    }
}

fn weights_row(md: &mut String, label: &str, w: &Weights, s: &Score, t: &Figures, paired_ok: bool) {
    let held = |x: f64| {
        if s.held_out.n == 0 {
            "-".to_string()
        } else {
            format!("{x:.4}")
        }
    };
    let _ = writeln!(
        md,
        "| {label} | {:.2} | {:.2} | {:.2} | {:.2} | {:.4} | {:.4} | {:.4} | {:.4} | {} | {} | {:.4} | {:.4} | {} |",
        w.superseded,
        w.deprecated,
        w.amendment,
        w.editorial_only,
        s.window.mrr(),
        s.window.recall(),
        s.train.mrr(),
        s.train.recall(),
        held(s.held_out.mrr()),
        held(s.held_out.recall()),
        t.mrr(),
        t.recall(),
        if paired_ok { "all hold as expected" } else { "BROKEN" }
    );
}

/// One sentence: whether tuning beats keeping the current weights in the rolling validation.
pub(crate) fn verdict(r: &Rolling) -> String {
    match &r.stats {
        None => "the rolling validation has no fold (fewer than two merge days), so tuning is not shown to beat keeping the current weights".to_string(),
        Some(s) if r.beats => format!(
            "in the rolling validation tuning beats keeping the current weights: held-out MRR {:.4} against {:.4} over {} merges (Δ {}, 95% CI [{}, {}], p = {})",
            s.mean, s.baseline_mean, s.n, stats::format_signed(s.delta), stats::format_signed(s.ci.lo), stats::format_signed(s.ci.hi), stats::format_p(s.test.p)
        ),
        Some(s) => format!(
            "in the rolling validation tuning does not beat keeping the current weights: held-out MRR {:.4} against {:.4} over {} merges (Δ {}, 95% CI [{}, {}], p = {}, {} won, {} tied, {} lost)",
            s.mean, s.baseline_mean, s.n, stats::format_signed(s.delta), stats::format_signed(s.ci.lo), stats::format_signed(s.ci.hi), stats::format_p(s.test.p), s.wins, s.ties, s.losses
        ),
    }
}

fn rolling_section(md: &mut String, o: &Outcome<'_>) {
    let r = o.rolling;
    let _ = writeln!(md, "## Rolling validation\n");
    let _ = writeln!(
        md,
        "For each of the last {} pairs of consecutive merge days, the whole procedure (grid, robust choice, keep-the-current rule, finer search) tunes on the {} days ending at the first day and is scored on the merges of the next day, which it never saw. Tuned: the weights each fold chose; kept: the current weights of the practice file.\n",
        r.folds.len(),
        o.inputs.window.days
    );
    let _ = writeln!(md, "| trained on | merges | chosen | scored on | merges | tuned MRR | kept MRR |\n|---|---:|---|---|---|---:|---:|");
    for f in &r.folds {
        let mean = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let _ = writeln!(
            md,
            "| {}..={} | {} | {} | {} | {} | {:.4} | {:.4} |",
            f.from,
            f.cut,
            f.train,
            match (f.chosen, f.kept) {
                (None, _) => "none passes (kept)".to_string(),
                (Some(h), true) => format!("{} (kept)", show(h)),
                (Some(h), false) => show(h),
            },
            f.test_day,
            f.test.join(", "),
            mean(&f.tuned_rr),
            mean(&f.kept_rr)
        );
    }
    let _ = writeln!(
        md,
        "\n{}. {}\n",
        capitalize(&verdict(r)),
        if r.beats {
            "Writing the chosen weights is supported by the rolling validation."
        } else {
            "Recommendation: do not write; keep the current weights (`--write` refuses a change of weights unless `--force`)."
        }
    );
    let _ = writeln!(
        md,
        "Statistics: {}\n",
        stats::Options::default().describe("tuning", "held-out merges")
    );
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// The CSV (one row per weights: chosen, train-selected, current) and the JSON (the same, the
/// settings and the rolling folds) of the tuning report.
pub(crate) fn tables(o: &Outcome<'_>) -> (String, String) {
    let rows = [
        ("chosen", o.chosen.weights),
        ("train_selected", o.train_only.weights),
        ("current", o.inputs.practice.weights),
    ];
    let mut csv = String::from("weights,superseded,deprecated,amendment,editorial_only,window_mrr,window_recall,train_mrr,held_out_mrr,suite_mrr,paired_ok\n");
    let mut jrows = Vec::new();
    for (label, w) in rows {
        let s = o.problem.score(&w);
        let t = o.problem.task_figures(&w);
        let ok = o.problem.paired_ok(&w);
        let _ = writeln!(
            csv,
            "{label},{:.2},{:.2},{:.2},{:.2},{:.4},{:.4},{:.4},{:.4},{:.4},{ok}",
            w.superseded,
            w.deprecated,
            w.amendment,
            w.editorial_only,
            s.window.mrr(),
            s.window.recall(),
            s.train.mrr(),
            s.held_out.mrr(),
            t.mrr()
        );
        jrows.push(serde_json::json!({
            "weights": label,
            "superseded": format!("{:.2}", w.superseded),
            "deprecated": format!("{:.2}", w.deprecated),
            "amendment": format!("{:.2}", w.amendment),
            "editorial_only": format!("{:.2}", w.editorial_only),
            "window_mrr": format!("{:.4}", s.window.mrr()),
            "window_recall": format!("{:.4}", s.window.recall()),
            "train_mrr": format!("{:.4}", s.train.mrr()),
            "held_out_mrr": format!("{:.4}", s.held_out.mrr()),
            "suite_mrr": format!("{:.4}", t.mrr()),
            "paired_ok": ok,
        }));
    }
    let folds: Vec<_> = o
        .rolling
        .folds
        .iter()
        .map(|f| {
            serde_json::json!({
                "train_from": f.from.to_string(),
                "train_to": f.cut.to_string(),
                "train_merges": f.train,
                "test_day": f.test_day.to_string(),
                "test": f.test,
                "chosen": f.chosen.map(show),
                "kept": f.kept,
                "tuned_rr": f.tuned_rr.iter().map(|x| format!("{x:.4}")).collect::<Vec<_>>(),
                "kept_rr": f.kept_rr.iter().map(|x| format!("{x:.4}")).collect::<Vec<_>>(),
            })
        })
        .collect();
    let rolling = o.rolling.stats.as_ref().map(|s| {
        serde_json::json!({
            "merges": s.n,
            "tuned_mrr": format!("{:.4}", s.mean),
            "kept_mrr": format!("{:.4}", s.baseline_mean),
            "delta": format!("{:.4}", s.delta),
            "ci": [format!("{:.4}", s.ci.lo), format!("{:.4}", s.ci.hi)],
            "p": format!("{:.4}", s.test.p),
            "beats": o.rolling.beats,
        })
    });
    let mut json = serde_json::json!({
        "suite": o.inputs.suite.name,
        "as_of": o.as_of.to_string(),
        "window": { "from": o.inputs.window.from.to_string(), "to": o.inputs.window.to.to_string(), "merges": o.inputs.window.merges.len() },
        "grid_unit": o.grid.unit_text(),
        "epsilon": o.epsilon,
        "kept_current": o.chosen.kept_current,
        "why": o.chosen.why,
        "rows": jrows,
        "rolling": { "summary": rolling, "folds": folds },
    });
    if o.inputs.window.ignored > 0 {
        json["window"]["ignored_after_as_of"] = o.inputs.window.ignored.into();
    }
    (
        csv,
        serde_json::to_string_pretty(&json).expect("json") + "\n",
    )
}
