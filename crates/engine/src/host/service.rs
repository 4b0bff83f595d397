//! Service bindings' engine mechanics (`services`, wrangler's
//! `[[services]]`): a call through `env.SVC.fetch` is a
//! [`crate::Work::ServiceCall`] run on the **caller's own engine thread**,
//! in the called Worker's isolate there (loaded like any Worker's, under
//! its own limits), so it crosses no thread. The called Worker is found as
//! a Durable Object class's host is (`host/object_hosted.rs`): by the
//! caller's own namespace and the binding's Worker name, in the Workers
//! this process serves (`Engine::set_workers`).
//!
//! The call starts at once, beyond the thread's slots (`thread.rs`,
//! `Start::Now`): its caller holds a slot already, and a call that waited
//! for one could wait on its own caller. A chain is bounded by
//! `MAX_DEPTH`, counted as a fetch's hops are (`x-isolane-hops`), which
//! also ends a cycle; and by the caller's wall limit; and by its tree's
//! budgets and its namespace's queue share (`isolane-calltree`).
//!
//! What JavaScript sees (`env.SVC.fetch`, the host function) is
//! `isolane-bindings`' (`service.rs`); this is what it needs of the core,
//! through the door (`api::service`). The call's own description, which
//! the job carries, is `service_call.rs`.

use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use http::HeaderValue;
use http::header::HeaderName;
use http_body_util::BodyExt;

use super::error::{ErrorClass, HostError};
use super::object_hosted::served_worker;
use super::{HostState, IsolateTurns, Settlement};
use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::dispatch::run_on;
use crate::observer::{ServiceCallKind, ServicePlace};
use crate::service_call::{
    CallLimits, CallOutbound, RPC_RETURNED, RPC_THREW, ServiceCall, within_depth,
};
use crate::work::Work;
use isolane_calltree::{CallTree, LoadedCall};

/// A service call ready to run: the called Worker, the call, the hop
/// count its request carries, and the limits its caller lowered.
#[derive(Debug)]
pub struct Outbound {
    bundle: Arc<WorkerBundle>,
    call: ServiceCall,
    hops: u32,
    limits: CallLimits,
    /// A dispatched call's outbound Worker, which the callee's request
    /// keeps (`None` for every other call).
    outbound: Option<Arc<CallOutbound>>,
    /// The caller's tree of calls; a loaded Worker's place in it.
    tree: Option<Arc<CallTree>>,
    loaded: Option<LoadedCall>,
}

/// The call request `ctx` makes through its Worker's binding `binding`:
/// refused (an `Error` the caller can catch) past `MAX_DEPTH`, or when
/// the called Worker is not served here.
pub fn prepare(host: &HostState, ctx: u32, binding: &str) -> Result<Outbound, HostError> {
    let caller = host
        .worker
        .get()
        .ok_or_else(|| HostError::type_error("service binding: no Worker is loaded"))?;
    let target = caller.services.get(binding).ok_or_else(|| {
        HostError::type_error(format!("{binding} is not a service binding of this Worker"))
    })?;
    let bundle = served_worker(host, caller.namespace(), &target.worker).ok_or_else(|| {
        HostError::new(
            ErrorClass::Error,
            format!(
                "Service call failed: Worker {} is not running in this namespace",
                target.worker
            ),
        )
    })?;
    let call = ServiceCall {
        entrypoint: target.entrypoint.clone(),
        method: None,
        props: target.props.clone(),
        payload: None,
        params: None,
    };
    prepare_call(host, ctx, bundle, call, CallLimits::default())
}

/// A dispatch namespace binding's call of Worker `worker` of `namespace`
/// (its consent checked by the caller, `isolane-bindings`), under
/// `limits`, its every `fetch()` through `outbound` when the binding names
/// one (the call's own: the Worker's isolates are the same whatever it
/// is): refused past `MAX_DEPTH`, or as Cloudflare's `Worker not found`
/// when the namespace has no such Worker here.
pub fn prepare_dispatch(
    host: &HostState,
    ctx: u32,
    (namespace, worker): (&str, &str),
    limits: CallLimits,
    outbound: Option<CallOutbound>,
) -> Result<Outbound, HostError> {
    let bundle = isolane_worker::is_worker_name(worker)
        .then(|| served_worker(host, namespace, worker))
        .flatten()
        .ok_or_else(|| {
            let message =
                format!("Worker not found: no Worker {worker:?} in dispatch namespace {namespace}");
            HostError::new(ErrorClass::Error, message)
        })?;
    let mut call = prepare_call(host, ctx, bundle, ServiceCall::default(), limits)?;
    call.outbound = outbound.map(Arc::new);
    Ok(call)
}

/// The call a `fetch()` of request `ctx` makes when its caller gave it
/// outbound Worker `to` (a dispatched call's): that Worker's `fetch`
/// handler, `to`'s params in its `env` for this call only.
pub fn prepare_through(
    host: &HostState,
    ctx: u32,
    to: &CallOutbound,
) -> Result<Outbound, HostError> {
    let bundle = served_worker(host, &to.namespace, &to.worker).ok_or_else(|| {
        HostError::new(
            ErrorClass::Error,
            format!(
                "fetch() through the outbound Worker failed: Worker {} is not running in namespace {}",
                to.worker, to.namespace
            ),
        )
    })?;
    let call = ServiceCall {
        params: to.params.clone(),
        ..ServiceCall::default()
    };
    prepare_call(host, ctx, bundle, call, CallLimits::default())
}

