//! Key import, export and generation: `raw`, `pkcs8`, `spki` and `jwk` for
//! every key kind (DER and the curve arithmetic are the RustCrypto crates'; JSON is
//! serde_json's; this file only maps members onto them).

use base64ct::{Base64UrlUnpadded, Encoding};
use isolane_engine::api::Stop;
use p256::elliptic_curve;
use rand_core::OsRng;
use rsa::traits::{PrivateKeyParts, PublicKeyParts};
use rsa::{BigUint, RsaPrivateKey, RsaPublicKey};
use serde_json::{Map, Value, json};
use spki::der::asn1::{BitStringRef, OctetStringRef};
use spki::der::{Decode, Encode};
use zeroize::Zeroizing;

use super::error::{CryptoError, Result};
use super::key::{Curve, EcPrivate, EcPublic, Key, RsaPrivate, with_curve};

/// id-X25519 (RFC 8410).
const X25519_OID: spki::ObjectIdentifier = spki::ObjectIdentifier::new_unwrap("1.3.101.110");

/// Largest RSA modulus accepted (the `rsa` crate's own ceiling).
pub const RSA_MAX_BITS: usize = 4096;
/// Smallest RSA modulus `generateKey` makes.
pub const RSA_MIN_BITS: usize = 1024;

/// What kind of key an algorithm uses (`kind` in HOST.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Secret,
    Rsa,
    Ec(Curve),
    Ed25519,
    X25519,
}

impl Kind {
    pub fn parse(kind: &str, curve: &str) -> Result<Self> {
        match kind {
            "secret" => Ok(Self::Secret),
            "rsa" => Ok(Self::Rsa),
            "ec" => Curve::parse(curve).map(Self::Ec).ok_or_else(|| {
                CryptoError::not_supported(format!("Unsupported named curve: {curve}"))
            }),
            "ed25519" => Ok(Self::Ed25519),
            "x25519" => Ok(Self::X25519),
            other => Err(CryptoError::Type(format!("unknown key kind {other}"))),
        }
    }
}

/// The key data handed to `importKey`.
pub enum KeyData {
    Bytes(Zeroizing<Vec<u8>>),
    /// The JWK, as JSON text (the runtime's JavaScript stringified it).
    Jwk(Zeroizing<String>),
}

// === import ===

pub fn import(kind: Kind, format: &str, data: KeyData) -> Result<Key> {
    match data {
        KeyData::Jwk(text) => {
            let jwk: Value = serde_json::from_str(&text)
                .map_err(|_| CryptoError::data("The JWK is not valid JSON"))?;
            let Value::Object(jwk) = jwk else {
                return Err(CryptoError::data("The JWK is not an object"));
            };
            let mut jwk = Jwk(jwk);
            let key = import_jwk(kind, &jwk);
            zeroize_json(&mut jwk.0);
            key
        }
        KeyData::Bytes(bytes) => match (kind, format) {
            (Kind::Secret, "raw") => Ok(Key::Secret(bytes)),
            (Kind::Ec(curve), "raw") => ec_public_from_sec1(curve, &bytes),
            (Kind::Ed25519, "raw") => ed25519_public(&bytes),
            (Kind::X25519, "raw") => x25519_public(&bytes),
            (Kind::Rsa | Kind::Ec(_) | Kind::Ed25519 | Kind::X25519, "pkcs8") => {
                import_pkcs8(kind, &bytes)
            }
            (Kind::Rsa | Kind::Ec(_) | Kind::Ed25519 | Kind::X25519, "spki") => {
                import_spki(kind, &bytes)
            }
            (_, format) => Err(CryptoError::not_supported(format!(
                "Unsupported key format for this algorithm: {format}"
            ))),
        },
    }
}

