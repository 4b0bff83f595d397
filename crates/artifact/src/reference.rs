//! A bundle's name: a registry repository and a digest (`spec.bundle`).

use std::fmt;
use std::str::FromStr;

use oci_client::Reference;

use crate::Error;

/// `registry/repository@sha256:<64 hex>`, optionally with a tag before
/// the `@` (ignored: the digest decides). A reference without a digest
/// is refused, so a revision always names fixed bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleRef {
    reference: Reference,
    digest: String,
}

impl BundleRef {
    /// The `sha256:<hex>` digest of the manifest.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The registry host (and port).
    pub fn registry(&self) -> &str {
        self.reference.resolve_registry()
    }

    /// The repository inside the registry.
    pub fn repository(&self) -> &str {
        self.reference.repository()
    }

    /// The reference as `oci-client` takes it.
    pub(crate) fn oci(&self) -> &Reference {
        &self.reference
    }

    /// The reference of the manifest `digest` in `repository` (what a push
    /// produces).
    pub fn from_parts(repository: &Reference, digest: &str) -> Result<Self, Error> {
        format!(
            "{}/{}@{digest}",
            repository.registry(),
            repository.repository()
        )
        .parse()
    }
}

impl FromStr for BundleRef {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        let bad = |why: &'static str| Error::BadReference {
            reference: text.to_owned(),
            why,
        };
        if !text.contains('@') {
            return Err(bad(
                "it names no digest: push it and use the printed name (…@sha256:<64 hex>)",
            ));
        }
        let reference: Reference = text
            .parse()
            .map_err(|_| bad("not a registry/repository@sha256:<hex> reference"))?;
        let digest = reference
            .digest()
            .ok_or_else(|| bad("it names no digest"))?
            .to_owned();
        let hex = digest
            .strip_prefix("sha256:")
            .ok_or_else(|| bad("only sha256 digests are accepted"))?;
        if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(bad("a sha256 digest is 64 lowercase hex digits"));
        }
        // Without a registry host the name would mean Docker Hub: say so.
        if !text
            .split('/')
            .next()
            .is_some_and(|host| host.contains('.') || host.contains(':') || host == "localhost")
        {
            return Err(bad(
                "it names no registry host (registry.example/repo@sha256:…)",
            ));
        }
        Ok(Self { reference, digest })
    }
}

impl fmt::Display for BundleRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}@{}",
            self.reference.registry(),
            self.reference.repository(),
            self.digest
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn a_reference_must_name_a_sha256_digest_and_a_registry() {
        let good: BundleRef = format!("registry.example/ns/app@{DIGEST}").parse().unwrap();
        assert_eq!(good.digest(), DIGEST);
        assert_eq!(good.registry(), "registry.example");
        assert_eq!(good.repository(), "ns/app");
        assert_eq!(
            good.to_string(),
            format!("registry.example/ns/app@{DIGEST}")
        );
        let port: BundleRef = format!("127.0.0.1:5000/app:v1@{DIGEST}").parse().unwrap();
        assert_eq!(port.registry(), "127.0.0.1:5000");
        for bad in [
            "registry.example/ns/app:v1".to_owned(),
            "registry.example/ns/app".to_owned(),
            format!("ns/app@{DIGEST}"),
            "registry.example/app@sha256:abc".to_owned(),
            format!("registry.example/app@{}", DIGEST.to_uppercase()),
            "registry.example/app@sha512:00".to_owned(),
        ] {
            assert!(bad.parse::<BundleRef>().is_err(), "{bad} was accepted");
        }
    }
}
