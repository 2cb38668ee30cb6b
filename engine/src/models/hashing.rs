//! sha256 of files (memoised per process) and bytes, and lowercase hex.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

use crate::{Error, Result};

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
