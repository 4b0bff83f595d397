//! HTTPS at the router (issue 61): the operator, a runtime node and the
//! router (with `--tls-listen-addr` and `--redirect-to-https`) as processes
//! against a real kube-apiserver, certificates from labelled
//! `kubernetes.io/tls` Secrets made with the tests' CA (rcgen):
//! 0. before `demo` has a Secret for its Worker's host, the handshake for
//!    it is refused; a `squatter` namespace's Secret for the same host (and
//!    for a host nobody claims) is never served, before or after;
//! 1. with `demo`'s Secret, HTTPS over HTTP/1.1 and HTTP/2 (the ALPN
//!    checked) reaches the Worker, which sees an `https` URL; so does a
//!    WebSocket over TLS (`wss://`), whose message the Worker echoes;
//! 2. the redirect: plain HTTP for the host is 308'd to HTTPS, an ACME
//!    challenge path, a host without a certificate and a request a trusted
//!    proxy (the test's client, `--trusted-proxies`) says came over HTTPS
//!    are not;
//! 3. the certificate is replaced in the Secret while keep-alive
//!    connections (HTTP/1.1 and HTTP/2) are open: they keep answering with
//!    the certificate they were made with, a new connection gets the new
//!    one (the leaf's DER compared);
//! 4. a malformed labelled Secret is skipped and counted, the router up;
//! 5. `demo`'s Secret deleted: its host's handshake is refused again,
//!    though the squatter's Secret still names it.

#[path = "tls/client.rs"]
mod client;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use client::{Connection, H1, H2};
use isolane_e2e::cluster::{Cluster, ClusterOptions, RouterOptions};
use isolane_e2e::ingress::Ingress;
use isolane_e2e::workers::{self, inline_worker};
use isolane_testenv::{ControlPlane, Leaf, TestCa, TestCert, free_port, wait_until};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta, PostParams};

const SETTLE: Duration = Duration::from_secs(90);
const DEMO: &str = "demo";
const SQUATTER: &str = "squatter";
/// The host `demo`'s Worker serves over HTTPS.
const HOST: &str = "secure.test";
/// A host of the same Worker with no certificate.
const PLAIN_HOST: &str = "plain.test";
/// A host no Worker claims.
const NOBODY: &str = "nobody.test";

/// Answers with the URL it was called with; a WebSocket's messages with
/// the URL's scheme and the message.
const URL_ECHO: &str = r#"export default { fetch(request) {
  if (request.headers.get("upgrade") !== "websocket") return new Response(request.url);
  const [client, server] = Object.values(new WebSocketPair());
  server.accept();
  server.addEventListener("message", (event) => server.send(`${new URL(request.url).protocol} ${event.data}`));
  return new Response(null, { status: 101, webSocket: client });
} };"#;

fn options(https: SocketAddr) -> ClusterOptions {
    let port = https.port().to_string();
    ClusterOptions {
        nodes: 1,
        router: RouterOptions {
            extra_args: [
                "--tls-listen-addr",
                &https.to_string(),
                "--redirect-to-https",
                "--https-port",
                &port,
                // The test's client stands for a Gateway that took HTTPS.
                "--trusted-proxies",
                "127.0.0.1/32",
            ]
            .map(str::to_owned)
            .to_vec(),
            ..RouterOptions::default()
        },
        ..ClusterOptions::default()
    }
}

/// A labelled TLS Secret named `name` holding `cert`.
fn tls_secret(name: &str, cert: &TestCert) -> Secret {
    let data: BTreeMap<String, ByteString> = [
        ("tls.crt", cert.cert_pem.as_bytes()),
        ("tls.key", cert.key_pem.as_bytes()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), ByteString(value.to_vec())))
    .collect();
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some([("isolane.dev/tls".to_owned(), "true".to_owned())].into()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/tls".to_owned()),
        data: Some(data),
        ..Secret::default()
    }
}

