//! `node:crypto`'s asymmetric keys beyond Web Crypto's forms: PEM and the
//! PKCS#1 and SEC1 encodings, the key's type read from its own DER (Node
//! does not ask for the algorithm), RSA generation on the isolate's thread
//! for `generateKeyPairSync` (stopped with the turn), and ECDSA signatures
//! in DER. Keys are the Web Crypto unit's (`Rc<Key>` in the handle table), so
//! a KeyObject and a CryptoKey share one representation.

use std::rc::Rc;

use rsa::pkcs1::{
    DecodeRsaPrivateKey, DecodeRsaPublicKey, EncodeRsaPrivateKey, EncodeRsaPublicKey,
};
use rsa::{RsaPrivateKey, RsaPublicKey};
use spki::der::Decode;
use zeroize::Zeroizing;

use super::crypto_pkcs8;
use isolane_engine::api::HostResult;
use isolane_engine::api::Stop;
use isolane_engine::api::fits;
use isolane_engine::api::{HostState, js_string, u8_array};
use isolane_web::crypto::error::{CryptoError, Result};
use isolane_web::crypto::formats::{self, Exported, KeyData, Kind};
use isolane_web::crypto::key::{Curve, EcPrivate, Key, RsaPrivate, with_curve};
use isolane_web::crypto::subtle::{bytes_arg, generated_js, key_arg, key_js};

/// Largest key data read (an RSA-4096 private key in PEM is ~3.3 KiB).
const MAX_KEY_DATA: usize = 64 * 1024;

const RSA: spki::ObjectIdentifier = spki::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.1");
const RSA_PSS: spki::ObjectIdentifier = spki::ObjectIdentifier::new_unwrap("1.2.840.113549.1.1.10");
const EC: spki::ObjectIdentifier = spki::ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
const ED25519: spki::ObjectIdentifier = spki::ObjectIdentifier::new_unwrap("1.3.101.112");
const X25519: spki::ObjectIdentifier = spki::ObjectIdentifier::new_unwrap("1.3.101.110");
const P256: spki::ObjectIdentifier = spki::ObjectIdentifier::new_unwrap("1.2.840.10045.3.1.7");
const P384: spki::ObjectIdentifier = spki::ObjectIdentifier::new_unwrap("1.3.132.0.34");
const P521: spki::ObjectIdentifier = spki::ObjectIdentifier::new_unwrap("1.3.132.0.35");

type Answer<'s> = HostResult<Option<v8::Local<'s, v8::Value>>>;

/// A key read from DER, and whether it is an RSA-PSS key (`id-RSASSA-PSS`).
struct Read {
    key: Key,
    pss: bool,
}

/// The key kind a PKCS#8 or SPKI algorithm identifier names; `true` for
/// RSA-PSS (its material is an RSA key).
fn kind_of(algorithm: &spki::AlgorithmIdentifierRef<'_>) -> Result<(Kind, bool)> {
    let oid = algorithm.oid;
    if oid == RSA {
        return Ok((Kind::Rsa, false));
    }
    if oid == RSA_PSS {
        return Ok((Kind::Rsa, true));
    }
    if oid == ED25519 {
        return Ok((Kind::Ed25519, false));
    }
    if oid == X25519 {
        return Ok((Kind::X25519, false));
    }
    if oid == EC {
        let curve = algorithm
            .parameters_oid()
            .map_err(|_| CryptoError::data("The EC key names no curve"))?;
        let curve = match curve {
            c if c == P256 => Curve::P256,
            c if c == P384 => Curve::P384,
            c if c == P521 => Curve::P521,
            c => return Err(CryptoError::not_supported(format!("Unsupported curve {c}"))),
        };
        return Ok((Kind::Ec(curve), false));
    }
    Err(CryptoError::not_supported(format!(
        "Unsupported key algorithm {oid}"
    )))
}

fn bad(what: &str) -> impl Fn(&dyn std::fmt::Display) -> CryptoError + '_ {
    move |e| CryptoError::data(format!("Invalid {what} key: {e}"))
}

