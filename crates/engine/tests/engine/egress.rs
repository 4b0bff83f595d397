//! A worker's `fetch` against the egress policy and over HTTPS, on loopback
//! only: every spelling of a loopback address, a name that resolves to it and
//! a redirect to it are refused before any connection (a listener counts
//! them); an address the node opens is reached; HTTPS works with the node's
//! extra CA, negotiates HTTP/2, and fails for an unknown CA or a wrong name.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use isolane_engine::{EgressConfig, EngineConfig, PoolMode};
use isolane_testenv::{Leaf, TestCa};
use tokio::net::TcpListener;

use crate::support::*;

/// A plain HTTP server on `ip` that answers `answer` (or redirects to
/// `redirect`), counting connections.
async fn server(ip: &str, redirect: Option<String>) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind((ip, 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            let redirect = redirect.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_request| {
                    let redirect = redirect.clone();
                    async move {
                        let mut response = http::Response::new(Full::new(Bytes::from("reached")));
                        if let Some(location) = redirect {
                            *response.status_mut() = http::StatusCode::FOUND;
                            response
                                .headers_mut()
                                .insert("location", location.parse().unwrap());
                        }
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, accepted)
}

pub fn engine_with_egress(egress: EgressConfig) -> (isolane_engine::Engine, Arc<Recorder>) {
    engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        egress,
        ..EngineConfig::default()
    })
}

/// A worker that fetches each URL of its request's `u` parameters and
/// answers one line per URL: `ok <status> <body>` or the error message.
const PROBE: &str = "export default { async fetch(request) {
    const lines = [];
    for (const url of new URL(request.url).searchParams.getAll('u')) {
        try {
            const r = await fetch(url);
            lines.push('ok ' + r.status + ' ' + (await r.text()));
        } catch (e) {
            lines.push(String(e));
        }
    }
    return new Response(lines.join('\\n'));
} };";

fn probe_path(urls: &[String]) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(urls.iter().map(|u| ("u", u)))
        .finish();
    format!("/?{query}")
}

#[tokio::test]
async fn loopback_in_every_spelling_is_refused_and_never_connected() {
    let (target, accepted) = server("127.0.0.1", None).await;
    let port = target.port();
    let (engine, _recorder) = engine_with_egress(EgressConfig::default());
    let urls: Vec<String> = [
        "127.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "0x7f000001",
        "127.1",
        "0.0.0.0",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::1]",
        "localhost",
        "LocalHost",
    ]
    .iter()
    .map(|host| format!("http://{host}:{port}/secret"))
    .collect();
    let lines = refused(&engine, &urls, &accepted).await;
    assert!(lines[0].contains("127.0.0.1") && lines[0].ends_with("loopback address"));
    assert!(lines[5].ends_with("unspecified address"), "{}", lines[5]);
}

/// What the probe Worker says of each of `urls`: every fetch refused by
/// the egress policy, and none connected (`accepted` counts connections).
async fn refused(
    engine: &isolane_engine::Engine,
    urls: &[String],
    accepted: &AtomicUsize,
) -> Vec<String> {
    let probe = bundle("t/probe", PROBE);
    let (status, body) = run(engine, 0, &probe, &probe_path(urls)).await;
    assert_eq!(status, 200);
    let lines: Vec<String> = body.lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), urls.len(), "{body}");
    for (url, line) in urls.iter().zip(&lines) {
        assert!(
            line.starts_with("TypeError: fetch to ")
                && line.contains("refused by the egress policy"),
            "{url}: {line}"
        );
    }
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "a refused fetch connected"
    );
    lines
}

