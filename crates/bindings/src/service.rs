//! Service bindings (`{name, service: {name, entrypoint}}`, wrangler's
//! `[[services]]`): `env.SVC` is a `Fetcher` (`js/30_service.js`) whose
//! `fetch(request | url, init)` runs the called Worker's `fetch` handler
//! (or its named entrypoint's) on this engine thread, in that Worker's own
//! isolate, under its own limits, and resolves with its `Response`, the
//! body streamed back; its other properties are JS RPC methods of the
//! called Worker's entrypoint (`js/31_rpc.js`, `js/32_rpc_target.js`),
//! run the same way. Each call counts against the caller's
//! `subrequests`. How the call runs (the engine's work, the depth bound,
//! where the Worker is found) is the core's (`isolane_engine::api::service`).
//! A dispatch namespace binding (`env.DISPATCHER.get(name)`) makes the same
//! `Fetcher`, whose calls name the Worker (docs/dispatch.md).

use std::rc::Rc;

use isolane_engine::Body;
use isolane_engine::api::service::{header_map, request, settlement};
use isolane_engine::api::{HostError, HostState, Unit, begin_op};

/// `env.NAME` for a service binding.
pub(crate) fn unit() -> Unit {
    Unit::new("service")
        .js(&[
            "30_service.js",
            "31_rpc.js",
            "31_rpc_stub.js",
            "32_rpc_target.js",
        ])
        .function("serviceFetch", service_fetch)
        .function("serviceRpc", crate::rpc::service_rpc)
        .function("rpcExport", crate::stub::rpc_export)
        .function("rpcCtx", crate::stub::rpc_ctx)
        .function("rpcRelease", crate::stub::rpc_release)
        .function("rpcNext", crate::stub::rpc_next)
        .function("rpcReply", crate::stub::rpc_reply)
        .function("stubCall", crate::stub::stub_call)
        .request_state::<crate::stub::Inboxes>()
}

host_fn! {
/// `serviceFetch(binding, method, url, headers, body, worker, cpuMs,
/// subrequests, entrypoint, props)` → Promise of the called Worker's response head (as
/// `host.fetch`'s): one subrequest of the caller's, refused (a `TypeError`)
/// past its limit. `worker` (a string) makes it a dispatch namespace
/// binding's call of that Worker, with `cpuMs` and `subrequests` (0: none)
/// lowering its limits; through a Worker Loader binding, `worker` is the
/// loaded code's id, `entrypoint` and `props` the stub's (`loader.rs`). A
/// JS RPC call goes its own way (`rpc.rs`).
fn service_fetch<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    method: String,
    url: String,
    headers: v8::Local<'s, v8::Value>,
    body: Option<Vec<u8>>,
    worker: Option<String>,
    cpu_ms: u32,
    subrequests: u32,
    entrypoint: Option<String>,
    props: Option<String>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let ctx = host.current();
    let early = header_map(scope, headers)
        .map_err(HostError::type_error)
        .and_then(|headers| {
            let limits = (cpu_ms, subrequests);
            let outbound = crate::dispatch::outbound(&host, ctx, &binding, worker, limits, (entrypoint, props))?;
            host.take_call(ctx)?;
            let body = body.map_or_else(Body::empty, Body::from);
            Ok((outbound, request(&method, &url, headers, body)?))
        });
    let (resolver, promise, (outbound, request)) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let call = outbound.run(&host, request);
    let task = tokio::task::spawn_local(async move {
        let answer = call.await;
        let Some(isolate) = me.upgrade() else {
            return;
        };
        isolate.settle(op, settlement(&*isolate, ctx, answer, url));
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}
