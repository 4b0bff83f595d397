//! Bundles through a real registry (CNCF Distribution, started by
//! isolane-testenv with htpasswd auth): push and pull by digest, pull
//! secrets, the disk cache, and the limits attacked.

#![allow(clippy::unwrap_used)]

use isolane_artifact::{
    AllowedRegistries, ArtifactLimits, BundleRef, Cache, Credentials, Error, Registry, RegistryCa,
};
use isolane_testenv::Registry as TestRegistry;
use isolane_worker::{Module, ModuleKind, Modules};

const MAIN: &str = "import data from './blob.bin'; export default { fetch() { return new Response(String(data.byteLength)); } };";

fn bundle(blob: Vec<u8>) -> Modules {
    Modules::new(
        "main.js",
        vec![
            Module::new("main.js", ModuleKind::ESModule, MAIN),
            Module::new("blob.bin", ModuleKind::Data, blob),
        ],
    )
    .unwrap()
}

fn random(len: usize) -> Vec<u8> {
    let mut rng = fastrand::Rng::with_seed(7);
    (0..len).map(|_| rng.u8(..)).collect()
}

fn start() -> (TestRegistry, Credentials) {
    let registry = TestRegistry::start("pusher", "s3cret").unwrap();
    let credentials =
        Credentials::from_docker_config(registry.docker_config_json().as_bytes(), &registry.host())
            .unwrap();
    (registry, credentials)
}

fn client(limits: ArtifactLimits, registry: &TestRegistry) -> Registry {
    Registry::new(
        vec![registry.host()],
        AllowedRegistries::listed(&[registry.host()]).unwrap(),
        limits,
    )
    .unwrap()
}

#[tokio::test]
async fn an_8_mib_bundle_round_trips_by_digest_and_is_then_served_from_the_cache() {
    let (registry, credentials) = start();
    let client = client(ArtifactLimits::default(), &registry);
    let modules = bundle(random(8 << 20));
    let pushed = client
        .push(
            &format!("{}/ns/app:v1", registry.host()),
            (&modules, None),
            Some(&credentials),
        )
        .await
        .unwrap();
    assert!(pushed.digest().starts_with("sha256:"));
    // The same modules make the same artifact, so the same name.
    let again = client
        .push(
            &format!("{}/ns/app", registry.host()),
            (&modules, None),
            Some(&credentials),
        )
        .await
        .unwrap();
    assert_eq!(again, pushed);

    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path(), 64 << 20).unwrap();
    let pulled = client
        .pull(&pushed, Some(&credentials), Some(&cache))
        .await
        .unwrap();
    assert_eq!(pulled.modules, modules);
    assert!(
        pulled.compressed_bytes > 8 << 20,
        "random bytes do not compress"
    );
    assert!(cache.held_bytes() > 8 << 20);

    // The registry gone, the node still has the bundle.
    drop(registry);
    let cached = client.pull(&pushed, None, Some(&cache)).await.unwrap();
    assert_eq!(cached.modules, modules);
}

#[tokio::test]
async fn pulls_without_or_with_wrong_credentials_are_refused_as_unauthorized() {
    let (registry, credentials) = start();
    let client = client(ArtifactLimits::default(), &registry);
    let pushed = client
        .push(
            &format!("{}/ns/private", registry.host()),
            (&bundle(vec![1, 2, 3]), None),
            Some(&credentials),
        )
        .await
        .unwrap();
    let wrong = Credentials {
        username: "pusher".into(),
        password: "guess".into(),
    };
    for credentials in [None, Some(&wrong)] {
        let error = client.pull(&pushed, credentials, None).await.unwrap_err();
        assert!(matches!(error, Error::Unauthorized { .. }), "{error}");
    }
    let error = client
        .push(
            &format!("{}/ns/other", registry.host()),
            (&bundle(vec![1]), None),
            Some(&wrong),
        )
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Unauthorized { .. }), "{error}");
    // The right ones still work after the refusals.
    client
        .pull(&pushed, Some(&credentials), None)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_digest_the_registry_does_not_hold_is_not_found() {
    let (registry, credentials) = start();
    let client = client(ArtifactLimits::default(), &registry);
    let pushed = client
        .push(
            &format!("{}/ns/app", registry.host()),
            (&bundle(vec![1]), None),
            Some(&credentials),
        )
        .await
        .unwrap();
    let other: BundleRef = format!("{}/ns/app@sha256:{}", registry.host(), "0".repeat(64))
        .parse()
        .unwrap();
    assert_ne!(other.digest(), pushed.digest());
    let error = client
        .pull(&other, Some(&credentials), None)
        .await
        .unwrap_err();
    assert!(matches!(error, Error::NotFound { .. }), "{error}");
}