/// A key from DER of `encoding` (`pkcs8`, `spki`, `pkcs1` or `sec1`);
/// `private` says which half PKCS#1 holds.
fn read_der(encoding: &str, private: bool, der: &[u8]) -> Result<Read> {
    let bytes = || KeyData::Bytes(Zeroizing::new(der.to_vec()));
    match encoding {
        "pkcs8" => {
            let info = pkcs8::PrivateKeyInfo::from_der(der).map_err(|e| bad("PKCS#8")(&e))?;
            let (kind, pss) = kind_of(&info.algorithm)?;
            let key = if pss {
                let parts = RsaPrivateKey::from_pkcs1_der(info.private_key)
                    .map_err(|e| bad("RSA-PSS")(&e))?;
                Key::RsaPrivate(Box::new(RsaPrivate::new(parts)))
            } else {
                formats::import(kind, "pkcs8", bytes())?
            };
            Ok(Read { key, pss })
        }
        "spki" => {
            let info = spki::SubjectPublicKeyInfoRef::from_der(der).map_err(|e| bad("SPKI")(&e))?;
            let (kind, pss) = kind_of(&info.algorithm)?;
            let key = if pss {
                let raw = info.subject_public_key.raw_bytes();
                Key::RsaPublic(Box::new(
                    RsaPublicKey::from_pkcs1_der(raw).map_err(|e| bad("RSA-PSS")(&e))?,
                ))
            } else {
                formats::import(kind, "spki", bytes())?
            };
            Ok(Read { key, pss })
        }
        "pkcs1" if private => {
            let parts = RsaPrivateKey::from_pkcs1_der(der).map_err(|e| bad("PKCS#1")(&e))?;
            let key = Key::RsaPrivate(Box::new(RsaPrivate::new(parts)));
            Ok(Read { key, pss: false })
        }
        "pkcs1" => {
            let key = RsaPublicKey::from_pkcs1_der(der).map_err(|e| bad("PKCS#1")(&e))?;
            let key = Key::RsaPublic(Box::new(key));
            Ok(Read { key, pss: false })
        }
        "sec1" => {
            // The curve named in the key (or, without one, the scalar's
            // size) lets exactly one of them read it.
            let key = p256::SecretKey::from_sec1_der(der)
                .map(EcPrivate::P256)
                .or_else(|_| p384::SecretKey::from_sec1_der(der).map(EcPrivate::P384))
                .or_else(|_| p521::SecretKey::from_sec1_der(der).map(EcPrivate::P521))
                .map_err(|e| bad("SEC1")(&e))?;
            Ok(Read {
                key: Key::EcPrivate(key),
                pss: false,
            })
        }
        other => Err(CryptoError::not_supported(format!(
            "Unsupported key encoding {other}"
        ))),
    }
}

/// The DER encoding (`pkcs8`, `spki`, `pkcs1`, `sec1`) a PEM label names,
/// and whether it holds a private key.
fn pem_encoding(label: &str) -> Result<(&'static str, bool)> {
    Ok(match label {
        "PRIVATE KEY" => ("pkcs8", true),
        "PUBLIC KEY" => ("spki", false),
        "RSA PRIVATE KEY" => ("pkcs1", true),
        "RSA PUBLIC KEY" => ("pkcs1", false),
        "EC PRIVATE KEY" => ("sec1", true),
        // A certificate's public key, as Node reads it (`createPublicKey`).
        "CERTIFICATE" => ("spki", false),
        // Decrypted first (`crypto_pkcs8.rs`): PKCS#8 inside.
        "ENCRYPTED PRIVATE KEY" => ("pkcs8", true),
        other => {
            return Err(CryptoError::not_supported(format!(
                "Unsupported PEM label {other}"
            )));
        }
    })
}

/// Node's `asymmetricKeyType` of a key.
fn type_name(key: &Key, pss: bool) -> &'static str {
    match key {
        Key::Secret(_) => "secret",
        Key::RsaPrivate(_) | Key::RsaPublic(_) if pss => "rsa-pss",
        Key::RsaPrivate(_) | Key::RsaPublic(_) => "rsa",
        Key::EcPrivate(_) | Key::EcPublic(_) => "ec",
        Key::Ed25519Private(_) | Key::Ed25519Public(_) => "ed25519",
        Key::X25519Private(_) | Key::X25519Public(_) => "x25519",
    }
}

