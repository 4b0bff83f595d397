//! Outbound WebSockets from a Worker — `new WebSocket(url)` and `fetch`
//! with `Upgrade: websocket` — against a tokio-tungstenite echo server on
//! loopback (opened by the engine's egress allow list, as the other fetch
//! tests do), and the limits on them beside a benign neighbour.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use isolane_engine::{
    CloseFrame, EgressConfig, Engine, EngineConfig, PoolMode, SocketMessage, WebSocketConfig,
};
use isolane_testenv::{Leaf, TestCa};
use isolane_worker::Limits;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{ErrorResponse, Request, Response};

use crate::support::*;

/// Connections the echo server accepted, and how many are open now.
#[derive(Default)]
struct Counts {
    accepted: AtomicUsize,
    open: AtomicUsize,
    alpn: std::sync::Mutex<Vec<String>>,
    /// The close codes clients sent.
    closes: std::sync::Mutex<Vec<u16>>,
}

/// A WebSocket echo server on loopback: every text and binary message
/// comes back; a close is answered with the same code; the first
/// subprotocol offered is chosen. With `tls`, over TLS offering HTTP/2 and
/// HTTP/1.1 by ALPN (the protocol each connection negotiated is recorded).
async fn echo_server(
    tls: Option<tokio_rustls::TlsAcceptor>,
) -> (std::net::SocketAddr, Arc<Counts>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let counts = Arc::new(Counts::default());
    let server_counts = counts.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counts = server_counts.clone();
            let tls = tls.clone();
            counts.accepted.fetch_add(1, Ordering::SeqCst);
            counts.open.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                match tls {
                    None => echo(stream, &counts).await,
                    Some(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            let alpn = stream.get_ref().1.alpn_protocol().unwrap_or_default();
                            counts
                                .alpn
                                .lock()
                                .unwrap()
                                .push(String::from_utf8_lossy(alpn).into_owned());
                            echo(stream, &counts).await;
                        }
                    }
                }
                counts.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, counts)
}

async fn echo<S>(stream: S, counts: &Counts)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, choose_protocol).await else {
        return;
    };
    while let Some(Ok(message)) = ws.next().await {
        let message = match message {
            Message::Close(frame) => {
                let code = frame.map_or(1005, |f| u16::from(f.code));
                counts.closes.lock().unwrap().push(code);
                continue;
            }
            Message::Text(text) if text.as_str() == "huge" => Message::text("x".repeat(2 << 20)),
            Message::Text(_) | Message::Binary(_) => message,
            _ => continue,
        };
        if ws.send(message).await.is_err() {
            break;
        }
    }
}

/// The handshake's answer: the first subprotocol offered, if any.
// The callback's type is tungstenite's (its error is a whole response).
#[allow(clippy::result_large_err)]
fn choose_protocol(request: &Request, mut response: Response) -> Result<Response, ErrorResponse> {
    let offered = request
        .headers()
        .get("sec-websocket-protocol")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .map(|p| p.trim().to_owned());
    if let Some(first) = offered {
        response
            .headers_mut()
            .insert("sec-websocket-protocol", first.parse().unwrap());
    }
    Ok(response)
}

/// A TLS acceptor for 127.0.0.1 offering HTTP/2 and HTTP/1.1, and the PEM
/// of its CA.
fn tls_acceptor() -> (tokio_rustls::TlsAcceptor, String) {
    let ca = TestCa::new("isolane-ws-test-ca").unwrap();
    let cert = ca.issue(Leaf::server("ws-test", &["127.0.0.1"])).unwrap();
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
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        ca.cert_pem(),
    )
}

/// A plain HTTP server that answers every request 404, whatever it asks.
async fn not_found_server() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let _ = stream
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope")
                    .await;
            });
        }
    });
    addr
}

fn out_engine(egress: EgressConfig, websocket: WebSocketConfig) -> Engine {
    engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        egress,
        websocket,
        ..EngineConfig::default()
    })
    .0
}

/// `?u=<url>`.
fn path_to(url: &str) -> String {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("u", url)
        .finish();
    format!("/?{query}")
}

