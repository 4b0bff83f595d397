//! R2 buckets (`isolane-bindings`' r2 unit): objects of one Kubernetes
//! namespace's bucket, behind [`R2Bucket`] so that another backend (an
//! S3-compatible store for a cluster) can follow `isolane dev`'s local
//! folder ([`disk`]).
//!
//! Nothing here holds a whole object in memory: a body being written is a
//! [`R2Upload`] (a temporary file the caller appends to, digested as it
//! goes), a body being read is a [`R2Read`] the caller asks for one range
//! at a time. Every method blocks (file I/O): callers run them off the
//! engine's threads. R2's rules and messages are checked here
//! ([`limits`]), so every backend refuses the same inputs the same way.

#[cfg(test)]
mod conformance;
pub mod disk;
mod list;
pub mod s3;
mod upload;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use upload::R2Upload;

/// R2's limits (developers.cloudflare.com/r2/platform/limits/).
pub mod limits {
    /// A key's bytes.
    pub const MAX_KEY: usize = 1024;
    /// One object put in one go, and the sum of a multipart upload's
    /// parts: 5 GiB less 5 MiB, as R2's single put.
    pub const MAX_OBJECT: u64 = 5 * 1024 * 1024 * 1024 - 5 * 1024 * 1024;
    /// Custom metadata's keys and values together.
    pub const MAX_METADATA: usize = 8192;
    /// Objects one `list` answers.
    pub const MAX_LIST: usize = 1000;
    /// ... when it includes metadata.
    pub const MAX_LIST_WITH_METADATA: usize = 100;
    /// A multipart upload's parts but the last.
    pub const MIN_PART: u64 = 5 * 1024 * 1024;
    /// A multipart upload's part numbers: 1 to this.
    pub const MAX_PARTS: u32 = 10_000;
}

/// What an R2 operation fails with: R2's code and message (the binding
/// adds the operation: `put: … (10020)`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum R2Error {
    #[error("The specified object name is not valid.")]
    InvalidObjectName,
    #[error("Your proposed upload exceeds the maximum allowed object size.")]
    EntityTooLarge,
    #[error("Your proposed upload is smaller than the minimum allowed object size.")]
    EntityTooSmall,
    #[error("Your metadata headers exceed the maximum allowed metadata size.")]
    MetadataTooLarge,
    #[error("MaxKeys params must be positive integer <= 1000.")]
    InvalidMaxKeys,
    #[error("The specified multipart upload does not exist.")]
    NoSuchUpload,
    #[error("One or more of the specified parts could not be found.")]
    InvalidPart,
    #[error("Metadata missing or invalid")]
    InvalidArgument,
    #[error(
        "The {algorithm} checksum you specified did not match what we received.\nYou provided a {algorithm} checksum with value: {provided}\nActual {algorithm} was: {actual}"
    )]
    BadDigest {
        algorithm: &'static str,
        provided: String,
        actual: String,
    },
    #[error("There was a problem with the multipart upload.")]
    BadUpload,
    /// Not served by this store (a cluster's, for now: docs/r2.md).
    #[error("R2 buckets are not served by this node's store yet (docs/r2.md)")]
    NotServed,
    /// The disk failed: logged by the caller, R2's internal error to the
    /// Worker.
    #[error("We encountered an internal error. Please try again.")]
    Internal(String),
}

impl R2Error {
    /// R2's code for the error (`v4Code`).
    pub fn code(&self) -> u32 {
        match self {
            R2Error::InvalidObjectName => 10020,
            R2Error::EntityTooLarge => 100_100,
            R2Error::EntityTooSmall => 10011,
            R2Error::MetadataTooLarge => 10012,
            R2Error::InvalidMaxKeys => 10022,
            R2Error::NoSuchUpload => 10024,
            R2Error::InvalidPart => 10025,
            R2Error::InvalidArgument => 10029,
            R2Error::BadDigest { .. } => 10037,
            R2Error::BadUpload => 10048,
            R2Error::NotServed | R2Error::Internal(_) => 10001,
        }
    }
}

impl From<std::io::Error> for R2Error {
    fn from(error: std::io::Error) -> Self {
        R2Error::Internal(error.to_string())
    }
}

/// An object's metadata (an `R2Object` without its range).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct R2Object {
    pub key: String,
    pub version: String,
    pub size: u64,
    pub etag: String,
    /// Milliseconds since the epoch.
    pub uploaded: u64,
    /// `httpMetadata` as JavaScript gave it (`contentType`, …).
    pub http_metadata: serde_json::Map<String, serde_json::Value>,
    pub custom_metadata: BTreeMap<String, String>,
    /// Hex digests by field (`md5`, `sha1`, …).
    pub checksums: BTreeMap<String, String>,
    pub storage_class: String,
}

/// What a put (or a multipart upload) stores beside the body.
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct R2PutOptions {
    pub http_metadata: serde_json::Map<String, serde_json::Value>,
    pub custom_metadata: BTreeMap<String, String>,
    /// Digests the body must have, hex by field (`md5`, `sha1`, …).
    pub checksums: BTreeMap<String, String>,
    pub only_if: Option<R2Conditional>,
    pub storage_class: Option<String>,
}

/// One etag of a condition.
#[derive(Deserialize, Serialize, Clone, Debug)]
pub struct R2Etag {
    /// `strong`, `weak` or `wildcard`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub value: String,
}

