//! `isolane dev`'s buckets: a folder per Kubernetes namespace and bucket
//! under the state folder (`r2/<namespace>/<bucket>/`).
//!
//! An object is two files in `objects/`, named by the SHA-256 of its key
//! (a key may be 1024 bytes, a file name 255): `<hash>.json`, its
//! metadata (the key among it), and `<hash>.<version>`, its body. A put
//! writes the body to `tmp/` first, then, holding the bucket's lock,
//! renames it into place and replaces the metadata by a rename: a reader
//! sees the old object or the new one, whole, and a restart keeps every
//! put that returned. A reader holds its body's file open, so a put or a
//! delete meanwhile does not cut it short. `list` reads every metadata
//! file of the bucket (a local folder, not a million objects).
//!
//! A multipart upload is a folder in `uploads/`: `upload.json` (its key
//! and metadata), each part's body and etag; `complete` joins the parts
//! into a new body, stored as a put's.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use md5::Digest;
use serde::{Deserialize, Serialize};

use super::upload::{Finished, discard, prepare_put};
use super::{
    R2Bucket, R2Conditional, R2Error, R2List, R2ListOptions, R2Object, R2PutOptions, R2Read,
    R2Upload, check_key, check_metadata, limits, now_ms, random_id,
};

/// One bucket's folder.
#[derive(Debug)]
pub struct DiskBucket {
    dir: PathBuf,
    lock: Arc<Mutex<()>>,
}

/// The lock of each bucket folder this process has used: puts, deletes
/// and completions of one bucket go one at a time.
fn lock_of(dir: &Path) -> Arc<Mutex<()>> {
    static LOCKS: OnceLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> = OnceLock::new();
    let mut locks = LOCKS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    locks.entry(dir.to_owned()).or_default().clone()
}

/// Whether `name` is one path component of letters, digits and `-`, `_`,
/// `.` (not `.` or `..`).
fn is_component(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

impl DiskBucket {
    /// Bucket `bucket` of Kubernetes namespace `namespace` under `root`.
    pub fn new(root: &Path, namespace: &str, bucket: &str) -> Result<Self, R2Error> {
        if !is_component(namespace) || !is_component(bucket) {
            return Err(R2Error::Internal(format!(
                "not a bucket of a namespace: {namespace}/{bucket}"
            )));
        }
        let dir = root.join("r2").join(namespace).join(bucket);
        for sub in ["objects", "tmp", "uploads"] {
            std::fs::create_dir_all(dir.join(sub))?;
        }
        let lock = lock_of(&dir);
        Ok(Self { dir, lock })
    }

    fn locked(&self) -> MutexGuard<'_, ()> {
        self.lock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn hash(key: &str) -> String {
        hex::encode(sha2::Sha256::digest(key.as_bytes()))
    }

    fn meta_path(&self, key: &str) -> PathBuf {
        self.dir
            .join("objects")
            .join(format!("{}.json", Self::hash(key)))
    }

    fn body_path(&self, key: &str, version: &str) -> PathBuf {
        self.dir
            .join("objects")
            .join(format!("{}.{version}", Self::hash(key)))
    }

    fn upload_dir(&self, upload: &str) -> Result<PathBuf, R2Error> {
        if upload.len() != 32 || !upload.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(R2Error::NoSuchUpload);
        }
        Ok(self.dir.join("uploads").join(upload))
    }

    /// Writes `value` as JSON to `path` by a rename (whole or not at all).
    fn write_json(&self, path: &Path, value: &impl Serialize) -> Result<(), R2Error> {
        let tmp = self.dir.join("tmp").join(random_id()?);
        let bytes = serde_json::to_vec(value).map_err(|e| R2Error::Internal(e.to_string()))?;
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, path)?;
        Ok(())
    }

    fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>, R2Error> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| R2Error::Internal(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Moves `body` into place as `key`'s new object (the lock held).
    fn commit(
        &self,
        key: &str,
        body: Finished,
        etag: String,
        checksums: BTreeMap<String, String>,
        options: &R2PutOptions,
    ) -> Result<R2Object, R2Error> {
        let old: Option<R2Object> = Self::read_json(&self.meta_path(key))?;
        let object = R2Object {
            key: key.to_owned(),
            version: random_id()?,
            size: body.size,
            etag,
            uploaded: now_ms(),
            http_metadata: options.http_metadata.clone(),
            custom_metadata: options.custom_metadata.clone(),
            checksums,
            storage_class: options
                .storage_class
                .clone()
                .unwrap_or_else(|| "Standard".into()),
        };
        std::fs::rename(&body.path, self.body_path(key, &object.version))?;
        self.write_json(&self.meta_path(key), &object)?;
        if let Some(old) = old {
            discard(&self.body_path(key, &old.version));
        }
        Ok(object)
    }
}

