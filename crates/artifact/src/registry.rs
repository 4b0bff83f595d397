//! Push and a verified, bounded pull over the OCI distribution protocol.
//!
//! Everything pulled is checked before it is used: the manifest's bytes
//! against the digest the Worker names, then the config and layer against
//! the digests and sizes the manifest declares (sizes within the limits,
//! each blob read no further than its declared size whatever the registry's
//! headers say, and refused if it ends short).

use std::collections::BTreeMap;

use base64ct::{Base64, Encoding};
use futures::StreamExt;
use isolane_assets::AssetFiles;
use isolane_worker::Modules;
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use crate::assets_layer::{self, ASSETS_LAYER_MEDIA_TYPE};
use crate::clients::Clients;
use crate::digest::{Declared, sha256, verify};
use crate::layout::{self, CONFIG_MEDIA_TYPE, LAYER_MEDIA_TYPE};
use crate::registry_ca::RegistryCa;
use crate::system_roots::system_roots;
use crate::{AllowedRegistries, ArtifactLimits, BundleRef, Cache, Error};

/// A user name and password for a registry (from a pull secret's
/// `.dockerconfigjson`, or `isolane push`'s flags).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// The credentials a `kubernetes.io/dockerconfigjson` Secret's
    /// `.dockerconfigjson` holds for `registry` (`auths.<registry>` with
    /// `username`/`password` or `auth`, base64 of `user:password`), if any.
    pub fn from_docker_config(json: &[u8], registry: &str) -> Option<Self> {
        #[derive(serde::Deserialize)]
        struct DockerConfig {
            #[serde(default)]
            auths: BTreeMap<String, Entry>,
        }
        #[derive(serde::Deserialize)]
        struct Entry {
            username: Option<String>,
            password: Option<String>,
            auth: Option<String>,
        }
        let config: DockerConfig = serde_json::from_slice(json).ok()?;
        let entry = config.auths.iter().find_map(|(key, entry)| {
            let host = key
                .trim_start_matches("https://")
                .trim_start_matches("http://")
                .split('/')
                .next()
                .unwrap_or_default();
            (host == registry).then_some(entry)
        })?;
        if let (Some(username), Some(password)) = (&entry.username, &entry.password) {
            return Some(Self {
                username: username.clone(),
                password: password.clone(),
            });
        }
        let decoded = Base64::decode_vec(entry.auth.as_deref()?).ok()?;
        let (username, password) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
        Some(Self {
            username: username.to_owned(),
            password: password.to_owned(),
        })
    }

    fn auth(credentials: Option<&Self>) -> RegistryAuth {
        match credentials {
            Some(c) => RegistryAuth::Basic(c.username.clone(), c.password.clone()),
            None => RegistryAuth::Anonymous,
        }
    }
}

/// A bundle's verified blobs.
#[derive(Debug, Clone)]
pub struct Pulled {
    pub modules: Modules,
    /// The static assets, when the artifact has an assets layer.
    pub assets: Option<AssetFiles>,
    /// Bytes of the compressed layer.
    pub compressed_bytes: u64,
}

