//! `node:dns`'s host function: which DNS-over-HTTPS server the node's
//! setting names (its queries are the Worker's own `fetch`es, made in
//! JavaScript, so the egress policy and the subrequest limit hold).

use std::rc::Rc;

use crate::host::error::HostResult;
use crate::host::{HostState, js_string};

host_fn! {
/// `nodeDnsServer()` → the DNS-over-HTTPS server's URL (its JSON API).
pub(super) fn server<'s>(
    scope,
    host: Rc<HostState>,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    Ok(js_string(scope, host.thread.shared.egress.dns_over_https()))
}
}
