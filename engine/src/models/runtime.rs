//! ONNX Runtime: located, loaded and wrapped in one `ort` environment, once per process.
//!
//! The library is `ORT_DYLIB_PATH` when the user set it, else the verified copy in the cache
//! (`<root>/runtime/`). Nobody has to export anything; a missing library is an error that says
//! `run: ranklab models fetch`, never ort's panic. Every session ranklab creates uses the
//! environment returned by [`ort_environment`].

use std::path::PathBuf;
use std::sync::OnceLock;

use ort::environment::Environment;

use super::ModelStore;
use crate::{Error, Result};

/// `ORT_DYLIB_PATH` when set and not empty.
pub(super) fn user_dylib_path() -> Option<PathBuf> {
    std::env::var_os("ORT_DYLIB_PATH")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Errors on platforms for which no runtime is pinned.
pub(super) fn check_platform() -> Result<()> {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        Ok(())
    } else {
        Err(Error::Model {
            model: "onnxruntime".into(),
            message: "ranklab pins ONNX Runtime for Linux x86_64 only; on this platform install \
                      ONNX Runtime 1.32 yourself and set ORT_DYLIB_PATH to its shared library"
                .into(),
        })
    }
}

/// The ONNX Runtime library this process loads: `ORT_DYLIB_PATH` when set (it must exist), else
/// the verified cached copy. Does not download.
pub fn runtime_library() -> Result<PathBuf> {
    if let Some(path) = user_dylib_path() {
        if !path.is_file() {
            return Err(Error::Model {
                model: "onnxruntime".into(),
                message: format!(
                    "ORT_DYLIB_PATH is set to {}, which is not a file; fix it, or unset it to use \
                     ranklab's own copy (run: ranklab models fetch)",
                    path.display()
                ),
            });
        }
        return Ok(path);
    }
    ModelStore::open_default()?.runtime()
}

static ENVIRONMENT: OnceLock<std::result::Result<Environment, String>> = OnceLock::new();

/// The process's ONNX Runtime environment, loading the library on first call (see
/// [`runtime_library`]). Every later call returns the same environment, or the same error.
pub fn ort_environment() -> Result<Environment> {
    ENVIRONMENT
        .get_or_init(|| {
            let path = runtime_library().map_err(|e| match e {
                Error::Model { message, .. } => message,
                other => other.to_string(),
            })?;
            let builder = ort::init_from(&path).map_err(|e| {
                format!(
                    "loading {} failed: {e}; delete it and run: ranklab models fetch",
                    path.display()
                )
            })?;
            builder
                .with_name("ranklab")
                .build()
                .map_err(|e| format!("creating the ONNX Runtime environment failed: {e}"))
        })
        .clone()
        .map_err(|message| Error::Model {
            model: "onnxruntime".into(),
            message,
        })
}

/// Default number of single-threaded sessions a model runs on: one per core.
pub(crate) fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// `workers` single-threaded sessions of one model (None: [`default_workers`]; at least one),
/// each made by `session`: the identical copies of a model that [`run_on_workers`] spreads a
/// call's work over. Both fastembed models load this way; a failure is an error of the model
/// `model_id`.
pub(crate) fn load_sessions<S>(
    model_id: &str,
    workers: Option<usize>,
    mut session: impl FnMut() -> std::result::Result<S, fastembed::Error>,
) -> Result<Vec<S>> {
    let n = workers.unwrap_or_else(default_workers).max(1);
    let mut sessions = Vec::with_capacity(n);
    for _ in 0..n {
        sessions.push(session().map_err(fastembed_error(model_id))?);
    }
    Ok(sessions)
}

/// Turns an error fastembed reports while loading or running the model `model_id` into an
/// error of that model.
pub(crate) fn fastembed_error(model_id: &str) -> impl Fn(fastembed::Error) -> Error + '_ {
    move |e| Error::Model {
        model: model_id.to_string(),
        message: e.to_string(),
    }
}

/// Runs `job(worker, i)` for every `i < jobs`, spreading jobs over the workers (each on its own
/// thread, each job on one worker), and returns the results in job order. Which worker runs a
/// job does not matter to the result: every worker is a copy of the same single-threaded model.
pub(crate) fn run_on_workers<W: Send, T: Send>(
    workers: &mut [W],
    jobs: usize,
    job: impl Fn(&mut W, usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    if workers.len() <= 1 || jobs <= 1 {
        let w = workers.first_mut().expect("at least one worker");
        return (0..jobs).map(|i| job(w, i)).collect();
    }
    let next = AtomicUsize::new(0);
    let failed = std::sync::atomic::AtomicBool::new(false);
    let mut parts: Vec<Result<Vec<(usize, T)>>> = Vec::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .iter_mut()
            .take(jobs)
            .map(|w| {
                let (next, failed, job) = (&next, &failed, &job);
                s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= jobs || failed.load(Ordering::Relaxed) {
                            return Ok(done);
                        }
                        match job(w, i) {
                            Ok(t) => done.push((i, t)),
                            Err(e) => {
                                failed.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                })
            })
            .collect();
        parts = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
    });
    let mut all: Vec<(usize, T)> = Vec::with_capacity(jobs);
    for part in parts {
        all.extend(part?);
    }
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, t)| t).collect())
}

/// Which u8×s8 matrix kernel ONNX Runtime's CPU provider runs on this machine. The pinned int8
/// models (bge-small, L-12, answerai-colbert) give other bits under each: the AVX2 kernel sums
/// byte pairs into saturating 16-bit lanes (`vpmaddubsw`), the VNNI kernels (AVX-512 VNNI,
/// AVX-VNNI) accumulate in 32 bits (`vpdpbusd`). Seen: cosines differ by up to 0.009 and the
/// L-12 Berlin logit reads 9.134 under one and 9.391 under the other. A pinned model output is
/// therefore pinned per kernel, and a recording (`runs/models/`) carries the bits across machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Int8Kernel {
    /// AVX-512 VNNI or AVX-VNNI.
    Vnni,
    /// Any other CPU (AVX2 on x86-64; also the answer off x86-64, where no pin is claimed).
    Avx2,
}

impl Int8Kernel {
    /// The kernel of the CPU this process runs on.
    pub fn detect() -> Int8Kernel {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512vnni")
            || std::arch::is_x86_feature_detected!("avxvnni")
        {
            return Int8Kernel::Vnni;
        }
        Int8Kernel::Avx2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_job_order_whatever_the_worker() {
        let mut workers = vec![0usize; 3];
        let out = run_on_workers(&mut workers, 100, |_, i| Ok(i * 2)).unwrap();
        assert_eq!(out, (0..100).map(|i| i * 2).collect::<Vec<_>>());
        let mut one = vec![()];
        assert_eq!(
            run_on_workers(&mut one, 3, |_, i| Ok(i)).unwrap(),
            vec![0, 1, 2]
        );
    }

    #[test]
    fn the_first_error_is_returned() {
        let mut workers = vec![(); 2];
        let r = run_on_workers(&mut workers, 50, |_, i| {
            if i == 7 {
                Err(Error::Config("job 7".into()))
            } else {
                Ok(i)
            }
        });
        assert!(r.unwrap_err().to_string().contains("job 7"));
    }
}
