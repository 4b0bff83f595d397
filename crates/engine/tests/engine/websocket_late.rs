//! What a WebSocket's events hand to `ctx.waitUntil` after the `101`: it
//! runs to its end after the socket has gone, as in workerd (its timers
//! fire), within the wall time of the last event; a Worker whose work never
//! ends has its request ended at that bound, beside a neighbour.

use std::time::{Duration, Instant};

use isolane_engine::{
    CloseFrame, EngineConfig, Limits, Outcome, PoolMode, SocketEnd, SocketMessage, WebSocketConfig,
};
use isolane_testenv::wait_until;

use crate::support::*;

/// Echoes; each message and the close hand a timer chain to `waitUntil`
/// that notes them in `seen` (`GET /seen`) once it fires. The close
/// listener calls `close(4002)` first: the reply before 2026-04-07, a no-op
/// after. `/forever` sockets hand on work that never ends instead (no timer
/// of it runs, so only the engine's wait can end it).
const LATE: &str = r#"
const seen = [];
const later = (ms) => new Promise((r) => setTimeout(r, ms));
export default {
  fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === '/seen') return new Response(seen.join(','));
    const [client, server] = Object.values(new WebSocketPair());
    server.accept();
    const work = (what) => path === '/forever'
      ? new Promise(() => {})
      : later(100).then(() => later(100)).then(() => seen.push(what));
    server.addEventListener('message', (event) => {
      ctx.waitUntil(work(`message ${event.data}`));
      server.send(event.data);
    });
    server.addEventListener('close', (event) => {
      server.close(4002, 'reply');
      ctx.waitUntil(work(`close ${event.code}`));
    });
    return new Response(null, { status: 101, webSocket: client });
  },
};
"#;

fn close(code: u16, reason: &str) -> SocketMessage {
    SocketMessage::Close(Some(CloseFrame {
        code,
        reason: reason.to_owned(),
    }))
}

/// Closes with 4001; the reply, then the end.
async fn close_with_reply(end: &mut SocketEnd, reply: SocketMessage) {
    end.to_worker.send(close(4001, "bye")).await.unwrap();
    assert_eq!(next_message(end).await, Some(reply));
    assert_eq!(next_message(end).await, None);
}

fn late_engine() -> (isolane_engine::Engine, std::sync::Arc<Recorder>) {
    engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        websocket: WebSocketConfig::default(),
        ..EngineConfig::default()
    })
}

/// Before 2026-04-07 (the Worker's `close()` the reply, `waitUntil` called
/// after it in the same listener) and after (the runtime's reply): the
/// work of a message runs while the socket is open, and the close's,
/// handed on when no other work is left, to its end after the socket has
/// gone; the request ends well.
#[tokio::test]
async fn a_websocket_events_wait_until_runs_after_the_socket_has_gone() {
    let (engine, recorder) = late_engine();
    for auto in [false, true] {
        let mut bundle = bundle_with("web/late", LATE, Limits::default(), &[]);
        bundle.compat.web_socket_auto_reply = auto;
        let bundle = std::sync::Arc::new(bundle);
        let mut end = open_socket(&engine, 0, &bundle, "/ws").await;
        let reply = if auto {
            close(4001, "bye")
        } else {
            close(4002, "reply")
        };
        echoes(&mut end, "m1").await;
        let seen = |what: &'static str| {
            let (engine, bundle) = (&engine, &bundle);
            async move {
                let (_, seen) = run(engine, 0, bundle, "/seen").await;
                seen.contains(what).then_some(seen)
            }
        };
        wait_until("the message's waitUntil work", DEADLINE, || seen("m1")).await;
        close_with_reply(&mut end, reply).await;
        let seen = wait_until("the close's waitUntil work", DEADLINE, || seen("close")).await;
        assert_eq!(seen, "message m1,close 4001", "auto reply {auto}");
    }
    let outcomes = recorder.outcomes.lock().unwrap().clone();
    assert!(outcomes.iter().all(|o| *o == Outcome::Ok), "{outcomes:?}");
}

/// A hostile Worker hands `waitUntil` work that never ends from its
/// socket's events: once the socket has gone, its request ends at the wall
/// limit of the last event (a wall timeout), not never; a neighbour Worker
/// on the same thread echoes before, while the work hangs, and after.
#[tokio::test]
async fn endless_work_of_a_websocket_event_ends_at_the_wall_limit_beside_a_neighbour() {
    let (engine, recorder) = late_engine();
    let limits = Limits {
        wall_ms: 1_500,
        ..Limits::default()
    };
    let hostile = std::sync::Arc::new(bundle_with("web/forever", LATE, limits, &[]));
    let neighbour = bundle("web/neighbour", LATE);
    let mut benign = open_socket(&engine, 0, &neighbour, "/ws").await;
    echoes(&mut benign, "before").await;
    let mut end = open_socket(&engine, 0, &hostile, "/forever").await;
    echoes(&mut end, "m1").await;
    close_with_reply(&mut end, close(4002, "reply")).await;
    let closed = Instant::now();
    echoes(&mut benign, "during").await;
    wait_until("the hostile request's wall timeout", DEADLINE, || async {
        let outcomes = recorder.outcomes.lock().unwrap().clone();
        outcomes.contains(&Outcome::WallTimeout).then_some(())
    })
    .await;
    println!(
        "the endless work ended {:?} after the close",
        closed.elapsed()
    );
    echoes(&mut benign, "after").await;
    assert_eq!(run(&engine, 0, &neighbour, "/seen").await.0, 200);
}

async fn echoes(end: &mut SocketEnd, text: &str) {
    let message = SocketMessage::Text(text.to_owned());
    end.to_worker.send(message.clone()).await.unwrap();
    assert_eq!(next_message(end).await, Some(message));
}

const DEADLINE: Duration = Duration::from_secs(30);