/// A client of OCI registries for bundles.
///
/// Each push or pull runs on a client of its own: `oci-client` keeps the
/// first credentials it was given per registry host, and one tenant's pull
/// secret must never serve another tenant's pull.
pub struct Registry {
    plain_http: Vec<String>,
    allowed: AllowedRegistries,
    limits: ArtifactLimits,
    /// CAs trusted besides the public web PKI ([`Registry::trusting`]).
    extra_roots: RegistryCa,
    /// One client per credentials (`clients.rs`).
    clients: Clients<Option<Credentials>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// A client speaking HTTPS to every registry but `plain_http` ones
    /// (host or host:port, for a registry on loopback in tests and dev),
    /// pulling only from `allowed` registries.
    pub fn new(
        plain_http: Vec<String>,
        allowed: AllowedRegistries,
        limits: ArtifactLimits,
    ) -> Result<Self, Error> {
        // reqwest is built without a default TLS provider: the project's
        // is ring. Another part of the process may have installed it already.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let registry = Self {
            plain_http,
            allowed,
            limits,
            extra_roots: RegistryCa::default(),
            clients: Clients::default(),
        };
        registry.client(None)?;
        Ok(registry)
    }

    /// This client, also trusting `ca` for registries' HTTPS
    /// certificates (`--bundle-registry-ca`).
    pub fn trusting(mut self, ca: RegistryCa) -> Result<Self, Error> {
        self.extra_roots = ca;
        self.clients = Clients::default();
        self.client(None).map_err(|error| Error::BadRegistryCa {
            detail: error.to_string(),
        })?;
        Ok(self)
    }

    /// The client of `credentials` (`clients.rs`).
    fn client(&self, credentials: Option<&Credentials>) -> Result<Client, Error> {
        self.clients.of(credentials.cloned(), || self.new_client())
    }

    /// A client with no credentials stored yet.
    fn new_client(&self) -> Result<Client, Error> {
        let config = ClientConfig {
            protocol: if self.plain_http.is_empty() {
                ClientProtocol::Https
            } else {
                ClientProtocol::HttpsExcept(self.plain_http.clone())
            },
            // Read once per process (`system_roots.rs`); empty: reqwest's
            // own verifier reads the system store itself.
            tls_certs_only: system_roots().to_vec(),
            extra_root_certificates: self.extra_roots.certificates(),
            connect_timeout: Some(std::time::Duration::from_secs(10)),
            read_timeout: Some(std::time::Duration::from_secs(30)),
            ..ClientConfig::default()
        };
        Client::try_from(config).map_err(|error| Error::Registry {
            reference: String::new(),
            detail: error.to_string(),
        })
    }

    pub fn limits(&self) -> &ArtifactLimits {
        &self.limits
    }

    /// The name by digest that [`Registry::push`] of `modules` to
    /// `repository` would return, without a registry: the artifact is
    /// deterministic, so this is what a push names (`isolane deploy
    /// --dry-run`).
    pub fn reference(
        &self,
        repository: &str,
        modules: &Modules,
        assets: Option<&AssetFiles>,
    ) -> Result<BundleRef, Error> {
        let prepared = self.prepare(repository, modules, assets)?;
        BundleRef::from_parts(&prepared.target, &sha256(&prepared.body))
    }

    /// The target, the blobs and the manifest (with its bytes) of pushing
    /// `modules` to `repository`.
    fn prepare(
        &self,
        repository: &str,
        modules: &Modules,
        assets: Option<&AssetFiles>,
    ) -> Result<Prepared, Error> {
        let bad = |why| Error::BadReference {
            reference: repository.to_owned(),
            why,
        };
        if repository.contains('@') {
            return Err(bad("push to a repository (and tag), not to a digest"));
        }
        let target: Reference = repository
            .parse()
            .map_err(|_| bad("not a registry/repository[:tag] reference"))?;
        let (layers, config, manifest) = artifact(modules, assets, repository, &self.limits)?;
        // invariant: a manifest of strings and numbers always serialises.
        let body = serde_json::to_vec(&manifest).expect("invariant: the manifest serialises");
        Ok(Prepared {
            target,
            layers,
            config,
            manifest,
            body,
        })
    }

    /// Pushes the artifact of `modules` (and `assets`) to `repository`
    /// (`registry/repo`, with an optional `:tag`); returns the name by
    /// digest.
    pub async fn push(
        &self,
        repository: &str,
        (modules, assets): (&Modules, Option<&AssetFiles>),
        credentials: Option<&Credentials>,
    ) -> Result<BundleRef, Error> {
        let Prepared {
            target,
            layers,
            config,
            manifest,
            body,
        } = self.prepare(repository, modules, assets)?;
        let digest = sha256(&body);
        let name = |e| map_error(repository, e);
        let auth = Credentials::auth(credentials);
        let client = self.client(credentials)?;
        client
            .store_auth_if_needed(target.resolve_registry(), &auth)
            .await;
        let blobs = layers.iter().map(|layer| &layer.data).zip(&manifest.layers);
        for (data, descriptor) in blobs.chain([(&config.data, &manifest.config)]) {
            client
                .push_blob(&target, data.clone(), &descriptor.digest)
                .await
                .map_err(name)?;
        }
        let by = match target.tag() {
            Some(_) => target.clone(),
            None => Reference::with_digest(
                target.registry().to_owned(),
                target.repository().to_owned(),
                digest.clone(),
            ),
        };
        let content_type = http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE);
        client
            .push_manifest_raw(&by, body, content_type)
            .await
            .map_err(name)?;
        BundleRef::from_parts(&target, &digest)
    }

    /// The modules of `bundle`: from `cache` when it holds every blob,
    /// else pulled (and kept there once the whole bundle is known good).
    /// Every blob is verified against its digest and the size its
    /// descriptor declares, and read no further than that size.
    pub async fn pull(
        &self,
        bundle: &BundleRef,
        credentials: Option<&Credentials>,
        cache: Option<&Cache>,
    ) -> Result<Pulled, Error> {
        let reference = bundle.to_string();
        // Before any connection: the registry is the tenant's choice.
        if !self.allowed.permits(bundle.registry()) {
            return Err(self.allowed.refuse(&reference, bundle.registry()));
        }
        let client = self.client(credentials)?;
        let manifest_bytes = self.manifest(&client, bundle, credentials, cache).await?;
        let manifest = parse_manifest(&reference, &manifest_bytes, &self.limits)?;
        let config = self
            .blob(
                &client,
                credentials,
                bundle,
                "the config",
                &manifest.config,
                ArtifactLimits::METADATA_BYTES,
                cache,
            )
            .await?;
        let layer = self
            .blob(
                &client,
                credentials,
                bundle,
                "the compressed layer",
                &manifest.layers[0],
                self.limits.compressed_bytes,
                cache,
            )
            .await?;
        let modules = layout::unpack(&reference, &config.bytes, &layer.bytes, &self.limits)?;
        let (assets, assets_blob) = self
            .pull_assets(
                &client,
                credentials,
                bundle,
                &manifest,
                &config.bytes,
                cache,
            )
            .await?;
        if let Some(cache) = cache {
            // Kept only once the whole bundle is known good.
            let mut blobs = vec![(&manifest.config, &config), (&manifest.layers[0], &layer)];
            blobs.extend(manifest.layers.get(1).zip(assets_blob.as_ref()));
            keep(cache, &blobs, (bundle.digest(), &manifest_bytes))?;
        }
        Ok(Pulled {
            modules,
            assets,
            compressed_bytes: layer.bytes.len() as u64,
        })
    }

    /// The assets of a pulled artifact: its second layer, with the
    /// settings its config gives them (both or neither).
    async fn pull_assets(
        &self,
        client: &Client,
        credentials: Option<&Credentials>,
        bundle: &BundleRef,
        manifest: &OciImageManifest,
        config: &[u8],
        cache: Option<&Cache>,
    ) -> Result<(Option<AssetFiles>, Option<Blob>), Error> {
        let reference = bundle.to_string();
        let settings = layout::assets_settings(&reference, config)?;
        let (settings, descriptor) = match (settings, manifest.layers.get(1)) {
            (None, None) => return Ok((None, None)),
            (Some(settings), Some(descriptor)) => (settings, descriptor),
            _ => {
                let why = "its config and its layers disagree on whether it has assets";
                return Err(Error::malformed(&reference, why));
            }
        };
        let what = "the compressed assets layer";
        let limit = self.limits.assets_compressed_bytes;
        let blob = self
            .blob(client, credentials, bundle, what, descriptor, limit, cache)
            .await?;
        let (settings, has_worker) = settings;
        let mut files = assets_layer::unpack(&reference, settings, &blob.bytes, &self.limits)?;
        files.has_worker = has_worker;
        Ok((Some(files), Some(blob)))
    }

    /// The manifest's bytes, verified, from the cache or the registry.
    async fn manifest(
        &self,
        client: &Client,
        bundle: &BundleRef,
        credentials: Option<&Credentials>,
        cache: Option<&Cache>,
    ) -> Result<Vec<u8>, Error> {
        if let Some(bytes) = cache.and_then(|c| c.get(bundle.digest())) {
            return Ok(bytes);
        }
        let reference = bundle.to_string();
        let auth = Credentials::auth(credentials);
        let (bytes, _) = client
            .pull_manifest_raw(bundle.oci(), &auth, &[OCI_IMAGE_MEDIA_TYPE])
            .await
            .map_err(|e| map_error(&reference, e))?;
        let bytes = bytes.to_vec();
        check_size(
            &reference,
            "the manifest",
            bytes.len() as u64,
            ArtifactLimits::METADATA_BYTES,
        )?;
        verify(&reference, "the manifest", bundle.digest(), &bytes)?;
        Ok(bytes)
    }

    /// One blob, verified against its descriptor ([`Declared`]), from the
    /// cache or the registry.
    #[allow(clippy::too_many_arguments)]
    async fn blob(
        &self,
        client: &Client,
        credentials: Option<&Credentials>,
        bundle: &BundleRef,
        what: &'static str,
        descriptor: &OciDescriptor,
        limit: u64,
        cache: Option<&Cache>,
    ) -> Result<Blob, Error> {
        let reference = bundle.to_string();
        let declared = Declared::new(&reference, what, descriptor);
        // Before a byte is read, from the registry or the cache.
        check_size(&reference, what, declared.size(), limit)?;
        if let Some(bytes) = cache.and_then(|c| c.get(&descriptor.digest)) {
            // The cache checked the digest; the size is the manifest's claim.
            declared.check_size(bytes.len() as u64, true)?;
            return Ok(Blob {
                bytes,
                cached: true,
            });
        }
        // A pull whose manifest came from the cache signs in here.
        client
            .store_auth_if_needed(bundle.registry(), &Credentials::auth(credentials))
            .await;
        let stream = client
            .pull_blob_stream(bundle.oci(), descriptor)
            .await
            .map_err(|e| map_error(&reference, e))?;
        if let Some(length) = stream.content_length {
            declared.check_size(length, false)?;
        }
        let bytes = read_blob(stream.stream, &declared).await?;
        Ok(Blob {
            bytes,
            cached: false,
        })
    }
}

