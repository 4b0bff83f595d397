//! A busy Worker's connections spread over `isolane dev`'s engine threads
//! (the router's `thread_spread.rs`): one or two connections are served
//! on the Worker's home thread; more go to the other threads too, and each
//! request runs on the thread its connection is served on, in that
//! thread's own isolate of the Worker. Each isolate answers with an id
//! it drew at its start, so the answers say which isolate ran them.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use isolane_testenv::wait_until;
use tokio::net::TcpStream;

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, free_port};

/// A Worker whose every isolate answers with its own id; at `/long`
/// after a turn of tens of milliseconds of CPU.
const WORKER: &str = "const id = crypto.randomUUID();\n\
    export default { fetch(request) {\n\
      if (new URL(request.url).pathname === '/long') {\n\
        let x = 0; for (let i = 0; i < 30000000; i++) x = (x + i) | 0;\n\
        return new Response(id, { headers: { 'x-sum': String(x) } });\n\
      }\n\
      return new Response(id);\n\
    } };\n";

/// One HTTP/1.1 keep-alive connection of its own.
struct Connection {
    send: SendRequest<Empty<Bytes>>,
}

impl Connection {
    async fn open(port: u16) -> Self {
        Self::try_open(port).await.unwrap()
    }

    async fn try_open(port: u16) -> Result<Self, String> {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .map_err(|e| e.to_string())?;
        let (send, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        Ok(Self { send })
    }

    /// The answer to a request for `path` on this connection (the id of
    /// the isolate that ran it), the connection closed after it if `close`.
    async fn ask(&mut self, path: &str, close: bool) -> Result<String, String> {
        self.send.ready().await.map_err(|e| e.to_string())?;
        let mut request = http::Request::get(path).header(http::header::HOST, "localhost");
        if close {
            request = request.header(http::header::CONNECTION, "close");
        }
        let response = self
            .send
            .send_request(request.body(Empty::new()).unwrap())
            .await
            .map_err(|e| e.to_string())?;
        if response.status() != 200 {
            return Err(format!("status {}", response.status()));
        }
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?;
        String::from_utf8(body.to_bytes().to_vec()).map_err(|e| e.to_string())
    }

    /// The id of the isolate that answered a request on this connection.
    async fn isolate(&mut self) -> String {
        self.ask("/", false).await.unwrap()
    }

    /// The one isolate that answered `n` requests on this connection.
    async fn isolate_of(&mut self, n: usize) -> String {
        self.one_isolate(n).await.unwrap()
    }

    /// The one isolate that answered `n` requests on this connection, or
    /// the isolates that did when there were several: a request read on
    /// another thread runs at home while its Worker counts as running long
    /// turns (250 ms after one), and a cold turn of a debug build on a
    /// loaded machine can be long.
    async fn one_isolate(&mut self, n: usize) -> Result<String, String> {
        let mut seen = BTreeSet::new();
        for _ in 0..n {
            seen.insert(self.isolate().await);
        }
        match Vec::from_iter(seen).as_slice() {
            [only] => Ok(only.clone()),
            seen => Err(format!("one connection, several isolates: {seen:?}")),
        }
    }
}

/// Whether `isolates` (the isolates that answered six connections opened
/// after two at `home`) are spread: all at home or on one other thread,
/// three to six of them on the other.
fn spread(home: &str, isolates: &[String]) -> Result<(), String> {
    let Some(other) = isolates.iter().find(|id| *id != home) else {
        return Err(format!("nothing spread: {isolates:?}"));
    };
    if !isolates.iter().all(|id| id == home || id == other) {
        return Err(format!("more than two isolates: {isolates:?}"));
    }
    let on_other = isolates.iter().filter(|id| *id == other).count();
    if !(3..=6).contains(&on_other) {
        return Err(format!("{on_other} of 6 on the other thread: {isolates:?}"));
    }
    Ok(())
}

/// `isolane dev --threads 2` serving [`WORKER`], once it answers (on
/// connections it closes, so that none of them is open when the test's
/// own connections are steered): its folder, the server, the port.
async fn serving() -> (tempfile::TempDir, Dev, u16) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("worker.js");
    std::fs::write(&script, WORKER).unwrap();
    let port = free_port().unwrap();
    let dev = Dev::start(&[
        script.to_str().unwrap(),
        "--port",
        &port.to_string(),
        "--threads",
        "2",
    ]);
    wait_until("isolane dev to answer", DEADLINE, || async {
        Connection::try_open(port).await?.ask("/", true).await
    })
    .await;
    (dir, dev, port)
}

#[tokio::test]
async fn a_busy_worker_s_connections_spread_over_the_engine_threads() {
    let (_dir, dev, port) = serving().await;

    // One or two connections: both on the home thread, one isolate.
    let mut first = Connection::open(port).await;
    let mut second = Connection::open(port).await;
    let home = first.isolate_of(10).await;
    assert_eq!(second.isolate_of(10).await, home);

    // Six more: spread, each answered by its own thread's isolate, so two
    // isolates in all, each serving some of the connections. A turn of the
    // Worker that ran long keeps it home for a quarter of a second (the
    // second test): a cold turn of a debug build on a loaded machine can, so
    // the six are opened afresh until they spread, within the deadline.
    let home_ref = &home;
    let more = wait_until(
        "six more connections to spread over both threads",
        DEADLINE,
        move || async move {
            let mut more = Vec::new();
            for _ in 0..6 {
                more.push(Connection::open(port).await);
            }
            let mut isolates = Vec::new();
            for connection in &mut more {
                isolates.push(connection.one_isolate(10).await?);
            }
            spread(home_ref, &isolates).map(|()| more)
        },
    )
    .await;
    // The first two are still served at home.
    assert_eq!(first.isolate_of(5).await, home);

    // Once the extra connections close, a new one goes home again.
    drop(more);
    drop(second);
    let home = &home;
    wait_until(
        "a new connection to be served at home",
        DEADLINE,
        move || async move {
            let mut again = Connection::open(port).await;
            again.one_isolate(3).await.is_ok_and(|id| id == *home)
        },
    )
    .await;
    assert!(dev.interrupt().success());
}

/// A Worker that runs long turns is not spread: its requests run on its
/// home thread whatever thread read them, so its long turns leave the
/// other thread to its neighbours (the engine's `fairness.rs`).
#[tokio::test]
async fn a_worker_running_long_turns_is_not_spread() {
    let (_dir, dev, port) = serving().await;
    let mut long = Connection::open(port).await;
    let home = long.ask("/long", false).await.unwrap();
    // Long turns one after another on the home thread while the others ask.
    let stop = tokio_util::sync::CancellationToken::new();
    let turns = tokio::spawn({
        let stop = stop.clone();
        async move {
            while !stop.is_cancelled() {
                long.ask("/long", false).await.unwrap();
            }
        }
    });
    let mut more = Vec::new();
    for _ in 0..6 {
        more.push(Connection::open(port).await);
    }
    for connection in &mut more {
        assert_eq!(connection.isolate_of(3).await, home);
    }
    stop.cancel();
    turns.await.unwrap();
    assert!(dev.interrupt().success());
}
