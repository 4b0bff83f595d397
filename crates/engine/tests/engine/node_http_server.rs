//! `node:http`'s server as workerd has it: `http.createServer(listener)`,
//! `listen(port)`, and cloudflare:node's `httpServerHandler({ port })` as
//! the Worker's handler; requests reach the listener as IncomingMessages,
//! the ServerResponse it writes (head, headers, a body written in pieces or
//! none) is the Worker's Response; a listener that throws fails the request.
//! Without the flag the server throws "not implemented", as workerd before
//! 2025-09-01.

use std::sync::Arc;

use isolane_engine::{Compat, ExecuteError, Limits, NodeCompat, PoolMode, WorkerBundle};

use crate::support::*;

const SERVER: &str = r#"
import http from 'node:http';
import { httpServerHandler } from 'cloudflare:node';

async function echo(req, res) {
  let body = '';
  for await (const chunk of req) body += chunk;
  res.writeHead(201, { 'content-type': 'text/plain', 'x-method': req.method });
  res.end(`${req.method} ${req.url} ${req.headers['x-test']} ${req.headers.host} ${body}`);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  if (url.pathname === '/echo') {
    echo(req, res);
  } else if (url.pathname === '/pieces') {
    res.setHeader('x-pieces', ['a', 'b']);
    res.statusCode = 202;
    res.write('one,');
    res.write(Buffer.from('two,'));
    setTimeout(() => res.end('three'), 1);
  } else if (url.pathname === '/empty') {
    res.writeHead(204).end();
  } else if (url.pathname === '/throws') {
    throw new Error('listener failed');
  } else {
    res.statusCode = 404;
    res.end('not here');
  }
});
let listening = false;
server.listen(8080, () => { listening = true; });

const handler = httpServerHandler({ port: 8080 });
export default {
  fetch(request) {
    if (new URL(request.url).pathname === '/state') {
      return new Response(JSON.stringify([listening, server.listening, server.address()]));
    }
    return handler.fetch(request);
  },
};
"#;

fn server_worker(id: &str, source: &str, http_server: bool) -> Arc<WorkerBundle> {
    let mut bundle = bundle_with(id, source, Limits::default(), &[]);
    bundle.compat = Compat {
        http_server,
        ..Compat::node(NodeCompat::V2)
    };
    Arc::new(bundle)
}

async fn call(
    engine: &isolane_engine::Engine,
    worker: &Arc<WorkerBundle>,
    request: http::Request<isolane_engine::Body>,
) -> (u16, Vec<(String, String)>, String) {
    let response = engine.execute(0, worker.clone(), request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("x-") || *name == "content-type")
        .map(|(name, value)| (name.to_string(), value.to_str().unwrap().to_owned()))
        .collect();
    let (_, text) = text(Ok(response)).await;
    (status, headers, text)
}

/// A POST to `uri` with `headers` and `body`.
fn post_with(
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> http::Request<isolane_engine::Body> {
    let mut request = http::Request::builder().method("POST").uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request
        .body(isolane_engine::Body::from(body.to_owned()))
        .unwrap()
}

#[tokio::test]
async fn requests_reach_the_listener_and_its_response_answers() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = server_worker("t/http-server", SERVER, true);
    let (status, _, state) = call(&engine, &worker, get("/state")).await;
    assert_eq!(
        (status, state.as_str()),
        (
            200,
            r#"[true,true,{"port":8080,"family":"IPv4","address":"127.0.0.1"}]"#
        )
    );

    let post = post_with(
        "http://w.test/echo?q=1",
        &[("x-test", "yes"), ("host", "w.test")],
        "hello",
    );
    let (status, headers, body) = call(&engine, &worker, post).await;
    assert_eq!(status, 201);
    assert_eq!(
        headers,
        [
            ("content-type".to_owned(), "text/plain".to_owned()),
            ("x-method".to_owned(), "POST".to_owned())
        ]
    );
    assert_eq!(body, "POST /echo?q=1 yes w.test hello");

    let (status, headers, body) = call(&engine, &worker, get("/pieces")).await;
    assert_eq!((status, body.as_str()), (202, "one,two,three"));
    assert_eq!(
        headers,
        [
            ("x-pieces".to_owned(), "a".to_owned()),
            ("x-pieces".to_owned(), "b".to_owned())
        ]
    );
    let (status, _, body) = call(&engine, &worker, get("/empty")).await;
    assert_eq!((status, body.as_str()), (204, ""));
    let (status, _, body) = call(&engine, &worker, get("/nowhere")).await;
    assert_eq!((status, body.as_str()), (404, "not here"));
    // A listener that throws fails the request as a handler that throws.
    let error = engine
        .execute(0, worker.clone(), get("/throws"))
        .await
        .err();
    assert!(
        matches!(&error, Some(ExecuteError::Exception { message }) if message.contains("listener failed")),
        "{error:?}"
    );
    // The Worker goes on answering after a listener threw.
    let (status, _, body) = call(&engine, &worker, get("/nowhere")).await;
    assert_eq!((status, body.as_str()), (404, "not here"));
}

