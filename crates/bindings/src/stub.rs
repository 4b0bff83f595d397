//! RPC stubs: a function or an `RpcTarget` passed by reference over JS
//! RPC (`js/31_rpc.js`). The isolate that passes one exports it under a
//! random token ([`rpc_export`]); the stub the receiver gets holds the
//! token, and a call on it ([`stub_call`]) is a callback delivered into the
//! exporting isolate, in the request that exported it: its
//! `rpcNext` promise settles with the call (a turn of that request, under
//! its own limits), and its `rpcReply` answers. All of it runs on one engine
//! thread: the exporter waits on its own call meanwhile, so the callback is
//! one more piece of work for it, as an I/O completion is.
//!
//! A token is the right to call: unguessable (53 random bits), dropped when
//! its exporter releases it (the call that passed it ended, or the stub it
//! returned was disposed) or when the exporting request ends
//! ([`Inboxes::drop_for`]); a call after that, or into an isolate that is
//! gone, rejects with an `Error` saying so. Each stub call is one of the
//! calling request's subrequests, and raises the called request's hop
//! count to the caller's (`HostState::raise_hops`): a ping-pong through
//! callbacks ends at the depth bound as a cycle of calls does.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::{Rc, Weak};

use tokio::sync::oneshot;

use isolane_engine::api::service::RpcAnswer;
use isolane_engine::api::{
    HostError, HostResult, HostState, IdMap, IsolateTurns, RequestResources, Settle, Settlement,
    begin_op, holder, js_string, new_promise, set, u8_array,
};

use crate::rpc::Answered;

/// Where a stub's calls go: the isolate, request and export that made it.
struct Target {
    owner: Weak<dyn IsolateTurns>,
    ctx: u32,
    export: u32,
}

thread_local! {
    /// The live tokens of this engine thread's isolates.
    static TARGETS: RefCell<HashMap<u64, Target>> = RefCell::default();
}

/// How a stub call answers: the serialized result or error, or why not.
type Reply = oneshot::Sender<Result<RpcAnswer, String>>;

/// A stub call (or, with reply 0, a release) on its way into the isolate
/// that exported the stub.
struct Callback {
    export: u32,
    method: Option<String>,
    payload: Vec<u8>,
    reply: u32,
}

/// One request's callbacks: those waiting for JavaScript to take them, or
/// the `rpcNext` op waiting for one.
#[derive(Default)]
struct Inbox {
    waiting: Option<u32>,
    queue: VecDeque<Callback>,
}

/// An isolate's side of its stubs, by request: its inboxes, the replies
/// its callbacks owe, the tokens it exported.
#[derive(Default)]
pub(crate) struct Inboxes {
    by_ctx: RefCell<HashMap<u32, Inbox>>,
    replies: RefCell<IdMap<(u32, Reply)>>,
    next_reply: std::cell::Cell<u32>,
    tokens: RefCell<HashMap<u32, Vec<u64>>>,
}

const DISPOSED: &str = "Attempted to use RPC stub after it has been disposed.";
const GONE: &str = "RPC stub call failed: the Worker that passed it is gone, or the request that passed it has ended.";

impl RequestResources for Inboxes {
    fn drop_for(&self, ctx: Option<u32>) {
        let keep = |c: &u32| ctx.is_some_and(|ctx| ctx != *c);
        self.by_ctx.borrow_mut().retain(|c, _| keep(c));
        self.replies.borrow_mut().retain(|_, (c, _)| keep(c));
        let mut dropped = Vec::new();
        self.tokens.borrow_mut().retain(|c, tokens| {
            let kept = keep(c);
            if !kept {
                dropped.append(tokens);
            }
            kept
        });
        TARGETS.with_borrow_mut(|targets| {
            for token in dropped {
                targets.remove(&token);
            }
        });
    }
}

fn inboxes(host: &HostState) -> HostResult<&Inboxes> {
    host.state::<Inboxes>()
        .ok_or_else(|| HostError::type_error("RPC stubs are not available"))
}

/// A fresh token: 53 random bits (a JS number holds it exactly), never 0.
fn new_token() -> HostResult<u64> {
    loop {
        let token = getrandom::u64().map_err(|e| HostError::type_error(e.to_string()))?;
        let token = token & ((1 << 53) - 1);
        if token != 0 && !TARGETS.with_borrow(|t| t.contains_key(&token)) {
            return Ok(token);
        }
    }
}

