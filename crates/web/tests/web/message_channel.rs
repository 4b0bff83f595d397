//! MessageChannel and MessagePort on real V8: the globals follow the
//! compatibility settings, and a Worker that floods its ports ends at its
//! own limits while a neighbour on the same thread answers before, during
//! and after. (Their behaviour: tests/web_api/message_channel.js.)

use std::sync::Arc;

use isolane_engine::{Compat, ExecuteError, Limits, PoolMode, WorkerBundle};

use crate::support::*;

const TYPES: &str = "export default { fetch() {
    return new Response(typeof MessageChannel + ' ' + typeof MessagePort);
} };";

fn with_channel(mut bundle: WorkerBundle) -> Arc<WorkerBundle> {
    bundle.compat = Compat {
        message_channel: true,
        ..Compat::default()
    };
    Arc::new(bundle)
}

#[tokio::test]
async fn the_globals_follow_the_compatibility_settings() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let without = bundle("t/no-channel", TYPES);
    assert_eq!(
        run(&engine, 0, &without, "/").await,
        (200, "undefined undefined".to_owned())
    );
    let with = with_channel(bundle_with("t/channel", TYPES, Limits::default(), &[]));
    assert_eq!(
        run(&engine, 0, &with, "/").await,
        (200, "function function".to_owned())
    );
    // The same thread, the other Worker again: hidden per Worker.
    assert_eq!(
        run(&engine, 0, &without, "/").await,
        (200, "undefined undefined".to_owned())
    );
}

/// Two ports answering each other forever: one turn's microtasks that never
/// end, cut at the CPU limit.
#[tokio::test]
async fn an_endless_ping_pong_ends_at_the_cpu_limit() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let script = "export default { async fetch() {
        const { port1, port2 } = new MessageChannel();
        port1.onmessage = (e) => port1.postMessage(e.data + 1);
        port2.onmessage = (e) => port2.postMessage(e.data + 1);
        port1.postMessage(0);
        await new Promise(() => {});
    } };";
    let limits = Limits {
        cpu_ms: 50,
        ..Limits::default()
    };
    let hog = with_channel(bundle_with("t/ping-pong", script, limits, &[]));
    neighbour_ok(&engine, &neighbour).await;
    let attack = engine.execute(0, hog.clone(), get("/"));
    let during = run(&engine, 0, &neighbour, "/");
    let (attack, during) = tokio::join!(attack, during);
    assert!(
        matches!(attack, Err(ExecuteError::CpuLimit { limit_ms: 50 })),
        "{:?}",
        attack.err()
    );
    assert_eq!(during, (200, "hello".to_owned()));
    neighbour_ok(&engine, &neighbour).await;
}

/// Messages posted to a port that never starts wait in the Worker's heap:
/// posting without end reaches the memory limit, not the process's.
#[tokio::test]
async fn messages_queued_without_end_reach_the_memory_limit() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    let script = "export default { fetch() {
        const { port1 } = new MessageChannel();
        const chunk = 'x'.repeat(1 << 16);
        for (let i = 0; ; i++) port1.postMessage({ i, chunk: chunk + i });
    } };";
    let hoard = with_channel(bundle_with("t/queue", script, memory_limits(64), &[]));
    neighbour_ok(&engine, &neighbour).await;
    let attack = engine.execute(0, hoard, get("/"));
    let during = run(&engine, 0, &neighbour, "/");
    let (attack, during) = tokio::join!(attack, during);
    assert!(
        matches!(attack, Err(ExecuteError::MemoryLimit { limit_mib: 64 })),
        "{:?}",
        attack.err()
    );
    assert_eq!(during, (200, "hello".to_owned()));
    neighbour_ok(&engine, &neighbour).await;
}
