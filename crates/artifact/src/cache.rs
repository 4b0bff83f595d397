//! The node's disk cache of bundle blobs: content-addressed (a file per
//! `sha256:<hex>` digest, checked again when read), bounded in bytes (the
//! least recently used files go first).
//!
//! Blobs are written to a temporary file and renamed into place, so a
//! reader never sees half a blob; a file whose bytes no longer match its
//! name is removed and treated as absent.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::Error;
use crate::digest::sha256;

/// A directory of blobs named by digest, at most `max_bytes` in all.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    max_bytes: u64,
}

impl Cache {
    /// The cache in `dir` (made if missing).
    pub fn open(dir: impl Into<PathBuf>, max_bytes: u64) -> Result<Self, Error> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|source| Error::Cache {
            path: dir.clone(),
            source,
        })?;
        Ok(Self { dir, max_bytes })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The blob `digest`, if held and intact (and marks it used).
    pub fn get(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.path(digest)?;
        let bytes = std::fs::read(&path).ok()?;
        if sha256(&bytes) != digest {
            tracing::warn!(path = %path.display(), "removing a corrupt cached bundle blob");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        if let Ok(file) = std::fs::File::options().write(true).open(&path) {
            let _ = file.set_modified(SystemTime::now());
        }
        Some(bytes)
    }

    /// Keeps the blob `digest` (already verified), then evicts the least
    /// recently used blobs beyond the bound.
    pub fn put(&self, digest: &str, bytes: &[u8]) -> Result<(), Error> {
        let Some(path) = self.path(digest) else {
            return Ok(());
        };
        let io = |source| Error::Cache {
            path: path.clone(),
            source,
        };
        let temp = self.dir.join(format!(
            ".tmp-{}-{}",
            std::process::id(),
            digest.trim_start_matches("sha256:")
        ));
        std::fs::write(&temp, bytes).map_err(io)?;
        std::fs::rename(&temp, &path).map_err(io)?;
        self.evict();
        Ok(())
    }

    /// Bytes held now.
    pub fn held_bytes(&self) -> u64 {
        self.files().iter().map(|(_, len, _)| len).sum()
    }

    fn evict(&self) {
        let mut files = self.files();
        let mut total: u64 = files.iter().map(|(_, len, _)| len).sum();
        files.sort_by_key(|(_, _, used)| *used);
        for (path, len, _) in files {
            if total <= self.max_bytes {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
    }

    /// (path, bytes, last use) of every blob.
    fn files(&self) -> Vec<(PathBuf, u64, SystemTime)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .filter(|entry| entry.file_name().to_string_lossy().starts_with("sha256-"))
            .filter_map(|entry| {
                let meta = entry.metadata().ok()?;
                Some((entry.path(), meta.len(), meta.modified().ok()?))
            })
            .collect()
    }

    /// `sha256-<hex>` in the cache's folder; `None` for anything else.
    fn path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| self.dir.join(format!("sha256-{hex}")))
    }
}
