//! Durable Objects' storage (`state.storage`): what an object's data is
//! keyed by ([`ObjectScope`]), what one write holds ([`ObjectWrite`], applied
//! in one transaction) and what a list asks for ([`ObjectList`]).
//!
//! An object's keys live under its Kubernetes namespace, its class and its
//! id, so a Worker of another namespace never reaches them: the namespace
//! and the class come from the Worker's identity and bundle, never from
//! JavaScript.

pub mod limits;

pub use limits::ObjectError;

/// Where an object's keys live.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectScope {
    /// The Kubernetes namespace of the hosting Worker.
    pub namespace: String,
    /// The object's class, as the binding names it.
    pub class: String,
    /// The object's id (64 hex digits).
    pub id: String,
}

impl ObjectScope {
    pub fn new(
        namespace: impl Into<String>,
        class: impl Into<String>,
        id: impl Into<String>,
    ) -> Self {
        Self {
            namespace: namespace.into(),
            class: class.into(),
            id: id.into(),
        }
    }
}

/// One atomic write: `delete_all` first (when set), then each key set to
/// its value (`None`: deleted), in order; all of it or nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectWrite {
    pub delete_all: bool,
    pub entries: Vec<(String, Option<Vec<u8>>)>,
    /// The owner epoch the writing instance took (`Store::take_object`):
    /// the write is refused ([`ObjectError::Fenced`]) unless the object's
    /// epoch is still this one. `None`: unfenced.
    pub fence: Option<i64>,
}

impl ObjectWrite {
    /// Checks every key and value against the limits.
    pub fn check(&self) -> Result<(), ObjectError> {
        for (key, value) in &self.entries {
            limits::check_key(key)?;
            if let Some(value) = value {
                limits::check_value(value.len())?;
            }
        }
        Ok(())
    }
}

/// One record for an object's log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SqlAppend {
    /// The record (`crate::sql::ObjectDatabase::take`).
    pub record: Vec<u8>,
    /// A snapshot of the whole database: the records before it go.
    pub snapshot: bool,
    /// The owner epoch of the writing instance (`Store::take_object`):
    /// refused unless it is still the object's. `None`: unfenced.
    pub fence: Option<i64>,
}

/// The bounds a write is held to: what the Kubernetes namespace stores
/// in all, and what the object stores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct WriteQuota {
    pub(crate) namespace: Option<u64>,
    pub(crate) object: Option<u64>,
}

impl WriteQuota {
    /// The refusal of a write that took the namespace from `before` to
    /// `after` bytes and the object from `object_before` to `object_after`.
    pub(crate) fn check(
        &self,
        (before, after): (i64, i64),
        (object_before, object_after): (i64, i64),
    ) -> Result<(), ObjectError> {
        let over = |limit: u64, before: i64, after: i64| {
            after > before && u64::try_from(after).unwrap_or(0) > limit
        };
        if let Some(quota) = self.namespace.filter(|q| over(*q, before, after)) {
            return Err(ObjectError::QuotaExceeded { quota });
        }
        if let Some(limit) = self
            .object
            .filter(|l| over(*l, object_before, object_after))
        {
            return Err(ObjectError::ObjectFull { limit });
        }
        Ok(())
    }

    /// Whether either bound is set (else usage need not be read).
    pub(crate) fn any(&self) -> bool {
        self.namespace.is_some() || self.object.is_some()
    }
}

/// `list(options)`: keys in UTF-8 byte order from `start` (inclusive) to
/// `end` (exclusive), starting with `prefix`, at most `limit`, descending
/// when `reverse`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectList {
    pub start: Option<String>,
    pub end: Option<String>,
    pub prefix: Option<String>,
    pub limit: Option<usize>,
    pub reverse: bool,
}

/// A list as one range query every backend runs: keys in
/// `[low, high)`, ordered as `reverse` says, at most `limit`.
pub(crate) struct Range {
    pub(crate) low: Vec<u8>,
    pub(crate) high: Option<Vec<u8>>,
    pub(crate) limit: i64,
    pub(crate) reverse: bool,
}

impl Range {
    pub(crate) fn new(options: &ObjectList) -> Self {
        let prefix = options.prefix.as_deref().unwrap_or("").as_bytes();
        let start = options.start.as_deref().unwrap_or("").as_bytes();
        let low = prefix.max(start).to_vec();
        let prefix_end = crate::kv::prefix_end(prefix);
        let end = options.end.as_ref().map(|e| e.as_bytes().to_vec());
        let high = match (prefix_end, end) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let limit = options
            .limit
            .map_or(i64::MAX, |l| i64::try_from(l).unwrap_or(i64::MAX));
        Self {
            low,
            high,
            limit,
            reverse: options.reverse,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_the_tightest_of_prefix_start_and_end() {
        let range = Range::new(&ObjectList {
            prefix: Some("b".into()),
            start: Some("a".into()),
            end: Some("bb".into()),
            ..ObjectList::default()
        });
        assert_eq!(range.low, b"b");
        assert_eq!(range.high.as_deref(), Some(&b"bb"[..]));
        let range = Range::new(&ObjectList {
            prefix: Some("b".into()),
            start: Some("bz".into()),
            ..ObjectList::default()
        });
        assert_eq!(range.low, b"bz");
        assert_eq!(range.high.as_deref(), Some(&b"c"[..]));
        assert_eq!(range.limit, i64::MAX);
    }
}