#[tokio::test]
async fn ipv6_forms_embedding_loopback_are_refused_and_never_connected() {
    let (target, accepted) = server("127.0.0.1", None).await;
    let port = target.port();
    let (engine, _recorder) = engine_with_egress(EgressConfig::default());
    // 127.0.0.1 (7f00:0001) inside Teredo (as the server, and as the
    // client: obfuscated, 80ff:fffe), 6to4, NAT64, ISATAP and the
    // IPv4-compatible form.
    let urls: Vec<String> = [
        "[2001:0:7f00:1::]",
        "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
        "[2002:7f00:1::]",
        "[64:ff9b::127.0.0.1]",
        "[64:ff9b:1::7f00:1]",
        "[2606:4700::5efe:127.0.0.1]",
        "[::127.0.0.1]",
    ]
    .iter()
    .map(|host| format!("http://{host}:{port}/secret"))
    .collect();
    for (url, line) in urls.iter().zip(refused(&engine, &urls, &accepted).await) {
        assert!(
            line.ends_with(
                "refused by the egress policy: IPv6 address embedding an IPv4 \
                 address (NAT64, 6to4, Teredo, ISATAP)"
            ),
            "{url}: {line}"
        );
    }
}

#[tokio::test]
async fn a_node_opens_a_destination_and_redirects_are_checked_at_every_hop() {
    let (secret, secret_accepts) = server("127.0.0.1", None).await;
    let (open, _) = server("127.0.0.2", None).await;
    let (bouncer, bouncer_accepts) = server(
        "127.0.0.2",
        Some(format!("http://127.0.0.1:{}/", secret.port())),
    )
    .await;
    // The same, to the secret's Teredo form.
    let (teredo_bouncer, teredo_bouncer_accepts) = server(
        "127.0.0.2",
        Some(format!("http://[2001:0:7f00:1::]:{}/", secret.port())),
    )
    .await;
    let (engine, _recorder) = engine_with_egress(EgressConfig {
        allow: vec!["127.0.0.2/32".parse().unwrap()],
        ..EgressConfig::default()
    });
    let probe = bundle("t/probe", PROBE);
    let urls = vec![
        format!("http://{open}/"),
        format!("http://{bouncer}/"),
        format!("http://{secret}/"),
        format!("http://{teredo_bouncer}/"),
    ];
    let (status, body) = run(&engine, 0, &probe, &probe_path(&urls)).await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines[0], "ok 200 reached", "{body}");
    assert!(
        lines[1].contains("refused by the egress policy: loopback address"),
        "{body}"
    );
    assert!(
        lines[2].contains("refused by the egress policy: loopback address"),
        "{body}"
    );
    assert!(
        lines[3].contains("refused by the egress policy: IPv6 address embedding"),
        "{body}"
    );
    assert_eq!(
        bouncer_accepts.load(Ordering::SeqCst) + teredo_bouncer_accepts.load(Ordering::SeqCst),
        2,
        "the first hops were allowed"
    );
    assert_eq!(
        secret_accepts.load(Ordering::SeqCst),
        0,
        "the redirect was followed"
    );
}

/// A test CA and an HTTPS server on 127.0.0.2 with a certificate for
/// `names`, offering HTTP/2 and HTTP/1.1; records the protocol negotiated.
struct TlsServer {
    addr: SocketAddr,
    ca_pem: String,
    alpn: Arc<std::sync::Mutex<Vec<String>>>,
}

async fn tls_server(names: &[&str]) -> TlsServer {
    let ca = TestCa::new("isolane-egress-test-ca").unwrap();
    let cert = ca.issue(Leaf::server("egress-test", names)).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.cert_der.into()],
        rustls::pki_types::PrivateKeyDer::try_from(cert.key_der).unwrap(),
    )
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind(("127.0.0.2", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    let alpn = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = alpn.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let protocol = tls
                    .get_ref()
                    .1
                    .alpn_protocol()
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .unwrap_or_default();
                seen.lock().unwrap().push(protocol);
                let service = service_fn(|_request| async {
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from(
                        "secure",
                    ))))
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    TlsServer {
        addr,
        ca_pem: ca.cert_pem(),
        alpn,
    }
}

