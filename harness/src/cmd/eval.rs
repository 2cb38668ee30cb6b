//! `ranklab eval`: evaluate a TREC run against qrels, a drop-in for trec_eval 10.0 (same
//! measure names and parameter syntax, same flags, same output lines, same numbers).
//!
//! The arguments are resolved into a checked plan (measures, level, files) before any file is
//! read; nothing is printed until the whole run has been read and evaluated, so an error leaves
//! no partial output (exit 2).

use crate::exit::Exit;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};

use crate::metrics::{Measure, Selection};
use crate::trec::{evaluate_run, EvalOptions, Evaluation, Qrels};

/// Evaluate a TREC run against qrels, like trec_eval 10.0 (same measures, flags and lines).
///
/// Prints `measure<TAB>query<TAB>value` lines exactly as trec_eval does: with `-q` every query
/// of the qrels first (in query-id order), then the `all` lines. Without `-m`, trec_eval's
/// default (`official`) set: runid, num_q, num_ret, num_rel, num_rel_ret, map, gm_map, Rprec,
/// bpref, recip_rank, iprec_at_recall_0.00 ... 1.00, P_5 ... P_1000.
#[derive(Debug, clap::Args)]
#[command(
    args_override_self = true,
    after_help = "Examples:\n  \
    ranklab eval qrels.txt run.trec\n  \
    ranklab eval -q -m map -m recip_rank -m P.5,10 -m ndcg_cut.10 -m recall.100 qrels.txt run.trec\n  \
    ranklab eval -c -l2 -M1000 -m all_trec qrels.txt run.trec\n  \
    ranklab eval -m nDCG@10 -m P@5 -m R@100 -m RR -m Judged@10 qrels.txt run.trec\n\n\
    Measures (trec_eval 10.0's): num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank \
    iprec_at_recall P relstring recall infAP gm_bpref Rprec_mult utility 11pt_avg binG G ndcg \
    ndcg_rel Rndcg ndcg_cut map_cut relative_P success set_P set_relative_P set_recall set_map \
    set_F num_nonrel_judged_ret rbp rbp_resid unj; nicknames official (the default), all_trec, set.\n\
    Parameters as trec_eval: P.5,10  iprec_at_recall.0.5  ndcg.1=3,2=9  rbp.p=0.8  utility.1,-1,0,0  \
    set_F.0.5  relstring.20. A measure named twice keeps its first parameters, as trec_eval.\n\
    ir_measures names map onto these (nDCG@10 -> ndcg_cut_10, P@5, R@100 -> recall_100, RR -> \
    recip_rank, AP -> map, Success@1); ranklab's own, never in a nickname: RR@k (recip_rank_cut), \
    Judged@k, ERR@k, nDCG(dcg=exp-log2)@k, RBP(p=0.8) (binary gain; trec_eval's rbp uses p 0.9).\n\
    Refused, by name: -R other than qrels (prefs, qrels_prefs, qrels_jg), -T other than \
    trec_results, -Z z-scores, -D above 0, the prefs/qrels_jg measures.\n\
    A run file of 4 MiB or more is read on every core in 1 MiB chunks, with the same output as \
    on one (RAYON_NUM_THREADS=1 reads it on one; RANKLAB_EVAL_CHUNK=BYTES forces the parallel \
    reader with chunks of that many bytes, at least 16, on any regular file).\n\
    Exit codes: 0 ok, 2 error (bad input, a qrels query missing from the run without -c)."
)]
pub(crate) struct EvalArgs {
    /// Also print every query's values before the summary (trec_eval -q).
    #[arg(short = 'q', long = "per-query", visible_alias = "query_eval_wanted")]
    pub per_query: bool,

