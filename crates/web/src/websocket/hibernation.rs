//! Hibernatable WebSockets: the sockets a Durable Object accepts with
//! `ctx.acceptWebSocket(ws, tags)` (`isolane-bindings`' 28_durable_object.js,
//! which registers this module's host functions, `isolane_web::websocket::hibernation`), as workerd's
//! hibernation manager keeps them.
//!
//! Such a socket is an `Entry` of `websocket.rs` owned by its object (an
//! [`ObjectSocket`]: class, id, tags, attachment), not by the request whose
//! `101` carried it: that request ends as a plain one, and the socket stays
//! open here, outside the JavaScript heap, while the object's instance may
//! be evicted (`objectIdleTimer`). Each message from the client becomes an
//! event of its own for the object, a `Work::ObjectSocketEvent` run on
//! this thread (the object's home) like an alarm: the object is made again
//! if it was evicted, `webSocketMessage` runs through its input gate under
//! the Worker's limits, and the next message waits for it. A text message
//! equal to the object's auto-response request is answered here, without
//! an event (`setWebSocketAutoResponse`).
//!
//! Limits: each socket takes a place among the Worker's sockets on the
//! thread, as any socket (`max_sockets_per_worker`, and its client's
//! share), and one object holds at most `max_sockets_per_object`
//! (Cloudflare's 32,768); attachments are at most 2 KiB, tags at most 10
//! of at most 256 characters each (checked in JavaScript).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;

use isolane_engine::api::net::Slot;
use isolane_engine::api::object::{SocketEvents, bound_worker};
use isolane_engine::api::{
    ErrorClass, HostError, HostResult, HostState, IsolateTurns, js_string, u8_array, view_bytes,
};
use isolane_engine::{
    CloseFrame, ExecuteError, ObjectSocketEvent, SocketEnd, SocketMessage, WorkerBundle,
};

use super::{ClientQueue, Hibernation, Inbox, SocketKeeper, Sockets, abnormal, new_entry, sockets};

/// Each object's auto-response, `(request, response)` by `(class, id)`
/// (the unit's state).
#[derive(Default)]
pub struct AutoResponses(RefCell<AutoResponseMap>);

/// `(request, response)` by `(class, id)`.
type AutoResponseMap = HashMap<(String, String), (String, String)>;

/// The isolate's auto-responses.
fn auto_responses(host: &HostState) -> HostResult<&RefCell<AutoResponseMap>> {
    host.state::<AutoResponses>()
        .map(|a| &a.0)
        .ok_or_else(|| HostError::type_error("WebSockets are not available"))
}

/// The unit of hibernatable sockets as the WebSocket unit sees it.
struct ObjectHibernation;

/// Hands the sockets an object accepts (`webSocketRespond` with a
/// hibernation owner) to this module, once per process.
pub fn install() {
    super::set_hibernation(&ObjectHibernation);
}

impl Hibernation for ObjectHibernation {
    fn keeper(
        &self,
        scope: &mut v8::PinScope<'_, '_>,
        host: &HostState,
        sockets: &Sockets,
        value: v8::Local<'_, v8::Value>,
    ) -> HostResult<Rc<dyn SocketKeeper>> {
        Ok(Rc::new(owner(scope, host, sockets, value)?))
    }

    fn open(
        &self,
        host: &HostState,
        sockets: &Sockets,
        slot: Slot,
        keeper: Rc<dyn SocketKeeper>,
    ) -> (u32, SocketEnd) {
        match keeper.into_any().downcast::<ObjectSocket>() {
            Ok(object) => open_object_entry(host, sockets, slot, object),
            // Only this unit makes keepers: unreachable, and harmless.
            Err(_) => super::open_entry(host, sockets, 0, slot),
        }
    }
}

impl SocketKeeper for ObjectSocket {
    fn dropped(self: Rc<Self>, host: &HostState, id: u32, reason: &'static str) {
        dropped(host, id, &self, reason);
    }

    fn into_any(self: Rc<Self>) -> Rc<dyn std::any::Any> {
        self
    }
}

/// The object socket of entry `keeper`, if it is one.
fn object_socket(keeper: &Option<Rc<dyn SocketKeeper>>) -> Option<Rc<ObjectSocket>> {
    keeper.clone()?.into_any().downcast::<ObjectSocket>().ok()
}

/// Cloudflare's cap on a socket's serialized attachment.
const MAX_ATTACHMENT_BYTES: usize = 2048;