/// `onlyIf`, as JavaScript canonicalised it (an object or Headers).
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct R2Conditional {
    pub etag_matches: Option<Vec<R2Etag>>,
    pub etag_does_not_match: Option<Vec<R2Etag>>,
    /// Milliseconds since the epoch.
    pub uploaded_before: Option<f64>,
    pub uploaded_after: Option<f64>,
    pub seconds_granularity: bool,
}

impl R2Conditional {
    /// Whether the condition holds for `object` (`None`: there is none).
    pub fn holds(&self, object: Option<&R2Object>) -> bool {
        let Some(object) = object else {
            return self.etag_matches.is_none() && self.uploaded_after.is_none();
        };
        let includes = |etags: &[R2Etag], weak: bool| {
            etags.iter().any(|e| {
                e.kind == "wildcard" || (e.value == object.etag && (e.kind == "strong" || weak))
            })
        };
        let if_match = self
            .etag_matches
            .as_ref()
            .is_none_or(|e| includes(e, false));
        let if_none_match = self
            .etag_does_not_match
            .as_ref()
            .is_none_or(|e| !includes(e, true));
        let truncate = |ms: f64| {
            if self.seconds_granularity {
                (ms / 1000.0).floor() * 1000.0
            } else {
                ms
            }
        };
        #[allow(clippy::cast_precision_loss)]
        let uploaded = truncate(object.uploaded as f64);
        let modified_since = self
            .uploaded_after
            .is_none_or(|after| truncate(after) < uploaded)
            || (self.etag_does_not_match.is_some() && if_none_match);
        let unmodified_since = self
            .uploaded_before
            .is_none_or(|before| uploaded < truncate(before))
            || (self.etag_matches.is_some() && if_match);
        if_match && if_none_match && modified_since && unmodified_since
    }
}

/// `list`'s options.
#[derive(Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase", default)]
pub struct R2ListOptions {
    pub limit: Option<f64>,
    pub prefix: Option<String>,
    pub cursor: Option<String>,
    pub delimiter: Option<String>,
    pub start_after: Option<String>,
    pub include: Vec<String>,
}

/// A page of `list`.
#[derive(Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct R2List {
    pub objects: Vec<R2Object>,
    pub truncated: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    pub delimited_prefixes: Vec<String>,
}

/// A body being read: a range at a time.
pub trait R2Read: Send {
    /// Up to `len` bytes from `offset`: fewer only at the end.
    fn read_at(&mut self, offset: u64, len: usize) -> Result<Vec<u8>, R2Error>;
}

/// One bucket of one Kubernetes namespace.
pub trait R2Bucket: Send + Sync + std::fmt::Debug {
    fn head(&self, key: &str) -> Result<Option<R2Object>, R2Error>;
    /// The object and, unless `only_if` fails, its body.
    #[allow(clippy::type_complexity)]
    fn get(
        &self,
        key: &str,
        only_if: Option<&R2Conditional>,
    ) -> Result<Option<(R2Object, Option<Box<dyn R2Read>>)>, R2Error>;
    /// A new body to write, for [`R2Bucket::put`] or
    /// [`R2Bucket::upload_part`].
    fn new_body(&self, digests: &[String]) -> Result<R2Upload, R2Error>;
    /// Stores `body` under `key`; `None` when `options.only_if` fails
    /// (checked and written atomically).
    fn put(
        &self,
        key: &str,
        body: R2Upload,
        options: &R2PutOptions,
    ) -> Result<Option<R2Object>, R2Error>;
    fn delete(&self, keys: &[String]) -> Result<(), R2Error>;
    fn list(&self, options: &R2ListOptions) -> Result<R2List, R2Error>;
    /// A new multipart upload's id.
    fn create_upload(&self, key: &str, options: &R2PutOptions) -> Result<String, R2Error>;
    /// Part `number`'s etag.
    fn upload_part(
        &self,
        key: &str,
        upload: &str,
        number: u32,
        body: R2Upload,
    ) -> Result<String, R2Error>;
    fn complete_upload(
        &self,
        key: &str,
        upload: &str,
        parts: &[(u32, String)],
    ) -> Result<R2Object, R2Error>;
    fn abort_upload(&self, key: &str, upload: &str) -> Result<(), R2Error>;
}

/// A key R2 takes: at most [`limits::MAX_KEY`] bytes.
pub fn check_key(key: &str) -> Result<(), R2Error> {
    if key.len() > limits::MAX_KEY {
        return Err(R2Error::InvalidObjectName);
    }
    Ok(())
}

/// Custom metadata R2 takes: at most [`limits::MAX_METADATA`] (R2 counts
/// a string with a character past U+00FF twice).
pub fn check_metadata(metadata: &BTreeMap<String, String>) -> Result<(), R2Error> {
    let len = |s: &str| {
        let chars = s.encode_utf16().count();
        if s.chars().any(|c| u32::from(c) >= 256) {
            chars * 2
        } else {
            chars
        }
    };
    let total: usize = metadata.iter().map(|(k, v)| len(k) + len(v)).sum();
    if total > limits::MAX_METADATA {
        return Err(R2Error::MetadataTooLarge);
    }
    Ok(())
}

/// A random id (versions, uploads): 32 hex digits.
pub(crate) fn random_id() -> Result<String, R2Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| R2Error::Internal(e.to_string()))?;
    Ok(hex::encode(bytes))
}

/// Milliseconds since the epoch.
pub(crate) fn now_ms() -> u64 {
    u64::try_from(crate::now_ms()).unwrap_or(0)
}
