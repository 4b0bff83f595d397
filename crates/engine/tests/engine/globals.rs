//! Globals whose effect is outside JavaScript: `reportError` logs what no
//! `error` listener handled, as an uncaught exception.

use isolane_engine::PoolMode;

use crate::logs;
use crate::support::*;

#[tokio::test]
async fn report_error_logs_unless_a_listener_handles_it() {
    logs::capture();
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
    assert_eq!(run(&engine, 0, &worker, "/handled").await.0, 200);
    assert_eq!(run(&engine, 0, &worker, "/").await.0, 200);
    let errors: Vec<String> = logs::for_worker(&worker.id)
        .into_iter()
        .filter(|e| e.level == tracing::Level::ERROR)
        .map(|e| e.message)
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("Uncaught RangeError: nobody handled this"),
        "{errors:?}"
    );
}
