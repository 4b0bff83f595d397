//! `connect()` from `cloudflare:sockets`, and `node:net`/`node:tls` over
//! it, against real TCP servers on loopback (opened by the engine's egress
//! allow list, as the other outbound tests do): plain, TLS from the start
//! and STARTTLS, with a test CA the engine is told to trust. Then what the
//! Worker may not do — port 25, an address the egress policy refuses, a
//! host outside its `allowedHosts`, more sockets than its budget — and two
//! hostile Workers (one hoarding sockets, one writing without reading)
//! beside a benign neighbour checked before, during and after.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use isolane_engine::{
    Compat, EgressConfig, Engine, EngineConfig, Limits, NodeCompat, PoolMode, WebSocketConfig,
};
use isolane_testenv::{Leaf, TestCa};
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};

use crate::support::*;

/// How a test server talks.
#[derive(Clone)]
enum Mode {
    Plain,
    Tls(tokio_rustls::TlsAcceptor),
    /// A line in the clear (`STARTTLS`), answered `GO`, then TLS.
    StartTls(tokio_rustls::TlsAcceptor),
}

/// Connections a server accepted and how many are open now.
#[derive(Default)]
struct Counts {
    accepted: AtomicUsize,
    open: AtomicUsize,
}

/// An echo server on loopback: what it reads comes back; at the end of
/// what the client sends it ends its own side.
async fn echo_server(mode: Mode) -> (std::net::SocketAddr, Arc<Counts>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let counts = Arc::new(Counts::default());
    let server_counts = counts.clone();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let counts = server_counts.clone();
            counts.accepted.fetch_add(1, Ordering::SeqCst);
            counts.open.fetch_add(1, Ordering::SeqCst);
            let mode = mode.clone();
            tokio::spawn(async move {
                match mode {
                    Mode::Plain => echo(stream).await,
                    Mode::Tls(acceptor) => {
                        if let Ok(stream) = acceptor.accept(stream).await {
                            echo(stream).await;
                        }
                    }
                    Mode::StartTls(acceptor) => {
                        let mut stream = BufReader::new(stream);
                        let mut line = String::new();
                        if stream.read_line(&mut line).await.is_ok() && line == "STARTTLS\n" {
                            let mut stream = stream.into_inner();
                            let _ = stream.write_all(b"GO\n").await;
                            if let Ok(stream) = acceptor.accept(stream).await {
                                echo(stream).await;
                            }
                        }
                    }
                }
                counts.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, counts)
}

async fn echo<S: AsyncRead + AsyncWrite + Unpin>(stream: S) {
    let (mut read, mut write) = tokio::io::split(stream);
    let _ = tokio::io::copy(&mut read, &mut write).await;
    let _ = write.shutdown().await;
}

/// A TLS acceptor for 127.0.0.1 and `sockets.test`, and its CA's PEM.
fn tls_acceptor() -> (tokio_rustls::TlsAcceptor, String) {
    let ca = TestCa::new("isolane-sockets-test-ca").unwrap();
    let cert = ca
        .issue(Leaf::server("sockets-test", &["127.0.0.1", "sockets.test"]))
        .unwrap();
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
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
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        ca.cert_pem(),
    )
}

/// An engine of one thread whose egress policy opens loopback's
/// 127.0.0.1 and trusts `ca`.
fn loopback_engine(ca: Option<String>, websocket: WebSocketConfig) -> Engine {
    engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        egress: EgressConfig {
            allow: vec!["127.0.0.1/32".parse().unwrap()],
            extra_ca_pem: ca.map(String::into_bytes),
            ..EgressConfig::default()
        },
        websocket,
        ..EngineConfig::default()
    })
    .0
}

fn query(pairs: &[(&str, &str)]) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        query.append_pair(k, v);
    }
    format!("/?{}", query.finish())
}

