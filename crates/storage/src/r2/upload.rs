//! [`R2Upload`]: a body on its way into a bucket, in a temporary file of
//! the bucket's, digested as it is written.

use std::io::Write;
use std::path::{Path, PathBuf};

use md5::Digest;

use std::collections::BTreeMap;

use super::{R2Error, R2PutOptions, check_key, check_metadata, limits};

/// The digests R2 can check, by `put` option field.
enum Hasher {
    Sha1(sha1::Sha1),
    Sha256(sha2::Sha256),
    Sha384(sha2::Sha384),
    Sha512(sha2::Sha512),
}

impl Hasher {
    fn new(field: &str) -> Option<(&'static str, &'static str, Self)> {
        Some(match field {
            "sha1" => ("sha1", "SHA-1", Hasher::Sha1(sha1::Sha1::new())),
            "sha256" => ("sha256", "SHA-256", Hasher::Sha256(sha2::Sha256::new())),
            "sha384" => ("sha384", "SHA-384", Hasher::Sha384(sha2::Sha384::new())),
            "sha512" => ("sha512", "SHA-512", Hasher::Sha512(sha2::Sha512::new())),
            _ => return None,
        })
    }

    fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::Sha1(h) => h.update(bytes),
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Sha384(h) => h.update(bytes),
            Hasher::Sha512(h) => h.update(bytes),
        }
    }

    fn finish(self) -> String {
        match self {
            Hasher::Sha1(h) => hex::encode(h.finalize()),
            Hasher::Sha256(h) => hex::encode(h.finalize()),
            Hasher::Sha384(h) => hex::encode(h.finalize()),
            Hasher::Sha512(h) => hex::encode(h.finalize()),
        }
    }
}

/// A body being written: appended to, then handed to a bucket's `put` or
/// `upload_part`, which moves its file into place. Dropped unused, its
/// file is removed.
pub struct R2Upload {
    file: Option<std::fs::File>,
    path: PathBuf,
    size: u64,
    md5: md5::Md5,
    others: Vec<(&'static str, &'static str, Hasher)>,
}

impl std::fmt::Debug for R2Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("R2Upload")
            .field("path", &self.path)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

/// A finished body: its file, size and hex digests (`md5` always).
pub(crate) struct Finished {
    pub path: PathBuf,
    pub size: u64,
    pub md5: String,
    /// `(field, algorithm's name, hex)`.
    pub others: Vec<(&'static str, &'static str, String)>,
}

impl R2Upload {
    /// A new, empty body in file `path` (made now), digesting `md5` and
    /// each of `fields` R2 knows (`sha1`, `sha256`, `sha384`, `sha512`).
    pub(crate) fn create(path: PathBuf, fields: &[String]) -> Result<Self, R2Error> {
        let file = std::fs::File::create(&path)?;
        Ok(Self {
            file: Some(file),
            path,
            size: 0,
            md5: md5::Md5::new(),
            others: fields.iter().filter_map(|f| Hasher::new(f)).collect(),
        })
    }

    /// Appends `bytes`; refused past R2's size limit (the body is then
    /// dropped: nothing is stored).
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), R2Error> {
        let size = self.size.saturating_add(bytes.len() as u64);
        if size > limits::MAX_OBJECT {
            return Err(R2Error::EntityTooLarge);
        }
        let file = self
            .file
            .as_mut()
            .ok_or_else(|| R2Error::Internal("the body was finished".into()))?;
        file.write_all(bytes)?;
        self.md5.update(bytes);
        for (_, _, hasher) in &mut self.others {
            hasher.update(bytes);
        }
        self.size = size;
        Ok(())
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The file synced and closed, its digests.
    pub(crate) fn finish(mut self) -> Result<Finished, R2Error> {
        if let Some(file) = self.file.take() {
            file.sync_data()?;
        }
        let path = std::mem::take(&mut self.path);
        let md5 = std::mem::replace(&mut self.md5, md5::Md5::new());
        let others = std::mem::take(&mut self.others);
        Ok(Finished {
            path,
            size: self.size,
            md5: hex::encode(md5.finalize()),
            others: others
                .into_iter()
                .map(|(field, name, h)| (field, name, h.finish()))
                .collect(),
        })
    }
}

impl Drop for R2Upload {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Removes `path` if it is there (a finished body not kept).
pub(crate) fn discard(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// What a backend's `put` starts with: `key` and the custom metadata
/// checked, `body` finished, the digests `options` asks for checked
/// against it ([`checked_digests`]; the body's file discarded if they
/// fail).
pub(crate) fn prepare_put(
    key: &str,
    body: R2Upload,
    options: &R2PutOptions,
) -> Result<(Finished, BTreeMap<String, String>), R2Error> {
    check_key(key)?;
    check_metadata(&options.custom_metadata)?;
    let body = body.finish()?;
    match checked_digests(&body, options) {
        Ok(checksums) => Ok((body, checksums)),
        Err(error) => {
            discard(&body.path);
            Err(error)
        }
    }
}

/// The digests `options` asks for, checked against `body`'s; R2's
/// `checksums` (`md5` and each one asked for).
pub(crate) fn checked_digests(
    body: &Finished,
    options: &R2PutOptions,
) -> Result<BTreeMap<String, String>, R2Error> {
    let mut checksums = BTreeMap::new();
    let computed = std::iter::once(("md5", "MD5", body.md5.as_str()))
        .chain(body.others.iter().map(|(f, n, h)| (*f, *n, h.as_str())));
    for (field, name, actual) in computed {
        if let Some(provided) = options.checksums.get(field) {
            if !provided.eq_ignore_ascii_case(actual) {
                return Err(R2Error::BadDigest {
                    algorithm: name,
                    provided: provided.to_ascii_lowercase(),
                    actual: actual.to_owned(),
                });
            }
            checksums.insert(field.to_owned(), actual.to_owned());
        }
    }
    checksums.insert("md5".into(), body.md5.clone());
    Ok(checksums)
}