/// A stored body, open.
struct DiskRead(std::fs::File);

impl R2Read for DiskRead {
    fn read_at(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, R2Error> {
        let mut buf = vec![0; len];
        let mut filled = 0;
        while filled < len {
            let n = self.0.read_at(&mut buf[filled..], offset + filled as u64)?;
            if n == 0 {
                break;
            }
            filled += n;
        }
        buf.truncate(filled);
        Ok(buf)
    }
}

/// A multipart upload's `upload.json`.
#[derive(Serialize, Deserialize)]
struct UploadMeta {
    key: String,
    options: R2PutOptions,
}

/// A part's `<n>.json`.
#[derive(Serialize, Deserialize)]
struct PartMeta {
    etag: String,
    size: u64,
    md5: String,
}

impl R2Bucket for DiskBucket {
    fn head(&self, key: &str) -> Result<Option<R2Object>, R2Error> {
        check_key(key)?;
        Self::read_json(&self.meta_path(key))
    }

    fn get(
        &self,
        key: &str,
        only_if: Option<&R2Conditional>,
    ) -> Result<Option<(R2Object, Option<Box<dyn R2Read>>)>, R2Error> {
        check_key(key)?;
        // Under the lock: the metadata and the body it names agree.
        let _locked = self.locked();
        let Some(object) = Self::read_json::<R2Object>(&self.meta_path(key))? else {
            return Ok(None);
        };
        if only_if.is_some_and(|c| !c.holds(Some(&object))) {
            return Ok(Some((object, None)));
        }
        let file = std::fs::File::open(self.body_path(key, &object.version))?;
        Ok(Some((
            object,
            Some(Box::new(DiskRead(file)) as Box<dyn R2Read>),
        )))
    }

    fn new_body(&self, digests: &[String]) -> Result<R2Upload, R2Error> {
        R2Upload::create(self.dir.join("tmp").join(random_id()?), digests)
    }

    fn put(
        &self,
        key: &str,
        body: R2Upload,
        options: &R2PutOptions,
    ) -> Result<Option<R2Object>, R2Error> {
        let (body, checksums) = prepare_put(key, body, options)?;
        let _locked = self.locked();
        if let Some(condition) = &options.only_if {
            let current: Option<R2Object> = Self::read_json(&self.meta_path(key))?;
            if !condition.holds(current.as_ref()) {
                discard(&body.path);
                return Ok(None);
            }
        }
        let etag = body.md5.clone();
        self.commit(key, body, etag, checksums, options).map(Some)
    }

    fn delete(&self, keys: &[String]) -> Result<(), R2Error> {
        for key in keys {
            check_key(key)?;
        }
        let _locked = self.locked();
        for key in keys {
            if let Some(old) = Self::read_json::<R2Object>(&self.meta_path(key))? {
                std::fs::remove_file(self.meta_path(key))?;
                discard(&self.body_path(key, &old.version));
            }
        }
        Ok(())
    }