/// `connect(a, {secureTransport: mode})`, STARTTLS first when asked;
/// writes two chunks, ends its side, reads everything back.
const CF_ECHO: &str = r#"
import { connect } from 'cloudflare:sockets';
const text = (s) => new TextEncoder().encode(s);
export default { async fetch(request) {
  const p = new URL(request.url).searchParams;
  const mode = p.get('mode') ?? 'off';
  const out = [];
  try {
    let s = connect(p.get('a'), { secureTransport: mode });
    if (mode === 'starttls') {
      const w = s.writable.getWriter();
      await w.write(text('STARTTLS\n'));
      w.releaseLock();
      const r = s.readable.getReader();
      const { value } = await r.read();
      out.push(new TextDecoder().decode(value).trim());
      r.releaseLock();
      const before = s;
      s = s.startTls({ expectedServerHostname: p.get('name') ?? undefined });
      await before.closed;
      out.push('plain closed');
    }
    const info = await s.opened;
    out.push(info.remoteAddress === p.get('a'), s.secureTransport, s.upgraded);
    const writer = s.writable.getWriter();
    await writer.write(text('hello '));
    await writer.write(new Uint8Array(text('world')).buffer);
    await writer.close();
    let got = '';
    const reader = s.readable.getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      got += new TextDecoder().decode(value);
    }
    out.push(got);
    await s.closed;
    out.push('closed');
  } catch (e) {
    out.push('error ' + e.message);
  }
  return new Response(out.join('|'));
} };
"#;

#[tokio::test]
async fn connect_echoes_in_the_clear_over_tls_and_after_starttls() {
    let (acceptor, ca) = tls_acceptor();
    let (plain, _) = echo_server(Mode::Plain).await;
    let (tls, _) = echo_server(Mode::Tls(acceptor.clone())).await;
    let (starttls, _) = echo_server(Mode::StartTls(acceptor)).await;
    let engine = loopback_engine(Some(ca), WebSocketConfig::default());
    let worker = bundle("sockets/echo", CF_ECHO);
    let (status, body) = run(&engine, 0, &worker, &query(&[("a", &plain.to_string())])).await;
    assert_eq!(
        (status, body.as_str()),
        (200, "true|off|false|hello world|closed")
    );
    let path = query(&[("a", &tls.to_string()), ("mode", "on")]);
    let (_, body) = run(&engine, 0, &worker, &path).await;
    assert_eq!(body, "true|on|false|hello world|closed");
    let path = query(&[("a", &starttls.to_string()), ("mode", "starttls")]);
    let (_, body) = run(&engine, 0, &worker, &path).await;
    assert_eq!(body, "GO|plain closed|true|on|true|hello world|closed");
    // The certificate must name the host: it names 127.0.0.1 and
    // sockets.test, not other.test.
    let path = query(&[
        ("a", &starttls.to_string()),
        ("mode", "starttls"),
        ("name", "other.test"),
    ]);
    let (_, body) = run(&engine, 0, &worker, &path).await;
    assert!(
        body.starts_with("GO|plain closed|error TLS handshake with other.test"),
        "{body}"
    );
}