#[tokio::test]
async fn a_cached_blob_whose_bytes_do_not_match_its_digest_is_pulled_again() {
    let (registry, credentials) = start();
    let client = client(ArtifactLimits::default(), &registry);
    let modules = bundle(random(4096));
    let pushed = client
        .push(
            &format!("{}/ns/app", registry.host()),
            (&modules, None),
            Some(&credentials),
        )
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path(), 64 << 20).unwrap();
    client
        .pull(&pushed, Some(&credentials), Some(&cache))
        .await
        .unwrap();
    // Every blob on disk is overwritten with other bytes.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        std::fs::write(entry.unwrap().path(), b"tampered").unwrap();
    }
    let pulled = client
        .pull(&pushed, Some(&credentials), Some(&cache))
        .await
        .unwrap();
    assert_eq!(pulled.modules, modules);
    // Without the registry and with a tampered cache, nothing wrong is loaded.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        std::fs::write(entry.unwrap().path(), b"tampered").unwrap();
    }
    drop(registry);
    let error = client
        .pull(&pushed, Some(&credentials), Some(&cache))
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Registry { .. }), "{error}");
}

#[tokio::test]
async fn an_oversized_layer_is_refused_at_push_and_at_pull() {
    let (registry, credentials) = start();
    let strict = client(
        ArtifactLimits {
            compressed_bytes: 1 << 20,
            ..ArtifactLimits::default()
        },
        &registry,
    );
    let big = bundle(random(2 << 20));
    let error = strict
        .push(
            &format!("{}/ns/big", registry.host()),
            (&big, None),
            Some(&credentials),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::TooLarge {
                what: "the compressed layer",
                ..
            }
        ),
        "{error}"
    );
    // Pushed by a client that allows it, refused by one that does not,
    // from the manifest's size, before the layer is downloaded.
    let lenient = client(ArtifactLimits::default(), &registry);
    let pushed = lenient
        .push(
            &format!("{}/ns/big", registry.host()),
            (&big, None),
            Some(&credentials),
        )
        .await
        .unwrap();
    let error = strict
        .pull(&pushed, Some(&credentials), None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            Error::TooLarge {
                what: "the compressed layer",
                ..
            }
        ),
        "{error}"
    );
    // The default limits take more than 10 MiB compressed.
    let eleven = bundle(random(11 << 20));
    let pushed = lenient
        .push(
            &format!("{}/ns/eleven", registry.host()),
            (&eleven, None),
            Some(&credentials),
        )
        .await
        .unwrap();
    assert_eq!(
        lenient
            .pull(&pushed, Some(&credentials), None)
            .await
            .unwrap()
            .modules,
        eleven
    );
}

/// The manifest of `pushed` with its layer's declared `size` changed, pushed
/// raw beside it (the same blobs, so the same digests): the bundle naming it.
async fn with_layer_size(registry: &TestRegistry, pushed: &BundleRef, size: u64) -> BundleRef {
    use oci_client::client::{ClientConfig, ClientProtocol};
    use oci_client::manifest::OCI_IMAGE_MEDIA_TYPE;
    use oci_client::secrets::RegistryAuth;
    use sha2::Digest;

    let oci = oci_client::Client::new(ClientConfig {
        protocol: ClientProtocol::HttpsExcept(vec![registry.host()]),
        ..ClientConfig::default()
    });
    let auth = RegistryAuth::Basic(registry.username().into(), registry.password().into());
    oci.store_auth_if_needed(&registry.host(), &auth).await;
    let by_digest = |digest: &str| -> oci_client::Reference {
        format!("{}/{}@{digest}", registry.host(), pushed.repository())
            .parse()
            .unwrap()
    };
    let (bytes, _) = oci
        .pull_manifest_raw(&by_digest(pushed.digest()), &auth, &[OCI_IMAGE_MEDIA_TYPE])
        .await
        .unwrap();
    let mut manifest: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    manifest["layers"][0]["size"] = size.into();
    let body = serde_json::to_vec(&manifest).unwrap();
    let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&body)));
    oci.push_manifest_raw(
        &by_digest(&digest),
        body,
        http::HeaderValue::from_static(OCI_IMAGE_MEDIA_TYPE),
    )
    .await
    .unwrap();
    format!("{}/{}@{digest}", registry.host(), pushed.repository())
        .parse()
        .unwrap()
}

