//! Module and service-worker forms, warm globals, env, tenant isolation, errors.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use isolane_engine::{ExecuteError, Limits, PoolMode};

use crate::support::*;

#[tokio::test]
async fn module_worker_answers_from_a_spare_then_warm() {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let hello = bundle("t/hello", HELLO);
    assert_eq!(
        run(&engine, 0, &hello, "/").await,
        (200, "hello".to_owned())
    );
    assert_eq!(
        run(&engine, 0, &hello, "/").await,
        (200, "hello".to_owned())
    );
    assert_eq!(recorder.misses.load(Ordering::Relaxed), 1);
    assert_eq!(recorder.hits.load(Ordering::Relaxed), 1);
    assert_eq!(recorder.from_spare.load(Ordering::Relaxed), 1);
}

/// Spares are warmed with `internal.warmUp()` before any worker is loaded:
/// a worker served from one sees exactly the globals of a worker in an
/// isolate made for it, and its own fetch listener runs once.
#[tokio::test]
async fn a_warmed_spare_leaves_nothing_behind() {
    const PROBE: &str = "let calls = 0; addEventListener('fetch', (e) => { calls += 1; \
        e.respondWith(new Response(JSON.stringify([calls, Object.getOwnPropertyNames(globalThis).sort()]))); });";
    let mut answers = Vec::new();
    for spares in [1, 0] {
        let (engine, recorder) = engine_with(isolane_engine::EngineConfig {
            threads: 1,
            pin_threads: false,
            spare_isolates: spares,
            ..isolane_engine::EngineConfig::default()
        });
        let (status, body) = run(&engine, 0, &bundle("t/probe", PROBE), "/").await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(recorder.from_spare.load(Ordering::Relaxed), spares);
        answers.push(body);
    }
    assert!(answers[0].starts_with("[1,"), "{}", answers[0]);
    assert_eq!(answers[0], answers[1]);
}

#[tokio::test]
async fn service_worker_form_answers() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let sw = bundle(
        "t/sw",
        "addEventListener('fetch', (event) => { event.respondWith(new Response('sw:' + new URL(event.request.url).pathname)); });",
    );
    assert_eq!(run(&engine, 0, &sw, "/x").await, (200, "sw:/x".to_owned()));
}

#[tokio::test]
async fn globals_persist_across_warm_requests() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let counter = bundle(
        "t/counter",
        "let n = 0; export default { fetch() { n += 1; return new Response(String(n)); } };",
    );
    for expected in 1..=3 {
        assert_eq!(run(&engine, 0, &counter, "/").await.1, expected.to_string());
    }
}

#[tokio::test]
async fn tenants_never_see_each_others_globals_or_env() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let script = "export default { fetch(req, env) {
        const seen = globalThis.secret ?? 'none';
        globalThis.secret = env.NAME;
        return new Response(seen + '/' + env.NAME + '/' + Object.keys(env).join(','));
    } };";
    let a = std::sync::Arc::new(bundle_with(
        "t/a",
        script,
        Limits::default(),
        &[("NAME", "alice")],
    ));
    let b = std::sync::Arc::new(bundle_with(
        "t/b",
        script,
        Limits::default(),
        &[("NAME", "bob")],
    ));
    assert_eq!(run(&engine, 0, &a, "/").await.1, "none/alice/NAME");
    assert_eq!(run(&engine, 0, &b, "/").await.1, "none/bob/NAME");
    assert_eq!(run(&engine, 0, &a, "/").await.1, "alice/alice/NAME");
    assert_eq!(run(&engine, 0, &b, "/").await.1, "bob/bob/NAME");
}

#[tokio::test]
async fn a_thrown_error_is_a_500_exception() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let thrower = bundle(
        "t/throw",
        "export default { fetch() { throw new Error('boom'); } };",
    );
    let error = engine.execute(0, thrower, get("/")).await.unwrap_err();
    assert!(
        matches!(error, ExecuteError::Exception { ref message } if message.contains("boom")),
        "{error:?}"
    );
    assert_eq!(error.status(), 500);
}