/// node:net and node:tls: each connection says ping and pong and ends;
/// the answer is the events in order.
const NODE_ECHO: &str = r#"
import net from 'node:net';
import tls from 'node:tls';
function talk(socket, ready) {
  return new Promise((resolve) => {
    const seen = [];
    let got = '';
    socket.on(ready, () => {
      seen.push(ready, socket.remotePort === port || socket.remotePort === tport);
      socket.write('ping ');
      socket.end(Buffer.from('pong'));
    });
    socket.on('data', (d) => { got += d.toString(); });
    socket.on('end', () => seen.push('end ' + got));
    socket.on('error', (e) => seen.push('error ' + (e.code ?? e.message)));
    socket.on('close', (hadError) => { seen.push('close ' + hadError); resolve(seen.join(',')); });
  });
}
let port, tport;
export default { async fetch(request) {
  const p = new URL(request.url).searchParams;
  port = Number(p.get('port'));
  tport = Number(p.get('tport'));
  const out = [net.isIP('127.0.0.1'), net.isIPv6('::1'), net.isIP('sockets.test')];
  out.push(await talk(net.connect(port, '127.0.0.1'), 'connect'));
  out.push(await talk(net.createConnection({ host: '127.0.0.1', port }), 'connect'));
  const secure = tls.connect({ host: '127.0.0.1', port: tport });
  out.push(await talk(secure, 'secureConnect'), secure.encrypted, secure.authorized);
  // STARTTLS on a Socket of the Worker's own: its reading goes on until
  // tls.connect takes the connection.
  const plain = net.connect(Number(p.get('sport')), '127.0.0.1', () => plain.write('STARTTLS\n'));
  const go = await new Promise((resolve) => plain.once('data', (d) => resolve(d.toString().trim())));
  const upgraded = tls.connect({ socket: plain, servername: 'sockets.test' });
  out.push(go, await talk(upgraded, 'secureConnect'), upgraded.authorized);
  out.push(await talk(new net.Socket().connect(25, '127.0.0.1'), 'connect'));
  try { net.createServer(); } catch (e) { out.push(e.code); }
  try { new net.Socket({ fd: 3 }); } catch (e) { out.push(e.code); }
  return new Response(out.join(' | '));
} };
"#;

#[tokio::test]
async fn node_net_and_tls_talk_over_connect() {
    let (acceptor, ca) = tls_acceptor();
    let (plain, _) = echo_server(Mode::Plain).await;
    let (tls, _) = echo_server(Mode::Tls(acceptor.clone())).await;
    let (starttls, _) = echo_server(Mode::StartTls(acceptor)).await;
    let engine = loopback_engine(Some(ca), WebSocketConfig::default());
    let mut worker = bundle_with("sockets/node", NODE_ECHO, Limits::default(), &[]);
    worker.compat = Compat::node(NodeCompat::V2);
    let worker = Arc::new(worker);
    let path = query(&[
        ("port", &plain.port().to_string()),
        ("tport", &tls.port().to_string()),
        ("sport", &starttls.port().to_string()),
    ]);
    let (status, body) = run(&engine, 0, &worker, &path).await;
    assert_eq!(status, 200, "{body}");
    let talked = "connect,true,end ping pong,close false";
    assert_eq!(
        body,
        format!(
            "4 | true | 0 | {talked} | {talked} | secureConnect,true,end ping pong,close false | true | true | \
             GO | secureConnect,false,end ping pong,close false | true | \
             error Connections to port 25 are not allowed: send mail through an email service's API.,close true | ERR_METHOD_NOT_IMPLEMENTED | ERR_OPTION_NOT_IMPLEMENTED"
        )
    );
}

/// What a Worker may not reach: each refusal's class and message.
const REFUSED: &str = r#"
import { connect } from 'cloudflare:sockets';
let atStartup;
try { connect('127.0.0.1:80'); } catch (e) { atStartup = e.message; }
export default { async fetch(request) {
  const a = new URL(request.url).searchParams.getAll('a');
  const out = [atStartup];
  try { connect('mail.example.com:25'); } catch (e) { out.push(e.name + ': ' + e.message); }
  try { connect('bad host:80'); } catch (e) { out.push(e.name + ': ' + e.message); }
  try { connect('example.com:80', { secureTransport: 'maybe' }); } catch (e) { out.push(e.name + ': ' + e.message); }
  for (const address of a) {
    const s = connect(address);
    await s.opened.catch((e) => out.push(e.name + ': ' + e.message));
    await s.closed.catch((e) => out.push('closed too'));
  }
  return new Response(out.join('\n'));
} };
"#;

