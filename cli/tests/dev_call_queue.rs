//! A hostile namespace filling its engine thread's job queue with legal
//! service and Durable Object calls, through `isolane dev --workers` as a
//! user runs it (the real binary, real HTTP, one engine thread), beside a
//! neighbour of another namespace on the same thread that answers
//! correctly before, during and after (docs/isolation.md, "It cannot fill
//! a thread's job queue with calls").
//!
//! Many concurrent clients of the attacker's Worker, each request fanning
//! out its whole subrequest allowance (50 by default, 1,000 with
//! `subrequests: 1000`) of calls, by `fetch` and by JS RPC, to a callee
//! (a Worker, or objects of a class another Worker hosts, whose calls go
//! out of the caller's isolate as jobs) that waits on a timer before it
//! answers; the requests wait for the same
//! tenth of a second before they call, so their calls leave in one turn of
//! the thread, while more clients of the attacker send it cheap requests
//! (so the thread's requests wait for their start, when it takes jobs off
//! its queue only once the tasks ahead ran). Every call is legal (within
//! its tree's budgets), so none may be refused; what must not happen is
//! the calls taking the thread's shared job queue (`queue_depth`, 1,024),
//! where the neighbour's request would find no room and be refused (503
//! `thread 0 is at its limit of requests in flight`, as it was before
//! each namespace's calls had their share of the queue).
#![allow(clippy::unwrap_used)]

#[path = "support/dev.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use support::{HttpClient, neighbour_yaml, request, serve_with_neighbour, worker_yaml};

/// The attacker's Worker: `/fetch?n=N` and `/rpc?n=N` make N service
/// calls at once, `/object?n=N` and `/object-rpc?n=N` N Durable Object
/// calls (to N objects of a class Worker `objects` hosts), and answer how
/// many answered (and the first error, if any failed).
const FLOOD: &str = r#"const object = (env, i) => env.SLOW_DO.get(env.SLOW_DO.idFromName(String(i)));
const CALLS = {
  '/fetch': (env) => env.SLOW.fetch('http://slow/').then((r) => r.text()),
  '/rpc': (env) => env.SLOW_RPC.wait(),
  '/object': (env, i) => object(env, i).fetch('http://slow/').then((r) => r.text()),
  '/object-rpc': (env, i) => object(env, i).wait(),
};
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/ping') return new Response('pong');
    const n = Number(url.searchParams.get('n'));
    const call = CALLS[url.pathname];
    // Every client's calls leave in the same turn of the thread: each
    // request first waits for the next tenth of a second.
    await new Promise((resolve) => setTimeout(resolve, 100 - (Date.now() % 100)));
    const calls = Array.from({ length: n }, (_, i) => call(env, i));
    const settled = await Promise.allSettled(calls);
    const failed = settled.filter((r) => r.status === 'rejected');
    const first = failed.length ? `: ${failed[0].reason.message}` : '';
    return new Response(`${n - failed.length} of ${n} answered${first}`);
  }
};
"#;

/// The attacker's callee: answers after a timer, by `fetch` and over JS RPC.
const SLOW: &str = r#"import { WorkerEntrypoint } from 'cloudflare:workers';
const later = (value) => new Promise((resolve) => setTimeout(() => resolve(value), 300));
export class Slow extends WorkerEntrypoint {
  wait() { return later('slow'); }
}
export default {
  fetch() { return later(new Response('slow')); }
};
"#;

/// The Worker hosting the attacker's Durable Object class: its objects
/// answer after a timer, by `stub.fetch` and over JS RPC.
const OBJECTS: &str = r#"const later = (value) => new Promise((resolve) => setTimeout(() => resolve(value), 300));
export class SlowObject {
  fetch() { return later(new Response('slow')); }
  wait() { return later('slow'); }
}
export default { fetch() { return new Response('objects'); } };
"#;

/// Clients of the attacker sending it cheap requests during each flood of
/// service calls. The floods of object calls go without them: with them
/// the attacker's own object calls wait minutes to start (its requests end
/// at their wall limit, while the neighbour answers), as they did before
/// (docs/isolation.md).
const PINGERS: usize = 50;

