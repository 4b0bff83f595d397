//! `node:http`/`node:https` clients over the Worker's own fetch, against a
//! loopback server this test starts (the engine's egress policy opens only
//! it): status, headers (set-cookie as a list), a streamed body, a written
//! request body; the egress policy and the subrequest limit hold for them
//! as for `fetch`. Each answer is what Node 20 prints for the same calls,
//! but for what workerd does instead (a socket option refused with
//! ERR_OPTION_NOT_IMPLEMENTED; a refused destination fails as fetch fails).

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use isolane_engine::{Compat, EgressConfig, EngineConfig, Limits, NodeCompat, PoolMode};
use tokio::net::TcpListener;

use crate::support::*;

/// Answers 201 with the request's method, path and `x-test` header in
/// headers, two cookies, and `echo:` + the request body; `/big` answers
/// 100 000 bytes.
async fn echo_server() -> SocketAddr {
    let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service =
                    service_fn(|request: http::Request<hyper::body::Incoming>| async move {
                        let method = request.method().to_string();
                        let path = request.uri().to_string();
                        let test = request
                            .headers()
                            .get("x-test")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("-")
                            .to_owned();
                        let body = request.into_body().collect().await.unwrap().to_bytes();
                        let answer = if path == "/big" {
                            Bytes::from(vec![b'x'; 100_000])
                        } else {
                            Bytes::from([b"echo:".as_slice(), &body].concat())
                        };
                        let response = http::Response::builder()
                            .status(201)
                            .header("x-method", method)
                            .header("x-path", path)
                            .header("x-test", test)
                            .header("set-cookie", "a=1")
                            .header("set-cookie", "b=2")
                            .body(Full::new(answer))
                            .unwrap();
                        Ok::<_, std::convert::Infallible>(response)
                    });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// The Worker: `call(start)` runs a request, `start(onResponse)` making
/// it, and resolves to [response, body] or rejects with its error.
const CALL: &str = "import http from 'node:http'; import https from 'node:https'; import { Buffer } from 'node:buffer';
function call(start) {
  return new Promise((resolve, reject) => {
    const req = start((res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve([res, Buffer.concat(chunks)]));
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}";

fn worker(id: &str, body: &str, limits: Limits) -> Arc<isolane_engine::WorkerBundle> {
    let source = format!(
        "{CALL}\nexport default {{ async fetch(request) {{ const base = new URL(request.url).searchParams.get('base'); \
         const r = []; {body} return new Response(r.join(' | ')); }} }};"
    );
    let mut bundle = bundle_with(id, &source, limits, &[]);
    bundle.compat = Compat::node(NodeCompat::V1);
    Arc::new(bundle)
}

/// An engine of one thread whose egress policy opens loopback's 127.0.0.1.
pub fn loopback_engine() -> isolane_engine::Engine {
    engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        egress: EgressConfig {
            allow: vec!["127.0.0.1/32".parse().unwrap()],
            ..EgressConfig::default()
        },
        ..EngineConfig::default()
    })
    .0
}

#[tokio::test]
async fn http_requests_go_through_fetch_as_in_node() {
    let addr = echo_server().await;
    let engine = loopback_engine();
    let body = r#"
        const [a, aBody] = await call((cb) => http.get(`${base}/a?q=1`, cb));
        r.push(a.statusCode, a.statusMessage, a.headers['x-method'], a.headers['x-path'], a.headers['set-cookie'].join(','), aBody.toString(), a.httpVersion, a.rawHeaders.includes('x-method'));
        const port = Number(new URL(base).port);
        const [b, bBody] = await call((cb) => {
          const req = http.request({ hostname: '127.0.0.1', port, path: '/p', method: 'post', headers: { 'X-Test': 'yes', 'content-type': 'text/plain' } }, cb);
          r.push(req.getHeader('x-test'), req.getHeaderNames().join(','));
          req.write('hel');
          req.end(Buffer.from('lo'));
          return req;
        });
        r.push(b.headers['x-method'], b.headers['x-test'], bBody.toString());
        const [c, cBody] = await call((cb) => http.get(new URL(`${base}/big`), cb));
        r.push(c.statusCode, cBody.length);
        try { https.request(base); } catch (e) { r.push(e.code); }
        try { http.request(base, { socketPath: '/x' }); } catch (e) { r.push(e.code); }
        const denied = await call((cb) => http.get('http://10.255.255.1/', cb)).catch((e) => e.name);
        r.push(denied);
        r.push(typeof http.ClientRequest, http.globalAgent.defaultPort, https.globalAgent.defaultPort);
        "#;
    let (status, out) = run(
        &engine,
        0,
        &worker("t/http", body, Limits::default()),
        &format!("/?base=http://{addr}"),
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        out,
        "201 | Created | GET | /a?q=1 | a=1,b=2 | echo: | 1.1 | true | yes | x-test,content-type | \
         POST | yes | echo:hello | 201 | 100000 | ERR_INVALID_PROTOCOL | ERR_OPTION_NOT_IMPLEMENTED | \
         TypeError | function | 80 | 443"
    );
}

/// `new IncomingMessage(socket)` as Node has it: frameworks (Next.js on
/// OpenNext) subclass it to hand a request to Node-style code, with a
/// socket-like object and their own `_read`.
#[tokio::test]
async fn incoming_message_takes_a_socket_as_in_node() {
    let engine = loopback_engine();
    let body = r#"
        class Req extends http.IncomingMessage {
          constructor(body) {
            super({ encrypted: true, remoteAddress: '10.0.0.1', destroyed: true });
            Object.assign(this, { method: 'POST', url: '/x', headers: { a: '1' } });
            this._read = () => { this.push(body); this.push(null); };
          }
        }
        const m = new Req('hi');
        let got = '';
        for await (const chunk of m) got += chunk;
        r.push(m.socket.remoteAddress, String(m.statusCode), m.method, m.url, m.headers.a, got, m instanceof http.IncomingMessage, m.rawHeaders.length);
        "#;
    let (status, out) = run(
        &engine,
        0,
        &worker("t/incoming", body, Limits::default()),
        "/?base=http://127.0.0.1:1",
    )
    .await;
    assert_eq!(status, 200, "{out}");
    assert_eq!(out, "10.0.0.1 | null | POST | /x | 1 | hi | true | 0");
}

/// node:http's requests are the Worker's subrequests: past its limit the
/// request errors as a fetch would.
#[tokio::test]
async fn http_requests_count_against_the_subrequest_limit() {
    let addr = echo_server().await;
    let engine = loopback_engine();
    let body = r#"
        for (let i = 0; i < 3; i++) {
          r.push(await call((cb) => http.get(`${base}/n`, cb)).then(([res]) => res.statusCode, (e) => e.message.includes('subrequests')));
        }
        "#;
    let limits = Limits {
        subrequests: 2,
        ..Limits::default()
    };
    let (status, out) = run(
        &engine,
        0,
        &worker("t/http-limit", body, limits),
        &format!("/?base=http://{addr}"),
    )
    .await;
    assert_eq!((status, out.as_str()), (200, "201 | 201 | true"));
}
