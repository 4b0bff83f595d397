//! Limits stop the offending request, never the Worker; fairness is by
//! namespace. Each test is an attacker: an anonymous client choosing inputs
//! for a benign Worker, or a tenant spreading work over many Workers of its
//! namespace, beside a bystander of another namespace.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use isolane_engine::{Body, EngineConfig, ExecuteError, Limits, Outcome, PoolMode};
use isolane_testenv::wait_until;

use crate::support::*;

const DEADLINE: Duration = Duration::from_secs(120);

/// A benign shop: a cheap route, an expensive one whose cost the client
/// picks (`?n=`), and one that parses the client's JSON body.
const SHOP: &str = "export default { async fetch(request) {
    const url = new URL(request.url);
    if (url.pathname === '/cheap') return new Response('ok');
    if (url.pathname === '/heavy') {
        const n = Number(url.searchParams.get('n'));
        let x = 0;
        for (let i = 0; i < n; i++) x = (x * 31 + i) | 0;
        return new Response(String(x));
    }
    if (url.pathname === '/json') {
        const value = await request.json();
        return new Response(String(Object.keys(value).length));
    }
    return new Response('no such route', { status: 404 });
} };";

fn shop_limits() -> Limits {
    Limits {
        cpu_ms: 200,
        wall_ms: 60_000,
        memory_mib: 128,
        subrequests: 50,
    }
}

/// A JSON object of about `bytes` bytes.
fn json_of(bytes: usize) -> Bytes {
    let mut out = String::with_capacity(bytes + 32);
    out.push('{');
    let mut i = 0;
    while out.len() < bytes {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!("\"k{i}\":\"{}\"", "v".repeat(24)));
        i += 1;
    }
    out.push('}');
    Bytes::from(out)
}

fn post_with_length(path: &str, body: Body, length: usize) -> http::Request<Body> {
    let mut request = post(path, body);
    request.headers_mut().insert(
        http::header::CONTENT_LENGTH,
        http::HeaderValue::from(length),
    );
    request
}

/// A body streamed in 1 MiB chunks, `mib` of them, with no length declared.
fn streamed(mib: usize) -> Body {
    let (tx, body) = Body::channel(4);
    tokio::spawn(async move {
        let chunk = Bytes::from(vec![b' '; 1 << 20]);
        for _ in 0..mib {
            if tx.send(chunk.clone()).await.is_err() {
                return;
            }
        }
    });
    body
}

/// An anonymous client hammers a benign Worker's expensive route past its
/// CPU limit, posts 24 MiB JSON bodies to its body reader and sends
/// oversized bodies, all at once: every heavy request fails alone (503 with
/// its reason, or 413 for a body over the cap), and the cheap route of the
/// same Worker answers every request, during and after.
#[tokio::test]
async fn a_client_s_heavy_requests_fail_alone_and_the_cheap_route_answers() {
    let cap = 32 << 20;
    let (engine, recorder) = engine_with(EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        max_request_body_bytes: cap as u64,
        ..EngineConfig::default()
    });
    let shop = Arc::new(bundle_with("shop/app", SHOP, shop_limits(), &[]));
    assert_eq!(
        run(&engine, 0, &shop, "/cheap").await,
        (200, "ok".to_owned())
    );
    let json = json_of(24 << 20);

    let mut attacks = Vec::new();
    for i in 0..24 {
        let engine = engine.clone();
        let shop = shop.clone();
        let json = json.clone();
        attacks.push(tokio::spawn(async move {
            let request = match i % 4 {
                // Far past the CPU limit.
                0 => get("/heavy?n=1e12"),
                // A 24 MiB JSON body, under the cap.
                1 => post_with_length("/json", Body::from(json.clone()), json.len()),
                // Over the cap, declared.
                2 => post_with_length("/json", streamed(40), 40 << 20),
                // Over the cap, streamed without a length.
                _ => post("/json", streamed(40)),
            };
            (i % 4, engine.execute(0, shop, request).await)
        }));
    }
    let mut cheap = 0;
    while attacks.iter().any(|a| !a.is_finished()) || cheap < 20 {
        assert_eq!(
            run(&engine, 0, &shop, "/cheap").await,
            (200, "ok".to_owned()),
            "the cheap route failed during the attack"
        );
        cheap += 1;
    }
    for attack in attacks {
        let (kind, result) = attack.await.unwrap();
        match (kind, result) {
            (0, Err(error)) => {
                assert!(matches!(error, ExecuteError::CpuLimit { .. }), "{error:?}");
                assert_eq!(error.status(), 503);
                assert_eq!(error.reason(), "cpu_limit");
            }
            // Parsed, or stopped by a limit: either way this request alone.
            (1, Ok(response)) => assert_eq!(response.status(), 200),
            (1, Err(error)) => assert!(
                matches!(
                    error,
                    ExecuteError::CpuLimit { .. } | ExecuteError::MemoryLimit { .. }
                ),
                "{error:?}"
            ),
            (2 | 3, Err(error)) => {
                assert!(
                    matches!(error, ExecuteError::BodyTooLarge { .. }),
                    "{error:?}"
                );
                assert_eq!(error.status(), 413);
                assert_eq!(error.reason(), "body_too_large");
            }
            (kind, result) => panic!("attack {kind}: {result:?}"),
        }
    }
    for _ in 0..10 {
        assert_eq!(
            run(&engine, 0, &shop, "/cheap").await,
            (200, "ok".to_owned())
        );
    }
    let outcomes = recorder.outcomes.lock().unwrap().clone();
    for refused in [Outcome::Quarantined, Outcome::Canceled, Outcome::Overloaded] {
        assert!(!outcomes.contains(&refused), "{refused:?} in {outcomes:?}");
    }
}

