//! The `host.crypto*` functions behind `crypto.subtle` (see HOST.md): thin
//! V8 glue from arguments to `formats.rs` / `ops.rs` and back. Errors are
//! thrown as `TypeError`s named for their DOMException (see `error.rs`).

use std::rc::Rc;

use zeroize::Zeroizing;

use super::error::{CryptoError, Result};
use super::formats::{self, Exported, Generated, KeyData, Kind};
use super::handles::Item;
use super::key::Key;
use super::offload::{self, Offloaded};
use super::ops;
use super::params::Params;
use crate::host::{
    HostState, arg_string, array_buffer, js_string, throw_type_error, u8_array, view_bytes,
};

/// Largest key data `importKey` reads (an RSA-4096 JWK is ~3.3 KiB).
const MAX_KEY_DATA: usize = 64 * 1024;

fn throw(scope: &mut v8::PinScope<'_, '_>, error: &CryptoError) {
    throw_type_error(scope, &error.to_string());
}

fn key_arg(
    scope: &mut v8::PinScope<'_, '_>,
    host: &HostState,
    value: v8::Local<'_, v8::Value>,
) -> Result<Rc<Key>> {
    host.crypto
        .key(scope, value)
        .ok_or_else(|| CryptoError::Type("not a CryptoKey of this isolate".to_owned()))
}

fn bytes_arg(value: v8::Local<'_, v8::Value>, what: &str) -> Result<Vec<u8>> {
    view_bytes(value).ok_or_else(|| CryptoError::Type(format!("{what} must be a Uint8Array")))
}

/// `[handle, info]` for a new key.
fn key_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    host: &HostState,
    key: Key,
) -> Option<v8::Local<'s, v8::Value>> {
    let info = key.info();
    let handle = host.crypto.insert(scope, Item::Key(Rc::new(key)))?;
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
pub(crate) fn generated_js<'s>(
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

/// What an offloaded job hands back to its isolate.
pub(crate) type OffloadResult = Result<Offloaded>;

/// What an offloaded job settles its promise with.
pub(crate) fn offloaded_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    result: Result<Offloaded>,
) -> std::result::Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
    let undefined: v8::Local<'s, v8::Value> = v8::undefined(scope).into();
    let value = match result {
        Ok(Offloaded::Bytes(bytes)) => array_buffer(scope, bytes).map(Into::into),
        Ok(Offloaded::Generated(generated)) => generated_js(scope, *generated),
        Err(error) => {
            let message = v8::String::new(scope, &error.to_string()).ok_or(undefined)?;
            return Err(v8::Exception::type_error(scope, message));
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

/// Runs a host function body; a `CryptoError` is thrown.
fn run<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
    body: impl FnOnce(&mut v8::PinScope<'s, '_>, &HostState) -> Result<Option<v8::Local<'s, v8::Value>>>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    match body(scope, &host) {
        Ok(Some(value)) => rv.set(value),
        // Over the memory limit: the turn is being terminated.
        Ok(None) => {}
        Err(error) => throw(scope, &error),
    }
}

/// `cryptoImportKey(kind, curve, format, data)` → `[handle, info]`.
pub(in crate::host) fn import_key(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    run(scope, rv, |scope, host| {
        let kind = Kind::parse(&arg_string(scope, &args, 0), &arg_string(scope, &args, 1))?;
        let format = arg_string(scope, &args, 2);
        let data = if format == "jwk" {
            let text = Zeroizing::new(arg_string(scope, &args, 3));
            if text.len() > MAX_KEY_DATA {
                return Err(CryptoError::data("The key data is too large"));
            }
            KeyData::Jwk(text)
        } else {
            let bytes = Zeroizing::new(bytes_arg(args.get(3), "keyData")?);
            if bytes.len() > MAX_KEY_DATA {
                return Err(CryptoError::data("The key data is too large"));
            }
            KeyData::Bytes(bytes)
        };
        let key = formats::import(kind, &format, data)?;
        Ok(key_js(scope, host, key))
    });
}