    fn list(&self, options: &R2ListOptions) -> Result<R2List, R2Error> {
        let mut objects = Vec::new();
        for entry in std::fs::read_dir(self.dir.join("objects"))? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "json")
                && let Some(object) = Self::read_json::<R2Object>(&path)?
            {
                objects.push(object);
            }
        }
        super::list::page(objects, options)
    }

    fn create_upload(&self, key: &str, options: &R2PutOptions) -> Result<String, R2Error> {
        check_key(key)?;
        check_metadata(&options.custom_metadata)?;
        let id = random_id()?;
        let dir = self.upload_dir(&id)?;
        std::fs::create_dir_all(&dir)?;
        let meta = UploadMeta {
            key: key.to_owned(),
            options: options.clone(),
        };
        self.write_json(&dir.join("upload.json"), &meta)?;
        Ok(id)
    }

    fn upload_part(
        &self,
        key: &str,
        upload: &str,
        number: u32,
        body: R2Upload,
    ) -> Result<String, R2Error> {
        check_key(key)?;
        let dir = self.upload_dir(upload)?;
        let meta: Option<UploadMeta> = Self::read_json(&dir.join("upload.json"))?;
        if meta.is_none_or(|m| m.key != key) {
            return Err(R2Error::NoSuchUpload);
        }
        if !(1..=limits::MAX_PARTS).contains(&number) {
            return Err(R2Error::InvalidPart);
        }
        let body = body.finish()?;
        let part = PartMeta {
            etag: random_id()?,
            size: body.size,
            md5: body.md5.clone(),
        };
        std::fs::rename(&body.path, dir.join(format!("{number}.part")))?;
        self.write_json(&dir.join(format!("{number}.json")), &part)?;
        Ok(part.etag)
    }

    fn complete_upload(
        &self,
        key: &str,
        upload: &str,
        parts: &[(u32, String)],
    ) -> Result<R2Object, R2Error> {
        check_key(key)?;
        let dir = self.upload_dir(upload)?;
        let meta: Option<UploadMeta> = Self::read_json(&dir.join("upload.json"))?;
        let meta = meta.filter(|m| m.key == key).ok_or(R2Error::NoSuchUpload)?;
        let mut chosen = Vec::with_capacity(parts.len());
        for (number, etag) in parts {
            if chosen.iter().any(|(n, _): &(u32, PartMeta)| n == number) {
                return Err(R2Error::Internal("a part is listed twice".into()));
            }
            let part: Option<PartMeta> = Self::read_json(&dir.join(format!("{number}.json")))?;
            match part {
                Some(part) if part.etag == *etag => chosen.push((*number, part)),
                _ => return Err(R2Error::InvalidPart),
            }
        }
        super::list::check_part_sizes(&mut chosen, |p| p.size)?;
        let mut joined = self.new_body(&[])?;
        let mut md5s = md5::Md5::new();
        for (number, part) in &chosen {
            let mut file = std::fs::File::open(dir.join(format!("{number}.part")))?;
            let mut buf = vec![0; 1 << 20];
            loop {
                let n = std::io::Read::read(&mut file, &mut buf)?;
                if n == 0 {
                    break;
                }
                joined.write(&buf[..n])?;
            }
            md5s.update(hex::decode(&part.md5).map_err(|e| R2Error::Internal(e.to_string()))?);
        }
        let etag = format!("{}-{}", hex::encode(md5s.finalize()), chosen.len());
        let body = joined.finish()?;
        let _locked = self.locked();
        let object = self.commit(key, body, etag, BTreeMap::new(), &meta.options)?;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(object)
    }

    fn abort_upload(&self, key: &str, upload: &str) -> Result<(), R2Error> {
        check_key(key)?;
        let dir = self.upload_dir(upload)?;
        let meta: Option<UploadMeta> = Self::read_json(&dir.join("upload.json"))?;
        if meta.is_some_and(|m| m.key == key) {
            std::fs::remove_dir_all(&dir)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::conformance;
    use super::*;

    #[test]
    fn a_put_is_read_back_by_range_and_kept_apart_per_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let a = DiskBucket::new(dir.path(), "team-a", "files").unwrap();
        let b = DiskBucket::new(dir.path(), "team-b", "files").unwrap();
        let stored = conformance::read_back_and_apart(&a, &b);
        // The same bucket opened again (a restart) has it.
        let again = DiskBucket::new(dir.path(), "team-a", "files").unwrap();
        assert_eq!(again.head("k").unwrap(), Some(stored));
        assert!(DiskBucket::new(dir.path(), "..", "files").is_err());
    }

    #[test]
    fn odd_keys_stay_in_their_bucket() {
        let dir = tempfile::tempdir().unwrap();
        let a = DiskBucket::new(dir.path(), "team-a", "files").unwrap();
        let b = DiskBucket::new(dir.path(), "team-b", "files").unwrap();
        conformance::odd_keys_stay_apart(&a, &b, limits::MAX_KEY);
    }

    #[test]
    fn a_condition_that_fails_stores_nothing_and_a_bad_digest_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let bucket = DiskBucket::new(dir.path(), "ns", "files").unwrap();
        conformance::conditions_and_digests(&bucket);
        let leftovers = std::fs::read_dir(dir.path().join("r2/ns/files/tmp")).unwrap();
        assert_eq!(leftovers.count(), 0, "refused bodies are removed");
    }

    #[test]
    fn multipart_parts_follow_r2_s_size_rules() {
        let dir = tempfile::tempdir().unwrap();
        let bucket = DiskBucket::new(dir.path(), "ns", "files").unwrap();
        conformance::multipart_size_rules(&bucket);
    }

    #[test]
    fn list_pages_by_cursor_and_groups_by_delimiter() {
        let dir = tempfile::tempdir().unwrap();
        let bucket = DiskBucket::new(dir.path(), "ns", "files").unwrap();
        conformance::list_pages(&bucket);
    }
}
