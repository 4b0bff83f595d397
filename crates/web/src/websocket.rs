//! The `websocket` unit: `WebSocketPair`, `WebSocket` and the `101`
//! response that hands a pair's client end to the front end
//! (js/26_websocket.js), and the host side of that hand-over. What the
//! front end and the thread share of a socket (its messages, its end, its
//! limits, `IsolateTurns::socket_event`) and the count of the Worker's
//! sockets on its thread (shared with `connect()`) are the core's.
//!
//! One socket is one [`Entry`] in the isolate's [`Sockets`], owned by the
//! request whose response carried it: that request stays open (a hold on
//! it, `HostState::hold`) until the socket closes, and everything of the
//! socket goes with the request however it ends (`Sockets::drop_for`, from
//! `HostState::finish_request`) — a limit that stops the Worker closes its
//! sockets with it. Messages from the client arrive on a task of their own
//! ([`pump`]); each runs as one turn with the request's CPU and wall budget
//! topped up (`IsolateTurns::socket_event`), as Cloudflare tops up per event.
//!
//! An outbound socket (`websocket/connect.rs`) is an [`Entry`] too, made by
//! [`open_entry`] like an accepted one; its peer is a server, reached by the
//! engine's own client (`websocket/client.rs`) instead of the front end.
//!
//! A Durable Object's hibernatable socket (`ctx.acceptWebSocket`,
//! `websocket/hibernation.rs`) is an [`Entry`] owned by its object instead of a
//! request: no request is held open for it, and its messages go to the
//! object as events of their own (`ObjectSocketEvent`), so the object may be
//! evicted from the heap while the socket stays open here.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::AbortHandle;

use isolane_engine::api::headers::lenient_header_map;
use isolane_engine::api::net::{Refused, Slot};
use isolane_engine::api::object::take_passed;
use isolane_engine::api::{
    HostError, HostResult, HostState, IdMap, IsolateTurns, RequestResources, Unit, value_string,
    view_bytes,
};
use isolane_engine::{
    Body, CloseFrame, ExecuteError, SocketEnd, SocketMessage, WebSocketConfig, WebSocketUpgrade,
};

pub(crate) mod client;
pub(crate) mod connect;
pub mod hibernation;

pub(crate) fn unit() -> Unit {
    Unit::new("websocket")
        .js(&["26_websocket.js"])
        .function("webSocketRespond", web_socket_respond)
        .function("webSocketSend", web_socket_send)
        .function("webSocketClose", web_socket_close)
        .function("webSocketAccepted", web_socket_accepted)
        .function("webSocketPass", web_socket_pass)
        .function("webSocketHalfOpen", web_socket_half_open)
        .request_state::<Sockets>()
}

/// Who keeps a socket instead of the request whose `101` carried it: a
/// Durable Object that accepted it for hibernation (`websocket/hibernation.rs`).
/// The WebSocket unit knows its keepers only through this trait, and the
/// unit of the keepers registers itself with [`set_hibernation`].
pub(crate) trait SocketKeeper {
    /// Socket `id` ended without a close handshake: its keeper hears of it.
    fn dropped(self: Rc<Self>, host: &HostState, id: u32, reason: &'static str);

    /// The keeper as `Any`, for its own unit to find its type again.
    fn into_any(self: Rc<Self>) -> Rc<dyn std::any::Any>;
}

/// What a `101` with a keeper becomes (`webSocketRespond`'s
/// `hibernation`): registered once per process by the keepers' unit.
pub(crate) trait Hibernation: Sync {
    /// The keeper `value` names, checked (its class bound, room for one
    /// more socket).
    fn keeper(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        host: &HostState,
        sockets: &Sockets,
        value: v8::Local<'_, v8::Value>,
    ) -> HostResult<Rc<dyn SocketKeeper>>;

