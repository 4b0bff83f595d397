//! Stub calls to a Durable Object homed on another engine thread
//! (`object_call.rs`): `objectIsHome` tells JavaScript whether the object
//! lives on this thread (then the call stays in this isolate, at no extra
//! cost), and `objectCall` hands a call to the home thread and resolves
//! with its answer's head, its body streamed back like a fetch's.
//!
//! A [`RingClass`]'s calls take the same way: its object is this node's
//! when the ring names no other owner (then any thread here serves it).
//! Each stub call is one of its request's subrequests; how one sent out
//! of its isolate queues and is bounded is `isolane-calltree`'s.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;

use http::Method;
use http::header::{HeaderName, HeaderValue};
use isolane_calltree::CallTree;

use super::error::{ErrorClass, HostError};
use super::id_map::IdMap;
use super::object_hosted::bound_worker;
use super::request_head::method_and_uri;
use super::state::FetchHead;
use super::{HostState, Settlement, begin_op, header_map};
use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::dispatch::run_on;
use crate::object_call::{ObjectCall, RingClass, home_thread, object_key, ring_class};
use crate::object_peers::{MAX_ATTEMPTS, retry_pause};
use crate::service_call::object_within_depth;
use crate::socket::{SocketEnd, WebSocketUpgrade};
use crate::work::Work;

host_fn! {
/// `objectIsHome(class, id)`: whether object `id` of `class` lives on
/// this thread: its owner is this node (`object_peers.rs`) and its home
/// thread here is this one; then the call made next is counted as one of
/// the request's subrequests (a `TypeError` past them).
pub fn object_is_home<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
) -> Result<bool, HostError> {
    let _ = scope;
    if let Some(ring) = ring_class(&class) {
        return ring_is_home(&host, ring, &id);
    }
    let worker = bound_worker(&host, &class)?;
    if let Some(peers) = &host.thread.config.objects
        && peers.owner(&object_key(&worker.id, &class, &id)).is_some()
    {
        return Ok(false);
    }
    let threads = host.thread.shared.senders.len();
    let home = home_thread(&worker.id, &class, &id, threads) == host.thread.index;
    if home {
        // The call that follows runs in this isolate: one subrequest.
        host.take_call(host.current())?;
    }
    Ok(home)
}
}

/// Whether the object `name` of ring class `ring` reaches is this node's.
fn ring_is_home(host: &HostState, ring: &dyn RingClass, name: &str) -> Result<bool, HostError> {
    let (worker, id) = ring
        .resolve(host.worker(), name)
        .map_err(HostError::type_error)?;
    let peers = host.thread.config.objects.as_ref();
    let home = peers.is_none_or(|peers| peers.owner(&ring.key(&worker.id, &id)).is_none());
    if !home && let Some(store) = host.store() {
        ring.owned_elsewhere(store, worker, &id);
    }
    Ok(home)
}

/// The Worker that runs a call to `class`, the class and the id it is
/// sent with (a [`RingClass`]'s, as it resolves JavaScript's `id`).
fn call_target(
    host: &HostState,
    class: String,
    id: String,
) -> Result<(std::sync::Arc<WorkerBundle>, String, String), HostError> {
    if let Some(ring) = ring_class(&class) {
        let (worker, id) = ring
            .resolve(host.worker(), &id)
            .map_err(HostError::type_error)?;
        return Ok((worker.clone(), class, id));
    }
    // `<worker>/<class>`: a class another Worker hosts.
    let (worker, class) = super::object_hosted::called_worker(host, class)?;
    Ok((worker, class, id))
}

/// A forwarded call, kept so that it can be sent again, and its tree.
struct CallParts {
    call: ObjectCall,
    tree: Option<Arc<CallTree>>,
    method: Method,
    uri: http::Uri,
    headers: http::HeaderMap,
    body: Option<bytes::Bytes>,
}

impl CallParts {
    fn new(
        (call, tree): (ObjectCall, Option<Arc<CallTree>>),
        method: &str,
        url: &str,
        headers: http::HeaderMap,
        body: Option<Vec<u8>>,
    ) -> Result<Self, HostError> {
        let (method, uri) = method_and_uri(method, url)?;
        Ok(Self {
            call,
            tree,
            method,
            uri,
            headers,
            body: body.map(bytes::Bytes::from),
        })
    }

