//! Cloudflare's limits on a Durable Object's storage (its key-value API):
//! keys up to 2 KiB, values up to 128 KiB once serialized, at most 128 keys
//! in one get, put or delete.

/// The longest key, in UTF-8 bytes.
pub const MAX_KEY_BYTES: usize = 2048;
/// The largest value, serialized, in bytes.
pub const MAX_VALUE_BYTES: usize = 128 << 10;
/// The most keys one `get`, `put` or `delete` takes.
pub const MAX_KEYS: usize = 128;

/// What a Durable Object's storage refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObjectError {
    #[error("Keys cannot be larger than {MAX_KEY_BYTES} bytes; this one is {len} bytes.")]
    KeyTooLong { len: usize },
    #[error(
        "Values cannot be larger than {MAX_VALUE_BYTES} bytes; this one is {len} bytes once serialized."
    )]
    ValueTooLarge { len: usize },
    #[error(
        "Operations on more than {MAX_KEYS} keys at once are not allowed; this one has {count}."
    )]
    TooManyKeys { count: usize },
    /// The Worker's Kubernetes namespace stores its quota of object
    /// storage already; a write that does not grow it, and a delete, still
    /// go through.
    #[error(
        "Durable Object storage write failed: the namespace's storage quota of {quota} bytes is used up; delete keys or shrink values first."
    )]
    QuotaExceeded { quota: u64 },
    /// The object stores its limit already (`Store::with_object_quota`);
    /// a write that does not grow it, and a delete, still go through.
    #[error(
        "Durable Object storage write failed: this object's storage limit of {limit} bytes is used up; delete keys or shrink values first."
    )]
    ObjectFull { limit: u64 },
    /// The writing instance's owner epoch is no longer the object's:
    /// another instance took the object since (`Store::take_object`), so
    /// this one is stale and writes nothing.
    #[error(
        "Durable Object storage write refused: this instance of the object is no longer its owner (its epoch is {mine}, the object's {current}); the call may be retried."
    )]
    Fenced { mine: i64, current: i64 },
}

/// `Ok` for a key of at most [`MAX_KEY_BYTES`].
pub fn check_key(key: &str) -> Result<(), ObjectError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(ObjectError::KeyTooLong { len: key.len() });
    }
    Ok(())
}

/// `Ok` for a serialized value of at most [`MAX_VALUE_BYTES`].
pub fn check_value(len: usize) -> Result<(), ObjectError> {
    if len > MAX_VALUE_BYTES {
        return Err(ObjectError::ValueTooLarge { len });
    }
    Ok(())
}

/// `Ok` for at most [`MAX_KEYS`] keys.
pub fn check_count(count: usize) -> Result<(), ObjectError> {
    if count > MAX_KEYS {
        return Err(ObjectError::TooManyKeys { count });
    }
    Ok(())
}
