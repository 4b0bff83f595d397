//! One request on its engine thread, from its job to its finished body:
//! [`serve`], the gates before its Worker runs ([`admit`]), the one refusal
//! path ([`refuse`]), the Worker's head or failure, and the rest of the
//! request once it was answered ([`Rest`]).

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, oneshot};

use super::{ThreadState, acquire, report_evictions, report_gauges};
use crate::body::Body;
use crate::bundle::WorkerBundle;
use crate::config::PoolMode;
use crate::host::IsolateTurns;
use crate::invocation::Watch;
use crate::isolate::{TurnError, WorkerIsolate};
use crate::job::{Job, Reply};
use crate::observer::TerminationReason;
use crate::outcome::{ExecuteError, Outcome};
use crate::thread_ctx::ThreadCtx;
use crate::work::{Event, Work};
use isolane_calltree::CallTree;

/// Counts a request in flight for the drain at shutdown.
struct InFlight<'a>(&'a ThreadState);

impl<'a> InFlight<'a> {
    fn new(state: &'a ThreadState) -> Self {
        state.in_flight.set(state.in_flight.get() + 1);
        Self(state)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let n = self.0.in_flight.get().saturating_sub(1);
        self.0.in_flight.set(n);
        self.0.last_activity.set(Instant::now());
        if n == 0 {
            self.0.idle.notify_waiters();
        }
    }
}

/// Starts serving `job` as a task of its own. The request's future is
/// boxed once here: it is kilobytes (every await of the request path), and
/// unboxed it was copied whole into `spawn_local` and again into the task.
pub(super) fn start(state: &Rc<ThreadState>, job: Job, permit: Option<OwnedSemaphorePermit>) {
    tokio::task::spawn_local(Box::pin(serve(state.clone(), job, permit)));
}

/// Frees its namespace's slot when the request ends, however it ends.
struct Slot<'a> {
    state: &'a ThreadState,
    bundle: Arc<WorkerBundle>,
    nested: bool,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let state = self.state;
        let under = state.ctx.schedule.borrow_mut().finished(
            self.bundle.namespace(),
            state.guarantee,
            self.nested,
        );
        if under {
            state.under_guarantee.notify_one();
        }
    }
}

/// One request, from job to finished body; then its namespace's slot is free.
///
/// Every event of the request names its one span, `engine.request` (the
/// Worker, revision, thread and request id; a debug span, so it costs
/// nothing when debug logs are off). A request the Worker does not answer
/// ends in [`refuse`], the one refusal path; the engine renders no page.
async fn serve(state: Rc<ThreadState>, job: Job, _permit: Option<OwnedSemaphorePermit>) {
    let state = &state;
    let _slot = Slot {
        state,
        bundle: job.bundle.clone(),
        nested: job.work.is_service_call(),
    };
    let _in_flight = InFlight::new(state);
    let started = Instant::now();
    let ctx = &state.ctx;
    let (bundle, reply) = (job.bundle, job.reply);
    // The work that calls the Worker's code, or a prewarm (`Work::into_call`).
    let (request, call) = match job.work.into_call() {
        Ok((request, event)) => (request, Ok(event)),
        Err(Work::Prewarm { mode, request }) => (request, Err(mode)),
        // `receive` takes retirements before they reach a queue.
        Err(_) => return super::retire(state, &bundle.id),
    };
    let (parts, body) = request.into_parts();
    let request_id = request_id(state, &parts);
    let span = tracing::debug_span!("engine.request", worker.id = %bundle.id, revision = %bundle.revision, thread = ctx.index, request.id = %request_id);
    tracing::debug!(parent: &span, method = %parts.method, uri = %parts.uri, "request");
    let refused = Refused {
        span: &span,
        bundle: &bundle,
        parts: &parts,
        request_id: &request_id,
        started,
    };
    let event = match call {
        Ok(event) => event,
        Err(mode) => return prewarmed(state, &refused, mode, reply),
    };
    let isolate = match admit(state, &refused) {
        Ok(isolate) => isolate,
        Err(error) => return refuse(ctx, &refused, error, reply),
    };
    let body_limit = ctx.config.max_request_body_bytes;
    let deadline = started + bundle.limits.wall();
    let (req, running) = begin(ctx, &isolate, &bundle, &parts, &request_id, deadline);
    let watch = Watch::begin(
        ctx,
        &bundle,
        &parts,
        &request_id,
        Some((&isolate.host, req)),
    );
    let tripped = handle(&isolate, req, &parts, &event, body, body_limit);
    let (mut reply, rx) = (reply, running.head_rx);
    let head = Head { rx, deadline };
    let result = answer(state, &isolate, req, &bundle, head, &mut reply).await;
    let result = settled(result, tripped.as_ref(), body_limit, &span);
    let status = match &result {
        Ok(response) => response.status().as_u16(),
        Err(error) => error.status().as_u16(),
    };
    let answered = result.is_ok();
    let _ = reply.send(result);
    let rest = Rest {
        isolate,
        req,
        bundle,
        started,
        deadline,
        answered,
        watch,
        status,
        exemplar: running.exemplar,
        tree: parts.extensions.get::<Arc<CallTree>>().cloned(),
    };
    rest.run(state, running.done_rx).await;
}