/// A blob's verified bytes, and whether they came from the cache.
struct Blob {
    bytes: Vec<u8>,
    cached: bool,
}

/// The bytes of the blob `declared`, read from `stream` no further than
/// its declared size (the chunk that passes it is refused, not kept), then
/// checked complete: exactly that size, and its digest.
async fn read_blob<B: AsRef<[u8]>, E: std::fmt::Display>(
    mut stream: impl futures::Stream<Item = Result<B, E>> + Unpin,
    declared: &Declared<'_>,
) -> Result<Vec<u8>, Error> {
    let mut bytes = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| Error::Registry {
            reference: declared.reference().to_owned(),
            detail: error.to_string(),
        })?;
        let chunk = chunk.as_ref();
        declared.check_size((bytes.len() + chunk.len()) as u64, false)?;
        bytes.extend_from_slice(chunk);
    }
    declared.verify(&bytes)?;
    Ok(bytes)
}

/// The layer, config and manifest of `modules`' artifact, within `limits`.
/// A push, ready: where to, the two blobs, the manifest and its bytes.
struct Prepared {
    target: Reference,
    layers: Vec<ImageLayer>,
    config: Config,
    manifest: OciImageManifest,
    body: Vec<u8>,
}

fn artifact(
    modules: &Modules,
    assets: Option<&AssetFiles>,
    repository: &str,
    limits: &ArtifactLimits,
) -> Result<(Vec<ImageLayer>, Config, OciImageManifest), Error> {
    let packed = layout::pack_with_assets(modules, assets);
    check_size(
        repository,
        "the compressed layer",
        packed.layer.len() as u64,
        limits.compressed_bytes,
    )?;
    let mut layers = vec![ImageLayer::new(
        packed.layer,
        LAYER_MEDIA_TYPE.to_owned(),
        None,
    )];
    if let Some(assets) = packed.assets {
        check_size(
            repository,
            "the compressed assets layer",
            assets.len() as u64,
            limits.assets_compressed_bytes,
        )?;
        layers.push(ImageLayer::new(
            assets,
            ASSETS_LAYER_MEDIA_TYPE.to_owned(),
            None,
        ));
    }
    let config = Config::new(packed.config, CONFIG_MEDIA_TYPE.to_owned(), None);
    let mut manifest = OciImageManifest::build(&layers, &config, None);
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_owned());
    manifest.artifact_type = Some(CONFIG_MEDIA_TYPE.to_owned());
    Ok((layers, config, manifest))
}

