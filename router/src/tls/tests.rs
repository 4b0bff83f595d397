//! The resolver against certificates of the tests' CA: only an owning
//! namespace's certificate is served, exact names before wildcards, and a
//! Secret that cannot be served is skipped without taking the others.

use std::collections::HashMap;

use isolane_testenv::{Leaf, TestCa};

use std::sync::Arc;

use super::watch::{SecretPem, TLS_SECRET_TYPE, build};
use super::{HostOwners, SniResolver};

/// Host patterns and the namespace admitted to each.
#[derive(Debug)]
struct Owners(HashMap<String, String>);

impl HostOwners for Owners {
    fn namespace_of(&self, name: &str) -> Option<String> {
        if let Some(namespace) = self.0.get(name) {
            return Some(namespace.clone());
        }
        let (_, parent) = name.split_once('.')?;
        self.0.get(&format!("*.{parent}")).cloned()
    }
}

fn owners(pairs: &[(&str, &str)]) -> Owners {
    Owners(
        pairs
            .iter()
            .map(|(host, ns)| ((*host).to_owned(), (*ns).to_owned()))
            .collect(),
    )
}

/// A Secret of `namespace` holding a certificate for `names`.
fn secret(ca: &TestCa, namespace: &str, names: &[&str]) -> SecretPem {
    let cert = ca.issue(Leaf::server("test", names)).unwrap();
    SecretPem {
        namespace: namespace.to_owned(),
        kind: Some(TLS_SECRET_TYPE.to_owned()),
        cert: Some(cert.cert_pem.into_bytes()),
        key: Some(cert.key_pem.into_bytes()),
    }
}

fn resolver(owners: Owners, secrets: Vec<(&str, SecretPem)>) -> (SniResolver, usize) {
    let secrets: HashMap<String, SecretPem> = secrets
        .into_iter()
        .map(|(key, pem)| (key.to_owned(), pem))
        .collect();
    let (store, rejected) = build(&secrets);
    let resolver = SniResolver::new(owners);
    resolver.replace(store);
    (resolver, rejected)
}

/// The DER of the leaf served for `host`, if any.
fn served(resolver: &SniResolver, host: &str) -> Option<Vec<u8>> {
    let key = resolver.certificate_for(host)?;
    Some(key.cert.first()?.as_ref().to_vec())
}

fn leaf_der(pem: &SecretPem) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let cert = pem.cert.as_deref().unwrap();
    CertificateDer::from_pem_slice(cert)
        .unwrap()
        .as_ref()
        .to_vec()
}

#[test]
fn only_the_owning_namespace_certificate_is_served() {
    let ca = TestCa::new("resolver-test").unwrap();
    let own = secret(&ca, "a", &["app.example"]);
    let squat = secret(&ca, "b", &["app.example", "free.example"]);
    let (resolver, rejected) = resolver(
        owners(&[("app.example", "a")]),
        // b's sorts first: were ownership not checked, it would win.
        vec![("a/z-own", own.clone()), ("b/a-squat", squat)],
    );
    assert_eq!(rejected, 0);
    assert_eq!(served(&resolver, "app.example"), Some(leaf_der(&own)));
    assert_eq!(served(&resolver, "APP.example:443"), Some(leaf_der(&own)));
    // A host nobody was admitted to: b's certificate names it, unserved.
    assert_eq!(served(&resolver, "free.example"), None);
    assert_eq!(served(&resolver, "other.example"), None);
}

#[test]
fn a_namespace_without_its_own_certificate_gets_none() {
    let ca = TestCa::new("resolver-test").unwrap();
    let squat = secret(&ca, "b", &["app.example"]);
    let (resolver, _) = resolver(owners(&[("app.example", "a")]), vec![("b/s", squat)]);
    assert_eq!(served(&resolver, "app.example"), None);
}

