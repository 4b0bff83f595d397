//! Cloudflare's limits on KV operations, with Cloudflare's messages (as
//! workerd throws them: `TypeError`s for bad key names and a short
//! `cacheTtl`, `Error`s of the form `KV PUT failed: 413 …` for what the KV
//! service refuses).

/// The longest key, in UTF-8 bytes.
pub const MAX_KEY_BYTES: usize = 512;
/// The largest value, in bytes (25 MiB).
pub const MAX_VALUE_BYTES: usize = 25 << 20;
/// The largest metadata, as serialized JSON, in bytes.
pub const MAX_METADATA_BYTES: usize = 1024;
/// The shortest `expirationTtl`, and how far ahead an `expiration` must be,
/// in seconds.
pub const MIN_TTL_SECS: u64 = 60;
/// The shortest `cacheTtl`, in seconds (Cloudflare's).
pub const MIN_CACHE_TTL_SECS: u64 = 30;
/// The most keys one list returns (and its default).
pub const MAX_LIST_KEYS: usize = 1000;

/// An input Cloudflare's KV refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KvError {
    #[error("Key name cannot be empty.")]
    EmptyKey,
    #[error("\"{key}\" is not allowed as a key name.")]
    DotKey { key: &'static str },
    #[error(
        "KV {method} failed: 414 UTF-8 encoded length of {len} exceeds key length limit of {MAX_KEY_BYTES}."
    )]
    KeyTooLong { method: &'static str, len: usize },
    #[error("KV PUT failed: 413 Value length of {len} exceeds limit of {MAX_VALUE_BYTES}.")]
    ValueTooLarge { len: usize },
    /// The Worker's Kubernetes namespace stores its quota already (the
    /// node's `--kv-namespace-max-mib`); a write that does not grow what it
    /// stores, and a delete, still go through.
    #[error(
        "KV PUT failed: 413 The namespace's KV storage quota of {quota} bytes is used up; delete entries or shrink values first."
    )]
    QuotaExceeded { quota: u64 },
    #[error("KV PUT failed: 413 Metadata length of {len} exceeds limit of {MAX_METADATA_BYTES}.")]
    MetadataTooLarge { len: usize },
    #[error(
        "KV PUT failed: 400 Invalid expiration_ttl of {given}. Please specify integer greater than 0."
    )]
    TtlNotPositive { given: String },
    #[error(
        "KV PUT failed: 400 Invalid expiration_ttl of {given}. Expiration TTL must be at least {MIN_TTL_SECS}."
    )]
    TtlTooShort { given: String },
    #[error(
        "KV PUT failed: 400 Invalid expiration of {given}. Please specify integer greater than the current number of seconds since the UNIX epoch."
    )]
    ExpirationPast { given: String },
    #[error(
        "KV PUT failed: 400 Invalid expiration of {given}. Expiration times must be at least {MIN_TTL_SECS} seconds in the future."
    )]
    ExpirationTooSoon { given: String },
    #[error(
        "KV GET failed: 400 Invalid cache_ttl of {given}. Cache TTL must be at least {MIN_CACHE_TTL_SECS}."
    )]
    CacheTtlTooShort { given: String },
    #[error(
        "KV LIST failed: 400 Invalid key_count_limit of {given}. Please specify an integer greater than 0."
    )]
    ListLimitNotPositive { given: String },
    #[error(
        "KV LIST failed: 400 Invalid key_count_limit of {given}. Please specify an integer less than {MAX_LIST_KEYS}."
    )]
    ListLimitTooLarge { given: String },
    #[error("KV LIST failed: 400 Invalid cursor.")]
    InvalidCursor,
}

impl KvError {
    /// Whether workerd throws it as a `TypeError` (else an `Error`).
    pub fn is_type_error(&self) -> bool {
        matches!(
            self,
            KvError::EmptyKey | KvError::DotKey { .. } | KvError::CacheTtlTooShort { .. }
        )
    }
}

/// A number as JavaScript prints it (integers without a fraction).
fn js_number(n: f64) -> String {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else if n.is_nan() {
        "NaN".to_owned()
    } else {
        format!("{n}")
    }
}

/// A key for `method` (`GET`, `PUT`, `DELETE`).
pub fn check_key(method: &'static str, key: &str) -> Result<(), KvError> {
    match key {
        "" => Err(KvError::EmptyKey),
        "." => Err(KvError::DotKey { key: "." }),
        ".." => Err(KvError::DotKey { key: ".." }),
        _ if key.len() > MAX_KEY_BYTES => Err(KvError::KeyTooLong {
            method,
            len: key.len(),
        }),
        _ => Ok(()),
    }
}

/// A value of `len` bytes.
pub fn check_value(len: usize) -> Result<(), KvError> {
    if len > MAX_VALUE_BYTES {
        return Err(KvError::ValueTooLarge { len });
    }
    Ok(())
}

/// Metadata of `len` bytes as JSON.
pub fn check_metadata(len: usize) -> Result<(), KvError> {
    if len > MAX_METADATA_BYTES {
        return Err(KvError::MetadataTooLarge { len });
    }
    Ok(())
}

/// `cacheTtl`: at least [`MIN_CACHE_TTL_SECS`], else a `TypeError` (how
/// long this node's cache may answer the read: `kv::DEFAULT_CACHE_TTL`).
pub fn check_cache_ttl(ttl: Option<f64>) -> Result<(), KvError> {
    match ttl {
        Some(ttl) if ttl.is_nan() || ttl < MIN_CACHE_TTL_SECS as f64 => {
            Err(KvError::CacheTtlTooShort {
                given: js_number(ttl),
            })
        }
        _ => Ok(()),
    }
}

