//! A client's WebSocket close, answered as workerd answers it, by the
//! Worker's compatibility date (`web_socket_auto_reply_to_close`, on from
//! 2026-04-07): `isolane dev` beside workerd serving the same Worker at a
//! date before and one after, with the same client (tokio-tungstenite);
//! and the bound on a Worker that never answers, beside a benign client.
#![allow(clippy::unwrap_used)]

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use futures::{SinkExt as _, StreamExt as _};
use isolane_testenv::{wait_until, workerd};
use tokio::net::{TcpSocket, TcpStream};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::{self, Message};

#[path = "support/dev.rs"]
mod support;
use support::{DEADLINE, Dev, free_port};

type Socket = WebSocketStream<TcpStream>;

/// Echoes; its `close` listener says what `readyState` it sees (a send
/// that throws once the runtime has answered), then closes with 4002
/// unless the path is `/silent`. `?half=1` accepts with `{ allowHalfOpen:
/// true }`, `?half=0` with `{ allowHalfOpen: false }`. `GET /watched?tag=`
/// says of the silent socket `?tag=` once it is CLOSED (or 15 s after its
/// close event) its `readyState`, how many events came after that close
/// event, and whether a `send()` threw; 404 until then. (Its close event's
/// timers tell in workerd; isolane ends them with the request, so there the
/// answer looks at the socket itself, which workerd forbids across requests.)
const WORKER: &str = r#"
const watching = new Map();
const report = (w) => {
  let send = 'ok';
  try { w.ws.send('late'); } catch { send = 'threw'; }
  return `state ${w.ws.readyState}, ${w.more} more events, send ${send}`;
};
const watch = async (ws, tag) => {
  const w = { ws, more: 0, line: undefined };
  watching.set(tag, w);
  ws.addEventListener('close', () => w.more++);
  ws.addEventListener('error', () => w.more++);
  for (let i = 0; i < 150 && ws.readyState !== 3; i++) await new Promise((r) => setTimeout(r, 100));
  w.line = report(w);
};
const watched = (tag) => {
  const w = watching.get(tag);
  let line = w?.line;
  try { if (line === undefined && w?.ws.readyState === 3) line = report(w); } catch { /* workerd: another request's */ }
  return new Response(line ?? 'not yet', { status: line === undefined ? 404 : 200 });
};
export default {
  fetch(request, env, ctx) {
    const tag = new URL(request.url).searchParams.get('tag');
    if (request.url.includes('/watched')) return watched(tag);
    if (request.headers.get('upgrade') !== 'websocket') return new Response('a WebSocket, please', { status: 426 });
    const url = new URL(request.url);
    const [client, server] = Object.values(new WebSocketPair());
    const half = url.searchParams.get('half');
    if (half === null) server.accept();
    else server.accept({ allowHalfOpen: half === '1' });
    server.addEventListener('message', (event) => server.send(event.data));
    server.addEventListener('close', (event) => {
      try { server.send(`close ${event.code} seen in state ${server.readyState}`); } catch { /* answered already */ }
      if (url.pathname !== '/silent') server.close(4002, 'worker reply');
      else ctx.waitUntil(watch(server, tag));
    });
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

const BEFORE: &str = "2026-03-01";
const AFTER: &str = "2026-11-01";

/// A socket to `path` from the loopback address `from`.
async fn connect_from(port: u16, from: [u8; 4], path: &str) -> Result<Socket, String> {
    let tcp = TcpSocket::new_v4().map_err(|e| e.to_string())?;
    tcp.bind((Ipv4Addr::from(from), 0).into())
        .map_err(|e| e.to_string())?;
    let tcp = tcp
        .connect((Ipv4Addr::LOCALHOST, port).into())
        .await
        .map_err(|e| e.to_string())?;
    match tokio_tungstenite::client_async(format!("ws://127.0.0.1:{port}{path}"), tcp).await {
        Ok((socket, _)) => Ok(socket),
        Err(tungstenite::Error::Http(response)) => Err(format!("{}", response.status())),
        Err(error) => Err(error.to_string()),
    }
}

async fn echoes(socket: &mut Socket, text: &str) {
    socket.send(Message::text(text)).await.unwrap();
    let echo = tokio::time::timeout(Duration::from_secs(30), socket.next())
        .await
        .expect("an echo in time");
    assert_eq!(echo.unwrap().unwrap(), Message::text(text));
}

fn client_close() -> Message {
    Message::Close(Some(CloseFrame {
        code: CloseCode::from(4001),
        reason: "client bye".into(),
    }))
}

/// What a client that closed with 4001 receives until its connection
/// ends: the texts, then the close frame (`"<code> <reason>"`) or `"no
/// close frame"`; and how long after its close the connection ended.
async fn after_close(mut socket: Socket) -> (Vec<String>, Duration) {
    echoes(&mut socket, "hello").await;
    let closed = Instant::now();
    socket.send(client_close()).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(60), socket.next())
            .await
            .expect("the connection ends within a minute");
        match next {
            Some(Ok(Message::Text(text))) => seen.push(text.to_string()),
            Some(Ok(Message::Close(frame))) => {
                seen.push(frame.map_or("1005".to_owned(), |f| {
                    format!("{} {}", u16::from(f.code), f.reason)
                }));
                return (seen, closed.elapsed());
            }
            Some(Ok(_)) => {}
            Some(Err(_)) | None => {
                seen.push("no close frame".to_owned());
                return (seen, closed.elapsed());
            }
        }
    }
}