#[test]
fn exact_names_before_wildcards_one_label_deep() {
    let ca = TestCa::new("resolver-test").unwrap();
    let wildcard = secret(&ca, "a", &["*.apps.example"]);
    let exact = secret(&ca, "a", &["api.apps.example"]);
    let (resolver, _) = resolver(
        owners(&[("*.apps.example", "a"), ("api.apps.example", "a")]),
        vec![("a/wild", wildcard.clone()), ("a/exact", exact.clone())],
    );
    assert_eq!(
        served(&resolver, "api.apps.example"),
        Some(leaf_der(&exact))
    );
    assert_eq!(
        served(&resolver, "web.apps.example"),
        Some(leaf_der(&wildcard))
    );
    assert_eq!(served(&resolver, "x.web.apps.example"), None);
    assert_eq!(served(&resolver, "apps.example"), None);
}

#[test]
fn a_wildcard_certificate_serves_an_owned_exact_host() {
    let ca = TestCa::new("resolver-test").unwrap();
    let wildcard = secret(&ca, "a", &["*.example"]);
    let (resolver, _) = resolver(
        owners(&[("one.example", "a"), ("two.example", "b")]),
        vec![("a/wild", wildcard.clone())],
    );
    assert_eq!(served(&resolver, "one.example"), Some(leaf_der(&wildcard)));
    // Another namespace's host under the same wildcard is not a's.
    assert_eq!(served(&resolver, "two.example"), None);
}

#[test]
fn malformed_secrets_are_skipped_and_counted() {
    let ca = TestCa::new("resolver-test").unwrap();
    let good = secret(&ca, "a", &["good.example"]);
    let other = secret(&ca, "a", &["other.example"]);
    let mut bad_pem = secret(&ca, "a", &["bad.example"]);
    bad_pem.cert =
        Some(b"-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n".to_vec());
    let mut mismatched = secret(&ca, "a", &["mismatch.example"]);
    mismatched.key = other.key.clone();
    let mut no_key = secret(&ca, "a", &["nokey.example"]);
    no_key.key = None;
    let mut opaque = secret(&ca, "a", &["opaque.example"]);
    opaque.kind = Some("Opaque".to_owned());
    let empty = SecretPem {
        cert: Some(Vec::new()),
        ..secret(&ca, "a", &["empty.example"])
    };
    let hosts = ["good", "bad", "mismatch", "nokey", "opaque", "empty"]
        .map(|h| (format!("{h}.example"), "a".to_owned()));
    let (resolver, rejected) = resolver(
        Owners(hosts.into_iter().collect()),
        vec![
            ("a/bad-pem", bad_pem),
            ("a/good", good.clone()),
            ("a/mismatched", mismatched),
            ("a/no-key", no_key),
            ("a/opaque", opaque),
            ("a/empty", empty),
        ],
    );
    assert_eq!(rejected, 5);
    assert_eq!(served(&resolver, "good.example"), Some(leaf_der(&good)));
    for host in ["bad", "mismatch", "nokey", "opaque", "empty"] {
        assert_eq!(
            served(&resolver, &format!("{host}.example")),
            None,
            "{host}"
        );
    }
}

#[test]
fn each_load_error_has_its_kind() {
    let provider = rustls::crypto::ring::default_provider();
    let ca = TestCa::new("resolver-test").unwrap();
    let one = ca.issue(Leaf::server("t", &["one.example"])).unwrap();
    let two = ca.issue(Leaf::server("t", &["two.example"])).unwrap();
    let ip_only = ca.issue(Leaf::server("t", &["127.0.0.1"])).unwrap();
    let kind = |cert: &str, key: &str| {
        super::load(cert.as_bytes(), key.as_bytes(), &provider)
            .err()
            .map(|error| error.kind())
    };
    assert_eq!(kind(&one.cert_pem, &one.key_pem), None);
    assert_eq!(kind(&one.cert_pem, &two.key_pem), Some("key"));
    assert_eq!(kind("", &one.key_pem), Some("no_certificate"));
    assert_eq!(kind(&one.cert_pem, ""), Some("pem"));
    assert_eq!(kind(&ip_only.cert_pem, &ip_only.key_pem), Some("no_names"));
}