/// The object a hibernatable socket belongs to, and what it keeps of it.
pub(super) struct ObjectSocket {
    class: String,
    id: String,
    /// The Worker whose isolate holds the object (its events' bundle).
    bundle: Arc<WorkerBundle>,
    tags: Vec<String>,
    attachment: RefCell<Option<Vec<u8>>>,
    /// When the auto-response last answered on it, ms since the epoch.
    auto_at: Cell<Option<f64>>,
    /// Its client closed (it awaits the object's reply): no longer listed
    /// (JavaScript lists it in its `webSocketClose`).
    gone: Cell<bool>,
}

impl ObjectSocket {
    fn is(&self, class: &str, id: &str) -> bool {
        self.class == class && self.id == id && !self.gone.get()
    }
}

/// The sockets of object `id` of `class` open in this isolate.
fn count(sockets: &Sockets, class: &str, id: &str) -> usize {
    let open = sockets.open.borrow();
    open.values()
        .filter(|e| object_socket(&e.keeper).is_some_and(|o| o.is(class, id)))
        .count()
}

/// Refuses one more socket for an object at its cap.
fn check_room(
    host: &HostState,
    sockets: &Sockets,
    class: &str,
    id: &str,
    pending: usize,
) -> HostResult<()> {
    let limit = host.websocket_config().max_sockets_per_object;
    if count(sockets, class, id) + pending >= limit {
        return Err(HostError::new(
            ErrorClass::Error,
            format!(
                "This Durable Object already has {limit} hibernatable WebSockets, its limit; close one before accepting another."
            ),
        ));
    }
    Ok(())
}

/// The owner of a socket a `101` hands over: `[class, id, tags,
/// attachment]` (`webSocketRespond`'s `hibernation`, not null).
fn owner(
    scope: &mut v8::PinScope<'_, '_>,
    host: &HostState,
    sockets: &Sockets,
    value: v8::Local<'_, v8::Value>,
) -> HostResult<ObjectSocket> {
    let bad = || {
        HostError::type_error("webSocketRespond: hibernation must be [class, id, tags, attachment]")
    };
    let array = v8::Local::<v8::Array>::try_from(value).map_err(|_| bad())?;
    let item = |i| array.get_index(scope, i).ok_or_else(bad);
    let (class, id, tags, attachment) = (item(0)?, item(1)?, item(2)?, item(3)?);
    let class = class.to_rust_string_lossy(scope);
    let id = id.to_rust_string_lossy(scope);
    let tags = strings(scope, tags).ok_or_else(bad)?;
    let bundle = bound_worker(host, &class)?;
    check_room(host, sockets, &class, &id, 0)?;
    Ok(ObjectSocket {
        class,
        id,
        bundle,
        tags,
        attachment: RefCell::new(view_bytes(attachment)),
        auto_at: Cell::new(None),
        gone: Cell::new(false),
    })
}

/// Opens an object's socket in its place `slot`: no request holds it; its
/// client's messages go to the object as events ([`object_pump`]).
fn open_object_entry(
    host: &HostState,
    sockets: &Sockets,
    slot: Slot,
    object: Rc<ObjectSocket>,
) -> (u32, SocketEnd) {
    let config = host.websocket_config();
    let (entry, queue, end) = new_entry(config, 0, slot, Some(object.clone()));
    let id = sockets.insert(entry);
    let task = tokio::task::spawn_local(object_pump(
        host.turns(),
        id,
        object,
        queue,
        config.idle_timeout,
    ));
    sockets.set_pump(id, task.abort_handle());
    (id, end)
}

/// Runs `message` of socket `socket` as an event of its object, on this
/// thread (the object's home), with its Worker.
async fn deliver(
    events: &SocketEvents,
    object: &ObjectSocket,
    socket: u32,
    message: SocketMessage,
) -> Result<(), ExecuteError> {
    let event = ObjectSocketEvent::new(
        (object.class.clone(), object.id.clone()),
        socket,
        message,
        object.tags.clone(),
        object.attachment.borrow().clone(),
    );
    events.run(object.bundle.clone(), event).await
}