/// `isolane dev` serving [`WORKER`] at `date`, once it answers.
async fn dev_at(script: &std::path::Path, date: &str) -> (Dev, u16) {
    let port = free_port().unwrap();
    let port_arg = port.to_string();
    let script = script.to_str().unwrap();
    let dev = Dev::start(&[script, "--port", &port_arg, "--compatibility-date", date]);
    wait_until("isolane dev to accept a WebSocket", DEADLINE, || {
        connect_from(port, [127, 0, 0, 1], "/")
    })
    .await;
    (dev, port)
}

/// What a client that closed receives when the Worker answers: its `close`
/// listener saw CLOSING and sent, then its `close(4002)` is the reply.
fn by_the_worker() -> Vec<String> {
    vec![
        "close 4001 seen in state 2".to_owned(),
        "4002 worker reply".to_owned(),
    ]
}

/// What it receives when the runtime answers at once: its own 4001.
fn by_the_runtime() -> Vec<String> {
    vec!["4001 client bye".to_owned()]
}

/// The same Worker at a date before 2026-04-07 and one after, under
/// `isolane dev` and workerd: before, the `close` listener sees CLOSING,
/// may still send, and its `close(4002)` is the client's reply; after, the
/// runtime has answered with the client's own 4001 and the listener sees
/// CLOSED (its send throws).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_close_is_answered_as_workerd_answers_it_at_each_date() {
    side_by_side(&[
        (BEFORE, "/", by_the_worker()),
        (AFTER, "/", by_the_runtime()),
    ])
    .await;
}

/// `accept({ allowHalfOpen })` decides instead of the date, both ways, as
/// in workerd: `true` leaves the reply to the Worker's `close()` even
/// from 2026-04-07, `false` has the runtime answer at once before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_with_allow_half_open_decides_instead_of_the_date() {
    side_by_side(&[
        (BEFORE, "/?half=1", by_the_worker()),
        (BEFORE, "/?half=0", by_the_runtime()),
        (AFTER, "/?half=1", by_the_worker()),
        (AFTER, "/?half=0", by_the_runtime()),
    ])
    .await;
}

/// Each `(date, path, expected)`: a client of [`WORKER`] at `path` closes,
/// under workerd and under `isolane dev` at `date`; both see `expected`.
async fn side_by_side(cases: &[(&str, &str, Vec<String>)]) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("worker.js");
    std::fs::write(&script, WORKER).unwrap();
    let address = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let (old_port, new_port) = (free_port().unwrap(), free_port().unwrap());
    let services = [
        workerd::Service::module("old", "worker.js", BEFORE, address(old_port)),
        workerd::Service::module("new", "worker.js", AFTER, address(new_port)),
    ];
    let config = workerd::write_config(dir.path(), "workerd.capnp", &services).unwrap();
    let bin = workerd::binary(&support::repo().join("compat"));
    let _workerd = workerd::serve(&bin, &config, &[], &dir.path().join("workerd.log")).unwrap();
    for port in [old_port, new_port] {
        wait_until("workerd to accept a WebSocket", DEADLINE, || {
            connect_from(port, [127, 0, 0, 1], "/")
        })
        .await;
    }
    for (date, workerd_port) in [(BEFORE, old_port), (AFTER, new_port)] {
        let (dev, port) = dev_at(&script, date).await;
        for (_, path, expected) in cases.iter().filter(|c| c.0 == date) {
            let theirs = after_close(
                connect_from(workerd_port, [127, 0, 0, 1], path)
                    .await
                    .unwrap(),
            )
            .await;
            let ours = after_close(connect_from(port, [127, 0, 0, 1], path).await.unwrap()).await;
            println!("{date} {path}: workerd {theirs:?}, isolane dev {ours:?}");
            assert_eq!(&theirs.0, expected, "workerd at {date}, {path}");
            assert_eq!(&ours.0, expected, "isolane dev at {date}, {path}");
        }
        assert!(dev.interrupt().success());
    }
}