#[test]
fn replacing_the_certificates_changes_the_next_resolution_only() {
    let ca = TestCa::new("resolver-test").unwrap();
    let first = secret(&ca, "a", &["app.example"]);
    let second = secret(&ca, "a", &["app.example"]);
    let (resolver, _) = resolver(
        owners(&[("app.example", "a")]),
        vec![("a/s", first.clone())],
    );
    let held = resolver.certificate_for("app.example").unwrap();
    let (store, _) = build(&[("a/s".to_owned(), second.clone())].into());
    resolver.replace(store);
    assert_eq!(held.cert[0].as_ref(), leaf_der(&first).as_slice());
    assert_eq!(served(&resolver, "app.example"), Some(leaf_der(&second)));
}

#[test]
fn only_tls_1_2_and_1_3_with_aead_suites_and_both_alpn_protocols() {
    let resolver = Arc::new(SniResolver::new(owners(&[])));
    let config = super::server_config(resolver).unwrap();
    assert_eq!(
        config.alpn_protocols,
        [b"h2".to_vec(), b"http/1.1".to_vec()]
    );
    let suites = &config.crypto_provider().cipher_suites;
    assert!(!suites.is_empty());
    for suite in suites {
        let name = format!("{:?}", suite.suite());
        assert!(
            name.contains("GCM") || name.contains("CHACHA20_POLY1305"),
            "{name}"
        );
        if name.starts_with("TLS_ECDHE") || suite.version() == &rustls::version::TLS12 {
            assert!(name.starts_with("TLS_ECDHE_"), "{name}");
        }
    }
}

/// The suite a client offering `suites` (in its order) over `versions`
/// gets from the router's configuration: a whole handshake between rustls
/// on both sides, through memory.
fn negotiated(
    suites: Vec<rustls::SupportedCipherSuite>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> rustls::CipherSuite {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let ca = TestCa::new("suites").unwrap();
    let pem = secret(&ca, "a", &["app.example"]);
    let (resolver, _) = resolver(owners(&[("app.example", "a")]), vec![("a/s", pem)]);
    let server_config = super::server_config(Arc::new(resolver)).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.cert_pem().as_bytes()).unwrap())
        .unwrap();
    let provider = rustls::crypto::CryptoProvider {
        cipher_suites: suites,
        ..rustls::crypto::ring::default_provider()
    };
    let client_config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(versions)
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = "app.example".try_into().unwrap();
    let mut client = rustls::ClientConnection::new(Arc::new(client_config), name).unwrap();
    let mut server = rustls::ServerConnection::new(Arc::new(server_config)).unwrap();
    while client.is_handshaking() || server.is_handshaking() {
        let mut bytes = Vec::new();
        client.write_tls(&mut bytes).unwrap();
        server.read_tls(&mut bytes.as_slice()).unwrap();
        server.process_new_packets().unwrap();
        bytes.clear();
        server.write_tls(&mut bytes).unwrap();
        client.read_tls(&mut bytes.as_slice()).unwrap();
        client.process_new_packets().unwrap();
    }
    server.negotiated_cipher_suite().unwrap().suite()
}