    /// The request a forwarded call carries (once more for each attempt).
    fn request(&self) -> http::Request<Body> {
        let body = self.body.clone().map_or_else(Body::empty, Body::from);
        let mut request = http::Request::new(body);
        *request.method_mut() = self.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.headers.clone();
        request
    }
}

/// Runs a call where its object lives: on its home thread here when this
/// node owns it, else on its owner node; a call another node refused
/// before it ran (not the owner by its ring, or unreachable) is sent again
/// to the owner the ring names then, at most `MAX_ATTEMPTS` times.
async fn deliver(
    thread: &crate::thread_ctx::ThreadCtx,
    worker: std::sync::Arc<crate::bundle::WorkerBundle>,
    parts: CallParts,
) -> Result<http::Response<Body>, String> {
    let shared = &thread.shared;
    let key = object_key(&worker.id, &parts.call.class, &parts.call.id);
    let mut attempt = 0;
    loop {
        let owner = thread.config.objects.as_ref().and_then(|peers| {
            let node = peers.owner(&key)?;
            Some((peers, node))
        });
        let Some((peers, node)) = owner else {
            let threads = shared.senders.len();
            let home = home_thread(&worker.id, &parts.call.class, &parts.call.id, threads);
            let observer = &*thread.observer;
            let mut request = parts.request();
            if let Some(tree) = &parts.tree {
                let place = tree.queue_place(home).await;
                request.extensions_mut().insert(place);
            }
            let call = parts.call.clone();
            let work = Work::ObjectCall { call, request };
            return run_on(shared, observer, home, worker, work, true)
                .await
                .map_err(|error| error.to_string());
        };
        let (call, request) = (parts.call.clone(), parts.request());
        match peers.call(&node, &worker, call, request).await {
            Ok(response) => return Ok(response),
            Err(error) if error.not_run() && attempt + 1 < MAX_ATTEMPTS => {
                attempt += 1;
                tracing::debug!(%error, attempt, "Durable Object call sent again");
                tokio::time::sleep(retry_pause(attempt)).await;
            }
            Err(error) => return Err(error.to_string()),
        }
    }
}

