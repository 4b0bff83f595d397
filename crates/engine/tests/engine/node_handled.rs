//! Errors a Worker handled are not logged as uncaught: a Transform's flush
//! error that `pipeline()` rejected with and the Worker caught, and a
//! `node:net` socket its peer ended (no error in Node at all). Only what
//! nobody handled is logged (`rejections.rs` holds that side), and the same
//! Worker's truly unhandled error is still logged here.

use std::sync::Arc;

use isolane_engine::{Compat, Limits, NodeCompat, PoolMode};
use tokio::io::AsyncWriteExt as _;

use crate::logs::{self, Logged};
use crate::node_http::loopback_engine;
use crate::support::*;

/// What was logged for `worker` as nobody's: uncaught exceptions and
/// unhandled rejections.
fn uncaught(worker: &str) -> Vec<Logged> {
    logs::for_worker(worker)
        .into_iter()
        .filter(|e| e.message == "uncaught exception" || e.message == "unhandled promise rejection")
        .collect()
}

fn node_bundle(id: &str, source: &str) -> Arc<isolane_engine::WorkerBundle> {
    let mut worker = bundle_with(id, source, Limits::default(), &[]);
    worker.compat = Compat::node(NodeCompat::V2);
    Arc::new(worker)
}

const FLUSH_FAILS: &str = r#"
import { Readable, Transform, Writable, pipeline as pipelineCb } from 'node:stream';
import { pipeline } from 'node:stream/promises';
const failing = () => new Transform({
  transform(chunk, encoding, callback) { callback(null, chunk); },
  flush(callback) { callback(new Error('flush failed')); },
});
const sink = () => new Writable({ write(chunk, encoding, callback) { callback(); } });
export default { async fetch(request) {
  const out = [];
  try { await pipeline(Readable.from(['a', 'b']), failing(), sink()); } catch (e) { out.push(e.message); }
  try { await pipeline(Readable.from(['a']), failing(), async function* (source) { for await (const c of source) yield c; }, sink()); } catch (e) { out.push(e.message); }
  out.push(await new Promise((resolve) => pipelineCb(Readable.from(['a']), failing(), sink(), (e) => resolve(e?.message))));
  if (new URL(request.url).pathname === '/unhandled') Promise.reject(new Error('nobody catches this'));
  return new Response(out.join(' | '));
} };
"#;

/// A flush error `pipeline()` rejected with (promise and callback forms),
/// caught by the Worker, is logged nowhere; an error nobody caught, in the
/// same Worker, still is.
#[tokio::test]
async fn a_flush_error_the_worker_caught_is_not_logged() {
    logs::capture();
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = node_bundle("t/handled-flush", FLUSH_FAILS);
    let (status, body) = run(&engine, 0, &worker, "/").await;
    assert_eq!(
        (status, body.as_str()),
        (200, "flush failed | flush failed | flush failed")
    );
    // Let every later turn (a destroy's 'error', a close) run.
    let (status, _) = run(&engine, 0, &worker, "/").await;
    assert_eq!(status, 200);
    assert_eq!(uncaught(&worker.id).len(), 0, "{:#?}", uncaught(&worker.id));
    let unhandled = node_bundle("t/handled-flush-control", FLUSH_FAILS);
    let (status, _) = run(&engine, 0, &unhandled, "/unhandled").await;
    assert_eq!(status, 200);
    let logged = uncaught(&unhandled.id);
    assert_eq!(logged.len(), 1, "{logged:#?}");
    assert!(
        logged[0].fields.contains("nobody catches this"),
        "{logged:#?}"
    );
}

const PEER_ENDS: &str = r#"
import net from 'node:net';
export default { async fetch(request) {
  const port = Number(new URL(request.url).searchParams.get('port'));
  const seen = await new Promise((resolve) => {
    const seen = [];
    let got = '';
    const socket = net.connect(port, '127.0.0.1');
    socket.on('data', (d) => { got += d; });
    socket.on('end', () => seen.push('end ' + got));
    socket.on('close', (hadError) => { seen.push('close ' + hadError); resolve(seen); });
  });
  return new Response(seen.join(','));
} };
"#;

/// A server that says `bye` and ends the connection.
async fn bye_server() -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let _ = stream.write_all(b"bye").await;
            let _ = stream.shutdown().await;
        }
    });
    addr
}

/// A `node:net` socket its peer ended ends and closes without an error, as
/// in Node, and nothing is logged as uncaught.
#[tokio::test]
async fn a_socket_the_peer_ended_logs_nothing() {
    logs::capture();
    let addr = bye_server().await;
    let engine = loopback_engine();
    let worker = node_bundle("t/handled-peer-end", PEER_ENDS);
    let path = format!("/?port={}", addr.port());
    let (status, body) = run(&engine, 0, &worker, &path).await;
    assert_eq!((status, body.as_str()), (200, "end bye,close false"));
    let (status, _) = run(&engine, 0, &worker, &path).await;
    assert_eq!(status, 200);
    assert_eq!(uncaught(&worker.id).len(), 0, "{:#?}", uncaught(&worker.id));
}
