//! `ranklab tune`: tune the four penalty weights of the practice file against recent merges.
//!
//! It reads the merges of `merges.yaml` dated in `[as_of - window_days, as_of]`, replays the
//! first stage of the shipped configuration (the one with `wiring: current`) once per merge
//! query and once per paired assertion, and then scores every point of the integer grid by
//! re-sorting those lists (see [`crate::tune`]). Candidates are ordered by MRR, then recall@k,
//! then the smaller weights; a candidate that breaks a paired assertion is rejected.
//!
//! Overfitting is made visible: beside the chosen weights (selected on the whole window, all
//! figures in-sample) it reports the weights selected on the older two thirds only, scored on
//! the newest third they never saw (held out), and the current weights of the practice file.
//! The chosen, train-selected and current weights are re-checked through the real replay and
//! `Paired::check`; a disagreement with the fast path is an internal error.
//!
//! Without `--write` nothing is written. With it, the practice file is replaced atomically with
//! the chosen weights and a `tuned:` line naming the as-of date, the window and the merges.
//! Output on stdout is a pure function of the inputs (as-of included): a second run prints the
//! same bytes. Timing goes to stderr.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use ranklab_engine::corpus::Corpus;
use ranklab_engine::policy::{Practice, Weights};

use crate::paired::Paired;
use crate::replay::{as_hits, replay_with, Engine, ReplayOptions};
use crate::report::{first_relevant_rank, shown};
use crate::suite::{Configuration, Experiments, Retriever, Suite, Task, Wiring};
use crate::tune::grid::{hundredths, Grid};
use crate::tune::merges::{parse_date, Merges, Window};
use crate::tune::scorer::{Candidates, MergeQuery, PairQuery};
use crate::tune::{best, ranking, search, Part, Problem, Score};

/// Arguments of `ranklab tune`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Reads merges.yaml (id, merged date, query, expected record), keeps the merges of the window, \
replays the first stage once per merge query and paired assertion, then scores every weight \
vector of the grid by re-sorting: MRR, then recall@k, then the smaller weights. Candidates that \
break a paired assertion are rejected. Prints the chosen weights (selected on the window), the \
weights selected on the older two thirds with their held-out figures on the newest third, the \
current weights, the top candidates and each merge's rank.

Example: ranklab tune --suite tasks/brain --window-days 90 --as-of 2026-11-30 --write

Exit codes: 0 ok; 2 bad input (a merge after --as-of, a bad date, an unknown record, an empty \
window), nothing written.")]
pub struct TuneArgs {
    /// The suite: a directory holding suite.yaml, experiments*.yaml, merges.yaml, paired*.yaml
    /// and the practice file.
    #[arg(long, default_value = "tasks/brain")]
    pub suite: PathBuf,
    /// The merges file (default: merges.yaml beside the suite file).
    #[arg(long)]
    pub merges: Option<PathBuf>,
    /// The configuration whose first stage is tuned (default: the one with `wiring: current`).
    #[arg(long)]
    pub configuration: Option<String>,
    /// Tune on the merges of the last N days up to --as-of (inclusive).
    #[arg(long, default_value_t = 90)]
    pub window_days: u32,
    /// The last day of the window, YYYY-MM-DD (default: today). Fix it for reproducible output.
    #[arg(long, value_name = "DATE")]
    pub as_of: Option<String>,
    /// Grid step of every weight, a multiple of 0.01.
    #[arg(long, default_value = "0.05")]
    pub unit: String,
    /// Largest number of steps of one weight (0.05 x 20 = 1.00).
    #[arg(long, default_value_t = 20)]
    pub max_units: u16,
    /// How many of the best candidates to print.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Write the chosen weights to the practice file (atomically). Without it nothing changes.
    #[arg(long)]
    pub write: bool,
}

