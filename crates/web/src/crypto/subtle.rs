//! The `host.crypto*` functions behind `crypto.subtle` (see HOST.md): thin
//! V8 glue from arguments to `formats.rs` / `ops.rs` and back. Errors are
//! thrown as the DOMException they are named for (see `error.rs`).
//!
//! Keys (`Rc<Key>`) and `DigestStream` hashers (`Hasher`) live in the
//! isolate's handle table (`host/handle.rs`), charged to its memory budget.

use std::rc::Rc;

use sha2::digest::DynDigest;
use zeroize::Zeroizing;

use super::error::{CryptoError, Result};
use super::formats::{self, Exported, Generated, KeyData, Kind};
use super::key::Key;
use super::offload::{self, Offloaded};
use super::ops;
use super::params::Params;
use isolane_engine::api::{
    HostError, HostResult, HostState, Owner, array_buffer, js_string, u8_array, view_bytes,
};

/// Largest key data `importKey` reads (an RSA-4096 JWK is ~3.3 KiB).
const MAX_KEY_DATA: usize = 64 * 1024;

/// Charge for a hasher's state.
pub const HASHER_CHARGE: usize = 512;

/// A `DigestStream`'s state, as the handle table holds it.
pub type Hasher = Box<dyn DynDigest>;

/// A JS value from a body that may have run out of memory (`None`: the
/// isolate is being terminated) or failed.
type Answer<'s> = HostResult<Option<v8::Local<'s, v8::Value>>>;

pub fn key_arg(
    scope: &mut v8::PinScope<'_, '_>,
    host: &HostState,
    value: v8::Local<'_, v8::Value>,
) -> Result<Rc<Key>> {
    host.handles()
        .with_handle(scope, value, |key: &mut Rc<Key>| key.clone())
        .ok_or_else(|| CryptoError::Type("not a CryptoKey of this isolate".to_owned()))
}

/// The key a handle names and an operation's parameters.
fn operands(
    scope: &mut v8::PinScope<'_, '_>,
    host: &HostState,
    handle: v8::Local<'_, v8::Value>,
    params: v8::Local<'_, v8::Value>,
) -> Result<(Rc<Key>, Params)> {
    let key = key_arg(scope, host, handle)?;
    Ok((key, params_arg(scope, host, params)?))
}

pub fn bytes_arg(value: v8::Local<'_, v8::Value>, what: &str) -> Result<Vec<u8>> {
    view_bytes(value).ok_or_else(|| CryptoError::Type(format!("{what} must be a Uint8Array")))
}

/// `[handle, info]` for a new key.
pub fn key_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    host: &HostState,
    key: Key,
) -> Option<v8::Local<'s, v8::Value>> {
    let info = key.info();
    let charge = key.size_estimate();
    let handle = host
        .handles()
        .insert_object(scope, Rc::new(key), charge, Owner::Isolate)?;
    let object = v8::Object::new(scope);
    let kind = js_string(scope, info.kind)?;
    set(scope, object, "type", kind);
    if let Some(bits) = info.length_bits {
        let value = v8::Number::new(scope, bits as f64).into();
        set(scope, object, "length", value);
    }
    if let Some(bits) = info.modulus_bits {
        let value = v8::Number::new(scope, bits as f64).into();
        set(scope, object, "modulusLength", value);
    }
    if let Some(exponent) = info.public_exponent {
        let value = u8_array(scope, exponent)?.into();
        set(scope, object, "publicExponent", value);
    }
    if let Some(curve) = info.curve {
        let value = js_string(scope, curve.name())?;
        set(scope, object, "namedCurve", value);
    }
    Some(v8::Array::new_with_elements(scope, &[handle.into(), object.into()]).into())
}

fn set(
    scope: &mut v8::PinScope<'_, '_>,
    object: v8::Local<'_, v8::Object>,
    name: &str,
    value: v8::Local<'_, v8::Value>,
) {
    if let Some(key) = v8::String::new(scope, name) {
        object.set(scope, key.into(), value);
    }
}