/// A manifest whose layer descriptor declares a size other than its blob's
/// (the right digests, only `size` changed) is refused as a size mismatch,
/// not a digest one: declared smaller, the blob is read no further than
/// that; declared larger, it ends short; and nothing is kept in the cache.
/// With the layer already cached (from the good manifest), its size is
/// checked too.
#[tokio::test]
async fn a_layer_whose_blob_is_not_its_declared_size_is_refused_and_not_cached() {
    let (registry, credentials) = start();
    let client = client(ArtifactLimits::default(), &registry);
    let modules = bundle(random(256 << 10));
    let pushed = client
        .push(
            &format!("{}/ns/sized", registry.host()),
            (&modules, None),
            Some(&credentials),
        )
        .await
        .unwrap();
    let real = client
        .pull(&pushed, Some(&credentials), None)
        .await
        .unwrap()
        .compressed_bytes;

    let warm_dir = tempfile::tempdir().unwrap();
    let warm = Cache::open(warm_dir.path(), 64 << 20).unwrap();
    client
        .pull(&pushed, Some(&credentials), Some(&warm))
        .await
        .unwrap();
    let warm_bytes = warm.held_bytes();

    for size in [1, real / 2, real - 1, real + 1, real * 2] {
        let lying = with_layer_size(&registry, &pushed, size).await;
        assert_ne!(lying.digest(), pushed.digest());
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path(), 64 << 20).unwrap();
        let error = client
            .pull(&lying, Some(&credentials), Some(&cache))
            .await
            .unwrap_err();
        let Error::SizeMismatch {
            what,
            declared,
            actual,
            ..
        } = error
        else {
            panic!("declared {size} of {real}: {error}");
        };
        assert_eq!((what, declared), ("the compressed layer", size), "{error}");
        if size < real {
            // Stopped past the declared size: at most the real size seen.
            assert!(actual > size && actual <= real, "{error}");
        } else {
            assert_eq!(actual, real, "{error}");
        }
        assert_eq!(error.kind(), "size_mismatch");
        assert_eq!(cache.held_bytes(), 0, "declared {size}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

        // The layer cached under its digest by the good pull: refused the same.
        let error = client
            .pull(&lying, Some(&credentials), Some(&warm))
            .await
            .unwrap_err();
        assert!(
            matches!(
                error,
                Error::SizeMismatch { what: "the compressed layer", declared, actual, .. }
                    if declared == size && actual == real
            ),
            "{error}"
        );
        assert_eq!(warm.held_bytes(), warm_bytes);
    }
    // The good manifest still pulls, from the cache and from the registry.
    for cache in [Some(&warm), None] {
        let pulled = client
            .pull(&pushed, Some(&credentials), cache)
            .await
            .unwrap();
        assert_eq!(pulled.modules, modules);
    }
}

#[tokio::test]
async fn a_decompression_bomb_is_refused_after_at_most_the_uncompressed_limit() {
    let (registry, credentials) = start();
    let lenient = client(
        ArtifactLimits {
            uncompressed_bytes: 1 << 30,
            ..ArtifactLimits::default()
        },
        &registry,
    );
    // 96 MiB of zeros: about 100 KiB compressed.
    let bomb = bundle(vec![0; 96 << 20]);
    let pushed = lenient
        .push(
            &format!("{}/ns/bomb", registry.host()),
            (&bomb, None),
            Some(&credentials),
        )
        .await
        .unwrap();
    drop(bomb);
    let default = client(ArtifactLimits::default(), &registry);
    let error = default
        .pull(&pushed, Some(&credentials), None)
        .await
        .unwrap_err();
    assert!(
        matches!(error, Error::TooLarge { what: "the uncompressed layer", limit, .. } if limit == 64 << 20),
        "{error}"
    );
    // A bundle of 60 MiB uncompressed is within the limit.
    let big = bundle(vec![0; 60 << 20]);
    let pushed = default
        .push(
            &format!("{}/ns/sixty", registry.host()),
            (&big, None),
            Some(&credentials),
        )
        .await
        .unwrap();
    assert_eq!(
        default
            .pull(&pushed, Some(&credentials), None)
            .await
            .unwrap()
            .modules,
        big
    );
}

