//! Durable Objects' API: `env.NAME` for a Durable Object binding, its ids
//! and its objects' storage (`js/28_durable_object.js`), on the engine's
//! store (`EngineConfig::store`, `isolane-storage`'s `ObjectScope`), and
//! the unit that registers them with the core's mechanics of objects
//! (`isolane_engine::api::object`: calls to an object's home thread or
//! node) and with its hibernatable WebSockets (`isolane-web`'s
//! `websocket::hibernation`, `js/28_websocket_pair.js`).
//!
//! JavaScript names a binding or a class, never a namespace: the host
//! checks the class is one the Worker binds and takes the Kubernetes
//! namespace from its id, so an object's keys are reachable only from its
//! own namespace whatever JavaScript passes.
//!
//! Ids are as workerd's: 64 hex digits, 16 bytes that name the object
//! (random for `newUniqueId`, a hash of the name for `idFromName`) and 16
//! that tie it to its namespace, Worker and class, so `idFromString`
//! refuses an id of another. Values are V8-serialized (`host.serialize`) by the
//! caller; each write counts against the Worker's memory while it is
//! outside V8.

use std::rc::Rc;

use isolane_storage::{ObjectError, ObjectList, ObjectScope, ObjectWrite, StoreError};
use sha2::{Digest as _, Sha256};

use isolane_engine::WorkerBundle;
use isolane_engine::api::object::{self, bound_worker};
use isolane_engine::api::{
    ErrorClass, HostError, HostState, Reservation, Settle, Unit, js_string, spawn_op, u8_array,
    view_bytes,
};
use isolane_web::websocket::hibernation::{self, strings};

/// `env.NAME` for a Durable Object binding, `state.storage`, calls to
/// objects elsewhere and the object's hibernatable WebSockets, together.
pub(crate) fn unit() -> Unit {
    // The WebSocket unit hands the sockets an object accepts to its
    // hibernation (`isolane-web`'s `websocket::hibernation`).
    hibernation::install();
    Unit::new("durable_object")
        .js(&["28_durable_object.js", "28_websocket_pair.js"])
        .function("objectIdFromName", object_id_from_name)
        .function("objectNewUniqueId", object_new_unique_id)
        .function("objectIdValid", object_id_valid)
        .function("objectGet", object_get)
        .function("objectTake", object_take)
        .function("objectWrite", object_write)
        .function("objectList", object_list)
        .function("objectGetAlarm", object_get_alarm)
        .function("objectSetAlarm", object_set_alarm)
        .function("objectNextTurn", object_next_turn)
        .function("objectIsHome", object::object_is_home)
        .function("objectCall", object::object_call)
        .function("objectIdleTimer", object_idle_timer)
        .function("objectWebSocketCheck", hibernation::object_web_socket_check)
        .function("objectWebSockets", hibernation::object_web_sockets)
        .function(
            "objectSetAutoResponse",
            hibernation::object_set_auto_response,
        )
        .function("objectAutoResponse", hibernation::object_auto_response)
        .function("webSocketAttach", hibernation::web_socket_attach)
        .function(
            "webSocketAutoResponseTime",
            hibernation::web_socket_auto_response_time,
        )
        .state::<hibernation::AutoResponses>()
}

/// What a storage op settles with.
enum Settled {
    Values(Vec<Option<Vec<u8>>>),
    Entries(Vec<(String, Vec<u8>)>),
    Alarm(Option<i64>),
    /// The owner epoch an instance took.
    Epoch(i64),
    /// A number of milliseconds (`objectIdleTimer`).
    Millis(i64),
    Done,
    Failed(HostError),
}

fn failed(error: StoreError) -> Settled {
    Settled::Failed(store_error(error))
}

/// A store's refusal or failure as an object's storage op rejects with
/// (the key-value API's and the SQL log's).
pub(crate) fn store_error(error: StoreError) -> HostError {
    match error {
        StoreError::Object(
            error @ (ObjectError::QuotaExceeded { .. }
            | ObjectError::ObjectFull { .. }
            | ObjectError::Fenced { .. }),
        ) => HostError::new(ErrorClass::Error, error.to_string()),
        // The namespace's own doing (its operations per second): not logged.
        error @ StoreError::Throttled { .. } => {
            HostError::new(ErrorClass::Error, format!("Durable Object {error}"))
        }
        StoreError::Object(error) => HostError::range_error(error.to_string()),
        other => {
            tracing::warn!(error = %other, kind = other.kind(), "Durable Object storage failed");
            HostError::new(
                ErrorClass::Error,
                format!("Durable Object storage operation failed: {other}"),
            )
        }
    }
}