/// `[handle, info]`, or `[[publicHandle, info], [privateHandle, info]]`.
pub fn generated_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    generated: Generated,
) -> Option<v8::Local<'s, v8::Value>> {
    let host = HostState::get(scope)?;
    match generated {
        Generated::One(key) => key_js(scope, &host, key),
        Generated::Pair(public, private) => {
            let public = key_js(scope, &host, public)?;
            let private = key_js(scope, &host, private)?;
            Some(v8::Array::new_with_elements(scope, &[public, private]).into())
        }
    }
}

impl isolane_engine::api::Settle for super::offload::Offload {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> std::result::Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        offloaded_js(scope, self.0)
    }
}

/// What an offloaded job settles its promise with.
pub fn offloaded_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    result: Result<Offloaded>,
) -> std::result::Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
    let undefined: v8::Local<'s, v8::Value> = v8::undefined(scope).into();
    let value = match result {
        Ok(Offloaded::Bytes(bytes)) => array_buffer(scope, bytes).map(Into::into),
        Ok(Offloaded::Generated(generated)) => generated_js(scope, *generated),
        Err(error) => {
            let error = HostError::from(error);
            return Err(error.to_js(scope).ok_or(undefined)?);
        }
    };
    value.ok_or(undefined)
}

fn params_arg(
    scope: &mut v8::PinScope<'_, '_>,
    host: &HostState,
    value: v8::Local<'_, v8::Value>,
) -> Result<Params> {
    let mut params = Params::default();
    let Ok(object) = v8::Local::<v8::Object>::try_from(value) else {
        return Ok(params);
    };
    let number = |scope: &mut v8::PinScope<'_, '_>, v: v8::Local<'_, v8::Value>| {
        v.number_value(scope)
            .filter(|n| n.is_finite() && *n >= 0.0)
            .map(|n| n as u64)
    };
    if let Some(v) = member(scope, object, "hash") {
        params.hash = Some(v.to_rust_string_lossy(scope));
    }
    if let Some(v) = member(scope, object, "saltLength") {
        params.salt_length = number(scope, v).and_then(|n| usize::try_from(n).ok());
    }
    if let Some(v) = member(scope, object, "tagLength") {
        params.tag_length = number(scope, v).and_then(|n| usize::try_from(n).ok());
    }
    if let Some(v) = member(scope, object, "length") {
        params.length = number(scope, v).and_then(|n| usize::try_from(n).ok());
    }
    if let Some(v) = member(scope, object, "iterations") {
        params.iterations = number(scope, v).map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    }
    for (name, slot) in [
        ("iv", &mut params.iv),
        ("additionalData", &mut params.additional_data),
        ("counter", &mut params.counter),
        ("label", &mut params.label),
        ("salt", &mut params.salt),
        ("info", &mut params.info),
    ] {
        if let Some(v) = member(scope, object, name) {
            *slot = Some(bytes_arg(v, name)?);
        }
    }
    if let Some(v) = member(scope, object, "public") {
        params.public = Some(key_arg(scope, host, v)?);
    }
    Ok(params)
}

/// `object[name]`, `None` when undefined or null.
fn member<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    object: v8::Local<'_, v8::Object>,
    name: &str,
) -> Option<v8::Local<'s, v8::Value>> {
    let key = v8::String::new(scope, name)?;
    object
        .get(scope, key.into())
        .filter(|v| !v.is_null_or_undefined())
}

host_fn! {
/// `cryptoImportKey(kind, curve, format, data)` → `[handle, info]`.
pub fn import_key<'s>(
    scope,
    host: Rc<HostState>,
    kind: String,
    curve: String,
    format: String,
    data: v8::Local<'s, v8::Value>,
) -> Answer<'s> {
    let kind = Kind::parse(&kind, &curve)?;
    let data = if format == "jwk" {
        let text = Zeroizing::new(data.to_rust_string_lossy(scope));
        if text.len() > MAX_KEY_DATA {
            return Err(CryptoError::data("The key data is too large").into());
        }
        KeyData::Jwk(text)
    } else {
        let bytes = Zeroizing::new(bytes_arg(data, "keyData")?);
        if bytes.len() > MAX_KEY_DATA {
            return Err(CryptoError::data("The key data is too large").into());
        }
        KeyData::Bytes(bytes)
    };
    let key = formats::import(kind, &format, data)?;
    Ok(key_js(scope, &host, key))
}
}

