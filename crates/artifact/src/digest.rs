//! SHA-256 digests as OCI writes them (`sha256:<hex>`), and the one check
//! of bytes against the digest that names them.

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