/// Requests in flight in an isolate that a limit stopped (another user's
/// request hit it) finish normally: the isolate takes no new request, but
/// none of those already in it is canceled.
#[tokio::test]
async fn a_limit_does_not_cancel_the_other_requests_in_the_isolate() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let worker = Arc::new(bundle_with(
        "shop/slow",
        "export default { async fetch(request) {
            const url = new URL(request.url);
            if (url.pathname === '/spin') { for (;;) {} }
            if (url.pathname === '/waiting') return new Response(String(globalThis.waiting ?? 0));
            globalThis.waiting = (globalThis.waiting ?? 0) + 1;
            await new Promise((resolve) => setTimeout(resolve, 1000));
            globalThis.waiting -= 1;
            return new Response('done');
        } };",
        Limits {
            cpu_ms: 50,
            ..shop_limits()
        },
        &[],
    ));
    assert_eq!(
        run(&engine, 0, &worker, "/wait").await,
        (200, "done".to_owned())
    );
    let waiting: Vec<_> = (0..8)
        .map(|_| {
            let engine = engine.clone();
            let worker = worker.clone();
            tokio::spawn(async move { run(&engine, 0, &worker, "/wait").await })
        })
        .collect();
    // All eight are in the isolate when another request hits the limit.
    wait_until("the requests in flight", DEADLINE, || async {
        run(&engine, 0, &worker, "/waiting").await.1 == "8"
    })
    .await;
    let error = engine
        .execute(0, worker.clone(), get("/spin"))
        .await
        .unwrap_err();
    assert!(matches!(error, ExecuteError::CpuLimit { .. }), "{error:?}");
    for waiter in waiting {
        assert_eq!(waiter.await.unwrap(), (200, "done".to_owned()));
    }
    assert_eq!(
        run(&engine, 0, &worker, "/wait").await,
        (200, "done".to_owned())
    );
}

/// A tenant rotates an uninterruptible builtin over four Workers of its
/// namespace: after the first overrun, all of them wait (here: are refused,
/// their wall limit being shorter than the penalty), and a bystander of
/// another namespace on the same thread is served throughout.
#[tokio::test]
async fn rotating_workers_of_one_namespace_gains_nothing() {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let bystander = bundle("web/bystander", HELLO);
    let hogs: Vec<_> = (0..4)
        .map(|i| {
            Arc::new(bundle_with(
                &format!("hog/w{i}"),
                crate::support::POISON,
                crate::support::poison_limits(),
                &[],
            ))
        })
        .collect();
    let first = engine
        .execute(0, hogs[0].clone(), get("/"))
        .await
        .unwrap_err();
    assert!(
        matches!(
            first,
            ExecuteError::MemoryLimit { .. } | ExecuteError::CpuLimit { .. }
        ),
        "{first:?}"
    );
    for hog in &hogs[1..] {
        let refused = engine.execute(0, hog.clone(), get("/")).await.unwrap_err();
        assert!(
            matches!(refused, ExecuteError::Quarantined { .. }),
            "{refused:?}"
        );
        assert_eq!(
            run(&engine, 0, &bystander, "/").await,
            (200, "hello".to_owned())
        );
    }
    let terminations = recorder.terminations.lock().unwrap().len();
    assert_eq!(terminations, 1, "only the first hog ran");
}

