//! The "LLM judgments" section of a suite report: present only when the suite's
//! `judgments.yaml` holds grades an LLM gave (`ranklab judge --llm`), so a report without them
//! keeps its bytes, and the tables above it never use them unless the run was asked to
//! (`--judgments all`).
//!
//! What it says:
//! - how many judgments are people's and how many an LLM's, and which of them the tables use;
//! - for each LLM judge, its agreement with people on the (task, document)s both graded
//!   ([`agreement::summarize`]: Cohen's κ unweighted and quadratic-weighted with bootstrap
//!   intervals, the 4×4 confusion matrix, precision and recall of "relevant"), in one sentence
//!   that says whether to decide on its grades; when every person's grade is one and the same
//!   (a suite that lists only relevant documents), κ cannot separate agreement from chance and
//!   the section says so, leaving the recall of "relevant" as the figure that means something;
//! - what the LLM's grades would change: for each measure of the Δ columns, each
//!   configuration's mean under people's grades and under people's + the LLM's, Kendall's τ-b
//!   between the two orders of the configurations with its bootstrap interval over tasks
//!   ([`agreement::kendall_tau_b`], [`agreement::tau_interval`]), and every verdict against the
//!   baseline (better / worse / not detectable: the Holm-adjusted randomization test at α =
//!   0.05, as the decision reads it) that the LLM's grades flip ([`agreement::flips`]).
//!
//! Deterministic: [`crate::stats::Options::default`] for every interval and test.

use std::fmt::Write as _;

use anyhow::Result;
use ranklab_engine::corpus::Corpus;

use super::stats_section::{self, Computed};
use super::MeasureSet;
use crate::judgments::Selection;
use crate::replay::Replay;
use crate::stats::agreement::{self, GradePair, Verdict, Verdicts};
use crate::stats::{format_signed, Options, ALPHA};
use crate::suite::{Experiments, Suite};

/// The section's Markdown for the experiment `ex` whose report rests on `shown` (the suite as
/// the run selected its judgments) and whose statistics are `computed`; None when
/// `judgments.yaml` holds no LLM grade.
pub fn section(
    corpus: &Corpus,
    shown: &Suite,
    selection: Selection,
    ex: &Experiments,
    replay: &Replay,
    set: &MeasureSet,
    computed: &Computed,
) -> Result<Option<String>> {
    let Some(j) = &shown.judgments else {
        return Ok(None);
    };
    if j.all_llm().next().is_none() && j.llm_grades.is_empty() {
        return Ok(None);
    }
    // Both sides of the comparison: people's grades only, and people's + the LLM's. The run's
    // own side is `shown` and `computed`; the other is loaded and computed here.
    let other = shown.reselect(match selection {
        Selection::Human => Selection::All,
        Selection::All => Selection::Human,
    });
    let other_stats = stats_section::compute(corpus, &other, ex, replay, set)?;
    let (human_suite, all_suite, by_people, with_llm) = match selection {
        Selection::Human => (shown, &other, computed, &other_stats),
        Selection::All => (&other, shown, &other_stats, computed),
    };
    let counts = all_suite.judgment_counts();
    let mut md = String::from("## LLM judgments\n\n");
    let judges: Vec<String> = {
        let mut v: Vec<String> = j.all_llm().map(|g| g.judge.clone()).collect();
        v.sort();
        v.dedup();
        v
    };
    writeln!(
        md,
        "Judgments: {} by people, {} by an LLM ({}) of documents no person judged. {}\n",
        counts.human,
        counts.llm,
        {
            // Whose grades those are: the judges of `judgments:` (a judge whose grades all sit
            // beside people's is in the agreement below only).
            let mut v: Vec<String> = j
                .judgments
                .iter()
                .chain(&j.unselected)
                .filter(|g| g.is_llm())
                .map(|g| format!("`{}`", g.judge))
                .collect();
            v.sort();
            v.dedup();
            v.join(", ")
        },
        match selection {
            Selection::Human => "The tables above use people's grades only (`--judgments human`, the default); the LLM's count only with `--judgments all`.",
            Selection::All => "The tables above use both (`--judgments all`): read them with the agreement below.",
        }
    )?;
    for judge in &judges {
        let mut by_grade = [0usize; 4];
        for g in j.all_llm().filter(|g| &g.judge == judge) {
            if let Ok(i) = usize::try_from(g.grade) {
                if let Some(c) = by_grade.get_mut(i) {
                    *c += 1;
                }
            }
        }
        let total: usize = by_grade.iter().sum();
        writeln!(
            md,
            "`{judge}` gave {total} grades: {} of grade 0, {} of 1, {} of 2, {} of 3.{}\n",
            by_grade[0],
            by_grade[1],
            by_grade[2],
            by_grade[3],
            if total > 1 && by_grade.contains(&total) {
                " It gave every pair the same grade: its grades say nothing about relevance."
            } else {
                ""
            }
        )?;
    }
    md.push_str(&agreement_part(human_suite)?);
    md.push_str(&change_part(by_people, with_llm)?);
    Ok(Some(md))
}

