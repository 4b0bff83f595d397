//! sign/verify, encrypt/decrypt (and AES-KW wrap/unwrap), deriveBits: the
//! operations on key material. The JavaScript side has already normalised the
//! algorithm, checked the key's algorithm and usages; this file checks what
//! only the material can tell (key type, sizes) and calls the RustCrypto crates
//! (and AWS-LC for RSA signatures, `aws_lc.rs`).

use aes_gcm::aead::consts::{U12, U16, U32, U64};
use aes_gcm::aead::{AeadInPlace, KeyInit};
use cbc::cipher::block_padding::Pkcs7;
use cbc::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit, StreamCipher};
use ecdsa::signature::hazmat::{PrehashSigner, PrehashVerifier};
use hmac::Mac;
use rand_core::OsRng;
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha384, Sha512};

use super::aws_lc;
use super::error::{CryptoError, Result};
use super::key::{EcPrivate, EcPublic, Key, with_curve};
use super::params::Params;

/// PBKDF2 iterations above this are refused (`NotSupportedError`), as on
/// Cloudflare's Workers.
pub const PBKDF2_MAX_ITERATIONS: u32 = 100_000;

/// Output blocks × iterations one PBKDF2 call may cost (8 blocks, 256 bytes
/// of SHA-256 output, at the iteration cap): about half a second of CPU.
const PBKDF2_MAX_WORK: u64 = 8 * PBKDF2_MAX_ITERATIONS as u64;

/// Runs `$body` with `$h` bound to the hash type `params.hash` names.
macro_rules! with_hash {
    ($name:expr, |$h:ident| $body:expr) => {
        match $name {
            "SHA-1" => {
                type $h = Sha1;
                $body
            }
            "SHA-256" => {
                type $h = Sha256;
                $body
            }
            "SHA-384" => {
                type $h = Sha384;
                $body
            }
            "SHA-512" => {
                type $h = Sha512;
                $body
            }
            other => Err(CryptoError::not_supported(format!(
                "Unsupported hash: {other}"
            ))),
        }
    };
}

fn hash_name(params: &Params) -> Result<&str> {
    params
        .hash
        .as_deref()
        .ok_or_else(|| CryptoError::Type("hash is required".to_owned()))
}

fn digest_of(hash: &str, data: &[u8]) -> Result<Vec<u8>> {
    with_hash!(hash, |H| Ok(H::digest(data).to_vec()))
}

/// The hash ECDSA signs: a hash shorter than the field is left-padded with
/// zeros to the field's size (the same integer, SEC 1 §4.1.3), which the
/// `ecdsa` crate would do itself except that it refuses hashes shorter than
/// half the field (SHA-1 on P-384, SHA-256 on P-521), which Web Crypto allows.
fn ecdsa_prehash(hash: &str, data: &[u8], field_bytes: usize) -> Result<Vec<u8>> {
    let digest = digest_of(hash, data)?;
    if digest.len() >= field_bytes {
        return Ok(digest);
    }
    let mut padded = vec![0u8; field_bytes - digest.len()];
    padded.extend_from_slice(&digest);
    Ok(padded)
}

fn secret(key: &Key) -> Result<&[u8]> {
    match key {
        Key::Secret(bytes) => Ok(bytes),
        _ => Err(CryptoError::access("The key is not a secret key")),
    }
}

// === sign / verify ===