/// A prewarm's answer (`thread::prewarm`): a 204, or why the revision could
/// not be loaded.
fn prewarmed(state: &ThreadState, at: &Refused<'_>, mode: crate::Prewarm, reply: Reply) {
    let result = super::prewarm(state, at.bundle, mode);
    if let Err(error) = &result {
        tracing::warn!(parent: at.span, worker.id = %at.bundle.id, revision = %at.bundle.revision, thread = state.ctx.index, %error, "prewarm failed");
    }
    let _ = reply.send(result);
}

/// The request's result as the front end gets it: when the client's body
/// broke at the cap and the Worker did not answer by itself, refused as too
/// large (`body_cap.rs`).
fn settled(
    result: Result<http::Response<Body>, ExecuteError>,
    tripped: Option<&crate::body_cap::Tripped>,
    body_limit: u64,
    span: &tracing::Span,
) -> Result<http::Response<Body>, ExecuteError> {
    let result = match result {
        Err(_) if tripped.is_some_and(|t| t.get()) => Err(crate::body_cap::refusal(body_limit)),
        result => result,
    };
    if let Err(error) = &result {
        tracing::debug!(parent: span, reason = error.reason(), "request failed");
    }
    result
}

/// A request `serve` may still refuse: what its refusal is logged, told
/// and counted with.
struct Refused<'a> {
    span: &'a tracing::Span,
    bundle: &'a Arc<WorkerBundle>,
    parts: &'a http::request::Parts,
    request_id: &'a Arc<str>,
    started: Instant,
}

/// The one way `serve` refuses a request its Worker did not answer: logged
/// in the request's span, told to its tail, counted, and the typed error
/// handed back (the front end renders its page).
fn refuse(ctx: &ThreadCtx, at: &Refused<'_>, error: ExecuteError, reply: Reply) {
    tracing::debug!(parent: at.span, %error, reason = error.reason(), "refused");
    let wall = at.started.elapsed();
    if let Some(watch) = Watch::begin(ctx, at.bundle, at.parts, at.request_id, None) {
        watch.failed(ctx, at.bundle, &error, wall);
    }
    ctx.observer
        .request_finished(ctx.index, error.outcome(), wall, Duration::ZERO);
    let _ = reply.send(Err(error));
}

/// The gates before the Worker runs: the body's declared length under the
/// cap (no isolate is touched otherwise), then the Worker's isolate.
fn admit(state: &ThreadState, at: &Refused<'_>) -> Result<Rc<WorkerIsolate>, ExecuteError> {
    let limit = state.ctx.config.max_request_body_bytes;
    if crate::body_cap::declared_over(&at.parts.headers, limit) {
        return Err(crate::body_cap::refusal(limit));
    }
    let trace = at.parts.extensions.get::<crate::RequestTrace>();
    let acquired = match trace {
        None => acquire(state, at.bundle),
        Some(trace) => trace.acquire().in_scope(|| acquire(state, at.bundle)),
    };
    acquired.inspect_err(|error| {
        tracing::warn!(parent: at.span, worker.id = %at.bundle.id, revision = %at.bundle.revision, thread = state.ctx.index, %error, "worker unavailable");
    })
}