/// A Worker that never answers a client's close (before 2026-04-07): the
/// connection ends without a close frame after the front end's bound, and
/// until then each such socket keeps its place in the Worker's budget, so
/// an anonymous client closing sockets holds no more than the budget it
/// could hold open anyway; a benign client on the same thread echoes
/// before, during and after, and gets a place again once the bound has
/// passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_never_answers_holds_a_closed_socket_only_for_the_bound() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("worker.js");
    std::fs::write(&script, WORKER).unwrap();
    let port = free_port().unwrap();
    let port_arg = port.to_string();
    let dev = Dev::start(&[
        script.to_str().unwrap(),
        "--port",
        &port_arg,
        "--compatibility-date",
        BEFORE,
        "--websocket-max-sockets",
        "4",
    ]);
    let mut benign = wait_until("isolane dev to accept a WebSocket", DEADLINE, || {
        connect_from(port, [127, 0, 0, 1], "/")
    })
    .await;
    echoes(&mut benign, "before").await;

    // One silent socket alone: its client's close gets no frame back; the
    // connection ends at the bound.
    let silent = connect_from(port, [127, 0, 0, 9], "/silent").await.unwrap();
    let (seen, ended) = after_close(silent).await;
    assert_eq!(
        seen,
        [
            "close 4001 seen in state 2".to_owned(),
            "no close frame".to_owned()
        ]
    );
    println!("a silent Worker's client was let go {ended:?} after its close");

    // An anonymous client closes three sockets it never reads again: with
    // the benign one they fill the budget of 4 until the bound passes.
    let hostile = [127, 0, 0, 66];
    let mut held = Vec::new();
    for _ in 0..3 {
        // (The silent socket's place goes as its Worker sees it end.)
        let mut socket = wait_until("a place", DEADLINE, || {
            connect_from(port, hostile, "/silent")
        })
        .await;
        socket.send(client_close()).await.unwrap();
        held.push(socket);
    }
    let closed = Instant::now();
    let refused = connect_from(port, [127, 0, 0, 67], "/").await;
    assert_eq!(refused.err().as_deref(), Some("503 Service Unavailable"));
    echoes(&mut benign, "during").await;
    let mut again = wait_until("a place freed by the bound", DEADLINE, || {
        connect_from(port, [127, 0, 0, 67], "/")
    })
    .await;
    println!(
        "the places came back {:?} after the closes",
        closed.elapsed()
    );
    echoes(&mut again, "after").await;
    echoes(&mut benign, "after").await;
    for mut socket in held {
        loop {
            let next = tokio::time::timeout(Duration::from_secs(30), socket.next())
                .await
                .expect("the connection ended");
            match next {
                Some(Ok(Message::Close(frame))) => {
                    panic!("a close frame for a Worker that never answered: {frame:?}")
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => break,
            }
        }
    }
    assert!(dev.interrupt().success());
}