host_fn! {
/// `objectCall(class, id, rpcMethod, method, url, headers, body)` →
/// Promise of the answer's head (as `host.fetch`'s): the call runs on the
/// object's home thread, on this node or on its owner node; `rpcMethod`
/// is null for `stub.fetch`, else the body is the serialized argument
/// array. One hop deeper than its request (refused past `MAX_DEPTH`), and
/// but for a ring class's call one of its subrequests.
pub fn object_call<'s>(
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
        .and_then(|mut headers| {
            let (worker, class, id) = call_target(&host, class, id)?;
            if ring_class(&class).is_none() {
                host.take_call(ctx)?;
            }
            let hops = object_within_depth(host.outbound_hops(ctx))
                .map_err(|e| HostError::new(ErrorClass::Error, e))?;
            headers.insert(HeaderName::from_static(crate::HOPS_HEADER), HeaderValue::from(hops));
            let call = (ObjectCall { class, id, method: rpc }, host.call_tree(ctx));
            let parts = CallParts::new(call, &method, &url, headers, body)?;
            Ok((worker, parts))
        });
    let (resolver, promise, (worker, parts)) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.me.clone();
    let thread = host.thread.clone();
    let ring = ring_class(&parts.call.class);
    let task = tokio::task::spawn_local(async move {
        let answer = deliver(&thread, worker, parts).await;
        let Some(isolate) = me.upgrade() else {
            return;
        };
        isolate.settle(op, settlement(&*isolate, ctx, answer, url, ring));
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}

/// How a forwarded call's answer settles its promise (a ring class's
/// failure in the words its class gives it).
fn settlement(
    isolate: &dyn super::IsolateTurns,
    ctx: u32,
    answer: Result<http::Response<Body>, String>,
    url: String,
    ring: Option<&dyn RingClass>,
) -> Settlement {
    let message = match answer {
        Ok(response) => return response_head(isolate, ctx, response, url),
        Err(error) => match ring {
            Some(ring) => ring.failure(error),
            None => format!("Durable Object call failed: {error}"),
        },
    };
    Settlement::custom(HostError::new(ErrorClass::Error, message))
}

/// A response from another isolate of this thread (or node) as its
/// caller's promise gets it: its head, as `host.fetch`'s, its body
/// streamed; a WebSocket it answered with, passed on. Service calls
/// (`host/service.rs`) settle with it too.
pub(crate) fn response_head(
    isolate: &dyn super::IsolateTurns,
    ctx: u32,
    response: http::Response<Body>,
    url: String,
) -> Settlement {
    // A WebSocket the callee answered with (on this node), to pass on.
    let web_socket = pass_in(isolate.host(), ctx, &response);
    let head = FetchHead::new(isolate.host(), ctx, response, url);
    Settlement::Fetch(FetchHead { web_socket, ..head })
}

/// Sockets a Durable Object on another thread answered a forwarded
/// `stub.fetch` with (`101`), by id, with the request that holds them
/// until its Worker returns them (the WebSocket unit's `webSocketPass`,
/// [`take_passed`]): the `worker` unit's request state. The core keeps
/// them because it is the core that forwards the call and reads its
/// answer; the socket's front-end end goes on unread.
#[derive(Default)]
pub(crate) struct PassedSockets {
    passed: RefCell<IdMap<(u32, SocketEnd)>>,
    next: Cell<u32>,
}

impl crate::unit::RequestResources for PassedSockets {
    fn drop_for(&self, ctx: Option<u32>) {
        self.passed
            .borrow_mut()
            .retain(|_, (owner, _)| ctx.is_some_and(|c| c != *owner));
    }
}

/// The socket a forwarded `stub.fetch` was answered with, kept for request
/// `ctx` until its Worker returns it: its id, 0 for none.
fn pass_in<B>(host: &HostState, ctx: u32, response: &http::Response<B>) -> u32 {
    if response.status() != http::StatusCode::SWITCHING_PROTOCOLS {
        return 0;
    }
    let end = response
        .extensions()
        .get::<WebSocketUpgrade>()
        .and_then(WebSocketUpgrade::take);
    let (Some(end), Some(passed)) = (end, host.state::<PassedSockets>()) else {
        return 0;
    };
    let id = passed.next.get().wrapping_add(1).max(1);
    passed.next.set(id);
    passed.passed.borrow_mut().insert(id, (ctx, end));
    id
}

/// Takes socket `id` a forwarded `stub.fetch` was answered with, to answer
/// its request with (`None`: unknown, or handed over already).
pub fn take_passed(host: &HostState, id: u32) -> Option<SocketEnd> {
    let passed = host.state::<PassedSockets>()?;
    passed.passed.borrow_mut().remove(&id).map(|(_, end)| end)
}

/// Where a Durable Object's hibernatable sockets' events run
/// (`isolane-web`'s `websocket/hibernation.rs`): this thread's queue (the
/// object's home), as [`Work::ObjectSocketEvent`]s of the object's Worker.
/// Made on the isolate's thread; holds no isolate across its awaits.
pub struct SocketEvents {
    shared: Arc<crate::thread_ctx::EngineShared>,
    observer: Arc<dyn crate::observer::EngineObserver>,
    thread: usize,
}

impl SocketEvents {
    /// This thread's.
    pub fn of(host: &HostState) -> Self {
        Self {
            shared: host.thread.shared.clone(),
            observer: host.thread.observer.clone(),
            thread: host.thread.index,
        }
    }

    /// Runs `event` on its object of `bundle`'s Worker, until its handler is done.
    pub async fn run(
        &self,
        bundle: Arc<WorkerBundle>,
        event: crate::socket::ObjectSocketEvent,
    ) -> Result<(), crate::ExecuteError> {
        let work = Work::ObjectSocketEvent(event);
        run_on(
            &self.shared,
            &*self.observer,
            self.thread,
            bundle,
            work,
            true,
        )
        .await
        .map(drop)
    }
}
