//! Workers KV's data model: what an entry is, what a write and a list ask
//! for, and where an entry lives ([`KvScope`]).

pub mod limits;

pub use limits::KvError;

use base64ct::{Base64UrlUnpadded, Encoding as _};

/// Where an entry lives: the Worker's Kubernetes namespace and the KV
/// namespace's name. Two scopes that differ in either never share an entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KvScope {
    /// The Kubernetes namespace of the Worker (from its id, never from
    /// JavaScript).
    pub namespace: String,
    /// The KV namespace's name (from the Worker's bundle).
    pub kv: String,
}

impl KvScope {
    pub fn new(namespace: impl Into<String>, kv: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            kv: kv.into(),
        }
    }
}

/// A live entry as read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvEntry {
    pub value: Vec<u8>,
    /// The metadata as JSON text, when the write gave some.
    pub metadata: Option<String>,
    /// When it expires, in seconds since the Unix epoch.
    pub expiration: Option<u64>,
}

/// A `put`, as the Worker asked for it (checked by the store with
/// [`KvWrite::check`] before anything is written).
#[derive(Clone, Debug, PartialEq)]
pub struct KvWrite {
    pub key: String,
    pub value: Vec<u8>,
    /// `JSON.stringify(metadata)`.
    pub metadata: Option<String>,
    /// `expiration`, seconds since the Unix epoch, as given.
    pub expiration: Option<f64>,
    /// `expirationTtl`, seconds from now, as given.
    pub expiration_ttl: Option<f64>,
}

impl KvWrite {
    /// Checks the write against Cloudflare's limits at time `now` (seconds
    /// since the epoch) and returns when the entry expires.
    pub fn check(&self, now: u64) -> Result<Option<u64>, KvError> {
        limits::check_key("PUT", &self.key)?;
        limits::check_value(self.value.len())?;
        if let Some(metadata) = &self.metadata {
            limits::check_metadata(metadata.len())?;
        }
        limits::expiration(self.expiration, self.expiration_ttl, now)
    }
}

/// One key of a list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvKey {
    pub name: String,
    pub expiration: Option<u64>,
    pub metadata: Option<String>,
}

/// `list(options)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KvListOptions {
    pub prefix: String,
    /// 1 to [`limits::MAX_LIST_KEYS`]; `None` is that maximum.
    pub limit: Option<usize>,
    /// A cursor from a previous list of the same scope.
    pub cursor: Option<String>,
}

/// A page of keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KvList {
    pub keys: Vec<KvKey>,
    /// Whether no keys follow this page.
    pub list_complete: bool,
    /// Where the next page starts, when one follows.
    pub cursor: Option<String>,
}

/// The opaque cursor after `key`.
pub(crate) fn cursor_after(key: &str) -> String {
    Base64UrlUnpadded::encode_string(key.as_bytes())
}

/// The key a cursor was made after; `Err` for anything not made by
/// [`cursor_after`].
pub(crate) fn cursor_key(cursor: &str) -> Result<String, KvError> {
    Base64UrlUnpadded::decode_vec(cursor)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or(KvError::InvalidCursor)
}