/// A private key from PKCS#8 DER (`kind` is not `Secret`).
fn import_pkcs8(kind: Kind, bytes: &[u8]) -> Result<Key> {
    match kind {
        Kind::Rsa => {
            use rsa::pkcs8::DecodePrivateKey;
            let key = RsaPrivateKey::from_pkcs8_der(bytes)
                .map_err(|e| CryptoError::data(format!("Invalid RSA PKCS#8 key: {e}")))?;
            Ok(Key::RsaPrivate(Box::new(RsaPrivate::new(key))))
        }
        Kind::Ec(curve) => {
            let key = match curve {
                Curve::P256 => ec_pkcs8::<p256::NistP256>(bytes).map(EcPrivate::P256),
                Curve::P384 => ec_pkcs8::<p384::NistP384>(bytes).map(EcPrivate::P384),
                Curve::P521 => ec_pkcs8::<p521::NistP521>(bytes).map(EcPrivate::P521),
            }?;
            Ok(Key::EcPrivate(key))
        }
        Kind::Ed25519 => {
            use ed25519_dalek::pkcs8::DecodePrivateKey;
            let key = ed25519_dalek::SigningKey::from_pkcs8_der(bytes)
                .map_err(|e| CryptoError::data(format!("Invalid Ed25519 PKCS#8 key: {e}")))?;
            Ok(Key::Ed25519Private(Box::new(key)))
        }
        Kind::X25519 => x25519_pkcs8(bytes),
        Kind::Secret => Err(CryptoError::not_supported(
            "Unsupported key format for this algorithm: pkcs8",
        )),
    }
}

/// A public key from SubjectPublicKeyInfo DER (`kind` is not `Secret`).
fn import_spki(kind: Kind, bytes: &[u8]) -> Result<Key> {
    match kind {
        Kind::Rsa => {
            use rsa::pkcs8::DecodePublicKey;
            let key = RsaPublicKey::from_public_key_der(bytes)
                .map_err(|e| CryptoError::data(format!("Invalid RSA SPKI key: {e}")))?;
            Ok(Key::RsaPublic(Box::new(key)))
        }
        Kind::Ec(curve) => {
            let key = match curve {
                Curve::P256 => ec_spki::<p256::NistP256>(bytes).map(EcPublic::P256),
                Curve::P384 => ec_spki::<p384::NistP384>(bytes).map(EcPublic::P384),
                Curve::P521 => ec_spki::<p521::NistP521>(bytes).map(EcPublic::P521),
            }?;
            Ok(Key::EcPublic(key))
        }
        Kind::Ed25519 => {
            use ed25519_dalek::pkcs8::DecodePublicKey;
            let key = ed25519_dalek::VerifyingKey::from_public_key_der(bytes)
                .map_err(|e| CryptoError::data(format!("Invalid Ed25519 SPKI key: {e}")))?;
            Ok(Key::Ed25519Public(key))
        }
        Kind::X25519 => {
            let info = spki::SubjectPublicKeyInfoRef::from_der(bytes)
                .map_err(|e| CryptoError::data(format!("Invalid X25519 SPKI key: {e}")))?;
            if info.algorithm.oid != X25519_OID {
                return Err(CryptoError::data("The SPKI is not an X25519 key"));
            }
            let raw = info
                .subject_public_key
                .as_bytes()
                .ok_or_else(|| CryptoError::data("Invalid X25519 SPKI key"))?;
            x25519_public(raw)
        }
        Kind::Secret => Err(CryptoError::not_supported(
            "Unsupported key format for this algorithm: spki",
        )),
    }
}

fn ec_pkcs8<C>(bytes: &[u8]) -> Result<elliptic_curve::SecretKey<C>>
where
    C: elliptic_curve::Curve,
    elliptic_curve::SecretKey<C>: pkcs8::DecodePrivateKey,
{
    use pkcs8::DecodePrivateKey;
    elliptic_curve::SecretKey::<C>::from_pkcs8_der(bytes)
        .map_err(|e| CryptoError::data(format!("Invalid EC PKCS#8 key: {e}")))
}

fn ec_spki<C>(bytes: &[u8]) -> Result<elliptic_curve::PublicKey<C>>
where
    C: elliptic_curve::CurveArithmetic,
    elliptic_curve::PublicKey<C>: pkcs8::DecodePublicKey,
{
    use pkcs8::DecodePublicKey;
    elliptic_curve::PublicKey::<C>::from_public_key_der(bytes)
        .map_err(|e| CryptoError::data(format!("Invalid EC SPKI key: {e}")))
}