#[tokio::test]
async fn without_the_flag_the_server_is_not_implemented() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let source = "import http from 'node:http'; import https from 'node:https';\nexport default { fetch() { const r = []; \
                  for (const f of [() => http.createServer(), () => new http.Server(), () => new http.ServerResponse({}), () => https.createServer()]) \
                  { try { f(); r.push('made'); } catch (e) { r.push(e.code); } } return new Response(r.join(' ')); } };";
    let (status, out) = run(
        &engine,
        0,
        &server_worker("t/no-server", source, false),
        "/",
    )
    .await;
    assert_eq!(
        (status, out.as_str()),
        (
            200,
            "ERR_METHOD_NOT_IMPLEMENTED ERR_METHOD_NOT_IMPLEMENTED ERR_METHOD_NOT_IMPLEMENTED ERR_METHOD_NOT_IMPLEMENTED"
        )
    );
    // A handler for a port nobody listens on fails the request, saying so.
    let source = "import { httpServerHandler } from 'cloudflare:node';\nexport default httpServerHandler({ port: 9 });";
    let worker = server_worker("t/no-listener", source, true);
    let error = engine.execute(0, worker, get("/")).await.err();
    assert!(
        matches!(&error, Some(ExecuteError::Exception { message }) if message.contains("No HTTP server is listening on port 9")),
        "{error:?}"
    );
}

/// `https.createServer` is node:http's server (TLS is the front end's): its
/// key and certificate options are taken and unused; `httpServerHandler`
/// also takes the listening Server itself.
#[tokio::test]
async fn https_servers_serve_the_same_way() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let source = "import https from 'node:https'; import { httpServerHandler } from 'cloudflare:node';\n\
                  const s = https.createServer({ key: 'k', cert: 'c' }, (req, res) => res.end(`tls ${req.url} ${s instanceof https.Server}`));\n\
                  s.listen(8443);\nexport default httpServerHandler(s);";
    let (status, out) = run(
        &engine,
        0,
        &server_worker("t/https-server", source, true),
        "/x",
    )
    .await;
    assert_eq!((status, out.as_str()), (200, "tls /x true"));
}

/// What Express's body parsers ask of a request before they read it (as
/// on-finished, under body-parser and finalhandler, asks): a request whose
/// `socket` is not readable counts as finished, its body unread (Express
/// then answered 400 to every JSON or form POST). The socket is an
/// EventEmitter (on-finished listens on it), readable while the request is
/// unread, with the addresses Express reads (`req.ip`, `req.protocol`).
#[tokio::test]
async fn requests_look_unfinished_to_body_parsers_until_read() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let source = r#"
import http from 'node:http';
import { httpServerHandler } from 'cloudflare:node';
// on-finished's isFinished for an IncomingMessage.
const finished = (req) => Boolean(req.upgrade || !req.socket || !req.socket.readable || (req.complete && !req.readable));
http.createServer((req, res) => {
  const seen = [finished(req), typeof req.socket.on, req.connection === req.socket];
  const onClose = () => seen.push('closed');
  req.socket.on('close', onClose);
  let body = '';
  req.on('data', (chunk) => { body += chunk; });
  req.on('end', () => {
    req.socket.removeListener('close', onClose);
    seen.push(body, finished(req), req.socket.remoteAddress, req.socket.encrypted, req.socket.localPort);
    res.end(seen.join(' '));
  });
}).listen(8080);
export default httpServerHandler({ port: 8080 });
"#;
    let worker = server_worker("t/http-server-parsers", source, true);
    let post = post_with(
        "http://w.test/json",
        &[
            ("content-type", "application/json"),
            ("content-length", "7"),
        ],
        "{\"a\":1}",
    );
    let (status, _, body) = call(&engine, &worker, post).await;
    assert_eq!(
        (status, body.as_str()),
        (
            200,
            "false function true {\"a\":1} true 127.0.0.1 false 8080"
        )
    );
}
