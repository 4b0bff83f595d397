//! The service-worker form (`addEventListener('fetch', …)`): its bindings
//! are globals, there before the script's first line, as on Cloudflare; an
//! ES module worker gets them only as `env`.

use std::sync::Arc;

use isolane_engine::{Limits, PoolMode};

use crate::support::*;

#[tokio::test]
async fn a_service_worker_gets_its_bindings_as_globals() {
    let (engine, _) = engine(1, PoolMode::Pinned);
    let classic = Arc::new(bundle_with(
        "t/sw-bindings",
        "const atStart = GREETING;
        addEventListener('fetch', (event) => {
            event.respondWith(new Response(`${atStart} ${GREETING} ${globalThis.NAME} ${typeof env}`));
        });",
        Limits::default(),
        &[("GREETING", "hello"), ("NAME", "isolane")],
    ));
    assert_eq!(
        run(&engine, 0, &classic, "/").await,
        (200, "hello hello isolane undefined".to_owned())
    );
    let module = Arc::new(bundle_with(
        "t/module-bindings",
        "export default { fetch(request, env) {
            return new Response(`${typeof GREETING} ${env.GREETING}`);
        } };",
        Limits::default(),
        &[("GREETING", "hello")],
    ));
    assert_eq!(
        run(&engine, 0, &module, "/").await,
        (200, "undefined hello".to_owned())
    );
}