fn ec_public_from_sec1(curve: Curve, bytes: &[u8]) -> Result<Key> {
    let bad = |_| CryptoError::data(format!("Invalid {} public key", curve.name()));
    let key = match curve {
        Curve::P256 => EcPublic::P256(p256::PublicKey::from_sec1_bytes(bytes).map_err(bad)?),
        Curve::P384 => EcPublic::P384(p384::PublicKey::from_sec1_bytes(bytes).map_err(bad)?),
        Curve::P521 => EcPublic::P521(p521::PublicKey::from_sec1_bytes(bytes).map_err(bad)?),
    };
    Ok(Key::EcPublic(key))
}

fn ec_private_from_scalar(curve: Curve, d: &[u8]) -> Result<EcPrivate> {
    if d.len() != curve.field_bytes() {
        return Err(CryptoError::data("Invalid EC private key (d)"));
    }
    let bad = |_| CryptoError::data("Invalid EC private key (d)");
    Ok(match curve {
        Curve::P256 => EcPrivate::P256(p256::SecretKey::from_slice(d).map_err(bad)?),
        Curve::P384 => EcPrivate::P384(p384::SecretKey::from_slice(d).map_err(bad)?),
        Curve::P521 => EcPrivate::P521(p521::SecretKey::from_slice(d).map_err(bad)?),
    })
}

fn ed25519_public(bytes: &[u8]) -> Result<Key> {
    let raw: [u8; 32] = bytes
        .try_into()
        .map_err(|_| CryptoError::data("An Ed25519 public key is 32 bytes"))?;
    let key = ed25519_dalek::VerifyingKey::from_bytes(&raw)
        .map_err(|_| CryptoError::data("Invalid Ed25519 public key"))?;
    Ok(Key::Ed25519Public(key))
}

fn x25519_public(bytes: &[u8]) -> Result<Key> {
    let raw: [u8; 32] = bytes
        .try_into()
        .map_err(|_| CryptoError::data("An X25519 public key is 32 bytes"))?;
    Ok(Key::X25519Public(x25519_dalek::PublicKey::from(raw)))
}

fn x25519_private(bytes: &[u8]) -> Result<Key> {
    let raw: Zeroizing<[u8; 32]> = Zeroizing::new(
        bytes
            .try_into()
            .map_err(|_| CryptoError::data("An X25519 private key is 32 bytes"))?,
    );
    Ok(Key::X25519Private(Box::new(
        x25519_dalek::StaticSecret::from(*raw),
    )))
}

fn x25519_pkcs8(bytes: &[u8]) -> Result<Key> {
    let info = pkcs8::PrivateKeyInfo::from_der(bytes)
        .map_err(|e| CryptoError::data(format!("Invalid X25519 PKCS#8 key: {e}")))?;
    if info.algorithm.oid != X25519_OID {
        return Err(CryptoError::data("The PKCS#8 is not an X25519 key"));
    }
    // RFC 8410: the private key is a CurvePrivateKey, an OCTET STRING.
    let inner = OctetStringRef::from_der(info.private_key)
        .map_err(|_| CryptoError::data("Invalid X25519 PKCS#8 key"))?;
    x25519_private(inner.as_bytes())
}

// === JWK ===

struct Jwk(Map<String, Value>);

impl Jwk {
    fn str(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(Value::as_str)
    }

    /// A base64url member, required.
    fn bytes(&self, name: &str) -> Result<Zeroizing<Vec<u8>>> {
        let text = self
            .str(name)
            .ok_or_else(|| CryptoError::data(format!("The JWK member \"{name}\" is missing")))?;
        Base64UrlUnpadded::decode_vec(text.trim_end_matches('='))
            .map(Zeroizing::new)
            .map_err(|_| CryptoError::data(format!("The JWK member \"{name}\" is not base64url")))
    }

    fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    fn expect(&self, member: &str, value: &str) -> Result<()> {
        match self.str(member) {
            Some(v) if v == value => Ok(()),
            _ => Err(CryptoError::data(format!(
                "The JWK member \"{member}\" must be \"{value}\""
            ))),
        }
    }

    fn biguint(&self, name: &str) -> Result<BigUint> {
        Ok(BigUint::from_bytes_be(&self.bytes(name)?))
    }
}

fn import_jwk(kind: Kind, jwk: &Jwk) -> Result<Key> {
    match kind {
        Kind::Secret => {
            jwk.expect("kty", "oct")?;
            Ok(Key::Secret(jwk.bytes("k")?))
        }
        Kind::Rsa => rsa_from_jwk(jwk),
        Kind::Ec(curve) => ec_from_jwk(curve, jwk),
        Kind::Ed25519 | Kind::X25519 => okp_from_jwk(kind == Kind::Ed25519, jwk),
    }
}

