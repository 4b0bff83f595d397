//! Service bindings (`services`): `env.SVC.fetch` runs another Worker of
//! the namespace on the caller's own thread, in its own isolate, under its
//! own limits; each call is one of the caller's subrequests; a chain deeper
//! than 32 or a cycle ends with an error the caller catches; a callee that
//! never stops ends at its own CPU limit while a neighbour on the thread
//! answers.

use std::sync::Arc;

use isolane_engine::{Engine, EngineConfig, Limits, PoolMode, ServiceTarget, WorkerBundle};

use crate::support::*;

/// The called Worker: echoes what it was sent (method, URL, a header, the
/// body, its own env), streams `/stream` in three chunks, answers `/big`
/// with 100,000 bytes, and exports an
/// `Admin` entrypoint.
const BACKEND: &str = r#"
import { WorkerEntrypoint } from 'cloudflare:workers';
export class Admin extends WorkerEntrypoint {
  fetch(request) { return new Response(`admin of ${this.env.WHO} at ${new URL(request.url).pathname}`); }
}
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === '/stream') {
      const parts = ['one ', 'two ', 'three'];
      const body = new ReadableStream({ pull(c) { const p = parts.shift(); if (p) c.enqueue(new TextEncoder().encode(p)); else c.close(); } });
      return new Response(body, { headers: { 'x-from': 'backend' } });
    }
    if (url.pathname === '/big') return new Response('x'.repeat(100000));
    const body = await request.text();
    return new Response(`${request.method} ${url.pathname}${url.search} ${request.headers.get('x-token')} ${body} ${env.WHO} hops=${request.headers.get('x-isolane-hops')}`, { status: 201 });
  }
};
"#;

/// The caller: `/post` by a Request, `/url` by a URL and init, `/stream`
/// and `/big` passed through, `/admin` through the entrypoint binding, `/many` three
/// calls; errors as `500 name: message`.
const GATEWAY: &str = r#"
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    try {
      if (url.pathname === '/post') {
        const r = await env.BACKEND.fetch(new Request('http://backend/echo?q=1', { method: 'POST', body: 'payload', headers: { 'x-token': 't1' } }));
        return new Response(`${r.status} ${await r.text()}`);
      }
      if (url.pathname === '/url') {
        const r = await env.BACKEND.fetch('http://backend/plain', { headers: { 'x-token': 't2' } });
        return new Response(`${r.status} ${await r.text()}`);
      }
      if (url.pathname === '/stream') return await env.BACKEND.fetch('http://backend/stream');
      if (url.pathname === '/big') return await env.BACKEND.fetch('http://backend/big');
      if (url.pathname === '/admin') return await env.ADMIN.fetch('http://backend/panel');
      if (url.pathname === '/many') {
        const out = [];
        for (let i = 0; i < 3; i++) out.push((await env.BACKEND.fetch('http://backend/n')).status);
        return new Response(out.join(','));
      }
      return new Response(String(env.BACKEND));
    } catch (e) {
      return new Response(`${e.name}: ${e.message}`, { status: 500 });
    }
  }
};
"#;

pub(crate) fn service(worker: &str, entrypoint: Option<&str>) -> ServiceTarget {
    ServiceTarget {
        worker: worker.to_owned(),
        entrypoint: entrypoint.map(str::to_owned),
        props: None,
    }
}

pub(crate) fn with_services(
    mut bundle: WorkerBundle,
    services: &[(&str, ServiceTarget)],
) -> Arc<WorkerBundle> {
    for (name, target) in services {
        bundle.services.insert((*name).to_owned(), target.clone());
    }
    Arc::new(bundle)
}

/// An engine of `threads` threads serving `bundles` (`Engine::set_workers`).
pub(crate) fn served_engine(threads: usize, bundles: &[&Arc<WorkerBundle>]) -> Engine {
    served_engine_recorded(threads, bundles).0
}

/// [`served_engine`], with what its observer heard.
pub(crate) fn served_engine_recorded(
    threads: usize,
    bundles: &[&Arc<WorkerBundle>],
) -> (Engine, Arc<Recorder>) {
    let (engine, recorder) = engine_with(EngineConfig {
        threads,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        ..EngineConfig::default()
    });
    let served = Arc::new(Served::default());
    for bundle in bundles {
        served.add(bundle);
    }
    engine.set_workers(served);
    (engine, recorder)
}