pub fn sign(algorithm: &str, key: &Key, params: &Params, data: &[u8]) -> Result<Vec<u8>> {
    // RSA signing goes to AWS-LC where it can (`aws_lc.rs`): 3× faster and
    // constant time; the rest, below, to the `rsa` crate.
    if let Key::RsaPrivate(k) = key
        && let Some(hash) = params.hash.as_deref()
        && let Some(encoding) = aws_lc::encoding(algorithm, hash, params.salt_length)
        && let Some(signer) = k.signer()
    {
        return aws_lc::sign(signer, encoding, data);
    }
    match (algorithm, key) {
        ("HMAC", Key::Secret(k)) => with_hash!(hash_name(params)?, |H| {
            let mut mac = <hmac::Hmac<H> as Mac>::new_from_slice(k)
                .map_err(|_| CryptoError::operation("Invalid HMAC key"))?;
            mac.update(data);
            Ok(mac.finalize().into_bytes().to_vec())
        }),
        ("RSASSA-PKCS1-v1_5", Key::RsaPrivate(k)) => with_hash!(hash_name(params)?, |H| {
            let hashed = H::digest(data);
            k.sign_with_rng(&mut OsRng, rsa::Pkcs1v15Sign::new::<H>(), &hashed)
                .map_err(|e| CryptoError::operation(format!("RSA signing failed: {e}")))
        }),
        ("RSA-PSS", Key::RsaPrivate(k)) => with_hash!(hash_name(params)?, |H| {
            let hashed = H::digest(data);
            let salt = params.salt_length.unwrap_or(0);
            k.sign_with_rng(&mut OsRng, rsa::Pss::new_with_salt::<H>(salt), &hashed)
                .map_err(|e| CryptoError::operation(format!("RSA-PSS signing failed: {e}")))
        }),
        ("ECDSA", Key::EcPrivate(k)) => {
            let hashed = ecdsa_prehash(hash_name(params)?, data, k.curve().field_bytes())?;
            with_curve!(EcPrivate, k, |k, c| {
                let signer = c::ecdsa::SigningKey::from_slice(&k.to_bytes())
                    .map_err(|_| CryptoError::operation("Invalid EC private key"))?;
                let signature: c::ecdsa::Signature = signer
                    .sign_prehash(&hashed)
                    .map_err(|e| CryptoError::operation(format!("ECDSA signing failed: {e}")))?;
                Ok(signature.to_bytes().to_vec())
            })
        }
        ("Ed25519", Key::Ed25519Private(k)) => {
            use ed25519_dalek::Signer;
            Ok(k.sign(data).to_bytes().to_vec())
        }
        _ => Err(CryptoError::access(
            "The key cannot be used to sign with this algorithm",
        )),
    }
}

pub fn verify(
    algorithm: &str,
    key: &Key,
    params: &Params,
    signature: &[u8],
    data: &[u8],
) -> Result<bool> {
    if let Some(valid) = super::fast_verify::verify(algorithm, key, params, signature, data) {
        return Ok(valid);
    }
    match (algorithm, key) {
        ("HMAC", Key::Secret(k)) => with_hash!(hash_name(params)?, |H| {
            let mut mac = <hmac::Hmac<H> as Mac>::new_from_slice(k)
                .map_err(|_| CryptoError::operation("Invalid HMAC key"))?;
            mac.update(data);
            // Constant time (`subtle`), whatever the length.
            Ok(mac.verify_slice(signature).is_ok())
        }),
        ("RSASSA-PKCS1-v1_5", Key::RsaPublic(k)) => with_hash!(hash_name(params)?, |H| {
            let hashed = H::digest(data);
            Ok(k.verify(rsa::Pkcs1v15Sign::new::<H>(), &hashed, signature)
                .is_ok())
        }),
        ("RSA-PSS", Key::RsaPublic(k)) => with_hash!(hash_name(params)?, |H| {
            let hashed = H::digest(data);
            let salt = params.salt_length.unwrap_or(0);
            Ok(
                k.verify(rsa::Pss::new_with_salt::<H>(salt), &hashed, signature)
                    .is_ok(),
            )
        }),
        ("ECDSA", Key::EcPublic(k)) => {
            let hashed = ecdsa_prehash(hash_name(params)?, data, k.curve().field_bytes())?;
            Ok(with_curve!(EcPublic, k, |k, c| {
                let Ok(signature) = c::ecdsa::Signature::from_slice(signature) else {
                    return Ok(false);
                };
                let Ok(verifier) = c::ecdsa::VerifyingKey::from_affine(*k.as_affine()) else {
                    return Ok(false);
                };
                verifier.verify_prehash(&hashed, &signature).is_ok()
            }))
        }
        ("Ed25519", Key::Ed25519Public(k)) => {
            let Ok(signature) = ed25519_dalek::Signature::from_slice(signature) else {
                return Ok(false);
            };
            Ok(ed25519_dalek::Verifier::verify(k, data, &signature).is_ok())
        }
        _ => Err(CryptoError::access(
            "The key cannot be used to verify with this algorithm",
        )),
    }
}

// === encrypt / decrypt ===