/// The connection of a socket that awaits the Worker's reply ends (the
/// front end's bound, or the client leaves): the Worker's socket is CLOSED
/// then, as the WHATWG standard has it once the connection is closed, with
/// no second close event and a `send()` that is dropped without throwing,
/// as in workerd. workerd (no bound of its own) leaves such a socket CLOSING
/// when its client leaves: the one difference, documented.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_whose_connection_ended_before_the_reply_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("worker.js");
    std::fs::write(&script, WORKER).unwrap();
    let workerd_port = free_port().unwrap();
    let address = SocketAddr::from(([127, 0, 0, 1], workerd_port));
    let services = [workerd::Service::module(
        "old",
        "worker.js",
        BEFORE,
        address,
    )];
    let config = workerd::write_config(dir.path(), "workerd.capnp", &services).unwrap();
    let bin = workerd::binary(&support::repo().join("compat"));
    let _workerd = workerd::serve(&bin, &config, &[], &dir.path().join("workerd.log")).unwrap();
    wait_until("workerd to accept a WebSocket", DEADLINE, || {
        connect_from(workerd_port, [127, 0, 0, 1], "/")
    })
    .await;
    let (dev, port) = dev_at(&script, BEFORE).await;

    // A client that closes, reads the Worker's answer, and leaves.
    let leaves = |port: u16, tag: &'static str| async move {
        let path = format!("/silent?tag={tag}");
        let mut socket = connect_from(port, [127, 0, 0, 1], &path).await.unwrap();
        echoes(&mut socket, "hello").await;
        socket.send(client_close()).await.unwrap();
        let seen = socket.next().await.unwrap().unwrap();
        assert_eq!(seen, Message::text("close 4001 seen in state 2"));
    };
    // A client that closes and stays until the front end lets it go.
    let stays = after_close(
        connect_from(port, [127, 0, 0, 1], "/silent?tag=bound")
            .await
            .unwrap(),
    );
    let ((seen, ended), (), ()) =
        tokio::join!(stays, leaves(port, "left"), leaves(workerd_port, "left"));
    assert_eq!(seen, ["close 4001 seen in state 2", "no close frame"]);
    println!("the client was let go {ended:?} after its close");

    let client = support::client();
    let watched = |port: u16, tag: &'static str| {
        let client = client.clone();
        async move {
            match support::request(&client, port, "localhost", &format!("/watched?tag={tag}"))
                .await?
            {
                (200, line) => Ok(line),
                (status, body) => Err(format!("{status} {body}")),
            }
        }
    };
    let ours_bound = wait_until("the Worker's watch of the bound", DEADLINE, || {
        watched(port, "bound")
    })
    .await;
    let ours_left = wait_until(
        "the Worker's watch of the client that left",
        DEADLINE,
        || watched(port, "left"),
    )
    .await;
    let theirs = wait_until("workerd's watch", DEADLINE, || {
        watched(workerd_port, "left")
    })
    .await;
    println!("isolane dev: bound {ours_bound:?}, left {ours_left:?}; workerd: left {theirs:?}");
    assert_eq!(ours_bound, "state 3, 0 more events, send ok");
    assert_eq!(ours_left, "state 3, 0 more events, send ok");
    assert_eq!(
        theirs, "state 2, 0 more events, send ok",
        "workerd leaves it CLOSING"
    );
    assert!(dev.interrupt().success());
}

/// A Durable Object that accepts hibernatable sockets and echoes; its
/// `webSocketClose` says what `readyState` it sees, then closes with 4002 unless
/// the socket was opened at `/silent`.
const ROOM_JS: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Room extends DurableObject {
  fetch(request) {
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    server.serializeAttachment({ silent: new URL(request.url).pathname === '/silent' });
    return new Response(null, { status: 101, webSocket: client });
  }
  webSocketMessage(ws, message) { ws.send(message); }
  webSocketClose(ws, code) {
    ws.send(`close ${code} seen in state ${ws.readyState}`);
    if (!ws.deserializeAttachment().silent) ws.close(4002, 'object reply');
  }
}
export default {
  fetch(request, env) { return env.ROOM.getByName(new URL(request.url).pathname).fetch(request); },
};
"#;

/// A wrangler project of `room` (a Durable Object class `Room` bound as
/// `ROOM`, [`ROOM_JS`] or another) at `date`, in folder `dir`.
fn room_project(dir: &std::path::Path, date: &str, room: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("room.js"), room).unwrap();
    let toml = format!(
        "name = \"room\"\nmain = \"room.js\"\ncompatibility_date = \"{date}\"\n\
         durable_objects.bindings = [{{ name = \"ROOM\", class_name = \"Room\" }}]\n\
         [[migrations]]\ntag = \"v1\"\nnew_classes = [\"Room\"]\n"
    );
    std::fs::write(dir.join("wrangler.toml"), toml).unwrap();
}

