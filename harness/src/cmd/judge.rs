//! `ranklab judge tasks/<suite>`: serve a local page to judge the pooled documents
//! (`pool.yaml`), writing each judgment to `judgments.yaml` as it is given (see
//! [`crate::judge`]).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use crate::judge::{bind, judge_name, serve, Session};
use crate::report::shown;

/// Arguments of `ranklab judge`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Serves one self-contained page on 127.0.0.1 (nothing is fetched from elsewhere) that shows one \
pooled document at a time: the task's query, the document's title with its lifecycle, history \
and dates (updated_at, lifecycle log), the section that matches the query best and the other \
sections folded. Grade with the buttons or keys 0-3 (0 not relevant .. 3 perfectly relevant); \
j next, k previous. Every grade is written at once to tasks/<suite>/judgments.yaml with the \
judge, the time and the configurations that surfaced the document: under a lock, merged with \
what is on disk (two sessions on one suite keep each other's grades; a later grade of the same task \
and document replaces the earlier), atomically. The next `ranklab run` merges the judgments \
into the suite's (qrels.txt included) and the report says how many came from judging and from \
whom. Stop with Ctrl-C.

Only the served page can write: a POST whose Origin or Referer is another site's is refused \
(403), as is one without the page's per-session token (X-Ranklab-Token, 403) or not \
application/json (415); nothing is written. Each connection has its own thread, so a slow \
client holds up no other.

Example: ranklab pool tasks/docir && ranklab judge tasks/docir --judge \"Ada Lovelace\"

Exit codes: 0 stopped, or nothing to judge; 2 bad input (no pool.yaml, a broken judgments file, \
a port in use), nothing written.")]
pub(crate) struct JudgeArgs {
    /// The suite: a directory holding suite.yaml and pool.yaml (from `ranklab pool`).
    pub suite: PathBuf,
    /// Port on 127.0.0.1 (0: a free one, printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Who judges (default: `git config user.name`).
    #[arg(long, value_name = "NAME")]
    pub judge: Option<String>,
}

/// Runs the command.
pub(crate) fn run(args: JudgeArgs) -> Result<ExitCode> {
    let dir = if args.suite.is_dir() {
        args.suite.clone()
    } else {
        crate::root::dir_of(&args.suite).to_path_buf()
    };
    let judge = judge_name(args.judge, &dir)?;
    let session = Session::load(&args.suite, judge)?;
    let file = session.judgments.path.clone();
    if session.left() == 0 {
        println!(
            "Nothing to judge: every pooled document of {} has a judgment (see {}).",
            shown(&dir.join("pool.yaml")),
            shown(&file)
        );
        return Ok(ExitCode::SUCCESS);
    }
    let listener = bind(args.port)?;
    let port = listener.local_addr()?.port();
    let tasks: std::collections::BTreeSet<&str> = session
        .items
        .iter()
        .filter(|i| i.grade.is_none())
        .map(|i| i.task.as_str())
        .collect();
    println!(
        "ranklab judge: http://127.0.0.1:{port}/ — {} documents to judge in {} tasks, as {}; judgments go to {}. Ctrl-C to stop.",
        session.left(),
        tasks.len(),
        session.judge,
        shown(&file)
    );
    std::io::stdout().flush()?;
    serve(listener, session)?;
    Ok(ExitCode::SUCCESS)
}