#[tokio::test]
async fn a_broken_script_is_a_script_error() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let broken = bundle(
        "t/broken",
        "export default { fetch() { return new Response('x') ;",
    );
    let error = engine.execute(0, broken, get("/")).await.unwrap_err();
    assert!(
        matches!(error, ExecuteError::Script { ref message } if message.contains("SyntaxError")),
        "{error:?}"
    );
    let no_handler = bundle("t/nohandler", "export const x = 1;");
    let error = engine.execute(0, no_handler, get("/")).await.unwrap_err();
    assert!(matches!(error, ExecuteError::Script { .. }), "{error:?}");
    assert_eq!(error.status(), 500);
}

/// As in workerd (probed) with `allow_eval_during_startup` (on from
/// 2025-06-01): top-level code may generate code from strings (ejs, ajv and
/// Angular's compiler do at load), a request may not, not even through a
/// function the top level kept. Without the flag, not even at load.
#[tokio::test]
async fn code_generation_from_strings_only_at_load() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let source = "const twice = new Function('a', 'return a * 2'); const early = eval('1+1'); const kept = (s) => eval(s);
         export default { fetch() { const r = [twice(21), early];
           try { r.push(String(eval('1+1'))); } catch (e) { r.push(e.name); }
           try { r.push(String(kept('2+2'))); } catch (e) { r.push(e.name); }
           try { r.push(String(new Function('return 3')())); } catch (e) { r.push(e.name); }
           return new Response(r.join(' ')); } };";
    let mut allowed = (*bundle("t/eval", source)).clone();
    allowed.compat.eval_at_startup = true;
    assert_eq!(
        run(&engine, 0, &std::sync::Arc::new(allowed), "/").await.1,
        "42 2 EvalError EvalError EvalError"
    );
    let refused = bundle(
        "t/eval-old",
        "export default { fetch() { let r; try { r = String(eval('1+1')); } catch (e) { r = e.name; } return new Response(r); } };",
    );
    assert_eq!(run(&engine, 0, &refused, "/").await.1, "EvalError");
    let at_load = bundle("t/eval-load", source);
    let error = engine.execute(0, at_load, get("/")).await.unwrap_err();
    assert!(
        matches!(error, ExecuteError::Script { ref message } if message.contains("EvalError")),
        "eval at load without allow_eval_during_startup: {error:?}"
    );
}

/// The revisions `v1`…`vN` of one worker, each answering its name.
fn revisions(n: usize) -> Vec<Arc<isolane_engine::WorkerBundle>> {
    (1..=n)
        .map(|i| {
            bundle(
                "t/rev",
                &format!("export default {{ fetch() {{ return new Response('v{i}'); }} }};"),
            )
        })
        .collect()
}

#[tokio::test]
async fn a_split_between_revisions_keeps_each_warm_and_a_fourth_evicts_the_oldest() {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let v = revisions(4);
    // A 50/50 split, then a rollback to v1: every request after the first
    // two finds its revision warm.
    for _ in 0..3 {
        assert_eq!(run(&engine, 0, &v[0], "/").await.1, "v1");
        assert_eq!(run(&engine, 0, &v[1], "/").await.1, "v2");
    }
    assert_eq!(recorder.misses.load(Ordering::Relaxed), 2);
    assert_eq!(recorder.hits.load(Ordering::Relaxed), 4);
    assert!(recorder.evictions.lock().unwrap().is_empty());
    // v3 and v4: the worker's least recently used revision (v1) makes room.
    assert_eq!(run(&engine, 0, &v[2], "/").await.1, "v3");
    assert!(recorder.evictions.lock().unwrap().is_empty());
    assert_eq!(run(&engine, 0, &v[3], "/").await.1, "v4");
    assert_eq!(
        recorder.evictions.lock().unwrap().clone(),
        vec![isolane_engine::EvictionReason::RevisionReplaced]
    );
    let misses = recorder.misses.load(Ordering::Relaxed);
    assert_eq!(run(&engine, 0, &v[1], "/").await.1, "v2");
    assert_eq!(
        recorder.misses.load(Ordering::Relaxed),
        misses,
        "v2 stayed warm"
    );
    assert_eq!(run(&engine, 0, &v[0], "/").await.1, "v1");
    assert_eq!(
        recorder.misses.load(Ordering::Relaxed),
        misses + 1,
        "v1 was evicted"
    );
}

fn prewarm(path: &str) -> isolane_engine::Work {
    prewarm_as(path, isolane_engine::Prewarm::Load)
}

fn prewarm_as(path: &str, mode: isolane_engine::Prewarm) -> isolane_engine::Work {
    let request = get(path);
    isolane_engine::Work::Prewarm { mode, request }
}