fn rsa_from_jwk(jwk: &Jwk) -> Result<Key> {
    jwk.expect("kty", "RSA")?;
    let n = jwk.biguint("n")?;
    let e = jwk.biguint("e")?;
    if !jwk.has("d") {
        let key = RsaPublicKey::new(n, e)
            .map_err(|e| CryptoError::data(format!("Invalid RSA JWK: {e}")))?;
        return Ok(Key::RsaPublic(Box::new(key)));
    }
    if n.bits() > RSA_MAX_BITS {
        return Err(CryptoError::data("RSA modulus too large"));
    }
    let d = jwk.biguint("d")?;
    let primes = if jwk.has("p") {
        vec![jwk.biguint("p")?, jwk.biguint("q")?]
    } else {
        Vec::new()
    };
    let key = RsaPrivateKey::from_components(n, e, d, primes)
        .map_err(|e| CryptoError::data(format!("Invalid RSA JWK: {e}")))?;
    Ok(Key::RsaPrivate(Box::new(RsaPrivate::new(key))))
}

fn ec_from_jwk(curve: Curve, jwk: &Jwk) -> Result<Key> {
    jwk.expect("kty", "EC")?;
    jwk.expect("crv", curve.name())?;
    let (x, y) = (jwk.bytes("x")?, jwk.bytes("y")?);
    let size = curve.field_bytes();
    if x.len() != size || y.len() != size {
        return Err(CryptoError::data(
            "Invalid EC JWK: x or y has the wrong length",
        ));
    }
    let mut point = Vec::with_capacity(1 + 2 * size);
    point.push(4);
    point.extend_from_slice(&x);
    point.extend_from_slice(&y);
    let Key::EcPublic(public) = ec_public_from_sec1(curve, &point)? else {
        return Err(CryptoError::data("Invalid EC JWK"));
    };
    if !jwk.has("d") {
        return Ok(Key::EcPublic(public));
    }
    let private = ec_private_from_scalar(curve, &jwk.bytes("d")?)?;
    if !ec_public_eq(&private.public(), &public) {
        return Err(CryptoError::data(
            "Invalid EC JWK: d does not match x and y",
        ));
    }
    Ok(Key::EcPrivate(private))
}

/// An OKP key: Ed25519 when `ed25519`, else X25519.
fn okp_from_jwk(ed25519: bool, jwk: &Jwk) -> Result<Key> {
    jwk.expect("kty", "OKP")?;
    jwk.expect("crv", if ed25519 { "Ed25519" } else { "X25519" })?;
    let x = jwk.bytes("x")?;
    if !jwk.has("d") {
        return if ed25519 {
            ed25519_public(&x)
        } else {
            x25519_public(&x)
        };
    }
    let d = jwk.bytes("d")?;
    let private = if ed25519 {
        let raw: [u8; 32] = d
            .as_slice()
            .try_into()
            .map_err(|_| CryptoError::data("An Ed25519 private key is 32 bytes"))?;
        Key::Ed25519Private(Box::new(ed25519_dalek::SigningKey::from_bytes(&raw)))
    } else {
        x25519_private(&d)?
    };
    let public = public_of(&private).and_then(|k| export_raw_public(&k).ok());
    if public.as_deref() != Some(x.as_slice()) {
        return Err(CryptoError::data("Invalid OKP JWK: d does not match x"));
    }
    Ok(private)
}

fn ec_public_eq(a: &EcPublic, b: &EcPublic) -> bool {
    match (a, b) {
        (EcPublic::P256(a), EcPublic::P256(b)) => a == b,
        (EcPublic::P384(a), EcPublic::P384(b)) => a == b,
        (EcPublic::P521(a), EcPublic::P521(b)) => a == b,
        _ => false,
    }
}

/// The public half of a private key (`None` for secret and public keys).
pub fn public_of(key: &Key) -> Option<Key> {
    match key {
        Key::RsaPrivate(k) => Some(Key::RsaPublic(Box::new(k.to_public_key()))),
        Key::EcPrivate(k) => Some(Key::EcPublic(k.public())),
        Key::Ed25519Private(k) => Some(Key::Ed25519Public(k.verifying_key())),
        Key::X25519Private(k) => Some(Key::X25519Public(x25519_dalek::PublicKey::from(k.as_ref()))),
        _ => None,
    }
}

