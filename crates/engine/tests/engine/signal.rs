//! `request.signal` is aborted only when the client goes away before the
//! response is complete: a response sent in full, even streamed and even when
//! its reader leaves at once, leaves it alone, so `ctx.waitUntil` work built
//! from the request (`new Request(url, request)` follows its signal) runs.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use isolane_engine::{Body, Engine, Limits, Outcome, PoolMode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

use crate::support::*;

const DEADLINE: Duration = Duration::from_secs(60);

/// The body the upstream serves with its `Content-Length`: large enough to
/// cross the host in several slices.
const UPSTREAM_BODY: usize = 200 * 1024;

/// A loopback server: `/body` answers `UPSTREAM_BODY` bytes with their
/// length, `/held` declares that length but sends 1 KiB and then nothing,
/// `/gate` answers once `gate` is notified, anything else `after`.
async fn upstream(gate: Arc<Notify>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let gate = gate.clone();
            tokio::spawn(async move {
                let head = read_head(&mut stream).await;
                let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                if path == "/held" {
                    let head =
                        format!("HTTP/1.1 200 OK\r\ncontent-length: {UPSTREAM_BODY}\r\n\r\n");
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(&[b'x'; 1024]).await;
                    return std::future::pending().await;
                }
                let body = match path.as_str() {
                    "/body" => vec![b'x'; UPSTREAM_BODY],
                    "/gate" => {
                        gate.notified().await;
                        b"open".to_vec()
                    }
                    _ => b"after".to_vec(),
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(&body).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

/// Reads a request or response head (up to the blank line); returns it and
/// leaves what followed in the stream unread only when nothing did.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte).await {
            Ok(1) => head.push(byte[0]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&head).into_owned()
}

/// The engine behind a real HTTP/1.1 server (hyper, as `isolane dev`
/// serves it), for one worker on thread 0.
async fn front(engine: Engine, worker: Arc<isolane_engine::WorkerBundle>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let engine = engine.clone();
            let worker = worker.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let engine = engine.clone();
                    let worker = worker.clone();
                    async move {
                        let response = engine
                            .execute(0, worker, request.map(Body::wrap))
                            .await
                            .unwrap_or_else(|error| {
                                // The engine renders no page: its status will do here.
                                let mut page = http::Response::new(Body::empty());
                                *page.status_mut() = error.status();
                                page
                            });
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    format!("127.0.0.1:{}", addr.port())
}

/// A client that sends `method` and reads the head and exactly
/// `Content-Length` body bytes (none for HEAD), then closes the connection
/// at once (as curl does). Returns the status line and the length.
async fn ask_and_leave(addr: &str, method: &str, path: &str) -> (String, usize) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("{method} {path} HTTP/1.1\r\nhost: example.test\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let head = read_head(&mut stream).await;
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or_else(|| panic!("no content-length in {head:?}"));
    let mut body = vec![0_u8; if method == "HEAD" { 0 } else { length }];
    stream.read_exact(&mut body).await.unwrap();
    drop(stream);
    (head.lines().next().unwrap_or("").to_owned(), length)
}

/// `return fetch(url)`: the upstream's body streams through with its
/// `Content-Length`; the client reads it all and leaves at once. The request
/// is complete: its signal stays un-aborted, and a `waitUntil` subrequest
/// made afterwards with `new Request(url, request)` succeeds.
#[tokio::test]
async fn a_complete_streamed_response_leaves_the_signal_alone() {
    proxy_then_wait_until("GET").await;
}

/// A HEAD request answered with a streamed body (here one whose upstream
/// stalls): the answer is the head alone (with its `Content-Length`),
/// complete once sent; the client leaving then is no client going away.
#[tokio::test]
async fn a_head_request_answered_with_a_streamed_body_is_complete() {
    proxy_then_wait_until("HEAD").await;
}

async fn proxy_then_wait_until(method: &str) {
    crate::logs::capture();
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let gate = Arc::new(Notify::new());
    let upstream = upstream(gate.clone()).await;
    let worker = Arc::new(bundle_with(
        &format!("t/proxy-then-wait-{method}"),
        "export default { async fetch(request, env, ctx) {
            const path = new URL(request.url).pathname;
            if (path === '/result') return new Response(globalThis.result ?? 'pending');
            request.signal.addEventListener('abort', () => { globalThis.abortedEvent = true; });
            ctx.waitUntil((async () => {
                await (await fetch(env.UPSTREAM + '/gate')).text();
                const aborted = request.signal.aborted || globalThis.abortedEvent === true;
                try {
                    const after = await fetch(new Request(env.UPSTREAM + '/after', request));
                    globalThis.result = `aborted=${aborted} ${after.status} ${await after.text()}`;
                } catch (e) {
                    globalThis.result = `aborted=${aborted} ${e.name}`;
                }
            })());
            return fetch(env.UPSTREAM + (request.method === 'HEAD' ? '/held' : '/body'));
        } };",
        Limits::default(),
        &[("UPSTREAM", &upstream)],
    ));
    let addr = front(engine.clone(), worker.clone()).await;
    let (status, length) = ask_and_leave(&addr, method, "/").await;
    assert_eq!(
        (status.as_str(), length),
        ("HTTP/1.1 200 OK", UPSTREAM_BODY)
    );
    // The client is gone; the waitUntil work may go on.
    gate.notify_one();
    let deadline = tokio::time::Instant::now() + DEADLINE;
    let mut asked = 0;
    let result = loop {
        let (_, result) = run(&engine, 0, &worker, "/result").await;
        asked += 1;
        if result != "pending" {
            break result;
        }
        let canceled = recorder
            .outcomes
            .lock()
            .unwrap()
            .contains(&Outcome::Canceled);
        assert!(!canceled, "the complete request was canceled");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the waitUntil work never finished"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // A HEAD subrequest has no body.
    let body = if method == "HEAD" { "" } else { "after" };
    assert_eq!(result, format!("aborted=false 200 {body}"));
    // The request itself ended, and ended well (not canceled, not at the
    // wall limit), like each `/result` request.
    while recorder.outcomes.lock().unwrap().len() < asked + 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the request never ended"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let outcomes = recorder.outcomes.lock().unwrap().clone();
    assert!(
        outcomes.iter().all(|o| *o == Outcome::Ok),
        "the complete request did not end well: {outcomes:?}"
    );
    // Nor with an error or a warning on the way (a write to a reader that
    // left, an unhandled rejection).
    let problems: Vec<String> = crate::logs::for_worker(&worker.id)
        .into_iter()
        .filter(|e| e.level <= tracing::Level::WARN)
        .map(|e| format!("{}: {}", e.message, e.fields))
        .collect();
    assert!(problems.is_empty(), "logged: {problems:#?}");
}