/// Creates `secret` in `namespace`, or replaces the one there.
async fn put(cp: &ControlPlane, namespace: &str, secret: &Secret) {
    let api: Api<Secret> = Api::namespaced(cp.client(), namespace);
    let name = secret.metadata.name.clone().unwrap_or_default();
    match api.get_opt(&name).await.expect("read the Secret") {
        Some(existing) => {
            let mut replaced = secret.clone();
            replaced.metadata.resource_version = existing.metadata.resource_version;
            api.replace(&name, &PostParams::default(), &replaced)
                .await
                .expect("replace the Secret");
        }
        None => {
            api.create(&PostParams::default(), secret)
                .await
                .expect("create the Secret");
        }
    }
}

/// Waits until a new connection for `host` is served `cert`.
async fn wait_for_certificate(https: SocketAddr, host: &str, ca: &TestCa, cert: &TestCert) {
    wait_until(
        &format!("{host}'s certificate to be served"),
        SETTLE,
        || async {
            let connection = Connection::open(https, host, ca, H1).await?;
            if connection.peer == cert.cert_der {
                Ok(())
            } else {
                Err("another certificate".to_owned())
            }
        },
    )
    .await;
}

/// Waits until the handshake for `host` is refused.
async fn wait_refused(https: SocketAddr, host: &str, ca: &TestCa) {
    wait_until(
        &format!("{host}'s handshake to be refused"),
        SETTLE,
        || async { Connection::open(https, host, ca, H1).await.is_err() },
    )
    .await;
}

