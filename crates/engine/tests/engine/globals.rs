//! Globals whose effect is outside JavaScript: `reportError` logs what no
//! `error` listener handled, as an uncaught exception (a console error in
//! the invocation's tail, as workerd prints it); and the lazy globals
//! (src/host/lazy.rs) against a Worker that patches the built-ins their
//! files call.

use isolane_engine::{PoolMode, TailItem};

use crate::support::*;

#[tokio::test]
async fn report_error_logs_unless_a_listener_handles_it() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let worker = bundle(
        "t/report-error",
        "export default { fetch(request) {
            if (new URL(request.url).pathname === '/handled') {
                const handler = (e) => e.preventDefault();
                addEventListener('error', handler);
                reportError(new Error('handled by a listener'));
                removeEventListener('error', handler);
            } else {
                reportError(new RangeError('nobody handled this'));
            }
            return new Response('ok');
        } };",
    );
    let mut tail = engine.tail(Some(&worker.id)).unwrap();
    assert_eq!(run(&engine, 0, &worker, "/handled").await.0, 200);
    assert_eq!(run(&engine, 0, &worker, "/").await.0, 200);
    let mut errors = Vec::new();
    for _ in 0..2 {
        let Some(TailItem::Event(event)) = tail.next().await else {
            panic!("an event per request");
        };
        errors.extend(
            event
                .exceptions
                .iter()
                .map(|e| format!("{}: {}", e.name, e.message)),
        );
    }
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("RangeError: nobody handled this"),
        "{errors:?}"
    );
}

/// A lazy global's files run on its first read (src/host/lazy.rs), after
/// the Worker's code could patch the built-ins they call. A Worker that
/// deletes, redefines or reads the global from inside those built-ins while
/// the files run breaks only its own globals: with V8's own lazy data
/// properties that would have been a fatal check, the whole process gone.
#[tokio::test]
async fn a_lazy_global_loading_under_patched_built_ins_harms_only_its_worker() {
    let (engine, _recorder) = engine(1, PoolMode::Pinned);
    let neighbour = bundle("web/neighbour", HELLO);
    neighbour_ok(&engine, &neighbour).await;
    let attacks = [
        // Deleted while it loads.
        "const o = Object.defineProperty; Object.defineProperty = function (...a) { delete globalThis.HTMLRewriter; delete globalThis.Cache; delete globalThis.URLPattern; return o(...a); };",
        // Redefined while it loads.
        "const o = Object.defineProperty; Object.defineProperty = function (...a) { o(globalThis, 'HTMLRewriter', { value: 1, configurable: true }); o(globalThis, 'caches', { get() { return 2; }, configurable: true }); o(globalThis, 'URLPattern', { value: 3, configurable: false }); return o(...a); };",
        // Read again while it loads (a nested load is refused).
        "const o = Object.defineProperty; Object.defineProperty = function (...a) { try { void globalThis.HTMLRewriter; void globalThis.caches; void globalThis.URLPattern; } catch {} return o(...a); };",
        // Assigned while it loads.
        "const o = Object.getOwnPropertyDescriptor; Object.getOwnPropertyDescriptor = function (...a) { globalThis.HTMLRewriter = 4; globalThis.Cache = 5; globalThis.URLPattern = 6; return o(...a); };",
    ];
    for (i, attack) in attacks.iter().enumerate() {
        let script = format!(
            "export default {{ fetch() {{ {attack} const seen = []; \
             for (const name of ['HTMLRewriter', 'caches', 'Cache', 'CacheStorage', 'URLPattern']) {{ \
               try {{ seen.push(name + ':' + typeof globalThis[name]); }} catch (e) {{ seen.push(name + ':threw'); }} \
               try {{ seen.push(name + ':' + typeof globalThis[name]); }} catch (e) {{ seen.push(name + ':threw'); }} \
             }} \
             return new Response(seen.join(' ')); }} }};"
        );
        let bad = bundle(&format!("t/lazy-{i}"), &script);
        let (status, body) = text(engine.execute(0, bad.clone(), get("/")).await).await;
        assert_eq!(status, 200, "{attack}: {body}");
        neighbour_ok(&engine, &neighbour).await;
        let (status, again) = text(engine.execute(0, bad, get("/")).await).await;
        assert_eq!(status, 200, "{attack}, again: {again}");
        neighbour_ok(&engine, &neighbour).await;
    }
    // A benign Worker's lazy globals are untouched by all that.
    let fine = bundle(
        "web/lazy-fine",
        "export default { fetch() { return new Response([typeof HTMLRewriter, typeof caches.default.match, typeof URLPattern].join(' ')); } };",
    );
    let (status, body) = text(engine.execute(0, fine, get("/")).await).await;
    assert_eq!((status, body.as_str()), (200, "function function function"));
}