    /// Opens the keeper's socket in its place `slot`: no request holds it.
    fn open(
        &self,
        host: &HostState,
        sockets: &Sockets,
        slot: Slot,
        keeper: Rc<dyn SocketKeeper>,
    ) -> (u32, SocketEnd);
}

/// The registered [`Hibernation`], if a unit registered one.
static HIBERNATION: std::sync::OnceLock<&'static dyn Hibernation> = std::sync::OnceLock::new();

/// Registers the keepers' unit (the units are made once per process; a
/// second registration is the same one and changes nothing).
pub(crate) fn set_hibernation(hibernation: &'static dyn Hibernation) {
    let _ = HIBERNATION.set(hibernation);
}

/// Close codes the engine uses of its own.
pub(crate) mod code {
    /// The peer went away without a close frame (never sent on the wire).
    pub(crate) const ABNORMAL: u16 = 1006;
    /// Idle for too long.
    pub(crate) const GOING_AWAY: u16 = 1001;
}

/// One open socket, seen from the Worker.
pub(crate) struct Entry {
    /// The request that holds it open; 0 for an object's hibernatable one.
    ctx: u32,
    /// To the front end; dropped (the channel ends) when the socket is
    /// dropped abnormally.
    out: mpsc::Sender<SocketMessage>,
    /// The task delivering the client's messages.
    pump: Option<AbortHandle>,
    /// When a message last crossed either way (the idle timeout).
    active: Cell<Instant>,
    /// The Worker sent its close frame.
    closed: Cell<bool>,
    /// The peer closed and the Worker's `close()` is the reply (half open).
    peer_closed: Cell<bool>,
    /// `accept({ allowHalfOpen })`: 1 half open, 2 auto reply, 0 by compatibility date.
    allow_half_open: Cell<u32>,
    /// Opened when the Worker accepts its end; the pump waits on it.
    accepted: Rc<tokio::sync::Notify>,
    /// Who keeps it instead of a request: the Durable Object that accepted
    /// it with `acceptWebSocket` ([`SocketKeeper`]).
    pub(crate) keeper: Option<Rc<dyn SocketKeeper>>,
    /// Its place in the Worker's and its client's counts.
    _slot: Slot,
}

/// The isolate's open sockets (the unit's state).
#[derive(Default)]
pub(crate) struct Sockets {
    pub(crate) open: RefCell<IdMap<Entry>>,
    next: Cell<u32>,
}

impl Sockets {
    pub(crate) fn insert(&self, entry: Entry) -> u32 {
        let id = self.next.get().wrapping_add(1).max(1);
        self.next.set(id);
        self.open.borrow_mut().insert(id, entry);
        id
    }

    pub(crate) fn out(&self, id: u32) -> Option<(mpsc::Sender<SocketMessage>, bool)> {
        let open = self.open.borrow();
        let entry = open.get(&id)?;
        entry.active.set(Instant::now());
        Some((entry.out.clone(), entry.closed.get()))
    }

    /// Marks the Worker's close of socket `id` sent: whether the peer's came first.
    fn mark_closed(&self, id: u32) -> bool {
        let open = self.open.borrow();
        let entry = open.get(&id).inspect(|e| e.closed.set(true));
        entry.is_some_and(|e| e.peer_closed.get())
    }

    /// The peer closed socket `id`: true when it stays half open for the Worker's `close()`;
    /// else it goes, answered first with the peer's frame when `auto` (the compat flag).
    pub(crate) fn peer_closed(&self, id: u32, frame: &Option<CloseFrame>, auto: bool) -> bool {
        let open = self.open.borrow();
        let Some(entry) = open.get(&id) else {
            return false;
        };
        let half = entry.allow_half_open.get();
        let auto = if half == 0 { auto } else { half == 2 };
        let abnormal = matches!(frame, Some(f) if f.code == code::ABNORMAL);
        if abnormal || entry.closed.replace(auto) || entry.peer_closed.replace(true) {
            return false;
        }
        if auto {
            let _ = entry.out.try_send(SocketMessage::Close(frame.clone()));
        }
        !auto
    }

    fn half_open(&self, id: u32) -> bool {
        let open = self.open.borrow();
        open.get(&id).is_some_and(|e| e.peer_closed.get())
    }

    pub(crate) fn idle_since(&self, id: u32) -> Option<Instant> {
        self.open.borrow().get(&id).map(|e| e.active.get())
    }

    pub(crate) fn set_pump(&self, id: u32, task: AbortHandle) {
        if let Some(entry) = self.open.borrow_mut().get_mut(&id) {
            entry.pump = Some(task);
        }
    }

