//! `ranklab compare`: the flags of a comparison of TREC runs; the work is in
//! [`crate::compare`].

use crate::exit::Exit;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

use super::args::FormatArg;
use crate::compare::{compare, Format, Plan, DEFAULT_JUDGED_K};
use crate::stats;

/// Compare TREC runs against the first one, with paired statistics.
///
/// For each measure: every run's mean over the judged queries; for every run after the first,
/// Δ against the first (the baseline) with its paired bootstrap 95% confidence interval, the
/// p-value of a two-sided paired randomization (sign-flip) test — exact when at most 20 queries
/// differ, otherwise 100,000 seeded random sign assignments — raw and Holm-adjusted across the
/// runs, and win/tie/loss counts. Then one line saying which runs differ significantly at 0.05,
/// and, per run, Judged@k and the unjudged documents of its top k, with a warning when a run's
/// Judged@k is more than 0.02 below the baseline's (its loss may be documents nobody judged).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    ranklab compare --qrels qrels.txt runs/bm25.trec runs/dense.trec\n  \
    ranklab compare --qrels qrels.txt base.trec a.trec b.trec -m recip_rank -m recall.5 --per-query\n  \
    ranklab compare -c --format json --qrels qrels.txt base.trec new.trec\n  \
    ranklab compare --all-pairs --qrels qrels.txt a.trec b.trec c.trec\n  \
    ranklab compare --qrels reports/brain/qrels.txt --html wiring.html --corpus corpora/brain --queries tasks/brain reports/brain/runs/legacy.trec reports/brain/runs/current.trec\n\n\
    Measures (trec_eval syntax): num_ret num_rel num_rel_ret map Rprec recip_rank P recall ndcg ndcg_cut \
    success, recip_rank_cut (RR@k, ranklab's own); default: map recip_rank P.10 recall.100 ndcg_cut.10.\n\
    Exit codes: 0 ok, 2 error (fewer than two runs, unknown measure, runs over different queries without -c, bad file).")]
pub(crate) struct CompareArgs {
    /// Qrels file: `qid iter docno rel` per line.
    #[arg(long, value_name = "QRELS")]
    pub qrels: PathBuf,

    /// Run files (`qid Q0 docno rank score tag`), at least two; the first is the baseline.
    #[arg(value_name = "RUN")]
    pub runs: Vec<PathBuf>,

    /// A measure, trec_eval syntax: `map`, `recip_rank`, `P.5,10`, `ndcg_cut.10`, `recall.100`...
    /// Repeatable.
    #[arg(short = 'm', long = "measure", value_name = "MEASURE[.PARAMS]")]
    pub measures: Vec<String>,

    /// Also print every query's values and differences.
    #[arg(short = 'q', long = "per-query")]
    pub per_query: bool,

    /// Output format.
    #[arg(long, value_enum, default_value_t = FormatArg(Format::Md))]
    pub format: FormatArg,

    /// Pair on every query of the qrels: a query missing from a run counts 0 in every measure
    /// (trec_eval -c). Without it, every run must have every judged query.
    #[arg(short = 'c', long = "complete")]
    pub complete: bool,

    /// Minimum judgment for a document to be relevant (trec_eval -l).
    #[arg(short = 'l', long = "level", value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(i32).range(0..))]
    pub rel_level: i32,

    /// Seed of the permutation test and the bootstrap (reported in the output).
    #[arg(long, default_value_t = stats::DEFAULT_SEED)]
    pub seed: u64,

    /// Compare every pair of runs (not only each with the first): Δ = b − a per pair and
    /// measure, with CI, p and W/T/L, Holm-adjusted over all the comparisons (every pair under
    /// every measure). Markdown, CSV or JSON.
    #[arg(long)]
    pub all_pairs: bool,

    /// Cutoff k of Judged@k and of the unjudged count per run: documents of each query's top k
    /// with / without a judgment (any grade) in the qrels. Markdown and JSON only.
    #[arg(long = "judged-at", value_name = "K", default_value_t = DEFAULT_JUDGED_K as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub judged_k: u32,

    /// Also write the ranking explorer page of the runs to OUT: each query's lists side by side
    /// (any two runs, chosen on the page), with rank, score, judgment mark, movement, and with
    /// --corpus each document's title, lifecycle, date and a snippet. One self-contained file.
    #[arg(long, value_name = "OUT")]
    pub html: Option<PathBuf>,

    /// The corpus of the runs' documents, for --html: a suite's corpus folder (Markdown records)
    /// or a BEIR corpus.jsonl (whose queries.jsonl beside it gives the query texts).
    #[arg(long, value_name = "DIR|corpus.jsonl", requires = "html")]
    pub corpus: Option<PathBuf>,

    /// The query texts, for --html: a BEIR queries.jsonl or a suite file (its tasks' queries).
    #[arg(long, value_name = "FILE", requires = "html")]
    pub queries: Option<PathBuf>,
}

/// Runs the command.
pub(crate) fn run(args: CompareArgs) -> Result<Exit> {
    let plan = Plan::new(
        &args.runs,
        &args.measures,
        args.rel_level,
        args.complete,
        args.seed,
        args.judged_k as usize,
    )?;
    // With --html the qrels and the runs are read twice (the verdict, then the page): what the
    // filesystem says of each before the first read and after the second must agree, or the
    // page could show other rankings than the verdict judged.
    let inputs: Vec<PathBuf> = match &args.html {
        Some(_) => std::iter::once(args.qrels.clone())
            .chain(args.runs.iter().cloned())
            .collect(),
        None => Vec::new(),
    };
    let before = stamps(&inputs);
    let comparison = compare(plan, &args.qrels)?;
    let text = if args.all_pairs {
        crate::compare::all_pairs::render(&comparison, args.format.0)?
    } else {
        comparison.render(args.format.0, args.per_query)?
    };
    let page = match &args.html {
        Some(_) => Some(crate::report::explorer::compare::page(
            &comparison,
            args.corpus.as_deref(),
            args.queries.as_deref(),
        )?),
        None => None,
    };
    if let Some(changed) = changed_input(&inputs, &before, &stamps(&inputs)) {
        anyhow::bail!(
            "{} changed while ranklab compare read it (once for the verdict, once for the page), \
             so the two could disagree: nothing written; run again once it is complete",
            changed.display()
        );
    }
    if let (Some(out), Some(page)) = (&args.html, &page) {
        crate::report::explorer::compare::write(out, page)?;
    }
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
    Ok(Exit::Ok)
}

/// What the filesystem says of a file that changes when its contents do: device, inode, size,
/// modification and status-change times (nanoseconds). A file replaced by a rename (as atomic
/// writers do) or whose size changes is always caught; a rewrite in place to the same size is
/// caught unless the file had also been written within the same tick of the kernel's file clock
/// (a few milliseconds) just before the first read. `None` when it cannot be read (the read
/// itself then says why).
type Stamp = Option<(u64, u64, u64, i64, i64, i64, i64)>;

fn stamps(paths: &[PathBuf]) -> Vec<Stamp> {
    use std::os::unix::fs::MetadataExt;
    paths
        .iter()
        .map(|p| {
            let m = std::fs::metadata(p).ok()?;
            Some((
                m.dev(),
                m.ino(),
                m.size(),
                m.mtime(),
                m.mtime_nsec(),
                m.ctime(),
                m.ctime_nsec(),
            ))
        })
        .collect()
}

/// The first of `paths` whose stamp differs between `before` and `after`.
fn changed_input<'p>(
    paths: &'p [PathBuf],
    before: &[Stamp],
    after: &[Stamp],
) -> Option<&'p PathBuf> {
    paths
        .iter()
        .zip(before.iter().zip(after))
        .find(|(_, (b, a))| b != a)
        .map(|(p, _)| p)
}