#[test]
fn aes_128_gcm_is_chosen_first_and_a_client_without_it_gets_what_it_offers() {
    use rustls::CipherSuite as S;
    use rustls::crypto::ring::{DEFAULT_CIPHER_SUITES, cipher_suite as c};
    let both = [&rustls::version::TLS13, &rustls::version::TLS12];
    // ring's own order, which OpenSSL's clients (wrk, curl) share:
    // AES-256-GCM first.
    let default = DEFAULT_CIPHER_SUITES.to_vec();
    assert_eq!(
        negotiated(default.clone(), &both),
        S::TLS13_AES_128_GCM_SHA256
    );
    assert_eq!(
        negotiated(default, &[&rustls::version::TLS12]),
        S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
    );
    let chacha = vec![c::TLS13_CHACHA20_POLY1305_SHA256];
    assert_eq!(negotiated(chacha, &both), S::TLS13_CHACHA20_POLY1305_SHA256);
    let aes_256 = vec![c::TLS13_AES_256_GCM_SHA384];
    assert_eq!(negotiated(aes_256, &both), S::TLS13_AES_256_GCM_SHA384);
}

fn challenge(namespace: &str, host: &str, token: &str, key: &str) -> super::Challenge {
    super::Challenge {
        namespace: namespace.to_owned(),
        host: host.to_owned(),
        token: token.to_owned(),
        key: key.to_owned(),
    }
}

fn get(uri: &str) -> http::Request<()> {
    http::Request::get(uri).body(()).unwrap()
}

#[tokio::test]
async fn http01_keys_are_given_only_for_hosts_the_challenge_namespace_owns() {
    use http_body_util::BodyExt;
    let http01 = super::Http01::new(owners(&[("app.example", "a"), ("*.w.example", "b")]));
    http01.replace(super::ChallengeSet::new([
        challenge("a", "app.example", "tok1", "tok1.thumb-a"),
        // Another namespace's challenge for a's host: never answered.
        challenge("b", "app.example", "tok2", "tok2.thumb-b"),
        // Owned through b's wildcard.
        challenge("b", "x.w.example", "tok3", "tok3.thumb-b"),
    ]));
    let path = "/.well-known/acme-challenge";
    let response = http01
        .answer(&get(&format!("http://APP.example:80{path}/tok1")))
        .expect("a's challenge is answered");
    assert_eq!(response.status(), http::StatusCode::OK);
    assert_eq!(
        response.headers()[http::header::CONTENT_TYPE],
        "text/plain; charset=utf-8"
    );
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"tok1.thumb-a");
    // By the Host header too (origin-form, as HTTP/1.1 clients send).
    let by_header = http::Request::get(format!("{path}/tok1"))
        .header(http::header::HOST, "app.example")
        .body(())
        .unwrap();
    assert!(http01.answer(&by_header).is_some());
    assert_eq!(
        http01.key_for("x.w.example", "tok3").as_deref(),
        Some("tok3.thumb-b")
    );
    for unanswered in [
        format!("http://app.example{path}/tok2"),
        format!("http://app.example{path}/unknown"),
        format!("http://other.example{path}/tok1"),
        format!("http://app.example{path}/"),
        format!("http://app.example{path}/tok1/more"),
        "http://app.example/tok1".to_owned(),
    ] {
        assert!(http01.answer(&get(&unanswered)).is_none(), "{unanswered}");
    }
    let post = http::Request::post(format!("http://app.example{path}/tok1"))
        .body(())
        .unwrap();
    assert!(http01.answer(&post).is_none());
    // Once the challenge is gone, so is its answer.
    http01.replace(super::ChallengeSet::default());
    assert!(http01.key_for("app.example", "tok1").is_none());
}

#[test]
fn challenges_are_read_from_cert_managers_objects() {
    use kube::core::DynamicObject;
    let object = |kind: &str| -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "acme.cert-manager.io/v1",
            "kind": "Challenge",
            "metadata": {"name": "c1", "namespace": "a"},
            "spec": {"type": kind, "dnsName": "App.Example", "token": "t", "key": "t.k"},
        }))
        .unwrap()
    };
    let (key, read) = super::challenge_watch::read(&object("HTTP-01"));
    assert_eq!(key, "a/c1");
    assert_eq!(read, Some(challenge("a", "app.example", "t", "t.k")));
    assert_eq!(super::challenge_watch::read(&object("DNS-01")).1, None);
}
