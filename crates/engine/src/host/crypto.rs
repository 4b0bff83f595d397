//! `host.randomFill`, `host.randomUUID` and `host.digest`; the rest of Web
//! Crypto (`crypto.subtle` keys and operations, `DigestStream`,
//! `timingSafeEqual`) is in the modules below.

mod aws_lc;
pub(crate) mod error;
mod fast_verify;
pub(crate) mod formats;
pub(crate) mod handles;
pub(crate) mod key;
pub(crate) mod offload;
pub(crate) mod ops;
mod params;
pub(crate) mod subtle;

use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::{HostState, arg_string, throw_type_error};

const MAX_RANDOM_BYTES: usize = 65_536;

/// `randomFill(u8)`: fills the view in place and returns it.
pub(super) fn random_fill(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(args.get(0)) else {
        throw_type_error(scope, "randomFill: argument must be an integer TypedArray");
        return;
    };
    let len = view.byte_length();
    if len > MAX_RANDOM_BYTES {
        throw_type_error(
            scope,
            &format!(
                "QuotaExceededError: The ArrayBufferView's byte length ({len}) exceeds the number of bytes of entropy available via this API ({MAX_RANDOM_BYTES})"
            ),
        );
        return;
    }
    let mut bytes = vec![0u8; len];
    if getrandom::fill(&mut bytes).is_err() {
        throw_type_error(scope, "randomFill: the system's random source failed");
        return;
    }
    if len > 0 {
        // SAFETY: `data()` points at the view's first byte and the view is
        // `len` bytes long; no JS runs while this callback holds the thread.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), view.data().cast::<u8>(), len) };
    }
    rv.set(args.get(0));
}

/// `randomUUID()`: an RFC 9562 version 4 UUID.
pub(super) fn random_uuid(
    scope: &mut v8::PinScope<'_, '_>,
    _args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        throw_type_error(scope, "randomUUID: the system's random source failed");
        return;
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
    if let Some(s) = v8::String::new(scope, &uuid) {
        rv.set(s.into());
    }
}

/// Bytes hashed between two looks at the watchdog: ~1 ms of SHA-256.
const DIGEST_STEP: usize = 1 << 20;

/// `digest(algorithm, u8)` → ArrayBuffer.
///
/// Hashes the view in place, in steps, and stops as soon as the watchdog has
/// terminated the turn (the request ran out of CPU time): a digest of a huge
/// buffer costs at most one step more than the worker's CPU limit.
pub(super) fn digest(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let algorithm = arg_string(scope, &args, 0);
    let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(args.get(1)) else {
        throw_type_error(scope, "digest: data must be a BufferSource");
        return;
    };
    let Some(host) = HostState::get(scope) else {
        return;
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
    let stopped = || host.thread.watchdog.has_fired();
    let hash = match algorithm.as_str() {
        "SHA-1" => hash_in_steps::<Sha1>(data, stopped),
        "SHA-256" => hash_in_steps::<Sha256>(data, stopped),
        "SHA-384" => hash_in_steps::<Sha384>(data, stopped),
        "SHA-512" => hash_in_steps::<Sha512>(data, stopped),
        "MD5" => hash_in_steps::<md5::Md5>(data, stopped),
        other => {
            throw_type_error(scope, &format!("digest: unsupported algorithm {other}"));
            return;
        }
    };
    // `None`: the turn was terminated; V8 unwinds it on return.
    let Some(hash) = hash else {
        return;
    };
    if let Some(buffer) = super::array_buffer(scope, hash) {
        rv.set(buffer.into());
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
