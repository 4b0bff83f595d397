//! Outbound WebSockets from a Worker — `new WebSocket(url)` and `fetch`
//! with `Upgrade: websocket` — against a tokio-tungstenite echo server on
//! loopback (opened by the engine's egress allow list, as the other fetch
//! tests do), and the limits on them beside a benign neighbour.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use isolane_engine::{EgressConfig, Engine, EngineConfig, PoolMode, WebSocketConfig};
use isolane_worker::Limits;

use crate::support::*;

/// Connections the echo server accepted, and how many are open now.
#[derive(Default)]
struct Counts {
    accepted: AtomicUsize,
    open: AtomicUsize,
}

/// A WebSocket echo server on loopback: every text and binary message
/// comes back; a close is answered with the same code.
async fn echo_server() -> (std::net::SocketAddr, Arc<Counts>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let counts = Arc::new(Counts::default());
    let server_counts = counts.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counts = server_counts.clone();
            counts.accepted.fetch_add(1, Ordering::SeqCst);
            counts.open.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                if let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await {
                    while let Some(Ok(message)) = ws.next().await {
                        if (message.is_text() || message.is_binary())
                            && ws.send(message).await.is_err()
                        {
                            break;
                        }
                    }
                }
                counts.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, counts)
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
  const ws = new WebSocket(url);
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
    let (addr, counts) = echo_server().await;
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
    let (addr, _counts) = echo_server().await;
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
    let (addr, counts) = echo_server().await;
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
    let (addr, counts) = echo_server().await;
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
    let (addr, counts) = echo_server().await;
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
