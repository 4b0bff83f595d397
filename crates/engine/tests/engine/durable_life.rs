//! Durable Objects leaving memory and coming back: idle instances evicted
//! (their memory returns: a Worker touching more objects than fit its
//! memory limit at once goes on), made again from storage; hibernatable
//! WebSockets (`ctx.acceptWebSocket`) that outlive their object's eviction,
//! wake it with their attachments and tags, and are answered by the
//! auto-response without waking it; the cap on an object's sockets beside
//! a neighbour that echoes throughout.

use std::sync::Arc;
use std::time::{Duration, Instant};

use isolane_engine::{
    CloseFrame, Engine, EngineConfig, ExecuteError, PoolMode, SocketEnd, SocketMessage,
    WebSocketConfig, WorkerBundle,
};
use isolane_storage::Store;

use crate::support::*;

/// The sweep runs every 300 ms here: an idle object goes within 600 ms.
const IDLE: Duration = Duration::from_millis(300);

fn life_engine(store: Store, websocket: WebSocketConfig) -> Engine {
    engine_on(1, store, websocket)
}

fn engine_on(threads: usize, store: Store, websocket: WebSocketConfig) -> Engine {
    engine_with(EngineConfig {
        threads,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        store: Some(store),
        object_idle: IDLE,
        websocket,
        ..EngineConfig::default()
    })
    .0
}

fn object_bundle(
    id: &str,
    class: &str,
    script: &str,
    limits: isolane_engine::Limits,
) -> Arc<WorkerBundle> {
    let mut bundle = bundle_with(id, script, limits, &[]);
    bundle
        .durable_objects
        .insert("OBJ".to_owned(), class.to_owned());
    Arc::new(bundle)
}

/// Objects of 2 MiB each (a heap array), counting in storage; `fresh` says
/// whether the instance was made for this call.
const BALLAST: &str = r#"
import { DurableObject } from 'cloudflare:workers';
let constructs = 0;
export class Heavy extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    constructs += 1;
    this.fresh = true;
    this.ballast = new Array(262144).fill(1.5);
  }
  async inc() {
    const n = ((await this.ctx.storage.get('n')) ?? 0) + 1;
    this.ctx.storage.put('n', n);
    const fresh = this.fresh;
    this.fresh = false;
    return { n, fresh };
  }
  async fetch(request) {
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('message', (e) => server.send(e.data));
    return new Response(null, { status: 101, webSocket: client });
  }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const stub = env.OBJ.getByName(url.searchParams.get('name'));
    if (request.headers.get('upgrade') === 'websocket') return stub.fetch(request);
    if (url.pathname === '/constructs') return new Response(String(constructs));
    return Response.json(await stub.inc());
  },
};
"#;

async fn inc(engine: &Engine, worker: &Arc<WorkerBundle>, name: &str) -> (u64, bool) {
    let (status, body) = run(engine, 0, worker, &format!("/inc?name={name}")).await;
    assert_eq!(status, 200, "{body}");
    let value: serde_json::Value = serde_json::from_str(&body).unwrap();
    (
        value["n"].as_u64().unwrap(),
        value["fresh"].as_bool().unwrap(),
    )
}

/// Waits until object `name` was evicted: a call then makes it again. The
/// call touches it, so the wait doubles each time (the sweep takes at most
/// twice `IDLE` after the last touch).
async fn wait_evicted(engine: &Engine, worker: &Arc<WorkerBundle>, name: &str) -> u64 {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut pause = IDLE * 3;
    loop {
        tokio::time::sleep(pause).await;
        let (n, fresh) = inc(engine, worker, name).await;
        if fresh {
            return n;
        }
        assert!(Instant::now() < deadline, "{name} was never evicted");
        pause *= 2;
    }
}

