//! Globals whose effect is outside JavaScript: `reportError` logs what no
//! `error` listener handled, as an uncaught exception (a console error in
//! the invocation's tail, as workerd prints it).

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