/// The id half that ties `base` to the Worker's namespace and `class`.
fn tag(namespace: &str, class: &str, base: &[u8]) -> [u8; 16] {
    let mut hash = Sha256::new();
    for part in [
        b"isolane-durable-object-id".as_slice(),
        namespace.as_bytes(),
        class.as_bytes(),
        base,
    ] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    let mut out = [0; 16];
    out.copy_from_slice(&hash.finalize()[..16]);
    out
}

/// The id of `base` (16 bytes) in the namespace and class.
fn id_of(namespace: &str, class: &str, base: &[u8; 16]) -> String {
    let mut id = hex::encode(base);
    id.push_str(&hex::encode(tag(namespace, class, base)));
    id
}

/// The Worker's namespace and the class of binding `binding`.
fn class_of(host: &HostState, binding: &str) -> Result<(String, String), HostError> {
    let worker = host
        .worker()
        .ok_or_else(|| HostError::type_error("Durable Objects: no Worker is loaded"))?;
    // A class another Worker of the namespace hosts: its objects' ids are
    // that Worker's, so both reach the same objects.
    if let Some(other) = worker.hosted_objects.get(binding) {
        let class = format!("{}/{}", other.worker, other.class);
        return Ok((worker.namespace().to_owned(), class));
    }
    let class = worker
        .durable_objects
        .get(binding)
        .ok_or_else(|| HostError::type_error(format!("no Durable Object binding {binding}")))?;
    Ok((worker.namespace().to_owned(), hosted(worker, class)))
}

/// A class as its objects are keyed: `<Worker name>/<class>`, so two
/// Workers of one namespace that export a class of the same name keep
/// their objects apart (as Cloudflare's namespaces are per script and
/// class); the Kubernetes namespace is the scope's own part.
fn hosted(worker: &WorkerBundle, class: &str) -> String {
    let name = worker
        .id
        .strip_prefix(worker.namespace())
        .and_then(|rest| rest.strip_prefix('/'))
        .unwrap_or(&worker.id);
    format!("{name}/{class}")
}

/// The store and the scope of object `id` of `class`, a class the Worker
/// binds.
pub(crate) fn target(
    host: &HostState,
    class: &str,
    id: String,
) -> Result<(isolane_storage::Store, ObjectScope), HostError> {
    let worker = bound_worker(host, class)?;
    let store = host.store().cloned().ok_or_else(|| {
        HostError::new(
            ErrorClass::Error,
            "Durable Objects: this node has no store configured",
        )
    })?;
    Ok((
        store,
        ObjectScope::new(worker.namespace(), hosted(&worker, class), id),
    ))
}

host_fn! {
/// `objectIdFromName(binding, name)`: the same id for the same name, in
/// this namespace and class.
fn object_id_from_name<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    name: String,
) -> Result<Option<v8::Local<'s, v8::Value>>, HostError> {
    let (namespace, class) = class_of(&host, &binding)?;
    // A name's 16 bytes are a hash of the name (kept apart from the tag's
    // input by a prefix): as unpredictable as a random id's.
    let mut named = b"name:".to_vec();
    named.extend_from_slice(name.as_bytes());
    let base = tag(&namespace, &class, &named);
    Ok(js_string(scope, &id_of(&namespace, &class, &base)))
}
}

host_fn! {
/// `objectNewUniqueId(binding)`: a random id.
fn object_new_unique_id<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
) -> Result<Option<v8::Local<'s, v8::Value>>, HostError> {
    let (namespace, class) = class_of(&host, &binding)?;
    let mut base = [0; 16];
    getrandom::fill(&mut base)
        .map_err(|e| HostError::new(ErrorClass::Error, format!("no randomness: {e}")))?;
    Ok(js_string(scope, &id_of(&namespace, &class, &base)))
}
}

host_fn! {
/// `objectIdValid(binding, id)`: whether `id` is an id of this namespace
/// and class (64 lowercase hex digits whose tag matches).
fn object_id_valid<'s>(
    scope,
    host: Rc<HostState>,
    binding: String,
    id: String,
) -> Result<bool, HostError> {
    let _ = scope;
    let (namespace, class) = class_of(&host, &binding)?;
    if id.len() != 64 || id.bytes().any(|b| b.is_ascii_uppercase()) {
        return Ok(false);
    }
    let Ok(bytes) = hex::decode(&id) else {
        return Ok(false);
    };
    Ok(bytes[16..] == tag(&namespace, &class, &bytes[..16]))
}
}