    /// Marks socket `id` active now (a message crossed).
    pub(crate) fn touch(&self, id: u32) {
        if let Some(entry) = self.open.borrow().get(&id) {
            entry.active.set(Instant::now());
        }
    }

    /// Forgets socket `id` (it closed or broke); its count goes.
    pub(crate) fn take(&self, id: u32) -> Option<Entry> {
        self.open.borrow_mut().remove(&id)
    }

    /// Drops every socket of request `ctx` (all when `None`): the request
    /// ended, so its sockets end too — the front end sees the channel end
    /// without a close frame and closes the client with 1011.
    pub(crate) fn drop_for(&self, ctx: Option<u32>) {
        let gone: Vec<Entry> = {
            let mut open = self.open.borrow_mut();
            let ids: Vec<u32> = open
                .iter()
                .filter(|(_, e)| ctx.is_none_or(|c| c == e.ctx))
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter().filter_map(|id| open.remove(&id)).collect()
        };
        for entry in gone {
            if let Some(pump) = entry.pump {
                pump.abort();
            }
        }
    }
}

pub(crate) fn sockets(host: &HostState) -> HostResult<&Sockets> {
    host.state::<Sockets>()
        .ok_or_else(|| HostError::type_error("WebSockets are not available"))
}

host_fn! {
/// `webSocketRespond(ctxId, headers, hibernation)` → socket id: answers
/// request `ctxId` with `101` and the front end's end of a new socket;
/// `hibernation` `[class, id, tags, attachment]` for a socket a Durable
/// Object accepted with `acceptWebSocket` (then owned by the object, not
/// the request), else null.
fn web_socket_respond<'s>(
    scope,
    host: Rc<HostState>,
    ctx: u32,
    headers: v8::Local<'s, v8::Value>,
    hibernation: v8::Local<'s, v8::Value>,
) -> HostResult<f64> {
    let sockets = sockets(&host)?;
    if !host.request_live(ctx) {
        return Err(HostError::type_error("The request has already ended."));
    }
    let keeper = match hibernation.is_null_or_undefined() {
        true => None,
        false => Some(
            HIBERNATION
                .get()
                .ok_or_else(|| HostError::type_error("Hibernatable WebSockets are not available"))?
                .keeper(scope, &host, sockets, hibernation)?,
        ),
    };
    let worker = host.worker_id();
    let client = host.client(ctx);
    let slot = match host.client_socket_slot(client.as_ref()) {
        Ok(slot) => slot,
        Err(Refused::Worker { limit }) => {
            tracing::warn!(worker.id = %worker, thread = host.thread_index(), limit, "too many WebSockets");
            host.fail_request(ctx, ExecuteError::Overloaded { thread: host.thread_index() });
            return Ok(0.0);
        }
        Err(Refused::Client { limit }) => {
            tracing::debug!(worker.id = %worker, thread = host.thread_index(), limit, client = ?client, "too many WebSockets of one client");
            host.fail_request(ctx, ExecuteError::ClientWebSockets { limit });
            return Ok(0.0);
        }
    };
    let headers = lenient_header_map(scope, headers);
    let (id, end) = match (keeper, HIBERNATION.get()) {
        (Some(keeper), Some(hibernation)) => hibernation.open(&host, sockets, slot, keeper),
        _ => open_entry(&host, sockets, ctx, slot),
    };
    let mut response = http::Response::new(Body::empty());
    *response.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
    *response.headers_mut() = headers;
    response.extensions_mut().insert(WebSocketUpgrade::new(end));
    host.send_head(ctx, response);
    Ok(f64::from(id))
}
}

host_fn! {
/// `webSocketPass(ctxId, id, headers)`: answers request `ctxId` with `101`
/// and the socket `id` a forwarded `stub.fetch` was answered with, as it
/// is: the object's thread keeps serving it. Throws TypeError for an
/// unknown id (passed already).
fn web_socket_pass<'s>(
    scope,
    host: Rc<HostState>,
    ctx: u32,
    id: u32,
    headers: v8::Local<'s, v8::Value>,
) -> HostResult<()> {
    sockets(&host)?;
    let Some(end) = take_passed(&host, id) else {
        return Err(HostError::type_error("This WebSocket was already handed over."));
    };
    let mut response = http::Response::new(Body::empty());
    *response.status_mut() = http::StatusCode::SWITCHING_PROTOCOLS;
    *response.headers_mut() = lenient_header_map(scope, headers);
    response.extensions_mut().insert(WebSocketUpgrade::new(end));
    host.send_head(ctx, response);
    Ok(())
}
}

