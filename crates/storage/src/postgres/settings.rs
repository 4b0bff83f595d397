//! How a process reaches the PostgreSQL store: the connection string, the
//! CA that signs the server's certificate, the pool's size; and the flags
//! that set them, the same for a runtime node and the operator.

use std::path::PathBuf;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use crate::StoreError;

/// The environment variable of the connection string (a Secret's key in
/// the chart, never a command-line argument).
pub const POSTGRES_URL_ENV: &str = "ISOLANE_STORAGE_POSTGRES_URL";

/// Where the store is and how it is reached.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresSettings {
    /// A libpq connection string or URL (`postgres://user:pw@host/db`,
    /// `sslmode=disable|prefer|require`).
    pub url: String,
    /// A PEM bundle of CAs trusted for the server's certificate besides the
    /// public web PKI roots.
    pub ca_file: Option<PathBuf>,
    /// Connections held open at most.
    pub pool_size: usize,
    /// How long an operation waits for a connection (to be made, or to be
    /// free) before it fails.
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for PostgresSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The connection string may hold a password.
        f.debug_struct("PostgresSettings")
            .field("ca_file", &self.ca_file)
            .field("pool_size", &self.pool_size)
            .finish_non_exhaustive()
    }
}

impl PostgresSettings {
    /// Settings for `url` with the defaults of the flags.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            ca_file: None,
            pool_size: 16,
            connect_timeout: Duration::from_secs(5),
        }
    }

    /// The connection string parsed.
    pub(crate) fn config(&self) -> Result<tokio_postgres::Config, StoreError> {
        self.url
            .parse()
            .map_err(|source| StoreError::Settings(format!("the connection string: {source}")))
    }

    /// TLS to the server: the public web PKI roots and `ca_file`'s.
    pub(crate) fn tls(&self) -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = &self.ca_file {
            let bad = |what: String| StoreError::Settings(format!("{}: {what}", path.display()));
            let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
            let mut added = 0;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| bad(e.to_string()))?;
                roots.add(cert).map_err(|e| bad(e.to_string()))?;
                added += 1;
            }
            if added == 0 {
                return Err(bad("no CA certificate in it".into()));
            }
        }
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| StoreError::Settings(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
    }
}

/// The store's flags (`--storage-postgres-*`), for the runtime node and the
/// operator.
#[cfg(feature = "cli")]
#[derive(Debug, Clone, clap::Args)]
pub struct PostgresArgs {
    /// The PostgreSQL database that keeps Workers' KV namespaces, as a libpq
    /// connection string or URL; from the environment (a Secret), so the
    /// password is never on a command line. Unset: no store (KV operations
    /// throw).
    #[arg(long = "storage-postgres-url", env = POSTGRES_URL_ENV, hide_env_values = true, value_name = "URL")]
    pub storage_postgres_url: Option<String>,
    /// A PEM bundle of CAs trusted for the database server's certificate,
    /// besides the public web PKI roots.
    #[arg(long, env = "ISOLANE_STORAGE_POSTGRES_CA_FILE", value_name = "PATH")]
    pub storage_postgres_ca_file: Option<PathBuf>,
    /// Connections to the database this process holds open at most.
    #[arg(long, env = "ISOLANE_STORAGE_POSTGRES_POOL", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub storage_postgres_pool: u16,
}

#[cfg(feature = "cli")]
impl PostgresArgs {
    /// The settings, when a database is named.
    pub fn settings(&self) -> Option<PostgresSettings> {
        let url = self.storage_postgres_url.as_ref()?;
        Some(PostgresSettings {
            ca_file: self.storage_postgres_ca_file.clone(),
            pool_size: usize::from(self.storage_postgres_pool),
            ..PostgresSettings::new(url.clone())
        })
    }
}