#[tokio::test]
async fn refused_addresses_fail_with_a_clear_error_and_never_connect() {
    let (addr, counts) = echo_server(Mode::Plain).await;
    // The default policy: loopback, link-local and private are refused.
    let engine = engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        ..EngineConfig::default()
    })
    .0;
    let worker = bundle("sockets/refused", REFUSED);
    let neighbour = bundle("sockets/neighbour", HELLO);
    let path = format!(
        "{}&a=localhost:{}&a=169.254.169.254:80&a=[::ffff:10.0.0.1]:5432",
        query(&[("a", &addr.to_string())]),
        addr.port()
    );
    let (status, body) = run(&engine, 0, &worker, &path).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body.lines().collect::<Vec<_>>(),
        [
            "connect() can only be called while handling a request",
            "TypeError: Connections to port 25 are not allowed: send mail through an email service's API.",
            "TypeError: Specified address is empty string, contains unsupported characters or is too long.",
            "TypeError: Unsupported value in secureTransport socket option: maybe",
            "TypeError: connect to 127.0.0.1 refused by the egress policy: loopback address",
            "closed too",
            "TypeError: connect to localhost refused by the egress policy: loopback address",
            "closed too",
            "TypeError: connect to 169.254.169.254 refused by the egress policy: link-local address",
            "closed too",
            "TypeError: connect to ::ffff:a00:1 refused by the egress policy: private address",
            "closed too",
        ]
    );
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 0, "never connected");
    neighbour_ok(&engine, &neighbour).await;

    // Where the policy opens loopback, the Worker's own allowedHosts and
    // its subrequests still hold.
    let open = loopback_engine(None, WebSocketConfig::default());
    let mut narrowed = bundle_with(
        "sockets/narrowed",
        REFUSED,
        Limits {
            subrequests: 2,
            ..Limits::default()
        },
        &[],
    );
    narrowed.allowed_hosts = vec!["api.example.com".to_owned()];
    let narrowed = Arc::new(narrowed);
    let a = addr.to_string();
    let path = format!("{}&a={a}&a={a}", query(&[("a", &a)]));
    let (_, body) = run(&open, 0, &narrowed, &path).await;
    let lines: Vec<&str> = body.lines().skip(4).collect();
    assert_eq!(
        lines,
        [
            "TypeError: connect to 127.0.0.1 refused: the host is not in the Worker's egress.allowedHosts",
            "closed too",
            "TypeError: connect to 127.0.0.1 refused: the host is not in the Worker's egress.allowedHosts",
            "closed too",
            "TypeError: Too many subrequests: a request may make at most 2 fetch calls (each redirect counts as one)",
            "closed too",
        ]
    );
    assert_eq!(counts.accepted.load(Ordering::SeqCst), 0, "never connected");
}

/// Opens 40 sockets at once and holds them (each waiting to read what
/// never comes), answering how many opened and why the others did not.
const HOARDER: &str = r#"
import { connect } from 'cloudflare:sockets';
export default { async fetch(request) {
  const a = new URL(request.url).searchParams.get('a');
  const errors = new Set();
  const sockets = Array.from({ length: 40 }, () => connect(a));
  const opened = await Promise.all(sockets.map((s) => s.opened.then(() => 1, (e) => { errors.add(e.message); return 0; })));
  const n = opened.reduce((x, y) => x + y, 0);
  if (new URL(request.url).searchParams.has('hold')) {
    await Promise.all(sockets.map((s) => s.readable.getReader().read().catch(() => {})));
  }
  return new Response(n + ' ' + [...errors].join('|'));
} };
"#;

/// The benign neighbour: says hello, and echoes through a socket of its own.
async fn neighbour_checks(
    engine: &Engine,
    hello: &Arc<isolane_engine::WorkerBundle>,
    echo: &Arc<isolane_engine::WorkerBundle>,
    addr: std::net::SocketAddr,
) {
    neighbour_ok(engine, hello).await;
    let (status, body) = run(engine, 0, echo, &query(&[("a", &addr.to_string())])).await;
    assert_eq!(
        (status, body.as_str()),
        (200, "true|off|false|hello world|closed")
    );
}

