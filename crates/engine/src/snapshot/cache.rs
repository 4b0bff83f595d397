//! The snapshot's disk cache: one file per build, so a process after the
//! first deserialises the blob rather than evaluating the runtime again.
//!
//! The file is named by its key, and holds it again in its header:
//!
//! ```text
//! magic "ISOLSNAP" | format u32 LE | key [32] | blob length u64 LE | SHA-256 of the blob [32] | blob
//! ```
//!
//! The key is a SHA-256 of everything the blob depends on: the runtime's
//! JavaScript, the engine's Rust sources (`ISOLANE_ENGINE_FINGERPRINT`, from
//! `build.rs`: the host functions' order, the host object), V8's version and
//! the V8 flags. A file is used only if all of it checks out (magic, format,
//! key, length, digest); anything else is rebuilt and rewritten, never handed
//! to V8, which aborts the process on a blob it cannot read. Writes go to a
//! temporary file in the same folder, renamed over the old one, so a reader
//! never sees half a file; files of other keys are removed then.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::RUNTIME_JS;

const MAGIC: &[u8; 8] = b"ISOLSNAP";
const FORMAT: u32 = 1;
const HEADER: usize = 8 + 4 + 32 + 8 + 32;
const PREFIX: &str = "snapshot-";
const SUFFIX: &str = ".bin";

/// What the blob depends on, hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Key(pub(crate) [u8; 32]);

impl Key {
    /// This build's key.
    pub(crate) fn current() -> Key {
        Key::of(
            env!("ISOLANE_ENGINE_FINGERPRINT"),
            v8::V8::get_version(),
            crate::platform::FLAGS,
            RUNTIME_JS,
        )
    }

    fn of(fingerprint: &str, v8_version: &str, flags: &str, runtime: &[(&str, &str)]) -> Key {
        let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
        let mut field = |bytes: &[u8]| {
            // Length-prefixed, so no two inputs hash alike by shifting bytes.
            digest.update(&(bytes.len() as u64).to_le_bytes());
            digest.update(bytes);
        };
        field(&FORMAT.to_le_bytes());
        field(fingerprint.as_bytes());
        field(v8_version.as_bytes());
        field(flags.as_bytes());
        for (name, source) in runtime {
            field(name.as_bytes());
            field(source.as_bytes());
        }
        let mut key = [0; 32];
        key.copy_from_slice(digest.finish().as_ref());
        Key(key)
    }

    /// `snapshot-<first 16 bytes in hex>.bin`.
    pub(crate) fn file_name(&self) -> String {
        let hex: String = self.0[..16].iter().map(|b| format!("{b:02x}")).collect();
        format!("{PREFIX}{hex}{SUFFIX}")
    }
}

/// Why a cache file was not used or not written.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CacheError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid snapshot for this build: {reason}")]
    Invalid { path: PathBuf, reason: &'static str },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl CacheError {
    /// A bounded label for logs.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Read { .. } => "read",
            Self::Invalid { reason, .. } => reason,
            Self::Write { .. } => "write",
        }
    }
}

/// The blob cached under `key` in `dir`: `Ok(None)` when there is no file,
/// an error when there is one that does not check out.
pub(crate) fn load(dir: &Path, key: &Key) -> Result<Option<Vec<u8>>, CacheError> {
    let path = dir.join(key.file_name());
    let mut bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CacheError::Read { path, source }),
    };
    match check(&bytes, key) {
        Ok(()) => {
            bytes.drain(..HEADER);
            Ok(Some(bytes))
        }
        Err(reason) => Err(CacheError::Invalid { path, reason }),
    }
}

/// Why `bytes` is not a cache file for `key`.
fn check(bytes: &[u8], key: &Key) -> Result<(), &'static str> {
    if bytes.len() < HEADER {
        return Err("shorter than its header");
    }
    let (header, blob) = bytes.split_at(HEADER);
    if &header[..8] != MAGIC {
        return Err("no snapshot magic");
    }
    if header[8..12] != FORMAT.to_le_bytes() {
        return Err("another file format");
    }
    if header[12..44] != key.0 {
        return Err("made by another build");
    }
    if header[44..52] != (blob.len() as u64).to_le_bytes() {
        return Err("truncated or extended");
    }
    if header[52..84] != *ring::digest::digest(&ring::digest::SHA256, blob).as_ref() {
        return Err("digest mismatch");
    }
    Ok(())
}

/// Writes `blob` under `key` in `dir` (made if missing): a temporary file,
/// synced, renamed into place; then removes other keys' files.
pub(crate) fn store(dir: &Path, key: &Key, blob: &[u8]) -> Result<(), CacheError> {
    let path = dir.join(key.file_name());
    let write_error = |source| CacheError::Write {
        path: path.clone(),
        source,
    };
    fs::create_dir_all(dir).map_err(write_error)?;
    let temporary = dir.join(format!(".{}.{}.tmp", key.file_name(), std::process::id()));
    let written = (|| {
        let mut file = fs::File::create(&temporary)?;
        file.write_all(MAGIC)?;
        file.write_all(&FORMAT.to_le_bytes())?;
        file.write_all(&key.0)?;
        file.write_all(&(blob.len() as u64).to_le_bytes())?;
        file.write_all(ring::digest::digest(&ring::digest::SHA256, blob).as_ref())?;
        file.write_all(blob)?;
        file.sync_all()?;
        fs::rename(&temporary, &path)
    })();
    if let Err(source) = written {
        let _ = fs::remove_file(&temporary);
        return Err(write_error(source));
    }
    remove_others(dir, &key.file_name());
    Ok(())
}

/// Removes the cache files of other builds (best effort: another process
/// may be doing the same).
fn remove_others(dir: &Path, keep: &str) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name != keep && name.starts_with(PREFIX) && name.ends_with(SUFFIX) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests;