/// `[handle, info, asymmetricKeyType]` for a new key.
fn node_key_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    host: &HostState,
    key: Key,
    pss: bool,
) -> Option<v8::Local<'s, v8::Value>> {
    let name = type_name(&key, pss);
    let pair = key_js(scope, host, key)?;
    let array = v8::Local::<v8::Array>::try_from(pair).ok()?;
    let name = js_string(scope, name)?;
    array.set_index(scope, 2, name)?;
    Some(array.into())
}

host_fn! {
/// `nodeKeyImport(data, format, encoding, private, passphrase)` → `[handle,
/// info, asymmetricKeyType]`: `format` `pem` (the label names the encoding)
/// or `der` (`encoding` `pkcs8`, `spki`, `pkcs1` or `sec1`); an encrypted
/// PKCS#8 key is decrypted with `passphrase` (`crypto_pkcs8.rs`). A private
/// key read where a public one is wanted gives its public half
/// (`createPublicKey`).
pub(super) fn key_import<'s>(
    scope,
    host: Rc<HostState>,
    data: v8::Local<'s, v8::Value>,
    format: String,
    encoding: String,
    private: bool,
    passphrase: Option<Vec<u8>>,
) -> Answer<'s> {
    let data = Zeroizing::new(bytes_arg(data, "key")?);
    if data.len() > MAX_KEY_DATA {
        return Err(CryptoError::data("The key data is too large").into());
    }
    let passphrase = passphrase.map(Zeroizing::new);
    let (der, encoding, holds_private, encrypted) = if format == "pem" {
        pem_der(&data)?
    } else {
        let holds_private = encoding != "spki" && (encoding != "pkcs1" || private);
        let encrypted = encoding == "pkcs8" && crypto_pkcs8::is_encrypted(&data);
        (Zeroizing::new(data.to_vec()), encoding, holds_private, encrypted)
    };
    let der = if encrypted {
        crypto_pkcs8::decrypt(&der, passphrase.as_deref().map(Vec::as_slice), |bytes| fits(scope, bytes))?
    } else {
        der
    };
    let Read { key, pss } = read_der(&encoding, holds_private, &der)?;
    let key = match (private, key.kind()) {
        (true, "private") | (false, "public") => key,
        (false, _) => formats::public_of(&key).ok_or_else(|| CryptoError::data("Not a public key"))?,
        (true, _) => return Err(CryptoError::data("The key is not a private key").into()),
    };
    Ok(node_key_js(scope, &host, key, pss))
}
}

/// A PEM key's DER, the encoding its label names, whether it holds a
/// private key (a certificate: its public key) and whether it is encrypted.
fn pem_der(data: &[u8]) -> Result<(Zeroizing<Vec<u8>>, String, bool, bool)> {
    let text = std::str::from_utf8(data).map_err(|_| CryptoError::data("The PEM is not text"))?;
    let (label, der) = pem_rfc7468::decode_vec(text.trim().as_bytes())
        .map_err(|e| CryptoError::data(format!("Invalid PEM: {e}")))?;
    let (encoding, holds_private) = pem_encoding(label)?;
    let der = if label == "CERTIFICATE" {
        super::crypto_x509::parse(&der)?.public_key().raw.to_vec()
    } else {
        der
    };
    let encrypted = label == "ENCRYPTED PRIVATE KEY";
    Ok((
        Zeroizing::new(der),
        encoding.to_owned(),
        holds_private,
        encrypted,
    ))
}

host_fn! {
/// `nodeKeyPublic(handle)` → `[handle, info, asymmetricKeyType]` of the
/// public half of a private key.
pub(super) fn key_public<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    pss: bool,
) -> Answer<'s> {
    let key = key_arg(scope, &host, handle)?;
    let public = formats::public_of(&key).ok_or_else(|| CryptoError::access("Not a private key"))?;
    Ok(node_key_js(scope, &host, public, pss))
}
}