fn gateway(limits: Limits) -> Arc<WorkerBundle> {
    let bundle = bundle_with("shop/gateway", GATEWAY, limits, &[("WHO", "gateway")]);
    let services = [
        ("BACKEND", service("backend", None)),
        ("ADMIN", service("backend", Some("Admin"))),
    ];
    with_services(bundle, &services)
}

fn backend() -> Arc<WorkerBundle> {
    Arc::new(bundle_with(
        "shop/backend",
        BACKEND,
        Limits::default(),
        &[("WHO", "backend")],
    ))
}

#[tokio::test]
async fn a_service_binding_runs_the_other_workers_fetch_with_a_real_request() {
    let (gateway, backend) = (gateway(Limits::default()), backend());
    let engine = served_engine(2, &[&gateway, &backend]);
    for thread in 0..2 {
        assert_eq!(
            run(&engine, thread, &gateway, "/post").await,
            (
                200,
                "201 POST /echo?q=1 t1 payload backend hops=1".to_owned()
            )
        );
        assert_eq!(
            run(&engine, thread, &gateway, "/url").await,
            (200, "201 GET /plain t2  backend hops=1".to_owned())
        );
        assert_eq!(
            run(&engine, thread, &gateway, "/admin").await,
            (200, "admin of backend at /panel".to_owned())
        );
        let response = engine
            .execute(thread, gateway.clone(), get("/stream"))
            .await
            .unwrap();
        assert_eq!(response.headers()["x-from"], "backend");
        assert_eq!(text(Ok(response)).await, (200, "one two three".to_owned()));
        assert_eq!(
            run(&engine, thread, &gateway, "/").await,
            (200, "[object Fetcher]".to_owned())
        );
    }
}

#[tokio::test]
async fn a_missing_worker_or_entrypoint_is_an_error_the_caller_catches() {
    let bundle = bundle_with("shop/gateway", GATEWAY, Limits::default(), &[]);
    let gateway = with_services(
        bundle,
        &[
            ("BACKEND", service("nowhere", None)),
            ("ADMIN", service("backend", Some("Missing"))),
        ],
    );
    let backend = backend();
    // Another namespace's `backend` is not this one's.
    let other = Arc::new(bundle_with(
        "other/nowhere",
        BACKEND,
        Limits::default(),
        &[],
    ));
    let engine = served_engine(1, &[&gateway, &backend, &other]);
    assert_eq!(
        run(&engine, 0, &gateway, "/url").await,
        (
            500,
            "Error: Service call failed: Worker nowhere is not running in this namespace"
                .to_owned()
        )
    );
    let (status, body) = run(&engine, 0, &gateway, "/admin").await;
    assert_eq!(status, 500, "{body}");
    assert!(body.starts_with("Error: Service call failed"), "{body}");
}

#[tokio::test]
async fn each_call_is_one_of_the_callers_subrequests() {
    let limits = Limits {
        subrequests: 2,
        ..Limits::default()
    };
    let (gateway, backend) = (gateway(limits), backend());
    let engine = served_engine(1, &[&gateway, &backend]);
    let (status, body) = run(&engine, 0, &gateway, "/many").await;
    assert_eq!(status, 500, "{body}");
    assert!(
        body.starts_with("TypeError: Too many subrequests"),
        "{body}"
    );
}

/// Calls itself (`SELF`) or its partner (`NEXT`) until refused, and says
/// how deep it got and why it stopped.
const RECURSE: &str = r#"
export default {
  async fetch(request, env) {
    const depth = Number(request.headers.get('x-isolane-hops') ?? 0);
    try {
      const r = await (env.SELF ?? env.NEXT).fetch('http://next/');
      return new Response(await r.text());
    } catch (e) {
      return new Response(`${depth} ${e.name}: ${e.message}`);
    }
  }
};
"#;

#[tokio::test]
async fn a_chain_deeper_than_32_and_a_cycle_end_with_an_error_the_caller_catches() {
    let refused = "32 Error: Service call failed: the chain of service calls is deeper than 32 (a Worker calling itself, or a cycle of Workers)";
    loops_end_with(RECURSE, refused).await;
}