// === export ===

/// An exported key: bytes, or a JWK as JSON text (the key members only; the
/// JavaScript side adds `alg`, `key_ops` and `ext`).
pub enum Exported {
    Bytes(Zeroizing<Vec<u8>>),
    Jwk(Zeroizing<String>),
}

pub fn export(key: &Key, format: &str) -> Result<Exported> {
    let bytes = match (format, key) {
        ("jwk", key) => {
            let mut jwk = export_jwk(key)?;
            let text = Zeroizing::new(jwk.to_string());
            if let Value::Object(members) = &mut jwk {
                zeroize_json(members);
            }
            return Ok(Exported::Jwk(text));
        }
        ("raw", Key::Secret(bytes)) => Some(bytes.clone()),
        ("raw", public @ (Key::EcPublic(_) | Key::Ed25519Public(_) | Key::X25519Public(_))) => {
            Some(Zeroizing::new(export_raw_public(public)?))
        }
        ("raw", _) => None,
        ("pkcs8", key) => export_pkcs8(key)?,
        ("spki", key) => export_spki(key)?,
        (other, _) => {
            return Err(CryptoError::not_supported(format!(
                "Unsupported key format: {other}"
            )));
        }
    };
    bytes
        .map(Exported::Bytes)
        .ok_or_else(|| CryptoError::access(format!("This key cannot be exported as {format}")))
}

fn der_error(e: &dyn std::fmt::Display) -> CryptoError {
    CryptoError::operation(format!("Encoding the key failed: {e}"))
}

/// A private key as PKCS#8 DER; `None` for a key that has no such form.
fn export_pkcs8(key: &Key) -> Result<Option<Zeroizing<Vec<u8>>>> {
    Ok(Some(match key {
        Key::RsaPrivate(k) => {
            use rsa::pkcs8::EncodePrivateKey;
            Zeroizing::new(
                k.to_pkcs8_der()
                    .map_err(|e| der_error(&e))?
                    .as_bytes()
                    .to_vec(),
            )
        }
        Key::EcPrivate(k) => with_curve!(EcPrivate, k, |k, c| {
            use c::pkcs8::EncodePrivateKey;
            Zeroizing::new(
                k.to_pkcs8_der()
                    .map_err(|e| der_error(&e))?
                    .as_bytes()
                    .to_vec(),
            )
        }),
        Key::Ed25519Private(k) => {
            use ed25519_dalek::pkcs8::EncodePrivateKey;
            // Without the public key (PKCS#8 v1), as other runtimes export it.
            let pair = ed25519_dalek::pkcs8::KeypairBytes {
                secret_key: k.to_bytes(),
                public_key: None,
            };
            Zeroizing::new(
                pair.to_pkcs8_der()
                    .map_err(|e| der_error(&e))?
                    .as_bytes()
                    .to_vec(),
            )
        }
        Key::X25519Private(k) => {
            let secret = Zeroizing::new(k.to_bytes());
            let inner = OctetStringRef::new(secret.as_slice())
                .and_then(|o| o.to_der())
                .map(Zeroizing::new)
                .map_err(|e| der_error(&e))?;
            let info = pkcs8::PrivateKeyInfo::new(
                spki::AlgorithmIdentifierRef {
                    oid: X25519_OID,
                    parameters: None,
                },
                &inner,
            );
            Zeroizing::new(info.to_der().map_err(|e| der_error(&e))?)
        }
        _ => return Ok(None),
    }))
}