/// Answers `message` with the object's auto-response when it is its
/// request, without waking the object; whether it did.
fn auto_answered(
    host: &HostState,
    sockets: &Sockets,
    id: u32,
    object: &ObjectSocket,
    message: &SocketMessage,
) -> bool {
    let SocketMessage::Text(text) = message else {
        return false;
    };
    let response = {
        let Ok(auto) = auto_responses(host) else {
            return false;
        };
        let auto = auto.borrow();
        match auto.get(&(object.class.clone(), object.id.clone())) {
            Some((request, response)) if request == text => response.clone(),
            _ => return false,
        }
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    #[allow(clippy::cast_precision_loss)]
    object.auto_at.set(Some(now as f64));
    if let Some((out, false)) = sockets.out(id)
        && let Err(mpsc::error::TrySendError::Full(_)) = out.try_send(SocketMessage::Text(response))
    {
        super::drop_abnormally(host, sockets, id, "the client is not reading");
    }
    true
}

/// Delivers the client's messages to the object, one event each, in order,
/// until the socket closes; closes it when idle. Holds no strong reference
/// to the isolate across an await (the isolate's drop aborts this task).
async fn object_pump(
    me: Weak<dyn IsolateTurns>,
    id: u32,
    object: Rc<ObjectSocket>,
    queue: ClientQueue,
    idle: Duration,
) {
    let mut inbox = Inbox::new(me.clone(), id, queue, idle);
    // The client's close went to the object, whose `close()` is the reply.
    let mut half_open = false;
    while let Some((isolate, message)) = inbox.next().await {
        let (delivery, closing) = {
            let host = isolate.host();
            let Some(sockets) = host.state::<Sockets>() else {
                return;
            };
            if auto_answered(host, sockets, id, &object, &message) {
                continue;
            }
            let closing = match &message {
                SocketMessage::Close(frame) => client_closed(sockets, id, frame, half_open),
                _ => Some(false),
            };
            let Some(closing) = closing else { return };
            half_open |= matches!(message, SocketMessage::Close(_)) && !closing;
            object.gone.set(half_open);
            (SocketEvents::of(host), closing)
        };
        drop(isolate);
        let result = deliver(&delivery, &object, id, message).await;
        if closing {
            return;
        }
        match result {
            // A handler that threw was reported with its request; the
            // socket stays, as in workerd.
            Ok(()) | Err(ExecuteError::Exception { .. }) => {}
            Err(error) => {
                // Not delivered (the thread refused it, a limit): the
                // client must not go on as if it had been.
                tracing::debug!(socket = id, %error, "a hibernatable WebSocket's event failed");
                if let Some(isolate) = me.upgrade()
                    && let Some(sockets) = isolate.host().state::<Sockets>()
                {
                    super::drop_abnormally(
                        isolate.host(),
                        sockets,
                        id,
                        "the Durable Object's event failed",
                    );
                }
                return;
            }
        }
    }
}

/// The client's close of socket `id`, taken as workerd takes it at every
/// date: never answered here; the object's `close()` in `webSocketClose`
/// is the reply (half open until then, the front end's bound at most), and
/// the connection's end after that (`half_open`) is no event. Whether the
/// close ends the socket now (taken), or leaves it half open; `None`: gone.
fn client_closed(
    sockets: &Sockets,
    id: u32,
    frame: &Option<CloseFrame>,
    half_open: bool,
) -> Option<bool> {
    if sockets.peer_closed(id, frame, false) {
        return Some(false);
    }
    (sockets.take(id).is_some() && !half_open).then_some(true)
}

/// An object's socket was dropped without a close handshake (1011 to the
/// client): the object hears `webSocketError` in an event of its own.
fn dropped(host: &HostState, id: u32, object: &Rc<ObjectSocket>, reason: &str) {
    let delivery = SocketEvents::of(host);
    let object = object.clone();
    let message = abnormal(reason);
    tokio::task::spawn_local(async move {
        let _ = deliver(&delivery, &object, id, message).await;
    });
}

/// The strings of a JS array.
pub fn strings(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Option<Vec<String>> {
    let array = v8::Local::<v8::Array>::try_from(value).ok()?;
    (0..array.length())
        .map(|i| {
            let item = array.get_index(scope, i)?;
            Some(item.to_rust_string_lossy(scope))
        })
        .collect()
}

/// The object socket `id`, if it is one.
fn object_of(sockets: &Sockets, id: u32) -> Option<Rc<ObjectSocket>> {
    sockets
        .open
        .borrow()
        .get(&id)
        .and_then(|e| object_socket(&e.keeper))
}

host_fn! {
/// `objectWebSocketCheck(class, id, pending)`: throws when object `id` of
/// `class` holds its cap of hibernatable sockets, counting `pending` ones
/// accepted and not yet answered.
pub fn object_web_socket_check<'s>(
    _scope,
    host: Rc<HostState>,
    class: String,
    id: String,
    pending: u32,
) -> HostResult<()> {
    let sockets = sockets(&host)?;
    check_room(&host, sockets, &class, &id, pending as usize)
}
}

host_fn! {
/// `objectWebSockets(class, id, tag)` → `[[socketId, tags, attachment], …]`:
/// the object's open hibernatable sockets (with `tag` among their tags
/// when it is not null), oldest first.
pub fn object_web_sockets<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
    tag: Option<String>,
) -> HostResult<Option<v8::Local<'s, v8::Array>>> {
    let sockets = sockets(&host)?;
    let mut found: Vec<(u32, Rc<ObjectSocket>)> = {
        let open = sockets.open.borrow();
        open.iter()
            .filter_map(|(socket, e)| Some((*socket, object_socket(&e.keeper)?)))
            .filter(|(_, o)| o.is(&class, &id))
            .filter(|(_, o)| tag.as_ref().is_none_or(|t| o.tags.contains(t)))
            .collect()
    };
    found.sort_unstable_by_key(|(socket, _)| *socket);
    let mut out = Vec::with_capacity(found.len());
    for (socket, object) in found {
        let tags: Option<Vec<_>> = object.tags.iter().map(|t| js_string(scope, t)).collect();
        let Some(tags) = tags else { return Ok(None) };
        let attachment: v8::Local<v8::Value> = match object.attachment.borrow().clone() {
            Some(bytes) => match u8_array(scope, bytes) {
                Some(array) => array.into(),
                None => return Ok(None),
            },
            None => v8::null(scope).into(),
        };
        let row = [
            v8::Integer::new_from_unsigned(scope, socket).into(),
            v8::Array::new_with_elements(scope, &tags).into(),
            attachment,
        ];
        out.push(v8::Array::new_with_elements(scope, &row).into());
    }
    Ok(Some(v8::Array::new_with_elements(scope, &out)))
}
}