/// A new socket of request `ctx` in its place `slot`: the Worker's
/// [`Entry`] (the request held open until it closes, the peer's messages
/// delivered one turn each by [`pump`]) and the peer's end of its channels,
/// for the front end (an accepted socket) or the engine's own client
/// (`websocket/client.rs`, an outbound one).
pub(crate) fn open_entry(
    host: &HostState,
    sockets: &Sockets,
    ctx: u32,
    slot: Slot,
) -> (u32, SocketEnd) {
    let config = host.websocket_config();
    let (entry, queue, end) = new_entry(config, ctx, slot, None);
    let id = sockets.insert(entry);
    host.hold(ctx);
    let task = tokio::task::spawn_local(pump(host.turns(), ctx, id, queue, config.idle_timeout));
    sockets.set_pump(id, task.abort_handle());
    (id, end)
}

/// A new [`Entry`] of request `ctx` (0: of `object`), the client's end of
/// its queue and its accept gate, and the peer's end of its channels.
pub(crate) fn new_entry(
    config: WebSocketConfig,
    ctx: u32,
    slot: Slot,
    keeper: Option<Rc<dyn SocketKeeper>>,
) -> (Entry, ClientQueue, SocketEnd) {
    let capacity = config.buffered_messages.max(1);
    let (to_worker, from_client) = mpsc::channel(capacity);
    let (out, from_worker) = mpsc::channel(capacity);
    let accepted = Rc::new(tokio::sync::Notify::new());
    let entry = Entry {
        ctx,
        out,
        pump: None,
        active: Cell::new(Instant::now()),
        closed: Cell::new(false),
        peer_closed: Cell::new(false),
        allow_half_open: Cell::new(0),
        accepted: accepted.clone(),
        keeper,
        _slot: slot,
    };
    let end = SocketEnd {
        to_worker,
        from_worker,
        config,
    };
    (entry, (from_client, accepted), end)
}

/// The client's messages to a socket and the gate its pump waits on until
/// the Worker accepts.
pub(crate) type ClientQueue = (mpsc::Receiver<SocketMessage>, Rc<tokio::sync::Notify>);

host_fn! {
/// `webSocketAccepted(id, halfOpen)`: the Worker accepted its end (with
/// `allowHalfOpen`, [`Entry::allow_half_open`]); its client's messages flow from now on.
fn web_socket_accepted<'s>(_scope, host: Rc<HostState>, id: u32, half_open: u32) -> HostResult<()> {
    if let Some(entry) = sockets(&host)?.open.borrow().get(&id) {
        entry.allow_half_open.set(half_open);
        entry.accepted.notify_one();
    }
    Ok(())
}
}

host_fn! {
/// `webSocketSend(id, data, isText)`: a string (text) or a Uint8Array
/// (binary) to the client.
fn web_socket_send<'s>(
    scope,
    host: Rc<HostState>,
    id: u32,
    data: v8::Local<'s, v8::Value>,
    text: bool,
) -> HostResult<()> {
    let config = host.websocket_config();
    let sockets = sockets(&host)?;
    let Some((out, closed)) = sockets.out(id) else {
        // Closed meanwhile (the client went away): dropped, as workerd does.
        return Ok(());
    };
    if closed {
        return Err(HostError::type_error("Can't call WebSocket send() after close()."));
    }
    let message = if text {
        let length = v8::Local::<v8::String>::try_from(data).map_or(0, |s| s.length());
        // A UTF-16 unit takes at least one byte of UTF-8.
        if length > config.max_message_bytes {
            return Err(too_big(config.max_message_bytes));
        }
        SocketMessage::Text(value_string(scope, data))
    } else {
        let bytes = view_bytes(data).unwrap_or_default();
        if bytes.len() > config.max_message_bytes {
            return Err(too_big(config.max_message_bytes));
        }
        // Charged to the Worker's memory until the front end took it.
        // Over the limit the turn is being terminated.
        match host.memory().charged_bytes(bytes) {
            Ok(bytes) => SocketMessage::Binary(bytes),
            Err(_) => return Ok(()),
        }
    };
    if message.len() > config.max_message_bytes {
        return Err(too_big(config.max_message_bytes));
    }
    if let Err(error) = out.try_send(message) {
        // The client does not read: its queue is full. Closing beats
        // growing memory without bound (1011 at the front end).
        let reason = match error {
            mpsc::error::TrySendError::Full(_) => "the client is not reading",
            mpsc::error::TrySendError::Closed(_) => "the client went away",
        };
        tracing::debug!(worker.id = host.worker_id(), thread = host.thread_index(), socket = id, reason, "WebSocket dropped");
        drop_abnormally(&host, sockets, id, reason);
    }
    Ok(())
}
}