host_fn! {
/// `cryptoExportKey(handle, format)` → Uint8Array, or JWK JSON text.
pub fn export_key<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    format: String,
) -> Answer<'s> {
    let key = key_arg(scope, &host, handle)?;
    Ok(match formats::export(&key, &format)? {
        Exported::Bytes(bytes) => u8_array(scope, bytes.to_vec()).map(Into::into),
        Exported::Jwk(text) => js_string(scope, &text),
    })
}
}

host_fn! {
/// `cryptoGenerateKey(kind, curve, size, exponent)`: `size` is the length
/// in bytes of a secret key, or the RSA modulus in bits. RSA runs off the
/// thread and answers a Promise.
pub fn generate_key<'s>(
    scope,
    kind: String,
    curve: String,
    size: v8::Local<'s, v8::Value>,
    exponent: Option<Vec<u8>>,
) -> Answer<'s> {
    let kind = Kind::parse(&kind, &curve);
    let size = size
        .number_value(scope)
        .filter(|n| n.is_finite() && *n >= 0.0);
    if let Ok(Kind::Rsa) = kind {
        let exponent = exponent.unwrap_or_default();
        let bits = size.map_or(0, |n| n as usize);
        let e = formats::rsa_parameters(bits, &exponent)?;
        let promise = offload::spawn(scope, move |stop| {
            formats::generate_rsa(bits, &e, stop).map(|g| Offloaded::Generated(Box::new(g)))
        });
        return Ok(promise.map(Into::into));
    }
    if HostState::get(scope).is_none() {
        return Ok(None);
    }
    let generated = match kind? {
        Kind::Secret => {
            let bytes = size.map_or(0, |n| n as usize);
            if bytes == 0 || bytes > 1024 {
                return Err(CryptoError::operation("Invalid key length").into());
            }
            formats::generate_secret(bytes)?
        }
        kind => formats::generate_pair(kind)?,
    };
    Ok(generated_js(scope, generated))
}
}

host_fn! {
/// `cryptoSign(algorithm, handle, params, data)` → ArrayBuffer.
pub fn sign<'s>(
    scope,
    host: Rc<HostState>,
    algorithm: String,
    handle: v8::Local<'s, v8::Value>,
    params: v8::Local<'s, v8::Value>,
    data: v8::Local<'s, v8::Value>,
) -> Answer<'s> {
    let (key, params) = operands(scope, &host, handle, params)?;
    let data = bytes_arg(data, "data")?;
    let signature = ops::sign(&algorithm, &key, &params, &data)?;
    Ok(array_buffer(scope, signature).map(Into::into))
}
}

host_fn! {
/// `cryptoVerify(algorithm, handle, params, signature, data)` → boolean.
pub fn verify<'s>(
    scope,
    host: Rc<HostState>,
    algorithm: String,
    handle: v8::Local<'s, v8::Value>,
    params: v8::Local<'s, v8::Value>,
    signature: v8::Local<'s, v8::Value>,
    data: v8::Local<'s, v8::Value>,
) -> HostResult<bool> {
    let (key, params) = operands(scope, &host, handle, params)?;
    let signature = bytes_arg(signature, "signature")?;
    let data = bytes_arg(data, "data")?;
    Ok(ops::verify(&algorithm, &key, &params, &signature, &data)?)
}
}

host_fn! {
/// `cryptoCipher(algorithm, handle, params, data, encrypt)` → ArrayBuffer
/// (`AES-KW`: wrap when `encrypt`, else unwrap).
pub fn cipher<'s>(
    scope,
    host: Rc<HostState>,
    algorithm: String,
    handle: v8::Local<'s, v8::Value>,
    params: v8::Local<'s, v8::Value>,
    data: v8::Local<'s, v8::Value>,
    encrypt: bool,
) -> Answer<'s> {
    let (key, params) = operands(scope, &host, handle, params)?;
    let data = bytes_arg(data, "data")?;
    let out = ops::cipher(&algorithm, &key, &params, &data, encrypt)?;
    Ok(array_buffer(scope, out).map(Into::into))
}
}

