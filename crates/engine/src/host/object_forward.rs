//! Stub calls to a Durable Object homed on another engine thread
//! (`object_call.rs`): `objectIsHome` tells JavaScript whether the object
//! lives on this thread (then the call stays in this isolate, at no extra
//! cost), and `objectCall` hands a call to the home thread and resolves
//! with its answer's head, its body streamed back like a fetch's.

use std::rc::Rc;

use http::Method;

use super::error::{ErrorClass, HostError};
use super::state::FetchHead;
use super::{HostState, Settlement, begin_op, header_map};
use crate::body::Body;
use crate::object_call::{ObjectCall, home_thread, run_on};

/// The Worker whose isolate this is, with a class it binds.
pub(super) fn bound_worker(
    host: &HostState,
    class: &str,
) -> Result<std::sync::Arc<crate::bundle::WorkerBundle>, HostError> {
    let worker = host
        .worker
        .get()
        .ok_or_else(|| HostError::type_error("Durable Objects: no Worker is loaded"))?;
    if !worker.durable_objects.values().any(|c| c == class) {
        return Err(HostError::type_error(format!(
            "{class} is not a Durable Object class of this Worker"
        )));
    }
    Ok(worker.clone())
}

host_fn! {
/// `objectIsHome(class, id)`: whether object `id` of `class` lives on
/// this thread.
pub(super) fn object_is_home<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
) -> Result<bool, HostError> {
    let _ = scope;
    let worker = bound_worker(&host, &class)?;
    let threads = host.thread.shared.senders.len();
    Ok(home_thread(&worker.id, &class, &id, threads) == host.thread.index)
}
}

/// The request a forwarded call carries.
fn call_request(
    call: ObjectCall,
    method: &str,
    url: &str,
    headers: http::HeaderMap,
    body: Option<Vec<u8>>,
) -> Result<http::Request<Body>, HostError> {
    let method = Method::from_bytes(method.as_bytes())
        .map_err(|_| HostError::type_error(format!("invalid method {method:?}")))?;
    let mut request = http::Request::builder()
        .method(method)
        .uri(url)
        .body(body.map_or_else(Body::empty, Body::from))
        .map_err(|_| HostError::type_error(format!("invalid URL {url:?}")))?;
    *request.headers_mut() = headers;
    request.extensions_mut().insert(call);
    Ok(request)
}

host_fn! {
/// `objectCall(class, id, rpcMethod, method, url, headers, body)` →
/// Promise of the answer's head (as `host.fetch`'s): the call runs on the
/// object's home thread; `rpcMethod` is null for `stub.fetch`, else the
/// body is the serialized argument array.
pub(super) fn object_call<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
    rpc: Option<String>,
    method: String,
    url: String,
    headers: v8::Local<'s, v8::Value>,
    body: Option<Vec<u8>>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let ctx = host.current();
    let early = header_map(scope, headers)
        .map_err(HostError::type_error)
        .and_then(|headers| {
            // `<worker>/<class>`: a class another Worker hosts.
            let (worker, class) = super::object_hosted::called_worker(&host, class)?;
            let threads = host.thread.shared.senders.len();
            let home = home_thread(&worker.id, &class, &id, threads);
            let call = ObjectCall { class, id, method: rpc };
            let request = call_request(call, &method, &url, headers, body)?;
            Ok((worker, home, request))
        });
    let (resolver, promise, (worker, home, request)) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.me.clone();
    let (shared, observer) = (host.thread.shared.clone(), host.thread.observer.clone());
    let task = tokio::task::spawn_local(async move {
        let answer = run_on(&shared, &*observer, home, worker, request, true).await;
        let Some(isolate) = me.upgrade() else {
            return;
        };
        let settlement = match answer {
            Ok(response) => {
                let (parts, body) = response.into_parts();
                // A WebSocket the object answered with, to pass on.
                let web_socket = super::socket::pass_in(isolate.host(), ctx, &parts);
                let body_id = if http_body::Body::is_end_stream(&body) {
                    0
                } else {
                    isolate.host().register_body(ctx, body)
                };
                Settlement::Fetch(FetchHead {
                    status: parts.status.as_u16(),
                    status_text: parts.status.canonical_reason().unwrap_or("").to_owned(),
                    headers: parts.headers,
                    body_id,
                    url,
                    redirected: false,
                    web_socket,
                })
            }
            Err(error) => Settlement::Object(Box::new(super::durable_object::Settled::Failed(
                HostError::new(
                    ErrorClass::Error,
                    format!("Durable Object call failed: {error}"),
                ),
            ))),
        };
        isolate.settle(op, settlement);
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}