/// A token from JavaScript; 0 (no token) for anything but a whole number.
fn token_of(value: f64) -> u64 {
    if value.is_finite() && value >= 1.0 && value.fract() == 0.0 && value < 9.007e15 {
        // A whole number under 2^53: exact.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        return value as u64;
    }
    0
}

host_fn! {
/// `rpcExport(exportId)` → `[token, fresh]`: export `exportId` of this
/// request (its table is js/31_rpc.js's) under a new token; `fresh` when
/// the request had no inbox yet (JavaScript then starts taking
/// callbacks, `rpcNext`).
pub(crate) fn rpc_export<'s>(
    scope,
    host: Rc<HostState>,
    export: u32,
) -> HostResult<v8::Local<'s, v8::Value>> {
    let ctx = host.current();
    let state = inboxes(&host)?;
    let token = new_token()?;
    let owner = host.turns();
    TARGETS.with_borrow_mut(|t| t.insert(token, Target { owner, ctx, export }));
    state.tokens.borrow_mut().entry(ctx).or_default().push(token);
    let mut by_ctx = state.by_ctx.borrow_mut();
    let fresh = !by_ctx.contains_key(&ctx);
    by_ctx.entry(ctx).or_default();
    // Below 2^53: exact as a double.
    #[allow(clippy::cast_precision_loss)]
    let token: v8::Local<v8::Value> = v8::Number::new(scope, token as f64).into();
    let fresh: v8::Local<v8::Value> = v8::Boolean::new(scope, fresh).into();
    Ok(v8::Array::new_with_elements(scope, &[token, fresh]).into())
}
}

host_fn! {
/// `rpcCtx()` → the id of the request this turn runs for.
pub(crate) fn rpc_ctx<'s>(scope, host: Rc<HostState>) -> f64 {
    let _ = scope;
    f64::from(host.current())
}
}

host_fn! {
/// `rpcRelease(token, notify)`: the token calls nothing more; with
/// `notify`, its exporter hears it (a stub it returned was disposed).
pub(crate) fn rpc_release<'s>(scope, host: Rc<HostState>, token: f64, notify: bool) {
    let _ = (scope, host);
    let Some(target) = TARGETS.with_borrow_mut(|t| t.remove(&token_of(token))) else {
        return;
    };
    if notify {
        let release = Callback { export: target.export, method: None, payload: Vec::new(), reply: 0 };
        let _ = deliver(&target, release);
    }
}
}

/// Hands `callback` to the request that exported its target: to its
/// waiting `rpcNext` (settled in a turn of its own, later), or queued.
fn deliver(target: &Target, callback: Callback) -> Result<(), &'static str> {
    let owner = target.owner.upgrade().ok_or(GONE)?;
    let state = owner.host().state::<Inboxes>().ok_or(GONE)?;
    let mut by_ctx = state.by_ctx.borrow_mut();
    let inbox = by_ctx.get_mut(&target.ctx).ok_or(GONE)?;
    let Some(op) = inbox.waiting.take() else {
        inbox.queue.push_back(callback);
        return Ok(());
    };
    let owner = target.owner.clone();
    tokio::task::spawn_local(async move {
        if let Some(owner) = owner.upgrade() {
            owner.settle(op, Settlement::custom(Delivered(callback)));
        }
    });
    Ok(())
}

/// A call for `target`, its reply kept by the exporter until answered.
fn call_into(
    target: &Target,
    method: Option<String>,
    payload: Vec<u8>,
    reply: Reply,
) -> Result<(), &'static str> {
    let owner = target.owner.upgrade().ok_or(GONE)?;
    let state = owner.host().state::<Inboxes>().ok_or(GONE)?;
    let id = state.next_reply.get().wrapping_add(1).max(1);
    state.next_reply.set(id);
    state.replies.borrow_mut().insert(id, (target.ctx, reply));
    let callback = Callback {
        export: target.export,
        method,
        payload,
        reply: id,
    };
    deliver(target, callback).inspect_err(|_| {
        state.replies.borrow_mut().remove(&id);
    })
}

