//! [`CryptoError`]: why a Web Crypto operation failed, named for the
//! `DOMException` (or `TypeError`) the Web Crypto spec throws for it.

/// A failed Web Crypto step. The host throws it as a `TypeError` whose
/// message starts with the DOMException name (`"DataError: …"`); the runtime's
/// JavaScript turns that into a real `DOMException` (a plain `TypeError` stays
/// one).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CryptoError {
    /// The algorithm, curve, format or parameter value is not implemented.
    #[error("NotSupportedError: {0}")]
    NotSupported(String),
    /// The key data or a JWK member is malformed or does not fit the algorithm.
    #[error("DataError: {0}")]
    Data(String),
    /// The key cannot be used that way (wrong type, not extractable).
    #[error("InvalidAccessError: {0}")]
    InvalidAccess(String),
    /// The operation itself failed (bad tag, bad padding, bad length).
    #[error("OperationError: {0}")]
    Operation(String),
    /// A wrong argument type from the runtime's own JavaScript.
    #[error("{0}")]
    Type(String),
}

impl CryptoError {
    pub(crate) fn not_supported(message: impl Into<String>) -> Self {
        Self::NotSupported(message.into())
    }

    pub(crate) fn data(message: impl Into<String>) -> Self {
        Self::Data(message.into())
    }

    pub(crate) fn access(message: impl Into<String>) -> Self {
        Self::InvalidAccess(message.into())
    }

    pub(crate) fn operation(message: impl Into<String>) -> Self {
        Self::Operation(message.into())
    }
}

pub(crate) type Result<T> = std::result::Result<T, CryptoError>;