fn folder() -> String {
    let flood = |host: &str, subrequests: &str| {
        format!(
            "  routes: [{{ host: {host} }}]\n  limits: {{ cpuMs: 5000, wallMs: 120000{subrequests} }}\n  bindings:\n    - {{ name: SLOW, service: {{ name: slow }} }}\n    - {{ name: SLOW_RPC, service: {{ name: slow, entrypoint: Slow }} }}\n    - {{ name: SLOW_DO, durableObject: {{ className: SlowObject, worker: objects }} }}\n"
        )
    };
    let documents = [
        worker_yaml("attack", "fifty", &flood("fifty.test", ""), FLOOD),
        worker_yaml(
            "attack",
            "thousand",
            &flood("thousand.test", ", subrequests: 1000"),
            FLOOD,
        ),
        worker_yaml("attack", "slow", "  limits: { wallMs: 120000 }\n", SLOW),
        worker_yaml(
            "attack",
            "objects",
            "  limits: { wallMs: 120000 }\n  bindings: [{ name: SLOW_DO, durableObject: { className: SlowObject } }]\n",
            OBJECTS,
        ),
        neighbour_yaml(),
    ];
    documents.join("---\n")
}

/// The neighbour answers correctly, now.
async fn neighbour_ok(client: &HttpClient, port: u16, when: &str) {
    assert_eq!(
        request(client, port, "neighbour.test", "/").await.unwrap(),
        (200, "neighbour ok".to_owned()),
        "the neighbour of another namespace on the same thread, {when}"
    );
}

/// `clients` concurrent requests of the attacker's Worker at `host`, each
/// making `n` calls `via` fetch or RPC (or to objects), the neighbour
/// checked before, while any of them runs, and after. Every call answers:
/// none is refused.
async fn flood(client: &HttpClient, port: u16, host: &str, via: &str, clients: usize, n: usize) {
    neighbour_ok(client, port, "before").await;
    let path = format!("/{via}?n={n}");
    let attacks: Vec<_> = (0..clients)
        .map(|_| {
            let (client, host, path) = (client.clone(), host.to_owned(), path.clone());
            tokio::spawn(async move { request(&client, port, &host, &path).await.unwrap() })
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let pingers = if via.starts_with("object") {
        0
    } else {
        PINGERS
    };
    let pingers: Vec<_> = (0..pingers)
        .map(|_| {
            let (client, host, stop) = (client.clone(), host.to_owned(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    // Refused or not: the attacker's own business.
                    let _ = request(&client, port, &host, "/ping").await;
                }
            })
        })
        .collect();
    let mut checks = 0;
    while attacks.iter().any(|a| !a.is_finished()) {
        neighbour_ok(
            client,
            port,
            &format!("during {clients} clients of {host} by {via} ({checks} checks so far)"),
        )
        .await;
        checks += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for p in pingers {
        p.await.unwrap();
    }
    let mut answered = 0;
    for attack in attacks {
        let (status, body) = attack.await.unwrap();
        // An object call is a request of the attacker's namespace while it
        // runs (a service call runs inside its caller's): the attacker's
        // calls take its own share of the thread's slots, and a request of
        // it arriving meanwhile is refused before it runs (`overloaded`),
        // its own business. A request that ran had every call answer.
        if via.starts_with("object") && status == 503 && body.contains(r#""overloaded""#) {
            continue;
        }
        let all = (200, format!("{n} of {n} answered"));
        assert_eq!((status, body), all, "{clients} clients of {host} by {via}");
        answered += 1;
    }
    assert!(
        answered > 0,
        "{clients} clients of {host} by {via}: none ran"
    );
    eprintln!("{clients} clients of {host} by {via}: {answered} ran, {checks} neighbour checks");
    neighbour_ok(client, port, "after").await;
}

#[tokio::test]
async fn legal_service_calls_of_many_clients_leave_the_neighbour_its_room_in_the_queue() {
    let (_dev, port, client, _dir) = serve_with_neighbour(&folder()).await;
    for via in ["fetch", "rpc"] {
        // The default allowance: 50 calls each, 200 clients at once.
        flood(&client, port, "fifty.test", via, 200, 50).await;
        // The highest: 1,000 calls each, 8 clients at once.
        flood(&client, port, "thousand.test", via, 8, 1000).await;
    }
}

#[tokio::test]
async fn legal_durable_object_calls_of_many_clients_leave_the_neighbour_its_room_in_the_queue() {
    let (_dev, port, client, _dir) = serve_with_neighbour(&folder()).await;
    for via in ["object", "object-rpc"] {
        flood(&client, port, "fifty.test", via, 200, 50).await;
        flood(&client, port, "thousand.test", via, 8, 1000).await;
    }
}
