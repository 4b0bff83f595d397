//! SHA-256 digests as OCI writes them (`sha256:<hex>`), and the one check
//! of bytes against what names them: a digest, and for a blob a manifest
//! names, the size its descriptor declares as well.

use oci_client::manifest::OciDescriptor;
use sha2::{Digest, Sha256};

use crate::Error;

pub(crate) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

pub(crate) fn verify(
    reference: &str,
    what: &'static str,
    expected: &str,
    bytes: &[u8],
) -> Result<(), Error> {
    let actual = sha256(bytes);
    if actual != expected {
        return Err(Error::DigestMismatch {
            reference: reference.to_owned(),
            what,
            expected: expected.to_owned(),
            actual,
        });
    }
    Ok(())
}

/// A blob as the manifest's descriptor declares it: its digest and size.
/// Its bytes are checked against both here, and nowhere else: while they
/// are read (never more than declared), and once complete (exactly the
/// size, then the digest).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Declared<'a> {
    reference: &'a str,
    what: &'static str,
    digest: &'a str,
    size: u64,
}

impl<'a> Declared<'a> {
    pub(crate) fn new(
        reference: &'a str,
        what: &'static str,
        descriptor: &'a OciDescriptor,
    ) -> Self {
        Self {
            reference,
            what,
            digest: &descriptor.digest,
            // A negative size is over any limit (refused before this).
            size: u64::try_from(descriptor.size).unwrap_or(u64::MAX),
        }
    }

    pub(crate) fn reference(&self) -> &'a str {
        self.reference
    }

    /// The declared size.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Refuses `held` bytes of the blob if they are more than declared
    /// (whether the blob is complete or not: a reader asks before it keeps
    /// a chunk, and stops there), or, the blob `complete`, fewer.
    pub(crate) fn check_size(&self, held: u64, complete: bool) -> Result<(), Error> {
        if held > self.size || (complete && held < self.size) {
            return Err(Error::SizeMismatch {
                reference: self.reference.to_owned(),
                what: self.what,
                declared: self.size,
                actual: held,
            });
        }
        Ok(())
    }

    /// Checks the complete blob: its size, then its digest.
    pub(crate) fn verify(&self, bytes: &[u8]) -> Result<(), Error> {
        self.check_size(bytes.len() as u64, true)?;
        verify(self.reference, self.what, self.digest, bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(bytes: &[u8], size: i64) -> OciDescriptor {
        OciDescriptor {
            digest: sha256(bytes),
            size,
            ..OciDescriptor::default()
        }
    }

    #[test]
    fn a_blob_must_be_exactly_its_declared_size_before_its_digest_is_checked() {
        let blob = b"0123456789";
        for size in [0, 9, 11, 1 << 20, -1] {
            let descriptor = descriptor(blob, size);
            let declared = Declared::new("r", "the compressed layer", &descriptor);
            let error = declared.verify(blob).unwrap_err();
            assert!(
                matches!(
                    error,
                    Error::SizeMismatch { what: "the compressed layer", declared, actual: 10, .. }
                        if declared == u64::try_from(size).unwrap_or(u64::MAX)
                ),
                "{size}: {error}"
            );
            assert_eq!(error.kind(), "size_mismatch");
        }
        let exact = descriptor(blob, 10);
        Declared::new("r", "the compressed layer", &exact)
            .verify(blob)
            .unwrap();
        // The right size with other bytes is a digest mismatch, not a size one.
        let error = Declared::new("r", "the compressed layer", &exact)
            .verify(b"9876543210")
            .unwrap_err();
        assert!(matches!(error, Error::DigestMismatch { .. }), "{error}");
    }

    #[test]
    fn a_blob_in_part_is_refused_only_once_it_passes_its_declared_size() {
        let descriptor = descriptor(b"0123456789", 10);
        let declared = Declared::new("r", "the config", &descriptor);
        for held in [0, 1, 9, 10] {
            declared.check_size(held, false).unwrap();
        }
        let error = declared.check_size(11, false).unwrap_err();
        assert!(
            matches!(
                error,
                Error::SizeMismatch {
                    what: "the config",
                    declared: 10,
                    actual: 11,
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(
            error.to_string(),
            "bundle r: the config is at least 11 bytes, not the 10 its manifest declares"
        );
        let short = declared.check_size(9, true).unwrap_err();
        assert_eq!(
            short.to_string(),
            "bundle r: the config is 9 bytes, not the 10 its manifest declares"
        );
    }
}