/// Three Workers of `script`: `self` bound to itself (`SELF`), `ping` and
/// `pong` bound to each other (`NEXT`). Each answers `refused` (its caught
/// error) well within 10 s, and the thread is not left with calls in
/// flight: it answers again.
pub(crate) async fn loops_end_with(script: &str, refused: &str) {
    let selfish = with_services(
        bundle_with("loop/self", script, Limits::default(), &[]),
        &[("SELF", service("self", None))],
    );
    let ping = with_services(
        bundle_with("loop/ping", script, Limits::default(), &[]),
        &[("NEXT", service("pong", None))],
    );
    let pong = with_services(
        bundle_with("loop/pong", script, Limits::default(), &[]),
        &[("NEXT", service("ping", None))],
    );
    let engine = served_engine(1, &[&selfish, &ping, &pong]);
    let started = std::time::Instant::now();
    for bundle in [&selfish, &ping, &pong] {
        assert_eq!(
            run(&engine, 0, bundle, "/").await,
            (200, refused.to_owned())
        );
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(
        run(&engine, 0, &selfish, "/").await,
        (200, refused.to_owned())
    );
}

#[tokio::test]
async fn a_callee_that_never_stops_ends_at_its_own_cpu_limit_and_the_neighbour_answers() {
    let hostile = Arc::new(bundle_with(
        "shop/spin",
        "export default { fetch() { for (;;) {} } };",
        Limits {
            cpu_ms: 50,
            ..Limits::default()
        },
        &[],
    ));
    let caller = with_services(
        bundle_with("shop/caller", GATEWAY, Limits::default(), &[]),
        &[("BACKEND", service("spin", None))],
    );
    let neighbour = bundle("web/neighbour", HELLO);
    let engine = Arc::new(served_engine(1, &[&hostile, &caller, &neighbour]));
    neighbour_ok(&engine, &neighbour).await;
    // The neighbour's request goes to the thread while the caller's is in
    // flight (its call spinning, or about to).
    let call = tokio::spawn({
        let (engine, caller) = (engine.clone(), caller.clone());
        async move { run(&engine, 0, &caller, "/url").await }
    });
    neighbour_ok(&engine, &neighbour).await;
    let (status, body) = call.await.unwrap();
    assert_eq!(status, 500, "{body}");
    assert!(body.starts_with("Error: Service call failed"), "{body}");
    neighbour_ok(&engine, &neighbour).await;
    // The caller itself is unharmed: its next call is refused the same way.
    assert_eq!(run(&engine, 0, &caller, "/url").await.0, 500);
    neighbour_ok(&engine, &neighbour).await;
}

/// A callee's whole answer of a few bytes comes to its caller with the
/// head (no body stream read in turns of the caller), so passed on it goes
/// out whole, its length known; a streamed answer, or a whole one past the
/// size sent uncharged, is still streamed through, every byte of it.
#[tokio::test]
async fn a_callees_whole_answer_passed_on_goes_out_whole_and_a_streamed_one_streams() {
    let (gateway, backend) = (gateway(Limits::default()), backend());
    let engine = served_engine(1, &[&gateway, &backend]);
    let exact = |response: &http::Response<isolane_engine::Body>| {
        http_body::Body::size_hint(response.body()).exact()
    };
    let whole = engine
        .execute(0, gateway.clone(), get("/admin"))
        .await
        .unwrap();
    assert_eq!(exact(&whole), Some(26), "a whole answer passed on is whole");
    assert_eq!(
        text(Ok(whole)).await,
        (200, "admin of backend at /panel".to_owned())
    );
    let streamed = engine
        .execute(0, gateway.clone(), get("/stream"))
        .await
        .unwrap();
    assert_eq!(exact(&streamed), None, "a streamed answer streams");
    assert_eq!(text(Ok(streamed)).await, (200, "one two three".to_owned()));
    let big = engine
        .execute(0, gateway.clone(), get("/big"))
        .await
        .unwrap();
    assert_eq!(
        exact(&big),
        None,
        "past the size sent uncharged, it streams"
    );
    assert_eq!(text(Ok(big)).await, (200, "x".repeat(100_000)));
}
