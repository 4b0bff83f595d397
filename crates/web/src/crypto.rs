//! `host.randomFill`, `host.randomUUID` and `host.digest`; the rest of Web
//! Crypto (`crypto.subtle` keys and operations, `DigestStream`,
//! `timingSafeEqual`) is in the modules below.

pub mod aws_lc;
pub mod error;
mod fast_verify;
pub mod formats;
pub mod key;
pub mod offload;
pub mod ops;
pub mod params;
pub mod subtle;

use std::rc::Rc;

use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use isolane_engine::api::{ErrorClass, HostError, HostResult, HostState, Unit, array_buffer};

/// Web Crypto: `crypto.getRandomValues`/`randomUUID`, `crypto.subtle`,
/// `CryptoKey`, `crypto.DigestStream`. Keys and hashers live in the
/// isolate's handle table; the unit's state is its offload slot.
pub(crate) fn unit() -> Unit {
    Unit::new("crypto")
        .js(&["14_crypto.js"])
        .function("randomFill", random_fill)
        .function("randomUUID", random_uuid)
        .function("digest", digest)
        .function("cryptoImportKey", subtle::import_key)
        .function("cryptoExportKey", subtle::export_key)
        .function("cryptoGenerateKey", subtle::generate_key)
        .function("cryptoSign", subtle::sign)
        .function("cryptoVerify", subtle::verify)
        .function("cryptoCipher", subtle::cipher)
        .function("cryptoDeriveBits", subtle::derive_bits)
        .function("digestStreamNew", subtle::digest_stream_new)
        .function("digestStreamWrite", subtle::digest_stream_write)
        .function("digestStreamEnd", subtle::digest_stream_end)
        .function("timingSafeEqual", subtle::timing_safe_equal)
        .state::<CryptoState>()
}

/// The crypto unit's per-isolate state.
pub struct CryptoState {
    /// One expensive operation at a time per isolate (see `offload.rs`).
    pub offload: crate::offload::Slot,
}

impl Default for CryptoState {
    fn default() -> Self {
        Self {
            offload: crate::offload::slot(),
        }
    }
}

const MAX_RANDOM_BYTES: usize = 65_536;

host_fn! {
/// `randomFill(u8)`: fills the view in place and returns it.
fn random_fill<'s>(
    _scope,
    array: v8::Local<'s, v8::Value>,
) -> HostResult<v8::Local<'s, v8::Value>> {
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(array) else {
        return Err(HostError::type_error(
            "randomFill: argument must be an integer TypedArray",
        ));
    };
    let len = view.byte_length();
    if len > MAX_RANDOM_BYTES {
        return Err(HostError::new(
            ErrorClass::QuotaExceeded,
            format!(
                "The ArrayBufferView's byte length ({len}) exceeds the number of bytes of entropy available via this API ({MAX_RANDOM_BYTES})"
            ),
        ));
    }
    let mut bytes = vec![0u8; len];
    if getrandom::fill(&mut bytes).is_err() {
        return Err(HostError::type_error(
            "randomFill: the system's random source failed",
        ));
    }
    if len > 0 {
        // SAFETY: `data()` points at the view's first byte and the view is
        // `len` bytes long; no JS runs while this callback holds the thread.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), view.data().cast::<u8>(), len) };
    }
    Ok(array)
}
}

host_fn! {
/// `randomUUID()`: an RFC 9562 version 4 UUID.
fn random_uuid<'s>(scope) -> HostResult<Option<v8::Local<'s, v8::String>>> {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        return Err(HostError::type_error(
            "randomUUID: the system's random source failed",
        ));
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex = hex::encode(b);
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    );
    Ok(v8::String::new(scope, &uuid))
}
}

/// Bytes hashed between two looks at the watchdog: ~1 ms of SHA-256.
const DIGEST_STEP: usize = 1 << 20;

host_fn! {
/// `digest(algorithm, u8)` → ArrayBuffer.
///
/// Hashes the view in place, in steps, and stops as soon as the watchdog has
/// terminated the turn (the request ran out of CPU time): a digest of a huge
/// buffer costs at most one step more than the worker's CPU limit.
fn digest<'s>(
    scope,
    algorithm: String,
    data: v8::Local<'s, v8::Value>,
    host: Rc<HostState>,
) -> HostResult<Option<v8::Local<'s, v8::ArrayBuffer>>> {
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(data) else {
        return Err(HostError::type_error("digest: data must be a BufferSource"));
    };
    let len = view.byte_length();
    let data: &[u8] = if len == 0 {
        &[]
    } else {
        // SAFETY: `data()` points at the view's first byte and the view is
        // `len` bytes long; no JavaScript runs (nothing can detach or resize
        // the buffer) while this callback holds the thread, and the slice
        // does not outlive the callback.
        unsafe { std::slice::from_raw_parts(view.data().cast::<u8>(), len) }
    };
    let tripwire = host.tripwire();
    let stopped = || tripwire.has_fired();
    let hash = match algorithm.as_str() {
        "SHA-1" => hash_in_steps::<Sha1>(data, stopped),
        "SHA-256" => hash_in_steps::<Sha256>(data, stopped),
        "SHA-384" => hash_in_steps::<Sha384>(data, stopped),
        "SHA-512" => hash_in_steps::<Sha512>(data, stopped),
        "MD5" => hash_in_steps::<md5::Md5>(data, stopped),
        other => {
            return Err(HostError::type_error(format!(
                "digest: unsupported algorithm {other}"
            )));
        }
    };
    // `None`: the turn was terminated; V8 unwinds it on return.
    Ok(hash.and_then(|hash| array_buffer(scope, hash)))
}
}

/// The digest of `data`, or `None` if `stopped` said so between two steps.
fn hash_in_steps<D: Digest>(data: &[u8], stopped: impl Fn() -> bool) -> Option<Vec<u8>> {
    let mut hasher = D::new();
    for step in data.chunks(DIGEST_STEP) {
        if stopped() {
            return None;
        }
        hasher.update(step);
    }
    Some(hasher.finalize().to_vec())
}