host_fn! {
/// `objectGet(class, id, keys)` → Promise of an array of Uint8Array or null.
fn object_get<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
    keys: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let Some(keys) = strings(scope, keys) else {
        HostError::type_error("objectGet: keys must be an array").throw(scope);
        return None;
    };
    let early = target(&host, &class, id).map(|(store, object)| async move {
        match store.object_get(object, keys).await {
            Ok(values) => Settled::Values(values),
            Err(error) => failed(error),
        }
    });
    spawn_op(scope, &host, early, true)
}
}

/// A write's entries: each key and its value (`None`: deleted).
type Entries = Vec<(String, Option<Vec<u8>>)>;

/// `[[key, Uint8Array | null], …]` as a write's entries and their size.
fn entries(
    scope: &mut v8::PinScope<'_, '_>,
    value: v8::Local<'_, v8::Value>,
) -> Option<(Entries, usize)> {
    let array = v8::Local::<v8::Array>::try_from(value).ok()?;
    let mut out = Vec::with_capacity(array.length() as usize);
    let mut size = 0;
    for i in 0..array.length() {
        let pair = v8::Local::<v8::Array>::try_from(array.get_index(scope, i)?).ok()?;
        let key = pair.get_index(scope, 0)?.to_rust_string_lossy(scope);
        let value = pair.get_index(scope, 1)?;
        let value = if value.is_null_or_undefined() {
            None
        } else {
            Some(view_bytes(value)?)
        };
        size += key.len() + value.as_ref().map_or(0, Vec::len);
        out.push((key, value));
    }
    Some((out, size))
}

host_fn! {
/// `objectTake(class, id)` → Promise of the owner epoch a new instance of
/// the object takes (`Store::take_object`): from then on, an older
/// instance's writes are refused.
fn object_take<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
) -> Option<v8::Local<'s, v8::Promise>> {
    let owner = object::owner(&host);
    let early = target(&host, &class, id).map(|(store, object)| async move {
        match store.take_object(object, owner).await {
            Ok(epoch) => Settled::Epoch(epoch),
            Err(error) => failed(error),
        }
    });
    spawn_op(scope, &host, early, true)
}
}

host_fn! {
/// `objectWrite(class, id, entries, deleteAll, epoch)` → Promise: one
/// atomic write (deleteAll first, then each `[key, bytes or null]`),
/// refused unless the object's owner epoch is still `epoch`.
fn object_write<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
    list: v8::Local<'s, v8::Value>,
    delete_all: bool,
    epoch: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let fence = epoch_of(scope, epoch);
    let Some((entries, size)) = entries(scope, list) else {
        HostError::type_error("objectWrite: entries must be [key, Uint8Array | null] pairs").throw(scope);
        return None;
    };
    let early = match target(&host, &class, id) {
        Ok(target) => {
            // The copies are charged until the write is done; over the
            // limit the isolate is being terminated.
            let Ok(charge) = Reservation::new(host.memory(), size) else {
                return None;
            };
            Ok((target, charge))
        }
        Err(error) => Err(error),
    };
    let early = early.map(|((store, object), charge)| async move {
        let write = ObjectWrite {
            delete_all,
            entries,
            fence,
        };
        let result = store.object_write(object, write).await;
        drop(charge);
        match result {
            Ok(()) => Settled::Done,
            Err(error) => failed(error),
        }
    });
    spawn_op(scope, &host, early, true)
}
}

host_fn! {
/// `objectList(class, id, start, end, prefix, limit, reverse)` → Promise of
/// `[[key, Uint8Array], …]`.
fn object_list<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
    start: Option<String>,
    end: Option<String>,
    prefix: Option<String>,
    limit: v8::Local<'s, v8::Value>,
    reverse: bool,
) -> Option<v8::Local<'s, v8::Promise>> {
    let limit = if limit.is_null_or_undefined() {
        None
    } else {
        let n = limit.number_value(scope).unwrap_or(f64::NAN);
        if n.is_nan() || n < 1.0 {
            HostError::type_error("list() limit must be a positive number").throw(scope);
            return None;
        }
        Some(if n >= usize::MAX as f64 { usize::MAX } else { n as usize })
    };
    let options = ObjectList { start, end, prefix, limit, reverse };
    let early = target(&host, &class, id).map(|(store, object)| async move {
        match store.object_list(object, options).await {
            Ok(entries) => Settled::Entries(entries),
            Err(error) => failed(error),
        }
    });
    spawn_op(scope, &host, early, true)
}
}

host_fn! {
/// `objectGetAlarm(class, id)` → Promise of the alarm's time (ms since the
/// epoch) or null.
fn object_get_alarm<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
) -> Option<v8::Local<'s, v8::Promise>> {
    let early = target(&host, &class, id).map(|(store, object)| async move {
        match store.object_alarm(object).await {
            Ok(at) => Settled::Alarm(at),
            Err(error) => failed(error),
        }
    });
    spawn_op(scope, &host, early, true)
}
}