/// Where a request's head arrives, and by when it must.
type HeadRx = oneshot::Receiver<Result<http::Response<Body>, ExecuteError>>;

/// A request begun on its isolate: where its head and its end arrive.
struct Running {
    head_rx: HeadRx,
    done_rx: oneshot::Receiver<()>,
    /// The request's sampled trace id: its wall time's exemplar.
    exemplar: Option<[u8; 16]>,
}

/// The Worker's head to wait for, within the request's wall limit.
struct Head {
    rx: HeadRx,
    deadline: Instant,
}

/// Begins the request on `isolate`'s host: its limits, trace, client and
/// hop count.
fn begin(
    ctx: &ThreadCtx,
    isolate: &WorkerIsolate,
    bundle: &WorkerBundle,
    parts: &http::request::Parts,
    request_id: &Arc<str>,
    deadline: Instant,
) -> (u32, Running) {
    let (head_tx, head_rx) = oneshot::channel();
    let (done_tx, done_rx) = oneshot::channel();
    let host = &isolate.host;
    // A call whose caller lowered the callee's limits (a dispatch call's
    // `limits`): the lower of the two.
    let lowered = parts.extensions.get::<crate::service_call::CallLimits>();
    let cpu_ms = ctx.config.cpu_limit_ms(&bundle.limits);
    let cpu_ms = lowered.map_or(cpu_ms, |limits| limits.cpu_ms(cpu_ms));
    let req = host.begin_request(
        request_id.clone(),
        head_tx,
        done_tx,
        Duration::from_millis(cpu_ms),
        deadline,
        incoming_hops(&parts.headers),
    );
    if let Some(cap) = lowered.and_then(|limits| limits.subrequests) {
        host.cap_subrequests(req, cap);
    }
    if let Some(tree) = parts.extensions.get::<Arc<CallTree>>() {
        host.join_call_tree(req, tree.clone());
    }
    // A dispatched call whose binding names an outbound Worker: the
    // request's own (`host/service.rs`), not its Worker's.
    if let Some(outbound) = parts
        .extensions
        .get::<Arc<crate::service_call::CallOutbound>>()
    {
        host.set_call_outbound(req, outbound.clone());
    }
    let trace = parts.extensions.get::<crate::RequestTrace>().cloned();
    let exemplar = trace.as_ref().and_then(|trace| trace.sampled_trace_id);
    if let Some(trace) = trace {
        host.set_trace(req, trace);
    }
    // A WebSocket handshake: its client's share of the Worker's sockets
    // (`host/socket_count.rs`). Plain requests look up one header more.
    if parts.headers.contains_key(http::header::UPGRADE)
        && let Some(client) = parts.headers.get(crate::host::socket_count::CLIENT_HEADER)
    {
        host.set_client(req, client.clone());
    }
    let running = Running {
        head_rx,
        done_rx,
        exemplar,
    };
    (req, running)
}

/// Hands request `req` to its Worker: its body (capped at `body_limit`),
/// then its handler, called for `event`. The cap's state, when the request has a body.
fn handle(
    isolate: &WorkerIsolate,
    req: u32,
    parts: &http::request::Parts,
    event: &Event,
    body: Body,
    body_limit: u64,
) -> Option<crate::body_cap::Tripped> {
    let host = &isolate.host;
    let mut tripped = None;
    let body_id = if http_body::Body::is_end_stream(&body) {
        0
    } else {
        let (body, cap) = crate::body_cap::cap(body, body_limit);
        tripped = Some(cap);
        host.register_body(req, body)
    };
    match isolate.handle_request(req, parts, &request_url(parts), body_id, event) {
        Ok(()) | Err(TurnError::Terminated(_)) => {}
        Err(TurnError::Threw { message, stack }) => {
            crate::host::console::report_exception(host, req, "handler threw", &message, &stack);
            host.fail_request(req, ExecuteError::Exception { message });
        }
        Err(TurnError::Condemned) => host.fail_request(
            req,
            ExecuteError::Canceled {
                reason: "the isolate was discarded",
            },
        ),
    }
    tripped
}