#[cfg(test)]
mod tests {
    use super::{changed_input, stamps};

    /// A file rewritten between two stamps is named (a rename over it, as an atomic writer
    /// does, and a write in place), one left alone is not: what `compare --html` checks.
    #[test]
    fn a_rewritten_input_is_named_and_an_untouched_one_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.trec"), dir.path().join("b.trec"));
        std::fs::write(&a, "q1 Q0 d1 1 1.0 r\n").unwrap();
        std::fs::write(&b, "q1 Q0 d1 1 1.0 r\n").unwrap();
        let paths = vec![a.clone(), b.clone()];
        let before = stamps(&paths);
        assert_eq!(changed_input(&paths, &before, &stamps(&paths)), None);

        // replaced by a rename, same contents
        let tmp = dir.path().join("b.tmp");
        std::fs::write(&tmp, "q1 Q0 d1 1 1.0 r\n").unwrap();
        std::fs::rename(&tmp, &b).unwrap();
        assert_eq!(changed_input(&paths, &before, &stamps(&paths)), Some(&b));

        // written in place (a longer file: the times alone may not move within the clock's
        // tick, see `Stamp`)
        let before = stamps(&paths);
        std::fs::write(&a, "q1 Q0 d1 1 1.0 r\nq1 Q0 d2 2 0.5 r\n").unwrap();
        assert_eq!(changed_input(&paths, &before, &stamps(&paths)), Some(&a));
    }
}