fn too_big(limit: usize) -> HostError {
    HostError::range_error(format!(
        "The WebSocket message is larger than the limit of {limit} bytes."
    ))
}

/// Ends socket `id` without a close handshake: the front end closes the
/// client with 1011, the Worker hears `close` with 1006 in a turn of its own.
pub(crate) fn drop_abnormally(host: &HostState, sockets: &Sockets, id: u32, reason: &'static str) {
    let Some(entry) = sockets.take(id) else {
        return;
    };
    // Possibly the task this runs in (a `send` in a message handler): it
    // stops at its next await.
    if let Some(pump) = entry.pump {
        pump.abort();
    }
    if let Some(keeper) = entry.keeper {
        // An object's socket: its object hears of it as an event of its own.
        keeper.dropped(host, id, reason);
        return;
    }
    let ctx = entry.ctx;
    let me = host.turns();
    tokio::task::spawn_local(async move {
        if let Some(isolate) = me.upgrade() {
            isolate.socket_event(ctx, id, abnormal(reason));
            isolate.host().release_hold(ctx);
        }
    });
}

pub(crate) fn abnormal(reason: &str) -> SocketMessage {
    SocketMessage::Close(Some(CloseFrame {
        code: code::ABNORMAL,
        reason: reason.to_owned(),
    }))
}

host_fn! {
/// `webSocketClose(id, code, reason)`: the Worker's close frame (code 0:
/// none).
fn web_socket_close<'s>(_scope, host: Rc<HostState>, id: u32, code: u32, reason: String) -> HostResult<()> {
    let sockets = sockets(&host)?;
    let Some((out, closed)) = sockets.out(id) else {
        return Ok(());
    };
    if closed {
        return Ok(());
    }
    let half_open = sockets.mark_closed(id);
    let frame = u16::try_from(code)
        .ok()
        .filter(|c| *c != 0)
        .map(|code| CloseFrame { code, reason });
    if out.try_send(SocketMessage::Close(frame)).is_err() {
        drop_abnormally(&host, sockets, id, "the client is not reading");
    } else if half_open && let Some(entry) = sockets.take(id) {
        // The reply to the peer's close: done once this turn is over (the
        // `waitUntil` work it hands on counts); its pump ends with the channel.
        let (me, ctx) = (host.turns(), entry.ctx);
        tokio::task::spawn_local(async move {
            if let Some(isolate) = me.upgrade() {
                isolate.host().release_hold(ctx);
            }
        });
    }
    Ok(())
}
}

host_fn! {
/// `webSocketHalfOpen(id)`: whether the peer closed and awaits the Worker's `close()`; `id` 0: whether
/// the compatibility date leaves a peer's close so (a pair's ends in the isolate, js/26_websocket.js).
fn web_socket_half_open<'s>(_scope, host: Rc<HostState>, id: u32) -> HostResult<bool> {
    if id == 0 {
        return Ok(host.worker().is_some_and(|w| !w.compat.web_socket_auto_reply));
    }
    Ok(sockets(&host)?.half_open(id))
}
}

