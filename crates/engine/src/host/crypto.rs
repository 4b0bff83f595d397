//! `host.randomFill`, `host.randomUUID` and `host.digest`.

use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::{arg_string, throw_type_error, view_bytes};

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
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
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

/// `digest(algorithm, u8)` → ArrayBuffer.
pub(super) fn digest(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let algorithm = arg_string(scope, &args, 0);
    let Some(data) = view_bytes(args.get(1)) else {
        throw_type_error(scope, "digest: data must be a BufferSource");
        return;
    };
    let hash: Vec<u8> = match algorithm.as_str() {
        "SHA-1" => Sha1::digest(&data).to_vec(),
        "SHA-256" => Sha256::digest(&data).to_vec(),
        "SHA-384" => Sha384::digest(&data).to_vec(),
        "SHA-512" => Sha512::digest(&data).to_vec(),
        other => {
            throw_type_error(scope, &format!("digest: unsupported algorithm {other}"));
            return;
        }
    };
    let store = v8::ArrayBuffer::new_backing_store_from_vec(hash).make_shared();
    rv.set(v8::ArrayBuffer::with_backing_store(scope, &store).into());
}