/// Agreement of each LLM judge with people.
fn agreement_part(human: &Suite) -> Result<String> {
    let mut md = String::from("### Agreement with people\n\n");
    let pairs = human.agreement_pairs();
    if pairs.is_empty() {
        writeln!(
            md,
            "No (task, document) was graded by both a person and an LLM: grade the judged pairs too (`ranklab judge --llm … --also-judged`) to measure agreement.\n"
        )?;
        return Ok(md);
    }
    let opts = Options::default();
    for (judge, list) in &pairs {
        let grades: Vec<GradePair> = list.iter().map(|p| p.grades).collect();
        let s = agreement::summarize(&grades, &opts);
        writeln!(md, "{}\n", s.reading(&format!("`{judge}`")))?;
        let human_grades: std::collections::BTreeSet<u8> = grades.iter().map(|g| g.human).collect();
        if human_grades.len() == 1 {
            let g = human_grades.iter().next().expect("one grade");
            writeln!(
                md,
                "Every person's grade here is {g}: the suite lists only the documents people found relevant, so κ cannot tell agreement from chance (it is 0 whatever the LLM says, or undefined). The figure that means something is the recall of \"relevant\" below: how many of the people's relevant documents the LLM also calls relevant.\n"
            )?;
        }
        writeln!(md, "| person ↓ / LLM → | 0 | 1 | 2 | 3 |")?;
        writeln!(md, "|---|---|---|---|---|")?;
        for (g, row) in s.confusion.iter().enumerate() {
            writeln!(
                md,
                "| {g} | {} | {} | {} | {} |",
                row[0], row[1], row[2], row[3]
            )?;
        }
        let b = &s.binary;
        let ratio = |x: Option<f64>| x.map_or("—".to_string(), |v| format!("{v:.2}"));
        writeln!(
            md,
            "\nRelevant (grade ≥ 1), people's grades the truth: precision {}, recall {} ({} true positives, {} false positives, {} false negatives, {} true negatives). Quadratic-weighted κ {}{}.\n",
            ratio(b.precision),
            ratio(b.recall),
            b.true_positives,
            b.false_positives,
            b.false_negatives,
            b.true_negatives,
            ratio(s.quadratic),
            s.quadratic_interval
                .map_or(String::new(), |i| format!(" [{:.2}, {:.2}]", i.lo, i.hi)),
        )?;
    }
    Ok(md)
}

/// The verdict of configuration `c` against the baseline on measure `m`.
fn verdict(c: &Computed, m: usize, config: usize) -> Option<Verdict> {
    let p = c.paired[m][config].as_ref()?;
    Some(if !p.significant(ALPHA) {
        Verdict::NotDetectable
    } else if p.delta > 0.0 {
        Verdict::Better
    } else {
        Verdict::Worse
    })
}

/// What adding the LLM's grades changes: means, τ, flipped verdicts.
fn change_part(people: &Computed, both: &Computed) -> Result<String> {
    let mut md = String::from("### What the LLM's grades would change\n\n");
    let opts = Options::default();
    let base = people.baseline_name().to_string();
    let mut changes = Vec::new();
    for &m in &people.delta_measures {
        let name = &people.measures[m];
        let means = |c: &Computed| -> Vec<f64> {
            (0..c.names.len())
                .map(|i| crate::stats::mean(&c.column(i, m)))
                .collect()
        };
        let (a, b) = (means(people), means(both));
        let cols = |c: &Computed| -> Vec<Vec<f64>> {
            (0..c.names.len()).map(|i| c.column(i, m)).collect()
        };
        let tau = agreement::kendall_tau_b(&a, &b);
        let ci = agreement::tau_interval(&cols(people), &cols(both), &opts);
        writeln!(
            md,
            "**{name}**: the order of the configurations under people's + the LLM's grades against people's alone, Kendall's τ-b {}{} (bootstrap over tasks).\n",
            tau.map_or("— (undefined: every configuration ties on one side)".to_string(), |t| format!("{t:.3}")),
            ci.map_or(String::new(), |i| format!(" [{:.3}, {:.3}]", i.lo, i.hi)),
        )?;
        writeln!(
            md,
            "| configuration | {name} (people) | {name} (people + LLM) | Δ vs {base} (people) | Δ vs {base} (people + LLM) | verdict (people) | verdict (people + LLM) |"
        )?;
        writeln!(md, "|---|---|---|---|---|---|---|")?;
        let (mut before, mut after) = (Verdicts::new(), Verdicts::new());
        for (i, cfg) in people.names.iter().enumerate() {
            let delta = |c: &Computed| {
                c.paired[m][i]
                    .as_ref()
                    .map_or("—".to_string(), |p| format_signed(p.delta))
            };
            let word = |v: Option<Verdict>| v.map_or("—", Verdict::word);
            let (vb, va) = (verdict(people, m, i), verdict(both, m, i));
            writeln!(
                md,
                "| {} | {:.4} | {:.4} | {} | {} | {} | {} |",
                crate::report::table::md_cell(cfg),
                a[i],
                b[i],
                delta(people),
                delta(both),
                word(vb),
                word(va)
            )?;
            if let (Some(vb), Some(va)) = (vb, va) {
                before.insert((cfg.clone(), base.clone()), vb);
                after.insert((cfg.clone(), base.clone()), va);
            }
        }
        md.push('\n');
        for f in agreement::flips(&before, &after) {
            let i = people.names.iter().position(|n| *n == f.a).expect("named");
            let d = |c: &Computed| c.paired[m][i].as_ref().map_or(0.0, |p| p.delta);
            changes.push(format!(
                "{} vs {} on {name} changes from {} ({}) to {} ({})",
                f.a,
                f.b,
                format_signed(d(people)),
                f.before.word(),
                format_signed(d(both)),
                f.after.word()
            ));
        }
    }
    if changes.is_empty() {
        writeln!(
            md,
            "No verdict against {base} flips when the LLM's grades are added.\n"
        )?;
    } else {
        writeln!(
            md,
            "Verdicts that flip when the LLM's grades are added: {}.\n",
            changes.join("; ")
        )?;
    }
    Ok(md)
}