/// An RSA key as PKCS#8 or SPKI DER under `id-RSASSA-PSS` without
/// parameters (how Node writes an `rsa-pss` key made without them).
fn export_pss(key: &Key, encoding: &str) -> Result<Zeroizing<Vec<u8>>> {
    use spki::der::Encode;
    let failed =
        |e: &dyn std::fmt::Display| CryptoError::operation(format!("Encoding the key failed: {e}"));
    let algorithm = spki::AlgorithmIdentifierRef {
        oid: RSA_PSS,
        parameters: None,
    };
    let inner = export_der(key, "pkcs1", false)?;
    let der = match (encoding, key) {
        ("pkcs8", Key::RsaPrivate(_)) => pkcs8::PrivateKeyInfo::new(algorithm, &inner).to_der(),
        ("spki", Key::RsaPublic(_)) => {
            let bits = spki::der::asn1::BitStringRef::from_bytes(&inner).map_err(|e| failed(&e))?;
            spki::SubjectPublicKeyInfoRef {
                algorithm,
                subject_public_key: bits,
            }
            .to_der()
        }
        _ => return export_der(key, encoding, false),
    };
    der.map(Zeroizing::new).map_err(|e| failed(&e))
}

/// The key as DER of `encoding` (`pss`: an RSA-PSS key, see [`export_pss`]).
fn export_der(key: &Key, encoding: &str, pss: bool) -> Result<Zeroizing<Vec<u8>>> {
    if pss {
        return export_pss(key, encoding);
    }
    let failed =
        |e: &dyn std::fmt::Display| CryptoError::operation(format!("Encoding the key failed: {e}"));
    match (encoding, key) {
        ("pkcs1", Key::RsaPrivate(k)) => Ok(Zeroizing::new(
            k.to_pkcs1_der()
                .map_err(|e| failed(&e))?
                .as_bytes()
                .to_vec(),
        )),
        ("pkcs1", Key::RsaPublic(k)) => Ok(Zeroizing::new(
            k.to_pkcs1_der()
                .map_err(|e| failed(&e))?
                .as_bytes()
                .to_vec(),
        )),
        ("sec1", Key::EcPrivate(k)) => {
            with_curve!(EcPrivate, k, |k, _c| k
                .to_sec1_der()
                .map_err(|e| failed(&e)))
        }
        ("pkcs8" | "spki", key) => match formats::export(key, encoding)? {
            Exported::Bytes(bytes) => Ok(bytes),
            Exported::Jwk(_) => Err(CryptoError::operation("Unexpected JWK")),
        },
        (encoding, _) => Err(CryptoError::Type(format!(
            "The key cannot be exported as {encoding}"
        ))),
    }
}

fn pem_label(encoding: &str, private: bool) -> &'static str {
    match (encoding, private) {
        ("pkcs8", _) => "PRIVATE KEY",
        ("pkcs1", true) => "RSA PRIVATE KEY",
        ("pkcs1", false) => "RSA PUBLIC KEY",
        ("sec1", _) => "EC PRIVATE KEY",
        _ => "PUBLIC KEY",
    }
}

host_fn! {
/// `nodeKeyExport(handle, format, encoding, pss, cipher, passphrase)` → PEM
/// text (`format` `pem`) or a Uint8Array of DER (`der`), in `encoding`
/// (`pkcs8`, `spki`, `pkcs1`, `sec1`); `pss`: an `rsa-pss` key, named
/// `id-RSASSA-PSS`; with a `cipher`, PKCS#8 encrypted under `passphrase`.
pub(super) fn key_export<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    format: String,
    encoding: String,
    pss: bool,
    cipher: Option<String>,
    passphrase: Option<Vec<u8>>,
) -> Answer<'s> {
    let key = key_arg(scope, &host, handle)?;
    let mut der = export_der(&key, &encoding, pss)?;
    let mut label = pem_label(&encoding, key.kind() == "private");
    if let Some(cipher) = cipher {
        if encoding != "pkcs8" {
            return Err(CryptoError::not_supported(format!(
                "Encrypting a {encoding} key (legacy PEM encryption) is not supported; use type 'pkcs8'"
            ))
            .into());
        }
        let passphrase = Zeroizing::new(passphrase.unwrap_or_default());
        der = crypto_pkcs8::encrypt(&der, &cipher, &passphrase)?;
        label = "ENCRYPTED PRIVATE KEY";
    }
    if format == "pem" {
        let text = pem_rfc7468::encode_string(label, pem_rfc7468::LineEnding::LF, &der)
            .map(Zeroizing::new)
            .map_err(|e| CryptoError::operation(format!("Encoding the key failed: {e}")))?;
        return Ok(js_string(scope, &text));
    }
    Ok(u8_array(scope, der.to_vec()).map(Into::into))
}
}

