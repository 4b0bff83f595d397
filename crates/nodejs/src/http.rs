//! `node:http`'s host function: whether the Worker's compatibility settings
//! give it the server (`enable_nodejs_http_server_modules`).

use std::rc::Rc;

use isolane_engine::api::HostResult;
use isolane_engine::api::HostState;

host_fn! {
/// `nodeHttpServer()` → whether `http.createServer` and friends work.
pub(super) fn server_enabled<'s>(
    scope,
    host: Rc<HostState>,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let enabled = host.worker().is_some_and(|bundle| bundle.compat.http_server);
    Ok(Some(v8::Boolean::new(scope, enabled).into()))
}
}