/// The Worker's head, or why there is none: its failure, the wall limit, or
/// the caller gone (then the request's signal is aborted and the request
/// canceled, so its slot is free at once and nothing more of it runs).
async fn answer(
    state: &ThreadState,
    isolate: &Rc<WorkerIsolate>,
    req: u32,
    bundle: &Arc<WorkerBundle>,
    head: Head,
    reply: &mut Reply,
) -> Result<http::Response<Body>, ExecuteError> {
    let head = tokio::time::timeout_at(head.deadline.into(), head.rx);
    tokio::pin!(head);
    let mut client_gone = false;
    let head = loop {
        tokio::select! {
            biased;
            head = &mut head => break head,
            () = reply.closed(), if !client_gone => {
                client_gone = true;
                isolate.request_aborted(req);
                isolate.host.fail_request(req, ExecuteError::Canceled {
                    reason: "the client went away",
                });
            }
        }
    };
    match head {
        Ok(Ok(result)) => result,
        Ok(Err(_)) => Err(ExecuteError::Canceled {
            reason: "the worker never answered",
        }),
        Err(_) => Err(wall_timeout(state, isolate, req, bundle)),
    }
}

/// What is left of a request once it was answered.
struct Rest {
    isolate: Rc<WorkerIsolate>,
    req: u32,
    bundle: Arc<WorkerBundle>,
    started: Instant,
    deadline: Instant,
    /// Whether a response went out (else there is nothing to wait for).
    answered: bool,
    /// Someone tails the Worker: the invocation's event (`invocation.rs`).
    watch: Option<Box<Watch>>,
    /// The status answered, for the event.
    status: u16,
    /// The request's sampled trace id: its wall time's exemplar.
    exemplar: Option<[u8; 16]>,
    /// A service call's tree: it ends with it (`isolane-calltree`).
    tree: Option<Arc<CallTree>>,
}

impl Rest {
    /// The rest of the request, here, or as a task of its own when it
    /// holds a WebSocket: the request lives on as long as its socket, but no
    /// longer holds a slot of its namespace (nor the drain at shutdown); its
    /// sockets are capped by `max_sockets_per_worker` instead.
    async fn run(self, state: &Rc<ThreadState>, done_rx: oneshot::Receiver<()>) {
        if self.answered && self.isolate.host.held(self.req) {
            let state = Rc::clone(state);
            tokio::task::spawn_local(async move { self.finish(&state, done_rx).await });
            return;
        }
        self.finish(state, done_rx).await;
    }

    /// The rest: a streamed body, then `ctx.waitUntil` work, within the wall
    /// limit (or an open WebSocket); then the request is forgotten and the
    /// isolate goes back to the pool.
    async fn finish(self, state: &ThreadState, done_rx: oneshot::Receiver<()>) {
        let Rest {
            isolate,
            req,
            bundle,
            started,
            deadline,
            answered,
            watch,
            status,
            exemplar,
            tree,
        } = self;
        let ctx = &state.ctx;
        if answered {
            let waited = wait_done(state, &isolate, req, &bundle, deadline, done_rx);
            // Most requests are no service call: they await their rest
            // directly, and only a call's (boxed) wait watches its tree.
            let ended = match tree {
                None => {
                    waited.await;
                    false
                }
                Some(tree) => !Box::pin(tree.unless_ended(waited)).await,
            };
            if ended {
                isolate.request_aborted(req); // as when its client goes away
                let reason = "its top-level request ended";
                isolate
                    .host
                    .fail_request(req, ExecuteError::Canceled { reason });
            }
        }
        if isolate.host.lingered(req) {
            isolate.request_aborted(req); // its end hooks, in JavaScript
        }
        isolate.make_owed_code_caches();
        let (cpu, failure) = isolate.host.finish_request(req);
        let outcome = failure.unwrap_or(Outcome::Ok);
        let wall = started.elapsed();
        ctx.observer.request_finished(ctx.index, outcome, wall, cpu);
        if let Some(trace_id) = exemplar {
            ctx.observer
                .request_exemplar(ctx.index, outcome, wall, trace_id);
        }
        if let Some(watch) = watch {
            watch.end(ctx, &bundle, &isolate.host, req, outcome, status, wall, cpu);
        }
        release(state, &bundle, isolate);
    }
}