/// A call of `bundle` as `call` from request `ctx`, under `limits`:
/// refused past `MAX_DEPTH`. Every call is made here: a service
/// binding's, a dispatch namespace binding's, and a Worker Loader's call
/// of the code it loaded (`isolane-bindings` makes that bundle).
pub fn prepare_call(
    host: &HostState,
    ctx: u32,
    bundle: Arc<WorkerBundle>,
    call: ServiceCall,
    limits: CallLimits,
) -> Result<Outbound, HostError> {
    let hops =
        within_depth(host.outbound_hops(ctx)).map_err(|e| HostError::new(ErrorClass::Error, e))?;
    Ok(Outbound {
        bundle,
        call,
        hops,
        limits,
        outbound: None,
        tree: host.call_tree(ctx),
        loaded: None,
    })
}

impl Outbound {
    /// The call as Worker Loader code's: one of its tree's loaded Workers
    /// in flight, refused past `MAX_LOADED_IN_FLIGHT`.
    pub fn loaded(mut self) -> Result<Self, HostError> {
        if let Some(tree) = &self.tree {
            let call = tree.enter_loaded(&self.bundle.id);
            self.loaded = Some(call.map_err(|e| HostError::new(ErrorClass::Error, e))?);
        }
        Ok(self)
    }

    /// The call as a JS RPC call of `method` (`env.SVC.method(...)`)
    /// with its serialized arguments: the callee's JavaScript gets them as
    /// they are (`ServiceCall::payload`) and answers with [`rpc_answer`]'s
    /// bytes; no `Request` nor `Response` is made on either side.
    #[must_use]
    pub fn rpc(mut self, method: String, payload: Bytes) -> Self {
        self.call.method = Some(method);
        self.call.payload = Some(payload);
        self
    }

    /// Runs the call with `request` on this thread (the job goes through
    /// the thread's own queue, taken between turns): the called Worker's
    /// response, its body streamed, or why there is none.
    pub fn run(
        self,
        host: &HostState,
        mut request: http::Request<Body>,
    ) -> impl Future<Output = Result<http::Response<Body>, String>> + 'static {
        request.headers_mut().insert(
            HeaderName::from_static(crate::HOPS_HEADER),
            HeaderValue::from(self.hops),
        );
        if self.limits != CallLimits::default() {
            request.extensions_mut().insert(self.limits);
        }
        if let Some(outbound) = self.outbound {
            request.extensions_mut().insert(outbound);
        }
        // Its place in its tree's share of the thread's queue
        // (`isolane-calltree`'s `queue`), held until its job is taken off it.
        let place = (self.tree.as_ref()).map(|tree| tree.queue_place(host.thread.index));
        if let Some(tree) = self.tree {
            request.extensions_mut().insert(tree);
        }
        let thread = host.thread.clone();
        let kind = match self.call.method {
            Some(_) => ServiceCallKind::Rpc,
            None => ServiceCallKind::Fetch,
        };
        thread.observer.service_call(ServicePlace::SameThread, kind);
        let (call, loaded) = (self.call, self.loaded); // in flight until the call's answer
        async move {
            let _loaded = loaded;
            if let Some(place) = place {
                request.extensions_mut().insert(place.await);
            }
            let work = Work::ServiceCall { call, request };
            let observer = &*thread.observer;
            run_on(
                &thread.shared,
                observer,
                thread.index,
                self.bundle,
                work,
                true,
            )
            .await
            .map_err(|error| error.to_string())
        }
    }
}

/// What a service call's answer settles its promise with: the response's
/// head (as `host.fetch`'s, its body streamed), or an `Error`.
pub fn settlement(
    isolate: &dyn IsolateTurns,
    ctx: u32,
    answer: Result<http::Response<Body>, String>,
    url: String,
) -> Settlement {
    match answer {
        Ok(response) => super::object_forward::response_head(isolate, ctx, response, url),
        Err(error) => Settlement::custom(HostError::new(
            ErrorClass::Error,
            format!("Service call failed: {error}"),
        )),
    }
}

/// What a JS RPC call answered: the serialized result, or the serialized
/// error its method threw.
#[derive(Debug)]
pub enum RpcAnswer {
    Returned(Bytes),
    Threw(Bytes),
}

/// The answer of an RPC call run by [`Outbound::run`] (a whole body, made
/// by the callee's `host.respond`), or why there is none.
pub async fn rpc_answer(answer: Result<http::Response<Body>, String>) -> Result<RpcAnswer, String> {
    let response = answer?;
    let status = response.status().as_u16();
    let collected = response.into_body().collect().await;
    let bytes = collected.map_err(|e| e.to_string())?.to_bytes();
    match status {
        RPC_RETURNED => Ok(RpcAnswer::Returned(bytes)),
        RPC_THREW => Ok(RpcAnswer::Threw(bytes)),
        other => Err(format!("the called Worker answered {other} to an RPC call")),
    }
}
