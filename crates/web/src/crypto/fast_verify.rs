//! Signature verification through `ring` where it has exactly the Web Crypto
//! parameters asked for: RSASSA-PKCS1-v1_5 and RSA-PSS (salt length = hash
//! length, the JWT case) with moduli of 2048 bits or more, and ECDSA P-256
//! with SHA-256 and P-384 with SHA-384 (ES256, ES384). These are the calls a
//! JWT-verifying worker makes on every request; `ring` (already linked through
//! rustls) does them several times faster than the pure-Rust bignum code
//! (numbers in docs/engine.md). Everything else, and every private-key
//! operation, stays with the RustCrypto crates in `ops.rs`. Only public data
//! goes through here, so `rsa`'s timing advisory does not apply either way.

use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use rsa::traits::PublicKeyParts;

use super::key::{EcPublic, Key};
use super::params::Params;

/// `Some(valid)` when `ring` handles this verification, `None` otherwise.
pub fn verify(
    algorithm: &str,
    key: &Key,
    params: &Params,
    signature: &[u8],
    data: &[u8],
) -> Option<bool> {
    let hash = params.hash.as_deref()?;
    match (algorithm, key) {
        ("RSASSA-PKCS1-v1_5" | "RSA-PSS", Key::RsaPublic(k)) => {
            if k.size() * 8 < 2048 {
                return None;
            }
            let parameters = rsa_parameters(algorithm, hash, params.salt_length)?;
            let components = RsaPublicKeyComponents {
                n: k.n().to_bytes_be(),
                e: k.e().to_bytes_be(),
            };
            Some(components.verify(parameters, data, signature).is_ok())
        }
        ("ECDSA", Key::EcPublic(k)) => {
            let (point, parameters) = ecdsa_parameters(k, hash)?;
            Some(
                UnparsedPublicKey::new(parameters, point)
                    .verify(data, signature)
                    .is_ok(),
            )
        }
        _ => None,
    }
}

/// ring's parameters for an RSA signature with `hash`; PSS only when the
/// salt is as long as the hash (ring's assumption).
fn rsa_parameters(
    algorithm: &str,
    hash: &str,
    salt_length: Option<usize>,
) -> Option<&'static signature::RsaParameters> {
    let hash_len = match hash {
        "SHA-256" => 32,
        "SHA-384" => 48,
        "SHA-512" => 64,
        _ => return None,
    };
    Some(match (algorithm, hash_len) {
        ("RSASSA-PKCS1-v1_5", 32) => &signature::RSA_PKCS1_2048_8192_SHA256,
        ("RSASSA-PKCS1-v1_5", 48) => &signature::RSA_PKCS1_2048_8192_SHA384,
        ("RSASSA-PKCS1-v1_5", 64) => &signature::RSA_PKCS1_2048_8192_SHA512,
        (_, len) if salt_length != Some(len) => return None,
        (_, 32) => &signature::RSA_PSS_2048_8192_SHA256,
        (_, 48) => &signature::RSA_PSS_2048_8192_SHA384,
        _ => &signature::RSA_PSS_2048_8192_SHA512,
    })
}

/// The uncompressed point and ring's parameters for ES256 and ES384.
fn ecdsa_parameters(
    key: &EcPublic,
    hash: &str,
) -> Option<(Vec<u8>, &'static signature::EcdsaVerificationAlgorithm)> {
    match (key, hash) {
        (EcPublic::P256(k), "SHA-256") => {
            use p256::elliptic_curve::sec1::ToEncodedPoint;
            Some((
                k.to_encoded_point(false).as_bytes().to_vec(),
                &signature::ECDSA_P256_SHA256_FIXED,
            ))
        }
        (EcPublic::P384(k), "SHA-384") => {
            use p384::elliptic_curve::sec1::ToEncodedPoint;
            Some((
                k.to_encoded_point(false).as_bytes().to_vec(),
                &signature::ECDSA_P384_SHA384_FIXED,
            ))
        }
        _ => None,
    }
}
