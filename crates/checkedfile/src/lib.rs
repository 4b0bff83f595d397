//! A cache file whose bytes are checked before anything reads them: the
//! engine's startup snapshot (`isolane_engine`'s `snapshot/cache.rs`) and
//! the modules' V8 code caches (its `code_cache.rs`). V8 aborts the process on a snapshot it cannot read,
//! and a code cache is trusted as far as V8's own sanity check goes, so no
//! byte of a file reaches V8 unless all of this checks out.
//!
//! The file is named by its key, and holds it again in its header:
//!
//! ```text
//! magic [8] | format u32 LE | key [32] | blob length u64 LE | SHA-256 of the blob [32] | blob
//! ```
//!
//! The key is a SHA-256 of everything the blob depends on ([`Key::of`]).
//! Anything that does not check out (magic, format, key, length, digest) is
//! an error for the caller to rebuild the blob and rewrite it, never a blob.
//! Writes go to a temporary file in the same folder, renamed over the old
//! one, so a reader never sees half a file. File names come from keys only:
//! nothing a tenant writes names a file.

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

const FORMAT: u32 = 1;
const HEADER: usize = 8 + 4 + 32 + 8 + 32;
const SUFFIX: &str = ".bin";

/// One kind of cache file: its magic, the prefix of its file names, and
/// what it holds (for messages).
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    pub magic: &'static [u8; 8],
    pub prefix: &'static str,
    pub what: &'static str,
}

/// What a blob depends on, hashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// The SHA-256 of the file format and `fields`, each length-prefixed
    /// (so no two inputs hash alike by moving bytes between fields).
    pub fn of<'a>(fields: impl IntoIterator<Item = &'a [u8]>) -> Key {
        let mut digest = ring::digest::Context::new(&ring::digest::SHA256);
        let mut field = |bytes: &[u8]| {
            digest.update(&(bytes.len() as u64).to_le_bytes());
            digest.update(bytes);
        };
        field(&FORMAT.to_le_bytes());
        for bytes in fields {
            field(bytes);
        }
        let mut key = [0; 32];
        key.copy_from_slice(digest.finish().as_ref());
        Key(key)
    }

    /// `<prefix><first 16 bytes in hex>.bin`.
    pub fn file_name(&self, kind: &Kind) -> String {
        let hex: String = self.0[..16].iter().map(|b| format!("{b:02x}")).collect();
        format!("{}{hex}{SUFFIX}", kind.prefix)
    }
}

/// Why a cache file was not used or not written.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a valid {what} for this build: {reason}")]
    Invalid {
        path: PathBuf,
        what: &'static str,
        reason: &'static str,
    },
    #[error("writing {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl CacheError {
    /// A bounded label for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Read { .. } => "read",
            Self::Invalid { reason, .. } => reason,
            Self::Write { .. } => "write",
        }
    }
}

/// The blob of `kind` cached under `key` in `dir`: `Ok(None)` when there
/// is no file, an error when there is one that does not check out.
pub fn load(dir: &Path, kind: &Kind, key: &Key) -> Result<Option<Vec<u8>>, CacheError> {
    let path = dir.join(key.file_name(kind));
    let mut bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CacheError::Read { path, source }),
    };
    match check(&bytes, kind, key) {
        Ok(()) => {
            bytes.drain(..HEADER);
            Ok(Some(bytes))
        }
        Err(reason) => Err(CacheError::Invalid {
            path,
            what: kind.what,
            reason,
        }),
    }
}

/// Why `bytes` is not a cache file of `kind` for `key`.
fn check(bytes: &[u8], kind: &Kind, key: &Key) -> Result<(), &'static str> {
    if bytes.len() < HEADER {
        return Err("shorter than its header");
    }
    let (header, blob) = bytes.split_at(HEADER);
    if &header[..8] != kind.magic {
        return Err("another magic");
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

/// Writes `blob` of `kind` under `key` in `dir` (made if missing): a
/// temporary file, synced, renamed into place.
pub fn store(dir: &Path, kind: &Kind, key: &Key, blob: &[u8]) -> Result<(), CacheError> {
    let path = dir.join(key.file_name(kind));
    let write_error = |source| CacheError::Write {
        path: path.clone(),
        source,
    };
    fs::create_dir_all(dir).map_err(write_error)?;
    let temporary = dir.join(format!(
        ".{}.{}.tmp",
        key.file_name(kind),
        std::process::id()
    ));
    let written = (|| {
        let mut file = fs::File::create(&temporary)?;
        file.write_all(kind.magic)?;
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
    Ok(())
}

/// Removes the files of `kind` in `dir` but `keep` (best effort: another
/// process may be doing the same).
pub fn remove_others(dir: &Path, kind: &Kind, keep: &Key) {
    let keep = keep.file_name(kind);
    for (path, name, _, _) in files(dir, kind) {
        if name != keep {
            let _ = fs::remove_file(path);
        }
    }
}

/// Removes the oldest-written files of `kind` in `dir` until those left
/// hold at most `max_bytes` (best effort).
pub fn trim(dir: &Path, kind: &Kind, max_bytes: u64) {
    let mut files = files(dir, kind);
    let mut total: u64 = files.iter().map(|(_, _, len, _)| len).sum();
    files.sort_by_key(|(_, _, _, written)| *written);
    for (path, _, len, _) in files {
        if total <= max_bytes {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

/// (path, name, bytes, last written) of each file of `kind` in `dir`.
fn files(dir: &Path, kind: &Kind) -> Vec<(PathBuf, String, u64, SystemTime)> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !(name.starts_with(kind.prefix) && name.ends_with(SUFFIX)) {
                return None;
            }
            let meta = entry.metadata().ok()?;
            let written = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            Some((entry.path(), name, meta.len(), written))
        })
        .collect()
}

#[cfg(test)]
mod tests;