/// `new WebSocket(u)`: sends a text and a binary message, closes after both
/// echoes, and answers with what it saw.
const CLIENT: &str = r#"
export default { async fetch(request) {
  const url = new URL(request.url).searchParams.get('u');
  const protocols = new URL(request.url).searchParams.getAll('p');
  const ws = new WebSocket(url, protocols);
  const seen = ['state ' + ws.readyState];
  return await new Promise((resolve) => {
    ws.addEventListener('open', () => {
      seen.push('open ' + ws.readyState + ' ' + JSON.stringify(ws.protocol));
      ws.send('hello');
      ws.send(new Uint8Array([1, 2, 3]));
    });
    ws.addEventListener('message', (e) => {
      seen.push(typeof e.data === 'string' ? e.data : 'bytes ' + new Uint8Array(e.data).join(','));
      if (seen.length === 4) ws.close(4000, 'done');
    });
    ws.addEventListener('error', (e) => seen.push('error ' + e.message));
    ws.addEventListener('close', (e) => {
      seen.push('close ' + e.code + ' ' + e.reason + ' ' + ws.readyState);
      resolve(new Response(seen.join('\n') + '\n' + ws.url));
    });
  });
} };
"#;

/// `fetch` with `Upgrade: websocket`: accepts the 101's socket, echoes one
/// message and closes.
const FETCH_UPGRADE: &str = r#"
export default { async fetch(request) {
  const url = new URL(request.url).searchParams.get('u');
  let response;
  try {
    response = await fetch(url, { headers: { Upgrade: 'websocket' } });
  } catch (e) {
    return new Response(String(e));
  }
  const ws = response.webSocket;
  if (ws === null) return new Response('no socket: ' + response.status);
  ws.accept();
  const seen = [response.status];
  return await new Promise((resolve) => {
    ws.addEventListener('message', (e) => { seen.push(e.data); ws.close(1000, 'bye'); });
    ws.addEventListener('close', (e) => {
      seen.push('close ' + e.code);
      resolve(new Response(seen.join('\n')));
    });
    ws.send('ping');
  });
} };
"#;

#[tokio::test]
async fn new_websocket_echoes_through_the_engine() {
    let (addr, counts) = echo_server(None).await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let client = bundle("out/client", CLIENT);
    let url = format!("ws://{addr}/chat");
    let (status, body) = run(&engine, 0, &client, &path_to(&url)).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        format!("state 0\nopen 1 \"\"\nhello\nbytes 1,2,3\nclose 4000 done 3\n{url}")
    );
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn fetch_with_upgrade_gives_a_socket_to_accept() {
    let (addr, _counts) = echo_server(None).await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let worker = bundle("out/fetch", FETCH_UPGRADE);
    let (status, body) = run(&engine, 0, &worker, &path_to(&format!("http://{addr}/"))).await;
    assert_eq!(status, 200);
    assert_eq!(body, "101\nping\nclose 1000");
    // ws: works as well as http:.
    let (_, body) = run(&engine, 0, &worker, &path_to(&format!("ws://{addr}/"))).await;
    assert_eq!(body, "101\nping\nclose 1000");
}

#[tokio::test]
async fn the_egress_policy_refuses_a_socket_with_an_error_not_a_crash() {
    let (addr, counts) = echo_server(None).await;
    // The default policy: loopback is refused.
    let engine = out_engine(EgressConfig::default(), WebSocketConfig::default());
    let client = bundle("out/refused", CLIENT);
    let neighbour = bundle("out/neighbour", HELLO);
    let (status, body) = run(&engine, 0, &client, &path_to(&format!("ws://{addr}/"))).await;
    assert_eq!(status, 200);
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines[0], "state 0");
    assert!(
        lines[1].starts_with("error ")
            && lines[1].contains("refused by the egress policy: loopback address"),
        "{body}"
    );
    assert!(lines[2].starts_with("close 1006 "), "{body}");
    let worker = bundle("out/refused-fetch", FETCH_UPGRADE);
    let (_, body) = run(&engine, 0, &worker, &path_to(&format!("http://{addr}/"))).await;
    assert!(
        body.starts_with("TypeError: fetch to 127.0.0.1 refused by the egress policy"),
        "{body}"
    );
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 0, "never connected");
    neighbour_ok(&engine, &neighbour).await;
}