async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_hoarder_stops_at_its_socket_budget_beside_a_neighbour() {
    let (addr, counts) = echo_server(Mode::Plain).await;
    let engine = loopback_engine(
        None,
        WebSocketConfig {
            max_sockets_per_worker: 8,
            ..WebSocketConfig::default()
        },
    );
    let hoarder = Arc::new(bundle_with(
        "sockets/hoarder",
        HOARDER,
        Limits {
            wall_ms: 3_000,
            ..Limits::default()
        },
        &[],
    ));
    let hello = bundle("sockets/hello", HELLO);
    let echo = bundle("sockets/neighbour-echo", CF_ECHO);
    let a = addr.to_string();
    neighbour_checks(&engine, &hello, &echo, addr).await;
    // Within its request the hoarder gets 8 and a clear refusal; the
    // request ends and its sockets with it.
    let (_, body) = run(&engine, 0, &hoarder, &query(&[("a", &a)])).await;
    assert_eq!(
        body,
        "8 connect() refused: this Worker already has 8 sockets open (its limit per engine thread, WebSockets included)"
    );
    wait_for("the hoarder's sockets close with its request", || {
        counts.open.load(Ordering::SeqCst) == 0
    })
    .await;
    // During: the hoarder holds its 8 until its wall time ends; the
    // neighbour's sockets are its own.
    let before = counts.accepted.load(Ordering::SeqCst);
    let held = engine.execute(0, hoarder.clone(), get(&query(&[("a", &a), ("hold", "")])));
    let during = async {
        wait_for("the hoarder opens its 8", || {
            counts.accepted.load(Ordering::SeqCst) >= before + 8
        })
        .await;
        neighbour_checks(&engine, &hello, &echo, addr).await;
    };
    let (held, ()) = tokio::join!(held, during);
    assert!(
        matches!(held, Err(isolane_engine::ExecuteError::WallTimeout { .. })),
        "{:?}",
        held.map(|r| r.status())
    );
    // After: every socket closed with the request, its places are back.
    wait_for("the held sockets close", || {
        counts.open.load(Ordering::SeqCst) == 0
    })
    .await;
    neighbour_checks(&engine, &hello, &echo, addr).await;
    let (_, body) = run(&engine, 0, &hoarder, &query(&[("a", &a)])).await;
    assert!(body.starts_with("8 connect() refused"), "{body}");
}

/// Writes 64 KiB chunks to an echo server and never reads: once the
/// buffers on both sides are full its writes wait, until its wall time.
const FLOODER: &str = r#"
import { connect } from 'cloudflare:sockets';
export default { async fetch(request) {
  const s = connect(new URL(request.url).searchParams.get('a'));
  const writer = s.writable.getWriter();
  const chunk = new Uint8Array(64 * 1024);
  for (;;) await writer.write(chunk);
} };
"#;

#[tokio::test]
async fn a_writer_that_never_reads_waits_on_back_pressure_beside_a_neighbour() {
    let (addr, counts) = echo_server(Mode::Plain).await;
    let engine = loopback_engine(None, WebSocketConfig::default());
    let flooder = Arc::new(bundle_with(
        "sockets/flooder",
        FLOODER,
        Limits {
            wall_ms: 3_000,
            memory_mib: 64,
            ..Limits::default()
        },
        &[],
    ));
    let hello = bundle("sockets/hello", HELLO);
    let echo = bundle("sockets/neighbour-echo", CF_ECHO);
    neighbour_checks(&engine, &hello, &echo, addr).await;
    let flood = engine.execute(0, flooder.clone(), get(&query(&[("a", &addr.to_string())])));
    let during = async {
        wait_for("the flooder connects", || {
            counts.open.load(Ordering::SeqCst) >= 1
        })
        .await;
        neighbour_checks(&engine, &hello, &echo, addr).await;
    };
    let (flood, ()) = tokio::join!(flood, during);
    // Back-pressure, not memory: the request ends at its wall time.
    assert!(
        matches!(flood, Err(isolane_engine::ExecuteError::WallTimeout { .. })),
        "{:?}",
        flood.map(|r| r.status())
    );
    wait_for("the flooder's socket closes with its request", || {
        counts.open.load(Ordering::SeqCst) == 0
    })
    .await;
    neighbour_checks(&engine, &hello, &echo, addr).await;
}

