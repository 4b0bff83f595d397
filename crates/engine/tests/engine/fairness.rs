//! Neighbours on a shared thread: each worker gets a bounded share of the
//! thread's slots, a client that leaves frees its slot at once, a CPU hog's
//! neighbours are served by another thread, and no request's CPU limit is
//! above the engine's cap.

use std::sync::Arc;
use std::time::Duration;

use isolane_engine::{EngineConfig, ExecuteError, Limits, Outcome, PoolMode};

use isolane_testenv::wait_until;

use crate::support::*;

const DEADLINE: Duration = Duration::from_secs(60);

fn count(recorder: &Recorder, outcome: Outcome) -> usize {
    recorder
        .outcomes
        .lock()
        .unwrap()
        .iter()
        .filter(|o| **o == outcome)
        .count()
}

/// A worker that never answers, held open by 600 clients, gets its share of
/// the thread's slots and no more; its neighbour is served throughout; when
/// the clients leave, their requests are canceled at once (signal aborted)
/// and the slots are free.
#[tokio::test]
async fn a_never_settling_worker_gets_its_share_of_slots_and_no_more() {
    let (engine, recorder) = slots_engine();
    let share = 256 / 4;
    let neighbour = bundle("web/neighbour", HELLO);
    assert_eq!(
        run(&engine, 0, &neighbour, "/").await,
        (200, "hello".to_owned())
    );
    let tarpit = Arc::new(bundle_with(
        "t/tarpit",
        "export default { fetch(request) {
            if (new URL(request.url).pathname === '/aborted') return new Response(String(globalThis.aborted ?? 0));
            request.signal.addEventListener('abort', () => { globalThis.aborted = (globalThis.aborted ?? 0) + 1; });
            return new Promise(() => {});
        } };",
        Limits {
            wall_ms: 300_000,
            ..Limits::default()
        },
        &[],
    ));
    let mut clients = Vec::new();
    for _ in 0..600 {
        let engine = engine.clone();
        let tarpit = tarpit.clone();
        clients.push(tokio::spawn(async move {
            engine.execute(0, tarpit, get("/")).await
        }));
    }
    // Everything past the share is refused at once, as overloaded.
    wait_until("the tarpit's excess refused", DEADLINE, || async {
        count(&recorder, Outcome::Overloaded) == 600 - share
            && clients.iter().filter(|c| c.is_finished()).count() >= 600 - share
    })
    .await;
    let refused = clients.iter().filter(|c| c.is_finished()).count();
    assert_eq!(refused, 600 - share, "only the tarpit's excess ended");
    // The neighbour is served while the tarpit holds its share.
    for _ in 0..10 {
        assert_eq!(
            run(&engine, 0, &neighbour, "/").await,
            (200, "hello".to_owned())
        );
    }
    // The clients leave: their requests are canceled at once (long before
    // the 300 s wall limit), each signal aborted.
    for client in &clients {
        client.abort();
    }
    wait_until("the tarpit's requests canceled", DEADLINE, || async {
        count(&recorder, Outcome::Canceled) == share
    })
    .await;
    assert_eq!(
        run(&engine, 0, &tarpit, "/aborted").await,
        (200, share.to_string())
    );
    // The slots are free again: the tarpit gets its whole share back (of
    // one more than its share, exactly one is refused).
    let overloaded = count(&recorder, Outcome::Overloaded);
    let again: Vec<_> = (0..=share)
        .map(|_| {
            let engine = engine.clone();
            let tarpit = tarpit.clone();
            tokio::spawn(async move { engine.execute(0, tarpit, get("/")).await })
        })
        .collect();
    wait_until("one more than the share refused", DEADLINE, || async {
        count(&recorder, Outcome::Overloaded) == overloaded + 1
            && again.iter().filter(|c| c.is_finished()).count() == 1
    })
    .await;
    assert_eq!(
        run(&engine, 0, &neighbour, "/").await,
        (200, "hello".to_owned())
    );
    for client in again {
        client.abort();
    }
}

/// A worker whose turns run for tens of milliseconds: the other workers
/// placed on its thread are served by the other thread meanwhile; the hog
/// itself stays.
#[tokio::test]
async fn a_cpu_hog_s_neighbours_are_served_by_another_thread() {
    let (engine, recorder) = engine(2, PoolMode::Pinned);
    let hog = Arc::new(bundle_with(
        "t/hog",
        "export default { fetch() { let x = 0; for (let i = 0; i < 3e7; i++) x += i; return new Response(String(x > 0)); } };",
        Limits {
            cpu_ms: 5_000,
            ..Limits::default()
        },
        &[],
    ));
    let neighbour = bundle("web/neighbour", HELLO);
    // Before: the neighbour's isolate is on thread 0, where it is placed.
    assert_eq!(
        run(&engine, 0, &neighbour, "/").await,
        (200, "hello".to_owned())
    );
    assert_eq!(recorder.created_on.lock().unwrap().clone(), vec![0]);
    // That cold first turn (tens of milliseconds in a debug build on a
    // loaded machine) may have marked thread 0 as busy with the
    // neighbour's namespace, and the hog's first request would then be
    // moved to thread 1: wait until thread 0 would run it.
    wait_until(
        "thread 0 clear of the neighbour's namespace",
        DEADLINE,
        || async { engine.serving_thread(0, hog.namespace()) == 0 },
    )
    .await;
    // During: the hog runs on thread 0; the neighbour, still asked for on
    // thread 0, is answered from an isolate on thread 1.
    assert_eq!(run(&engine, 0, &hog, "/").await, (200, "true".to_owned()));
    let hogging = {
        let engine = engine.clone();
        let hog = hog.clone();
        tokio::spawn(async move {
            for _ in 0..20 {
                let (status, _) = run(&engine, 0, &hog, "/").await;
                assert_eq!(status, 200);
            }
        })
    };
    for _ in 0..5 {
        assert_eq!(
            run(&engine, 0, &neighbour, "/").await,
            (200, "hello".to_owned())
        );
    }
    hogging.await.unwrap();
    let created = recorder.created_on.lock().unwrap().clone();
    assert_eq!(
        created[..2],
        [0, 0],
        "the neighbour, then the hog, on thread 0"
    );
    assert!(
        created[2..].contains(&1),
        "the neighbour was never served by thread 1: isolates made on {created:?}"
    );
    assert!(
        !created[2..].contains(&0),
        "the hog moved, or the neighbour stayed: isolates made on {created:?}"
    );
}

/// A worker may ask for more CPU than the engine allows: it gets the cap.
#[tokio::test]
async fn cpu_limits_are_capped_by_the_engine() {
    let (engine, _recorder) = engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        spare_isolates: 1,
        max_cpu_ms: 100,
        ..EngineConfig::default()
    });
    let greedy = Arc::new(bundle_with(
        "t/greedy",
        "export default { fetch() { for (;;) {} } };",
        Limits {
            cpu_ms: 30_000,
            ..Limits::default()
        },
        &[],
    ));
    let error = engine.execute(0, greedy, get("/")).await.unwrap_err();
    assert!(
        matches!(error, ExecuteError::CpuLimit { limit_ms: 100 }),
        "{error:?}"
    );
}