/// Hibernatable sockets (`ctx.acceptWebSocket`) are never answered by the
/// runtime, at either date, as in workerd: `webSocketClose` sees CLOSING,
/// may still send, and its `close(4002)` is
/// the client's reply; an object that does not answer has its client let
/// go without a close frame at the bound (workerd: after about 10 s too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hibernatable_sockets_close_is_answered_by_its_object_at_every_date() {
    let dir = tempfile::tempdir().unwrap();
    let address = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let mut workerd_services = Vec::new();
    let mut devs = Vec::new();
    let mut ports = Vec::new();
    for (name, date) in [("old", BEFORE), ("new", AFTER)] {
        let project = dir.path().join(name);
        room_project(&project, date, ROOM_JS);
        let port = free_port().unwrap();
        let dev = Dev::start_in(&["--port", &port.to_string()], Some(&project));
        let workerd_port = free_port().unwrap();
        workerd_services.push(workerd::Service {
            durable_objects: vec![("ROOM".to_owned(), "Room".to_owned())],
            ..workerd::Service::module(
                name,
                &format!("{name}/room.js"),
                date,
                address(workerd_port),
            )
        });
        devs.push(dev);
        ports.push((date, "isolane dev", port));
        ports.push((date, "workerd", workerd_port));
    }
    let config = workerd::write_config(dir.path(), "workerd.capnp", &workerd_services).unwrap();
    let bin = workerd::binary(&support::repo().join("compat"));
    let _workerd = workerd::serve(&bin, &config, &[], &dir.path().join("workerd.log")).unwrap();
    for (_, _, port) in &ports {
        wait_until("a Durable Object to accept a WebSocket", DEADLINE, || {
            connect_from(*port, [127, 0, 0, 1], "/ready")
        })
        .await;
    }
    let runs = ports.iter().flat_map(|&(date, runtime, port)| {
        ["/a", "/silent"].map(|path| async move {
            let socket = connect_from(port, [127, 0, 0, 1], path).await.unwrap();
            (date, runtime, path, after_close(socket).await)
        })
    });
    for (date, runtime, path, (seen, ended)) in futures::future::join_all(runs).await {
        println!("{date} {runtime} {path}: {seen:?} after {ended:?}");
        let last = if path == "/a" {
            "4002 object reply"
        } else {
            "no close frame"
        };
        assert_eq!(
            seen,
            ["close 4001 seen in state 2", last],
            "{runtime} at {date}, {path}"
        );
    }
    for dev in devs {
        assert!(dev.interrupt().success());
    }
}

/// workerd serving `worker` (written to `dir`) at [`BEFORE`] and [`AFTER`]:
/// the script's path, the process, and its two ports.
fn workerd_at_both_dates(
    dir: &std::path::Path,
    worker: &str,
) -> (std::path::PathBuf, isolane_testenv::Process, u16, u16) {
    let script = dir.join("worker.js");
    std::fs::write(&script, worker).unwrap();
    let address = |port| SocketAddr::from(([127, 0, 0, 1], port));
    let (old_port, new_port) = (free_port().unwrap(), free_port().unwrap());
    let services = [
        workerd::Service::module("old", "worker.js", BEFORE, address(old_port)),
        workerd::Service::module("new", "worker.js", AFTER, address(new_port)),
    ];
    let config = workerd::write_config(dir, "workerd.capnp", &services).unwrap();
    let bin = workerd::binary(&support::repo().join("compat"));
    let process = workerd::serve(&bin, &config, &[], &dir.join("workerd.log")).unwrap();
    (script, process, old_port, new_port)
}