/// A public key as SubjectPublicKeyInfo DER; `None` for a key that has no
/// such form.
fn export_spki(key: &Key) -> Result<Option<Zeroizing<Vec<u8>>>> {
    Ok(Some(match key {
        Key::RsaPublic(k) => {
            use rsa::pkcs8::EncodePublicKey;
            Zeroizing::new(
                k.to_public_key_der()
                    .map_err(|e| der_error(&e))?
                    .as_bytes()
                    .to_vec(),
            )
        }
        Key::EcPublic(k) => with_curve!(EcPublic, k, |k, c| {
            use c::pkcs8::EncodePublicKey;
            Zeroizing::new(
                k.to_public_key_der()
                    .map_err(|e| der_error(&e))?
                    .as_bytes()
                    .to_vec(),
            )
        }),
        Key::Ed25519Public(k) => {
            use ed25519_dalek::pkcs8::EncodePublicKey;
            Zeroizing::new(
                k.to_public_key_der()
                    .map_err(|e| der_error(&e))?
                    .as_bytes()
                    .to_vec(),
            )
        }
        Key::X25519Public(k) => {
            let info = spki::SubjectPublicKeyInfoRef {
                algorithm: spki::AlgorithmIdentifierRef {
                    oid: X25519_OID,
                    parameters: None,
                },
                subject_public_key: BitStringRef::from_bytes(k.as_bytes())
                    .map_err(|e| der_error(&e))?,
            };
            Zeroizing::new(info.to_der().map_err(|e| der_error(&e))?)
        }
        _ => return Ok(None),
    }))
}

fn export_raw_public(key: &Key) -> Result<Vec<u8>> {
    match key {
        Key::EcPublic(k) => Ok(with_curve!(EcPublic, k, |k, c| {
            use c::elliptic_curve::sec1::ToEncodedPoint;
            k.to_encoded_point(false).as_bytes().to_vec()
        })),
        Key::Ed25519Public(k) => Ok(k.to_bytes().to_vec()),
        Key::X25519Public(k) => Ok(k.as_bytes().to_vec()),
        _ => Err(CryptoError::access("Only public keys export as raw")),
    }
}

/// Wipes the (base64) members of a JWK that may hold private key material.
fn zeroize_json(members: &mut Map<String, Value>) {
    use zeroize::Zeroize;
    for value in members.values_mut() {
        if let Value::String(text) = value {
            text.zeroize();
        }
    }
}

fn b64(bytes: &[u8]) -> Value {
    Value::String(Base64UrlUnpadded::encode_string(bytes))
}

fn export_jwk(key: &Key) -> Result<Value> {
    Ok(match key {
        Key::Secret(k) => json!({ "kty": "oct", "k": b64(k) }),
        Key::RsaPublic(k) => {
            json!({ "kty": "RSA", "n": b64(&k.n().to_bytes_be()), "e": b64(&k.e().to_bytes_be()) })
        }
        Key::RsaPrivate(k) => {
            let [p, q] = k.primes() else {
                return Err(CryptoError::not_supported(
                    "Multi-prime RSA keys cannot be exported as JWK",
                ));
            };
            let big = |n: &BigUint| b64(&Zeroizing::new(n.to_bytes_be()));
            let crt = |v: Option<&BigUint>| {
                v.map(big)
                    .ok_or_else(|| CryptoError::operation("RSA CRT values missing"))
            };
            let qi = k
                .crt_coefficient()
                .map(|v| big(&v))
                .ok_or_else(|| CryptoError::operation("RSA CRT values missing"))?;
            json!({
                "kty": "RSA",
                "n": big(k.n()), "e": big(k.e()), "d": big(k.d()),
                "p": big(p), "q": big(q), "dp": crt(k.dp())?, "dq": crt(k.dq())?, "qi": qi,
            })
        }
        Key::EcPublic(k) => ec_jwk(k, None),
        Key::EcPrivate(k) => {
            let d = with_curve!(EcPrivate, k, |k, _c| Zeroizing::new(k.to_bytes().to_vec()));
            ec_jwk(&k.public(), Some(&d))
        }
        Key::Ed25519Public(k) => json!({ "kty": "OKP", "crv": "Ed25519", "x": b64(k.as_bytes()) }),
        Key::Ed25519Private(k) => json!({
            "kty": "OKP", "crv": "Ed25519",
            "x": b64(k.verifying_key().as_bytes()), "d": b64(Zeroizing::new(k.to_bytes()).as_slice()),
        }),
        Key::X25519Public(k) => json!({ "kty": "OKP", "crv": "X25519", "x": b64(k.as_bytes()) }),
        Key::X25519Private(k) => json!({
            "kty": "OKP", "crv": "X25519",
            "x": b64(x25519_dalek::PublicKey::from(k.as_ref()).as_bytes()),
            "d": b64(Zeroizing::new(k.to_bytes()).as_slice()),
        }),
    })
}