host_fn! {
/// `cryptoDeriveBits(algorithm, handle, params, length)` → ArrayBuffer, or a
/// Promise of one for PBKDF2 (run off the thread, see `offload.rs`).
pub fn derive_bits<'s>(
    scope,
    algorithm: String,
    handle: v8::Local<'s, v8::Value>,
    params: v8::Local<'s, v8::Value>,
    length: v8::Local<'s, v8::Value>,
    host: Rc<HostState>,
) -> Answer<'s> {
    let length = length
        .number_value(scope)
        .filter(|n| n.is_finite() && *n >= 0.0 && !length.is_null_or_undefined())
        .map(|n| n as usize);
    let (key, params) = operands(scope, &host, handle, params)?;
    if algorithm == "PBKDF2" {
        let (bytes, iterations) = ops::pbkdf2_check(&params, length)?;
        let Key::Secret(password) = &*key else {
            return Err(CryptoError::access("PBKDF2 needs a secret key").into());
        };
        let password = password.clone();
        let hash = params.hash.clone().unwrap_or_default();
        let salt = params.salt.unwrap_or_default();
        let promise = offload::spawn(scope, move |_stop| {
            ops::pbkdf2(&hash, &password, &salt, iterations, bytes).map(Offloaded::Bytes)
        });
        return Ok(promise.map(Into::into));
    }
    let bits = ops::derive(&algorithm, &key, &params, length)?;
    Ok(array_buffer(scope, bits).map(Into::into))
}
}

host_fn! {
/// `digestStreamNew(algorithm)` → handle.
pub fn digest_stream_new<'s>(
    scope,
    host: Rc<HostState>,
    algorithm: String,
) -> HostResult<Option<v8::Local<'s, v8::Object>>> {
    let hasher: Hasher = ops::new_hasher(&algorithm)
        .ok_or_else(|| CryptoError::not_supported(format!("Unrecognized name: {algorithm}")))?;
    Ok(host
        .handles()
        .insert_object(scope, hasher, HASHER_CHARGE, Owner::Isolate))
}
}

host_fn! {
/// `digestStreamWrite(handle, u8)`: hashes one chunk.
pub fn digest_stream_write<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    chunk: Option<Vec<u8>>,
) -> HostResult<()> {
    let Some(chunk) = chunk else {
        return Err(CryptoError::Type(
            "digestStreamWrite: chunk must be a Uint8Array".to_owned(),
        )
        .into());
    };
    host.handles()
        .with_handle(scope, handle, |h: &mut Hasher| h.update(&chunk))
        .ok_or_else(|| CryptoError::Type("digestStreamWrite: not a DigestStream".to_owned()))?;
    Ok(())
}
}

host_fn! {
/// `digestStreamEnd(handle)` → ArrayBuffer; the handle is spent.
pub fn digest_stream_end<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::ArrayBuffer>>> {
    let hash = host
        .handles()
        .with_handle(scope, handle, |h: &mut Hasher| h.finalize_reset().to_vec())
        .ok_or_else(|| CryptoError::Type("digestStreamEnd: not a DigestStream".to_owned()))?;
    host.handles().remove_handle(scope, handle);
    Ok(array_buffer(scope, hash))
}
}

host_fn! {
/// `timingSafeEqual(a, b)` → boolean, in time independent of the contents
/// (`subtle`); JS has checked both are views of the same length.
pub fn timing_safe_equal<'s>(
    _scope,
    a: v8::Local<'s, v8::Value>,
    b: v8::Local<'s, v8::Value>,
) -> HostResult<bool> {
    use subtle::ConstantTimeEq;
    let a = bytes_arg(a, "a")?;
    let b = bytes_arg(b, "b")?;
    if a.len() != b.len() {
        return Err(CryptoError::Type("timingSafeEqual: the lengths differ".to_owned()).into());
    }
    Ok(bool::from(a.ct_eq(&b)))
}
}