/// The manifest, if it is one of a bundle within the limits.
fn parse_manifest(
    reference: &str,
    bytes: &[u8],
    limits: &ArtifactLimits,
) -> Result<OciImageManifest, Error> {
    let manifest: OciImageManifest = serde_json::from_slice(bytes)
        .map_err(|error| Error::malformed(reference, format!("its manifest: {error}")))?;
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(Error::malformed(
            reference,
            format!(
                "its config is {:?}, not {CONFIG_MEDIA_TYPE} (push it with `isolane push`)",
                manifest.config.media_type
            ),
        ));
    }
    let (layer, assets) = match manifest.layers.as_slice() {
        [layer] => (layer, None),
        [layer, assets] => (layer, Some(assets)),
        layers => {
            return Err(Error::malformed(
                reference,
                format!("it has {} layers, not one or two", layers.len()),
            ));
        }
    };
    if let Some(assets) = assets {
        check_assets_layer(reference, assets, limits)?;
    }
    if layer.media_type != LAYER_MEDIA_TYPE {
        return Err(Error::malformed(
            reference,
            format!(
                "its layer is {:?}, not {LAYER_MEDIA_TYPE}",
                layer.media_type
            ),
        ));
    }
    check_size(
        reference,
        "the compressed layer",
        u64::try_from(layer.size).unwrap_or(u64::MAX),
        limits.compressed_bytes,
    )?;
    Ok(manifest)
}