/// A registry on HTTPS whose certificate a private CA signs: refused (push
/// and pull) by a client trusting the public web PKI alone, served to one
/// that also trusts the CA (`--bundle-registry-ca`); a CA file that holds no
/// certificate is refused when the client is made.
#[tokio::test]
async fn a_registry_signed_by_a_private_ca_is_refused_until_the_ca_is_trusted() {
    let ca = isolane_testenv::TestCa::new("isolane-test-registry-ca").unwrap();
    let registry = TestRegistry::start_tls("pusher", "s3cret", &ca).unwrap();
    let credentials =
        Credentials::from_docker_config(registry.docker_config_json().as_bytes(), &registry.host())
            .unwrap();
    let over_https = || {
        Registry::new(
            Vec::new(),
            AllowedRegistries::listed(&[registry.host()]).unwrap(),
            ArtifactLimits::default(),
        )
        .unwrap()
    };
    let untrusting = over_https();
    let ca_pem = RegistryCa::from_pem(ca.cert_pem().as_bytes()).unwrap();
    let trusting = over_https().trusting(ca_pem).unwrap();
    let modules = bundle(random(64 << 10));
    let repository = format!("{}/ns/private-ca", registry.host());

    let refused = untrusting
        .push(&repository, (&modules, None), Some(&credentials))
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Registry { .. }), "{refused}");
    let pushed = trusting
        .push(&repository, (&modules, None), Some(&credentials))
        .await
        .unwrap();
    let refused = untrusting
        .pull(&pushed, Some(&credentials), None)
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::Registry { .. }), "{refused}");
    let pulled = trusting
        .pull(&pushed, Some(&credentials), None)
        .await
        .unwrap();
    assert_eq!(pulled.modules, modules);

    for bad in [
        &b""[..],
        b"not a certificate",
        b"-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n",
    ] {
        let error = RegistryCa::from_pem(bad).unwrap_err();
        assert!(matches!(error, Error::BadRegistryCa { .. }), "{error}");
    }
}

#[tokio::test]
async fn assets_travel_in_a_second_layer_and_come_back_from_the_cache_too() {
    let (registry, credentials) = start();
    let client = client(ArtifactLimits::default(), &registry);
    let modules = bundle(vec![1, 2, 3]);
    let assets = isolane_assets::AssetFiles {
        settings: isolane_assets::Settings {
            not_found_handling: Some("404-page".into()),
            ..isolane_assets::Settings::default()
        },
        files: vec![
            (
                "/index.html".into(),
                bytes::Bytes::from_static(b"<p>hi</p>"),
            ),
            ("/img/logo.png".into(), bytes::Bytes::from(random(64 << 10))),
        ],
        has_worker: true,
    };
    let repository = format!("{}/ns/site", registry.host());
    let with_assets = client
        .push(&repository, (&modules, Some(&assets)), Some(&credentials))
        .await
        .unwrap();
    let without = client.reference(&repository, &modules, None).unwrap();
    assert_ne!(with_assets, without, "the assets are part of the digest");
    assert_eq!(
        client
            .reference(&repository, &modules, Some(&assets))
            .unwrap(),
        with_assets,
        "a dry run names what a push names"
    );

    let dir = tempfile::tempdir().unwrap();
    let cache = Cache::open(dir.path(), 64 << 20).unwrap();
    let pulled = client
        .pull(&with_assets, Some(&credentials), Some(&cache))
        .await
        .unwrap();
    assert_eq!(pulled.modules, modules);
    assert_eq!(pulled.assets.as_ref(), Some(&assets));
    drop(registry);
    let cached = client.pull(&with_assets, None, Some(&cache)).await.unwrap();
    assert_eq!(cached.assets, Some(assets), "every layer was cached");
}