host_fn! {
/// `nodeRsaGenerateSync(bits, exponent)` → `[[publicHandle, info],
/// [privateHandle, info]]`: `generateKeyPairSync`'s RSA key, made on the
/// isolate's thread under Web Crypto's bounds on its size, stopped once the
/// watchdog ends the turn (the CPU limit holds; a neighbour waits no longer
/// than for a JavaScript loop).
pub(super) fn rsa_generate_sync<'s>(
    scope,
    host: Rc<HostState>,
    bits: u32,
    exponent: Option<Vec<u8>>,
) -> Answer<'s> {
    let bits = bits as usize;
    let e = formats::rsa_parameters(bits, &exponent.unwrap_or_default())?;
    let budget = host.cpu_remaining(host.current());
    let stop = Stop::on_thread(host.tripwire(), budget);
    let generated = formats::generate_rsa(bits, &e, &stop)?;
    Ok(generated_js(scope, generated))
}
}

host_fn! {
/// `nodeEcdsaSignature(handle, signature, toDer)`: an ECDSA signature of the
/// key's curve from `r‖s` to DER (`toDer`) or back. A malformed signature
/// converts to an empty one (which verifies as false).
pub(super) fn ecdsa_signature<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    signature: v8::Local<'s, v8::Value>,
    to_der: bool,
) -> Answer<'s> {
    let key = key_arg(scope, &host, handle)?;
    let signature = bytes_arg(signature, "signature")?;
    let curve = match &*key {
        Key::EcPrivate(k) => k.curve(),
        Key::EcPublic(k) => k.curve(),
        _ => return Err(CryptoError::access("Not an EC key").into()),
    };
    let out = convert_signature(curve, &signature, to_der).unwrap_or_default();
    Ok(u8_array(scope, out).map(Into::into))
}
}

fn convert_signature(curve: Curve, signature: &[u8], to_der: bool) -> Option<Vec<u8>> {
    macro_rules! convert {
        ($c:ident) => {{
            if to_der {
                let s = $c::ecdsa::Signature::from_slice(signature).ok()?;
                Some(s.to_der().as_bytes().to_vec())
            } else {
                let s = $c::ecdsa::Signature::from_der(signature).ok()?;
                Some(s.to_bytes().to_vec())
            }
        }};
    }
    match curve {
        Curve::P256 => convert!(p256),
        Curve::P384 => convert!(p384),
        Curve::P521 => convert!(p521),
    }
}

host_fn! {
/// `nodeRsaPkcs1(handle, data)` → Uint8Array: RSA PKCS#1 v1.5 encryption
/// with a public key (the `rsa` crate). Decryption is refused in
/// JavaScript, as Node refuses it (CVE-2023-46809: PKCS#1 v1.5 decryption
/// leaks the key through its timing, and the `rsa` crate's is not constant
/// time, RUSTSEC-2023-0071); workerd decrypts.
pub(super) fn rsa_pkcs1<'s>(
    scope,
    host: Rc<HostState>,
    handle: v8::Local<'s, v8::Value>,
    data: v8::Local<'s, v8::Value>,
) -> Answer<'s> {
    use rand_core::OsRng;
    let key = key_arg(scope, &host, handle)?;
    let data = bytes_arg(data, "buffer")?;
    let Key::RsaPublic(k) = &*key else {
        return Err(CryptoError::access("Wrong key type for RSA PKCS#1 v1.5 encryption").into());
    };
    let out = k
        .encrypt(&mut OsRng, rsa::Pkcs1v15Encrypt, &data)
        .map_err(|e| CryptoError::operation(format!("RSA PKCS#1 v1.5 encryption failed: {e}")))?;
    Ok(u8_array(scope, out).map(Into::into))
}
}