host_fn! {
/// `objectSetAutoResponse(class, id, request, response)`: the object's
/// auto-response (both null: none).
pub fn object_set_auto_response<'s>(
    _scope,
    host: Rc<HostState>,
    class: String,
    id: String,
    request: Option<String>,
    response: Option<String>,
) -> HostResult<()> {
    let key = (class, id);
    let mut auto = auto_responses(&host)?.borrow_mut();
    match request.zip(response) {
        Some(pair) => {
            auto.insert(key, pair);
        }
        None => {
            auto.remove(&key);
        }
    }
    Ok(())
}
}

host_fn! {
/// `objectAutoResponse(class, id)` → `[request, response]` or null.
pub fn object_auto_response<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
) -> HostResult<Option<v8::Local<'s, v8::Value>>> {
    let pair = auto_responses(&host)?.borrow().get(&(class, id)).cloned();
    let Some((request, response)) = pair else {
        return Ok(Some(v8::null(scope).into()));
    };
    let (Some(request), Some(response)) = (js_string(scope, &request), js_string(scope, &response)) else {
        return Ok(None);
    };
    Ok(Some(v8::Array::new_with_elements(scope, &[request, response]).into()))
}
}

host_fn! {
/// `webSocketAttach(id, attachment)`: keeps the serialized attachment
/// (a Uint8Array of at most 2 KiB, or null) of an object's socket.
pub fn web_socket_attach<'s>(
    _scope,
    host: Rc<HostState>,
    id: u32,
    attachment: Option<Vec<u8>>,
) -> HostResult<()> {
    if attachment.as_ref().is_some_and(|a| a.len() > MAX_ATTACHMENT_BYTES) {
        return Err(HostError::range_error(format!(
            "A WebSocket attachment cannot be larger than {MAX_ATTACHMENT_BYTES} bytes."
        )));
    }
    if let Some(object) = object_of(sockets(&host)?, id) {
        *object.attachment.borrow_mut() = attachment;
    }
    Ok(())
}
}

host_fn! {
/// `webSocketAutoResponseTime(id)` → when the auto-response last answered
/// on socket `id` (ms since the epoch), or null.
pub fn web_socket_auto_response_time<'s>(
    scope,
    host: Rc<HostState>,
    id: u32,
) -> HostResult<v8::Local<'s, v8::Value>> {
    let at = object_of(sockets(&host)?, id).and_then(|o| o.auto_at.get());
    Ok(match at {
        Some(ms) => v8::Number::new(scope, ms).into(),
        None => v8::null(scope).into(),
    })
}
}