#[tokio::test]
async fn idle_objects_leave_memory_and_come_back_from_storage() {
    let dir = tempfile::tempdir().unwrap();
    let engine = life_engine(
        Store::open_sqlite(dir.path()).unwrap(),
        WebSocketConfig::default(),
    );
    let limits = isolane_engine::Limits {
        wall_ms: 60_000,
        cpu_ms: 30_000,
        ..memory_limits(48)
    };
    let worker = object_bundle("life/heavy", "Heavy", BALLAST, limits);
    // Four batches of ten 2 MiB objects: 80 MiB in all, past the Worker's
    // 48 MiB unless each batch leaves memory before the next comes.
    for batch in 0..4 {
        for i in 0..10 {
            assert_eq!(
                inc(&engine, &worker, &format!("b{batch}-{i}")).await,
                (1, true)
            );
        }
        // The batch's last object went idle last: once it was evicted,
        // the whole batch was.
        assert!(wait_evicted(&engine, &worker, &format!("b{batch}-9")).await >= 2);
    }
    // Made again from storage: each count goes on where it was.
    for i in 0..9 {
        assert_eq!(inc(&engine, &worker, &format!("b0-{i}")).await, (2, true));
    }
    let (_, constructs) = run(&engine, 0, &worker, "/constructs?name=x").await;
    assert_eq!(
        constructs, "53",
        "40 objects, 4 made again to see, 9 made again to count"
    );

    // An object with an accepted (not hibernatable) WebSocket stays.
    assert_eq!(inc(&engine, &worker, "held").await, (1, true));
    let mut end = open(&engine, &worker, "/ws?name=held").await;
    end.to_worker.send(msg("m0")).await.unwrap();
    assert_eq!(next(&mut end).await, Some(msg("m0")));
    tokio::time::sleep(IDLE * 4).await;
    assert_eq!(inc(&engine, &worker, "held").await, (2, false));
    drop(end);
}

/// A chat room of hibernatable sockets: a message is broadcast through
/// `getWebSockets()`, `who` answers what the object knows of the socket,
/// `ping` is the auto-response's (answered without the object).
const ROOM: &str = r#"
import { DurableObject } from 'cloudflare:workers';
let constructs = 0;
export class Room extends DurableObject {
  constructor(ctx, env) {
    super(ctx, env);
    constructs += 1;
    this.generation = constructs;
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair('ping', 'pong'));
  }
  async fetch(request) {
    const name = new URL(request.url).searchParams.get('name');
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server, [name, 'all']);
    // Listed already, in the event that accepted it (as workerd).
    this.atAccept = this.ctx.getWebSockets().length;
    this.taggedAtAccept = this.ctx.getWebSockets(name).length;
    server.serializeAttachment({ name, joined: this.generation });
    return new Response(null, { status: 101, webSocket: client });
  }
  webSocketMessage(ws, message) {
    const { name } = ws.deserializeAttachment();
    if (message === 'who') {
      ws.send(JSON.stringify({
        name,
        tags: this.ctx.getTags(ws),
        generation: this.generation,
        sockets: this.ctx.getWebSockets().length,
        tagged: this.ctx.getWebSockets(name).length,
        pinged: this.ctx.getWebSocketAutoResponseTimestamp(ws) !== null,
        auto: this.ctx.getWebSocketAutoResponse()?.response,
        atAccept: this.atAccept,
        taggedAtAccept: this.taggedAtAccept,
      }));
      return;
    }
    for (const peer of this.ctx.getWebSockets('all')) peer.send(`${name}: ${message}`);
  }
  async webSocketClose(ws, code, reason, wasClean) {
    const { name } = ws.deserializeAttachment();
    await this.ctx.storage.put('left', name);
    for (const peer of this.ctx.getWebSockets()) peer.send(`left ${name} ${code} ${wasClean}`);
  }
  webSocketError(ws, error) {
    const { name } = ws.deserializeAttachment();
    for (const peer of this.ctx.getWebSockets()) peer.send(`lost ${name}: ${error.message}`);
  }
}
export default {
  async fetch(request, env) {
    return env.OBJ.getByName('lobby').fetch(request);
  },
};
"#;