/// AES-GCM, AES-CBC, AES-CTR, AES-KW (wrap/unwrap) and RSA-OAEP.
pub fn cipher(
    algorithm: &str,
    key: &Key,
    params: &Params,
    data: &[u8],
    encrypt: bool,
) -> Result<Vec<u8>> {
    match algorithm {
        "AES-GCM" => aes_gcm(secret(key)?, params, data, encrypt),
        "AES-CBC" => aes_cbc(secret(key)?, params, data, encrypt),
        "AES-CTR" => aes_ctr(secret(key)?, params, data),
        "AES-KW" => aes_kw(secret(key)?, data, encrypt),
        "RSA-OAEP" => rsa_oaep(key, params, data, encrypt),
        other => Err(CryptoError::not_supported(format!(
            "Unsupported algorithm: {other}"
        ))),
    }
}

/// Runs `$body` with `$a` bound to the AES variant for a key of `$len` bytes.
macro_rules! with_aes {
    ($len:expr, |$a:ident| $body:expr) => {
        match $len {
            16 => {
                type $a = aes::Aes128;
                $body
            }
            24 => {
                type $a = aes::Aes192;
                $body
            }
            32 => {
                type $a = aes::Aes256;
                $body
            }
            _ => Err(CryptoError::data("An AES key is 128, 192 or 256 bits")),
        }
    };
}

/// AES-GCM with IVs of 12 bytes (what everyone uses), 16, 32 or 64 bytes
/// (each an instantiation of the crate's nonce size) and tags of 32–128 bits.
fn aes_gcm(key: &[u8], params: &Params, data: &[u8], encrypt: bool) -> Result<Vec<u8>> {
    let tag_bytes = match params.tag_length.unwrap_or(128) {
        bits @ (32 | 64 | 96 | 104 | 112 | 120 | 128) => bits / 8,
        other => {
            return Err(CryptoError::operation(format!(
                "Invalid AES-GCM tag length: {other}"
            )));
        }
    };
    let iv = params.iv.as_deref().unwrap_or_default();
    let aad = params.additional_data.as_deref().unwrap_or_default();
    macro_rules! run {
        ($nonce:ty) => {
            with_aes!(key.len(), |A| {
                let cipher = aes_gcm::AesGcm::<A, $nonce>::new_from_slice(key)
                    .map_err(|_| CryptoError::data("Invalid AES key"))?;
                let nonce = aes_gcm::Nonce::<$nonce>::from_slice(iv);
                gcm(&cipher, nonce, aad, data, encrypt, tag_bytes)
            })
        };
    }
    match iv.len() {
        12 => run!(U12),
        16 => run!(U16),
        32 => run!(U32),
        64 => run!(U64),
        other => Err(CryptoError::not_supported(format!(
            "AES-GCM: IVs of {other} bytes are not supported (12, 16, 32 or 64)"
        ))),
    }
}

/// GCM with a tag of `tag_bytes` (4–16). Shorter tags are the full tag's
/// first bytes (NIST SP 800-38D §5.2.1.2). To check one, the ciphertext is
/// turned back into the plaintext by the keystream (GCM encryption of the
/// ciphertext), and the plaintext encrypted again gives the full tag of the
/// ciphertext, compared in constant time; the crate's own decryption checks
/// only full tags.
fn gcm<C>(
    cipher: &C,
    nonce: &aes_gcm::aead::Nonce<C>,
    aad: &[u8],
    data: &[u8],
    encrypt: bool,
    tag_bytes: usize,
) -> Result<Vec<u8>>
where
    C: AeadInPlace<TagSize = U16>,
{
    let failed = || CryptoError::operation("The operation failed for an operation-specific reason");
    if encrypt {
        let mut out = data.to_vec();
        let tag = cipher
            .encrypt_in_place_detached(nonce, aad, &mut out)
            .map_err(|_| CryptoError::operation("AES-GCM encryption failed"))?;
        out.extend_from_slice(tag.get(..tag_bytes).unwrap_or_default());
        return Ok(out);
    }
    let Some(split) = data.len().checked_sub(tag_bytes) else {
        return Err(failed());
    };
    let (ciphertext, tag) = data.split_at(split);
    let mut out = ciphertext.to_vec();
    if tag_bytes == 16 {
        let tag = aes_gcm::Tag::<U16>::from_slice(tag);
        cipher
            .decrypt_in_place_detached(nonce, aad, &mut out, tag)
            .map_err(|_| failed())?;
        return Ok(out);
    }
    // `out` becomes the plaintext; encrypting a copy yields the ciphertext's tag.
    cipher
        .encrypt_in_place_detached(nonce, aad, &mut out)
        .map_err(|_| failed())?;
    let mut again = zeroize::Zeroizing::new(out.clone());
    let full = cipher
        .encrypt_in_place_detached(nonce, aad, &mut again)
        .map_err(|_| failed())?;
    let prefix = full.get(..tag_bytes).unwrap_or_default();
    if bool::from(subtle::ConstantTimeEq::ct_eq(prefix, tag)) {
        Ok(out)
    } else {
        zeroize::Zeroize::zeroize(&mut out);
        Err(failed())
    }
}

