//! RSA key generation and signing with AWS-LC (the `aws-lc-rs` crate, and
//! `aws-lc-sys` for a key generation that can be stopped): BoringSSL's code,
//! 3–8× faster than the `rsa` crate's, and constant time.
//!
//! Key generation calls `RSA_generate_key_ex` with a progress callback that
//! AWS-LC calls for every prime candidate and every Miller–Rabin round
//! (microseconds to a few milliseconds apart); the callback asks the job's
//! [`Stop`] and, when the request's CPU budget is spent or the request is
//! gone, makes the generation fail at once. `aws-lc-rs`'s own
//! `KeyPair::generate` has no such callback.
//!
//! Key material: AWS-LC's allocator wipes every block it frees
//! (`OPENSSL_free` cleanses), so an `RSA` freed here, and a
//! `aws_lc_rs::rsa::KeyPair` dropped, leave no key behind; the DER copies made
//! on the Rust side are `Zeroizing`.

use std::ffi::{c_int, c_void};

use aws_lc_rs::rsa::KeyPair;
use aws_lc_rs::signature::RsaEncoding;
use aws_lc_sys as sys;
use zeroize::Zeroizing;

use isolane_engine::api::Stop;

use super::error::{CryptoError, Result};

/// Smallest modulus AWS-LC signs with (`aws-lc-rs` refuses smaller keys);
/// smaller keys sign with the `rsa` crate.
pub const SIGNING_MIN_BITS: usize = 2048;

/// Generates an RSA key of `bits` with the public exponent `e`, asking
/// `stop` between steps. Returns the key as a PKCS#1 `RSAPrivateKey` (DER).
/// `bits` must be a multiple of 128 (AWS-LC rounds other sizes down).
pub fn generate(bits: usize, e: u32, stop: &Stop) -> Result<Zeroizing<Vec<u8>>> {
    if !bits.is_multiple_of(128) {
        return Err(failed());
    }
    let bits = c_int::try_from(bits).map_err(|_| failed())?;
    // SAFETY: each pointer comes from its `_new` function, is checked for
    // null by `Owned::new` and freed once by its `Owned` (after the calls
    // that use it, which do not keep it); the generation's callback is
    // alive for its call.
    unsafe {
        let rsa = Owned::new(sys::RSA_new(), sys::RSA_free)?;
        let exponent = Owned::new(sys::BN_new(), sys::BN_free)?;
        if sys::BN_set_word(exponent.0, e.into()) != 1 {
            return Err(failed());
        }
        let generated = with_progress(stop, |callback| {
            sys::RSA_generate_key_ex(rsa.0, bits, exponent.0, callback) == 1
        })?;
        if !generated {
            return Err(if stop.now() {
                CryptoError::operation("RSA key generation was stopped")
            } else {
                failed()
            });
        }
        private_key_der(rsa.0)
    }
}

/// Runs `generate` with an AWS-LC progress callback asking `stop` (one
/// for RSA keys here, Diffie-Hellman primes in `node/crypto_dh.rs`, and
/// `node:crypto`'s primes in `node/crypto_prime.rs`), then clears this
/// thread's AWS-LC error queue so no error is left for the next call.
pub fn with_progress<T>(stop: &Stop, generate: impl FnOnce(*mut sys::BN_GENCB) -> T) -> Result<T> {
    // SAFETY: the callback is freed by its `Owned` after `generate`, the
    // only time AWS-LC calls `progress` with `stop` (alive throughout).
    unsafe {
        let callback = Owned::new(sys::BN_GENCB_new(), sys::BN_GENCB_free)?;
        let arg = std::ptr::from_ref(stop).cast_mut().cast::<c_void>();
        sys::BN_GENCB_set(callback.0, Some(progress), arg);
        let answer = generate(callback.0);
        sys::ERR_clear_error();
        Ok(answer)
    }
}

/// AWS-LC's progress callback (see [`with_progress`]): 0 stops the
/// generation.
///
/// # Safety
/// `callback`'s argument is the `&Stop` given to `BN_GENCB_set` (as in
/// [`generate`]), alive for the whole generation.
unsafe extern "C" fn progress(_event: c_int, _n: c_int, callback: *mut sys::BN_GENCB) -> c_int {
    // SAFETY: see the function's contract; `Stop::now` cannot panic, so
    // nothing unwinds through AWS-LC's frames.
    let stop = unsafe { &*sys::BN_GENCB_get_arg(callback).cast::<Stop>() };
    c_int::from(!stop.now())
}

/// The PKCS#1 DER of a private key.
///
/// # Safety
/// `rsa` is a valid `RSA` holding a private key.
unsafe fn private_key_der(rsa: *const sys::RSA) -> Result<Zeroizing<Vec<u8>>> {
    let mut out: *mut u8 = std::ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: `rsa` is valid (the contract); on success `out` is an
    // AWS-LC allocation of `len` bytes, copied and then freed (and wiped)
    // by `OPENSSL_free`.
    unsafe {
        if sys::RSA_private_key_to_bytes(&raw mut out, &raw mut len, rsa) != 1 || out.is_null() {
            return Err(failed());
        }
        let der = Zeroizing::new(std::slice::from_raw_parts(out, len).to_vec());
        sys::OPENSSL_free(out.cast());
        Ok(der)
    }
}

fn failed() -> CryptoError {
    CryptoError::operation("RSA key generation failed")
}

/// An AWS-LC object freed by its own function when dropped.
struct Owned<T>(*mut T, unsafe extern "C" fn(*mut T));