/// Each message and the close hand `ctx.waitUntil` a chain of timers that
/// notes them in `seen` (`GET /seen`, sorted) once it has fired; the close
/// listener answers with `close(4002)` first (the reply before 2026-04-07, a
/// no-op after), then hands its work on, and sets a timer of its own that
/// fires while that work runs (without `waitUntil` work the request's
/// timers end with the socket, in workerd as here).
const LATE_WORKER: &str = r#"
const seen = [];
const later = (ms) => new Promise((r) => setTimeout(r, ms));
export default {
  fetch(request, env, ctx) {
    if (new URL(request.url).pathname === '/seen') return new Response(seen.sort().join(', '), { status: seen.length === 3 ? 200 : 404 });
    if (request.headers.get('upgrade') !== 'websocket') return new Response('a WebSocket, please', { status: 426 });
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    const work = (what) => ctx.waitUntil(later(150).then(() => later(150)).then(() => seen.push(what)));
    server.addEventListener('message', (event) => {
      work(`message ${event.data}`);
      server.send(event.data);
    });
    server.addEventListener('close', (event) => {
      server.close(4002, 'worker reply');
      work(`close ${event.code}`);
      setTimeout(() => seen.push(`timer ${event.code}`), 100);
    });
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

/// What a WebSocket's events hand to `ctx.waitUntil` runs to its end after
/// the socket has gone, its timers firing, as in workerd: at both dates,
/// the work of a message and of the client's close is done on both
/// runtimes once the client has its reply and has left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_events_wait_until_runs_to_its_end_as_in_workerd() {
    let dir = tempfile::tempdir().unwrap();
    let (script, _workerd, old_port, new_port) = workerd_at_both_dates(dir.path(), LATE_WORKER);
    let client = support::client();
    // Ready when it answers HTTP (a WebSocket would leave work behind).
    let answers = |port| support::request(&client, port, "localhost", "/seen");
    for (date, workerd_port, reply) in [
        (BEFORE, old_port, "4002 worker reply"),
        (AFTER, new_port, "4001 client bye"),
    ] {
        let port = free_port().unwrap();
        let (script, port_arg) = (script.to_str().unwrap(), port.to_string());
        let dev = Dev::start(&[script, "--port", &port_arg, "--compatibility-date", date]);
        for (runtime, port) in [("workerd", workerd_port), ("isolane dev", port)] {
            wait_until("an answer", DEADLINE, || answers(port)).await;
            let socket = connect_from(port, [127, 0, 0, 1], "/").await.unwrap();
            let (seen, _) = after_close(socket).await;
            assert_eq!(seen, [reply], "{runtime} at {date}");
            let done = wait_until("the events' waitUntil work", DEADLINE, || async {
                match answers(port).await? {
                    (200, seen) => Ok(seen),
                    (status, seen) => Err(format!("{status} {seen}")),
                }
            })
            .await;
            println!("{runtime} at {date}: {done}");
            assert_eq!(
                done, "close 4001, message hello, timer 4001",
                "{runtime} at {date}"
            );
        }
        assert!(dev.interrupt().success());
    }
}

/// `GET /pair?…`: the two ends of a `new WebSocketPair()` in the Worker, `a`
/// and `b`, both accepted (`b` with `?b=1` `{ allowHalfOpen: true }`, `?b=0`
/// `false`): `a` sends and closes with 4001; `b`'s close listener sends and
/// answers with `close(4002)`, or (`?reply=0`) `b` closes with 4003 a few
/// timers later. The answer: what each end saw, in order.
const PAIR_WORKER: &str = r#"
const tick = () => new Promise((r) => setTimeout(r, 30));
export default {
  async fetch(request) {
    const q = new URL(request.url).searchParams;
    const [a, b] = Object.values(new WebSocketPair());
    const log = [];
    for (const [name, ws] of [['a', a], ['b', b]]) {
      ws.addEventListener('close', (e) => {
        log.push(`${name} close ${e.code} ${e.reason} ${e.wasClean} state ${ws.readyState}`);
        try { ws.send('after'); log.push(`${name} send ok`); } catch (err) { log.push(`${name} send threw ${err.message}`); }
        if (name === 'b' && q.get('reply') !== '0') { ws.close(4002, 'b reply'); log.push(`b closed, state ${ws.readyState}`); }
      });
      ws.addEventListener('message', (e) => log.push(`${name} message ${e.data} state ${ws.readyState}`));
      ws.addEventListener('error', (e) => log.push(`${name} error ${e.message}`));
    }
    a.accept();
    b.accept(q.has('b') ? { allowHalfOpen: q.get('b') === '1' } : undefined);
    a.send('hi');
    a.close(4001, 'a bye');
    log.push(`a closed, a ${a.readyState} b ${b.readyState}`);
    for (let i = 0; i < 3; i++) await tick();
    if (q.get('reply') === '0') { b.close(4003, 'b late'); log.push(`b late close, a ${a.readyState} b ${b.readyState}`); }
    for (let i = 0; i < 3; i++) await tick();
    log.push(`end a ${a.readyState} b ${b.readyState}`);
    return new Response(log.join('\n'));
  },
};
"#;

/// The two ends of a `WebSocketPair` inside one Worker answer each other's
/// close as a client's close is answered: by the compatibility date
/// (before 2026-04-07 the receiving end is CLOSING and its `close()` is the
/// reply; from it the runtime answers at once with the same code and
/// reason), or by `accept({ allowHalfOpen })`. Compared line by line with
/// workerd at both dates. One difference, documented: workerd fires an
/// `error` event ("Network connection lost") on the receiving end when its
/// reply was not made inside its `close` listener; isolane fires none
/// after a clean close.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pairs_ends_in_one_worker_answer_each_others_close_as_in_workerd() {
    let dir = tempfile::tempdir().unwrap();
    let (script, _workerd, old_port, new_port) = workerd_at_both_dates(dir.path(), PAIR_WORKER);
    let client = support::client();
    let get = |port, path: &'static str| {
        let client = client.clone();
        async move { support::request(&client, port, "localhost", path).await }
    };
    for (date, workerd_port) in [(BEFORE, old_port), (AFTER, new_port)] {
        let port = free_port().unwrap();
        let (script, port_arg) = (script.to_str().unwrap(), port.to_string());
        let dev = Dev::start(&[script, "--port", &port_arg, "--compatibility-date", date]);
        for path in ["/", "/?b=1", "/?b=0", "/?reply=0"] {
            let (_, theirs) = wait_until("workerd", DEADLINE, || get(workerd_port, path)).await;
            let (_, ours) = wait_until("isolane dev", DEADLINE, || get(port, path)).await;
            println!("{date} {path}\n  workerd: {theirs:?}\n  isolane: {ours:?}");
            let (errors, theirs): (Vec<&str>, Vec<&str>) =
                theirs.lines().partition(|l| l.starts_with("b error"));
            assert_eq!(ours.lines().collect::<Vec<_>>(), theirs, "{date} {path}");
            let replied_late =
                path == "/?reply=0" || path == "/?b=0" || (date == AFTER && path == "/");
            assert_eq!(
                errors.len(),
                usize::from(replied_late),
                "{date} {path}: {errors:?}"
            );
        }
        assert!(dev.interrupt().success());
    }
}

