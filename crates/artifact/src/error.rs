//! What can go wrong with a bundle artifact.

/// Why a bundle artifact cannot be pushed, pulled or loaded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("bundle reference {reference:?} is refused: {why}")]
    BadReference {
        reference: String,
        why: &'static str,
    },
    #[error("the registry refused the credentials for {reference}: {detail}")]
    Unauthorized { reference: String, detail: String },
    #[error(
        "bundle {reference}: registry {registry} is not one this cluster pulls bundles from \
         (allowed: {allowed}; the admin lists them: --bundle-registry, Helm operator.config and node.config bundleRegistries)"
    )]
    RegistryNotAllowed {
        reference: String,
        registry: String,
        allowed: String,
    },
    #[error("--bundle-registry {entry:?} is not host, host:port or *.domain")]
    BadAllowedRegistry { entry: String },
    #[error("--bundle-registry-ca: {detail}")]
    BadRegistryCa { detail: String },
    #[error("bundle {reference} was not found in its registry")]
    NotFound { reference: String },
    #[error("the registry of {reference} failed: {detail}")]
    Registry { reference: String, detail: String },
    #[error("bundle {reference}: {what} is {actual} bytes, more than the limit of {limit}")]
    TooLarge {
        reference: String,
        what: &'static str,
        actual: u64,
        limit: u64,
    },
    #[error("bundle {reference}: {what} has digest {actual}, not {expected}")]
    DigestMismatch {
        reference: String,
        what: &'static str,
        expected: String,
        actual: String,
    },
    /// A blob whose byte count is not the size its manifest's descriptor
    /// declares. Reading stops once a blob passes its declared size, so
    /// `actual` above `declared` is a lower bound.
    #[error(
        "bundle {reference}: {what} is {}{actual} bytes, not the {declared} its manifest declares",
        if .actual > .declared { "at least " } else { "" }
    )]
    SizeMismatch {
        reference: String,
        what: &'static str,
        declared: u64,
        actual: u64,
    },
    #[error("bundle {reference} is not an Isolane bundle: {why}")]
    Malformed { reference: String, why: String },
    #[error("the bundle cache at {path}: {source}")]
    Cache {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::BadReference { .. } => "bad_reference",
            Error::Unauthorized { .. } => "unauthorized",
            Error::RegistryNotAllowed { .. } => "registry_not_allowed",
            Error::BadAllowedRegistry { .. } => "bad_allowed_registry",
            Error::BadRegistryCa { .. } => "bad_registry_ca",
            Error::NotFound { .. } => "not_found",
            Error::Registry { .. } => "registry",
            Error::TooLarge { .. } => "too_large",
            Error::DigestMismatch { .. } => "digest_mismatch",
            Error::SizeMismatch { .. } => "size_mismatch",
            Error::Malformed { .. } => "malformed",
            Error::Cache { .. } => "cache",
        }
    }

    pub(crate) fn malformed(reference: &str, why: impl Into<String>) -> Self {
        Error::Malformed {
            reference: reference.to_owned(),
            why: why.into(),
        }
    }
}