    /// Average over every query of the qrels: a query missing from the run counts 0 in every
    /// average (trec_eval -c). Without it, a missing query is an error (trec_eval 10.0 would give
    /// it the values of the query it evaluated before).
    #[arg(
        short = 'c',
        long = "complete",
        visible_alias = "complete_rel_info_wanted"
    )]
    pub complete: bool,

    /// Minimum judgment for a document to be relevant (trec_eval -l). nDCG gains are the raw
    /// judgments whatever the level.
    #[arg(short = 'l', long = "level", visible_alias = "level_for_rel", value_name = "N",
          default_value_t = 1, value_parser = clap::value_parser!(i32).range(0..))]
    pub rel_level: i32,

    /// A measure, trec_eval syntax (`map`, `P.5,10`, `ndcg_cut.10`, `all_trec`) or an
    /// ir_measures name (`nDCG@10`). Repeatable.
    #[arg(short = 'm', long = "measure", value_name = "MEASURE[.PARAMS]")]
    pub measures: Vec<String>,

    /// Print no summary (`all`) lines (trec_eval -n).
    #[arg(short = 'n', long = "nosummary")]
    pub no_summary: bool,

    /// Evaluate only the first N documents of each query, in trec_eval's order (trec_eval -M).
    #[arg(short = 'M', long = "Max_retrieved_per_topic", visible_alias = "max-docs",
          value_name = "N", value_parser = positive_docs, allow_negative_numbers = true)]
    pub max_docs: Option<u64>,

    /// Number of documents in the collection; only utility's d coefficient reads it
    /// (trec_eval -N).
    #[arg(short = 'N', long = "Number_docs_in_coll", value_name = "N", default_value_t = 0,
          value_parser = docs_in_collection, allow_negative_numbers = true)]
    pub num_docs: i64,

    /// Remove unjudged documents from every ranking before evaluating (trec_eval -J; as
    /// trec_eval warns, numbers computed this way are easy to misread).
    #[arg(short = 'J', long = "Judged_docs_only")]
    pub judged_only: bool,

    /// trec_eval's debug level; only 0 (no debug output) is supported.
    #[arg(
        short = 'D',
        long = "Debug_level",
        value_name = "N",
        default_value = "0"
    )]
    pub debug: String,

    /// Format of the qrels file; only trec_eval's `qrels` is read.
    #[arg(
        short = 'R',
        long = "Rel_info_format",
        value_name = "FORMAT",
        default_value = "qrels"
    )]
    pub rel_format: String,

    /// Format of the run file; only trec_eval's `trec_results` is read.
    #[arg(
        short = 'T',
        long = "Results_format",
        value_name = "FORMAT",
        default_value = "trec_results"
    )]
    pub results_format: String,

    /// trec_eval's z-score mode (-Z FILE): refused, see --help.
    #[arg(short = 'Z', long = "Zscore", value_name = "ZMEAN_FILE")]
    pub zscore: Option<PathBuf>,

    /// Obsolete in trec_eval 10.0 (old output format); accepted and ignored, as trec_eval does.
    #[arg(short = 'o', long = "Output_old_results_format", hide = true)]
    pub old_format: bool,

    /// Print the version and the trec_eval version this follows, then exit (trec_eval -v).
    #[arg(short = 'v', long = "trec-version")]
    pub version: bool,

    /// Qrels file: `qid iter docno rel` per line.
    #[arg(required_unless_present = "version")]
    pub qrels: Option<PathBuf>,

    /// Run file: `qid Q0 docno rank score tag` per line.
    #[arg(required_unless_present = "version")]
    pub run: Option<PathBuf>,
}

/// `-M`: a positive number of documents (any up to 2^64 − 1).
fn positive_docs(s: &str) -> Result<u64, String> {
    let t = s.trim();
    match t.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(format!(
            "-M {s} is too large: at most 18446744073709551615 documents per topic"
        )),
        _ => Err(format!(
            "-M wants a positive number of documents per topic (e.g. -M 1000), not `{s}`"
        )),
    }
}

/// `-N`: the number of documents in the collection, 0 or more.
fn docs_in_collection(s: &str) -> Result<i64, String> {
    let t = s.trim();
    match t.parse::<i64>() {
        Ok(n) if n >= 0 => Ok(n),
        Ok(_) => Err(format!(
            "-N wants the number of documents in the collection (0 or more, e.g. -N 8841823), not the negative `{s}`"
        )),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(format!(
            "-N {s} is too large: at most 9223372036854775807 documents"
        )),
        Err(_) => Err(format!(
            "-N wants the number of documents in the collection (0 or more, e.g. -N 8841823), not `{s}`"
        )),
    }
}

