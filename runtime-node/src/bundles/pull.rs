//! Bundles named by digest: the node pulls the artifact a bundle Secret
//! names (with the credentials the operator resolved from the Worker's pull
//! secret), verifies every blob against its digest, keeps it in a
//! content-addressed disk cache and unpacks its modules. The revision stays
//! the one the operator named; the modules are the artifact's exactly.

use isolane_artifact::{
    AllowedRegistries, ArtifactLimits, BundleRef, Cache, Credentials, Registry,
};
use isolane_worker::Bundle;

use crate::config::ArtifactSettings;

/// Pulls bundles for the watch.
#[derive(Debug)]
pub struct Puller {
    registry: Registry,
    cache: Option<Cache>,
}

impl Puller {
    /// A puller with the cache of `settings` (without one when its
    /// folder cannot be made: every pull then goes to the registry).
    pub fn new(settings: &ArtifactSettings) -> Result<Self, isolane_artifact::Error> {
        let cache = match Cache::open(&settings.cache_dir, settings.cache_bytes) {
            Ok(cache) => Some(cache),
            Err(error) => {
                tracing::warn!(%error, "no bundle cache: every bundle is pulled on every load");
                None
            }
        };
        let mut registry = Registry::new(
            settings.plain_http.clone(),
            AllowedRegistries::listed(&settings.allowed)?,
            ArtifactLimits::default(),
        )?;
        if let Some(ca) = &settings.registry_ca {
            registry = registry.trusting(ca.clone())?;
        }
        Ok(Self { registry, cache })
    }

    /// `bundle` with its modules, pulled when it names an artifact.
    pub async fn complete(&self, bundle: Bundle) -> Result<Bundle, isolane_artifact::Error> {
        let Some(source) = &bundle.artifact else {
            return Ok(bundle);
        };
        let reference: BundleRef = source.reference.parse()?;
        let credentials = match (&source.username, &source.password) {
            (Some(username), Some(password)) => Some(Credentials {
                username: username.clone(),
                password: password.clone(),
            }),
            _ => None,
        };
        let started = std::time::Instant::now();
        let pulled = self
            .registry
            .pull(&reference, credentials.as_ref(), self.cache.as_ref())
            .await?;
        tracing::info!(
            worker.id = %bundle.worker_id,
            revision = %bundle.revision,
            bundle = %reference,
            compressed_bytes = pulled.compressed_bytes,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "bundle pulled"
        );
        let compat = (
            bundle.compatibility_date.as_deref(),
            bundle.compatibility_flags.as_slice(),
        );
        let site = pulled
            .assets
            .map(|files| {
                tracing::info!(worker.id = %bundle.worker_id, files = files.files.len(), bytes = files.total_bytes(), "bundle assets");
                isolane_artifact::assets_layer::site(&reference.to_string(), &files, compat)
            })
            .transpose()?;
        Ok(bundle.with_pulled_modules(pulled.modules).with_assets(site))
    }
}
