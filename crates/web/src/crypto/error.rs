//! [`CryptoError`]: why a Web Crypto operation failed, named for the
//! `DOMException` (or `TypeError`) the Web Crypto spec throws for it.

use isolane_engine::api::{ErrorClass, HostError};

/// A failed Web Crypto step. The host throws it as the `DOMException` it is
/// named for (a `TypeError` for [`CryptoError::Type`]): see `From` below.
#[derive(Debug, thiserror::Error)]
pub enum CryptoError {
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
    pub fn not_supported(message: impl Into<String>) -> Self {
        Self::NotSupported(message.into())
    }

    pub fn data(message: impl Into<String>) -> Self {
        Self::Data(message.into())
    }

    pub fn access(message: impl Into<String>) -> Self {
        Self::InvalidAccess(message.into())
    }

    pub fn operation(message: impl Into<String>) -> Self {
        Self::Operation(message.into())
    }
}

pub type Result<T> = std::result::Result<T, CryptoError>;

impl From<CryptoError> for HostError {
    fn from(error: CryptoError) -> Self {
        let (class, message) = match error {
            CryptoError::NotSupported(m) => (ErrorClass::NotSupported, m),
            CryptoError::Data(m) => (ErrorClass::Data, m),
            CryptoError::InvalidAccess(m) => (ErrorClass::InvalidAccess, m),
            CryptoError::Operation(m) => (ErrorClass::Operation, m),
            CryptoError::Type(m) => (ErrorClass::Type, m),
        };
        HostError::new(class, message)
    }
}
