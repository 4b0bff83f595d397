//! [`Key`]: the material of one Web Crypto `CryptoKey`, kept on the Rust side.
//!
//! Every variant zeroises its secret on drop: `Zeroizing` for raw secrets, and
//! the RustCrypto types' own `ZeroizeOnDrop` (RSA, EC scalars, Ed25519 and
//! X25519 secrets, built with their `zeroize` features).

use rsa::traits::PublicKeyParts;
use zeroize::Zeroizing;

/// A named curve of ECDSA/ECDH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Curve {
    P256,
    P384,
    P521,
}

impl Curve {
    pub(crate) fn parse(name: &str) -> Option<Self> {
        match name {
            "P-256" => Some(Self::P256),
            "P-384" => Some(Self::P384),
            "P-521" => Some(Self::P521),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::P256 => "P-256",
            Self::P384 => "P-384",
            Self::P521 => "P-521",
        }
    }

    /// Bytes of a field element (and of a private scalar).
    pub(crate) fn field_bytes(self) -> usize {
        match self {
            Self::P256 => 32,
            Self::P384 => 48,
            Self::P521 => 66,
        }
    }
}

pub(crate) enum EcPrivate {
    P256(p256::SecretKey),
    P384(p384::SecretKey),
    P521(p521::SecretKey),
}

pub(crate) enum EcPublic {
    P256(p256::PublicKey),
    P384(p384::PublicKey),
    P521(p521::PublicKey),
}

/// Dispatches on the curve of an [`EcPrivate`] or [`EcPublic`], binding the
/// concrete key as `$k` and the curve's crate as `$c`.
macro_rules! with_curve {
    ($ty:ident, $value:expr, |$k:ident, $c:ident| $body:expr) => {
        match $value {
            $crate::host::crypto::key::$ty::P256($k) => {
                #[allow(unused_imports)]
                use p256 as $c;
                $body
            }
            $crate::host::crypto::key::$ty::P384($k) => {
                #[allow(unused_imports)]
                use p384 as $c;
                $body
            }
            $crate::host::crypto::key::$ty::P521($k) => {
                #[allow(unused_imports)]
                use p521 as $c;
                $body
            }
        }
    };
}
pub(crate) use with_curve;

impl EcPrivate {
    pub(crate) fn curve(&self) -> Curve {
        match self {
            Self::P256(_) => Curve::P256,
            Self::P384(_) => Curve::P384,
            Self::P521(_) => Curve::P521,
        }
    }

    pub(crate) fn public(&self) -> EcPublic {
        match self {
            Self::P256(k) => EcPublic::P256(k.public_key()),
            Self::P384(k) => EcPublic::P384(k.public_key()),
            Self::P521(k) => EcPublic::P521(k.public_key()),
        }
    }
}

impl EcPublic {
    pub(crate) fn curve(&self) -> Curve {
        match self {
            Self::P256(_) => Curve::P256,
            Self::P384(_) => Curve::P384,
            Self::P521(_) => Curve::P521,
        }
    }
}

/// The material of one key.
pub(crate) enum Key {
    /// HMAC, AES, PBKDF2 and HKDF keys: the raw secret.
    Secret(Zeroizing<Vec<u8>>),
    RsaPrivate(Box<rsa::RsaPrivateKey>),
    RsaPublic(Box<rsa::RsaPublicKey>),
    EcPrivate(EcPrivate),
    EcPublic(EcPublic),
    Ed25519Private(Box<ed25519_dalek::SigningKey>),
    Ed25519Public(ed25519_dalek::VerifyingKey),
    X25519Private(Box<x25519_dalek::StaticSecret>),
    X25519Public(x25519_dalek::PublicKey),
}

/// What `CryptoKey.algorithm` and `.type` need to know about a key, read
/// from its material (the JavaScript side adds the name and hash).
pub(crate) struct KeyInfo {
    pub(crate) kind: &'static str,
    /// Secret keys: length in bits.
    pub(crate) length_bits: Option<usize>,
    /// RSA: modulus length in bits and the public exponent (big-endian).
    pub(crate) modulus_bits: Option<usize>,
    pub(crate) public_exponent: Option<Vec<u8>>,
    /// EC keys: the named curve.
    pub(crate) curve: Option<Curve>,
}

impl Key {
    /// `"secret"`, `"private"` or `"public"` (`CryptoKey.type`).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Secret(_) => "secret",
            Self::RsaPrivate(_)
            | Self::EcPrivate(_)
            | Self::Ed25519Private(_)
            | Self::X25519Private(_) => "private",
            Self::RsaPublic(_)
            | Self::EcPublic(_)
            | Self::Ed25519Public(_)
            | Self::X25519Public(_) => "public",
        }
    }

    pub(crate) fn info(&self) -> KeyInfo {
        let mut info = KeyInfo {
            kind: self.kind(),
            length_bits: None,
            modulus_bits: None,
            public_exponent: None,
            curve: None,
        };
        match self {
            Self::Secret(bytes) => info.length_bits = Some(bytes.len() * 8),
            Self::RsaPrivate(k) => {
                info.modulus_bits = Some(k.size() * 8);
                info.public_exponent = Some(k.e().to_bytes_be());
            }
            Self::RsaPublic(k) => {
                info.modulus_bits = Some(k.size() * 8);
                info.public_exponent = Some(k.e().to_bytes_be());
            }
            Self::EcPrivate(k) => info.curve = Some(k.curve()),
            Self::EcPublic(k) => info.curve = Some(k.curve()),
            _ => {}
        }
        info
    }

    /// Roughly what the key holds in memory, charged to the isolate's budget.
    pub(crate) fn size_estimate(&self) -> usize {
        const BASE: usize = 256;
        match self {
            Self::Secret(bytes) => BASE + bytes.len(),
            // n, e, d, two primes and the CRT values: about 5 moduli.
            Self::RsaPrivate(k) => BASE + 5 * k.size(),
            Self::RsaPublic(k) => BASE + k.size(),
            _ => BASE,
        }
    }
}
