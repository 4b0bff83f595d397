//! `node:crypto`'s host functions beyond Web Crypto's: keyed hashers for
//! `createHmac`, copies of a running hash (`Hash.copy`), `pbkdf2Sync` and
//! `scryptSync`.
//! Hashers are the same handle-table entries as `DigestStream`'s (written
//! and finished by `digestStreamWrite`/`digestStreamEnd`), charged to the
//! Worker's memory budget while they live.

use std::rc::Rc;

use hmac::{Hmac, Mac};
use md5::Md5;
use sha1::Sha1;
use sha2::{Sha256, Sha384, Sha512};

use isolane_engine::api::Owner;
use isolane_engine::api::fits;
use isolane_engine::api::{HostError, HostResult};
use isolane_engine::api::{HostState, array_buffer};
use isolane_web::crypto::error::CryptoError;
use isolane_web::crypto::ops;
use isolane_web::crypto::params::Params;
use isolane_web::crypto::subtle::{HASHER_CHARGE, Hasher};

/// Longest HMAC key read (Node has no limit; a key longer than the hash's
/// block is hashed first, so this only bounds the copy).
const MAX_KEY: usize = 1 << 20;

/// An HMAC over `algorithm` (the Web Crypto name: `SHA-256`, `MD5`, ...).
fn new_hmac(algorithm: &str, key: &[u8]) -> Option<Hasher> {
    // `new_from_slice` takes a key of any length for HMAC.
    Some(match algorithm {
        "MD5" => Box::new(Hmac::<Md5>::new_from_slice(key).ok()?),
        "SHA-1" => Box::new(Hmac::<Sha1>::new_from_slice(key).ok()?),
        "SHA-256" => Box::new(Hmac::<Sha256>::new_from_slice(key).ok()?),
        "SHA-384" => Box::new(Hmac::<Sha384>::new_from_slice(key).ok()?),
        "SHA-512" => Box::new(Hmac::<Sha512>::new_from_slice(key).ok()?),
        _ => return None,
    })
}

host_fn! {
/// `hmacNew(algorithm, key)` → a hasher handle for `digestStreamWrite`/`End`.
pub(super) fn hmac_new<'s>(
    scope,
    host: Rc<HostState>,
    algorithm: String,
    key: Option<Vec<u8>>,
) -> HostResult<Option<v8::Local<'s, v8::Object>>> {
    let Some(key) = key else {
        return Err(CryptoError::Type("hmacNew: key must be a Uint8Array".to_owned()).into());
    };
    if key.len() > MAX_KEY {
        return Err(CryptoError::Type(format!("hmacNew: keys longer than {MAX_KEY} bytes are not supported")).into());
    }
    let hasher = new_hmac(&algorithm, &key)
        .ok_or_else(|| CryptoError::not_supported(format!("Digest method not supported: {algorithm}")))?;
    Ok(host
        .handles()
        .insert_object(scope, hasher, HASHER_CHARGE + key.len(), Owner::Isolate))
}
}

host_fn! {
/// `digestCopy(handle)` → a new hasher handle in the same state.
pub(super) fn digest_copy<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Object>>> {
    let copy = host
        .handles()
        .with_handle(scope, handle, |h: &mut Hasher| h.box_clone())
        .ok_or_else(|| CryptoError::Type("digestCopy: not a hasher".to_owned()))?;
    Ok(host
        .handles()
        .insert_object(scope, copy, HASHER_CHARGE, Owner::Isolate))
}
}

host_fn! {
/// `pbkdf2Sync(hash, password, salt, iterations, length)` → ArrayBuffer of
/// `length` bytes, on the isolate's thread, under Web Crypto's bounds on one
/// call's work (`ops::pbkdf2_check`), so one call holds the thread for a
/// bounded time and a loop of calls meets the CPU limit between them.
pub(super) fn pbkdf2_sync<'s>(
    scope,
    hash: String,
    password: Option<Vec<u8>>,
    salt: Option<Vec<u8>>,
    iterations: u32,
    length: u32,
) -> HostResult<Option<v8::Local<'s, v8::ArrayBuffer>>> {
    let (Some(password), Some(salt)) = (password, salt) else {
        return Err(CryptoError::Type("pbkdf2Sync: password and salt must be Uint8Arrays".to_owned()).into());
    };
    let params = Params {
        hash: Some(hash.clone()),
        iterations: Some(iterations),
        ..Params::default()
    };
    let bits = (length as usize).saturating_mul(8);
    let (bytes, iterations) = ops::pbkdf2_check(&params, Some(bits))?;
    let out = ops::pbkdf2(&hash, &password, &salt, iterations, bytes)?;
    Ok(array_buffer(scope, out))
}
}

/// Most `N × r × p` one scrypt call may cost: 8 times Node's default
/// (N 16384, r 8, p 1), so one call holds the thread for a bounded time.
const SCRYPT_MAX_WORK: u64 = 1 << 20;

/// Checks scrypt's cost (`n` is N's base-2 logarithm) and returns the bytes
/// its working memory takes (`128 × N × r`).
pub(super) fn scrypt_cost(log_n: u32, r: u32, p: u32) -> HostResult<usize> {
    let work = 1u64
        .checked_shl(log_n)
        .and_then(|n| n.checked_mul(u64::from(r)))
        .and_then(|nr| nr.checked_mul(u64::from(p)));
    match work {
        Some(work) if log_n < 64 && work <= SCRYPT_MAX_WORK => {
            Ok(128 * (1usize << log_n) * r as usize)
        }
        _ => Err(HostError::range_error(format!(
            "scrypt: N × r × p above {SCRYPT_MAX_WORK} is not supported"
        ))),
    }
}

host_fn! {
/// `scryptSync(password, salt, log2N, r, p, length)` → ArrayBuffer: scrypt
/// (the `scrypt` crate) on the isolate's thread. Its work is bounded per
/// call (`SCRYPT_MAX_WORK`) and its working memory must fit the Worker's
/// memory limit (else `memory_limit`).
pub(super) fn scrypt_sync<'s>(
    scope,
    password: Option<Vec<u8>>,
    salt: Option<Vec<u8>>,
    log_n: u32,
    r: u32,
    p: u32,
    length: u32,
) -> HostResult<Option<v8::Local<'s, v8::ArrayBuffer>>> {
    let (Some(password), Some(salt)) = (password, salt) else {
        return Err(CryptoError::Type("scryptSync: password and salt must be Uint8Arrays".to_owned()).into());
    };
    let memory = scrypt_cost(log_n, r, p)?;
    if !fits(scope, memory.saturating_add(length as usize)) {
        return Err(HostError::range_error(format!(
            "scrypt: {memory} bytes of working memory do not fit the Worker's memory limit"
        )));
    }
    let params = u8::try_from(log_n)
        .ok()
        .and_then(|log_n| scrypt::Params::new(log_n, r, p, length as usize).ok())
        .ok_or_else(|| HostError::range_error("Invalid scrypt params"))?;
    let mut out = vec![0u8; length as usize];
    scrypt::scrypt(&password, &salt, &params, &mut out)
        .map_err(|_| HostError::range_error("Invalid scrypt params"))?;
    Ok(array_buffer(scope, out))
}
}
