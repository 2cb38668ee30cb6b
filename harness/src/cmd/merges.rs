//! `ranklab merges`: maintain a suite's `merges.yaml`. `from-git` reads merges from the git
//! history of the suite's corpus folder (commits with `Query:` trailers); see
//! [`crate::tune::from_git`].

use crate::exit::Exit;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::report::shown;
use crate::suite::merges::parse_date;
use crate::suite::Suite;
use crate::tune::from_git::from_git;

/// Arguments of `ranklab merges`.
#[derive(Debug, clap::Args)]
pub(crate) struct MergesArgs {
    #[command(subcommand)]
    command: MergesCommand,
}

#[derive(Debug, clap::Subcommand)]
enum MergesCommand {
    /// Append merge entries read from the git history of the suite's corpus folder: every commit
    /// that adds or changes a record and carries `Query:` trailers.
    #[command(after_help = "\
A commit message trailer (git interpret-trailers format), one per query:

    Query: how often do we release

gives one entry per query and record the commit adds or modifies and leaves active: id = the \
commit's first 12 hex digits (-N when it gives several), merged = the committer date, expected = \
the record's id. A record the commit leaves superseded or deprecated is never expected (a pull \
request that adds a record and supersedes the old one teaches the new one). To name the expected \
record yourself, write

    Query: how often do we release -> adr-continuous-delivery

(any record id of the corpus; that query then expects only it). Only \
entries whose id is not yet in merges.yaml are appended, in commit order; the file is created \
when missing. Deleted files are skipped.

Exit codes: 0 ok; 2 bad input (not inside a git repository, a commit with a Query: trailer that \
touches a file that is not a record, an empty Query: trailer, a bad --since, a `-> id` naming no record), nothing written.")]
    FromGit {
        /// The suite: a directory holding suite.yaml (its corpus folder is read).
        suite: PathBuf,
        /// Only commits with a committer date on or after DATE (YYYY-MM-DD).
        #[arg(long, value_name = "DATE")]
        since: Option<String>,
        /// The merges file (default: merges.yaml beside the suite file).
        #[arg(long)]
        merges: Option<PathBuf>,
    },
}

/// Runs the command.
pub(crate) fn run(args: MergesArgs) -> Result<Exit> {
    match args.command {
        MergesCommand::FromGit {
            suite,
            since,
            merges,
        } => {
            let since = since
                .map(|s| {
                    parse_date(&s)
                        .with_context(|| format!("--since {s:?}: write the date as YYYY-MM-DD"))
                })
                .transpose()?;
            let suite = Suite::load(&suite)?;
            let corpus = suite.load_corpus()?;
            let path = merges.unwrap_or_else(|| suite.dir().join("merges.yaml"));
            let o = from_git(&corpus, &path, since)?;
            println!(
                "merges from-git: {} commits with Query: trailers, {} entries, {} new appended to {}",
                o.commits,
                o.entries.len(),
                o.appended.len(),
                shown(&o.path)
            );
            for e in &o.appended {
                println!("  {} {} {:?} -> {}", e.id, e.merged, e.query, e.expected);
            }
            Ok(Exit::Ok)
        }
    }
}