/// The `on…` attributes instead of `addEventListener`: `new WebSocket(u)`
/// with `onopen`, `onmessage`, `onerror` and `onclose`, answering with what
/// it saw and what the attributes read back as.
const HANDLERS: &str = r#"
export default { async fetch(request) {
  const url = new URL(request.url).searchParams.get('u');
  const ws = new WebSocket(url);
  const seen = ['unset ' + [ws.onopen, ws.onmessage, ws.onerror, ws.onclose].join(',')];
  return await new Promise((resolve) => {
    ws.onopen = function (e) { seen.push('open ' + e.type + ' ' + (this === ws)); ws.send('hello'); };
    ws.onmessage = (e) => { seen.push('message ' + e.data); ws.close(4000, 'done'); };
    ws.onerror = (e) => seen.push('error ' + e.message);
    ws.onclose = (e) => {
      seen.push('close ' + e.code + ' ' + (typeof ws.onclose) + ' ' + Object.keys(WebSocket.prototype).filter((k) => k.startsWith('on')).join(','));
      resolve(new Response(seen.join('\n')));
    };
  });
} };
"#;

#[tokio::test]
async fn event_handler_attributes_see_open_message_error_and_close() {
    let (addr, _counts) = echo_server(None).await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let worker = bundle("out/handlers", HANDLERS);
    let (status, body) = run(&engine, 0, &worker, &path_to(&format!("ws://{addr}/"))).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        "unset ,,,\nopen open true\nmessage hello\nclose 4000 function onopen,onmessage,onerror,onclose"
    );
    // Refused by the egress policy: `onerror`, then `onclose` with 1006.
    let refusing = out_engine(EgressConfig::default(), WebSocketConfig::default());
    let (_, body) = run(&refusing, 0, &worker, &path_to(&format!("ws://{addr}/"))).await;
    let lines: Vec<&str> = body.lines().collect();
    assert!(
        lines[1].starts_with("error ") && lines[1].contains("refused by the egress policy"),
        "{body}"
    );
    assert!(lines[2].starts_with("close 1006 function"), "{body}");
}

/// Opens sockets with `fetch` + Upgrade, one after the other, keeping each
/// open, until one fails; answers how many opened and the failure.
const OPENER: &str = r#"
export default { async fetch(request) {
  const url = new URL(request.url).searchParams.get('u');
  const n = Number(new URL(request.url).searchParams.get('n') ?? '1000');
  const sockets = [];
  let failure = 'none';
  for (let i = 0; i < n; i++) {
    try {
      const response = await fetch(url, { headers: { Upgrade: 'websocket' } });
      response.webSocket.accept();
      sockets.push(response.webSocket);
    } catch (e) {
      failure = String(e);
      break;
    }
  }
  const opened = sockets.length;
  for (const ws of sockets) ws.close(1000);
  return new Response(opened + ' ' + failure);
} };
"#;

#[tokio::test]
async fn each_socket_takes_a_subrequest() {
    let (addr, counts) = echo_server(None).await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let limits = Limits {
        subrequests: 3,
        ..Limits::default()
    };
    let worker = Arc::new(bundle_with("out/subrequests", OPENER, limits, &[]));
    let (_, body) = run(&engine, 0, &worker, &path_to(&format!("http://{addr}/"))).await;
    assert!(
        body.starts_with("3 TypeError: Too many subrequests"),
        "{body}"
    );
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 3);
}

/// A hostile Worker opening `new WebSocket`s in a loop, holding them.
const HOARDER: &str = r#"
export default { async fetch(request) {
  const url = new URL(request.url).searchParams.get('u');
  let opened = 0;
  const errors = new Set();
  await Promise.all(Array.from({ length: 40 }, () => new Promise((resolve) => {
    const ws = new WebSocket(url);
    ws.addEventListener('open', () => { opened++; resolve(); });
    ws.addEventListener('error', (e) => { errors.add(e.message); resolve(); });
  })));
  return new Response(opened + ' ' + [...errors].join('|'));
} };
"#;

