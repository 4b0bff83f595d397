//! The Web Crypto offload pool against hostile Workers: a namespace that
//! floods it with RSA-4096 key generations cannot queue another namespace's
//! PBKDF2 behind its flood, and a key generation stops at its request's CPU
//! limit instead of running on to its end.

use std::sync::Arc;
use std::time::Duration;

use isolane_engine::{ExecuteError, Limits, WorkerBundle};
use isolane_testenv::wait_until;

use crate::support::*;

/// Generates RSA-4096 keys in a loop, counting the calls it started and the
/// ones that finished; `/count` answers `started done` at once.
const FLOOD: &str = "let started = 0, done = 0;
export default { async fetch(request) {
  if (new URL(request.url).pathname === '/count') return new Response(started + ' ' + done);
  for (;;) {
    started++;
    await crypto.subtle.generateKey({ name: 'RSASSA-PKCS1-v1_5', modulusLength: 4096,
      publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, false, ['sign']);
    done++;
  }
} };";

/// PBKDF2-HMAC-SHA1, RFC 6070's c = 4096 vector.
const VICTIM: &str = "export default { async fetch() {
  const enc = new TextEncoder();
  const pw = await crypto.subtle.importKey('raw', enc.encode('password'), 'PBKDF2', false, ['deriveBits']);
  const bits = await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-1', salt: enc.encode('salt'), iterations: 4096 }, pw, 160);
  return new Response([...new Uint8Array(bits)].map((b) => b.toString(16).padStart(2, '0')).join(''));
} };";

const RFC_6070_C4096: &str = "4b007901b765489abead49d926f721d065a429c1";

/// The CPU time of the `index`th finished request, once the engine has
/// reported it (it does so after the response).
async fn reported_cpu(recorder: &Recorder, index: usize) -> Duration {
    let what = format!("request {index} to be reported");
    wait_until(&what, Duration::from_secs(30), || async {
        recorder.cpu.lock().unwrap().get(index).copied()
    })
    .await
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}

/// `(started, done)` summed over the flood's Workers.
async fn flood_counts(engine: &isolane_engine::Engine, flood: &[Arc<WorkerBundle>]) -> (u64, u64) {
    let mut total = (0, 0);
    for worker in flood {
        let (status, body) = run(engine, 0, worker, "/count").await;
        assert_eq!(status, 200, "{body}");
        let (started, done) = body.split_once(' ').unwrap();
        total.0 += started.parse::<u64>().unwrap();
        total.1 += done.parse::<u64>().unwrap();
    }
    total
}

/// Namespace `attacker` runs RSA-4096 key generation in a loop from more
/// Workers than the pool has slots, each with two requests at once; then
/// namespace `victim` asks for PBKDF2, three times. Each victim request must
/// succeed, and must not wait for the flood's queue: first come first
/// served, the victim's job would start only after every attacker job
/// queued before it had a slot, so at least `workers - slots + 1` attacker
/// generations would finish during each victim request. Fair admission
/// starts it at once (the attacker holds at most half the slots). Counts of
/// finished calls, not time, are what is compared.
#[tokio::test]
async fn a_keygen_flood_does_not_queue_another_namespaces_pbkdf2() {
    let (engine, _) = uncapped_engine();
    let slots = cores().max(2);
    let workers = 2 * slots + 4;
    let limits = Limits {
        cpu_ms: 600_000,
        wall_ms: 600_000,
        ..Limits::default()
    };
    let flood: Vec<_> = (0..workers)
        .map(|i| {
            Arc::new(bundle_with(
                &format!("attacker/keygen-{i}"),
                FLOOD,
                limits,
                &[],
            ))
        })
        .collect();
    let mut attacks = tokio::task::JoinSet::new();
    for worker in flood.iter().chain(&flood) {
        let (engine, worker) = (engine.clone(), worker.clone());
        attacks.spawn(async move { engine.execute(0, worker, get("/")).await.map(|_| ()) });
    }
    // Wait until every attacker request has queued a generation.
    let every = 2 * workers as u64;
    wait_until(
        "every attacker request to start a generation",
        Duration::from_secs(120),
        || async { flood_counts(&engine, &flood).await.0 >= every },
    )
    .await;
    // A wall limit (a minute; the PBKDF2 takes milliseconds) so that a
    // victim queued behind the flood fails instead of waiting for it.
    let victim_limits = Limits {
        wall_ms: 60_000,
        ..limits
    };
    let victim = Arc::new(bundle_with("victim/pbkdf2", VICTIM, victim_limits, &[]));
    let queued_ahead = (workers - slots + 1) as u64;
    for _ in 0..3 {
        let (_, before) = flood_counts(&engine, &flood).await;
        assert_eq!(
            run(&engine, 0, &victim, "/").await,
            (200, RFC_6070_C4096.to_owned())
        );
        let (_, after) = flood_counts(&engine, &flood).await;
        assert!(
            after - before < queued_ahead,
            "{} attacker generations finished while the victim's PBKDF2 waited \
             (first come first served: at least {queued_ahead})",
            after - before
        );
    }
    assert!(attacks.try_join_next().is_none(), "the flood ended early");
    attacks.abort_all();
}

/// A Worker generating RSA-4096 keys under a 20 ms CPU limit ends as
/// `cpu_limit`, having used far less CPU than one whole generation: the
/// generation stops at the limit. Compared with the least CPU three whole
/// generations took in the same run (a generation's cost varies from one
/// key to the next; a stopped one costs the limit and one step).
#[tokio::test]
async fn a_key_generation_stops_at_the_cpu_limit() {
    let (engine, recorder) = uncapped_engine();
    let one = "export default { async fetch() {
        await crypto.subtle.generateKey({ name: 'RSA-PSS', modulusLength: 4096,
          publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, false, ['sign']);
        return new Response('made');
      } };";
    let whole = Arc::new(bundle_with(
        "t/keygen-whole",
        one,
        Limits {
            cpu_ms: 600_000,
            wall_ms: 600_000,
            ..Limits::default()
        },
        &[],
    ));
    let mut least = Duration::MAX;
    for i in 0..3 {
        assert_eq!(run(&engine, 0, &whole, "/").await, (200, "made".to_owned()));
        least = least.min(reported_cpu(&recorder, i).await);
    }
    let limited = Arc::new(bundle_with(
        "t/keygen-limited",
        one,
        Limits {
            cpu_ms: 20,
            wall_ms: 600_000,
            ..Limits::default()
        },
        &[],
    ));
    let error = engine.execute(0, limited, get("/")).await.unwrap_err();
    assert!(
        matches!(error, ExecuteError::CpuLimit { limit_ms: 20 }),
        "{error:?}"
    );
    let cut = reported_cpu(&recorder, 3).await;
    assert!(
        cut < least / 2,
        "a stopped generation used {cut:?}; a whole one at least {least:?}"
    );
}