#[tokio::test]
async fn https_fetch_with_the_node_s_ca_over_http2() {
    let good = tls_server(&["127.0.0.2"]).await;
    let wrong_name = tls_server(&["other.test"]).await;
    let allow = vec!["127.0.0.2/32".parse().unwrap()];
    let (trusting, _) = engine_with_egress(EgressConfig {
        allow: allow.clone(),
        extra_ca_pem: Some(format!("{}{}", good.ca_pem, wrong_name.ca_pem).into_bytes()),
        ..EgressConfig::default()
    });
    let probe = bundle("t/probe", PROBE);
    let urls = vec![
        format!("https://{}/", good.addr),
        format!("https://{}/", wrong_name.addr),
    ];
    let (status, body) = run(&trusting, 0, &probe, &probe_path(&urls)).await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines[0], "ok 200 secure", "{body}");
    assert!(lines[1].starts_with("TypeError: fetch failed"), "{body}");
    assert_eq!(
        good.alpn.lock().unwrap().as_slice(),
        ["h2"],
        "HTTP/2 by ALPN"
    );
    // Without the node's CA, the same server is not trusted.
    let (strict, _) = engine_with_egress(EgressConfig {
        allow,
        ..EgressConfig::default()
    });
    let (_, body) = run(&strict, 0, &probe, &probe_path(&urls[..1])).await;
    assert!(body.starts_with("TypeError: fetch failed"), "{body}");
}

#[test]
fn a_malformed_extra_ca_stops_the_engine_from_starting() {
    let error = isolane_engine::Engine::start(
        EngineConfig {
            families: isolane_runtime::families(),
            threads: 1,
            pin_threads: false,
            egress: EgressConfig {
                extra_ca_pem: Some(b"not a certificate".to_vec()),
                ..EgressConfig::default()
            },
            ..EngineConfig::default()
        },
        Arc::new(isolane_engine::NoopObserver),
    )
    .unwrap_err();
    assert!(error.to_string().contains("extra CA"), "{error}");
}

/// Every outbound fetch carries one hop more than the request it runs for,
/// whatever the worker wrote, so a front end can bound a worker that fetches
/// itself.
#[tokio::test]
async fn outbound_fetches_count_hops() {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service =
                    service_fn(|request: http::Request<hyper::body::Incoming>| async move {
                        let hops = request
                            .headers()
                            .get_all(isolane_engine::HOPS_HEADER)
                            .iter()
                            .map(|v| v.to_str().unwrap().to_owned())
                            .collect::<Vec<_>>()
                            .join(",");
                        Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                            Bytes::from(hops),
                        )))
                    });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    let (engine, _recorder) = engine_with_egress(EgressConfig::open());
    let worker = bundle(
        "t/hops",
        &format!(
            "export default {{ async fetch() {{
                const r = await fetch('http://{addr}/', {{ headers: {{ 'x-isolane-hops': '0' }} }});
                return new Response(await r.text());
            }} }};"
        ),
    );
    assert_eq!(run(&engine, 0, &worker, "/").await, (200, "1".to_owned()));
    let request = http::Request::builder()
        .uri("http://example.test/")
        .header(isolane_engine::HOPS_HEADER, "2")
        .body(isolane_engine::Body::empty())
        .unwrap();
    assert_eq!(
        text(engine.execute(0, worker, request).await).await,
        (200, "3".to_owned())
    );
}

/// A Worker's own `egress.allowedHosts` narrows where its fetch goes, on
/// every redirect hop too, below what the node allows.
#[tokio::test]
async fn a_worker_narrows_its_own_egress() {
    let (target, target_accepts) = server("127.0.0.1", None).await;
    let (bouncer, _) = server(
        "127.0.0.1",
        Some(format!("http://127.0.0.1:{}/", target.port())),
    )
    .await;
    let (engine, _recorder) = engine_with_egress(EgressConfig::open());
    let mut narrow = bundle_with("t/narrow", PROBE, isolane_engine::Limits::default(), &[]);
    narrow.allowed_hosts = vec!["localhost".to_owned(), "*.example.test".to_owned()];
    let narrow = Arc::new(narrow);
    let urls = vec![
        format!("http://localhost:{}/", target.port()),
        format!("http://127.0.0.1:{}/", target.port()),
        format!("http://localhost:{}/", bouncer.port()),
    ];
    let (status, body) = run(&engine, 0, &narrow, &probe_path(&urls)).await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines[0], "ok 200 reached", "{body}");
    let refused = "refused: the host is not in the Worker's egress.allowedHosts";
    assert!(lines[1].contains(refused), "{body}");
    assert!(lines[2].contains(refused), "{body}");
    assert_eq!(
        target_accepts.load(Ordering::SeqCst),
        1,
        "only the allowed fetch connected"
    );
}