async fn open(engine: &Engine, worker: &Arc<WorkerBundle>, path: &str) -> SocketEnd {
    open_socket(engine, 0, worker, path).await
}

async fn next(end: &mut SocketEnd) -> Option<SocketMessage> {
    next_message(end).await
}

fn msg(s: &str) -> SocketMessage {
    SocketMessage::Text(s.to_owned())
}

async fn who(end: &mut SocketEnd) -> serde_json::Value {
    end.to_worker.send(msg("who")).await.unwrap();
    match next(end).await {
        Some(SocketMessage::Text(json)) => serde_json::from_str(&json).unwrap(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn hibernated_sockets_wake_their_object_with_attachments_and_ping_without_it() {
    let dir = tempfile::tempdir().unwrap();
    // Two threads: the room lives on one of them, and the clients come in
    // through both, so some reach it through a forwarded stub.fetch whose
    // 101 is passed on from the room's thread.
    let engine = engine_on(
        2,
        Store::open_sqlite(dir.path()).unwrap(),
        WebSocketConfig::default(),
    );
    let room = object_bundle("chat/room", "Room", ROOM, Default::default());
    let neighbour = bundle("calm/hello", HELLO);
    let mut alice = open_socket(&engine, 0, &room, "/?name=alice").await;
    let mut bob = open_socket(&engine, 1, &room, "/?name=bob").await;
    let mut carol = open_socket(&engine, 0, &room, "/?name=carol").await;
    alice.to_worker.send(msg("hi")).await.unwrap();
    for end in [&mut alice, &mut bob, &mut carol] {
        assert_eq!(next(end).await, Some(msg("alice: hi")));
    }
    let seen = who(&mut bob).await;
    assert_eq!(seen["generation"], 1);
    assert_eq!(seen["sockets"], 3);
    assert_eq!(seen["tagged"], 1);
    assert_eq!(seen["tags"], serde_json::json!(["bob", "all"]));
    assert_eq!(seen["pinged"], false);
    assert_eq!(seen["auto"], "pong");
    // Carol's fetch, the last, saw her socket with the two before it.
    assert_eq!(seen["atAccept"], 3);
    assert_eq!(seen["taggedAtAccept"], 1);

    // Carol pings every 100 ms, a third of the idle time: answered by the
    // host, the pings never wake or keep the object, which is evicted
    // meanwhile; Bob's `who` (an event) then finds a new instance.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last_who = Instant::now();
    let woken = loop {
        carol.to_worker.send(msg("ping")).await.unwrap();
        assert_eq!(next(&mut carol).await, Some(msg("pong")));
        tokio::time::sleep(Duration::from_millis(100)).await;
        if last_who.elapsed() > IDLE * 4 {
            let seen = who(&mut bob).await;
            if seen["generation"] != 1 {
                break seen;
            }
            last_who = Instant::now();
        }
        assert!(Instant::now() < deadline, "the room was never evicted");
    };
    assert_eq!(woken["generation"], 2, "the constructor ran again");
    assert_eq!(woken["name"], "bob", "the attachment outlived the instance");
    assert_eq!(woken["tags"], serde_json::json!(["bob", "all"]));
    assert_eq!(woken["sockets"], 3);
    let seen = who(&mut carol).await;
    assert_eq!(seen["pinged"], true);
    assert_eq!(seen["name"], "carol");
    // Broadcast by the new instance, through getWebSockets().
    alice.to_worker.send(msg("hello again")).await.unwrap();
    for end in [&mut alice, &mut bob, &mut carol] {
        assert_eq!(next(end).await, Some(msg("alice: hello again")));
    }
    // Alice leaves: the others hear it from webSocketClose.
    alice
        .to_worker
        .send(SocketMessage::Close(Some(CloseFrame {
            code: 4000,
            reason: "bye".to_owned(),
        })))
        .await
        .unwrap();
    for end in [&mut bob, &mut carol] {
        assert_eq!(next(end).await, Some(msg("left alice 4000 true")));
    }
    assert_eq!(who(&mut carol).await["sockets"], 2);
    // Measured, not asserted: a message of a hibernatable socket is an
    // event of its own (a request on the object's thread), an
    // auto-response is not.
    let started = Instant::now();
    for _ in 0..200 {
        who(&mut bob).await;
    }
    let event = started.elapsed() / 200;
    let started = Instant::now();
    for _ in 0..200 {
        carol.to_worker.send(msg("ping")).await.unwrap();
        assert_eq!(next(&mut carol).await, Some(msg("pong")));
    }
    let auto = started.elapsed() / 200;
    println!("round trip: an event {event:?}, an auto-response {auto:?}");
    // Carol vanishes without a close: webSocketError.
    drop(carol);
    assert_eq!(
        next(&mut bob).await,
        Some(msg("lost carol: the client went away"))
    );
    neighbour_ok(&engine, &neighbour).await;
}

/// Every upgrade goes to object `name`, which accepts it as hibernatable.
const HOG: &str = r#"
import { DurableObject } from 'cloudflare:workers';
export class Hog extends DurableObject {
  async fetch(request) {
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    return new Response(null, { status: 101, webSocket: client });
  }
  webSocketMessage(ws, message) { ws.send(message); }
}
export default {
  async fetch(request, env) {
    const name = new URL(request.url).searchParams.get('name');
    try {
      return await env.OBJ.getByName(name).fetch(request);
    } catch (e) {
      return new Response(e.message, { status: 429 });
    }
  },
};
"#;

const ECHO: &str = r#"
export default {
  fetch(request) {
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    server.addEventListener('message', (event) => server.send(event.data));
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

async fn echoes(end: &mut SocketEnd, message: &str) {
    end.to_worker.send(msg(message)).await.unwrap();
    assert_eq!(next(end).await, Some(msg(message)));
}

#[tokio::test]
async fn an_object_hoarding_sockets_hits_its_caps_while_a_neighbour_echoes() {
    let dir = tempfile::tempdir().unwrap();
    let config = WebSocketConfig {
        max_sockets_per_worker: 8,
        max_sockets_per_object: 4,
        ..WebSocketConfig::default()
    };
    let engine = life_engine(Store::open_sqlite(dir.path()).unwrap(), config);
    let hog = object_bundle("greedy/hog", "Hog", HOG, Default::default());
    let echo = bundle("calm/echo", ECHO);
    let mut calm = open(&engine, &echo, "/").await;
    echoes(&mut calm, "before").await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(open(&engine, &hog, "/?name=a").await);
    }
    // The object's cap: acceptWebSocket throws, with the limit named.
    let (status, body) =
        crate::support::text(engine.execute(0, hog.clone(), upgrade("/?name=a")).await).await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("4 hibernatable WebSockets"), "{body}");
    echoes(&mut calm, "during").await;
    // Other objects of the Worker fill its own budget on the thread…
    for _ in 0..3 {
        held.push(open(&engine, &hog, "/?name=b").await);
    }
    // …the eighth opens, the ninth is refused (the neighbour's socket is
    // another Worker's: its budget is its own).
    held.push(open(&engine, &hog, "/?name=c").await);
    match engine.execute(0, hog.clone(), upgrade("/?name=c")).await {
        Err(ExecuteError::Overloaded { .. }) => {}
        other => panic!("{:?}", other.map(|r| r.status())),
    }
    for end in &mut held {
        echoes(end, "still").await;
    }
    echoes(&mut calm, "during").await;
    // Closed sockets give their places back, to the object and the Worker.
    drop(held.drain(..5));
    let deadline = Instant::now() + Duration::from_secs(20);
    let reopened = loop {
        let response = engine.execute(0, hog.clone(), upgrade("/?name=a")).await;
        if let Ok(response) = response
            && response.status() == 101
        {
            break response;
        }
        assert!(Instant::now() < deadline, "the places never came back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    drop(reopened);
    echoes(&mut calm, "after").await;
}
