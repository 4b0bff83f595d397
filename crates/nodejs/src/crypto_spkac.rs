//! `node:crypto`'s `Certificate` (SPKAC: Netscape's
//! SignedPublicKeyAndChallenge, base64) on AWS-LC's `NETSCAPE_SPKI`, as
//! workerd has it on BoringSSL's: the challenge, the public key (SPKI DER)
//! and whether the structure's signature is its key's. One parse and at most
//! one signature check a call; the input is at most [`MAX_SPKAC`] bytes.

use std::ffi::{c_int, c_void};

use aws_lc_sys as sys_crate;

use isolane_engine::api::u8_array;
use isolane_engine::api::{HostError, HostResult};

/// AWS-LC's SPKAC functions. The universal `aws-lc-sys` bindings (the ones
/// this build uses) leave out `NETSCAPE_SPKI` and `asn1.h`'s string
/// accessors, though the library has them: these are their declarations
/// and `x509.h`'s two structures, under the crate's symbol prefix (as in
/// `crypto_dh.rs`).
mod sys {
    pub(super) use super::sys_crate::*;
    use std::ffi::{c_int, c_uchar};

    /// `struct Netscape_spkac_st`.
    #[repr(C)]
    pub(super) struct Spkac {
        pub(super) pubkey: *mut X509_PUBKEY,
        pub(super) challenge: *mut ASN1_STRING,
    }

    /// `struct Netscape_spki_st`.
    #[repr(C)]
    pub(super) struct Spki {
        pub(super) spkac: *mut Spkac,
        pub(super) sig_algor: *mut X509_ALGOR,
        pub(super) signature: *mut ASN1_STRING,
    }

    unsafe extern "C" {
        #[link_name = "aws_lc_0_47_0_NETSCAPE_SPKI_b64_decode"]
        pub(super) fn NETSCAPE_SPKI_b64_decode(str: *const c_char, len: isize) -> *mut Spki;
        #[link_name = "aws_lc_0_47_0_NETSCAPE_SPKI_free"]
        pub(super) fn NETSCAPE_SPKI_free(spki: *mut Spki);
        #[link_name = "aws_lc_0_47_0_NETSCAPE_SPKI_get_pubkey"]
        pub(super) fn NETSCAPE_SPKI_get_pubkey(spki: *const Spki) -> *mut EVP_PKEY;
        #[link_name = "aws_lc_0_47_0_NETSCAPE_SPKI_verify"]
        pub(super) fn NETSCAPE_SPKI_verify(spki: *mut Spki, pkey: *mut EVP_PKEY) -> c_int;
        #[link_name = "aws_lc_0_47_0_ASN1_STRING_get0_data"]
        pub(super) fn ASN1_STRING_get0_data(s: *const ASN1_STRING) -> *const c_uchar;
        #[link_name = "aws_lc_0_47_0_ASN1_STRING_length"]
        pub(super) fn ASN1_STRING_length(s: *const ASN1_STRING) -> c_int;
    }

    use std::ffi::c_char;
}

/// Longest SPKAC read (base64 bytes): far past any real key's.
const MAX_SPKAC: usize = 64 * 1024;

/// A decoded SPKAC, freed when dropped.
struct Spki(*mut sys::Spki);

impl Drop for Spki {
    fn drop(&mut self) {
        // SAFETY: made by `NETSCAPE_SPKI_b64_decode` (not null), freed here.
        unsafe { sys::NETSCAPE_SPKI_free(self.0) }
    }
}

/// A public key, freed when dropped.
struct Pkey(*mut sys::EVP_PKEY);

impl Drop for Pkey {
    fn drop(&mut self) {
        // SAFETY: made by `NETSCAPE_SPKI_get_pubkey` (not null), freed here.
        unsafe { sys::EVP_PKEY_free(self.0) }
    }
}

/// `spkac` (base64, trailing white space left out) decoded, or `None`.
fn decode(spkac: &[u8]) -> Option<Spki> {
    let end = spkac
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    let text = &spkac[..end];
    if text.is_empty() {
        return None;
    }
    let len = isize::try_from(text.len()).ok()?;
    // SAFETY: reads `len` bytes of `text` (positive, so no strlen).
    let spki = unsafe { sys::NETSCAPE_SPKI_b64_decode(text.as_ptr().cast(), len) };
    // SAFETY: clears this thread's AWS-LC error queue only.
    unsafe { sys::ERR_clear_error() };
    (!spki.is_null()).then_some(Spki(spki))
}

fn public_key(spki: &Spki) -> Option<Pkey> {
    // SAFETY: `spki` is valid; a null key is `None`.
    let pkey = unsafe { sys::NETSCAPE_SPKI_get_pubkey(spki.0) };
    // SAFETY: clears this thread's AWS-LC error queue only.
    unsafe { sys::ERR_clear_error() };
    (!pkey.is_null()).then_some(Pkey(pkey))
}

/// What `what` asks of `spki`: `challenge` (its bytes), `publicKey` (SPKI
/// DER) or `verify` (one byte, 1 when its signature is its key's).
fn answer(spki: &Spki, what: &str) -> Option<Vec<u8>> {
    match what {
        "challenge" => {
            // SAFETY: `spki` is valid; a decoded SPKAC has both structures
            // (checked anyway); the string's bytes are copied.
            unsafe {
                let spkac = (*spki.0).spkac;
                if spkac.is_null() || (*spkac).challenge.is_null() {
                    return None;
                }
                let s = (*spkac).challenge;
                let len = usize::try_from(sys::ASN1_STRING_length(s)).ok()?;
                let data = sys::ASN1_STRING_get0_data(s);
                Some(if len == 0 || data.is_null() {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(data, len).to_vec()
                })
            }
        }
        "publicKey" => {
            let pkey = public_key(spki)?;
            let mut out: *mut u8 = std::ptr::null_mut();
            // SAFETY: `pkey` is valid; on success `out` is an AWS-LC
            // allocation of `len` bytes, copied and freed.
            unsafe {
                let len = usize::try_from(sys::i2d_PUBKEY(pkey.0, &raw mut out)).ok()?;
                if out.is_null() {
                    return None;
                }
                let der = std::slice::from_raw_parts(out, len).to_vec();
                sys::OPENSSL_free(out.cast::<c_void>());
                Some(der)
            }
        }
        _ => {
            let Some(pkey) = public_key(spki) else {
                return Some(vec![0]);
            };
            // SAFETY: both are valid; clears this thread's error queue.
            let ok: c_int = unsafe {
                let ok = sys::NETSCAPE_SPKI_verify(spki.0, pkey.0);
                sys::ERR_clear_error();
                ok
            };
            Some(vec![u8::from(ok == 1)])
        }
    }
}

host_fn! {
/// `nodeSpkac(spkac, what)` → Uint8Array: `challenge`, `publicKey` (SPKI
/// DER) or `verify` (one byte, 1 or 0) of a base64 SPKAC; undefined when
/// it does not decode.
pub(super) fn spkac<'s>(
    scope,
    spkac: Option<Vec<u8>>,
    what: String,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let spkac = spkac.unwrap_or_default();
    if spkac.len() > MAX_SPKAC {
        return Err(HostError::range_error(format!("SPKACs above {MAX_SPKAC} bytes are not supported")));
    }
    let answer = decode(&spkac).and_then(|spki| answer(&spki, &what));
    match answer {
        Some(bytes) => Ok(u8_array(scope, bytes).map(Into::into)),
        None => Ok(Some(v8::undefined(scope).into())),
    }
}
}
