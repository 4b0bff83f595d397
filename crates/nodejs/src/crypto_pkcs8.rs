//! Encrypted PKCS#8 private keys (`ENCRYPTED PRIVATE KEY`, PBES2 with PBKDF2
//! (HMAC-SHA-1/224/256/384/512) or scrypt and AES-CBC or DES-EDE3-CBC, the
//! `pkcs8` crate's `encryption` feature): read
//! with a passphrase, written as Node writes them (PBKDF2-HMAC-SHA256, 2048
//! iterations, an 8-byte salt, a random IV).
//!
//! The key derivation runs on the isolate's thread, so its cost, which an
//! attacker's key chooses, is bounded per call as `pbkdf2Sync`'s and
//! `scryptSync`'s are (at most 100 000 PBKDF2 iterations, scrypt's N × r × p
//! at most 2^20 and its memory within the Worker's limit): one call holds the
//! thread for a bounded time, a loop of them meets the CPU limit between
//! calls, and a key past the bound is refused at once with a message saying
//! so, before any work.

use pkcs8::pkcs5::{self, pbes2};
use pkcs8::{EncryptedPrivateKeyInfo, SecretDocument};
use spki::der::Decode;
use zeroize::Zeroizing;

use isolane_engine::api::{HostError, HostResult};
use isolane_web::crypto::error::{CryptoError, Result};
use isolane_web::crypto::ops;
use isolane_web::crypto::params::Params;

/// The iterations Node (OpenSSL) writes.
const EXPORT_ITERATIONS: u32 = 2048;

/// What a wrong passphrase (or a key that does not decrypt) says; the
/// JavaScript side gives it Node's code.
pub(super) const BAD_DECRYPT: &str = "bad decrypt";

/// What a missing passphrase says (Node's `ERR_MISSING_PASSPHRASE`).
pub(super) const MISSING_PASSPHRASE: &str = "Passphrase required for encrypted key";

/// Whether `der` is an `EncryptedPrivateKeyInfo`.
pub(super) fn is_encrypted(der: &[u8]) -> bool {
    EncryptedPrivateKeyInfo::from_der(der).is_ok()
}

/// The PKCS#8 DER inside the encrypted key `der`, after checking the cost
/// of its key derivation (`fits`: whether that many bytes of working memory
/// fit the Worker's memory limit).
pub(super) fn decrypt(
    der: &[u8],
    passphrase: Option<&[u8]>,
    mut fits: impl FnMut(usize) -> bool,
) -> HostResult<Zeroizing<Vec<u8>>> {
    let info = EncryptedPrivateKeyInfo::from_der(der).map_err(|e| {
        CryptoError::data(format!(
            "Invalid or unsupported encrypted PKCS#8 key (PBES2 is supported): {e}"
        ))
    })?;
    let passphrase = passphrase.ok_or_else(|| CryptoError::Type(MISSING_PASSPHRASE.to_owned()))?;
    let pkcs5::EncryptionScheme::Pbes2(params) = &info.encryption_algorithm else {
        return Err(CryptoError::not_supported(
            "Encrypted private keys under PBES1 are not supported (PBES2 is)",
        )
        .into());
    };
    check_cost(&params.kdf, &mut fits)?;
    let document = info.decrypt(passphrase).map_err(|e| match e {
        // pkcs5 0.7 reports bad padding as `EncryptFailed`.
        pkcs8::Error::EncryptedPrivateKey(
            pkcs5::Error::DecryptFailed | pkcs5::Error::EncryptFailed,
        ) => CryptoError::data(BAD_DECRYPT),
        e => CryptoError::not_supported(format!("Unsupported encrypted private key: {e}")),
    })?;
    let der = Zeroizing::new(document.as_bytes().to_vec());
    // A wrong passphrase can leave valid padding by chance: then the
    // plaintext is not a key.
    pkcs8::PrivateKeyInfo::from_der(&der).map_err(|_| CryptoError::data(BAD_DECRYPT))?;
    Ok(der)
}

/// Refuses a key derivation costlier than one `pbkdf2Sync`/`scryptSync`
/// call may be, or whose memory does not fit.
fn check_cost(kdf: &pbes2::Kdf<'_>, fits: &mut impl FnMut(usize) -> bool) -> HostResult<()> {
    match kdf {
        pbes2::Kdf::Pbkdf2(p) => {
            let hash = match p.prf {
                pbes2::Pbkdf2Prf::HmacWithSha1 => "SHA-1",
                pbes2::Pbkdf2Prf::HmacWithSha256 => "SHA-256",
                pbes2::Pbkdf2Prf::HmacWithSha384 => "SHA-384",
                _ => "SHA-512",
            };
            let params = Params {
                hash: Some(hash.to_owned()),
                iterations: Some(p.iteration_count),
                ..Params::default()
            };
            // The longest key PBES2 derives here: AES-256's.
            ops::pbkdf2_check(&params, Some(256))?;
            Ok(())
        }
        pbes2::Kdf::Scrypt(s) => {
            let log_n = s.cost_parameter.checked_ilog2().unwrap_or(0);
            if s.cost_parameter < 2 || !s.cost_parameter.is_power_of_two() {
                return Err(HostError::range_error("Invalid scrypt params"));
            }
            let memory =
                super::crypto::scrypt_cost(log_n, s.block_size.into(), s.parallelization.into())?;
            if !fits(memory) {
                return Err(HostError::range_error(format!(
                    "scrypt: {memory} bytes of working memory do not fit the Worker's memory limit"
                )));
            }
            Ok(())
        }
        _ => {
            Err(CryptoError::not_supported("Unsupported key derivation in an encrypted key").into())
        }
    }
}

/// `pkcs8_der` encrypted under `passphrase` with `cipher` (`aes-128-cbc`,
/// `aes-192-cbc`, `aes-256-cbc`), as an `EncryptedPrivateKeyInfo`.
pub(super) fn encrypt(
    pkcs8_der: &[u8],
    cipher: &str,
    passphrase: &[u8],
) -> Result<Zeroizing<Vec<u8>>> {
    let mut salt = [0u8; 8];
    let mut iv = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|_| CryptoError::operation("No randomness"))?;
    getrandom::fill(&mut iv).map_err(|_| CryptoError::operation("No randomness"))?;
    let failed = |e: &dyn std::fmt::Display| {
        CryptoError::operation(format!("Encrypting the key failed: {e}"))
    };
    let kdf =
        pbes2::Pbkdf2Params::hmac_with_sha256(EXPORT_ITERATIONS, &salt).map_err(|e| failed(&e))?;
    let encryption = match cipher {
        "aes-128-cbc" => pbes2::EncryptionScheme::Aes128Cbc { iv: &iv },
        "aes-192-cbc" => pbes2::EncryptionScheme::Aes192Cbc { iv: &iv },
        "aes-256-cbc" => pbes2::EncryptionScheme::Aes256Cbc { iv: &iv },
        other => {
            return Err(CryptoError::not_supported(format!(
                "Encrypting a private key with {other} is not supported (aes-128-cbc, aes-192-cbc, aes-256-cbc are)"
            )));
        }
    };
    let params = pbes2::Parameters {
        kdf: kdf.into(),
        encryption,
    };
    let info = pkcs8::PrivateKeyInfo::from_der(pkcs8_der).map_err(|e| failed(&e))?;
    let document: SecretDocument = info
        .encrypt_with_params(params, passphrase)
        .map_err(|e| failed(&e))?;
    Ok(Zeroizing::new(document.as_bytes().to_vec()))
}
