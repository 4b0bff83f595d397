//! `node:crypto`'s raw RSA operations: `privateEncrypt`/`publicDecrypt`
//! (PKCS#1 v1.5 type 1 padding or none) and `publicEncrypt`/`privateDecrypt`
//! without padding, on AWS-LC's `RSA_*_encrypt`/`RSA_*_decrypt` (blinded,
//! as workerd's BoringSSL). The key is the Web Crypto unit's (the `rsa`
//! crate's parts), handed to AWS-LC as PKCS#1 DER for one operation; keys
//! are at most 4096 bits, so one call holds the thread for a bounded time.

use std::ffi::c_int;
use std::rc::Rc;

use aws_lc_sys as sys;
use rsa::pkcs1::{EncodeRsaPrivateKey, EncodeRsaPublicKey};
use zeroize::Zeroizing;

use isolane_engine::api::HostResult;
use isolane_engine::api::{HostState, u8_array};
use isolane_web::crypto::error::CryptoError;
use isolane_web::crypto::key::Key;
use isolane_web::crypto::subtle::{bytes_arg, key_arg};

/// `RSA_PKCS1_PADDING` and `RSA_NO_PADDING`, as node:crypto's constants.
const PKCS1: c_int = 1;
const NONE: c_int = 3;

/// One AWS-LC `RSA`, freed (and wiped) when dropped.
struct Rsa(*mut sys::RSA);

impl Drop for Rsa {
    fn drop(&mut self) {
        // SAFETY: made by `RSA_*_key_from_bytes` (not null), freed only here.
        unsafe { sys::RSA_free(self.0) }
    }
}

fn failed(what: &str) -> CryptoError {
    CryptoError::operation(format!("RSA {what} failed"))
}

/// AWS-LC's form of `key`: its private key for `private`, else its public
/// key (a private key's too).
fn aws_lc_key(key: &Key, private: bool) -> Result<Rsa, CryptoError> {
    let encode =
        |e: &dyn std::fmt::Display| CryptoError::operation(format!("Encoding the key failed: {e}"));
    let der = match (key, private) {
        (Key::RsaPrivate(k), true) => Zeroizing::new(
            k.to_pkcs1_der()
                .map_err(|e| encode(&e))?
                .as_bytes()
                .to_vec(),
        ),
        (Key::RsaPrivate(k), false) => Zeroizing::new(
            k.to_public_key()
                .to_pkcs1_der()
                .map_err(|e| encode(&e))?
                .into_vec(),
        ),
        (Key::RsaPublic(k), false) => {
            Zeroizing::new(k.to_pkcs1_der().map_err(|e| encode(&e))?.into_vec())
        }
        _ => return Err(CryptoError::access("Wrong key type for this RSA operation")),
    };
    // SAFETY: reads `der.len()` bytes; a null answer is refused.
    let rsa = unsafe {
        if private {
            sys::RSA_private_key_from_bytes(der.as_ptr(), der.len())
        } else {
            sys::RSA_public_key_from_bytes(der.as_ptr(), der.len())
        }
    };
    if rsa.is_null() {
        // SAFETY: clears this thread's AWS-LC error queue only.
        unsafe { sys::ERR_clear_error() };
        return Err(failed("key conversion"));
    }
    Ok(Rsa(rsa))
}

/// Runs `op` (`privateEncrypt`, `publicDecrypt`, `publicEncrypt`,
/// `privateDecrypt`) with `padding` over `data`.
fn run(key: &Key, op: &str, padding: c_int, data: &[u8]) -> Result<Vec<u8>, CryptoError> {
    type Op = unsafe extern "C" fn(usize, *const u8, *mut u8, *mut sys::RSA, c_int) -> c_int;
    let (private, call): (bool, Op) = match (op, padding) {
        ("privateEncrypt", PKCS1 | NONE) => (true, sys::RSA_private_encrypt),
        ("publicDecrypt", PKCS1 | NONE) => (false, sys::RSA_public_decrypt),
        ("publicEncrypt", NONE) => (false, sys::RSA_public_encrypt),
        ("privateDecrypt", NONE) => (true, sys::RSA_private_decrypt),
        _ => {
            return Err(CryptoError::Type(format!(
                "{op}: unsupported padding {padding}"
            )));
        }
    };
    let rsa = aws_lc_key(key, private)?;
    // SAFETY: `rsa` is valid; `out` has RSA_size bytes, the most any of
    // these operations writes; `data` is read for its length.
    unsafe {
        let mut out = Zeroizing::new(vec![0u8; sys::RSA_size(rsa.0) as usize]);
        let len = call(data.len(), data.as_ptr(), out.as_mut_ptr(), rsa.0, padding);
        sys::ERR_clear_error();
        let len = usize::try_from(len).map_err(|_| failed(op))?;
        Ok(out[..len].to_vec())
    }
}

host_fn! {
/// `nodeRsaRaw(handle, op, padding, data)` → Uint8Array: `op`
/// (`privateEncrypt`, `publicDecrypt`; `publicEncrypt`, `privateDecrypt`
/// only without padding) with the RSA key `handle`.
pub(super) fn rsa_raw<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    op: String,
    padding: u32,
    data: v8::Local<'s, v8::Value>,
) -> HostResult<Option<v8::Local<'s, v8::Uint8Array>>> {
    let key = key_arg(scope, &host, handle)?;
    let data = Zeroizing::new(bytes_arg(data, "buffer")?);
    let padding = c_int::try_from(padding).unwrap_or(c_int::MAX);
    let out = run(&key, &op, padding, &data)?;
    Ok(u8_array(scope, out))
}
}