#[tokio::test]
async fn a_prewarm_compiles_the_revision_so_its_first_request_is_warm() {
    let (engine, recorder) = engine(1, PoolMode::Pinned);
    let counted = bundle(
        "t/prewarm",
        "let loads = 0; loads++; export default { fetch() { return new Response(`loads=${loads}`); } };",
    );
    let response = engine
        .run(0, counted.clone(), prewarm("/"))
        .await
        .expect("prewarm");
    assert_eq!(response.status(), 204);
    assert_eq!(recorder.prewarmed_compiled.load(Ordering::Relaxed), 1);
    // No handler ran, and no request lookup was counted.
    assert!(recorder.outcomes.lock().unwrap().is_empty());
    assert_eq!(recorder.misses.load(Ordering::Relaxed), 0);
    assert_eq!(run(&engine, 0, &counted, "/").await.1, "loads=1");
    assert_eq!(
        recorder.misses.load(Ordering::Relaxed),
        0,
        "the request was warm"
    );
    assert_eq!(recorder.hits.load(Ordering::Relaxed), 1);
    // A second prewarm finds it warm and loads nothing.
    let response = engine.run(0, counted.clone(), prewarm("/")).await.unwrap();
    assert_eq!(response.status(), 204);
    assert_eq!(recorder.prewarmed_warm.load(Ordering::Relaxed), 1);
    assert_eq!(run(&engine, 0, &counted, "/").await.1, "loads=1");
}

/// A standby prewarm (sent by a router to where a busy Worker's requests
/// would spill) loads only where the warm pool has room without evicting:
/// into a thread with room for two it loads the second; with both taken it
/// loads nothing and both neighbours stay warm. A plain prewarm there
/// evicts, for contrast.
#[tokio::test]
async fn a_standby_prewarm_loads_only_into_room_and_never_evicts() {
    let (engine, recorder) = engine_with(isolane_engine::EngineConfig {
        threads: 1,
        pin_threads: false,
        pool_mode: PoolMode::Pinned,
        spare_isolates: 1,
        isolates_per_thread: 2,
        ..isolane_engine::EngineConfig::default()
    });
    let first = bundle("t/first", HELLO);
    let spilled = bundle("t/spilled", HELLO);
    let late = bundle("t/late", HELLO);
    let prewarmed = |bundle: &Arc<isolane_engine::WorkerBundle>, mode| {
        let work = prewarm_as("/", mode);
        let call = engine.run(0, bundle.clone(), work);
        async move { call.await.expect("prewarm").status() }
    };
    let standby = isolane_engine::Prewarm::Standby;
    assert_eq!(run(&engine, 0, &first, "/").await.1, "hello");
    assert_eq!(prewarmed(&spilled, standby).await, 204);
    assert_eq!(recorder.prewarmed_compiled.load(Ordering::Relaxed), 1);
    let misses = recorder.misses.load(Ordering::Relaxed);
    assert_eq!(run(&engine, 0, &spilled, "/").await.1, "hello");
    assert_eq!(recorder.misses.load(Ordering::Relaxed), misses, "warm");
    // Full: a standby loads nothing and evicts nothing.
    assert_eq!(prewarmed(&late, standby).await, 204);
    assert_eq!(recorder.prewarmed_no_room.load(Ordering::Relaxed), 1);
    assert_eq!(recorder.prewarmed_compiled.load(Ordering::Relaxed), 1);
    assert!(recorder.evictions.lock().unwrap().is_empty());
    assert_eq!(run(&engine, 0, &first, "/").await.1, "hello");
    assert_eq!(run(&engine, 0, &spilled, "/").await.1, "hello");
    let now = recorder.misses.load(Ordering::Relaxed);
    assert_eq!(now, misses, "both stayed warm");
    // A warm revision is reported warm by a standby too.
    assert_eq!(prewarmed(&first, standby).await, 204);
    assert_eq!(recorder.prewarmed_warm.load(Ordering::Relaxed), 1);
    // A plain prewarm makes room.
    assert_eq!(prewarmed(&late, isolane_engine::Prewarm::Load).await, 204);
    assert_eq!(recorder.evictions.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_prewarm_of_a_broken_or_hostile_revision_fails_and_the_neighbour_is_untouched() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("t/neighbour", HELLO);
    assert_eq!(run(&engine, 0, &neighbour, "/").await.1, "hello");
    let broken = bundle("t/broken", "export default { fetch( };");
    let error = engine.run(0, broken, prewarm("/")).await.unwrap_err();
    assert!(matches!(error, ExecuteError::Script { .. }), "{error:?}");
    // Top-level code that never ends is stopped by the CPU limit.
    let spinning = bundle(
        "t/spin",
        "while (true) {} export default { fetch() { return new Response('x'); } };",
    );
    let error = engine.run(0, spinning, prewarm("/")).await.unwrap_err();
    assert!(
        matches!(
            error,
            ExecuteError::CpuLimit { .. } | ExecuteError::Script { .. }
        ),
        "{error:?}"
    );
    assert_eq!(run(&engine, 0, &neighbour, "/").await.1, "hello");
}

#[tokio::test]
async fn unknown_threads_are_refused() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let error = engine
        .execute(7, bundle("t/x", HELLO), get("/"))
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        ExecuteError::UnknownThread {
            thread: 7,
            threads: 1
        }
    ));
    // The Worker vocabulary's `invalid_thread`: the caller's fault, 502 as
    // the router answers it.
    assert_eq!(
        (error.status().as_u16(), error.reason()),
        (502, "invalid_thread")
    );
}