/// Starts the system and `demo`'s Worker (and the squatter's claim on its
/// host, younger, so not admitted), served over plain HTTP.
async fn start(cp: &ControlPlane, dir: &std::path::Path, https: SocketAddr) -> Cluster {
    workers::prepare(cp, &[DEMO, SQUATTER]).await;
    let cluster = Cluster::start(cp, dir, options(https)).await;
    let client = cp.client();
    let echo = inline_worker("echo", URL_ECHO, &[HOST, PLAIN_HOST]);
    workers::apply(&client, DEMO, &echo).await;
    workers::wait_ready(&client, DEMO, "echo", SETTLE).await;
    let squat = inline_worker("squat", URL_ECHO, &[HOST]);
    workers::apply(&client, SQUATTER, &squat).await;
    let ingress = Ingress::new(cluster.ingress());
    wait_until("the Worker to be served over HTTP", SETTLE, || async {
        let reply = ingress.get(HOST, "/").await.ok()?;
        (reply.status == 200 && reply.body == format!("http://{HOST}/")).then_some(())
    })
    .await;
    cluster
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_by_sni_from_owned_secrets_reloaded_without_dropping_connections() {
    let cp = ControlPlane::start().await.expect("control plane starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let https: SocketAddr = ([127, 0, 0, 1], free_port().expect("a free port")).into();
    let cluster = start(&cp, dir.path(), https).await;
    let ca = TestCa::new("isolane-e2e-tls-ca").expect("a CA");
    let issue = |names: &[&str]| ca.issue(Leaf::server("e2e", names)).expect("a certificate");
    let (first, second) = (issue(&[HOST]), issue(&[HOST]));
    let squat = issue(&[HOST, NOBODY]);

    // === 0. no certificate of demo's: refused, the squatter's never served ===
    put(&cp, SQUATTER, &tls_secret("squat", &squat)).await;
    wait_until(
        "the router to read the squatter's Secret",
        SETTLE,
        || async {
            let served = cluster
                .router
                .metric_sum("isolane_router_tls_secrets", "state=\"served\"");
            (served.await == Some(1.0)).then_some(())
        },
    )
    .await;
    for host in [HOST, NOBODY] {
        let refused = Connection::open(https, host, &ca, H1).await;
        assert!(refused.is_err(), "{host} was served a certificate");
    }

    // === 1. demo's Secret: HTTPS over HTTP/1.1 and HTTP/2 ===
    put(&cp, DEMO, &tls_secret("secure", &first)).await;
    wait_for_certificate(https, HOST, &ca, &first).await;
    let mut one = Connection::open(https, HOST, &ca, H1)
        .await
        .expect("HTTP/1.1 over TLS");
    let mut two = Connection::open(https, HOST, &ca, H2)
        .await
        .expect("HTTP/2 over TLS");
    assert_eq!(one.alpn.as_deref(), Some(H1));
    assert_eq!(two.alpn.as_deref(), Some(H2));
    let expected = (200, format!("https://{HOST}/a?b=c"));
    assert_eq!(one.get("/a?b=c").await.expect("HTTP/1.1 answer"), expected);
    assert_eq!(two.get("/a?b=c").await.expect("HTTP/2 answer"), expected);
    let echo = client::websocket_echo(https, HOST, &ca, "/ws", "hello").await;
    assert_eq!(echo, Ok("https: hello".to_owned()), "a WebSocket over TLS");
    assert!(Connection::open(https, NOBODY, &ca, H1).await.is_err());

    // === 2. the redirect ===
    check_redirect(&cluster, https).await;

    // === 3. a new certificate; open connections keep theirs ===
    put(&cp, DEMO, &tls_secret("secure", &second)).await;
    wait_for_certificate(https, HOST, &ca, &second).await;
    for (name, connection) in [("HTTP/1.1", &mut one), ("HTTP/2", &mut two)] {
        assert_eq!(connection.peer, first.cert_der, "{name}");
        let answer = connection.get("/after").await;
        assert_eq!(answer, Ok((200, format!("https://{HOST}/after"))), "{name}");
    }

    // === 4. a malformed Secret is skipped ===
    let mut broken = tls_secret("broken", &issue(&[PLAIN_HOST]));
    if let Some(data) = broken.data.as_mut() {
        data.insert(
            "tls.key".to_owned(),
            ByteString(second.key_pem.clone().into_bytes()),
        );
    }
    put(&cp, DEMO, &broken).await;
    wait_until("the malformed Secret to be counted", SETTLE, || async {
        let rejected = cluster
            .router
            .metric_sum("isolane_router_tls_secrets", "state=\"rejected\"");
        (rejected.await == Some(1.0)).then_some(())
    })
    .await;
    assert!(Connection::open(https, PLAIN_HOST, &ca, H1).await.is_err());
    let mut fresh = Connection::open(https, HOST, &ca, H2)
        .await
        .expect("still served");
    assert_eq!(fresh.get("/").await.expect("an answer").0, 200);

    // === 5. demo's Secret gone: refused, whatever the squatter holds ===
    let mut open = Connection::open(https, HOST, &ca, H1)
        .await
        .expect("served");
    let secrets: Api<Secret> = Api::namespaced(cp.client(), DEMO);
    secrets
        .delete("secure", &DeleteParams::default())
        .await
        .expect("delete demo's Secret");
    wait_refused(https, HOST, &ca).await;
    assert_eq!(open.get("/still").await.map(|(status, _)| status), Ok(200));
    drop(cluster);
}

/// Plain HTTP for [`HOST`] goes to HTTPS (308, path and query kept); an
/// ACME challenge, a request a trusted proxy says came over HTTPS and a host
/// without a certificate are served as they are.
async fn check_redirect(cluster: &Cluster, https: SocketAddr) {
    let ingress = Ingress::new(cluster.ingress());
    let moved = ingress.get(HOST, "/x?y=1").await.expect("an answer");
    assert_eq!(moved.status, 308, "{}", moved.body);
    let location = moved.headers.get("location").and_then(|v| v.to_str().ok());
    let expected = format!("https://{HOST}:{}/x?y=1", https.port());
    assert_eq!(location, Some(expected.as_str()));
    let challenge = "/.well-known/acme-challenge/token";
    let served = ingress.get(HOST, challenge).await.expect("an answer");
    assert_eq!(
        (served.status, served.body),
        (200, format!("http://{HOST}{challenge}"))
    );
    // From a trusted proxy that took the request over HTTPS (a Gateway):
    // served, not redirected to itself, and the Worker sees https.
    let forwarded = ingress
        .get_with(HOST, "/x?y=1", &[("x-forwarded-proto", "https")])
        .await
        .expect("an answer");
    assert_eq!(
        (forwarded.status, forwarded.body),
        (200, format!("https://{HOST}/x?y=1"))
    );
    let plain = ingress.get(PLAIN_HOST, "/").await.expect("an answer");
    assert_eq!(
        (plain.status, plain.body),
        (200, format!("http://{PLAIN_HOST}/"))
    );
}
