//! Workers KV's data model: what an entry is, what a write and a list ask
//! for, and where an entry lives ([`KvScope`]).

mod cache;
pub mod limits;

pub use cache::DEFAULT_CACHE_TTL;
pub(crate) use cache::KvCache;

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

/// Whether `write` stores more than the entry it replaces, of `old` bytes
/// (key, value and metadata; `None`: there was none).
pub(crate) fn grows(write: &KvWrite, old: Option<i64>) -> bool {
    let new = write.key.len() + write.value.len() + write.metadata.as_ref().map_or(0, String::len);
    i64::try_from(new).map_or(true, |new| old.is_none_or(|old| new > old))
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

/// A list as a range query: the keys after `start` (from it when
/// `inclusive`), below `end` when there is one, at most `fetch` of them —
/// one more than the page, to know whether another follows. Every
/// backend runs this one query and pages its rows with [`ListQuery::page`].
pub(crate) struct ListQuery {
    pub(crate) start: Vec<u8>,
    pub(crate) inclusive: bool,
    pub(crate) end: Option<Vec<u8>>,
    pub(crate) limit: usize,
    pub(crate) fetch: i64,
}

impl ListQuery {
    pub(crate) fn new(options: &KvListOptions) -> Result<Self, KvError> {
        let limit = options
            .limit
            .unwrap_or(limits::MAX_LIST_KEYS)
            .clamp(1, limits::MAX_LIST_KEYS);
        let prefix = options.prefix.as_bytes();
        let (start, inclusive) = match options.cursor.as_deref() {
            Some(cursor) if !cursor.is_empty() => (cursor_key(cursor)?.into_bytes(), false),
            _ => (prefix.to_vec(), true),
        };
        Ok(Self {
            start,
            inclusive,
            end: prefix_end(prefix),
            limit,
            fetch: i64::try_from(limit + 1).unwrap_or(i64::MAX),
        })
    }

    /// The page of `rows` (key, expiration, metadata), in key order.
    pub(crate) fn page(
        &self,
        rows: impl IntoIterator<Item = (Vec<u8>, Option<u64>, Option<String>)>,
    ) -> Result<KvList, CorruptKey> {
        let mut keys = Vec::with_capacity(self.limit.min(64));
        let mut more = false;
        for (key, expiration, metadata) in rows {
            if keys.len() == self.limit {
                more = true;
                break;
            }
            let name = String::from_utf8(key).map_err(|_| CorruptKey)?;
            keys.push(KvKey {
                name,
                expiration,
                metadata,
            });
        }
        let cursor = more
            .then(|| keys.last().map(|key: &KvKey| cursor_after(&key.name)))
            .flatten();
        Ok(KvList {
            keys,
            list_complete: !more,
            cursor,
        })
    }
}

/// A stored key that is not UTF-8: the store holds what this crate did not
/// write ([`crate::StoreError::Corrupt`]).
#[derive(Debug)]
pub(crate) struct CorruptKey;

/// The smallest byte string greater than every string starting with
/// `prefix`, or `None` when there is none (all `0xff`, or empty).
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// An expiration as a database stores it (seconds, at most `i64::MAX`).
pub(crate) fn stored(expiration: Option<u64>) -> Option<i64> {
    expiration.map(|at| i64::try_from(at).unwrap_or(i64::MAX))
}

/// An expiration as a database stored it.
pub(crate) fn expiration_of(stored: Option<i64>) -> Option<u64> {
    stored.and_then(|at| u64::try_from(at).ok())
}