/// The checked plan of one `ranklab eval`.
struct Plan {
    selection: Selection,
    opts: EvalOptions,
    per_query: bool,
    summary: bool,
    qrels: PathBuf,
    run: PathBuf,
}

impl Plan {
    fn new(args: EvalArgs) -> anyhow::Result<Plan> {
        if args.rel_format != "qrels" {
            bail!(
                "-R {}: ranklab reads only trec_eval's `qrels` format (prefs, qrels_prefs and \
                 qrels_jg are not supported); drop -R",
                args.rel_format
            );
        }
        if args.results_format != "trec_results" {
            bail!(
                "-T {}: ranklab reads only trec_eval's `trec_results` format; drop -T",
                args.results_format
            );
        }
        if let Some(z) = &args.zscore {
            bail!(
                "-Z {}: z-scores against a mean/stddev file are not supported; evaluate with -q \
                 and standardize the per-query values yourself",
                z.display()
            );
        }
        let level = args.debug.split('.').next().unwrap_or("");
        if level.parse::<i64>().ok() != Some(0) {
            bail!(
                "-D {}: trec_eval's debug output is not supported; only -D 0 is accepted",
                args.debug
            );
        }
        let selection = Selection::from_specs(&args.measures).context("invalid -m")?;
        let mut params = selection.params.clone();
        params.num_docs_in_coll = args.num_docs;
        let opts = EvalOptions {
            rel_level: args.rel_level,
            complete: args.complete,
            max_docs: args.max_docs.map(|m| m as usize),
            judged_only: args.judged_only,
            all_judged: selection.reads_nonrelevant(),
            params,
        };
        Ok(Plan {
            selection,
            opts,
            per_query: args.per_query,
            summary: !args.no_summary,
            qrels: args.qrels.expect("clap requires it"),
            run: args.run.expect("clap requires it"),
        })
    }
}

/// Runs the command.
pub(crate) fn run(args: EvalArgs) -> anyhow::Result<Exit> {
    if args.version {
        eprintln!(
            "ranklab eval {} (follows trec_eval version 10.0)",
            env!("CARGO_PKG_VERSION")
        );
        return Ok(Exit::Ok);
    }
    let plan = Plan::new(args)?;
    let qrels = Qrels::read(&plan.qrels)?;
    let evaluation = evaluate_run(&qrels, &plan.run, &plan.selection.measures, &plan.opts)?;
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
    write_lines(
        &mut out,
        &evaluation,
        &plan.selection,
        plan.per_query,
        plan.summary,
    )
    .and_then(|()| out.flush())
    .context("cannot write to stdout")?;
    Ok(Exit::Ok)
}

/// Writes trec_eval's lines: `%-22s\t%s\t%6.4f` (counts as integers, relstring quoted),
/// per query first when `per_query`, then (unless `-n`) `runid`, `num_q` and the measures for
/// `all`.
fn write_lines(
    out: &mut impl Write,
    ev: &Evaluation,
    selection: &Selection,
    per_query: bool,
    summary: bool,
) -> io::Result<()> {
    let names: Vec<String> = ev.measures.iter().map(|m| selection.name(m)).collect();
    if per_query {
        for q in &ev.per_query {
            for ((m, name), v) in ev.measures.iter().zip(&names).zip(&q.values) {
                if *m == Measure::Relstring {
                    let s = q.relstring.as_deref().unwrap_or("");
                    writeln!(out, "{name:<22}\t{}\t'{s}'", q.qid)?;
                } else if m.per_query() {
                    write_line(out, m, name, &q.qid, *v)?;
                }
            }
        }
    }
    if !summary {
        return Ok(());
    }
    if selection.runid {
        writeln!(out, "{:<22}\tall\t{}", "runid", ev.runid)?;
    }
    if selection.num_q {
        writeln!(out, "{:<22}\tall\t{}", "num_q", ev.num_q)?;
    }
    for ((m, name), v) in ev.measures.iter().zip(&names).zip(&ev.summary) {
        if m.in_summary() {
            write_line(out, m, name, "all", *v)?;
        }
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
