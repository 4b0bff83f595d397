//! JS RPC over a service binding, off the fetch path: `host.serviceRpc`
//! hands the caller's serialized arguments to the called Worker's isolate
//! on this thread as they are (the core's `Outbound::rpc`), and settles
//! with the serialized result, or rejects with the serialized error the
//! method threw, as bytes (`js/31_rpc.js` reads both). No `Request` or
//! `Response`, headers, URL or body stream is made on either side.

use std::rc::Rc;

use isolane_engine::api::service::{RpcAnswer, rpc_answer};
use isolane_engine::api::{
    ErrorClass, HostError, HostState, Settle, Settlement, begin_op, u8_array,
};

host_fn! {
/// `serviceRpc(binding, method, payload, worker, cpuMs, subrequests,
/// entrypoint, props)` → (`worker`, the limits, `entrypoint` and `props`
/// as `serviceFetch`'s) Promise of the serialized
/// result (a `Uint8Array`); rejected with the serialized thrown error (a
/// `Uint8Array`), or an `Error` when the call could not run. One
/// subrequest of the caller's, refused (a `TypeError`) past its limit.
pub(crate) fn service_rpc<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    method: String,
    payload: Option<Vec<u8>>,
    worker: Option<String>,
    cpu_ms: u32,
    subrequests: u32,
    entrypoint: Option<String>,
    props: Option<String>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let ctx = host.current();
    let limits = (cpu_ms, subrequests);
    let early = crate::dispatch::outbound(&host, ctx, &binding, worker, limits, (entrypoint, props)).and_then(|outbound| {
        host.take_call(ctx)?;
        Ok(outbound.rpc(method, payload.unwrap_or_default().into()))
    });
    let (resolver, promise, outbound) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let call = outbound.run(&host, empty_request());
    let task = tokio::task::spawn_local(async move {
        let answer = rpc_answer(call.await)
            .await
            .map_err(|error| format!("Service call failed: {error}"));
        let Some(isolate) = me.upgrade() else {
            return;
        };
        isolate.settle(op, Settlement::custom(Answered(answer)));
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}

/// The request an RPC call's job runs as: no head of its own (the hop
/// count is added by `Outbound::run`).
fn empty_request() -> http::Request<isolane_engine::Body> {
    http::Request::new(isolane_engine::Body::empty())
}

/// An RPC call's (or a stub call's) answer as its promise settles: the
/// error's text is the whole message of the `Error` it rejects with.
pub(crate) struct Answered(pub(crate) Result<RpcAnswer, String>);

impl Settle for Answered {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        match self.0 {
            Ok(RpcAnswer::Returned(result)) => Ok(bytes_js(scope, result.into())),
            Ok(RpcAnswer::Threw(error)) => Err(bytes_js(scope, error.into())),
            Err(error) => {
                let error = HostError::new(ErrorClass::Error, error);
                Box::new(error).into_js(scope)
            }
        }
    }
}

/// `bytes` as a `Uint8Array` (`undefined` when V8 could not make one).
fn bytes_js<'s>(scope: &mut v8::PinScope<'s, '_>, bytes: Vec<u8>) -> v8::Local<'s, v8::Value> {
    match u8_array(scope, bytes) {
        Some(array) => array.into(),
        None => v8::undefined(scope).into(),
    }
}