fn aes_cbc(key: &[u8], params: &Params, data: &[u8], encrypt: bool) -> Result<Vec<u8>> {
    let iv = params.iv.as_deref().unwrap_or_default();
    if iv.len() != 16 {
        return Err(CryptoError::operation("AES-CBC: the iv must be 16 bytes"));
    }
    with_aes!(key.len(), |A| {
        if encrypt {
            let cipher = cbc::Encryptor::<A>::new_from_slices(key, iv)
                .map_err(|_| CryptoError::data("Invalid AES key"))?;
            Ok(cipher.encrypt_padded_vec_mut::<Pkcs7>(data))
        } else {
            let cipher = cbc::Decryptor::<A>::new_from_slices(key, iv)
                .map_err(|_| CryptoError::data("Invalid AES key"))?;
            cipher
                .decrypt_padded_vec_mut::<Pkcs7>(data)
                .map_err(|_| CryptoError::operation("AES-CBC: bad padding"))
        }
    })
}

/// AES-CTR as Web Crypto defines it: only the rightmost `length` bits of
/// the counter block count up, and they wrap without carrying into the rest.
fn aes_ctr(key: &[u8], params: &Params, data: &[u8]) -> Result<Vec<u8>> {
    let counter: [u8; 16] = params
        .counter
        .as_deref()
        .unwrap_or_default()
        .try_into()
        .map_err(|_| CryptoError::operation("AES-CTR: the counter must be 16 bytes"))?;
    let length = params.length.unwrap_or(0);
    if !(1..=128).contains(&length) {
        return Err(CryptoError::operation(
            "AES-CTR: length must be from 1 to 128",
        ));
    }
    let blocks = data.len().div_ceil(16) as u128;
    if length < 128 && blocks > (1u128 << length) {
        return Err(CryptoError::operation(
            "AES-CTR: the data is longer than the counter allows",
        ));
    }
    let mask = if length == 128 {
        u128::MAX
    } else {
        (1u128 << length) - 1
    };
    let start = u128::from_be_bytes(counter);
    // Blocks until the counting bits wrap (never, for length 128: the
    // 128-bit counter wraps as Web Crypto wants).
    let before_wrap = if length == 128 {
        u128::MAX
    } else {
        mask - (start & mask) + 1
    };
    let split =
        usize::try_from(before_wrap.saturating_mul(16)).map_or(data.len(), |b| b.min(data.len()));
    let mut out = data.to_vec();
    let (first, rest) = out.split_at_mut(split);
    with_aes!(key.len(), |A| {
        let mut cipher = ctr::Ctr128BE::<A>::new_from_slices(key, &counter)
            .map_err(|_| CryptoError::data("Invalid AES key"))?;
        cipher.apply_keystream(first);
        if !rest.is_empty() {
            let wrapped = (start & !mask).to_be_bytes();
            let mut cipher = ctr::Ctr128BE::<A>::new_from_slices(key, &wrapped)
                .map_err(|_| CryptoError::data("Invalid AES key"))?;
            cipher.apply_keystream(rest);
        }
        Ok(())
    })?;
    Ok(out)
}