/// `cryptoExportKey(handle, format)` → Uint8Array, or JWK JSON text.
pub(in crate::host) fn export_key(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    run(scope, rv, |scope, host| {
        let key = key_arg(scope, host, args.get(0))?;
        let format = arg_string(scope, &args, 1);
        Ok(match formats::export(&key, &format)? {
            Exported::Bytes(bytes) => u8_array(scope, bytes.to_vec()).map(Into::into),
            Exported::Jwk(text) => js_string(scope, &text),
        })
    });
}

/// `cryptoGenerateKey(kind, curve, size, exponent)`: `size` is the length
/// in bytes of a secret key, or the RSA modulus in bits.
pub(in crate::host) fn generate_key(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    let kind = Kind::parse(&arg_string(scope, &args, 0), &arg_string(scope, &args, 1));
    let size = args
        .get(2)
        .number_value(scope)
        .filter(|n| n.is_finite() && *n >= 0.0);
    if let Ok(Kind::Rsa) = kind {
        let exponent = view_bytes(args.get(3)).unwrap_or_default();
        let bits = size.map_or(0, |n| n as usize);
        match formats::rsa_parameters(bits, &exponent) {
            Ok(e) => offload::spawn(scope, rv, move |stop| {
                formats::generate_rsa(bits, &e, stop).map(|g| Offloaded::Generated(Box::new(g)))
            }),
            Err(error) => throw(scope, &error),
        }
        return;
    }
    run(scope, rv, |scope, _| {
        let generated = match kind? {
            Kind::Secret => {
                let bytes = size.map_or(0, |n| n as usize);
                if bytes == 0 || bytes > 1024 {
                    return Err(CryptoError::operation("Invalid key length"));
                }
                formats::generate_secret(bytes)?
            }
            kind => formats::generate_pair(kind)?,
        };
        Ok(generated_js(scope, generated))
    });
}

/// `cryptoSign(algorithm, handle, params, data)` → ArrayBuffer.
pub(in crate::host) fn sign(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    run(scope, rv, |scope, host| {
        let algorithm = arg_string(scope, &args, 0);
        let key = key_arg(scope, host, args.get(1))?;
        let params = params_arg(scope, host, args.get(2))?;
        let data = bytes_arg(args.get(3), "data")?;
        let signature = ops::sign(&algorithm, &key, &params, &data)?;
        Ok(array_buffer(scope, signature).map(Into::into))
    });
}

/// `cryptoVerify(algorithm, handle, params, signature, data)` → boolean.
pub(in crate::host) fn verify(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    run(scope, rv, |scope, host| {
        let algorithm = arg_string(scope, &args, 0);
        let key = key_arg(scope, host, args.get(1))?;
        let params = params_arg(scope, host, args.get(2))?;
        let signature = bytes_arg(args.get(3), "signature")?;
        let data = bytes_arg(args.get(4), "data")?;
        let ok = ops::verify(&algorithm, &key, &params, &signature, &data)?;
        Ok(Some(v8::Boolean::new(scope, ok).into()))
    });
}

/// `cryptoCipher(algorithm, handle, params, data, encrypt)` → ArrayBuffer
/// (`AES-KW`: wrap when `encrypt`, else unwrap).
pub(in crate::host) fn cipher(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    run(scope, rv, |scope, host| {
        let algorithm = arg_string(scope, &args, 0);
        let key = key_arg(scope, host, args.get(1))?;
        let params = params_arg(scope, host, args.get(2))?;
        let data = bytes_arg(args.get(3), "data")?;
        let encrypt = args.get(4).boolean_value(scope);
        let out = ops::cipher(&algorithm, &key, &params, &data, encrypt)?;
        Ok(array_buffer(scope, out).map(Into::into))
    });
}