host_fn! {
/// `stubCall(token, method, payload)` → Promise of the serialized result
/// (a `Uint8Array`), rejected with the serialized error thrown (a
/// `Uint8Array`) or an `Error` (a disposed stub, its Worker gone). `method`
/// null calls the function itself. One subrequest of this request's.
pub(crate) fn stub_call<'s>(
    scope,
    host: Rc<HostState>,
    token: f64,
    method: Option<String>,
    payload: Option<Vec<u8>>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let ctx = host.current();
    let (tx, rx) = oneshot::channel();
    let early = start_call(&host, ctx, token_of(token), method, payload.unwrap_or_default(), tx);
    let (resolver, promise, ()) = match begin_op(scope, early)? {
        Ok(begun) => begun,
        Err(rejected) => return Some(rejected),
    };
    let resolver = v8::Global::new(scope, resolver);
    let op = host.add_op(ctx, resolver);
    let me = host.turns();
    let task = tokio::task::spawn_local(async move {
        let answer = rx.await.unwrap_or_else(|_| Err(GONE.to_owned()));
        if let Some(isolate) = me.upgrade() {
            isolate.settle(op, Settlement::custom(Answered(answer)));
        }
    });
    host.set_op_task(op, task.abort_handle());
    Some(promise)
}
}

fn start_call(
    host: &HostState,
    ctx: u32,
    token: u64,
    method: Option<String>,
    payload: Vec<u8>,
    reply: Reply,
) -> HostResult<()> {
    host.take_call(ctx)?;
    // The callback runs as deep as this request's calls would: a chain
    // through callbacks meets the depth bound (`MAX_DEPTH`) too.
    let hops = host.outbound_hops(ctx);
    TARGETS
        .with_borrow(|targets| {
            let target = targets.get(&token).ok_or(DISPOSED)?;
            if let Some(owner) = target.owner.upgrade() {
                owner.host().raise_hops(target.ctx, hops);
            }
            call_into(target, method, payload, reply)
        })
        .map_err(|message| HostError::new(isolane_engine::api::ErrorClass::Error, message))
}

host_fn! {
/// `rpcNext()` → Promise of this request's next callback, `{export,
/// method, payload, reply}` (`reply` 0: the export was released).
pub(crate) fn rpc_next<'s>(scope, host: Rc<HostState>) -> HostResult<v8::Local<'s, v8::Promise>> {
    let ctx = host.current();
    let state = inboxes(&host)?;
    let (resolver, promise) = new_promise(scope).ok_or_else(|| HostError::type_error("out of memory"))?;
    let mut by_ctx = state.by_ctx.borrow_mut();
    let inbox = by_ctx.entry(ctx).or_default();
    if let Some(callback) = inbox.queue.pop_front() {
        drop(by_ctx);
        if let Ok(value) = Box::new(Delivered(callback)).into_js(scope) {
            resolver.resolve(scope, value);
        }
        return Ok(promise);
    }
    let resolver = v8::Global::new(scope, resolver);
    inbox.waiting = Some(host.add_op(ctx, resolver));
    Ok(promise)
}
}

host_fn! {
/// `rpcReply(reply, threw, bytes)`: a callback's answer, the serialized
/// result or thrown error; a reply whose caller is gone is dropped.
pub(crate) fn rpc_reply<'s>(scope, host: Rc<HostState>, reply: u32, threw: bool, bytes: Option<Vec<u8>>) {
    let _ = scope;
    let Ok(state) = inboxes(&host) else { return };
    let Some((_, sender)) = state.replies.borrow_mut().remove(&reply) else {
        return;
    };
    let bytes = bytes.unwrap_or_default().into();
    let _ = sender.send(Ok(if threw { RpcAnswer::Threw(bytes) } else { RpcAnswer::Returned(bytes) }));
}
}

/// A callback as `rpcNext` resolves with it.
struct Delivered(Callback);

impl Settle for Delivered {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        let Callback {
            export,
            method,
            payload,
            reply,
        } = self.0;
        let object = holder(scope);
        let export = v8::Integer::new_from_unsigned(scope, export).into();
        set(scope, object, "export", Some(export));
        let method = match method {
            Some(method) => js_string(scope, &method),
            None => Some(v8::null(scope).into()),
        };
        set(scope, object, "method", method);
        let payload = u8_array(scope, payload).map(Into::into);
        set(scope, object, "payload", payload);
        let reply = v8::Integer::new_from_unsigned(scope, reply).into();
        set(scope, object, "reply", Some(reply));
        Ok(object.into())
    }
}