#[tokio::test]
async fn a_hoarder_stops_at_its_socket_limit_beside_a_neighbour() {
    let (addr, counts) = echo_server(None).await;
    let engine = out_engine(
        EgressConfig::open(),
        WebSocketConfig {
            max_sockets_per_worker: 8,
            idle_timeout: Duration::from_secs(5),
            ..WebSocketConfig::default()
        },
    );
    let hoarder = bundle("out/hoarder", HOARDER);
    let neighbour = bundle("out/neighbour", CLIENT);
    let url = format!("ws://{addr}/");
    let path = path_to(&url);
    let neighbour_echoes = || async {
        let (status, body) = run(&engine, 0, &neighbour, &path).await;
        assert_eq!(status, 200);
        assert!(body.contains("hello\nbytes 1,2,3\nclose 4000"), "{body}");
    };
    neighbour_echoes().await;
    let (_, body) = run(&engine, 0, &hoarder, &path).await;
    assert_eq!(
        body,
        "8 WebSocket refused: this Worker already has 8 WebSockets open (its limit per engine thread)"
    );
    // During: the hoarder's 8 are open (until their idle timeout); its
    // neighbour's sockets are counted apart.
    assert!(counts.open.load(Ordering::SeqCst) >= 8);
    neighbour_echoes().await;
    // After: the idle timeout closes the hoarder's sockets, and its places
    // come back.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while counts.open.load(Ordering::SeqCst) > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the idle sockets close"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    neighbour_echoes().await;
    let (_, body) = run(&engine, 0, &hoarder, &path).await;
    assert!(body.starts_with("8 WebSocket refused"), "{body}");
}

#[tokio::test]
async fn wss_upgrades_on_http1_where_the_server_offers_http2() {
    let (acceptor, ca_pem) = tls_acceptor();
    let (addr, counts) = echo_server(Some(acceptor)).await;
    let engine = out_engine(
        EgressConfig {
            extra_ca_pem: Some(ca_pem.into_bytes()),
            ..EgressConfig::open()
        },
        WebSocketConfig::default(),
    );
    let client = bundle("out/wss", CLIENT);
    let url = format!("wss://{addr}/");
    let path = format!("{}&p=chat&p=v2", path_to(&url));
    let (_, body) = run(&engine, 0, &client, &path).await;
    assert_eq!(
        body,
        format!("state 0\nopen 1 \"chat\"\nhello\nbytes 1,2,3\nclose 4000 done 3\n{url}")
    );
    let worker = bundle("out/wss-fetch", FETCH_UPGRADE);
    let (_, body) = run(&engine, 0, &worker, &path_to(&format!("https://{addr}/"))).await;
    assert_eq!(body, "101\nping\nclose 1000");
    // The handshake's client offers no ALPN (hyper-rustls's HTTP/1.1-only
    // connector), so the server, which prefers h2, speaks HTTP/1.1.
    assert_eq!(*counts.alpn.lock().unwrap(), ["", ""]);
}

#[tokio::test]
async fn a_server_that_does_not_switch_gives_its_response_or_an_error() {
    let addr = not_found_server().await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let worker = bundle("out/404-fetch", FETCH_UPGRADE);
    let (_, body) = run(&engine, 0, &worker, &path_to(&format!("http://{addr}/"))).await;
    assert_eq!(body, "no socket: 404");
    let client = bundle("out/404", CLIENT);
    let (_, body) = run(&engine, 0, &client, &path_to(&format!("ws://{addr}/"))).await;
    assert_eq!(
        body,
        format!(
            "state 0\nerror Failed to establish the WebSocket connection: expected server to reply \
             with HTTP status code 101 (switching protocols), but received 404 instead.\n\
             close 1006 Failed to establish websocket connection 3\nws://{addr}/"
        )
    );
}

