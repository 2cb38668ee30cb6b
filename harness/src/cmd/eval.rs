//! `ranklab eval`: evaluate a TREC run against qrels, as a drop-in for the part of trec_eval
//! 10.0 that ranklab implements (same measure names and parameter syntax, same output lines,
//! same numbers).
//!
//! The arguments are resolved into a checked plan (measures, level, files) before any file is
//! read; nothing is printed until the whole run has been read and evaluated, so an error leaves
//! no partial output (exit 2).

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use crate::metrics::{Measure, Selection};
use crate::trec::{evaluate_run, EvalOptions, Evaluation, Qrels};

/// Evaluate a TREC run against qrels, like trec_eval (same measures, same output lines).
///
/// Prints `measure<TAB>query<TAB>value` lines exactly as trec_eval does: with `-q` every query
/// of the qrels first (in query-id order), then the `all` lines. Without `-m`, trec_eval's
/// default (`official`) set: runid, num_q, num_ret, num_rel, num_rel_ret, map, Rprec,
/// recip_rank, P_5 ... P_1000.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    ranklab eval qrels.txt run.trec\n  \
    ranklab eval -q -m map -m recip_rank -m P.5,10 -m ndcg_cut.10 -m recall.100 qrels.txt run.trec\n  \
    ranklab eval -c -l2 -m all_trec qrels.txt run.trec\n\n\
    Measures: num_ret num_rel num_rel_ret map Rprec recip_rank P recall ndcg ndcg_cut success \
    (trec_eval's), recip_rank_cut (RR@k, ranklab's own); nicknames official, all_trec.\n\
    Exit codes: 0 ok, 2 error (bad input, a qrels query missing from the run without -c).")]
pub(crate) struct EvalArgs {
    /// Also print every query's values before the summary (trec_eval -q).
    #[arg(short = 'q', long = "per-query")]
    pub per_query: bool,

    /// Average over every query of the qrels: a query missing from the run counts 0 in every
    /// average (trec_eval -c). Without it, a missing query is an error.
    #[arg(short = 'c', long = "complete")]
    pub complete: bool,

    /// Minimum judgment for a document to be relevant (trec_eval -l). nDCG gains are the raw
    /// judgments whatever the level.
    #[arg(short = 'l', long = "level", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(i32).range(0..))]
    pub rel_level: i32,

    /// A measure, trec_eval syntax: `map`, `recip_rank`, `P.5,10`, `ndcg_cut.10`, `recall.100`,
    /// `success.1,5`, bare `P` for the default cutoffs, `all_trec`. Repeatable.
    #[arg(short = 'm', long = "measure", value_name = "MEASURE[.PARAMS]")]
    pub measures: Vec<String>,

    /// Qrels file: `qid iter docno rel` per line.
    pub qrels: PathBuf,

    /// Run file: `qid Q0 docno rank score tag` per line.
    pub run: PathBuf,
}

/// Runs the command.
pub(crate) fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let selection = Selection::from_specs(&args.measures).context("invalid -m")?;
    let opts = EvalOptions {
        rel_level: args.rel_level,
        complete: args.complete,
    };
    let qrels = Qrels::read(&args.qrels)?;
    let evaluation = evaluate_run(&qrels, &args.run, &selection.measures, &opts)?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    write_report(&mut out, &evaluation, &selection, args.per_query)
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
    Ok(ExitCode::SUCCESS)
}

/// Writes trec_eval's lines: `%-22s\t%s\t%6.4f` (counts as integers), per query first when
/// `per_query`, then `runid`, `num_q` and the measures for `all`.
pub(crate) fn write_report(
    out: &mut impl Write,
    ev: &Evaluation,
    selection: &Selection,
    per_query: bool,
) -> io::Result<()> {
    let names: Vec<String> = ev.measures.iter().map(Measure::name).collect();
    if per_query {
        for q in &ev.per_query {
            for ((m, name), v) in ev.measures.iter().zip(&names).zip(&q.values) {
                write_line(out, m, name, &q.qid, *v)?;
            }
        }
    }
    if selection.runid {
        writeln!(out, "{:<22}\tall\t{}", "runid", ev.runid)?;
    }
    if selection.num_q {
        writeln!(out, "{:<22}\tall\t{}", "num_q", ev.num_q)?;
    }
    for ((m, name), v) in ev.measures.iter().zip(&names).zip(&ev.summary) {
        write_line(out, m, name, "all", *v)?;
    }
    Ok(())
}

fn write_line(out: &mut impl Write, m: &Measure, name: &str, qid: &str, v: f64) -> io::Result<()> {
    if m.is_count() {
        writeln!(out, "{name:<22}\t{qid}\t{}", v as i64)
    } else {
        writeln!(out, "{name:<22}\t{qid}\t{v:6.4}")
    }
}