/// `cryptoDeriveBits(algorithm, handle, params, length)` → ArrayBuffer, or a
/// Promise of one for PBKDF2 (run off the thread, see `offload.rs`).
pub(in crate::host) fn derive_bits(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    let algorithm = arg_string(scope, &args, 0);
    let length = args
        .get(3)
        .number_value(scope)
        .filter(|n| n.is_finite() && *n >= 0.0 && !args.get(3).is_null_or_undefined())
        .map(|n| n as usize);
    if algorithm == "PBKDF2" {
        let Some(host) = HostState::get(scope) else {
            return;
        };
        let prepared = (|| {
            let key = key_arg(scope, &host, args.get(1))?;
            let params = params_arg(scope, &host, args.get(2))?;
            let (bytes, iterations) = ops::pbkdf2_check(&params, length)?;
            let Key::Secret(password) = &*key else {
                return Err(CryptoError::access("PBKDF2 needs a secret key"));
            };
            let hash = params.hash.clone().unwrap_or_default();
            Ok((
                password.clone(),
                params.salt.unwrap_or_default(),
                hash,
                iterations,
                bytes,
            ))
        })();
        match prepared {
            Ok((password, salt, hash, iterations, bytes)) => {
                offload::spawn(scope, rv, move |_stop| {
                    ops::pbkdf2(&hash, &password, &salt, iterations, bytes).map(Offloaded::Bytes)
                })
            }
            Err(error) => throw(scope, &error),
        }
        return;
    }
    run(scope, rv, |scope, host| {
        let key = key_arg(scope, host, args.get(1))?;
        let params = params_arg(scope, host, args.get(2))?;
        let bits = ops::derive(&algorithm, &key, &params, length)?;
        Ok(array_buffer(scope, bits).map(Into::into))
    });
}

/// `digestStreamNew(algorithm)` → handle.
pub(in crate::host) fn digest_stream_new(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    run(scope, rv, |scope, host| {
        let algorithm = arg_string(scope, &args, 0);
        let hasher = ops::new_hasher(&algorithm)
            .ok_or_else(|| CryptoError::not_supported(format!("Unrecognized name: {algorithm}")))?;
        Ok(host
            .crypto
            .insert(scope, Item::Hasher(hasher))
            .map(Into::into))
    });
}

/// `digestStreamWrite(handle, u8)`: hashes one chunk.
pub(in crate::host) fn digest_stream_write(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    run(scope, rv, |scope, host| {
        let Ok(view) = v8::Local::<v8::ArrayBufferView>::try_from(args.get(1)) else {
            return Err(CryptoError::Type(
                "digestStreamWrite: chunk must be a Uint8Array".to_owned(),
            ));
        };
        let mut chunk = vec![0; view.byte_length()];
        view.copy_contents(&mut chunk);
        host.crypto
            .with_hasher(scope, args.get(0), |h| h.update(&chunk))
            .ok_or_else(|| CryptoError::Type("digestStreamWrite: not a DigestStream".to_owned()))?;
        Ok(None)
    });
}

/// `digestStreamEnd(handle)` → ArrayBuffer; the handle is spent.
pub(in crate::host) fn digest_stream_end(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    run(scope, rv, |scope, host| {
        let hash = host
            .crypto
            .with_hasher(scope, args.get(0), |h| h.finalize_reset().to_vec())
            .ok_or_else(|| CryptoError::Type("digestStreamEnd: not a DigestStream".to_owned()))?;
        host.crypto.remove(scope, args.get(0));
        Ok(array_buffer(scope, hash).map(Into::into))
    });
}

/// `timingSafeEqual(a, b)` → boolean, in time independent of the contents
/// (`subtle`); JS has checked both are views of the same length.
pub(in crate::host) fn timing_safe_equal(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    rv: v8::ReturnValue<'_, v8::Value>,
) {
    run(scope, rv, |scope, _| {
        use subtle::ConstantTimeEq;
        let a = bytes_arg(args.get(0), "a")?;
        let b = bytes_arg(args.get(1), "b")?;
        if a.len() != b.len() {
            return Err(CryptoError::Type(
                "timingSafeEqual: the lengths differ".to_owned(),
            ));
        }
        let equal = bool::from(a.ct_eq(&b));
        Ok(Some(v8::Boolean::new(scope, equal).into()))
    });
}