/// A namespace floods a thread with short turns from many Workers; a
/// bystander's request that arrives behind the flood starts next, not
/// behind every request of the flood.
#[tokio::test]
async fn a_flood_of_short_turns_queues_behind_a_bystander() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let bystander = bundle("web/bystander", HELLO);
    let script = "export default { fetch() { let x = 0; for (let i = 0; i < 2e5; i++) x = (x * 31 + i) | 0; return new Response(String(x)); } };";
    let flood: Vec<_> = (0..4)
        .map(|i| bundle(&format!("flood/w{i}"), script))
        .collect();
    for worker in flood.iter().chain([&bystander]) {
        assert_eq!(run(&engine, 0, worker, "/").await.0, 200);
    }
    let total = 200;
    let done = Arc::new(AtomicUsize::new(0));
    let clients: Vec<_> = (0..total)
        .map(|i| {
            let engine = engine.clone();
            let worker = flood[i % flood.len()].clone();
            let done = done.clone();
            tokio::spawn(async move {
                let (status, _) = run(&engine, 0, &worker, "/").await;
                done.fetch_add(1, Ordering::Relaxed);
                status
            })
        })
        .collect();
    wait_until("the flood under way", DEADLINE, || async {
        done.load(Ordering::Relaxed) >= 1
    })
    .await;
    assert_eq!(
        run(&engine, 0, &bystander, "/").await,
        (200, "hello".to_owned())
    );
    let before = done.load(Ordering::Relaxed);
    for client in clients {
        assert_eq!(client.await.unwrap(), 200);
    }
    // Started next: far fewer of the flood's requests ended before it than
    // were waiting when it came.
    assert!(
        before < total / 2,
        "{before} of {total} flood requests ended before the bystander's"
    );
}

/// Six Workers of one namespace, each held open by many clients: together
/// they get one namespace's share of the thread's slots, and a bystander of
/// another namespace is never refused.
#[tokio::test]
async fn six_workers_of_one_namespace_share_one_slot_share() {
    let (engine, recorder) = slots_engine();
    let share = 256 / 4;
    let bystander = bundle("web/bystander", HELLO);
    let tarpits: Vec<_> = (0..6)
        .map(|i| {
            bundle(
                &format!("hog/tarpit{i}"),
                "export default { fetch() { return new Promise(() => {}); } };",
            )
        })
        .collect();
    let mut clients = Vec::new();
    for tarpit in &tarpits {
        for _ in 0..share {
            let engine = engine.clone();
            let tarpit = tarpit.clone();
            clients.push(tokio::spawn(async move {
                engine.execute(0, tarpit, get("/")).await
            }));
        }
    }
    let excess = 6 * share - share;
    wait_until("the namespace's excess refused", DEADLINE, || async {
        recorder
            .outcomes
            .lock()
            .unwrap()
            .iter()
            .filter(|o| **o == Outcome::Overloaded)
            .count()
            == excess
    })
    .await;
    let bystanders: Vec<_> = (0..56)
        .map(|_| {
            let engine = engine.clone();
            let bystander = bystander.clone();
            tokio::spawn(async move { run(&engine, 0, &bystander, "/").await })
        })
        .collect();
    for client in bystanders {
        assert_eq!(client.await.unwrap(), (200, "hello".to_owned()));
    }
    let refused = clients.iter().filter(|c| c.is_finished()).count();
    assert_eq!(refused, excess, "only the namespace's excess ended");
    for client in clients {
        client.abort();
    }
}