/// Puts in `cache` the blobs it did not give, then the manifest.
fn keep(
    cache: &Cache,
    blobs: &[(&OciDescriptor, &Blob)],
    (digest, manifest): (&str, &[u8]),
) -> Result<(), Error> {
    for (descriptor, blob) in blobs {
        if !blob.cached {
            cache.put(&descriptor.digest, &blob.bytes)?;
        }
    }
    cache.put(digest, manifest)
}

/// The assets layer's descriptor: its media type, and its size within
/// the limit.
fn check_assets_layer(
    reference: &str,
    assets: &OciDescriptor,
    limits: &ArtifactLimits,
) -> Result<(), Error> {
    if assets.media_type != ASSETS_LAYER_MEDIA_TYPE {
        return Err(Error::malformed(
            reference,
            format!(
                "its second layer is {:?}, not {ASSETS_LAYER_MEDIA_TYPE}",
                assets.media_type
            ),
        ));
    }
    check_size(
        reference,
        "the compressed assets layer",
        u64::try_from(assets.size).unwrap_or(u64::MAX),
        limits.assets_compressed_bytes,
    )
}

fn check_size(reference: &str, what: &'static str, actual: u64, limit: u64) -> Result<(), Error> {
    if actual > limit {
        return Err(Error::TooLarge {
            reference: reference.to_owned(),
            what,
            actual,
            limit,
        });
    }
    Ok(())
}