fn aes_kw(key: &[u8], data: &[u8], wrap: bool) -> Result<Vec<u8>> {
    with_aes!(key.len(), |A| {
        let kek =
            aes_kw::Kek::<A>::try_from(key).map_err(|_| CryptoError::data("Invalid AES-KW key"))?;
        if wrap {
            kek.wrap_vec(data).map_err(|_| {
                CryptoError::operation(
                    "AES-KW: the data must be a multiple of 8 bytes, at least 16",
                )
            })
        } else {
            kek.unwrap_vec(data)
                .map_err(|_| CryptoError::operation("AES-KW: unwrapping failed"))
        }
    })
}

fn rsa_oaep(key: &Key, params: &Params, data: &[u8], encrypt: bool) -> Result<Vec<u8>> {
    let label = match params.label.as_deref() {
        None | Some([]) => None,
        Some(bytes) => Some(String::from_utf8(bytes.to_vec()).map_err(|_| {
            CryptoError::not_supported("RSA-OAEP: only UTF-8 labels are supported")
        })?),
    };
    with_hash!(hash_name(params)?, |H| {
        let padding = match &label {
            Some(label) => rsa::Oaep::new_with_label::<H, _>(label.as_str()),
            None => rsa::Oaep::new::<H>(),
        };
        match (key, encrypt) {
            (Key::RsaPublic(k), true) => k
                .encrypt(&mut OsRng, padding, data)
                .map_err(|e| CryptoError::operation(format!("RSA-OAEP encryption failed: {e}"))),
            (Key::RsaPrivate(k), false) => k
                .decrypt_blinded(&mut OsRng, padding, data)
                .map_err(|_| CryptoError::operation("RSA-OAEP decryption failed")),
            _ => Err(CryptoError::access("Wrong key type for RSA-OAEP")),
        }
    })
}

// === deriveBits ===

/// HKDF, ECDH and X25519 (cheap). PBKDF2 is [`pbkdf2`], run off the thread.
pub fn derive(
    algorithm: &str,
    key: &Key,
    params: &Params,
    length: Option<usize>,
) -> Result<Vec<u8>> {
    let bits = match algorithm {
        "HKDF" => return hkdf_bits(key, params, length),
        "ECDH" => ecdh_bits(key, params)?,
        "X25519" => x25519_bits(key, params)?,
        other => {
            return Err(CryptoError::not_supported(format!(
                "Unsupported algorithm: {other}"
            )));
        }
    };
    truncate_bits(bits, length)
}

/// HKDF (RFC 5869): `length` bits, a multiple of 8, of at most 255 blocks.
fn hkdf_bits(key: &Key, params: &Params, length: Option<usize>) -> Result<Vec<u8>> {
    let length = length.ok_or_else(|| CryptoError::operation("HKDF: length is required"))?;
    if !length.is_multiple_of(8) {
        return Err(CryptoError::operation(
            "HKDF: length must be a multiple of 8",
        ));
    }
    let salt = params.salt.as_deref().unwrap_or_default();
    let info = params.info.as_deref().unwrap_or_default();
    // RFC 5869: at most 255 blocks of the hash (checked before allocating).
    if length / 8 > 255 * 64 {
        return Err(CryptoError::operation(
            "HKDF: length too large for the hash",
        ));
    }
    let mut out = vec![0u8; length / 8];
    with_hash!(hash_name(params)?, |H| {
        hkdf::Hkdf::<H>::new(Some(salt), secret(key)?)
            .expand(info, &mut out)
            .map_err(|_| CryptoError::operation("HKDF: length too large for the hash"))
    })?;
    Ok(out)
}

/// ECDH between an EC private key and the `public` parameter, same curve.
fn ecdh_bits(key: &Key, params: &Params) -> Result<Vec<u8>> {
    let (Key::EcPrivate(private), Some(Key::EcPublic(public))) = (key, params.public.as_deref())
    else {
        return Err(CryptoError::access(
            "ECDH needs an EC private key and an EC public key",
        ));
    };
    let shared = match (private, public) {
        (EcPrivate::P256(s), EcPublic::P256(p)) => {
            p256::ecdh::diffie_hellman(s.to_nonzero_scalar(), p.as_affine())
                .raw_secret_bytes()
                .to_vec()
        }
        (EcPrivate::P384(s), EcPublic::P384(p)) => {
            p384::ecdh::diffie_hellman(s.to_nonzero_scalar(), p.as_affine())
                .raw_secret_bytes()
                .to_vec()
        }
        (EcPrivate::P521(s), EcPublic::P521(p)) => {
            p521::ecdh::diffie_hellman(s.to_nonzero_scalar(), p.as_affine())
                .raw_secret_bytes()
                .to_vec()
        }
        _ => {
            return Err(CryptoError::access(
                "ECDH: the keys are on different curves",
            ));
        }
    };
    Ok(shared)
}

