//! `ranklab judge tasks/<suite>`: serve a local page to judge the pooled documents
//! (`pool.yaml`), writing each judgment to `judgments.yaml` as it is given (see
//! [`crate::judge`]).

use crate::exit::Exit;
use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Result;

use crate::judge::{bind, judge_name, llm, serve, Session};
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

With --llm MODEL (a model run in-process) or --llm-endpoint URL --llm-model NAME (an \
OpenAI-compatible server), no page is served: an LLM grades every pooled document 0-3 with a \
documented prompt (UMBRELA's scale; see docs/judging.md), read from the probabilities of the \
tokens \"0\"..\"3\" (the most probable grade, and the expected grade beside it), and the grades \
go to judgments.yaml with the judge llm:<model>@<prompt hash>. A person's grade is never \
overwritten: an LLM grade of a document a person judged is kept beside it, for agreement only. \
Runs ignore LLM grades unless asked (`--judgments all`). --also-judged also grades the pairs \
people judged, so that agreement can be measured. --parse-text reads the grade from the \
answer's text when the endpoint gives no log-probabilities. Grades are cached by the judge's \
identity (model file or endpoint, prompt hash): grading the same pairs again does no model work.

Example: ranklab judge tasks/docir --llm smollm2-135m-instruct --also-judged

A BEIR collection's directory is judged the same way (with --llm or --llm-endpoint only): its \
pool (`ranklab pool DIR`, from the runs of `ranklab beir DIR`) and judgments.yaml are in its \
report folder, reports/beir/<name>/, since ranklab never writes into the collection.

Example: ranklab pool ../shared/data/scifact --depth 1 && ranklab judge ../shared/data/scifact \
--llm smollm2-135m-instruct --also-judged

Exit codes: 0 stopped, or nothing to judge; 2 bad input (no pool.yaml, a broken judgments file, \
a port in use, an LLM answer without a grade 0-3), nothing written.")]
pub(crate) struct JudgeArgs {
    /// The suite: a directory holding suite.yaml and pool.yaml (from `ranklab pool`). With
    /// --llm or --llm-endpoint, also a BEIR collection's directory: its pool and judgments are
    /// in its report folder, <REPORTS>/<name>/.
    pub suite: PathBuf,
    /// For a BEIR collection: the tree of BEIR reports holding <name>/pool.yaml (default
    /// reports/beir); judgments.yaml is written beside it.
    #[arg(long)]
    pub reports: Option<PathBuf>,
    /// For a BEIR collection: the qrels split whose judged pairs --also-judged grades.
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Port on 127.0.0.1 (0: a free one, printed).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Who judges (default: `git config user.name`).
    #[arg(long, value_name = "NAME")]
    pub judge: Option<String>,
    /// Grade with this model in-process (an id of `ranklab models list`, e.g.
    /// smollm2-135m-instruct) instead of serving the page.
    #[arg(long, value_name = "MODEL", conflicts_with_all = ["llm_endpoint", "llm_model", "judge", "port"])]
    pub llm: Option<String>,
    /// Grade through an OpenAI-compatible server at URL (e.g. http://127.0.0.1:8080/v1),
    /// serving --llm-model.
    #[arg(long, value_name = "URL", requires = "llm_model", conflicts_with_all = ["judge", "port"])]
    pub llm_endpoint: Option<String>,
    /// The model name the endpoint serves (with --llm-endpoint).
    #[arg(long, value_name = "NAME", requires = "llm_endpoint")]
    pub llm_model: Option<String>,
    /// With --llm-endpoint: `completions` (the grading prompt in ChatML, as the in-process
    /// model reads it) or `chat` (the server applies its model's chat template).
    #[arg(long, value_name = "API", value_parser = ["completions", "chat"], default_value = "completions", requires = "llm_endpoint")]
    pub llm_api: String,
    /// With --llm-endpoint: when the server gives no log-probabilities, read the grade from the
    /// answer's text (its leading digit; the expected grade is then that digit).
    #[arg(long, requires = "llm_endpoint")]
    pub parse_text: bool,
    /// With --llm-endpoint: how many of the answer token's most likely alternatives to ask
    /// for (the four digits must be among them; OpenAI's API and vLLM allow 20, llama.cpp's
    /// server more).
    #[arg(long, value_name = "N", default_value_t = crate::judge::endpoint::TOP_LOGPROBS, value_parser = clap::value_parser!(u32).range(4..), requires = "llm_endpoint")]
    pub llm_top_logprobs: u32,
    /// With --llm-endpoint: the total deadline of one attempt of a request, in milliseconds
    /// (the whole answer must have arrived by then, however slowly the server sends it).
    #[arg(long, value_name = "MS", default_value_t = crate::judge::endpoint::TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..), requires = "llm_endpoint")]
    pub llm_timeout_ms: u64,
    /// With --llm-endpoint: how many times a request that failed (connection error, timeout,
    /// 429, 5xx) is tried again, after a back-off of 0.1 s, 0.2 s, 0.4 s, ... (at most 5 s).
    #[arg(long, value_name = "N", default_value_t = crate::engine_spec::http::DEFAULT_RETRIES, requires = "llm_endpoint")]
    pub llm_retries: u32,
    /// With --llm: grade the pairs missing from the grade cache on a Ray cluster (see `ranklab
    /// beir --help`); the grades are bit-identical to a local run's.
    #[command(flatten)]
    pub cluster: super::args::ClusterArgs,
    /// With --llm or --llm-endpoint: also grade every (task, document) a person judged, kept
    /// beside the person's grade to measure agreement.
    #[arg(long)]
    pub also_judged: bool,
}

impl JudgeArgs {
    /// The LLM asked for, if any.
    fn llm_source(&self) -> Option<llm::Source> {
        match (&self.llm, &self.llm_endpoint, &self.llm_model) {
            (Some(model), _, _) => Some(llm::Source::InProcess {
                model: model.clone(),
            }),
            (None, Some(url), Some(model)) => Some(llm::Source::Endpoint {
                url: url.clone(),
                model: model.clone(),
                api: if self.llm_api == "chat" {
                    crate::suite::LlmApi::Chat
                } else {
                    crate::suite::LlmApi::Completions
                },
                parse_text: self.parse_text,
                top_logprobs: self.llm_top_logprobs,
                timeout_ms: self.llm_timeout_ms,
                retries: self.llm_retries,
            }),
            _ => None,
        }
    }
}

/// `ranklab judge --llm`: plan (suite, pool, pairs), the grader, grading, one write.
fn run_llm(args: &JudgeArgs, source: &llm::Source) -> Result<Exit> {
    let reports = args
        .reports
        .clone()
        .unwrap_or_else(crate::suite::beir::default_reports);
    let (suite, corpus) = llm::load_for_judging(&args.suite, &args.split, &reports)?;
    let work = llm::work_list(&suite, &corpus, args.also_judged)?;
    if let Some(j) = &suite.judgments {
        for c in &j.conflicts {
            eprintln!(
                "note: {}:{}: {}'s grade {} of task {:?}, document {:?} is overruled by the person's grade {} ({}); it is kept for agreement only",
                shown(&j.path),
                c.llm.line,
                c.llm.judge,
                c.llm.grade,
                c.llm.task,
                c.llm.document,
                c.human_grade,
                c.human_at
            );
        }
    }
    if work.is_empty() {
        println!(
            "Nothing to grade: the pool {} has no document the suite file does not judge (pass --also-judged to grade the judged ones).",
            shown(&suite.judging_dir().join("pool.yaml"))
        );
        return Ok(Exit::Ok);
    }
    let offload = match (args.cluster.remote()?, source) {
        (None, _) => None,
        (Some(remote), llm::Source::InProcess { model }) => {
            Some(ranklab_engine::models::remote::Offload {
                remote,
                model: model.clone(),
                args: Vec::new(),
            })
        }
        (Some(_), llm::Source::Endpoint { url, .. }) => anyhow::bail!(
            "--cluster shards an in-process model's grading; the endpoint {url} is asked from here (drop --cluster, or grade with --llm MODEL)"
        ),
    };
    let store = ranklab_engine::models::ModelStore::open_default()?;
    let mut grader = llm::grader_for(source, &store)?;
    let at = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let s = llm::grade_all(
        grader.as_mut(),
        Some(&store.scores_dir()),
        offload,
        &suite,
        &work,
        &at,
    )?;
    println!(
        "{}: {} pairs graded by {}: {} grades of unjudged documents ({} replacing an earlier LLM grade), {} kept beside a person's grade for agreement.",
        shown(&suite.judging_dir().join(crate::judgments::FILE)),
        work.len(),
        source.model(),
        s.counted,
        s.replaced,
        s.beside
    );
    Ok(Exit::Ok)
}

/// Runs the command.
pub(crate) fn run(args: JudgeArgs) -> Result<Exit> {
    if let Some(source) = args.llm_source() {
        return run_llm(&args, &source);
    }
    if args.parse_text || args.also_judged {
        anyhow::bail!(
            "--parse-text and --also-judged go with --llm or --llm-endpoint; the judging page takes neither"
        );
    }
    let dir = if args.suite.is_dir() {
        args.suite.clone()
    } else {
        crate::root::dir_of(&args.suite).to_path_buf()
    };
    if crate::suite::beir::is_collection(&args.suite) {
        anyhow::bail!(
            "{}: a BEIR collection is graded by an LLM (--llm MODEL or --llm-endpoint URL --llm-model NAME); the judging page takes a suite (a directory with suite.yaml)",
            args.suite.display()
        );
    }
    let judge = judge_name(args.judge, &dir)?;
    let session = Session::load(&args.suite, judge)?;
    let file = session.judgments.path.clone();
    if session.left() == 0 {
        println!(
            "Nothing to judge: every pooled document of {} has a judgment (see {}).",
            shown(&dir.join("pool.yaml")),
            shown(&file)
        );
        return Ok(Exit::Ok);
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
    Ok(Exit::Ok)
}