fn map_error(reference: &str, error: OciDistributionError) -> Error {
    let reference = reference.to_owned();
    match error {
        OciDistributionError::UnauthorizedError { .. }
        | OciDistributionError::AuthenticationFailure(_) => Error::Unauthorized {
            reference,
            detail: error.to_string(),
        },
        OciDistributionError::ImageManifestNotFoundError(_) => Error::NotFound { reference },
        OciDistributionError::RegistryError { ref envelope, .. } => {
            let codes: Vec<&OciErrorCode> = envelope.errors.iter().map(|e| &e.code).collect();
            if codes
                .iter()
                .any(|c| matches!(c, OciErrorCode::Unauthorized | OciErrorCode::Denied))
            {
                Error::Unauthorized {
                    reference,
                    detail: error.to_string(),
                }
            } else if codes.iter().any(|c| {
                matches!(
                    c,
                    OciErrorCode::ManifestUnknown
                        | OciErrorCode::BlobUnknown
                        | OciErrorCode::NameUnknown
                )
            }) {
                Error::NotFound { reference }
            } else {
                Error::Registry {
                    reference,
                    detail: error.to_string(),
                }
            }
        }
        OciDistributionError::ServerError {
            code: 401 | 403, ..
        } => Error::Unauthorized {
            reference,
            detail: error.to_string(),
        },
        OciDistributionError::ServerError { code: 404, .. } => Error::NotFound { reference },
        other => Error::Registry {
            reference,
            detail: other.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use futures::stream;

    use super::*;

    /// `chunks` as a stream that counts the chunks taken from it.
    fn counted<'a>(
        chunks: &'a [&'a [u8]],
        taken: &'a Cell<usize>,
    ) -> impl futures::Stream<Item = Result<&'a [u8], std::io::Error>> + Unpin + 'a {
        stream::iter(chunks.iter().map(move |chunk| {
            taken.set(taken.get() + 1);
            Ok(*chunk)
        }))
    }

    fn declared(descriptor: &OciDescriptor) -> Declared<'_> {
        Declared::new("r", "the compressed layer", descriptor)
    }

    #[test]
    fn a_blob_is_read_no_further_than_its_declared_size_and_must_reach_it() {
        let blob = b"0123456789";
        let descriptor = |size| OciDescriptor {
            digest: sha256(blob),
            size,
            ..OciDescriptor::default()
        };
        let chunks: &[&[u8]] = &[b"0123", b"4567", b"89"];
        let read = |size| {
            let taken = Cell::new(0);
            let descriptor = descriptor(size);
            let result = futures::executor::block_on(read_blob(
                counted(chunks, &taken),
                &declared(&descriptor),
            ));
            (result, taken.get())
        };

        let (bytes, taken) = read(10);
        assert_eq!((bytes.unwrap(), taken), (blob.to_vec(), 3));

        // Declared smaller: the chunk that passes the size is refused, and
        // nothing after it is read.
        let (error, taken) = read(5);
        let error = error.unwrap_err();
        assert!(
            matches!(
                error,
                Error::SizeMismatch {
                    declared: 5,
                    actual: 8,
                    ..
                }
            ),
            "{error}"
        );
        assert_eq!(taken, 2);
        let (error, taken) = read(9);
        assert!(
            matches!(
                error,
                Err(Error::SizeMismatch {
                    declared: 9,
                    actual: 10,
                    ..
                })
            ),
            "{error:?}"
        );
        assert_eq!(taken, 3);

        // Declared larger: the blob ends short.
        let (error, _) = read(11);
        let error = error.unwrap_err();
        assert!(
            matches!(
                error,
                Error::SizeMismatch {
                    what: "the compressed layer",
                    declared: 11,
                    actual: 10,
                    ..
                }
            ),
            "{error}"
        );

        // Of the declared size but other bytes: a digest mismatch.
        let descriptor = descriptor(10);
        let other: &[&[u8]] = &[b"9876543210"];
        let error = futures::executor::block_on(read_blob(
            counted(other, &Cell::new(0)),
            &declared(&descriptor),
        ))
        .unwrap_err();
        assert!(matches!(error, Error::DigestMismatch { .. }), "{error}");
    }
}