/// `new WebSocket` in every way the constructor refuses, and a close while
/// connecting.
const CONSTRUCTOR: &str = r#"
export default { async fetch(request) {
  const url = new URL(request.url).searchParams.get('u');
  const out = [];
  for (const [u, p] of [['ftp://x/', undefined], [url + '#f', undefined], ['::', undefined], [url, ['a', 'a']], [url, 'a b']]) {
    try { new WebSocket(u, p); out.push('made'); } catch (e) { out.push(e.name); }
  }
  const ws = new WebSocket(url);
  try { ws.send('early'); } catch (e) { out.push(e.name); }
  ws.close();
  out.push('state ' + ws.readyState);
  await new Promise((resolve) => ws.addEventListener('close', (e) => { out.push('close ' + e.code); resolve(); }));
  return new Response(out.join(' '));
} };
"#;

#[tokio::test]
async fn the_constructor_checks_its_arguments_and_close_while_connecting_fails_it() {
    let (addr, _counts) = echo_server(None).await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let worker = bundle("out/constructor", CONSTRUCTOR);
    let (_, body) = run(&engine, 0, &worker, &path_to(&format!("ws://{addr}/"))).await;
    assert_eq!(
        body,
        "SyntaxError SyntaxError SyntaxError SyntaxError SyntaxError InvalidStateError state 2 close 1006"
    );
}

/// Sends `m` once open and answers with how the socket closed; a message
/// `burn` back from the server spins past the CPU limit.
const ONE_MESSAGE: &str = r#"
export default { async fetch(request) {
  const params = new URL(request.url).searchParams;
  const ws = new WebSocket(params.get('u'));
  return await new Promise((resolve) => {
    ws.addEventListener('open', () => ws.send(params.get('m')));
    ws.addEventListener('message', (e) => { if (e.data === 'burn') for (;;) {} });
    ws.addEventListener('error', (e) => resolve(new Response('error ' + e.message)));
    ws.addEventListener('close', (e) => resolve(new Response('close ' + e.code + ' ' + e.reason)));
  });
} };
"#;

#[tokio::test]
async fn an_outbound_socket_has_the_limits_of_an_accepted_one() {
    let (addr, counts) = echo_server(None).await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let worker = bundle("out/limits", ONE_MESSAGE);
    let neighbour = bundle("out/neighbour", HELLO);
    let url = format!("ws://{addr}/");
    // A message over the cap (1 MiB) from the server: 1009, both ways.
    let (_, body) = run(&engine, 0, &worker, &format!("{}&m=huge", path_to(&url))).await;
    assert_eq!(body, "close 1009 message too big");
    neighbour_ok(&engine, &neighbour).await;
    // A turn past its CPU limit ends the request and its socket: the
    // server hears 1011, the neighbour runs on.
    let response = engine
        .execute(0, worker.clone(), get(&format!("{}&m=burn", path_to(&url))))
        .await;
    assert!(response.is_err() || response.unwrap().status() != 200);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !counts.closes.lock().unwrap().contains(&1011) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the server hears 1011"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    neighbour_ok(&engine, &neighbour).await;
}

#[tokio::test]
async fn allowed_hosts_and_the_global_scope_are_checked() {
    let (addr, counts) = echo_server(None).await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let mut narrowed = bundle_with("out/narrowed", ONE_MESSAGE, Limits::default(), &[]);
    narrowed.allowed_hosts = vec!["example.com".to_owned()];
    let narrowed = Arc::new(narrowed);
    let (_, body) = run(
        &engine,
        0,
        &narrowed,
        &format!("{}&m=hi", path_to(&format!("ws://{addr}/"))),
    )
    .await;
    assert_eq!(
        body,
        "error fetch to 127.0.0.1 refused: the host is not in the Worker's egress.allowedHosts"
    );
    let global = bundle(
        "out/global",
        "let seen = 'pending';
         new WebSocket('ws://127.0.0.1:1/').addEventListener('error', (e) => { seen = e.message; });
         export default { fetch() { return new Response(seen); } };",
    );
    let (_, body) = run(&engine, 0, &global, "/").await;
    assert_eq!(
        body,
        "WebSocket: a socket can only be opened while handling a request"
    );
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 0);
}