impl<T> Owned<T> {
    fn new(ptr: *mut T, free: unsafe extern "C" fn(*mut T)) -> Result<Self> {
        if ptr.is_null() {
            return Err(CryptoError::operation("Out of memory"));
        }
        Ok(Self(ptr, free))
    }
}

impl<T> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: the pointer came from the matching `_new` (not null) and
        // is freed only here.
        unsafe { (self.1)(self.0) }
    }
}

// === signing ===

/// AWS-LC's form of a private key, for signing, from its PKCS#1 DER;
/// `None` for keys AWS-LC does not sign with (under 2048 bits).
pub fn signer(pkcs1_der: &[u8]) -> Option<KeyPair> {
    KeyPair::from_der(pkcs1_der).ok()
}

/// The AWS-LC encoding of a Web Crypto signature algorithm, if it has one:
/// RSASSA-PKCS1-v1_5 and RSA-PSS with SHA-256/384/512, PSS only with a salt
/// as long as the hash (the JWT `PS*` algorithms; other salts and SHA-1 go
/// to the `rsa` crate).
pub fn encoding(
    algorithm: &str,
    hash: &str,
    salt_length: Option<usize>,
) -> Option<&'static dyn RsaEncoding> {
    use aws_lc_rs::signature as s;
    let hash_len = match hash {
        "SHA-256" => 32,
        "SHA-384" => 48,
        "SHA-512" => 64,
        _ => return None,
    };
    match (algorithm, hash) {
        ("RSASSA-PKCS1-v1_5", "SHA-256") => Some(&s::RSA_PKCS1_SHA256),
        ("RSASSA-PKCS1-v1_5", "SHA-384") => Some(&s::RSA_PKCS1_SHA384),
        ("RSASSA-PKCS1-v1_5", "SHA-512") => Some(&s::RSA_PKCS1_SHA512),
        ("RSA-PSS", _) if salt_length != Some(hash_len) => None,
        ("RSA-PSS", "SHA-256") => Some(&s::RSA_PSS_SHA256),
        ("RSA-PSS", "SHA-384") => Some(&s::RSA_PSS_SHA384),
        ("RSA-PSS", "SHA-512") => Some(&s::RSA_PSS_SHA512),
        _ => None,
    }
}

/// Signs `data` with `key` (`encoding` from [`encoding`]).
pub fn sign(key: &KeyPair, encoding: &'static dyn RsaEncoding, data: &[u8]) -> Result<Vec<u8>> {
    let mut signature = vec![0u8; key.public_modulus_len()];
    // aws-lc-rs ignores the random source (AWS-LC draws its own).
    key.sign(
        encoding,
        &aws_lc_rs::rand::SystemRandom::new(),
        data,
        &mut signature,
    )
    .map_err(|_| CryptoError::operation("RSA signing failed"))?;
    Ok(signature)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::traits::PublicKeyParts;
    use sha2::{Digest, Sha256};

    use super::*;

    /// A stop fired from the start (`gone`) or after `budget`.
    fn stop_for_test(gone: bool, budget: Duration) -> Stop {
        Stop::for_request(
            std::sync::Arc::new(std::sync::atomic::AtomicBool::new(gone)),
            budget,
        )
    }

    #[test]
    fn a_generated_key_is_the_size_and_exponent_asked_for_and_signs() {
        let stop = stop_for_test(false, Duration::MAX);
        let der = generate(2048, 65_537, &stop).unwrap();
        let parts = rsa::RsaPrivateKey::from_pkcs1_der(&der).unwrap();
        assert_eq!(
            (parts.size() * 8, parts.e().to_bytes_be()),
            (2048, vec![1, 0, 1])
        );
        let pair = signer(&der).unwrap();
        let encoding = encoding("RSASSA-PKCS1-v1_5", "SHA-256", None).unwrap();
        let signature = sign(&pair, encoding, b"data").unwrap();
        let public = parts.to_public_key();
        let scheme = rsa::Pkcs1v15Sign::new::<Sha256>();
        assert!(
            public
                .verify(scheme, &Sha256::digest(b"data"), &signature)
                .is_ok()
        );

        let small = generate(1024, 3, &stop).unwrap();
        let parts = rsa::RsaPrivateKey::from_pkcs1_der(&small).unwrap();
        assert_eq!((parts.size() * 8, parts.e().to_bytes_be()), (1024, vec![3]));
        assert!(
            signer(&small).is_none(),
            "AWS-LC does not sign under 2048 bits"
        );
    }

    #[test]
    fn a_stopped_generation_fails_as_stopped() {
        let error = generate(4096, 65_537, &stop_for_test(true, Duration::MAX)).unwrap_err();
        assert!(error.to_string().contains("stopped"), "{error}");
        let error = generate(4096, 65_537, &stop_for_test(false, Duration::ZERO)).unwrap_err();
        assert!(error.to_string().contains("stopped"), "{error}");
    }

    #[test]
    fn only_digest_long_pss_salts_and_sha2_go_to_aws_lc() {
        assert!(encoding("RSA-PSS", "SHA-256", Some(32)).is_some());
        assert!(encoding("RSA-PSS", "SHA-256", Some(0)).is_none());
        assert!(encoding("RSA-PSS", "SHA-512", Some(64)).is_some());
        assert!(encoding("RSASSA-PKCS1-v1_5", "SHA-1", None).is_none());
        assert!(encoding("RSASSA-PKCS1-v1_5", "SHA-384", Some(3)).is_some());
    }
}