/// X25519 between a private key and the `public` parameter; an all-zero
/// (non-contributory) secret is refused.
fn x25519_bits(key: &Key, params: &Params) -> Result<Vec<u8>> {
    let (Key::X25519Private(private), Some(Key::X25519Public(public))) =
        (key, params.public.as_deref())
    else {
        return Err(CryptoError::access(
            "X25519 needs an X25519 private key and public key",
        ));
    };
    let shared = private.diffie_hellman(public);
    if !shared.was_contributory() {
        return Err(CryptoError::operation(
            "X25519: the shared secret is all zero",
        ));
    }
    Ok(shared.as_bytes().to_vec())
}

/// The first `length` bits of `bits` (all when `None`).
fn truncate_bits(mut bits: Vec<u8>, length: Option<usize>) -> Result<Vec<u8>> {
    let Some(length) = length else {
        return Ok(bits);
    };
    if length > bits.len() * 8 {
        return Err(CryptoError::operation(
            "The length is longer than the derived secret",
        ));
    }
    bits.truncate(length.div_ceil(8));
    if !length.is_multiple_of(8)
        && let Some(last) = bits.last_mut()
    {
        *last &= 0xffu8 << (8 - length % 8);
    }
    Ok(bits)
}

/// Checks PBKDF2 parameters (cheap; before any work is queued).
pub fn pbkdf2_check(params: &Params, length: Option<usize>) -> Result<(usize, u32)> {
    let length = length.ok_or_else(|| CryptoError::operation("PBKDF2: length is required"))?;
    if length == 0 || !length.is_multiple_of(8) {
        return Err(CryptoError::operation(
            "PBKDF2: length must be a non-zero multiple of 8",
        ));
    }
    let iterations = params.iterations.unwrap_or(0);
    if iterations == 0 {
        return Err(CryptoError::operation(
            "PBKDF2: iterations must not be zero",
        ));
    }
    if iterations > PBKDF2_MAX_ITERATIONS {
        return Err(CryptoError::not_supported(format!(
            "Pbkdf2 failed: iteration counts above {PBKDF2_MAX_ITERATIONS} are not supported (requested {iterations})"
        )));
    }
    let hash_bytes = match params.hash.as_deref() {
        Some("SHA-1") => 20,
        Some("SHA-256") => 32,
        Some("SHA-384") => 48,
        _ => 64,
    };
    // A started job cannot be interrupted (see `offload.rs`), so one call's
    // work is bounded: output blocks × iterations, 8 blocks at the cap.
    let blocks = (length / 8).div_ceil(hash_bytes).max(1) as u64;
    if blocks * u64::from(iterations) > PBKDF2_MAX_WORK {
        return Err(CryptoError::not_supported(format!(
            "Pbkdf2 failed: {blocks} output blocks of {iterations} iterations are more than {PBKDF2_MAX_WORK} HMAC evaluations"
        )));
    }
    Ok((length / 8, iterations))
}

/// PBKDF2-HMAC: slow by design, so it runs off the isolate's thread.
pub fn pbkdf2(
    hash: &str,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
    bytes: usize,
) -> Result<Vec<u8>> {
    let mut out = vec![0u8; bytes];
    with_hash!(hash, |H| {
        pbkdf2::pbkdf2_hmac::<H>(password, salt, iterations, &mut out);
        Ok(())
    })?;
    Ok(out)
}

/// The digest of `data` for `crypto.DigestStream` and `host.digest` (MD5 too).
pub fn new_hasher(algorithm: &str) -> Option<Box<dyn sha2::digest::DynDigest>> {
    Some(match algorithm {
        "SHA-1" => Box::new(Sha1::new()),
        "SHA-256" => Box::new(Sha256::new()),
        "SHA-384" => Box::new(Sha384::new()),
        "SHA-512" => Box::new(Sha512::new()),
        "MD5" => Box::new(md5::Md5::new()),
        _ => return None,
    })
}