/// A Durable Object per path (`?count`: how many sockets it lists) whose
/// `webSocketClose` says what `getWebSockets()` lists, at once and after a
/// microtask, then closes with 4002.
const LISTING_ROOM_JS: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Room extends DurableObject {
  fetch(request) {
    if (new URL(request.url).searchParams.has('count')) return new Response(String(this.ctx.getWebSockets().length));
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    return new Response(null, { status: 101, webSocket: client });
  }
  webSocketMessage(ws, message) { ws.send(message); }
  async webSocketClose(ws, code) {
    const all = this.ctx.getWebSockets();
    ws.send(`close ${code}: ${all.length} listed, its own ${all.includes(ws)}`);
    await null;
    ws.send(`after a microtask: ${this.ctx.getWebSockets().length} listed`);
    ws.close(4002, 'object reply');
  }
}
export default {
  fetch(request, env) { return env.ROOM.getByName(new URL(request.url).pathname).fetch(request); },
};
"#;

/// A hibernatable socket whose client closed is still listed by
/// `getWebSockets()` in its object's `webSocketClose` (the same object
/// the handler got, beside the neighbour that stays), as in workerd; once
/// the handler is done only the neighbour is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closing_hibernatable_socket_is_listed_in_its_close_handler_as_in_workerd() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("room");
    room_project(&project, AFTER, LISTING_ROOM_JS);
    let port = free_port().unwrap();
    let dev = Dev::start_in(&["--port", &port.to_string()], Some(&project));
    let workerd_port = free_port().unwrap();
    let address = SocketAddr::from(([127, 0, 0, 1], workerd_port));
    let service = workerd::Service {
        durable_objects: vec![("ROOM".to_owned(), "Room".to_owned())],
        ..workerd::Service::module("room", "room/room.js", AFTER, address)
    };
    let config = workerd::write_config(dir.path(), "workerd.capnp", &[service]).unwrap();
    let bin = workerd::binary(&support::repo().join("compat"));
    let _workerd = workerd::serve(&bin, &config, &[], &dir.path().join("workerd.log")).unwrap();
    let client = support::client();
    for (runtime, port) in [("workerd", workerd_port), ("isolane dev", port)] {
        wait_until("a Durable Object to accept a WebSocket", DEADLINE, || {
            connect_from(port, [127, 0, 0, 1], "/ready")
        })
        .await;
        let mut neighbour = connect_from(port, [127, 0, 0, 1], "/r").await.unwrap();
        echoes(&mut neighbour, "here").await;
        let socket = connect_from(port, [127, 0, 0, 1], "/r").await.unwrap();
        let (seen, _) = after_close(socket).await;
        println!("{runtime}: {seen:?}");
        assert_eq!(
            seen,
            [
                "close 4001: 2 listed, its own true",
                "after a microtask: 2 listed",
                "4002 object reply"
            ],
            "{runtime}"
        );
        wait_until("only the neighbour listed", DEADLINE, || async {
            match support::request(&client, port, "localhost", "/r?count").await? {
                (200, count) if count == "1" => Ok(()),
                (status, count) => Err(format!("{status} {count}")),
            }
        })
        .await;
        echoes(&mut neighbour, "still here").await;
    }
    assert!(dev.interrupt().success());
}

