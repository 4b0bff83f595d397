//! `host.bodyRead` / `host.bodyCancel`: incoming body streams (the request's
//! body, fetch responses' bodies), read one chunk per call.

use super::{HostState, Settlement, arg_u32, new_promise};

pub(super) fn body_read(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    mut rv: v8::ReturnValue<'_, v8::Value>,
) {
    let Some(host) = HostState::get(scope) else {
        return;
    };
    let id = arg_u32(scope, &args, 0);
    let Some((resolver, promise)) = new_promise(scope) else {
        return;
    };
    rv.set(promise.into());
    let Some(mut body) = host.take_body(id) else {
        // Unknown (finished or canceled) bodies read as ended.
        let null = v8::null(scope).into();
        resolver.resolve(scope, null);
        return;
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
}

pub(super) fn body_cancel(
    scope: &mut v8::PinScope<'_, '_>,
    args: v8::FunctionCallbackArguments<'_>,
    _rv: v8::ReturnValue<'_, v8::Value>,
) {
    let id = arg_u32(scope, &args, 0);
    if let Some(host) = HostState::get(scope) {
        host.drop_body(id);
    }
}
