//! `host.bodyRead` / `host.bodyCancel`: incoming body streams (the request's
//! body, fetch responses' bodies), read one chunk per call.

use std::rc::Rc;

use super::{HostState, Settlement, new_promise};
use crate::unit::Unit;

/// ReadableStream, WritableStream, TransformStream and their kin; incoming
/// bodies are read through them. `08_streams.js` is `isolane-streams`' (a
/// crate below the core: its `js/08_streams/`, the parts joined).
pub(super) fn unit() -> Unit {
    Unit::new("streams")
        .js(&["08_streams.js"])
        .function("bodyRead", body_read)
        .function("bodyCancel", body_cancel)
}

host_fn! {
/// `bodyRead(bodyId)` → Promise of `{chunk}` or null.
fn body_read<'s>(scope, host: Rc<HostState>, id: u32) -> Option<v8::Local<'s, v8::Promise>> {
    let (resolver, promise) = new_promise(scope)?;
    let Some(mut body) = host.take_body(id) else {
        // Unknown (finished or canceled) bodies read as ended.
        let null = v8::null(scope).into();
        resolver.resolve(scope, null);
        return Some(promise);
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(host.current(), resolver);
    let me = host.me.clone();
    let task = tokio::task::spawn_local(async move {
        let chunk = body.next_chunk().await;
        let Some(isolate) = me.upgrade() else {
            return;
        };
        let settlement = match chunk {
            Some(Ok(bytes)) => {
                isolate.host().return_body(id, body);
                Settlement::Chunk(bytes.to_vec())
            }
            None => {
                isolate.host().drop_body(id);
                Settlement::Null
            }
            Some(Err(error)) => {
                isolate.host().drop_body(id);
                Settlement::TypeError(format!("body stream broken: {error}"))
            }
        };
        isolate.settle(op, settlement);
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}

host_fn! {
/// `bodyCancel(bodyId)`.
fn body_cancel<'s>(_scope, host: Rc<HostState>, id: u32) {
    host.drop_body(id);
}
}