fn ec_jwk(public: &EcPublic, d: Option<&[u8]>) -> Value {
    let point = with_curve!(EcPublic, public, |k, c| {
        use c::elliptic_curve::sec1::ToEncodedPoint;
        k.to_encoded_point(false).as_bytes().to_vec()
    });
    let size = public.curve().field_bytes();
    // Uncompressed SEC1: 0x04 || x || y.
    let (x, y) = point
        .get(1..)
        .unwrap_or_default()
        .split_at(size.min(point.len().saturating_sub(1)));
    let mut jwk = json!({ "kty": "EC", "crv": public.curve().name(), "x": b64(x), "y": b64(y) });
    if let (Some(d), Value::Object(map)) = (d, &mut jwk) {
        map.insert("d".to_owned(), b64(d));
    }
    jwk
}

// === generate ===

/// A generated key, or key pair (public, private).
pub enum Generated {
    One(Key),
    Pair(Key, Key),
}

pub fn generate_secret(length_bytes: usize) -> Result<Generated> {
    let mut bytes = Zeroizing::new(vec![0u8; length_bytes]);
    getrandom::fill(&mut bytes)
        .map_err(|_| CryptoError::operation("The system's random source failed"))?;
    Ok(Generated::One(Key::Secret(bytes)))
}

pub fn generate_pair(kind: Kind) -> Result<Generated> {
    let private = match kind {
        Kind::Ec(Curve::P256) => {
            Key::EcPrivate(EcPrivate::P256(p256::SecretKey::random(&mut OsRng)))
        }
        Kind::Ec(Curve::P384) => {
            Key::EcPrivate(EcPrivate::P384(p384::SecretKey::random(&mut OsRng)))
        }
        Kind::Ec(Curve::P521) => {
            Key::EcPrivate(EcPrivate::P521(p521::SecretKey::random(&mut OsRng)))
        }
        Kind::Ed25519 => {
            Key::Ed25519Private(Box::new(ed25519_dalek::SigningKey::generate(&mut OsRng)))
        }
        Kind::X25519 => {
            Key::X25519Private(Box::new(x25519_dalek::StaticSecret::random_from_rng(OsRng)))
        }
        Kind::Secret | Kind::Rsa => {
            return Err(CryptoError::Type("not a key pair kind".to_owned()));
        }
    };
    let public = public_of(&private).ok_or_else(|| CryptoError::operation("no public key"))?;
    Ok(Generated::Pair(public, private))
}

/// Checks RSA generation parameters (cheap; done before any work is queued).
pub fn rsa_parameters(bits: usize, exponent: &[u8]) -> Result<BigUint> {
    // Multiples of 128 only, as workerd (BoringSSL) and AWS-LC generate.
    if !(RSA_MIN_BITS..=RSA_MAX_BITS).contains(&bits) || !bits.is_multiple_of(128) {
        return Err(CryptoError::operation(format!(
            "modulusLength must be a multiple of 128 from {RSA_MIN_BITS} to {RSA_MAX_BITS}"
        )));
    }
    let e = BigUint::from_bytes_be(exponent);
    if e != BigUint::from(3u32) && e != BigUint::from(65_537u32) {
        return Err(CryptoError::operation(
            "The publicExponent must be 3 or 65537",
        ));
    }
    Ok(e)
}

/// Generates an RSA key pair with AWS-LC: slow (hundreds of ms for 4096
/// bits), so it runs off the isolate's thread (see `offload.rs`), and stops
/// when `stop` says so. `bits` passed [`rsa_parameters`].
pub fn generate_rsa(bits: usize, e: &BigUint, stop: &Stop) -> Result<Generated> {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    let exponent = if *e == BigUint::from(3u32) { 3 } else { 65_537 };
    let der = super::aws_lc::generate(bits, exponent, stop)?;
    let parts = RsaPrivateKey::from_pkcs1_der(&der)
        .map_err(|e| CryptoError::operation(format!("RSA key generation failed: {e}")))?;
    let signer = (bits >= super::aws_lc::SIGNING_MIN_BITS)
        .then(|| super::aws_lc::signer(&der))
        .flatten();
    let private = RsaPrivate::with_signer(parts, signer);
    let public = private.to_public_key();
    Ok(Generated::Pair(
        Key::RsaPublic(Box::new(public)),
        Key::RsaPrivate(Box::new(private)),
    ))
}