/// `spawn_on` runs a future on the engine thread itself, and that future
/// may hold the last handle to the engine: dropping it there stops the
/// engine without the thread trying to join itself.
#[tokio::test]
async fn a_future_spawned_on_an_engine_thread_runs_there() {
    let (engine, _) = engine(2, PoolMode::Pinned);
    let name = engine
        .spawn_on(1, async {
            std::thread::current().name().map(str::to_owned)
        })
        .unwrap()
        .await
        .unwrap();
    assert_eq!(name.as_deref(), Some("isolane-engine-1"));
    assert!(engine.spawn_on(2, async {}).is_err());

    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let last = engine.clone();
    let holder = engine
        .spawn_on(0, async move {
            let _ = released.await;
            drop(last);
        })
        .unwrap();
    drop(engine);
    release.send(()).unwrap();
    holder
        .await
        .expect("dropping the last handle on an engine thread does not panic");
}

/// Timers that came due while the thread was busy fire in deadline order
/// (as in browsers), whatever order they were armed in.
#[tokio::test]
async fn timers_due_together_fire_in_deadline_order() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let script = "export default { async fetch() {
        const log = [];
        const done = new Promise((resolve) => setTimeout(resolve, 60));
        setTimeout(() => log.push(30), 30);
        setTimeout(() => log.push(1), 1);
        setTimeout(() => log.push(10), 10);
        setTimeout(() => log.push(20), 20);
        let x = 0;
        for (let i = 0; i < 30000000; i++) { x = (x * 31 + i) | 0; }
        await done;
        return new Response(log.join(',') + ' ' + (x & 1));
    } };";
    let limits = Limits {
        cpu_ms: 5_000,
        ..Limits::default()
    };
    let worker = std::sync::Arc::new(bundle_with("t/timers", script, limits, &[]));
    let (status, body) = run(&engine, 0, &worker, "/").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("1,10,20,30 "), "{body}");
}

/// The request's headers as the Worker reads them, built only on first read
/// (HOST.md `handleRequest`): every header in order, repeated names kept
/// apart, a non-ASCII value as UTF-8, none at all, and a request kept from
/// an earlier request read after that request ended.
#[tokio::test]
async fn request_headers_read_as_sent_whenever_they_are_read() {
    const ECHO: &str = "let kept = null;
        export default { fetch(request) {
          const path = new URL(request.url).pathname;
          if (path === '/keep') { kept = request; return new Response('kept'); }
          const source = path === '/kept' ? kept : request;
          const seen = [...source.headers].map(([n, v]) => n + '=' + v).join(';');
          return new Response(seen + '|' + source.headers.get('x-name'));
        } };";
    let (engine, _) = engine(1, PoolMode::Pinned);
    let echo = bundle("t/headers", ECHO);
    let request = |path: &str| {
        http::Request::builder()
            .uri(format!("http://example.test{path}"))
            .header("accept", "*/*")
            .header(
                "x-name",
                http::HeaderValue::from_bytes("café".as_bytes()).unwrap(),
            )
            .header("x-many", "a")
            .header("x-many", "b")
            .body(isolane_engine::Body::empty())
            .unwrap()
    };
    let expected = "accept=*/*;x-many=a, b;x-name=café|café".to_owned();
    assert_eq!(
        text(engine.execute(0, echo.clone(), request("/")).await).await,
        (200, expected.clone())
    );
    assert_eq!(run(&engine, 0, &echo, "/").await, (200, "|null".to_owned()));
    assert_eq!(
        text(engine.execute(0, echo.clone(), request("/keep")).await).await,
        (200, "kept".to_owned())
    );
    assert_eq!(run(&engine, 0, &echo, "/kept").await, (200, expected));
}

