//! The ACME parts of the certificate tests, as `hack/build-cert-manager.sh`
//! caches them in one folder: [`Pebble`] (the ACME server) with its DNS
//! server, and [`CertManager`] (cert-manager's controller) with its CRDs.
//! Each is killed on drop.

mod cert_manager;
mod pebble;

use std::path::PathBuf;
use std::time::Duration;

pub use cert_manager::CertManager;
pub use pebble::Pebble;

use crate::Error;
use crate::config::Config;

/// cert-manager's release, as `hack/build-cert-manager.sh` builds it.
pub const CERT_MANAGER_VERSION: &str = "v1.21.2";
/// Pebble's release, as `hack/build-cert-manager.sh` builds it.
pub const PEBBLE_VERSION: &str = "v2.10.3";
/// How long each part may take to listen.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// The cached folder of the ACME parts.
fn parts_dir() -> Result<PathBuf, Error> {
    let dir = Config::from_env()
        .cache_dir()?
        .join(format!("acme-{CERT_MANAGER_VERSION}-{PEBBLE_VERSION}"));
    Ok(dir)
}

/// A binary of the cached folder, which must exist.
fn binary(name: &'static str) -> Result<PathBuf, Error> {
    let path = parts_dir()?.join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::BinaryNotFound { name, path })
    }
}

/// The folder of cert-manager's CRDs (one YAML file each), for
/// `ControlPlane::apply_file`.
pub fn cert_manager_crds() -> Result<PathBuf, Error> {
    let dir = parts_dir()?.join("crds");
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(Error::BinaryNotFound {
            name: "cert-manager CRDs",
            path: dir,
        })
    }
}