/// `import()` of what a bundle leaves external, as pg-cloudflare loads
/// cloudflare:sockets; a built-in the settings refuse, or a module the
/// bundle lacks, rejects with the error a static import would throw.
const DYNAMIC: &str = r#"
export default { async fetch(request) {
  const a = new URL(request.url).searchParams.get('a');
  const { connect } = await import('cloudflare:sockets');
  const again = await import('cloudflare:sockets');
  const s = connect(a);
  const w = s.writable.getWriter();
  await w.write(new TextEncoder().encode('dynamic'));
  await w.close();
  const { value } = await s.readable.getReader().read();
  const out = [new TextDecoder().decode(value), again.connect === connect];
  for (const name of ['node:fs', './missing.js']) {
    await import(name).then(() => out.push('loaded ' + name), (e) => out.push(e.name + ': ' + e.message));
  }
  return new Response(out.join('\n'));
} };
"#;

#[tokio::test]
async fn dynamic_import_loads_cloudflare_sockets() {
    let (addr, _) = echo_server(Mode::Plain).await;
    let engine = loopback_engine(None, WebSocketConfig::default());
    let worker = bundle("sockets/dynamic", DYNAMIC);
    let (status, body) = run(&engine, 0, &worker, &query(&[("a", &addr.to_string())])).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body.lines().collect::<Vec<_>>(),
        [
            "dynamic",
            "true",
            "TypeError: Cannot load \"node:fs\" imported by \"worker.js\": Node.js modules need the nodejs_compat compatibility flag (or a compatibility date from 2026-08-04)",
            "TypeError: Cannot resolve \"./missing.js\" imported by \"worker.js\": no module of that name in the bundle",
        ]
    );
}

/// Opens a socket, then spins until its CPU limit stops it.
const SPINNER: &str = r#"
import { connect } from 'cloudflare:sockets';
export default { async fetch(request) {
  const s = connect(new URL(request.url).searchParams.get('a'));
  await s.opened;
  for (;;) {}
} };
"#;

#[tokio::test]
async fn a_worker_stopped_at_its_cpu_limit_leaves_no_socket_open() {
    let (addr, counts) = echo_server(Mode::Plain).await;
    let engine = loopback_engine(None, WebSocketConfig::default());
    let spinner = Arc::new(bundle_with(
        "sockets/spinner",
        SPINNER,
        Limits {
            cpu_ms: 50,
            ..Limits::default()
        },
        &[],
    ));
    let hello = bundle("sockets/hello", HELLO);
    let echo = bundle("sockets/neighbour-echo", CF_ECHO);
    neighbour_checks(&engine, &hello, &echo, addr).await;
    let spun = engine
        .execute(0, spinner, get(&query(&[("a", &addr.to_string())])))
        .await;
    assert!(
        matches!(spun, Err(isolane_engine::ExecuteError::CpuLimit { .. })),
        "{:?}",
        spun.map(|r| r.status())
    );
    assert_eq!(
        counts.accepted.load(Ordering::SeqCst),
        2,
        "the neighbour's and the spinner's"
    );
    wait_for("the spinner's socket closes with it", || {
        counts.open.load(Ordering::SeqCst) == 0
    })
    .await;
    neighbour_checks(&engine, &hello, &echo, addr).await;
}