/// `node:fs`: each request writes `/tmp/<name>` and opens a WebSocket whose
/// messages answer with what that file holds, and hand `ctx.waitUntil` a
/// read of it (`late`); `GET /peek?name=` (another request) says what it
/// sees of the file and the last `late` read of it.
const TMP_WORKER: &str = r#"
import fs from 'node:fs';
const late = new Map();
const read = (name) => { try { return fs.readFileSync(`/tmp/${name}`, 'utf8'); } catch (e) { return e.code; } };
export default {
  fetch(request, env, ctx) {
    const url = new URL(request.url);
    const name = url.searchParams.get('name');
    if (url.pathname === '/peek') return new Response(`${read(name)}, late ${late.get(name)}`);
    if (request.headers.get('upgrade') !== 'websocket') return new Response('a WebSocket, please', { status: 426 });
    fs.writeFileSync(`/tmp/${name}`, `by ${name}`);
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('message', (event) => {
      server.send(`${event.data}: ${read(name)}`);
      ctx.waitUntil(new Promise((r) => setTimeout(r, 50)).then(() => late.set(name, read(name))));
    });
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

/// A request's `/tmp` lives as long as the request, its WebSocket's events
/// and their `waitUntil` work included, as in workerd; another request
/// never sees it, neither while that socket is open nor after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requests_tmp_lives_through_its_websocket_as_in_workerd() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("worker.js");
    std::fs::write(&script, TMP_WORKER).unwrap();
    let workerd_port = free_port().unwrap();
    let address = SocketAddr::from(([127, 0, 0, 1], workerd_port));
    let service = workerd::Service {
        compatibility_flags: vec!["nodejs_compat".to_owned()],
        ..workerd::Service::module("tmp", "worker.js", AFTER, address)
    };
    let config = workerd::write_config(dir.path(), "workerd.capnp", &[service]).unwrap();
    let bin = workerd::binary(&support::repo().join("compat"));
    let _workerd = workerd::serve(&bin, &config, &[], &dir.path().join("workerd.log")).unwrap();
    let port = free_port().unwrap();
    let (script, port_arg) = (script.to_str().unwrap(), port.to_string());
    let flags = [
        "--compatibility-date",
        AFTER,
        "--compatibility-flags",
        "nodejs_compat",
    ];
    let dev = Dev::start(&[&[script, "--port", &port_arg][..], &flags[..]].concat());
    let client = support::client();
    let peek = |port, name: &'static str| {
        let client = &client;
        async move {
            let path = format!("/peek?name={name}");
            support::request(client, port, "localhost", &path).await
        }
    };
    for (runtime, port) in [("workerd", workerd_port), ("isolane dev", port)] {
        wait_until("an answer", DEADLINE, || peek(port, "none")).await;
        let mut socket = connect_from(port, [127, 0, 0, 1], "/?name=a")
            .await
            .unwrap();
        socket.send(Message::text("hello")).await.unwrap();
        let echo = tokio::time::timeout(Duration::from_secs(30), socket.next()).await;
        let echo = echo.expect("an answer in time").unwrap().unwrap();
        assert_eq!(echo, Message::text("hello: by a"), "{runtime}");
        let seen = wait_until("the message's waitUntil read", DEADLINE, || async {
            match peek(port, "a").await? {
                (200, seen) if !seen.ends_with("undefined") => Ok(seen),
                (status, seen) => Err(format!("{status} {seen}")),
            }
        })
        .await;
        assert_eq!(
            seen, "ENOENT, late by a",
            "{runtime}: while the socket is open"
        );
        socket.send(client_close()).await.unwrap();
        let rest: Vec<_> = tokio::time::timeout(Duration::from_secs(60), socket.collect())
            .await
            .expect("the connection ends within a minute");
        println!("{runtime}: {seen}; then {rest:?}");
        let after = peek(port, "a").await.unwrap();
        assert_eq!(after, (200, "ENOENT, late by a".to_owned()), "{runtime}");
    }
    assert!(dev.interrupt().success());
}