/// The request is done with `isolate`: back to the pool.
fn release(state: &ThreadState, bundle: &Arc<WorkerBundle>, isolate: Rc<WorkerIsolate>) {
    let ctx = &state.ctx;
    if ctx.config.pool_mode != PoolMode::Legacy {
        let mut evicted = Vec::new();
        state
            .pool
            .borrow_mut()
            .release(bundle, &isolate, &mut evicted);
        report_evictions(state, evicted);
        drop(isolate);
        report_gauges(state);
    }
}

/// Waits for the rest of an answered request: a streamed body, then
/// `ctx.waitUntil` work, within the wall limit; past it, as long as an open
/// WebSocket holds the request (each of its events has its own wall time,
/// `HostState::top_up`, and the socket its idle timeout), and what its
/// events left (their `waitUntil` work) within the last one's.
async fn wait_done(
    state: &ThreadState,
    isolate: &Rc<WorkerIsolate>,
    req: u32,
    bundle: &Arc<WorkerBundle>,
    mut until: Instant,
    mut done_rx: oneshot::Receiver<()>,
) {
    loop {
        if tokio::time::timeout_at(until.into(), &mut done_rx)
            .await
            .is_ok()
        {
            return;
        }
        let now = Instant::now();
        match isolate.host.deadline(req) {
            Some(last) if last > now => until = last,
            // Held: looked at again after a wall limit (the socket may be idle).
            _ if isolate.host.held(req) => until = now + bundle.limits.wall(),
            _ => break,
        }
    }
    wall_timeout(state, isolate, req, bundle);
}

/// How many times the request passed through a worker's `fetch` already.
fn incoming_hops(headers: &http::HeaderMap) -> u32 {
    headers
        .get(crate::HOPS_HEADER)
        .and_then(|v| v.to_str().ok()?.trim().parse().ok())
        .unwrap_or(0)
}

/// The request ran out of wall time while no JavaScript was running (a turn
/// that overruns is stopped by the watchdog instead): fail it and drop its
/// timers and pending I/O. The isolate stays usable for other requests.
fn wall_timeout(
    state: &ThreadState,
    isolate: &WorkerIsolate,
    req: u32,
    bundle: &WorkerBundle,
) -> ExecuteError {
    state
        .ctx
        .observer
        .termination(state.ctx.index, TerminationReason::WallTimeout);
    tracing::warn!(worker.id = %bundle.id, revision = %bundle.revision, thread = state.ctx.index, request.id = isolate.host.request_id(req).as_deref().unwrap_or(""), "wall time limit exceeded");
    let error = || ExecuteError::WallTimeout {
        limit_ms: u64::from(bundle.limits.wall_ms),
    };
    isolate.host.fail_request(req, error());
    error()
}

fn request_id(state: &ThreadState, parts: &http::request::Parts) -> Arc<str> {
    if let Some(id) = parts
        .headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
    {
        return Arc::from(id);
    }
    let seq = state.seq.get() + 1;
    state.seq.set(seq);
    Arc::from(format!("{}-{seq}", state.ctx.index))
}

/// The absolute URL the worker sees (`request.url`).
fn request_url(parts: &http::request::Parts) -> String {
    if parts.uri.scheme().is_some() {
        return parts.uri.to_string();
    }
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or("localhost");
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    format!("http://{host}{path}")
}