/// Runs the command.
pub fn run(args: TuneArgs) -> Result<ExitCode> {
    let grid = Grid::new(&args.unit, args.max_units)?;
    if args.window_days == 0 {
        bail!("--window-days must be at least 1");
    }
    let as_of = match &args.as_of {
        Some(s) => {
            parse_date(s).with_context(|| format!("--as-of {s:?}: write the date as YYYY-MM-DD"))?
        }
        None => chrono::Local::now().date_naive(),
    };
    let suite = Suite::load(&args.suite)?;
    let (config, ex_path, practice_path) =
        shipped_configuration(&suite, args.configuration.as_deref())?;
    let practice = Practice::load(&practice_path).with_context(|| {
        format!(
            "reading the practice file of configuration {:?}",
            config.name
        )
    })?;
    let corpus = suite.load_corpus()?;
    let merges_path = args
        .merges
        .clone()
        .unwrap_or_else(|| suite.dir().join("merges.yaml"));
    let merges = Merges::load(&merges_path, &corpus)?;
    let window = merges.window(as_of, args.window_days)?;

    // Paired assertions beside the suite, on the same corpus.
    let mut paired = Vec::new();
    for p in suite.files_named("paired")? {
        let (pf, pc) = Paired::load(&p)?;
        if pc.content_hash() != corpus.content_hash() {
            bail!(
                "{}: its suite's corpus ({}) is not the corpus of {}",
                p.display(),
                pf.suite.corpus_path.display(),
                suite.path.display()
            );
        }
        paired.push(pf);
    }

    // First stage once per query: the configurations without their wiring.
    let pre_policy = |c: &Configuration| Configuration {
        name: "first-stage".into(),
        wiring: Wiring::None,
        ..c.clone()
    };
    let ex_merges = single(pre_policy(&config), &ex_path);
    let ex_pairs: Vec<Experiments> = paired
        .iter()
        .map(|p| single(pre_policy(&p.experiments.configurations[0]), &p.file.path))
        .collect();
    let mut all: Vec<&Experiments> = vec![&ex_merges];
    all.extend(ex_pairs.iter());
    let engine = Engine::build(&corpus, &all)?;
    let merge_suite = merge_suite(&suite, &window, &merges_path);
    let lists = replay_with(&engine, &merge_suite, &ex_merges, &ReplayOptions::default())?;
    let merge_queries: Vec<MergeQuery> = window
        .merges
        .iter()
        .zip(&lists.runs[0].per_task)
        .map(|(m, ranked)| {
            let candidates = Candidates::new(&corpus, &as_hits(ranked));
            let target = corpus
                .index_of(&m.expected)
                .and_then(|d| candidates.position(d));
            MergeQuery { candidates, target }
        })
        .collect();
    let mut pairs = Vec::new();
    for (p, ex) in paired.iter().zip(&ex_pairs) {
        let tasks = Suite {
            tasks: p
                .file
                .assertions
                .iter()
                .map(|a| task(&a.id, &a.query, &a.above, suite.k, 0))
                .collect(),
            ..p.suite.clone()
        };
        let r = replay_with(&engine, &tasks, ex, &ReplayOptions::default())?;
        for (a, ranked) in p.file.assertions.iter().zip(&r.runs[0].per_task) {
            let candidates = Candidates::new(&corpus, &as_hits(ranked));
            let pos = |id: &str| corpus.index_of(id).and_then(|d| candidates.position(d));
            let (above, below) = (pos(&a.above), pos(&a.below));
            if above.is_none() && below.is_none() {
                bail!(
                    "{}: assertion {:?}: neither {:?} nor {:?} is retrieved for {:?}",
                    p.file.path.display(),
                    a.id,
                    a.above,
                    a.below,
                    a.query
                );
            }
            pairs.push(PairQuery {
                id: a.id.clone(),
                candidates,
                above,
                below,
                legacy: a.legacy,
                current: a.current,
            });
        }
    }
    let problem = Problem {
        merges: merge_queries,
        train: window.train,
        pairs,
        k: suite.k,
    };

    // Every candidate: re-sort only.
    let pb = crate::progress::bar(grid.len() as u64, "tune");
    let started = Instant::now();
    let scored = search(&problem, &grid, &|n| pb.inc(n));
    let elapsed = started.elapsed();
    pb.finish_and_clear();
    let rejected = scored.iter().filter(|s| s.score.is_none()).count();
    eprintln!(
        "tune: scored {} candidates ({} rejected by paired assertions) on {} merge and {} paired queries in {:.3} s ({} threads)",
        thousands(scored.len()),
        thousands(rejected),
        problem.merges.len(),
        problem.pairs.len(),
        elapsed.as_secs_f64(),
        rayon::current_num_threads()
    );
    let Some(chosen) = best(&scored, Part::Window) else {
        let breaking: Vec<&str> = problem
            .pairs
            .iter()
            .filter(|p| !p.passes(&practice.weights))
            .map(|p| p.id.as_str())
            .collect();
        bail!(
            "every one of the {} candidates breaks a paired assertion; no weights on this grid satisfy them (the current weights break: {}). Check paired*.yaml or widen the grid (--max-units, --unit)",
            scored.len(),
            if breaking.is_empty() { "none".to_string() } else { breaking.join(", ") }
        );
    };
    let train_only = best(&scored, Part::Train).expect("a candidate passes");
    let chosen_w = grid.weights(chosen.point);
    let train_w = grid.weights(train_only.point);
    let current_w = practice.weights;
    let current_score = problem.score(&current_w);
    let current_ok = problem.paired_ok(&current_w);

    // The answer, re-checked through the real replay.
    for (what, w) in [
        ("chosen", chosen_w),
        ("train-selected", train_w),
        ("current", current_w),
    ] {
        verify(
            &engine,
            &merge_suite,
            &config,
            &ex_path,
            &problem,
            &paired,
            what,
            w,
        )?;
    }

    // Report.
    let mut md = String::new();
    let _ = writeln!(md, "# ranklab tune — {}\n", suite.name);
    let _ = writeln!(
        md,
        "Merges `{}`: {} of {} merged in the window {}..={} ({} days up to the as-of date {}). Train: the older {}{}; held out: the newest {}{}.\n",
        shown(&merges_path),
        window.merges.len(),
        merges.merges.len(),
        window.from,
        window.to,
        window.days,
        as_of,
        window.train().len(),
        span(window.train()),
        window.held_out().len(),
        span(window.held_out()),
    );
    let _ = writeln!(
        md,
        "First stage: configuration `{}` of `{}` ({}, depth {}), replayed once per query; each candidate re-sorts it under the current wiring. Practice file: `{}`.\n",
        config.name,
        shown(&ex_path),
        match config.retriever {
            Retriever::Bm25 => "bm25",
            Retriever::Dense => "dense",
            Retriever::Fusion => "fusion",
        },
        config.depth(),
        shown(&practice_path)
    );
    let _ = writeln!(
        md,
        "Grid: unit {}, 0..={} units per weight (0.00..={}), deprecated >= superseded, editorial_only >= amendment: {} candidates, {} rejected by the {} paired assertions of {}. Order: MRR, then recall@{}, then the smaller weights.\n",
        grid.unit_text(),
        grid.max_units,
        hundredths(u32::from(grid.unit_hundredths) * u32::from(grid.max_units)),
        thousands(scored.len()),
        thousands(rejected),
        problem.pairs.len(),
        if paired.is_empty() { "(no paired file)".to_string() } else { paired.iter().map(|p| format!("`{}`", shown(&p.file.path))).collect::<Vec<_>>().join(", ") },
        suite.k
    );
    let k = suite.k;
    let _ = writeln!(md, "## Chosen and current weights\n");
    let _ = writeln!(
        md,
        "| weights | superseded | deprecated | amendment | editorial_only | window MRR | window recall@{k} | train MRR | train recall@{k} | held-out MRR | held-out recall@{k} | paired |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    );
    let chosen_s = chosen.score.expect("passing");
    let train_s = train_only.score.expect("passing");
    weights_row(
        &mut md,
        "chosen (selected on the window: in-sample)",
        &chosen_w,
        &chosen_s,
        true,
    );
    weights_row(
        &mut md,
        "selected on train only (held-out is out-of-sample)",
        &train_w,
        &train_s,
        true,
    );
    weights_row(
        &mut md,
        "current (practice file)",
        &current_w,
        &current_score,
        current_ok,
    );
    let _ = writeln!(
        md,
        "\nIn-sample: the chosen weights reach window MRR {:.4} against {:.4} for the current weights. Held out: weights selected on the older {} merges reach MRR {:.4} on the newest {} (train MRR {:.4}); the current weights reach {:.4} there.{}\n",
        chosen_s.window.mrr(),
        current_score.window.mrr(),
        window.train().len(),
        train_s.held_out.mrr(),
        window.held_out().len(),
        train_s.train.mrr(),
        current_score.held_out.mrr(),
        if window.held_out().is_empty() { " (Fewer than three merges in the window: nothing is held out.)" } else { "" }
    );
    let _ = writeln!(
        md,
        "## Top {} candidates on the window\n",
        args.top.min(scored.len() - rejected)
    );
    let _ = writeln!(md, "| # | superseded | deprecated | amendment | editorial_only | MRR | recall@{k} |\n|---:|---:|---:|---:|---:|---:|---:|");
    for (i, s) in ranking(&scored, Part::Window)
        .iter()
        .take(args.top)
        .enumerate()
    {
        let w = grid.weights(s.point);
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
    let _ = writeln!(md, "\n## Rank of the expected record, per merge\n");
    let _ = writeln!(md, "| merge | merged | part | expected | current weights | chosen weights |\n|---|---|---|---|---:|---:|");
    let (rc, rn) = (problem.ranks(&current_w), problem.ranks(&chosen_w));
    for (i, m) in window.merges.iter().enumerate() {
        let r = |x: Option<usize>| x.map_or("-".to_string(), |v| v.to_string());
        let part = if i < window.train {
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

    if args.write {
        let tuned = format!(
            "{as_of}, ranklab tune --window-days {} --as-of {as_of} on {}: {} merges of {}..={}, grid unit {}",
            window.days,
            shown(&merges_path),
            window.merges.len(),
            window.from,
            window.to,
            grid.unit_text()
        );
        let out = Practice {
            tuned,
            weights: chosen_w,
            path: practice_path.clone(),
        };
        crate::report::atomic::write(&practice_path, out.to_yaml().as_bytes())?;
        let _ = writeln!(
            md,
            "\nWrote the chosen weights to `{}`.",
            shown(&practice_path)
        );
    } else {
        let _ = writeln!(
            md,
            "\nNothing written: pass --write to store the chosen weights in `{}`.",
            shown(&practice_path)
        );
    }
    print!("{md}");
    Ok(ExitCode::SUCCESS)
}

/// The configuration to tune, its experiments file and its practice file.
fn shipped_configuration(
    suite: &Suite,
    name: Option<&str>,
) -> Result<(Configuration, PathBuf, PathBuf)> {
    let mut found: Vec<(Configuration, PathBuf, PathBuf)> = Vec::new();
    let mut names = Vec::new();
    for f in crate::cmd::run::experiment_files(suite)? {
        let ex = Experiments::load(&f)?;
        for c in &ex.configurations {
            names.push(c.name.clone());
            let wanted = match name {
                Some(n) => c.name == n,
                None => c.wiring == Wiring::Current,
            };
            if wanted && !found.iter().any(|(d, _, _)| d.name == c.name) {
                found.push((c.clone(), f.clone(), ex.practice_path(c)));
            }
        }
    }
    match (found.len(), name) {
        (1, _) => Ok(found.pop().expect("one")),
        (0, Some(n)) => bail!("{}: no configuration {n:?} in the experiments files (configurations: {})", suite.dir().display(), names.join(", ")),
        (0, None) => bail!("{}: no configuration has `wiring: current`; name the one to tune with --configuration", suite.dir().display()),
        _ => bail!(
            "{}: several configurations have `wiring: current` ({}); name the one to tune with --configuration",
            suite.dir().display(),
            found.iter().map(|f| f.0.name.as_str()).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn single(c: Configuration, path: &std::path::Path) -> Experiments {
    Experiments {
        experiment: "tune".into(),
        baseline: Some(c.name.clone()),
        description: None,
        configurations: vec![c],
        path: path.to_path_buf(),
    }
}

fn task(id: &str, query: &str, expected: &str, k: usize, line: usize) -> Task {
    Task {
        id: id.into(),
        query: query.into(),
        expected: [(expected.to_string(), 1)].into(),
        k,
        note: None,
        line,
    }
}

/// The window's merges as a suite (one task per merge, oldest first).
fn merge_suite(suite: &Suite, window: &Window, path: &std::path::Path) -> Suite {
    Suite {
        tasks: window
            .merges
            .iter()
            .map(|m| task(&m.id, &m.query, &m.expected, suite.k, m.line))
            .collect(),
        path: path.to_path_buf(),
        ..suite.clone()
    }
}

/// `53361` -> `53,361`.
fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn span(m: &[crate::tune::merges::Merge]) -> String {
    match (m.first(), m.last()) {
        (Some(a), Some(b)) => format!(" ({}..={})", a.merged, b.merged),
        _ => String::new(),
    }
}

fn weights_row(md: &mut String, label: &str, w: &Weights, s: &Score, paired_ok: bool) {
    let held = |x: f64| {
        if s.held_out.n == 0 {
            "-".to_string()
        } else {
            format!("{x:.4}")
        }
    };
    let _ = writeln!(
        md,
        "| {label} | {:.2} | {:.2} | {:.2} | {:.2} | {:.4} | {:.4} | {:.4} | {:.4} | {} | {} | {} |",
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
        if paired_ok { "all hold as expected" } else { "BROKEN" }
    );
}

/// Re-checks the fast path for `w` through the real replay (current wiring) and the paired
/// assertions' own check.
#[allow(clippy::too_many_arguments)]
fn verify(
    engine: &Engine,
    merge_suite: &Suite,
    config: &Configuration,
    ex_path: &std::path::Path,
    problem: &Problem,
    paired: &[Paired],
    what: &str,
    w: Weights,
) -> Result<()> {
    let corpus: &Corpus = engine.corpus;
    let ex = single(
        Configuration {
            wiring: Wiring::Current,
            ..config.clone()
        },
        ex_path,
    );
    let r = replay_with(
        engine,
        merge_suite,
        &ex,
        &ReplayOptions { weights: Some(w) },
    )?;
    let slow: Vec<Option<usize>> = merge_suite
        .tasks
        .iter()
        .zip(&r.runs[0].per_task)
        .map(|(t, ranked)| first_relevant_rank(corpus, t, ranked))
        .collect();
    let fast = problem.ranks(&w);
    if slow != fast {
        bail!("internal error: for the {what} weights {w:?} the fast scorer gives ranks {fast:?} but the replay gives {slow:?}; please report this");
    }
    let mut slow_ok = true;
    for p in paired {
        slow_ok &= p.check(engine, Some(w))?.iter().all(|v| v.pass());
    }
    if slow_ok != problem.paired_ok(&w) {
        bail!("internal error: for the {what} weights {w:?} the fast scorer and `ranklab check` disagree on the paired assertions; please report this");
    }
    Ok(())
}