/// The client's next message, taken only once the Worker has accepted
/// (`waiting` holds the gate until then); `Err` after `idle` of either wait.
async fn next_message(
    waiting: &mut Option<Rc<tokio::sync::Notify>>,
    from_client: &mut mpsc::Receiver<SocketMessage>,
    idle: Duration,
) -> Result<Option<SocketMessage>, tokio::time::error::Elapsed> {
    if let Some(gate) = waiting {
        tokio::time::timeout(idle, gate.notified()).await?;
        *waiting = None;
    }
    tokio::time::timeout(idle, from_client.recv()).await
}

/// What the pump makes of a wait for the client's next message: the
/// message, the close (1006 when the client went away, 1001 to both sides
/// after `idle` with no message either way), or `None` when the wait timed
/// out but the Worker sent meanwhile (wait again).
fn received(
    sockets: &Sockets,
    id: u32,
    next: Result<Option<SocketMessage>, tokio::time::error::Elapsed>,
    idle: Duration,
) -> Option<SocketMessage> {
    match next {
        Ok(Some(message)) => Some(message),
        Ok(None) => Some(abnormal("the client went away")),
        Err(_) => {
            let since = sockets.idle_since(id).unwrap_or_else(Instant::now);
            if since.elapsed() < idle {
                return None;
            }
            let frame = CloseFrame {
                code: code::GOING_AWAY,
                reason: "idle timeout".to_owned(),
            };
            if let Some((out, _)) = sockets.out(id) {
                sockets.mark_closed(id);
                let _ = out.try_send(SocketMessage::Close(Some(frame.clone())));
            }
            Some(SocketMessage::Close(Some(frame)))
        }
    }
}

/// A pump's side of a socket: the client's queue, the gate that holds it
/// until the Worker accepts, the idle timeout.
pub(crate) struct Inbox {
    me: Weak<dyn IsolateTurns>,
    id: u32,
    waiting: Option<Rc<tokio::sync::Notify>>,
    from_client: mpsc::Receiver<SocketMessage>,
    idle: Duration,
}

impl Inbox {
    pub(crate) fn new(
        me: Weak<dyn IsolateTurns>,
        id: u32,
        queue: ClientQueue,
        idle: Duration,
    ) -> Self {
        let (from_client, accepted) = queue;
        // Nothing is taken from the client before the Worker accepts: past
        // the channel's few messages, the client is not read (idle: closed).
        Self {
            me,
            id,
            waiting: Some(accepted),
            from_client,
            idle,
        }
    }

    /// The client's next message (or the close), with the isolate to take
    /// it; `None` once the isolate is gone.
    pub(crate) async fn next(&mut self) -> Option<(Rc<dyn IsolateTurns>, SocketMessage)> {
        loop {
            let next = next_message(&mut self.waiting, &mut self.from_client, self.idle).await;
            let isolate = self.me.upgrade()?;
            let sockets = isolate.host().state::<Sockets>()?;
            let Some(message) = received(sockets, self.id, next, self.idle) else {
                continue;
            };
            sockets.touch(self.id);
            return Some((isolate, message));
        }
    }
}

/// Delivers the client's messages to the Worker, one turn each, until the
/// socket closes; closes it when idle for `idle`.
async fn pump(me: Weak<dyn IsolateTurns>, ctx: u32, id: u32, queue: ClientQueue, idle: Duration) {
    let mut inbox = Inbox::new(me, id, queue, idle);
    while let Some((isolate, message)) = inbox.next().await {
        let host = isolate.host();
        if let SocketMessage::Close(frame) = &message {
            let auto = host.worker().is_none_or(|w| w.compat.web_socket_auto_reply);
            if host
                .state::<Sockets>()
                .is_some_and(|s| s.peer_closed(id, frame, auto))
            {
                isolate.socket_event(ctx, id, message);
                continue;
            }
            // Forgotten first: the Worker's `close()` in its handler is a no-op.
            let Some(entry) = host.state::<Sockets>().and_then(|s| s.take(id)) else {
                return;
            };
            isolate.socket_event(ctx, id, message);
            host.release_hold(entry.ctx);
            return;
        }
        isolate.socket_event(ctx, id, message);
    }
}

impl RequestResources for Sockets {
    fn drop_for(&self, ctx: Option<u32>) {
        Sockets::drop_for(self, ctx);
    }
}