/// A proxy: the client's upgrade goes on to the origin, and the origin's
/// `101` (its `webSocket`) is the answer.
const PROXY: &str = r#"
export default { fetch(request, env) {
  return fetch(env.ORIGIN, { headers: request.headers });
} };
"#;

#[tokio::test]
async fn a_fetched_socket_returned_in_a_101_is_passed_on_both_ways() {
    let (addr, counts) = echo_server(None).await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let origin = format!("http://{addr}/");
    let proxy = Arc::new(bundle_with(
        "out/proxy",
        PROXY,
        Limits::default(),
        &[("ORIGIN", &origin)],
    ));
    let mut request = get("/ws");
    request
        .headers_mut()
        .insert("upgrade", http::HeaderValue::from_static("websocket"));
    let response = engine.execute(0, proxy.clone(), request).await.unwrap();
    assert_eq!(response.status(), 101);
    let mut end = response
        .extensions()
        .get::<isolane_engine::WebSocketUpgrade>()
        .expect("the socket rides on the response")
        .take()
        .expect("taken once");
    for i in 0..10u8 {
        let message = SocketMessage::Text(format!("m{i}"));
        end.to_worker.send(message.clone()).await.unwrap();
        assert_eq!(next(&mut end).await, Some(message));
        let binary = SocketMessage::Binary(bytes::Bytes::from(vec![i; 5]));
        end.to_worker.send(binary.clone()).await.unwrap();
        assert_eq!(next(&mut end).await, Some(binary));
    }
    // The client's close reaches the origin with its code.
    end.to_worker
        .send(SocketMessage::Close(Some(CloseFrame {
            code: 4001,
            reason: "done".to_owned(),
        })))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !counts.closes.lock().unwrap().contains(&4001) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the origin hears 4001"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A `new WebSocket` cannot be returned (workerd's rule too).
    let direct = bundle(
        "out/direct",
        &format!(
            "export default {{ fetch() {{ return new Response(null, {{ status: 101, webSocket: new WebSocket('ws://{addr}/') }}); }} }};"
        ),
    );
    let error = engine.execute(0, direct, get("/")).await.unwrap_err();
    assert!(
        error.to_string().contains(
            "Can't return WebSocket in a Response if it was created with `new WebSocket()`"
        ),
        "{error}"
    );
}

async fn next(end: &mut isolane_engine::SocketEnd) -> Option<SocketMessage> {
    tokio::time::timeout(Duration::from_secs(20), end.from_worker.recv())
        .await
        .expect("an answer in time")
}

/// `n` round trips on one `new WebSocket`, text and binary in turn.
const ROUND_TRIPS: &str = r#"
export default { async fetch(request) {
  const params = new URL(request.url).searchParams;
  const n = Number(params.get('n'));
  const ws = new WebSocket(params.get('u'));
  let echoed = 0;
  return await new Promise((resolve) => {
    const next = () => ws.send(echoed % 2 ? new Uint8Array(64) : 'x'.repeat(64));
    ws.addEventListener('open', next);
    ws.addEventListener('message', () => { if (++echoed === n) ws.close(1000); else next(); });
    ws.addEventListener('close', () => resolve(new Response(String(echoed))));
  });
} };
"#;

/// Prints the time of 1,000 round trips (a number, not an assertion).
#[tokio::test]
async fn round_trips_are_measured() {
    let (addr, _counts) = echo_server(None).await;
    let engine = out_engine(EgressConfig::open(), WebSocketConfig::default());
    let worker = bundle("out/round-trips", ROUND_TRIPS);
    let path = format!("{}&n=1000", path_to(&format!("ws://{addr}/")));
    let started = std::time::Instant::now();
    let (_, body) = run(&engine, 0, &worker, &path).await;
    assert_eq!(body, "1000");
    println!(
        "1000 outbound round trips (new WebSocket, loopback echo): {:?}",
        started.elapsed()
    );
}