/// A deleted worker (`Engine::retire`) leaves every thread's pool at once,
/// all its revisions; its neighbour stays warm, and the worker, deployed
/// again, starts cold.
#[tokio::test]
async fn a_retired_worker_leaves_every_thread_and_its_neighbour_stays_warm() {
    let (engine, recorder) = engine(2, PoolMode::Pinned);
    let v = revisions(2);
    // In the retired Worker's namespace: a neighbour of another namespace
    // could be moved between threads by the other's cold first turns (long
    // ones in a debug build, `fairness.rs`) and start cold elsewhere.
    let stay = bundle(
        "t/stay",
        "export default { fetch() { return new Response('stay'); } };",
    );
    assert_eq!(run(&engine, 0, &v[0], "/").await.1, "v1");
    assert_eq!(run(&engine, 0, &v[1], "/").await.1, "v2");
    assert_eq!(run(&engine, 1, &v[0], "/").await.1, "v1");
    for thread in 0..2 {
        assert_eq!(run(&engine, thread, &stay, "/").await.1, "stay");
    }
    let misses = recorder.misses.load(Ordering::Relaxed);
    assert!(recorder.evictions.lock().unwrap().is_empty());

    engine.retire("t/rev").await;
    // Each thread takes its jobs in order: these come after the retirement.
    for thread in 0..2 {
        assert_eq!(run(&engine, thread, &stay, "/").await.1, "stay");
    }
    assert_eq!(recorder.misses.load(Ordering::Relaxed), misses, "stay warm");
    assert_eq!(
        recorder.evictions.lock().unwrap().clone(),
        vec![isolane_engine::EvictionReason::Retired; 3]
    );
    assert_eq!(run(&engine, 0, &v[0], "/").await.1, "v1");
    assert_eq!(recorder.misses.load(Ordering::Relaxed), misses + 1);
}

/// `cloudflare:workers`, whatever the compatibility settings: a default
/// export extending `WorkerEntrypoint` gets a new instance per request with
/// `this.env` and `this.ctx`, and a `DurableObject` subclass loads; its
/// `env` export reads the handlers' `env` (empty at top level).
#[tokio::test]
async fn cloudflare_workers_entrypoints() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let source =
        "import { WorkerEntrypoint, DurableObject, RpcTarget, env } from 'cloudflare:workers';
        const atTop = Object.keys(env).length;
        export class Counter extends DurableObject { }
        let made = 0;
        export default class extends WorkerEntrypoint {
          constructor(ctx, env) { super(ctx, env); made += 1; }
          async fetch(request) {
            this.ctx.waitUntil(Promise.resolve());
            return new Response([new URL(request.url).pathname, this.env.WHO, made,
              typeof Counter, new RpcTarget() instanceof RpcTarget, env.WHO, 'WHO' in env,
              Object.keys(env).join(), atTop, Reflect.set(env, 'WHO', 'x')].join(' '));
          }
        }";
    let worker = Arc::new(bundle_with(
        "cf/entry",
        source,
        Default::default(),
        &[("WHO", "me")],
    ));
    assert_eq!(
        run(&engine, 0, &worker, "/a").await.1,
        "/a me 1 function true me true WHO 0 false"
    );
    assert_eq!(
        run(&engine, 0, &worker, "/b").await.1,
        "/b me 2 function true me true WHO 0 false"
    );
    let unknown = bundle(
        "cf/unknown",
        "import { x } from 'cloudflare:nope'; export default { fetch() { return new Response(x); } };",
    );
    let error = engine.execute(0, unknown, get("/")).await.unwrap_err();
    assert!(
        matches!(error, ExecuteError::Script { ref message } if message.contains("cloudflare:nope")),
        "{error:?}"
    );
}