host_fn! {
/// `objectSetAlarm(class, id, time, epoch)` → Promise: sets the object's
/// alarm to `time` (ms since the epoch), or deletes it when `time` is
/// null, refused unless the object's owner epoch is still `epoch`.
fn object_set_alarm<'s>(
    scope,
    host: Rc<HostState>,
    class: String,
    id: String,
    time: v8::Local<'s, v8::Value>,
    epoch: v8::Local<'s, v8::Value>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let fence = epoch_of(scope, epoch);
    let at = if time.is_null_or_undefined() {
        None
    } else {
        let ms = time.number_value(scope).unwrap_or(f64::NAN);
        if !ms.is_finite() {
            HostError::type_error("setAlarm() needs a finite time").throw(scope);
            return None;
        }
        // Saturates: a time past i64's range is "never" in practice.
        #[allow(clippy::cast_possible_truncation)]
        Some(ms as i64)
    };
    let early = target(&host, &class, id).map(|(store, object)| async move {
        match store.set_object_alarm_fenced(object, at, fence).await {
            Ok(()) => Settled::Done,
            Err(error) => failed(error),
        }
    });
    spawn_op(scope, &host, early, true)
}
}

host_fn! {
/// `objectNextTurn()` → Promise settled in a later turn (after this turn's
/// microtasks), whichever request ends meanwhile: the input gate opens then.
fn object_next_turn<'s>(
    scope,
    host: Rc<HostState>,
) -> Option<v8::Local<'s, v8::Promise>> {
    spawn_op(scope, &host, Ok(async { Settled::Done }), true)
}
}

host_fn! {
/// `objectIdleTimer()` → Promise of the engine's idle time for objects
/// (`EngineConfig::object_idle`, in ms), settled once that time has passed:
/// the sweep that evicts idle objects (js/28_durable_object.js). Detached
/// like every object op: it outlives the request that armed it.
fn object_idle_timer<'s>(
    scope,
    host: Rc<HostState>,
) -> Option<v8::Local<'s, v8::Promise>> {
    let idle = object::idle(&host);
    let ms = i64::try_from(idle.as_millis()).unwrap_or(i64::MAX);
    let idled = async move {
        tokio::time::sleep(idle).await;
        Settled::Millis(ms)
    };
    spawn_op(scope, &host, Ok(idled), true)
}
}

/// The owner epoch a write carries (none when JavaScript passes none).
fn epoch_of(scope: &mut v8::PinScope<'_, '_>, epoch: v8::Local<'_, v8::Value>) -> Option<i64> {
    // Epochs are small integers, exact in a double.
    #[allow(clippy::cast_possible_truncation)]
    epoch
        .is_number()
        .then(|| epoch.number_value(scope).unwrap_or(0.0) as i64)
}

/// The JS value of a settled op (in its settling turn).
fn settled_js<'s>(
    scope: &mut v8::PinScope<'s, '_>,
    settled: Settled,
) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
    let undefined: v8::Local<'s, v8::Value> = v8::undefined(scope).into();
    match settled {
        Settled::Done => Ok(undefined),
        Settled::Alarm(None) => Ok(v8::null(scope).into()),
        // Milliseconds fit a double exactly until 2^53.
        #[allow(clippy::cast_precision_loss)]
        Settled::Alarm(Some(at)) | Settled::Epoch(at) | Settled::Millis(at) => {
            Ok(v8::Number::new(scope, at as f64).into())
        }
        Settled::Failed(error) => Err(error.to_js(scope).ok_or(undefined)?),
        Settled::Values(values) => {
            let mut out = Vec::with_capacity(values.len());
            for value in values {
                out.push(match value {
                    Some(bytes) => u8_array(scope, bytes).ok_or(undefined)?.into(),
                    None => v8::null(scope).into(),
                });
            }
            Ok(v8::Array::new_with_elements(scope, &out).into())
        }
        Settled::Entries(entries) => {
            let mut out = Vec::with_capacity(entries.len());
            for (key, value) in entries {
                let key = js_string(scope, &key).ok_or(undefined)?;
                let value = u8_array(scope, value).ok_or(undefined)?.into();
                out.push(v8::Array::new_with_elements(scope, &[key, value]).into());
            }
            Ok(v8::Array::new_with_elements(scope, &out).into())
        }
    }
}

impl Settle for Settled {
    fn into_js<'s>(
        self: Box<Self>,
        scope: &mut v8::PinScope<'s, '_>,
    ) -> Result<v8::Local<'s, v8::Value>, v8::Local<'s, v8::Value>> {
        settled_js(scope, *self)
    }
}