/// When an entry written at `now` expires: `expirationTtl` seconds from
/// now when given (it wins over `expiration`), else `expiration`; each at
/// least [`MIN_TTL_SECS`] ahead.
pub fn expiration(
    expiration: Option<f64>,
    ttl: Option<f64>,
    now: u64,
) -> Result<Option<u64>, KvError> {
    if let Some(ttl) = ttl {
        let given = || js_number(ttl);
        if ttl.is_nan() || ttl.trunc() <= 0.0 {
            return Err(KvError::TtlNotPositive { given: given() });
        }
        if ttl.trunc() < MIN_TTL_SECS as f64 {
            return Err(KvError::TtlTooShort { given: given() });
        }
        let ttl = if ttl >= u64::MAX as f64 {
            u64::MAX
        } else {
            ttl as u64
        };
        return Ok(Some(now.saturating_add(ttl)));
    }
    let Some(at) = expiration else {
        return Ok(None);
    };
    let given = || js_number(at);
    if at.is_nan() || at.trunc() <= now as f64 {
        return Err(KvError::ExpirationPast { given: given() });
    }
    if at.trunc() < now.saturating_add(MIN_TTL_SECS) as f64 {
        return Err(KvError::ExpirationTooSoon { given: given() });
    }
    Ok(Some(if at >= u64::MAX as f64 {
        u64::MAX
    } else {
        at as u64
    }))
}

/// A list's `limit`: 1 to [`MAX_LIST_KEYS`], that maximum when not given.
pub fn list_limit(limit: Option<f64>) -> Result<usize, KvError> {
    let Some(limit) = limit else {
        return Ok(MAX_LIST_KEYS);
    };
    if limit.is_nan() || limit.trunc() < 1.0 {
        return Err(KvError::ListLimitNotPositive {
            given: js_number(limit),
        });
    }
    if limit.trunc() > MAX_LIST_KEYS as f64 {
        return Err(KvError::ListLimitTooLarge {
            given: js_number(limit),
        });
    }
    Ok(limit as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_values_and_metadata_are_bounded_with_cloudflares_messages() {
        assert_eq!(check_key("GET", &"k".repeat(512)), Ok(()));
        let long = check_key("GET", &"k".repeat(513)).unwrap_err();
        assert_eq!(
            long.to_string(),
            "KV GET failed: 414 UTF-8 encoded length of 513 exceeds key length limit of 512."
        );
        assert!(!long.is_type_error());
        // Bytes, not characters.
        assert!(check_key("PUT", &"é".repeat(257)).is_err());
        assert!(check_key("GET", "").unwrap_err().is_type_error());
        assert_eq!(
            check_key("GET", "..").unwrap_err().to_string(),
            "\"..\" is not allowed as a key name."
        );
        assert_eq!(check_value(MAX_VALUE_BYTES), Ok(()));
        assert_eq!(
            check_value(MAX_VALUE_BYTES + 1).unwrap_err().to_string(),
            "KV PUT failed: 413 Value length of 26214401 exceeds limit of 26214400."
        );
        assert_eq!(check_metadata(1024), Ok(()));
        assert!(check_metadata(1025).is_err());
    }

    #[test]
    fn expirations_are_at_least_a_minute_ahead() {
        let now = 1_000_000;
        assert_eq!(expiration(None, None, now), Ok(None));
        assert_eq!(expiration(None, Some(60.0), now), Ok(Some(now + 60)));
        assert_eq!(
            expiration(None, Some(59.0), now).unwrap_err().to_string(),
            "KV PUT failed: 400 Invalid expiration_ttl of 59. Expiration TTL must be at least 60."
        );
        assert!(matches!(
            expiration(None, Some(0.0), now),
            Err(KvError::TtlNotPositive { .. })
        ));
        assert!(matches!(
            expiration(None, Some(f64::NAN), now),
            Err(KvError::TtlNotPositive { .. })
        ));
        assert_eq!(
            expiration(Some(1_000_060.0), None, now),
            Ok(Some(1_000_060))
        );
        assert!(matches!(
            expiration(Some(1_000_059.0), None, now),
            Err(KvError::ExpirationTooSoon { .. })
        ));
        assert!(matches!(
            expiration(Some(5.0), None, now),
            Err(KvError::ExpirationPast { .. })
        ));
        // The TTL wins over an expiration.
        assert_eq!(expiration(Some(5.0), Some(120.0), now), Ok(Some(now + 120)));
    }

    #[test]
    fn list_limits_are_one_to_a_thousand() {
        assert_eq!(list_limit(None), Ok(1000));
        assert_eq!(list_limit(Some(1000.0)), Ok(1000));
        assert_eq!(list_limit(Some(1.0)), Ok(1));
        assert!(list_limit(Some(0.0)).is_err());
        assert!(list_limit(Some(1001.0)).is_err());
        assert_eq!(check_cache_ttl(Some(60.0)), Ok(()));
        assert_eq!(check_cache_ttl(Some(45.0)), Ok(()));
        assert_eq!(check_cache_ttl(Some(30.0)), Ok(()));
        assert!(check_cache_ttl(Some(29.0)).is_err_and(|e| e.is_type_error()));
    }
}
